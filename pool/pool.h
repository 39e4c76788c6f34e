/* paddock pools: templates, warm pools of READY sandboxes, and sessions over libpaddock.
 *
 * A template is a named sandbox recipe (image layers, limits, network, env, cwd, files placed
 * before use, the toolchain it serves). Each template has a pool of sandboxes created ahead of
 * time by a builder thread, sized by demand; acquire takes one (or creates one on the spot when
 * the pool is empty), release hands it to a reclaimer thread which, off the request path, resets
 * it for the next user when the template reuses sandboxes (pool_reuse, the default), the pool
 * still needs it and the reset proves it clean (pd_sandbox_reset), and destroys it otherwise.
 * docs/design/reset.md says what a reset checks.
 *
 * Every sandbox the pools own has a state and a deadline for it; the reclaimer kills and counts
 * any that overstay (a create that never finishes, an idle sandbox past its TTL, a session past its
 * lifetime, a teardown that hangs). */
#ifndef PADDOCK_POOL_H
#define PADDOCK_POOL_H

#include "paddock.h"

/* ---- templates ------------------------------------------------------------------------------- */

#define PD_TPL_MAX_LAYERS 7
#define PD_TPL_MAX_ENV 64
#define PD_TPL_MAX_FILES 32
#define PD_TPL_MAX_REQUIRES 8

typedef struct pd_tpl_file {
	char *path;
	char *data;
	size_t len;
	mode_t mode;
} pd_tpl_file;

typedef struct pd_template {
	char name[64];
	char language[32];
	char *layers[PD_TPL_MAX_LAYERS + 1]; /* top first; none = the default host image */
	/* "image" naming an imported image (a name or digest, not a path): pd_template_check
	 * resolves it, leases its layers into layers[] and takes its Env and WorkingDir where the
	 * template gives none */
	char *image_ref;
	pd_image *image;
	char *env[PD_TPL_MAX_ENV + 1];       /* K=V; none = paddock's defaults */
	/* "user": root, sandbox (PD_USER_SANDBOX, 1000:1000), UID[:GID], or names of the image's
	 * own /etc/passwd and /etc/group; "" = the imported image's config User if it has one, else
	 * root. pd_template_check resolves it into uid and gid (pd_sandbox_opts.uid/gid): the
	 * program, the session steps, the file API and the harness's files act as / belong to it */
	char user[64];
	uint32_t uid, gid;
	char *cwd;
	pd_tpl_file files[PD_TPL_MAX_FILES];
	size_t nfiles;
	char *requires[PD_TPL_MAX_REQUIRES + 1]; /* programs the image must have, e.g. "python3" */
	char *warmup[PD_TPL_MAX_REQUIRES + 1];  /* run once when a sandbox is built; default /bin/true */
	pd_limits limits;
	/* "memory_fast_path": the program's data segment held at its memory limit plus this
	 * headroom (pd_exec_opts.data_headroom_bytes); 0 = off (the JVM, Go, node map far more
	 * writable memory than they touch) */
	uint64_t data_headroom_bytes;
	pd_net net;
	/* "egress": the hosts an allowlist network reaches, and the relay's bounds; for a template
	 * whose network is allowlist, and the most a request or a session stage switching to
	 * allowlist may ask for (docs/isolation.md). egress.allow is egress_allow (heap, NULL-ended,
	 * NULL: none), which survives the template being moved */
	char **egress_allow;
	pd_egress_opts egress;
	/* "isolation": the tier its sandboxes run under (the first the template names; container by
	 * default), and the tiers a request may ask for instead (a bit per pd_isolation; by default
	 * every tier: a request may pay for a stronger one). A request's other tier runs in a pool of
	 * its own, "<template>~<tier>" (pd_pools_tier). */
	pd_isolation isolation;
	uint32_t isolation_allowed;
	uint32_t pool_min, pool_max;
	uint64_t pool_idle_ttl_ms;   /* READY sandboxes above the target are reclaimed after this */
	/* a released sandbox the pool still needs is reset (pd_sandbox_reset) and used again
	 * instead of destroyed; default on (the reset is proven by tests/unit/reset.c) */
	bool pool_reuse;
	uint64_t session_idle_ttl_ms, session_max_ms;
	/* the template's audit policy ("audit": a policy object, docs/audit.md): a request's
	 * "audit" tightens it; with "mandatory", every run is audited under it. NULL: none */
	pd_audit_policy *audit;
	/* "rules" over a session's trajectory (issue 40; docs/sessions.md), as compact JSON (an
	 * object; the server checks its fields at start and joins a session's own over it,
	 * tighten-only), or NULL */
	char *rules;
	/* the template's version, in every record: the templates file's "version" if it gives one,
	 * else (pd_template_check) "sha256:" and 16 hex digits of what a sandbox and its execs are
	 * made of (language, image digest or layers, env, cwd, files, requires, warm-up, limits,
	 * network, audit policy): a changed recipe is a new version */
	char version[48];
	bool version_given;
	char audit_digest[65]; /* of the audit policy's JSON as given; "" = none */
	/* filled by pd_template_check */
	bool available;
	char missing[128];
} pd_template;

/* A request's or a session stage's allowlist (its "egress": {"allow": [...]}, v; NULL: all
 * of the template's) checked against template t's: each entry must be on t's list as written.
 * Fills *out with t's bounds and the list, *list the heap copy it points to (caller frees with
 * pd_egress_list_free). On error, e names the field (where). */
int pd_egress_narrow(const pd_template *t, struct json_t *v, const char *where, pd_egress_opts *out, char ***list,
		     pd_err *e);
void pd_egress_list_free(char **l);

/* Parses a templates file (JSON; docs/ describes the schema). On error, e names the field. */
int pd_templates_load(const char *path, pd_template **out, size_t *n, pd_err *e);
/* Parses templates from a JSON text. */
int pd_templates_parse(const char *json, size_t len, pd_template **out, size_t *n, pd_err *e);
/* The built-in templates: bash, python, c, cpp, node on the default host image. */
int pd_templates_default(pd_template **out, size_t *n, pd_err *e);
/* Checks that the template's image has its toolchain; sets available and missing. */
void pd_template_check(pd_ctx *c, pd_template *t);
/* Whether t's image (its layers; the host's /usr for the default image) has prog in one of its
 * bin directories, executable. */
bool pd_template_has_program(const pd_template *t, const char *prog);
void pd_templates_free(pd_template *t, size_t n);
/* Sandbox options for a template (pointers into t; valid while t lives). */
void pd_template_sandbox_opts(const pd_template *t, pd_sandbox_opts *o);

/* ---- pools ----------------------------------------------------------------------------------- */

typedef struct pd_pools pd_pools;

typedef struct pd_pools_opts {
	uint64_t memory_budget;    /* bytes for all pooled sandboxes; 0 = half the machine */
	uint64_t idle_cost_bytes;  /* host memory one idle sandbox costs (estimate); 0 = 1 MiB */
	uint64_t setup_timeout_ms; /* CREATING deadline; 0 = 10 s */
	uint64_t teardown_timeout_ms; /* RECLAIMING deadline; 0 = 10 s */
	uint64_t tick_ms;          /* how often deadlines and targets are checked; 0 = 100 ms */
	uint64_t window_ms;        /* demand window: a burst is forgotten after two; 0 = 10 s */
	bool prewarm;              /* fill every available pool to its minimum at start */
	uint32_t reclaim_backlog;  /* released sandboxes (still alive) waiting for the reclaimer
				    * beyond which releasing threads destroy one themselves and the
				    * builder waits; 0 = 8 per CPU */
	uint32_t fd_reserve;       /* descriptors the builder must leave free (a daemon's share for
				    * connections); 0 = no check. Counted in /proc/self/fd per build. */
	uint32_t reclaimers;       /* reclaimer threads; 0 = one per 4 CPUs, 1 to 16 */
	/* trajectories of ended sessions older than this are deleted (retention.c); 0 = kept */
	uint64_t trajectory_retention_s;
	uint32_t image_pools;      /* image pools live at once (pd_pools_image); 0 = 64 */
	uint32_t image_ready_max;  /* READY sandboxes all image pools hold together, the hottest
				    * images first; 0 = 4 per CPU */
	/* Told, on a reclaimer thread and without the pools' lock, how each use of a released
	 * sandbox ended: use_id (pd_sandbox_use_id as the user saw it) and "clean" (reset for the
	 * next user: the reset proved nothing of the use was left; or destroyed with nothing
	 * left) or what the teardown found, and what that reset or teardown took (microseconds:
	 * the use's last cost segment). Sessions' uses too. May be NULL. */
	void (*on_reclaimed)(void *arg, const char *use_id, const char *residue, uint64_t teardown_us);
	void *on_reclaimed_arg;
} pd_pools_opts;

/* Upper bounds, in seconds, of the buckets of a pool's sandbox lifetime histogram (creation to
 * destruction); one more bucket counts the rest (+Inf). */
#define PD_LIFETIME_BUCKETS 12
extern const double pd_lifetime_bounds_s[PD_LIFETIME_BUCKETS];

typedef struct pd_pool_stats {
	char template_name[64];
	bool available;
	uint32_t ready, in_use, creating, reclaiming, target;
	uint64_t acquires, hits, misses, waits_ms_total;
	uint64_t created, create_failures, destroyed, expired, forced_reclaims, residue_failures;
	uint64_t resets, reset_refusals; /* released sandboxes reset for reuse; resets refused */
	uint64_t resets_kept; /* of the resets, those that kept the untouched root */
	uint64_t resets_scratch_kept; /* of those, the ones that kept the scratch directories too */
	uint64_t peak_in_use;
	/* sandboxes destroyed, by how long they lived (buckets as pd_lifetime_bounds_s, not cumulative) */
	uint64_t lifetime_bucket[PD_LIFETIME_BUCKETS + 1];
	uint64_t lifetime_count;
	double lifetime_sum_s;
} pd_pool_stats;

/* Starts pools for the templates (copied in) and their builder and reclaimer threads. */
pd_pools *pd_pools_new(pd_ctx *c, const pd_template *t, size_t n, const pd_pools_opts *o, pd_err *e);
/* Stops the threads, destroys every sandbox the pools hold; sessions must be closed first. */
void pd_pools_free(pd_pools *p);
/* The template of the live pool of that name, or NULL: a lookup, which never makes, revives nor
 * retires a pool (it may run on the HTTP event thread). A derived pool's (an image's or a tier's)
 * is kept live for a second after it, for the caller's acquire. */
const pd_template *pd_pools_template(pd_pools *p, const char *name);
/* The same, the pool made first if the name is a derived pool's that is not live (retired idle, or
 * named by a snapshot from before a restart): the image opened and its lease taken, a slot found
 * (waiting up to 5 s for one to drain). NULL with e when it cannot be. Not on the event thread. */
const pd_template *pd_pools_template_ensure(pd_pools *p, const char *name, pd_err *e);
/* The image a template's sandboxes are made of, as records name it: an imported image's name ("" when
 * opened by digest) and manifest digest; a root directory's path and no digest; or "host" and the
 * default image's id (pd_ctx_default_image_id). name and digest are PD_DIGEST_LEN or more. */
void pd_pools_template_image(pd_pools *p, const pd_template *t, char *name, size_t nlen, char *digest,
			     size_t dlen);
/* The pool a request runs in, found or made in one pass: template tname's, on the image ref names
 * (NULL or "": the template's own), under isolation tier (a pd_isolation; -1: the pool's own).
 * Writes the pool's name into pool (64 bytes) and, with an image, its digest into digest
 * (PD_DIGEST_LEN; may be NULL), and returns the pool's template (as pd_pools_template_ensure).
 * NULL with e as pd_pools_image and pd_pools_tier fail (EAGAIN: no free slot for a new pool).
 * The pool it (or pd_pools_image, pd_pools_tier) returns is not retired for a second after. */
const pd_template *pd_pools_resolve(pd_pools *p, const char *tname, const char *ref, int tier, char *pool,
				    size_t pool_len, char *digest, pd_err *e);
/* Takes a READY sandbox of the template (hit), or creates one on the spot (miss). */
pd_sandbox *pd_pool_acquire(pd_pools *p, const char *template_name, bool *hit, pd_err *e);
/* Gives a sandbox back. The reclaimer thread (or the caller, when the reclaimer is behind by
 * more than reclaim_backlog sandboxes) resets it for the next user if the template reuses
 * sandboxes and the pool is below its target, and destroys it (with the residue check)
 * otherwise, or if the reset is refused. */
void pd_pool_release(pd_pools *p, pd_sandbox *s);
/* Per-template figures; *n receives the count. Returns a malloc'd array. */
pd_pool_stats *pd_pools_stats(pd_pools *p, size_t *n);
/* Waits until every pool has reached its target (or timeout_ms passed). Returns 0 if reached. */
int pd_pools_wait_ready(pd_pools *p, uint64_t timeout_ms);
/* The template of the pool s came from (pd_pool_acquire): valid while s is held. */
const pd_template *pd_pool_template_of(pd_pools *p, pd_sandbox *s);

/* ---- tier pools (acquire.c; their recipe in tierpool.c) ---- */
/* The pool a request runs in when it asks for isolation tier (pd_isolation) on the pool named
 * base (a template's, or an image pool's): base itself when tier is its template's, else
 * "<base>~<tier>", the same recipe under that tier, made on first use and sized by demand from
 * zero like an image pool. A tier the template does not allow fails with EINVAL (e->msg names the
 * allowed ones); a tier that cannot offer what the template needs (an audit, the host's network,
 * I/O limits) with ENOTSUP; no free slot with EAGAIN. Writes the name into pool (64 bytes). */
int pd_pools_tier(pd_pools *p, const char *base, int tier, char *pool, size_t pool_len, pd_err *e);
/* 0 when the template named tname allows tier and the tier can offer what it needs; else -1 with
 * e->msg starting "isolation: " (EINVAL: not allowed or no such template, ENOTSUP: cannot offer). */
int pd_pools_tier_allowed(pd_pools *p, const char *tname, int tier, pd_err *e);
/* "container", "container gvisor": the tiers t allows, its own first. */
void pd_template_tiers(const pd_template *t, char *buf, size_t len);

/* ---- image pools (acquire.c; their recipe in imgpool.c) ---- */
/* A request may run a template on an imported image: the template's recipe (limits, network,
 * files, requires, warm-up) on the image's layers, with the image's Env and WorkingDir over the
 * template's env and cwd. Each (template, image) pair has a pool of its own, named
 * "<template>@<the first 24 hex digits of the manifest digest>", made on first use and sized by
 * demand from zero (pool.min is 0 whatever the template says): an idle image has no sandbox, the
 * first sandbox of a cold image is created on the spot, and the image pools share
 * image_ready_max READY sandboxes, the hottest images first. An idle pool is retired (its lease
 * on the image's layers dropped) when a new image needs its slot; its name brings it back.
 * Resolves ref (a name or digest) now, makes the pool if needed and writes its name into pool
 * (at least 64 bytes) and the digest into digest (may be NULL). A template whose requires the
 * image lacks fails with kind PD_EK_DEPENDENCY (dependency_missing); an unknown image with
 * ENOENT; no free slot with EAGAIN. */
int pd_pools_image(pd_pools *p, const char *template_name, const char *ref, char *pool, size_t pool_len,
		   char *digest, pd_err *e);

/* ---- sessions -------------------------------------------------------------------------------- */

typedef struct pd_session pd_session;

/* Injected faults (noise.c): off unless seed or a rate is set; the same seed gives the same faults
 * at the same steps. Never applied outside sessions (runs and judging have none). */
typedef struct pd_noise {
	bool on;
	uint64_t seed;
	uint64_t latency_ms;    /* up to this much added to each step (uniform) */
	double fail_rate;       /* of execs answered with a realistic failure instead of running */
	double truncate_rate;   /* of execs whose output is cut short */
	/* faults inside the program: each rule is armed for an exec with its rate; an armed rule
	 * makes the program's matching calls fail with its errno (pd_fault) for that exec */
	struct pd_noise_fault {
		char op[12];    /* "" = any call */
		char path[256]; /* "" = any path or address */
		int err;
		double rate;
	} faults[8];
	size_t nfaults;
} pd_noise;
/* A fault rule's errno by name ("EIO"), or -1 when it is not one a rule may use. */
int pd_noise_errno_parse(const char *name);
/* Whether op names a call a fault rule can make fail (the audit's names: "open", "exec",
 * "unlink", "rename", "connect", ...). */
bool pd_noise_op_known(const char *op);

typedef struct pd_session_opts {
	uint64_t idle_ttl_ms;    /* 0 = the template's */
	uint64_t max_lifetime_ms; /* 0 = the template's */
	const char *metadata;    /* free text kept with the session (e.g. task ids) */
	/* a step's time or output limit ends the session (the behaviour before sessions survived
	 * them); by default it kills the step's processes only and the session goes on */
	bool end_on_limit;
	/* trajectory: a trainer's group (e.g. a GRPO group) and sample within it, recorded on
	 * every step; a trajectory to fast-forward from: steps whose request id it recorded are
	 * answered from it, not run (pd_session_fast_forward) */
	const char *group_id, *sample_id, *resume_from;
	/* a fork: the session's files are the snapshot's (pd_session_snapshot), its template the
	 * snapshot's; the sandbox is made for it (not from the warm pool) and destroyed after */
	const char *from_snapshot;
	pd_noise noise;
	/* the episode's budget (issue 40): execs, wall time since the session opened, CPU time of
	 * its execs; an exec past it is refused (EDQUOT), the session stays readable. 0 = none */
	uint64_t budget_steps, budget_wall_ms, budget_cpu_ms;
	/* the name the session's image was asked for by (its pool is per digest), for the trajectory's
	 * first line; NULL: the template's image as pd_pools_template_image names it */
	const char *image_name;
} pd_session_opts;

/* Opens a session: one sandbox held across many execs and file operations. */
pd_session *pd_session_open(pd_pools *p, const char *template_name, const pd_session_opts *o, pd_err *e);
const char *pd_session_id(const pd_session *s);
/* The session's template's name. */
void pd_session_template(const pd_session *s, char *name, size_t len);
pd_sandbox *pd_session_sandbox(pd_session *s);
/* Runs a command: x->argv, or if NULL the session's image's Entrypoint then Cmd (EINVAL when it
 * has neither). With a request_id seen before, returns the recorded result instead of running
 * it again (a client retrying after a network hiccup must not double side effects). Full output
 * beyond the kept head/tail is spilled to files fetchable with pd_session_output_path. */
int pd_session_exec(pd_session *s, const pd_exec_opts *x, const char *request_id, pd_result *r, pd_err *e);
/* pd_session_exec under an audit policy (docs/audit.md): its decoys planted and its honey
 * variables set before the program runs, the process level computed into v with the sandbox's
 * files after it (p NULL: pd_session_exec). x->audit must be p's options. */
int pd_session_exec_audited(pd_session *s, const pd_exec_opts *x, const pd_audit_policy *p, const char *request_id,
			    pd_result *r, pd_audit_verdict *v, pd_err *e);
/* pd_session_exec_audited with fn (NULL: none) called once the exec ran, before its trajectory line
 * is written: the fields of the object it returns (a new reference, or NULL) are added to the
 * line (e.g. the rules' flags); v is the exec's process level when audited, else NULL. */
typedef struct json_t *(*pd_step_extra_fn)(void *arg, const pd_result *r, const pd_audit_verdict *v);
int pd_session_exec_extra(pd_session *s, const pd_exec_opts *x, const pd_audit_policy *p, const char *request_id,
			  pd_step_extra_fn fn, void *arg, pd_result *r, pd_audit_verdict *v, pd_err *e);
/* Several agents in one session (issue 40): an exec names its agent (NULL or "": the default
 * one), and execs of different agents run at once (pd_exec_opts.concurrent: the session's cgroup
 * and limits are theirs together). An agent's steps run one at a time: its second exec while one
 * runs is refused (EBUSY, naming the agent), as is a retry of a request id still running, an
 * audited exec beside others (it runs alone), and an agent past SESSION_AGENTS at once. The
 * trajectory line and the record name the agent; lines come in the order the steps ended. */
typedef struct pd_session_step {
	const char *agent;
	pd_step_extra_fn fn; /* as pd_session_exec_extra's (NULL: none) */
	void *fn_arg;
	/* out: the id the exec's output is fetched by (its request id, else "#<n>"), set before the
	 * program starts (a streamed answer's first line names it); and the agent a recorded
	 * request id's answer was run by */
	char output_request_id[128];
	char ran_by[64];
} pd_session_step;
int pd_session_exec_step(pd_session *s, const pd_exec_opts *x, const pd_audit_policy *p, const char *request_id,
			 pd_session_step *st, pd_result *r, pd_audit_verdict *v, pd_err *e);
/* The longest agent name; EINVAL for a name of other characters than letters, digits, "-_.:@/" */
#define PD_AGENT_MAX 63
int pd_session_agent_check(const char *agent, pd_err *e);
/* The session's sandbox id and state ("EXPIRED" once the pools ended it), read safely even while
 * the reclaimer tears an ended session's sandbox down. */
void pd_session_info(pd_session *s, char *sandbox_id, size_t id_len, char *state, size_t state_len);
/* The id of the session's current use of its sandbox (pd_sandbox_use_id): a reset starts a new
 * one, also when the sandbox stays the same. */
void pd_session_use_id(pd_session *s, char *buf, size_t len);
/* Bytes of output the session's records hold in memory (at most 8 MiB: older records read
 * theirs back from the spill files, of which a session keeps 256 MiB, newest first). */
size_t pd_session_output_memory(pd_session *s);
/* How many execs the session has run (the last one without a request id is "#<count>"). */
unsigned pd_session_exec_count(pd_session *s);
/* The faults injected into the exec with that request id or number, as JSON (malloc'd), or NULL
 * when the session has no noise. */
char *pd_session_noise_of(pd_session *s, const char *request_id);
/* Path of the full stdout (stream 1) or stderr (2) of the exec with that request id or number. */
int pd_session_output_path(pd_session *s, const char *request_id, int stream, char *path, size_t len,
			   pd_err *e);
/* Unpacks a tar stream (read from fd) into dir inside the sandbox; packs dir into fd (a pipe is
 * fine: the archive is written as tar makes it, nothing is spooled on the host; a failure after
 * part of it was written, e.g. past the size cap, returns -1: the caller must not treat what
 * arrived as the archive). */
int pd_session_upload_tar(pd_session *s, const char *dir, int tar_fd, const char *request_id, pd_err *e);
int pd_session_download_tar(pd_session *s, const char *dir, int tar_fd, const char *request_id, pd_err *e);
/* Returns the session to its template's fresh state (the pools' reset, pd_sandbox_reset, and the
 * template's files placed again), keeping its id, metadata and records. A sandbox the reset
 * refuses is replaced by a new one of the template. */
int pd_session_reset(pd_session *s, const char *request_id, pd_err *e);
/* Switches the session's network for its next steps (session_net.c): mode "none", "loopback"
 * or "allowlist"; egress ({"allow": [...]}, NULL: all of it) narrows the template's allowlist.
 * Recorded as a "network" step. Returns {"network", "egress"?} (new reference) or NULL with e:
 * EINVAL a bad mode or field, EPERM what the template does not grant, EBUSY, ESRCH. */
struct json_t *pd_session_set_network(pd_session *s, const char *mode, struct json_t *egress, const char *request_id,
				      pd_err *e);
/* ---- trajectories (trajectory.c) ---- */
/* Deletes the trajectories of ended sessions last written more than older_than_s ago (never one
 * of a session open in p, or of a live daemon's session still open); how many (retention.c). The
 * pools do it on their own with trajectory_retention_s. */
size_t pd_trajectories_prune(pd_pools *p, uint64_t older_than_s);
struct json_t;
/* <state>/trajectories/<id>.jsonl; EINVAL for an id that is not a session id's characters. */
int pd_trajectory_path(const char *state_dir, const char *id, char *path, size_t len, pd_err *e);
/* The trajectory's last whole line (the closing line once its session ended), or NULL (e->code
 * ENOENT: no such trajectory). */
struct json_t *pd_trajectory_last(const char *state_dir, const char *id, pd_err *e);
/* The trajectory's lines as a JSON array (a last line cut by a crash left out). */
struct json_t *pd_trajectory_load(const char *state_dir, const char *id, pd_err *e);
/* Appends a step of kind ("write", "read", "delete", "upload", "download", "stat", "reset", ...)
 * to the session's trajectory: its action and observation (both taken), the files it changed in
 * the writable directories, its times (started_us: CLOCK_REALTIME when it began). Call it with
 * the step done and the session not in use. Returns the step number, or -1. */
long pd_session_record(pd_session *s, const char *kind, const char *request_id, uint64_t started_us,
		       struct json_t *action, struct json_t *observation, pd_err *e);
/* Fast-forward: with a session resumed from a trajectory that recorded a step of this kind and
 * request id, appends it (marked fast_forward) to this session's trajectory and returns a new
 * reference to its recorded observation; the step is not run. NULL otherwise. */
struct json_t *pd_session_fast_forward(pd_session *s, const char *kind, const char *request_id);
/* SHA-256 (pd_sha256) as 64 hex digits of a file from its start (its offset is put back). */
int pd_session_digest_fd(int fd, char hex[65]);

/* Snapshot of the session's files (/work, /tmp, the template's cwd; not its processes) as
 * <state>/snapshots/<name> (NULL: a generated name), kept ttl_s (0: an hour) and at most
 * max_bytes (0: 1 GiB; EFBIG past it). Returns its description (JSON), or NULL. */
struct json_t *pd_session_snapshot(pd_session *s, const char *name, uint64_t ttl_s, uint64_t max_bytes,
				   const char *request_id, pd_err *e);
/* ---- grading a session in a fork (session_grade.c) ---- */
typedef struct pd_grade_file {
	const char *path; /* absolute, or relative to the template's working directory */
	const char *data;
	size_t len;
} pd_grade_file;

typedef struct pd_grade_opts {
	const pd_grade_file *files; /* hidden files: placed in the fork, replacing what is there */
	size_t nfiles;
	char *const *argv;          /* the command, run in the template's working directory */
	uint64_t wall_ms, cpu_ms, memory_bytes, output_bytes; /* its limits (0: the template's) */
	const char *report_path;    /* a file the command writes, read back from the fork (NULL: none) */
	const pd_audit_policy *audit; /* the command audited under it (NULL: not audited) */
	uint64_t max_bytes;         /* the session's files copied at most (0: 1 GiB) */
} pd_grade_opts;

typedef struct pd_grade_out {
	pd_result r;                /* the command's result */
	char *report;               /* report_path's content (malloc'd), or NULL: report_error says why */
	size_t report_len;
	char report_error[256];
	char fork_id[40];           /* the fork's sandbox, destroyed before the grade returns */
	char residue[128];          /* what its teardown found ("clean") */
	uint64_t copy_ms, copy_bytes, copy_files, run_ms;
	bool audited;
	pd_audit_verdict verdict;   /* when audited */
} pd_grade_out;

/* Grades the session's current files in a fork, never in the session: its writable directories
 * (/work, /tmp, the template's working directory) are copied as a snapshot's are into a tree that
 * becomes the read-only top layer of a new sandbox of the session's template; the hidden files
 * are written there (replacing whatever the agent left at those paths), the command runs under
 * the limits, the report file is read, and the fork and the tree are destroyed. The caller holds
 * the session (pd_session_begin) throughout, so no step runs meanwhile. Returns 0 with out
 * filled (the command's status says how it ended), or -1 when the fork could not be made or
 * driven (e: an infrastructure failure). */
int pd_session_grade(pd_session *s, const pd_grade_opts *g, pd_grade_out *out, pd_err *e);
void pd_grade_out_free(pd_grade_out *o);
/* The steps the session's trajectory recorded (verdict and annotation lines not counted). */
unsigned pd_session_steps(pd_session *s);
/* The session's budget and what it spent: {"budget": {steps, wall_s, cpu_s} | null, "spent":
 * {steps, wall_s, cpu_s}, "exceeded": [the budgets an exec was refused for, "cpu_s" once its
 * execs' CPU went past it]}. */
struct json_t *pd_session_budget_json(pd_session *s);
/* Appends a line that is not a step of the agent's (a verdict, an annotation) to the trajectory
 * while the caller holds the session: no file scan; action, obs and extra taken (may be NULL). */
long pd_session_note(pd_session *s, const char *kind, const char *rid, struct json_t *action, struct json_t *obs,
		     struct json_t *extra, pd_err *e);

/* Marks the session in use for operations on its sandbox made directly (files, stat): fails with
 * EBUSY while another request uses it, ESRCH once it has ended. Pair with pd_session_end. */
int pd_session_begin(pd_session *s, pd_err *e);
void pd_session_end(pd_session *s);
/* Whether the session outlived its idle TTL or lifetime (then it is closed by the pools). */
bool pd_session_expired(const pd_session *s, uint64_t now_us);
/* Ends the session; its sandbox goes to the reclaimer. */
void pd_session_close(pd_session *s);
/* The same, lost with its daemon (which stops): why goes into the trajectory's closing line with
 * "lost": true, unless the session had already ended for a reason of its own. */
void pd_session_close_lost(pd_session *s, const char *why);
/* The reason of a session the daemon closes as it stops. */
#define PD_SESSION_LOST_STOP "lost: the daemon stopped with the session open; its sandbox was destroyed with it"


#endif
