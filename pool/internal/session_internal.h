/* The session object, shared by the session's files: session.c (open, exec, files, tar, close),
 * session_traj.c (its trajectory, fast-forward), noise.c (injected faults). */
#ifndef PADDOCK_SESSION_INTERNAL_H
#define PADDOCK_SESSION_INTERNAL_H

#include "pools.h"
#include "trajectory.h"

#define SESSION_RECORDS 64
/* Output the records hold in memory: a record keeps up to the capture's head and tail of each
 * stream (1 MiB each by default), so 64 of them could hold 128 MiB per session. The newest
 * records keep theirs up to this; older ones drop their buffers and a retry of one reads its
 * head and tail back from its spill files, which hold the whole output. */
#define SESSION_OUTPUT_BYTES (8u << 20)
/* Spilled output a session keeps on the host's disk: past it, the oldest records' spill files
 * go (their output can no longer be fetched), so that a session of big outputs cannot hold up to
 * 64 x 128 MiB (the output kill of both streams) until it ends. */
#define SESSION_SPILL_BYTES (256u << 20)
/* The largest archive a download makes (it is written to a temporary file on the host first). */
#define SESSION_TAR_MAX (1024u << 20)

/* Agents whose execs may run at once in one session (issue 40; pd_exec_opts.concurrent caps a
 * sandbox at 16). */
#define SESSION_AGENTS 16

/* An exec running in the session: whose (its agent, "" for the default one) and its request id
 * (a retry of it while it runs is refused, not run twice). */
typedef struct agent_run {
	bool on, audited;
	char agent[64];
	char request_id[128];
} agent_run;

typedef struct record {
	char request_id[128];
	char agent[64]; /* who ran it ("": the default agent) */
	char *noise;  /* the faults injected into this exec, JSON (NULL: none asked) */
	unsigned n; /* exec number in this session */
	bool slim;  /* output buffers dropped (lengths kept): read back from the spill files */
	bool spill_gone;      /* its spill files were deleted for SESSION_SPILL_BYTES */
	uint64_t spill_bytes; /* what its spill files hold */
	pd_result r;
} record;

struct pd_session {
	pd_pools *p;
	pd_pool *pl;
	pd_sandbox *sb;
	char id[48];
	char sandbox_id[40];
	char use_id[56]; /* the sandbox's use (pd_sandbox_use_id): a reset starts another; under p->mu */
	char dir[POOL_PATH];
	char *metadata;
	uint64_t created_us, last_used_us, idle_ttl_ms, max_ms;
	bool busy, dead, closed_by_pools, end_on_limit;
	/* the execs running, of different agents at once (issue 40): a request that needs the session
	 * alone (files, reset, snapshot, grade...) is refused while any runs, as while busy */
	agent_run runs[SESSION_AGENTS];
	unsigned running;
	uint64_t cpu_mark_us; /* the sandbox's CPU counter the budget has counted up to */
	bool lost; /* closed with its daemon (PD_SESSION_LOST_STOP): the closing line says so as data */
	char dead_reason[400];
	char damage[256]; /* why the last step left the sandbox unusable, when it says */
	unsigned nexec;
	unsigned steps; /* the agent's steps recorded (not verdicts, not annotations) */
	uint64_t budget_steps, budget_wall_ms, budget_cpu_ms; /* pd_session_opts' (0: none) */
	uint64_t cpu_used_ms;    /* the execs' CPU, for the budget (an overlap of agents' once) */
	unsigned budget_refused; /* bits: 1 steps, 2 wall_s, 4 cpu_s: an exec was refused for it */
	record rec[SESSION_RECORDS];
	unsigned nrec;
	/* the trajectory (trajectory.c): traj_mu makes a line at a time (agents' steps end at
	 * once), each with the files changed since the last (fs), and orders them with the closing
	 * line */
	pthread_mutex_t traj_mu;
	pd_traj *traj;
	pd_fsmap fs;      /* the writable directories after the last step */
	const char *scan_dirs[4];
	pd_traj_index *resume;
	char resume_id[64], group_id[128], sample_id[128];
	pd_noise noise;
	char *snapshot;  /* a fork: the snapshot it was made from (kept while the session lives) */
	char *top_layer; /* and its tree, the sandbox's top layer (pd_sandbox_opts.top_layer) */
	struct pd_session *next;
};

/* Marks the session in use (EBUSY while another request uses it, ESRCH once it ended); leave
 * marks it free again and ends it if its sandbox is no longer READY. */
int session_enter(pd_session *s, pd_err *e);
void session_leave(pd_session *s);
/* The sandbox is READY, or RUNNING agents' execs: not ended */
bool session_sandbox_alive(const pd_session *s);
/* session_agents.c, with the pools' lock held: 0 when the session has not ended and no request
 * holds it alone; else -1 with e (ESRCH: ended, EBUSY: busy). */
int session_not_held(const pd_session *s, pd_err *e);
/* session_agents.c: marks an exec of agent ("" the default) running, rid its request id (NULL:
 * none); its slot, or -1 with e (EBUSY: the session busy, the agent running, rid running, an
 * audited exec beside others, too many; ESRCH: ended). Leave frees the slot and ends the session
 * if its sandbox died. */
int session_exec_enter(pd_session *s, const char *agent, const char *rid, bool audited, pd_err *e);
void session_exec_leave(pd_session *s, int slot);

/* noise.c: before an exec (n: its number), the latency slept and maybe a failure put in *r
 * instead of running (*skip); after it, maybe its stdout cut. NULL when the session has no noise;
 * else the list of faults injected (empty if none this time). */
/* The faults armed for one exec and the audit options that carry them to the program's calls
 * (must outlive the exec: the caller keeps it on its stack). */
typedef struct noise_armed {
	pd_fault f[8];
	uint32_t hits[8];
	size_t rule[8]; /* which of the session's rules each is */
	size_t n;
	pd_audit_opts ao;
} noise_armed;
json_t *session_noise_before(pd_session *s, unsigned n, pd_exec_opts *x, noise_armed *arm, pd_result *r,
			     bool *skip);
void session_noise_after(pd_session *s, unsigned n, const noise_armed *arm, pd_result *r, json_t *list);
/* Whether exec n's stdout will be cut (then it is not streamed live: the cut must not leak) */
bool session_noise_cuts(const pd_session *s, unsigned n);
const char *session_noise_errno_name(int err);

/* snapshot.c: the session's writable directories copied into tree (0, or an errno: EFBIG past
 * max bytes); each directory copied is added to dirs (may be NULL); a tree removed */
int session_copy_tree(pd_session *s, const char *tree, uint64_t max, uint64_t *bytes, uint64_t *files, json_t *dirs);
void session_rm_tree(const char *dir);
/* snapshot.c: whether name is a snapshot's (the characters of a session id); the snapshots under
 * root past their TTL that no session uses deleted */
bool session_snapshot_name_ok(const char *name);
void session_snapshots_sweep(pd_pools *p, const char *root);
/* snapshot.c: the tree of snapshot name and its template (ENOENT once expired) */
int pd_snapshot_tree(pd_pools *p, const char *name, char *tree, size_t len, char *tpl, size_t tlen, pd_err *e);

/* session_traj.c */
/* RFC 3339 UTC with milliseconds (trajectory times) */
void session_wall_text(uint64_t us, char b[40]);
int session_traj_open(pd_session *s, const pd_session_opts *o, pd_err *e);
void session_traj_close(pd_session *s);
/* Appends a step line while the session is in use (takes action, obs; extra's fields are added) */
long session_traj_step(pd_session *s, const char *kind, const char *rid, uint64_t t0, json_t *action, json_t *obs,
		       json_t *extra, bool scan, pd_err *e);
/* The exec step's action: command, cwd, digests of the environment and stdin, stdin itself up to
 * a cap, the time limit asked for */
json_t *session_exec_action(const pd_exec_opts *x);

#endif
