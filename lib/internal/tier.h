/* Isolation tiers: one backend interface, one table. A tier runs a whole template (image or
 * layers, binds, env, cwd, user, limits, network) one-shot and fills the same result record, and
 * keeps a sandbox alive for pools and sessions (create, exec, files, destroy, and a reset where
 * its reuse rule allows one), so every surface above (CLI, pools, API) names a tier and never
 * branches on it, and inside lib no file of a sandbox's life asks which tier it is either: the
 * public calls (tier.c, files.c) route through the sandbox's row.
 *
 * The container tier is lib/sandbox.c, exec.c (execmsg.c), files.c, reset.c, upperlist.c (namespaces,
 * cgroups, seccomp). The gvisor tier is lib/gvisor/ (an OCI bundle run by runsc). A microVM tier
 * (Firecracker, Cloud Hypervisor) would be a third row: its run() boots a VM from a kernel and a
 * root disk made of the same layers, passes the program, env and limits over vsock to an agent
 * inside, and maps the VM's exit and the agent's report onto pd_result (docs/isolation.md).
 *
 * Internal to lib (lib/internal/): the layers above see only pd_run and the pd_sandbox_* calls. */
#ifndef PADDOCK_TIER_H
#define PADDOCK_TIER_H

#include "internal.h"

typedef struct pd_tier {
	const char *name;
	/* create + exec + destroy, as pd_run documents; fills setup/exec/teardown times and residue */
	int (*run)(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e);
	/* whether the tier can run on this host now (its runtime installed); msg says why not */
	bool (*available)(char *msg, size_t len);
	/* ---- a kept sandbox: what pd_sandbox_* route to (tier.c sets s->tier after sb_create) ---- */
	pd_sandbox *(*sb_create)(pd_ctx *c, const pd_sandbox_opts *o, pd_err *e);
	/* s READY and r's ids filled by the caller (pd_sandbox_exec); with x->concurrent on a tier
	 * that says concurrent, the state is sb_exec's to look at (other execs may be running) */
	int (*sb_exec)(pd_sandbox *s, const pd_exec_opts *x, pd_result *r, pd_err *e);
	/* its kept sandbox runs several pd_exec_opts.concurrent execs at once; else one at a time
	 * (a concurrent exec is refused, EBUSY, while another runs) */
	bool concurrent;
	int (*sb_destroy)(pd_sandbox *s, char *residue, size_t residue_len);
	/* one file operation (initmsg.h's FILEOP_*) on a path inside the sandbox */
	int (*sb_fileop)(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode, pd_fop_use use,
			 int *fd_out, pd_err *e);
	/* NULL: never reset (the tier's reuse rule is none: a fresh sandbox for each user) */
	int (*sb_reset)(pd_sandbox *s, pd_err *e);
	/* NULL: the tier's pid counter is its own, nothing the host can wind back */
	int (*sb_rewind_pids)(pd_sandbox *s, pd_err *e);
	/* NULL: the root's writes are out of the host's sight (pd_sandbox_upper_list refuses) */
	int (*sb_upper_list)(pd_sandbox *s, const char *const *skip, pd_upper_ent **out, size_t *n, pd_err *e);
} pd_tier;

/* The tier of isolation i, or NULL when out of range. */
const pd_tier *pd_tier_get(pd_isolation i);

/* ---- the container tier's kept sandbox (sandbox.c, exec.c, files.c, reset.c, upperlist.c) ---- */
pd_sandbox *pd_ct_create(pd_ctx *c, const pd_sandbox_opts *o, pd_err *e);
int pd_ct_exec(pd_sandbox *s, const pd_exec_opts *x, pd_result *r, pd_err *e);
int pd_ct_destroy(pd_sandbox *s, char *residue, size_t residue_len);
int pd_ct_fileop(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode, pd_fop_use use, int *fd_out,
		 pd_err *e);
int pd_ct_reset(pd_sandbox *s, pd_err *e);
int pd_ct_rewind_pids(pd_sandbox *s, pd_err *e);
int pd_ct_upper_list(pd_sandbox *s, const char *const *skip, pd_upper_ent **out, size_t *n, pd_err *e);

/* ---- the gvisor tier (lib/gvisor/) ---- */
/* The one-shot run made of a kept sandbox, whatever its tier: pd_sandbox_create, k->ready (may
 * be NULL: an audit's decoys planted; its time counts as setup; -1 with r filled ends the run),
 * k->exec (NULL: pd_sandbox_exec), pd_sandbox_destroy; fills the setup and teardown times and the
 * residue. Returns as pd_run does. The container tier's run (k NULL) and pd_run_audited are it. */
typedef struct pd_kept_steps {
	int (*ready)(pd_sandbox *s, void *arg, pd_result *r, pd_err *e);
	int (*exec)(pd_sandbox *s, const pd_exec_opts *x, void *arg, pd_result *r, pd_err *e);
	void *arg;
} pd_kept_steps;
int pd_kept_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, const pd_kept_steps *k, pd_result *r,
		pd_err *e);

int pd_gvisor_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e);
bool pd_gvisor_available(char *msg, size_t len);
pd_sandbox *pd_gv_sandbox_create(pd_ctx *c, const pd_sandbox_opts *o, pd_err *e);
int pd_gv_sandbox_exec(pd_sandbox *s, const pd_exec_opts *x, pd_result *r, pd_err *e);
int pd_gv_sandbox_destroy(pd_sandbox *s, char *residue, size_t residue_len);
int pd_gv_fileop(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode, pd_fop_use use,
		 int *fd_out, pd_err *e);
/* Removes the cgroups runsc made for the sandboxes of dead owners in the v1 hierarchies paddock's
 * backend leaves alone (pd_cgroups_sweep removes the rest and kills their tasks first). */
void pd_gvisor_sweep(pd_ctx *c, bool (*is_dead)(const char *owner, void *arg), void *arg);
/* The gvisor sweep of dead owners' leftovers (pd_owner_dead), once per context, before its
 * first gvisor sandbox: a context that never uses the tier pays nothing for it (lib/gvisor/run.c;
 * context.c calls it too, before it forgets a dead owner). */
void pd_ctx_gvisor_sweep_once(pd_ctx *c);

#endif
