/* Isolation tiers: one backend interface, one table. A tier runs a whole template (image or
 * layers, binds, env, cwd, user, limits, network) one-shot and fills the same result record, so
 * every surface above (CLI, pools, API) names a tier and never branches on it.
 *
 * The container tier is lib/sandbox.c (namespaces, cgroups, seccomp). The gvisor tier is
 * lib/gvisor/ (an OCI bundle run by runsc). A microVM tier (Firecracker, Cloud Hypervisor) would
 * be a third row: its run() boots a VM from a kernel and a root disk made of the same layers,
 * passes the program, env and limits over vsock to an agent inside, and maps the VM's exit and
 * the agent's report onto pd_result (docs/isolation.md). */
#ifndef PADDOCK_TIER_H
#define PADDOCK_TIER_H

#include "paddock.h"

typedef struct pd_tier {
	const char *name;
	/* create + exec + destroy, as pd_run documents; fills setup/exec/teardown times and residue */
	int (*run)(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e);
	/* whether the tier can run on this host now (its runtime installed); msg says why not */
	bool (*available)(char *msg, size_t len);
} pd_tier;

/* The tier of isolation i, or NULL when out of range. */
const pd_tier *pd_tier_get(pd_isolation i);

/* the backends */
int pd_container_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e);
int pd_gvisor_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e);
bool pd_gvisor_available(char *msg, size_t len);
/* Removes the cgroups runsc made for the sandboxes of dead owners in the v1 hierarchies paddock's
 * backend leaves alone (pd_cgroups_sweep removes the rest and kills their tasks first). */
void pd_gvisor_sweep(pd_ctx *c, bool (*is_dead)(const char *owner, void *arg), void *arg);
/* The gvisor sweep of dead owners' leftovers, once per context, before its first gvisor sandbox:
 * a context that never uses the tier pays nothing for it (context.c). */
void pd_ctx_gvisor_sweep_once(pd_ctx *c);

#endif
