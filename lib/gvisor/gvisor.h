/* The gvisor tier's parts: the OCI bundle (spec.c) and the supervised runsc run (run.c). */
#ifndef PADDOCK_GVISOR_H
#define PADDOCK_GVISOR_H

#include "internal.h"

/* A bundle directory: config.json, and rootfs when the image is layers (an overlay mounted on
 * the host, read-only: runsc's own in-memory overlay takes the writes). */
typedef struct pd_gv_bundle {
	char dir[PD_PATH];
	char rootfs[PD_PATH];
	bool rootfs_mounted;
} pd_gv_bundle;

/* Makes the bundle for o and x under parent; cgroup_path is the cgroup (relative to each
 * hierarchy's root) runsc joins, made and limited beforehand by paddock's cgroup backend.
 * scratch: NULL (a one-shot run: /tmp, /work, /dev/shm are tmpfs inside the sandbox), or a host
 * directory whose tmp, work and shm are bound there instead (a kept sandbox). */
int pd_gv_bundle_make(pd_gv_bundle *b, const char *parent, const pd_sandbox_opts *o, const pd_exec_opts *x,
		      const pd_limits *lim, const char *cgroup_path, const char *default_image, const char *scratch,
		      pd_err *e);
/* Unmounts and removes what pd_gv_bundle_make made. */
void pd_gv_bundle_remove(pd_gv_bundle *b);
/* A dead owner's bundles and kept sandboxes' scratch directories under gvdir (unmounted and
 * removed) and its sandboxes' runsc state files: what a killed paddock left. */
void pd_gv_state_sweep(const char *gvdir, bool (*is_dead)(const char *owner, void *arg), void *arg);
/* The process spec of x (args, env, cwd, user, rlimits, no capabilities) as an OCI "process"
 * object: config.json's, and the file `runsc exec --process` reads. */
struct json_t;
struct json_t *pd_gv_process_json(const pd_exec_opts *x, const pd_limits *lim, uint32_t uid, uint32_t gid);

#define PD_RUNSC "/usr/bin/runsc"

/* The runsc flags every invocation for a sandbox shares (root, platform, network, overlay), into
 * argv from its start; returns how many. plat and net are the caller's buffers (80 bytes). */
int pd_gv_global_args(const char **argv, const char *root, const pd_sandbox_opts *o, char *plat);

/* supervise.c: one runsc process run as an exec is */
typedef enum { PD_GV_KILL_NONE, PD_GV_KILL_TIME, PD_GV_KILL_OUTPUT } pd_gv_kill;
typedef struct pd_gv_outcome {
	int code;          /* runsc's exit status, -1 if killed */
	bool runsc_failed; /* runsc's own failure (exit 128 and its message) */
	pd_gv_kill killed;
} pd_gv_outcome;
typedef struct pd_gv_proc {
	const char *const *argv; /* runsc and its arguments */
	pd_cg *cg;               /* the sandbox's cgroup: stats, and what a limit kills */
	uint64_t wall_ms, cpu_ms, kill_bytes, keep;
	void (*kill)(void *arg); /* called once when a limit is passed */
	void *kill_arg;
	pd_gv_outcome *result;
} pd_gv_proc;
/* Runs p->argv with x's stdin, fills r's output, stats (deltas over the run) and status. 0, or
 * -1 when runsc could not be started. */
int pd_gv_supervise(pd_ctx *c, const pd_gv_proc *p, const pd_exec_opts *x, pd_result *r, pd_err *e);
/* runsc --root root ARGS..., its output dropped; its exit status. */
int pd_gv_runsc_quiet(const char *root, const char *const *args);

/* The cgroup's path relative to its hierarchy's root, as runsc's cgroupsPath wants it. */
int pd_gv_cgroup_rel(const pd_cgroups *cg, const char *name, char *out, size_t len, pd_err *e);
/* runsc makes its cgroup in every v1 hierarchy, also those paddock's backend leaves alone
 * (cpuset, devices, freezer, systemd), and a runsc killed by a limit is not there to remove them:
 * empty once the tasks are gone, they are removed here. -1 when one could not be. */
int pd_gv_cgroup_sweep(pd_ctx *c, const char *name);
/* -1 with why when the tier cannot offer what o asks (the host's network, a snapshot layer, I/O
 * limits, an audit). */
int pd_gv_refused(const pd_sandbox_opts *o, char *why, size_t len);

#endif
