/* paddock server layer: run requests, languages, the scheduler, the store, metrics, HTTP.
 *
 * A request (native, SandboxFusion /run_code or Piston /api/v2/execute) is parsed into a job: a
 * template, files, an optional compile step and a run step, limits, a priority and a deadline.
 * The scheduler queues jobs by priority with per-client round robin, runs them on worker threads
 * through the warm pools, retries infrastructure failures in a fresh sandbox, and records every
 * attempt in the store before the caller is answered. */
#ifndef PADDOCK_SERVER_H
#define PADDOCK_SERVER_H

#include "paddock.h"
#include "pool.h"
#include "log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- failure classes ------------------------------------------------------------------------- */

typedef enum pd_failure {
	PD_F_NONE = 0,
	PD_F_STARTUP,     /* startup_failure: the environment could not be created */
	PD_F_DEPENDENCY,  /* dependency_missing: the template lacks the toolchain */
	PD_F_TIMEOUT,     /* exec_timeout */
	PD_F_JUDGE,       /* judge_error */
	PD_F_OOM,         /* oom */
	PD_F_OUTPUT,      /* output_limit */
	PD_F_POLICY,      /* policy_violation */
	PD_F_QUEUE,       /* queue_timeout: the deadline passed before a sandbox was free */
	PD_F_CANCELLED,   /* cancelled */
	PD_F_INTERNAL,    /* internal_error */
	PD_F_COMPILE,     /* compile_error: a judged submission that does not compile (the model's) */
	PD_F_COUNT
} pd_failure;

const char *pd_failure_name(pd_failure f);
/* The class a stored record's "failure_class" names (PD_F_NONE for "none" or a name it does not
 * know): for text read back from the store, never for a verdict being made (pd_verdict has the
 * enum). */
pd_failure pd_failure_parse(const char *name);
/* The failure class of one exec: its status's (TO exec_timeout, ML oom, OL output_limit, XX
 * internal_error), else policy_violation when the audit refused a call or (v, may be NULL) failed
 * the process level, else none. One rule for a job's steps (job.c) and paddock exec's record. */
pd_failure pd_failure_of(const pd_result *r, const pd_audit_verdict *v);

/* ---- languages (server/languages.c; versions and Piston names: server/runtimes.c) ------------- */

typedef struct pd_language {
	const char *name;     /* as clients say it: python, cpp, nodejs... */
	const char *template; /* the template it runs on */
	const char *source;   /* where the code goes, e.g. /work/main.py */
	const char *compile;  /* shell command, or NULL */
	const char *run[8];   /* the program's argv (exec'd directly); the request's args follow */
	const char *version;  /* fallback for /api/v2/runtimes when the toolchain does not say */
	const char *requires; /* program the image must have */
	const char *probe;    /* argument that makes it print its version (--version...) */
	/* the libraries SandboxFusion's tests expect of it, as "what=path" (the path Debian's package
	 * installs; make deps installs them): reported by paddock pool --toolchains */
	const char *libs[6];
	const char *package; /* the Debian package that installs the program */
	/* make deps does not install it (a large toolchain no test needs): paddock pool --toolchains
	 * lists it missing with its package, and exits 0 without it */
	bool optional;
} pd_language;

const pd_language *pd_language_find(const char *name);
/* Every language's name, comma-separated, for a refusal that says what there is. */
void pd_language_names(char *buf, size_t len);
/* Whether the host image has l's program and libraries: false, with what is missing in missing
 * (comma-separated), when it lacks any. */
bool pd_language_check(const pd_language *l, char *missing, size_t len);
const pd_language *pd_languages(size_t *n);
/* Starts asking each installed toolchain its version (once, in the background, at most 10 s). */
void pd_languages_probe(void);
/* MAJOR.MINOR.PATCH of a language: the toolchain's own once the probe ran (waits for a running
 * probe), else the table's. */
const char *pd_language_version(const pd_language *l);

/* Piston's runtimes: its names and aliases for paddock's languages. */
typedef struct pd_runtime {
	const char *language;   /* Piston's name: python, c++, javascript */
	const char *aliases[8]; /* NULL-terminated */
	const char *runtime;    /* Piston's package when it differs from the language (gcc, node) */
	const char *paddock;    /* the pd_language it runs as */
} pd_runtime;
const pd_runtime *pd_piston_runtimes(size_t *n);
const pd_runtime *pd_piston_runtime_of(const char *paddock_language);
/* The runtime named (or aliased) language whose version satisfies range, as Piston matches. */
const pd_runtime *pd_piston_match(const char *language, const char *range);
/* node-semver's satisfies(version, range): 1 yes, 0 no, -1 invalid version or range. */
int pd_semver_satisfies(const char *version, const char *range);

/* ---- jobs ------------------------------------------------------------------------------------ */

typedef struct pd_step {
	char **argv;      /* NULL = no such step */
	char *stdin_data;
	size_t stdin_len;
	uint64_t wall_ms, cpu_ms;
	uint64_t output_kill_bytes; /* output (both streams) after which it is killed as OL; 0 = the
				     * template's */
	/* keep the whole output up to this many bytes (0: the record's head and tail only): a
	 * program that writes more is killed as OL; one that stays under it is judged by its exit
	 * status alone, as SandboxFusion does */
	uint64_t keep_whole;
	char *whole[2]; /* then: stdout and stderr, whole (NULL when not kept) */
	size_t whole_len[2];
} pd_step;

typedef struct pd_file {
	char *path;
	char *data;
	size_t len;
} pd_file;

enum { PD_PRIO_HIGH = 0, PD_PRIO_NORMAL, PD_PRIO_LOW, PD_PRIO_COUNT };

typedef struct pd_job {
	/* what to run */
	char template_name[64];
	bool mem_fast_off; /* no memory fast path (Piston: its clients read the OOM kill's SIGKILL) */
	char network[16]; /* /run_code's "network": a mode the daemon allows (netmodes.c); "" = the template's */
	char language[32];
	pd_file *files;
	size_t nfiles;
	pd_step compile, run;
	char **env; /* NULL = the template's */
	char *cwd;
	/* "image": an imported image's name or digest the request names (every API); "" = the
	 * template's. The edge checks it against serve --images; the attempt runs in the pool of
	 * (template, image) (pd_pools_image), whose name goes to pool and the digest to image_digest */
	char image[160];
	char pool[64];
	/* "isolation": the tier the request asks for (every API), one its template allows; "" = the
	 * template's own. The attempt runs in the pool of that tier (pd_pools_tier), named in tier_pool */
	char isolation[16];
	char tier_pool[64];
	char template_version[48]; /* the template's (pd_template.version), filled by the attempt */
	char image_digest[PD_DIGEST_LEN];
	/* the image the attempt's sandbox is made of, as the record's top-level "image" names it: the
	 * request's name ("" for a digest), the template's image, a directory, or "host" (its digest
	 * then the default image's id: pd_pools_template_image); filled by the attempt */
	char image_name[256];
	/* POST /v1/runs: the directory the run step's whole output is spilled to when its record
	 * cannot keep it all (run_output.c; NULL: none), and whether this attempt's was kept */
	const char *output_dir;
	bool output_kept;
	/* the attempt's sandbox's cost segments before its execs (pd_use_costs: its creation or the
	 * reset that began this use, the pool's preparation) and the wait to acquire it; the
	 * teardown is the reclaimer's, after the answer (pd_store_reclaimed) */
	pd_use_costs costs;
	uint64_t acquire_us;
	char **fetch; /* files to return after the run */
	size_t nfetch;
	uint64_t memory_bytes; /* 0 = the template's */
	pd_audit_policy *audit; /* "audit": true or a policy; NULL: not audited */
	bool risk_list;         /* its problem is on the risk list: audited in full, egress denied */
	bool audit_merged;      /* audit is the template's policy tightened by the request's */
	/* scheduling */
	int priority;
	uint64_t deadline_us; /* monotonic; 0 = none */
	char client[64];
	/* wall-limited work that mostly waits or spins, as SandboxFusion and Piston run it: their
	 * run_timeout is wall-clock and many such runs share the CPUs at once (the scheduler's wall
	 * class, --wall-workers), instead of queueing behind the CPU-sized --workers */
	bool wall_shared;
	uint64_t mem_reserve;  /* bytes of the host's memory budget it holds while it runs (its memory
				* limit), set at admission */
	uint64_t limit_us;     /* its time limits added up (compile + run), set at admission;
				* UINT64_MAX: none known */
	uint64_t run_limit_us; /* of which the run step's */
	uint64_t bound_us;     /* the longest it is expected to take: limit_us and an allowance */
	uint64_t est_us;       /* the scheduler's estimate of its service time, set at admission */
	uint64_t est_normal_us; /* ... of one that ends on its own, uncorrected (estimate.h) */
	uint64_t admitted_us, predicted_us; /* monotonic; the estimate of its wait */
	bool probe;            /* admitted as the circuit breaker's half-open probe */
	unsigned retry_after_s; /* refused: whole seconds the client should wait (pd_sched_submit) */
	/* cancellation (pd_job_cancel, from the thread that saw the client leave): the flag is read
	 * and written atomically; run_mu guards running, the sandbox the job holds now, so that a
	 * cancel kills it and never a sandbox already handed back to the pool */
	int cancelled;
	pthread_mutex_t run_mu;
	pd_sandbox *running;
	/* ids */
	char task_id[64], problem_id[128], problem_version[32];
	/* the problem as the per-problem controls know it (submission caps, the risk list, the review
	 * signals' statistics): empty for its problem_id; an inline problem without an id of its own
	 * is "inline:" and the first 16 hex digits of its content's digest, so that every such
	 * problem is not one problem called "inline" (pd_job_problem_key) */
	char problem_key[32];
	/* results */
	pd_failure failure;
	char error[512];
	bool compiled, ran;
	pd_result compile_r, run_r;
	pd_audit_verdict verdict; /* the process level (not_audited without an audit) */
	/* a job that does its own work (the judge): the audit events of its runs by kind, for
	 * paddock_audit_events_total (a compile and run job's are in compile_r and run_r) */
	uint64_t work_audit_kinds[PD_AK_N];
	/* and what it cost and gave, for the operator metrics (opsmetrics.c): the CPU of all its
	 * attempts' compiles, tests, checkers and interactors (a cache hit ran nothing), its
	 * candidate runs' peak memory x wall seconds, and whether its last record says usable */
	uint64_t work_cpu_ms;
	double work_mem_byte_s;
	bool work_usable;
	pd_file *fetched; /* data NULL: could not be read (error in path's place) */
	size_t nfetched;
	unsigned attempts;
	uint64_t queued_us, started_us, finished_us;
	char sandbox_id[40];
	char use_id[56]; /* the sandbox's use this attempt had (pd_sandbox_use_id) */
	/* cluster mode (server/cluster/): the request id (the client's X-Request-Id or body
	 * request_id, or one made at the edge), of which the store keeps one record; the node that
	 * ran it; and a claim the store calls once the record's rows are committed (staged, see
	 * pd_store_staged): -1 with e->code EEXIST means another node already recorded this request
	 * (the rows are taken out, the store answers EEXIST), any other -1 takes them out too */
	char request_id[128];
	char node[64];
	int (*claim)(const struct pd_job *j, void *arg, pd_err *e);
	void *claim_arg;
	char claim_token[96]; /* the claim's mark of this attempt (kept with its staged rows) */
	/* 0: recorded in the store before the answer; else why it could not be (ENOSPC: disk full),
	 * and the caller must not be told the job succeeded: its record would be lost */
	int store_errno;
	char store_error[160];
	/* a job that does its own work (the judge, server/judge/): a scheduler worker calls execute
	 * instead of running the compile and run steps; work is its state (work_free releases it
	 * with the job), record its observation record, stored in place of pd_job_to_json's */
	void (*execute)(struct pd_job *j, pd_pools *pools);
	void *work;
	void (*work_free)(void *work);
	json_t *record;
	/* the records of this job's earlier attempts, oldest first (NULL: none): a retry is a new
	 * attempt (docs/api.md), and the store keeps a row for each, never overwriting the first's
	 * sandbox and error with the last's */
	json_t *prior;
	/* completion: called once, from a worker thread */
	void (*done)(struct pd_job *j, void *arg);
	void *done_arg;
	struct pd_job *next; /* scheduler queue link */
} pd_job;

pd_job *pd_job_new(void);
void pd_job_free(pd_job *j);
/* The job's audit policy made final (server/job.c): the template's tightened by the request's,
 * or the template's alone when it is mandatory. -1 with e naming the field (e.g. audit.egress)
 * when the request would widen the template's: the surfaces refuse such a request (400). */
int pd_job_audit_policy(pd_job *j, const pd_template *t, pd_err *e);
/* The three run APIs, each a parser and an encoder in server/api/ (native.c, sandboxfusion.c,
 * piston.c). */
/* Parses a native run request; on error returns NULL and e names the field. */
pd_job *pd_job_from_native(json_t *req, pd_err *e);
/* Parses a SandboxFusion /run_code request. */
pd_job *pd_job_from_run_code(json_t *req, pd_err *e);
/* Parses a Piston /api/v2/execute request. */
pd_job *pd_job_from_piston(json_t *req, pd_err *e);
/* The job's observation record (native API): ids, timings, failure class, verdict, the result
 * records of its compile and run (pd_result_json), fetched files. */
json_t *pd_job_to_json(const pd_job *j);

/* ---- a run's full output (run_output.c) ------------------------------------------------------ */

#define PD_RUN_OUTPUT_MAX (1ull << 30) /* the output directory's bytes, at most */
#define PD_RUN_OUTPUT_TTL_S 3600       /* a kept output's life, at most */
/* The output directory beside the store, db_path + ".output" (made, 0700, and trimmed) into dir. */
int pd_run_output_init(const char *db_path, char *dir, size_t len, pd_err *e);
/* Two unnamed files in dir for a run's stdout and stderr; -1 (fds -1) when they cannot be made. */
int pd_run_output_open(const char *dir, int fds[2]);
void pd_run_output_close(int fds[2]);
/* Names the two files as the task's attempt's output (fds closed), then trims the directory. */
int pd_run_output_keep(const char *dir, const char *task_id, unsigned attempt, int fds[2]);
/* Drops what is older than PD_RUN_OUTPUT_TTL_S, then the oldest past PD_RUN_OUTPUT_MAX. */
void pd_run_output_trim(const char *dir);
/* The file of a task's kept stream (1 stdout, 2 stderr) at attempt (0: the last kept), and which
 * attempt it is; -1 (ENOENT, saying why) when none is kept. */
int pd_run_output_path(const char *dir, const char *task_id, unsigned attempt, int stream, char *path, size_t len,
		       unsigned *found, pd_err *e);
/* The record's top-level "image": {"name", "digest"} of what the attempt ran on (either null when
 * it never reached a template and the request named no image). */
json_t *pd_job_image_json(const pd_job *j);
/* What every attempt's record holds alike, a run's (pd_job_to_json) and a judged one's
 * (pd_judged_to_json), set on o: the task and its problem, the language, the template and its
 * version (null when unknown), the isolation tier, and the image as {name, digest} (an empty one
 * null: name for an image named by its digest, digest for a root directory). */
typedef struct pd_record_head {
	const char *task_id, *problem_id, *problem_version, *language, *template_name, *template_version,
		*isolation, *image_name, *image_digest;
} pd_record_head;
void pd_record_head_json(json_t *o, const pd_record_head *h);
/* The job's verdict levels ("pass", "fail", "not_judged") and whether it is usable for training
 * (all three passed), as its record states them (server/verdict.c). */
typedef struct pd_job_verdict_t {
	const char *output, *process, *resources;
	bool usable;
} pd_job_verdict_t;
void pd_job_verdict(const pd_job *j, pd_job_verdict_t *v);
/* The resources level of a verdict: "fail" for exec_timeout, oom and output_limit, else "pass"
 * when the program ran, "not_judged" when it did not (pd_job_verdict's, and paddock exec's). */
const char *pd_resources_level(pd_failure f, bool ran);
/* SandboxFusion response. */
json_t *pd_job_to_run_code(const pd_job *j);
/* Piston response. */
json_t *pd_job_to_piston(const pd_job *j);
/* A refusal of a client's request: e gets code EINVAL and the message alone (the field and the
 * reason are what a client needs, not strerror's "Invalid argument": no cause) and kind
 * PD_EK_REFUSED, cut at a character boundary.
 * Returns -1. The API parsers (server/api/) and the session parsers (session_req.c) refuse with it;
 * the server answers 400 with the message as it is (pd_err_text: no cause to add). */
int pd_refuse(pd_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs a job's attempts (retrying infrastructure failures) in sandboxes from the pools. A job
 * cancelled before or while it runs ends as cancelled (never retried). */
void pd_job_execute(pd_pools *pools, pd_job *j, unsigned max_retries);
/* Marks j cancelled and, if it runs now, kills its sandbox's processes (the pool then destroys
 * the sandbox, with its residue check, as after any killed run). Any thread; j must be alive. */
void pd_job_cancel(pd_job *j);
bool pd_job_is_cancelled(const pd_job *j);
/* The job's status as paddock_jobs_total, the store's status column and the log line name it: its
 * last stage's (OK, RE, ...), XX when no stage ran, or "judge" for a judge job (its own execute):
 * it runs many programs, and its outcome is its verdict, not one program's status. */
const char *pd_job_status_name(const pd_job *j);
/* The job's problem for the per-problem controls: problem_key, else problem_id ("" for none). */
const char *pd_job_problem_key(const pd_job *j);
/* For a job with its own execute (a judge job): the sandbox it runs in now (NULL: none), so that
 * a cancel kills it. False (and nothing held) when the job was cancelled already. */
bool pd_job_hold_sandbox(pd_job *j, pd_sandbox *s);

/* ---- store ----------------------------------------------------------------------------------- */

typedef struct pd_store pd_store;
/* max_bytes: what the records may use before the oldest are deleted (0: no cap). */
pd_store *pd_store_open(const char *path, uint64_t max_bytes, pd_err *e);
/* The review queue's "too good" signals (server/review.c; docs/audit.md, "The review queue"):
 * a percent of 0 turns its signal off. */
typedef struct pd_review_cfg {
	unsigned min_samples;   /* judged attempts (rare_pass) or earlier passes (fast_pass, short_pass)
				 * of the problem stored before those signals apply */
	unsigned rare_percent;  /* rare_pass: the problem's pass rate is at most this */
	unsigned fast_percent;  /* fast_pass: tests' wall time under this % of the median pass's */
	unsigned short_percent; /* short_pass: code bytes under this % of the median pass's */
	unsigned jump_percent;  /* score_jump: this many points (of 100) above its group's best */
	unsigned group_min;     /* earlier judged attempts in the group before score_jump applies */
} pd_review_cfg;
/* 20 samples, 5% rare, 10% fast, 10% short, a 50-point jump over at least 3 in the group. */
void pd_review_cfg_default(pd_review_cfg *c);
void pd_store_set_review(pd_store *s, const pd_review_cfg *c);
void pd_store_close(pd_store *s);
/* Records a finished job: one row per attempt, its earlier attempts (j->prior) and the last. A
 * job with a request_id is recorded once: a second record of the same request is refused with
 * EEXIST (a unique key on the last attempt's row); the job's claim, if any, is made after the rows
 * commit (staged) and a refused claim takes them out again, all under the store's lock. */
int pd_store_put(pd_store *s, const pd_job *j, const char *node, pd_err *e);
/* Settles the requests whose rows were committed but whose claim was not known to be made (the
 * node was killed between the two): settle answers 1 (the claim with that token is in the
 * broker: the rows stay), 0 (it is not, or another's is: the rows go) or -1 (the broker did not
 * say: left for the next start). Run before the node takes work. */
int pd_store_staged(pd_store *s, int (*settle)(void *arg, const char *request_id, const char *token), void *arg,
		    unsigned *kept, unsigned *dropped, pd_err *e);
/* A request whose claim was made stays staged until the next record's commit clears it (one
 * commit a record, not two); this clears the stage of those now (a cluster node each second and
 * at the close, so that a node killed while idle leaves none to settle). 0, or -1 (they stay
 * staged: a kill then is settled as kept, the claims being ours). */
int pd_store_unstage(pd_store *s);
/* The store as a cluster node's outbox (store_outbox.c): the watermark (the last row published
 * to the cluster's record stream; 0 at first), its move, and the rows after it that are final
 * (their request's claim made), in row order, at most limit: an array of {"row", "task_id",
 * "group_id", "kind", "finished_at", "record"}. */
int64_t pd_store_outbox_mark(pd_store *s, pd_err *e);
int pd_store_outbox_set(pd_store *s, int64_t row, pd_err *e);
/* A final row of the outbox: its message (text, len: the row's JSON as the record stream takes
 * it, the stored record in it as stored) and what names its subject. */
typedef struct pd_outbox_row {
	int64_t row, finished_at;
	char task_id[128], group_id[128];
	char *text;
	size_t len;
} pd_outbox_row;
/* Up to limit final rows after row `after`, in order (*n of them; node: the "node" of a row whose
 * column has none); freed with pd_store_outbox_free. */
int pd_store_outbox(pd_store *s, int64_t after, unsigned limit, const char *node, pd_outbox_row **rows, unsigned *n,
		    pd_err *e);
void pd_store_outbox_free(pd_outbox_row *rows, unsigned n);
/* Completes the record of a sandbox's use (its use_id) whose residue is "pending" with what the
 * reclaimer found ("clean" or what was left); one that comes before its record is kept and
 * applied when the record is stored. The rows changed (0: none yet), -1 on a store error. */
int pd_store_residue(pd_store *s, const char *use_id, const char *residue);
/* The same, and the use's teardown cost (the reset or teardown that ended it, microseconds; < 0:
 * unknown) into the record's costs.teardown_ms. */
int pd_store_reclaimed(pd_store *s, const char *use_id, const char *residue, int64_t teardown_us);
/* The daemon's reclaimer's report: the same, written with the next record's transaction while a
 * job whose record is to come runs (pd_store_busy), else at once (store_residue.c). */
void pd_store_reclaimed_later(pd_store *s, const char *use_id, const char *residue, int64_t teardown_us);
/* A job begins (begin) or has ended with its record stored: the last to end writes the reports
 * that waited for a record's transaction. */
void pd_store_busy(pd_store *s, bool begin);
/* The stored attempts of task_id, oldest first: an array of records, each with "attempt",
 * "last" (the attempt that answered) and "stored_at" (unix ms). An empty array: none. */
json_t *pd_store_get(pd_store *s, const char *task_id, pd_err *e);
/* A page of stored attempts, in the order they were stored. */
typedef struct pd_store_query {
	const char *group_id;   /* NULL or "": any */
	const char *kind;       /* "judge" (judged records), "run", or NULL: any */
	uint64_t since_ms;      /* finished at or after (unix ms); 0: any */
	int64_t after;          /* the cursor: rows after this one (0: from the first) */
	unsigned limit;         /* rows at most (0: 100; at most 1000) */
	bool last_only;         /* only each task's last attempt (what a trainer learns from) */
} pd_store_query;
/* Fills *records (an array, as pd_store_get's) and *next (the cursor of the next page, 0 when this
 * one is the last). */
int pd_store_list(pd_store *s, const pd_store_query *q, json_t **records, int64_t *next, pd_err *e);
/* Rows stored so far. */
long pd_store_count(pd_store *s);
/* True while the store cannot take a row for lack of space: set when a write fails with a full
 * disk, cleared once the disk has room again (checked with statvfs, so a freed disk is noticed
 * without a write). msg (may be NULL) says where and how much is free. */
bool pd_store_full(pd_store *s, char *msg, size_t len);
/* Writes that failed: for lack of space, and for any other reason. */
void pd_store_failures(pd_store *s, uint64_t *full, uint64_t *other);
/* Records deleted to keep the store under its cap. */
uint64_t pd_store_pruned(pd_store *s);
/* Bytes the records use now, and the cap (0: none). */
void pd_store_size(pd_store *s, uint64_t *used, uint64_t *cap);

/* The review queue (review.c): attempts queued for a human when stored (policy_violation, or a
 * rare_pass). state: "pending", "confirmed", "dismissed" or "all"; an array of items. */
json_t *pd_store_review_list(pd_store *s, const char *state, pd_err *e);
/* The risk list (problems with confirmed hacks: their submissions are audited in full with
 * egress denied; docs/audit.md): whether problem_id is on it; its entries [{problem_id, since,
 * confirmed, last_review}]; an operator taking one off (ENOENT: not on it). */
bool pd_store_risky(pd_store *s, const char *problem_id);
json_t *pd_store_risk_list(pd_store *s, pd_err *e);
int pd_store_risk_remove(pd_store *s, const char *problem_id, pd_err *e);
/* decision "confirm" or "dismiss" (note may be NULL); *item is the decided item. -1 with e->code
 * ENOENT (no such item) or EALREADY (decided already). */
int pd_store_review_decide(pd_store *s, int64_t id, const char *decision, const char *note, json_t **item, pd_err *e);
void pd_store_review_stats(pd_store *s, uint64_t *pending, uint64_t *confirmed, uint64_t *dismissed);

/* ---- metrics --------------------------------------------------------------------------------- */

typedef struct pd_metrics pd_metrics;
pd_metrics *pd_metrics_new(void);
void pd_metrics_free(pd_metrics *m);
void pd_metrics_job(pd_metrics *m, const pd_job *j);
void pd_metrics_http(pd_metrics *m, int status);
/* Prometheus text exposition; extra is appended (pools, queues, breaker). malloc'd. */
char *pd_metrics_render(pd_metrics *m, const char *extra);
/* The operator metrics (server/opsmetrics.c): what jobs cost per template and by usable, sandbox
 * lifetimes and pool utilisation per template (from st, n pools). malloc'd Prometheus text. */
typedef struct pd_ops pd_ops;
pd_ops *pd_ops_new(void);
void pd_ops_free(pd_ops *o);
void pd_ops_job(pd_ops *o, const pd_job *j);
char *pd_ops_render(pd_ops *o, const pd_pool_stats *st, size_t n);
/* The problems of a problems directory (serve --problems) whose problem.json names an image:
 * [{"problem": "ID@VERSION", "image": REF}] (a new reference), for `paddock image ls` and
 * `inspect`; NULL with e when the directory does not load. */
json_t *pd_problems_images(const char *dir, pd_err *e);

/* Per-problem submission caps (server/caps.c): at most max (0: no cap) judged submissions of a
 * problem per window_s (0: 60) seconds. take counts n more, or refuses them all (false) with the
 * seconds until the problem's window ends; give_back returns taken ones a request did not use. */
typedef struct pd_caps pd_caps;
pd_caps *pd_caps_new(unsigned max, unsigned window_s);
void pd_caps_free(pd_caps *c);
bool pd_caps_take(pd_caps *c, const char *problem, unsigned n, unsigned *retry_after_s);
void pd_caps_give_back(pd_caps *c, const char *problem, unsigned n);
unsigned pd_caps_max(const pd_caps *c);
unsigned pd_caps_window_s(const pd_caps *c);
uint64_t pd_caps_refused(pd_caps *c);
/* Cheat-detection counters per (template, problem), label-bounded (server/detections.c). */
typedef struct pd_detect pd_detect;
pd_detect *pd_detect_new(void);
void pd_detect_free(pd_detect *d);
void pd_detect_job(pd_detect *d, const pd_job *j);
void pd_detect_render(pd_detect *d, FILE *f);
/* The metrics' operator part (fed by pd_metrics_job). */
pd_ops *pd_metrics_ops(pd_metrics *m);

/* ---- session requests (server/session_req.c) ------------------------------------------------- */
/* The client's bytes of the session API, parsed apart from the HTTP plumbing (server/http/sessions.c
 * and session_ops.c call these, and so does the fuzzer). A refusal fills e (code EINVAL, a message
 * naming the field, without strerror's suffix): the server answers 400 with it. */

/* /v1/sessions/<id>[/<op>]: the session id and the operation ("" for none). Returns 0, or -1 when
 * url is not of that form. */
int pd_session_url(const char *url, char *id, size_t id_size, char *op, size_t op_size);

/* The query parameters a session operation reads (?path=, ?dir=, ?request_id=, ?stream=, ?list=). */
typedef struct pd_session_query {
	char path[1024];       /* files, stat: at most 1023 bytes, no NUL */
	char dir[1024];        /* upload, download: likewise; "" = absent */
	char request_id[128];  /* output: at most 127 bytes, no NUL */
	bool stderr_stream;    /* output: stream=stderr (else stdout, the default) */
	bool list;             /* files: "1" or "true" */
	char step_id[128];     /* the step's request id: the X-Request-Id header, at most 127 bytes */
	char error[200];       /* the first parameter refused, "" when all are good */
} pd_session_query;

/* Takes one parameter as the HTTP layer decoded it (value: len bytes, NULL = given without a
 * value, which counts as absent). Keys other than the five are ignored. A value that does not fit,
 * holds a NUL byte or is not one of the allowed words is not taken: q->error says why (the first);
 * the session operation answers 400 with it. */
void pd_session_query_set(pd_session_query *q, const char *key, const char *value, size_t len);

/* POST /v1/sessions: {"template", "image", "ttl", "max_lifetime", "metadata", "end_on_limit",
 * "group_id", "sample_id", "resume_from", "noise": {"seed", "latency_ms", "fail_rate",
 * "truncate_rate"}, "network", "egress"};
 * an empty body is {}. */
typedef struct pd_session_create_req {
	char template_name[64]; /* default "bash" */
	char group_id[128], sample_id[128], resume_from[64]; /* "" = none; o's pointers point here */
	char from_snapshot[64]; /* "" = none */
	char image[160];        /* "image": an imported image's name or digest; "" = the template's */
	char isolation[16];     /* "isolation": a tier the template allows; "" = the template's */
	bool template_given;    /* "template" was in the body (a fork takes its snapshot's) */
	unsigned count;         /* sessions to open (1 to 64); 0 = not given (one, answered alone) */
	pd_session_opts o;      /* TTLs in ms (0 = the template's); o.metadata is compact JSON, owned */
	char network[16];       /* "network": the first stage's (pd_session_set_network); "" = the template's */
	struct json_t *egress;  /* "egress" with it (owned; NULL = none given) */
	struct json_t *rules;   /* "rules" (owned; NULL = none): checked where the session opens */
} pd_session_create_req;

/* POST /v1/sessions/<id>/network: {"network": "none"|"loopback"|"allowlist", "egress": {"allow":
 * [...]}}: mode (at most 15 bytes) and *egress (a new reference, or NULL). Also the create's
 * "network" and "egress" (pd_session_create_parse). */
int pd_session_network_parse(const char *body, size_t len, char *mode, size_t ml, struct json_t **egress, pd_err *e);
int pd_session_create_parse(const char *body, size_t len, pd_session_create_req *q, pd_err *e);
void pd_session_create_req_free(pd_session_create_req *q);

/* POST /v1/sessions/<id>/exec: {"cmd" | "shell", "stdin", "cwd", "timeout", "idle_timeout",
 * "request_id", "agent", "audit", "stream"}. */
typedef struct pd_session_exec_req {
	pd_exec_opts x;         /* argv (owned), stdin, cwd, wall_ms and idle_ms; strings point into body */
	const char *request_id; /* NULL = none */
	const char *agent;      /* who runs it (issue 40: several agents in one session); NULL = the default */
	bool stream;            /* the output is sent while the step runs (JSON lines, chunked) */
	json_t *body;           /* owned */
	pd_audit_policy *audit; /* owned; x.audit points into it; NULL = not audited */
	pd_audit_verdict verdict; /* the exec's process level, once run (evaluated) */
	bool evaluated;
} pd_session_exec_req;
int pd_session_exec_parse(const char *body, size_t len, pd_session_exec_req *q, pd_err *e);
void pd_session_exec_req_free(pd_session_exec_req *q);


/* ---- scheduler ------------------------------------------------------------------------------- */

typedef struct pd_sched pd_sched;

typedef struct pd_sched_opts {
	unsigned workers;        /* concurrent CPU-limited jobs; default 2 x CPUs */
	unsigned wall_workers;   /* concurrent wall-shared jobs (pd_job.wall_shared); default
				  * 128, or 16 x CPUs past 8 CPUs (at most 1024) */
	uint64_t memory_budget;  /* the sum of running jobs' memory limits may not pass this; 0 = the
				  * share below */
	double memory_budget_pct; /* ... of MemTotal, in percent; 0 = 80 */
	bool one_class;          /* every job on the --workers workers, wall-shared ones too (paddock
				  * run: its -j is how many run at once, whatever their API) */
	unsigned cpus;           /* the CPUs the workers share; 0 = the online CPUs */
	size_t queue_max;        /* per priority; default 4096 */
	unsigned retries;        /* infrastructure retries; 0 means none (callers set it: serve's default is 2) */
	double breaker_fail_ratio; /* share of infrastructure failures (startup_failure,
				    * internal_error) among recent jobs that opens it; 0 = 0.5 */
	uint64_t breaker_min_free; /* MemAvailable below which new work is refused; 0 = 256 MiB */
	double breaker_min_free_pct; /* or this share of MemTotal, in percent (wins when set) */
	uint64_t breaker_cooldown_ms; /* open this long before a half-open probe; 0 = 5 s */
	unsigned breaker_min_jobs; /* a template's finished jobs before its failure ratio counts; 0 = 8 */
} pd_sched_opts;

typedef enum {
	PD_ADMIT_OK = 0,
	PD_ADMIT_FULL,
	PD_ADMIT_BREAKER,
	PD_ADMIT_STOPPING,
	PD_ADMIT_DISK_FULL, /* the store cannot record a result: running the job would lose it */
	PD_ADMIT_DEADLINE,  /* the estimate says it cannot finish before its deadline */
	PD_ADMIT_MEMORY,    /* the host's free memory is under breaker_min_free */
	PD_ADMIT_COUNT
} pd_admit;

pd_sched *pd_sched_new(pd_pools *pools, pd_store *store, pd_metrics *m, const pd_sched_opts *o, pd_err *e);
/* Why a job was not admitted, in the one text every way in answers with (HTTP runs, the judge and
 * its batch, paddock run): "queue full: retry later", ... */
const char *pd_admit_text(pd_admit a);
/* Queues a job; j->done is called when it finished. Refused jobs are not queued (caller frees);
 * j->retry_after_s then says how long the client should wait.
 *
 * Two classes of jobs, each with its own workers and queues: CPU-limited jobs (the native API, the
 * judge) run --workers at once; wall-shared ones (pd_job.wall_shared: SandboxFusion, Piston) run
 * up to --wall-workers at once, sharing the CPUs as those services do. Both hold their memory
 * limit against the host's memory budget while they run; a job whose limit does not fit waits.
 *
 * Admission by deadline: a job that finds a free worker of its class and nothing queued ahead is
 * always admitted. Otherwise it is refused at once when it could not start in time: its start is
 * simulated over the workers of its class (when each running job ends, then each queued job ahead
 * of it), every service time the learnt one of its template bounded by that job's own limits
 * (server/estimate.h); the wait is multiplied by the recent errors' correction; refused when that
 * wait plus its own service passes its deadline. A queued job whose deadline passes anyway ends as
 * queue_timeout. */
pd_admit pd_sched_submit(pd_sched *s, pd_job *j);
/* The client of j left: a queued j is taken out and answered as cancelled (by the reaper), a
 * running one is killed and ends as cancelled. j must not have finished yet (the caller knows:
 * j->done has not run). */
void pd_sched_cancel(pd_sched *s, pd_job *j);
/* Stops taking jobs, runs everything queued, joins the workers. */
void pd_sched_drain(pd_sched *s);
void pd_sched_free(pd_sched *s);
/* Prometheus lines for the queues and the breaker. malloc'd. */
char *pd_sched_metrics(pd_sched *s);
bool pd_sched_breaker_open(pd_sched *s);

/* ---- cluster mode (server/cluster/; docs/cluster.md) ----------------------------------------- */
/* A node of a cluster on NATS JetStream: one-shot work goes through a work-queue stream, results
 * through a key-value bucket, liveness through another. Absent unless serve --cluster is given. */

typedef struct pd_cluster pd_cluster;

typedef struct pd_cluster_opts {
	const char *urls;        /* nats://HOST:PORT[,...] */
	const char *node_id;     /* NULL = <hostname>-<port> */
	const char *address;     /* the HTTP address peers forward session requests to */
	unsigned ack_wait_s;     /* a pulled task's ack timeout (in-progress acks renew it); 0 = 5 */
	unsigned max_deliver;    /* deliveries before a task ends as an infrastructure failure; 0 = 5 */
	unsigned window_s;       /* duplicate window: request ids remembered, results kept; 0 = 600 */
	unsigned slots;          /* tasks run at once (pulled only as they free up); 0 = 4 */
	unsigned records_max_age_s; /* the shared record stream's retention; 0 = 30 days */
	uint64_t records_max_bytes; /* its size; 0 = 10 GiB, UINT64_MAX = no cap */
	const char *token;       /* the bearer token peers are called with (results by reference) */
	/* where large values go (server/cluster/objects.c): NULL or "nats" = the broker's stream,
	 * "s3://BUCKET[/PREFIX]" = an S3-compatible store at s3_endpoint (http://HOST[:PORT]), in
	 * s3_region (NULL = $AWS_REGION or us-east-1), with s3_credentials (a file; NULL = the
	 * environment's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); s3_ca: an https endpoint's
	 * CAs (NULL = the system's) */
	const char *objects, *s3_endpoint, *s3_region, *s3_credentials, *s3_ca;
	/* this node's rules for what it takes off the broker (server/intake.h): a task is checked
	 * again here, as a request from this node's own clients is */
	const struct pd_intake *intake;
} pd_cluster_opts;

/* o's object store settings as the start takes them, nothing reached (serve --check): the
 * --cluster-objects form, an s3:// one's endpoint and credentials (the file's mode too). */
int pd_cluster_objects_check(const pd_cluster_opts *o, pd_err *e);
/* Connects, makes the streams and buckets if missing, starts pulling, heartbeating. */
pd_cluster *pd_cluster_start(const pd_cluster_opts *o, pd_sched *sched, pd_pools *pools, pd_ctx *ctx,
			     pd_store *store, pd_err *e);
/* Stops pulling new work and heartbeating (running tasks still finish, are acked and answered). */
void pd_cluster_quiesce(pd_cluster *c);
/* Answers what still waits (503), disconnects. After the scheduler drained. Whatever comes in after
 * it is refused ("shutting down"); the memory stays until pd_cluster_free. */
void pd_cluster_stop(pd_cluster *c);
/* pd_cluster_stop if it did not run, then frees: once no thread can reach c (libmicrohttpd stopped). */
void pd_cluster_free(pd_cluster *c);
const char *pd_cluster_node_id(const pd_cluster *c);
/* A node id the cluster takes: 1 to 63 of A-Z a-z 0-9 - _ . with no dot first, last or next to
 * another (a host name with its domain, systemd's %H). The id is the last part of the node's NATS
 * subject (paddock.done.<id>), where a dot separates tokens: a token may not be empty, and the
 * subject is only ever matched whole (never by a wildcard over the id), so dots are safe there. */
bool pd_cluster_id_ok(const char *id);
#define PD_CLUSTER_ID_RULE "1 to 63 of A-Z a-z 0-9 - _ . (no dot first, last or twice in a row)"

/* An answer to a request submitted through the cluster: an HTTP status and a JSON body. Called
 * once, from a cluster thread. */
typedef void (*pd_cluster_answer)(void *arg, int status, const char *body, size_t len, unsigned retry_after);
/* Submits a run request (kind "native", "run_code", "piston" or "judge"; template_name the
 * template it runs in: only nodes that have it pull it; body as the client sent it, which
 * the edge has already parsed once to refuse bad requests) under a request id: the first result
 * of that id within the window, whichever node ran it. */
void pd_cluster_submit(pd_cluster *c, const char *kind, const char *template_name, const char *body, size_t len,
		       const char *request_id, pd_cluster_answer cb, void *arg);
/* {"nodes": [{"id","address","pools","load","last_heartbeat"}...]} */
json_t *pd_cluster_nodes(pd_cluster *c);
/* Where a session lives: 0 here, 1 on the node at addr, -1 on a node that is gone (why says). */
int pd_cluster_session_node(pd_cluster *c, const char *session_id, char *addr, size_t addr_len, char *why,
			    size_t why_len);
/* A result this node keeps because the broker cannot carry it (server/cluster/refs.c): the whole
 * answer value of the attempt whose claim token is token, for GET /v1/cluster/results/{token}.
 * 0 and *text (malloc'd); -1 with e->code ENOENT when there is none (expired, or never). */
int pd_cluster_result_file(pd_cluster *c, const char *token, char **text, size_t *len, pd_err *e);
/* The cluster's shared record store (server/cluster/records.c), as pd_store_get and
 * pd_store_list answer the node's own: every attempt of task_id, and a page of records ("row"
 * and the cursor being the shared stream's sequence), from every node's records. */
json_t *pd_cluster_records_get(pd_cluster *c, const char *task_id, pd_err *e);
int pd_cluster_records_list(pd_cluster *c, const pd_store_query *q, json_t **records, int64_t *next, pd_err *e);
/* GET /v1/runs/{id}/output on a node of a cluster: the task's last attempt's output,
 * {"task_id", "request_id", "node", "stdout", "stderr", "whole"}: whole (with stdout_bytes and
 * stderr_bytes) when the run's output past its record's head and tail was kept in the object
 * stream, else the record's own. NULL with e->code ENOENT when no node recorded the task. */
json_t *pd_cluster_output(pd_cluster *c, const char *task_id, pd_err *e);
/* A session's records in the broker (server/cluster/sessobj.c), for the other nodes once its node
 * is gone: called at the end of each of the session's operations on this node, before its answer
 * (s: the session, still held; NULL when the id is all there is): its exec's cut outputs and its
 * trajectory's new lines published. */
void pd_cluster_session_step(pd_cluster *c, const char *session_id, pd_session *s);
/* A download with a request id, teed off to the broker: *in_fd is what the archive is written to
 * (out_fd gets every byte); NULL (and *in_fd untouched) when it is not kept. Then
 * pd_cluster_download_kept with whether the archive was made whole: the copy kept, before the
 * caller ends the client's stream; -1 when the client's end broke. */
typedef struct pd_cluster_tee pd_cluster_tee;
pd_cluster_tee *pd_cluster_download_tee(pd_cluster *c, const char *session_id, const char *request_id, int out_fd,
					int *in_fd);
int pd_cluster_download_kept(pd_cluster_tee *t, bool ok);
/* Prometheus lines of this node's cluster figures. malloc'd. */
char *pd_cluster_metrics(pd_cluster *c);

/* A small blocking HTTP/1.0 client (server/cluster/httpc.c), for forwarding to a peer node and
 * for paddock run --cluster: one request on its own connection. headers: "Name: value\r\n"...
 * or NULL. On success *status, *resp (malloc'd, NUL-terminated), *resp_len and *ctype (malloc'd,
 * may be NULL) are set. */
int pd_http_call(const char *hostport, const char *method, const char *target, const char *headers,
		 const char *body, size_t len, int timeout_ms, int *status, char **ctype, char **resp,
		 size_t *resp_len, pd_err *e);

/* ---- the HTTP server (server/http/; http.h there lists its files) --------------------------- */

typedef struct pd_server pd_server;

typedef struct pd_server_opts {
	const char *listen;         /* "127.0.0.1:8080", "0.0.0.0:8080" or "unix:/path" */
	const char *token;          /* bearer token; required unless listening on loopback or unix */
	const char *templates_file; /* NULL = the built-in templates */
	const char *problems_dir;   /* the judge's problems (docs/judge.md); NULL = inline problems only */
	const char *db_path;        /* NULL = <state>/paddock.db */
	uint64_t store_max;         /* bytes the store's records may use; 0 = 1 GiB, UINT64_MAX = no cap */
	size_t max_body;            /* bytes; 0 = 16 MiB */
	unsigned max_connections;   /* 0 = 4096 */
	unsigned max_conns_per_ip;  /* open connections from one client address; 0 = 256, UINT_MAX = no limit */
	const char *per_ip_exempt;  /* IPv4 CIDRs the per-address limit spares, comma-separated;
				     * NULL = "127.0.0.0/8" (the host's own clients), "" = none */
	unsigned warm;              /* READY sandboxes per template at start; 0 = templates' min */
	uint64_t run_code_output_max; /* /run_code: output kept whole per stream, and the program
				       * killed (output limit) past it in all; 0 = 16 MiB */
	unsigned deadline_margin_s; /* added to a request's time limits for its default deadline;
				     * 0 = 10 s (SandboxFusion clients' read timeout has 10 s over) */
	const char *run_code_networks; /* the network modes a /run_code request may ask for
					* ("none,host"); NULL or "" = none: the template's own */
	/* the imported images a request's "image" may name: comma-separated names, glob patterns
	 * of names ("swe-*"), digests or hex prefixes of at least 12; "*" = any in the store.
	 * NULL = none (a request naming one is refused with 403) */
	const char *images;
	unsigned image_pools;       /* image pools live at once; 0 = 64 */
	unsigned image_ready;       /* READY sandboxes of all image pools together; 0 = 4 per CPU */
	pd_sched_opts sched;
	const char *cluster;        /* nats://HOST:PORT[,...]: join a cluster (NULL = single node) */
	const char *node_id;        /* the node's id in the cluster; NULL = <hostname>-<port> */
	unsigned cluster_ack_wait;  /* seconds; 0 = 5 */
	/* seconds the trajectories of ended sessions are kept; 0 = 30 days, UINT_MAX = forever */
	unsigned trajectory_retention;
	unsigned cluster_max_deliver; /* 0 = 5 */
	unsigned cluster_records_max_age;   /* seconds; 0 = 30 days */
	uint64_t cluster_records_max_bytes; /* 0 = 10 GiB, UINT64_MAX = no cap */
	/* pd_cluster_opts' objects, s3_endpoint, s3_region, s3_credentials, s3_ca */
	const char *cluster_objects, *cluster_s3_endpoint, *cluster_s3_region, *cluster_s3_credentials,
		*cluster_s3_ca;
	/* each template's circuit breaker (sched.breaker_*): the percent of infrastructure failures
	 * among its recent jobs that opens it (0 = 50), the jobs it needs first (0 = 8), seconds open
	 * before a probe (0 = 5); and the host's free memory under which all new work is refused:
	 * a size ("256M") or a percent of the machine's ("5%"); NULL = 256M */
	unsigned breaker_fail_percent, breaker_min_jobs, breaker_cooldown_s;
	const char *memory_watermark;
	const char *memory_budget; /* --memory-budget: a size or a percent of MemTotal */
	/* the review queue's signals (pd_review_cfg): 0 = the default; the percents take UINT_MAX
	 * for off */
	unsigned review_min_samples, review_rare_percent, review_fast_percent, review_short_percent,
		review_jump_percent, review_group_min;
	/* judged submissions of one problem per window (pd_caps): 0 = no cap; seconds, 0 = 60 */
	unsigned problem_submit_max, problem_submit_window;
} pd_server_opts;

pd_server *pd_server_start(const pd_server_opts *o, pd_err *e);
/* The settings o checked as pd_server_start checks them, starting nothing (no socket is bound, no
 * sandbox made): the listen address and its token, the store's directory, --memory-watermark,
 * --node-id with --cluster, --per-ip-exempt, the templates and --run-code-networks, the problems
 * (read and parsed: their checkers are built only at the start). -1 with e naming the flag and
 * what is wrong: the operator's to fix (serve and serve --check exit 64 with it). */
int pd_server_check(const pd_server_opts *o, pd_err *e);
/* The address actually bound (port 0 picks one). */
const char *pd_server_address(const pd_server *s);
/* Graceful: stop accepting, finish running and queued work, answer it, close. */
void pd_server_stop(pd_server *s);


#endif
