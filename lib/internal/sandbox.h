/* One sandbox's host-side state, shared by the files of its life: sandbox.c (create, destroy),
 * exec.c, scratch.c (the scratch kept across resets) and reset.c. */
#ifndef PADDOCK_SANDBOX_H
#define PADDOCK_SANDBOX_H

#include "internal.h"
#include "proto.h"
#include "scratch.h"

#define PD_SB_EXECS 16 /* execs of one sandbox at once, at most */

struct pd_sandbox {
	pd_ctx *ctx;
	char id[40];
	pd_state state;
	pid_t pid;
	int pidfd;
	int sock;
	bool reaped;
	pd_cg *cg;
	uint32_t slot;
	bool has_slot;
	pd_netns *netns; /* NULL with the host's network */
	pd_net net_now;  /* the mode now (pd_sandbox_set_network switches it; netmode.c) */
	bool lo_switched; /* a switch turned lo on or off: no reset */
	struct pd_relay *relay; /* the egress relay while the mode is allowlist */
	pd_sandbox_opts opts;
	pd_limits lim;
	uint64_t created_us;
	/* the costs of the current use (pd_sandbox_use_costs): what made it ready (the creation, or
	 * the reset that began it) and what its owner noted preparing it after */
	uint64_t ready_cost_us, prepare_us;
	bool ready_by_reset;
	uint32_t resets;
	uint32_t resets_kept; /* resets that kept the root and its overlays */
	bool upper_dirty;     /* their watches saw an event (upperwatch.c; under its lock) */
	int upper_fd;         /* the uppers' tmpfs, for the audit's diff after a run (tamper.c) */
	int mq_fd;            /* its IPC namespace's mqueue root for Landlock, or -1 (landlock.c; a
			       * reset's new IPC namespace makes it stale) */
	bool mq_stale;        /* replaced (in place: the same fd number) at the next exec */
	/* kept open between uses while the process has descriptors to spare (pd_sb_keep_fds):
	 * 1 yes, -1 no, 0 not decided yet; then the cgroup's stat files stay open at rest and the
	 * reset's network check reads its views through net_fds (-1: not opened yet; opened after an
	 * exec, never by a reset, which leaves the table as it found it) */
	signed char fds_kept;
	int net_fds[PD_NETNS_PROBES];
	struct pd_audit_names *names; /* what the audit's resolutions found, kept to the reset (audit.h) */
	pd_keep_state keep;   /* the scratch kept across resets: scratch.c's alone */
	pd_scratch_attr scr[PD_SCRATCH_IMG]; /* /tmp and /work as the last rebuild made them */
	int nlayers;                         /* and how many image layers it attached */
	int init_oom_adj; /* what init's oom_score_adj was set to (checked by a reset) */
	void *user;
	/* its tier's row (tier.h): the public calls route through it, set by pd_sandbox_create */
	const struct pd_tier *tier;
	/* execs running at once (pd_exec_opts.concurrent; exec.c, under its conc_mu): how many, each
	 * one's program's host pid (0: a free slot, -1: not known yet), one audited among them */
	unsigned execs;
	pid_t exec_pids[PD_SB_EXECS];
	bool exec_alone;
	/* a gvisor sandbox's own state (lib/gvisor/sandbox.c's alone) */
	struct pd_gv_sb *gv;
};

/* ---- reset.c: descriptors kept between uses ---------------------------------------------------- */

/* Whether s keeps its cgroup's stat files and its network views open between uses (saving their
 * opens per exec and per reset): decided at the first call, yes while the sandboxes keeping them
 * hold at most a quarter of RLIMIT_NOFILE's soft limit, and that is at least 4096 (a daemon under
 * a low limit needs its descriptors for connections: its sandboxes hold none at rest, as before). */
bool pd_sb_keep_fds(pd_sandbox *s);
/* Closes what s kept (destroy), and gives its share back. */
void pd_sb_drop_fds(pd_sandbox *s);
/* Moves the mqueue mount at fd (an fsmount descriptor a reset replaces) onto the park, dropped in
 * batches, when it holds no queue; whether it did (then closing fd unmounts nothing). */
bool pd_sb_mq_park(int fd);
/* How many mqueue mounts the process has parked so far (tests). */
uint64_t pd_sb_mq_parked(void);

/* ---- sandbox.c: what create made, used again by exec and reset ------------------------------ */

/* The cgroup's memory limit, and the sandbox's record of it. */
int pd_sb_apply_memory(pd_sandbox *s, uint64_t bytes, pd_err *e);
/* One message from init within timeout_ms; -1 with errno (ETIMEDOUT, ECONNRESET) if none. fd (may
 * be NULL): the descriptor that came with it, or -1. */
int pd_sb_recv_msg(int sock, void *buf, size_t len, int timeout_ms, int *fd);
/* Makes (or replaces, in the same fd number, so that a reset leaves the host's descriptor table
 * as it was) s->mq_fd for its IPC namespace now, when Landlock is on. On failure the old one is
 * kept, marked stale for the next exec to try again; last (that exec): it is closed. */
void pd_sb_mq_refresh(pd_sandbox *s, bool last);
/* SIGKILL to init (so to the whole pid namespace), unless it is reaped. */
void pd_sb_kill_init(pd_sandbox *s);
/* /proc/<pid>/oom_score_adj, or INT32_MIN. */
int pd_sb_read_oom_adj(pid_t pid);
/* The layers and binds of o, checked, into cfg (what init, or a reset's helper, mounts). */
int pd_sb_resolve_layout(pd_ctx *c, const pd_sandbox_opts *o, uint64_t disk_bytes, child_cfg *cfg,
			 pd_layer *layers, int *nlayers_out, pd_err *e);
/* Detached mounts of the layers, then the binds, id-mapped into the user namespace of pid. */
int pd_sb_layout_fds(const pd_sandbox_opts *o, const pd_layer *layers, int nlayers, pid_t pid,
		     int *fds, int *nfds, pd_err *e);

/* ---- netmode.c ---- */

/* After a create: the relay of an allowlist sandbox. */
int pd_sb_net_created(pd_sandbox *s, pd_err *e);
/* Before a reset: the relay stopped, the mode as created (fails when lo was switched). */
int pd_sb_net_restore(pd_sandbox *s, pd_err *e);
/* After a reset: the relay started again from the creation's allowlist. */
int pd_sb_net_reopen(pd_sandbox *s, pd_err *e);
void pd_sb_relay_off(pd_sandbox *s);
/* envp with the proxy variables over it (malloc'd vector of borrowed strings), or NULL when
 * the sandbox has no relay. */
char **pd_sb_proxy_env(const pd_sandbox *s, char *const *envp);
/* The relay's connections since the last exec, as egress events of r. */
void pd_sb_relay_collect(pd_sandbox *s, pd_result *r, const pd_audit_opts *ao, uint64_t t0_us);

/* ---- exec.c ----------------------------------------------------------------------------------- */

/* The control socket, for file operations (files.c), while the sandbox is READY. */
int pd_sandbox_ctl(pd_sandbox *s, pd_err *e);

/* ---- execmsg.c -------------------------------------------------------------------------------- */

/* The exec request to init (a msg_exec with its strings) in *out (malloc'd), its size in *len. */
int pd_ct_exec_msg(const pd_sandbox *s, const pd_exec_opts *o, char **out, size_t *len, pd_err *e);

#endif
