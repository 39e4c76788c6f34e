/* The judge (issue 21; docs/judge.md): problems, checkers, the judging pipeline, the verdict's
 * three levels with the reward rule, and the execution-fingerprint cache.
 *
 *   checker.c   built-in checkers: pure functions over the candidate's output and the answer
 *   problem.c   problems: the on-disk package, inline problems; validation
 *   tests.c     a problem's tests: the inline list, the RL "in_outs" form, a tests/ directory
 *   judge.c     compile once, run every test in a clean sandbox, check, score
 *   program.c   running one program (candidate, checker, interactor) in a pooled sandbox
 *   interact.c  an interactor and the candidate connected through host pipes, each in its sandbox
 *   harness.c   call-based problems: the harness that calls fn_name, per language (python, node, C++)
 *   reward.c    the verdict's levels, usable, and the documented reward rule
 *   record.c    the judged record as JSON
 *   request.c   the judge request (POST /v1/judge, a judge line of paddock run)
 *   jobs.c      a judge request as a scheduler job
 *   cache.c     the fingerprint cache (identical judged work answers from the stored verdict)
 *   fields.c    what goes into the problem's digest and the cache's key (SHA-256: lib's)
 *   episode.c   episode problems (kind "episode": hidden files, a command, its report) and the
 *               grade of a session's state from the command's result (issue 40)
 *   rules.c     rules over an episode's trajectory (deny_commands, loops, history probes, repeats)
 *
 * Judge material (answers, checkers, interactors, hidden tests) never enters the candidate's sandbox:
 * the candidate gets its program and one test's input on stdin; checkers and interactors run in
 * sandboxes of their own and see the candidate's output as a file or a pipe. docs/judge.md is the
 * user's guide to the formats and the rule. */
#ifndef PADDOCK_JUDGE_H
#define PADDOCK_JUDGE_H

#include "paddock.h"
#include "pool.h"
#include "server.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- what goes into a digest (fields.c; the SHA-256 itself is lib's, pd_sha256) -------------- */

/* A length-prefixed field: "ab"+"c" and "a"+"bc" must not hash alike. */
void pd_sha256_field(pd_sha256 *c, const void *data, size_t len);
void pd_sha256_str(pd_sha256 *c, const char *s);
void pd_sha256_u64(pd_sha256 *c, uint64_t v);

/* ---- checkers (checker.c) -------------------------------------------------------------------- */

typedef enum pd_check_mode {
	PD_CHK_LINES = 0,       /* the default: lines, trailing whitespace and final newlines ignored */
	PD_CHK_EXACT,           /* bytes */
	PD_CHK_TOKENS,          /* whitespace-separated tokens */
	PD_CHK_NUMERIC,         /* tokens; numbers within a tolerance, integers exact */
	PD_CHK_YESNO,           /* tokens, each yes or no, in any case */
	PD_CHK_UNORDERED_LINES, /* the same lines in any order */
	PD_CHK_MULTISET_TOKENS, /* the same tokens in any order */
	PD_CHK_JSON_VALUE,      /* one JSON value each; tuple = list, key order ignored */
	PD_CHK_PROGRAM,         /* a custom checker program (testlib or Kattis convention) */
	PD_CHK_INTERACTIVE,     /* an interactor talks with the candidate; its exit is the verdict */
	PD_CHK_COUNT
} pd_check_mode;

typedef enum pd_tolerance { PD_TOL_ABS_OR_REL = 0, PD_TOL_ABS, PD_TOL_REL } pd_tolerance;

typedef enum pd_convention { PD_CONV_TESTLIB = 0, PD_CONV_KATTIS } pd_convention;

typedef struct pd_checker_cfg {
	pd_check_mode mode;
	bool case_insensitive; /* exact, lines, tokens, unordered_lines, multiset_tokens */
	pd_tolerance tolerance; /* numeric */
	double abs_tol, rel_tol; /* numeric; default 1e-6 both */
	pd_convention convention; /* checker programs and interactors */
} pd_checker_cfg;

const char *pd_check_mode_name(pd_check_mode m);
/* -1 if name is not a mode. */
int pd_check_mode_parse(const char *name);
/* The defaults of a mode (tolerances 1e-6, abs_or_rel). */
pd_checker_cfg pd_checker_default(pd_check_mode m);

/* A test's outcome. Codes a judge shows per test; JE (the checker failed) is not the candidate's. */
typedef enum pd_tstatus {
	PD_T_AC = 0, /* accepted */
	PD_T_WA,     /* wrong answer */
	PD_T_PE,     /* presentation error (a checker program said so) */
	PD_T_PC,     /* partially correct: score in (0,1) */
	PD_T_TO,     /* time limit */
	PD_T_ML,     /* memory limit */
	PD_T_OL,     /* output limit */
	PD_T_RE,     /* non-zero exit */
	PD_T_SG,     /* killed by a signal */
	PD_T_XX,     /* the sandbox failed: infrastructure */
	PD_T_JE,     /* judge error: the checker or interactor crashed, timed out or said "fail" */
	PD_T_SKIPPED, /* not run: stop at the first failure */
	PD_T_COUNT
} pd_tstatus;

const char *pd_tstatus_name(pd_tstatus s);

typedef struct pd_check_result {
	pd_tstatus status; /* AC, WA, PE, PC, or JE */
	double score;      /* 1 for AC, 0 for WA/PE, in (0,1) for PC */
	char message[256]; /* why, for people: the first difference found */
} pd_check_result;

/* Compares out against ans with a built-in mode (not PROGRAM or INTERACTIVE: EINVAL). Pure: no I/O,
 * any bytes (NULs, invalid UTF-8, no final newline) are valid input. Returns 0, or -1 on a mode
 * that is not built in or an allocation failure. */
int pd_check(const pd_checker_cfg *c, const char *out, size_t out_len, const char *ans, size_t ans_len,
	     pd_check_result *r, pd_err *e);

/* How a checker program's (or interactor's) exit translates, by convention: testlib (0 OK, 1 WA,
 * 2 PE, 3 fail, 4 WA, 7 partial with the score as the first number of stdout (else stderr), 8 PE)
 * or Kattis (42 accepted, 43 wrong). Anything else, a signal or a time-out is a judge failure.
 * message is the checker's own words (stderr or the Kattis feedback). */
void pd_check_program_verdict(pd_convention conv, const pd_result *r, const char *feedback,
			      pd_check_result *out);

/* ---- problems (problem.c) -------------------------------------------------------------------- */

typedef struct pd_jtest {
	char name[32];  /* "001" from tests/001.in, or the index */
	char *input;    /* fed to stdin; for call-based tests, the JSON list of arguments */
	size_t input_len;
	char *answer;   /* the expected output; for call-based tests, the JSON of the return value */
	size_t answer_len;
	double weight;  /* default 1 */
} pd_jtest;

/* A program the judge brings (checker or interactor): source, its language, and once prepared
 * (pd_problem_prepare), the built program. */
typedef struct pd_jsource {
	char *source;
	size_t source_len;
	char language[32];
	char file[256];  /* where it came from, for errors */
	/* prepared: what runs (a binary or the source itself) */
	char *built;
	size_t built_len;
	bool prepared;
} pd_jsource;

struct pd_episode;

typedef struct pd_problem {
	char id[128], version[32];
	struct pd_episode *episode; /* kind "episode" (episode.c): graded in a session's fork; no tests */
	char origin[512];        /* the directory, or "inline" */
	char template_name[64];  /* the candidate's template; "" = the language's */
	char image[160];         /* "image": the candidate's image (a name or digest); "" = the template's */
	char isolation[16];      /* "isolation": the candidate's tier (container, gvisor); "" = the template's */
	char judge_template[64]; /* checkers' and interactors' template; "" = "judge" if the pools
				  * have it, else the checker language's */
	uint64_t time_ms;        /* per test, CPU; wall is twice that plus one second */
	uint64_t memory_bytes;   /* per test */
	uint64_t output_bytes;   /* per test: stdout past this is OL */
	uint64_t total_ms;       /* wall time of all tests together; 0 = none */
	uint64_t compile_ms;     /* compile wall time */
	pd_checker_cfg checker;
	pd_jsource checker_prog;    /* mode PROGRAM */
	pd_jsource interactor;      /* mode INTERACTIVE */
	uint64_t interactor_time_ms;
	bool call_based;            /* in_outs with fn_name: the harness calls fn_name */
	char fn_name[128];
	bool stop_at_first_failure;
	bool one_sandbox;           /* every test in one sandbox, in order (what a test leaves stays) */
	pd_audit_policy *audit;     /* problem.json's "audit" policy (owned), or NULL */
	pd_jtest *tests;
	size_t ntests;
	/* a digest of everything that decides a verdict (limits, checker, tests, programs) */
	unsigned char digest[32];
	char digest_hex[65];
} pd_problem;

/* Parses a problem from JSON: the inline form {"tests": [...], "checker": {...}, "limits": {...}}
 * or {"in_outs": {...}}, or a problem.json whose tests live in dir (NULL for inline). where names
 * the source in errors ("inline", ".../problem.json"). On error e names the file and field. */
pd_problem *pd_problem_from_json(json_t *o, const char *dir, const char *where, pd_err *e);
/* Loads a problem directory: problem.json, tests/NNN.in + tests/NNN.ans, optional checker.*,
 * interactor.*. */
pd_problem *pd_problem_load(const char *dir, pd_err *e);
/* An EINVAL from the library's parsers (the audit policy's) as a refusal: its message without
 * strerror's words. Returns -1. */
int pd_jrefusal(pd_err *e);
void pd_problem_free(pd_problem *p);

typedef struct pd_problem_set {
	pd_problem **p;
	size_t n;
} pd_problem_set;

/* Loads every subdirectory of dir that holds a problem.json; one bad problem fails the load, with
 * its file and field (a judge must not start with a problem it cannot judge). Duplicate id@version
 * is an error. */
int pd_problems_load_dir(const char *dir, pd_problem_set *out, pd_err *e);
/* The problem id (and version, if not NULL or "": else the highest loaded). */
pd_problem *pd_problems_find(const pd_problem_set *s, const char *id, const char *version);
void pd_problems_free(pd_problem_set *s);

/* The problem parsers' small tools (jparse.c, below problem.c, tests.c and episode.c): a refusal
 * "where: ..." (-1); a regular file of at most max bytes read whole (NUL-terminated); fields of o
 * not in known refused. */
int pd_jfail_at(pd_err *e, const char *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int pd_jslurp(const char *path, size_t max, char **out, size_t *len, pd_err *e);
int pd_junknown_fields(json_t *o, const char *where, const char *const *known, pd_err *e);
/* qsort order of file names (char *), bytewise */
int pd_jname_cmp(const void *a, const void *b);
/* tests.c: the tests of p from the inline list, from in_outs (checker_given: a checker was named,
 * so call-based answers need not be JSON), or from dir/tests (weights: problem.json's, or NULL);
 * *total counts the bytes of all of p's tests. */
int pd_jparse_tests(pd_problem *p, json_t *tests, const char *where, uint64_t *total, pd_err *e);
int pd_jparse_in_outs(pd_problem *p, json_t *io, bool checker_given, const char *where, uint64_t *total,
		      pd_err *e);
int pd_jload_test_dir(pd_problem *p, const char *dir, json_t *weights, uint64_t *total, pd_err *e);

/* ---- running programs in pooled sandboxes (program.c) ---------------------------------------- */

/* A built program ready to run: the files placed in /work and the argv. */
typedef struct pd_jprog {
	const pd_language *lang;
	char template_name[64];
	char path[128];    /* where it is written in the sandbox */
	const char *data;  /* borrowed */
	size_t len;
	mode_t mode;
	char *argv[8];     /* borrowed strings */
	int argc;
} pd_jprog;

/* A file placed beside the program. */
typedef struct pd_jfile {
	const char *path;
	const char *data;
	size_t len;
} pd_jfile;

typedef struct pd_jrun {
	/* in */
	const char *stdin_data; /* or stdin_fd >= 0 */
	size_t stdin_len;
	int stdin_fd;
	int stdout_fd;          /* >= 0: every stdout byte goes there too (interactive) */
	const pd_jfile *files;
	size_t nfiles;
	char *const *extra_args;
	uint64_t cpu_ms, wall_ms, memory_bytes, output_bytes;
	/* out */
	pd_result r;
	char *out;              /* the whole stdout (up to output_bytes) */
	size_t out_len;
	char *feedback;         /* Kattis: /work/feedback/judgemessage.txt, if asked */
	bool want_feedback;
	char sandbox_id[40];
	/* in: audit the run under this policy (the candidate's runs only); out: its process level,
	 * judged with the sandbox still there (honey tokens and decoy answers in the files it wrote) */
	const pd_audit_policy *audit;
	pd_audit_verdict verdict;
	/* in: run in this sandbox (the caller's: neither acquired nor released here), or NULL */
	pd_sandbox *sandbox;
	/* in: the scheduler's job this run is part of (NULL: none): its sandbox is held in the job, so
	 * that the client's hang-up kills it; a job cancelled already runs nothing (-3) */
	pd_job *job;
} pd_jrun;

/* Compiles source in a sandbox of the language's template (or template_name if given) and takes the
 * built program out. Returns 0 (built: *built malloc'd), 1 (did not compile: msg says why), -1
 * (infrastructure: e), -2 (no sandbox could be had: e) or -3 (job, if given, was cancelled). For a
 * language without a compile step *built is a copy of source. */
int pd_jprog_build(pd_pools *pools, const pd_language *l, const char *template_name, const char *source,
		   size_t len, uint64_t wall_ms, char **built, size_t *built_len, char *msg, size_t msg_len,
		   uint64_t *cpu_ms, pd_job *job, pd_err *e);
/* Describes the built program of language l (data borrowed) for pd_jprog_run. */
void pd_jprog_init(pd_jprog *p, const pd_language *l, const char *template_name, const char *data,
		   size_t len);
/* Runs p once in a clean sandbox from the pools (released afterwards, which resets it). Returns 0
 * when a result was produced (any status), -1 when the sandbox could not be driven, -2 when none could
 * be had (e), -3 when x->job was cancelled before it ran. */
int pd_jprog_run(pd_pools *pools, const pd_jprog *p, pd_jrun *x, pd_err *e);
void pd_jrun_free(pd_jrun *x);

/* ---- call-based harnesses (harness.c) ------------------------------------------------------- */

#define PD_JHARNESS_PY "/work/.paddock_harness.py"
#define PD_JHARNESS_JS "/work/.paddock_harness.js"
/* The start of the stderr line in which a harness says why it could not call the function (exit
 * status 3); the judge keeps the rest of that line as the test's "harness" message. */
#define PD_JHARNESS_SAYS "paddock harness: "

/* Whether call-based problems can be judged in language l (python, node, C++). */
bool pd_jharness_supported(const pd_language *l);
/* The program to build for a call-based submission in a compiled language (C++: the submission with
 * the harness appended, *out malloc'd); *out NULL for an interpreted one. */
int pd_jharness_source(const pd_language *l, const pd_problem *p, const char *code, size_t len, char **out,
		       size_t *out_len, pd_err *e);
/* An interpreted language's harness file, placed beside the submission; false for a compiled one. */
bool pd_jharness_file(const pd_language *l, pd_jfile *f);
/* Points cand's argv at the harness (interpreted languages; compiled ones run the program). */
void pd_jharness_argv(const pd_language *l, pd_jprog *cand);

/* ---- interactive tests (interact.c) ---------------------------------------------------------- */

/* Runs the candidate and the interactor at once, each in its own sandbox, the interactor's stdout
 * piped to the candidate's stdin and back through the host. The interactor gets the test's input
 * and answer as files (testlib: interactor input tout answer; Kattis: interactor input answer
 * feedback_dir) and its own limits. Returns 0 with both results, or the lower of the two runs'
 * failures (-1, -2). */
int pd_jinteract(pd_pools *pools, const pd_jprog *cand, pd_jrun *cx, const pd_jprog *inter, pd_jrun *ix,
		 pd_convention conv, const pd_jtest *t, pd_err *ce, pd_err *ie);

/* ---- the verdict and the reward (reward.c) --------------------------------------------------- */

typedef enum pd_level { PD_LV_NOT_JUDGED = 0, PD_LV_PASS, PD_LV_FAIL, PD_LV_PARTIAL, PD_LV_NOT_AUDITED } pd_level;
const char *pd_level_name(pd_level l);

typedef enum pd_reward_mode { PD_REWARD_SCORE = 0, PD_REWARD_BINARY } pd_reward_mode;

/* The reward rule (docs/judge.md, "The reward"). */
typedef struct pd_reward_rule {
	pd_reward_mode mode;  /* score: the weighted fraction; binary: 1 on pass, else fail_value */
	double fail_value;    /* a failed output (compile errors included); default 0 */
	double penalty;       /* a process violation; default -1 */
	bool requires_audit;  /* no reward (null) until the process level is decided; default false */
	double budget_exceeded; /* an episode past its session's budget (resources fail); default 0 */
} pd_reward_rule;

pd_reward_rule pd_reward_rule_default(void);
/* Parses {"mode", "fail", "penalty", "requires_audit"} over the defaults; e names the field. */
int pd_reward_rule_parse(json_t *o, pd_reward_rule *r, pd_err *e);

typedef struct pd_verdict {
	pd_level output;        /* PASS, FAIL, PARTIAL, or NOT_JUDGED (no test could be judged) */
	double score;           /* [0,1] */
	pd_level process;       /* PASS, FAIL or NOT_AUDITED */
	pd_level resources;     /* PASS, FAIL or NOT_JUDGED */
	bool usable;
	const char *unusable;   /* "output", "process", "resources", or NULL when usable */
	bool has_reward;        /* false: reward is null (an infrastructure failure or a rule's) */
	double reward;
	pd_failure failure;     /* the record's failure_class (pd_failure_name); PD_F_NONE: "none" */
	bool audit_asked;          /* a policy applied (request, problem, template, risk list) */
} pd_verdict;

/* Fills v's usable, unusable, has_reward and reward from its levels and failure class. An
 * infrastructure failure (startup_failure, internal_error, judge_error, queue_timeout, cancelled,
 * dependency_missing) carries no reward, never 0; nor does an attempt whose audit was asked for
 * (audit_asked) and not completed (not_audited), as under requires_audit. */
void pd_verdict_decide(pd_verdict *v, const pd_reward_rule *rule);
/* Whether a failure class is the infrastructure's (no reward). */
bool pd_failure_is_infra(pd_failure f);

/* ---- judging (judge.c) ----------------------------------------------------------------------- */

typedef struct pd_jtest_result {
	pd_tstatus status;
	double score;
	uint64_t time_ms, wall_ms, memory_kb;
	char message[256];
	char checker_message[256];
	unsigned checker_attempts; /* 2 when the checker failed once and was retried */
	char use_id[56];           /* the sandbox use the candidate's run had (empty: none ran) */
	/* malloc'd, NULL for none: the last PD_JTEST_STDERR_MAX bytes of the candidate's stderr, and
	 * the harness's own message (a call-based test whose harness could not call the function) */
	char *stderr_tail;
	uint64_t stderr_bytes;     /* what the candidate wrote to stderr in all */
	char *harness;
} pd_jtest_result;
#define PD_JTEST_STDERR_MAX 1024
/* Frees what t holds and zeroes it. */
void pd_jtest_result_clear(pd_jtest_result *t);

typedef struct pd_judge_opts {
	int stop_at_first_failure;  /* -1 = the problem's, 0 no, 1 yes */
	bool no_cache;              /* opt out of the fingerprint cache */
	pd_reward_rule rule;
	unsigned judge_retries;     /* retries of a failed checker; default 1 */
	unsigned infra_retries;     /* retries of a sandbox that failed (XX, startup); default 1 */
	const pd_audit_policy *audit; /* the request's "audit" (borrowed), NULL: none asked */
	/* audit is the default's (the request said nothing; "audit": false opts out): applied where
	 * the candidate's tier offers an audit, left out under gvisor, which has none */
	bool audit_default;
	/* the scheduler's job being judged (NULL: none): once it is cancelled (its client hung up) the
	 * running program is killed, nothing more runs, and the attempt ends as "cancelled" */
	pd_job *job;
	/* the request's "image" (an imported image's name or digest, checked at the edge against
	 * serve --images): the candidate runs on it, over the problem's own; "" = the problem's */
	char image[160];
	/* the request's "isolation" (a tier name, checked at the edge against the tiers the template
	 * allows): the candidate runs under it, over the problem's own; "" = the problem's */
	char isolation[16];
	/* the problem is on the risk list (confirmed hacks): audited in full, egress denied, whatever
	 * the request asked (docs/audit.md, "The risk list") */
	bool risky;
} pd_judge_opts;

void pd_judge_opts_default(pd_judge_opts *o);

typedef struct pd_judged {
	char task_id[64], group_id[128], sample_id[128], attempt_id[80];
	char problem_id[128], problem_version[32], language[32], template_name[64];
	char template_version[48];
	char image_name[160], image_digest[PD_DIGEST_LEN]; /* the candidate's image, when one was named */
	char isolation[16];         /* the tier the candidate ran under (or was to): "container", "gvisor" */
	pd_verdict v;
	char error[512];            /* an infrastructure failure's cause */
	bool compiled;              /* a compile step ran */
	bool compile_error;
	char compile_message[2048]; /* the compiler's stderr (head) */
	pd_jtest_result *tests;
	size_t ntests;
	uint64_t cpu_ms;            /* all the CPU the judging took (compile + tests + checkers) */
	uint64_t wall_ms;
	uint64_t checker_ms;        /* CPU of checker programs and interactors */
	bool cache_hit;
	bool cache_used;            /* false: the request opted out or the result was not cacheable */
	unsigned judge_errors;      /* checker failures seen (retried ones included) */
	/* the audit of the candidate's test runs (issue 22): events of all tests (malloc'd, capped),
	 * the count past the cap, per-kind counts and the process level's reasons */
	bool audited;
	pd_audit_event *audit;
	size_t audit_len;
	uint64_t audit_dropped;
	uint64_t audit_kinds[PD_AK_N];
	pd_audit_verdict audit_verdict;
	size_t audit_reason_at[PD_VERDICT_REASONS]; /* where each reason's rule starts, after "test T: " */
	bool risk_list;             /* audited in full because the problem is on the risk list */
} pd_judged;

#define PD_JUDGE_AUDIT_EVENTS 256 /* events a judged record keeps, over all its tests */

typedef struct pd_judge pd_judge;

typedef struct pd_judge_cfg {
	size_t cache_entries;       /* 0 = 4096; the oldest entry goes first */
} pd_judge_cfg;

pd_judge *pd_judge_new(pd_pools *pools, const pd_judge_cfg *c, pd_err *e);
void pd_judge_free(pd_judge *j);
/* Compiles a problem's checker and interactor once (their own template), so that one that does not
 * build is reported now and not at first use. */
int pd_judge_prepare(pd_judge *j, pd_problem *p, pd_err *e);
/* Judges one submission: compiles it once, runs every test in a clean sandbox, checks each,
 * decides the verdict and the reward. Returns 0 with *out filled (infrastructure failures are
 * verdicts too: failure_class says which), -1 only when the request itself is invalid (e: an
 * unknown language, a call-based problem in a language without a harness, an unprepared checker). */
int pd_judge_submit(pd_judge *j, const pd_problem *p, const char *language, const char *code, size_t code_len,
		    const pd_judge_opts *o, pd_judged *out, pd_err *e);
void pd_judged_free(pd_judged *d);

typedef struct pd_judge_stats {
	uint64_t judged, judge_errors, cache_hits, cache_misses, cache_entries;
	uint64_t cpu_ms_saved; /* CPU the cached verdicts would have cost again */
	uint64_t checker_ms;
	uint64_t by_output[5]; /* by pd_level of the output */
	uint64_t by_process[5]; /* by pd_level of the process level */
	uint64_t audit_kinds[PD_AK_N]; /* audit events of judged candidates, by kind */
} pd_judge_stats;
void pd_judge_stats_get(pd_judge *j, pd_judge_stats *s);

/* ---- requests (request.c) -------------------------------------------------------------------- */

/* POST /v1/judge: {"problem_id", "problem_version" | "problem": {inline}, "language", "code",
 * "task_id", "group_id", "sample_id", "priority", "deadline_ms", "cache", "stop_at_first_failure",
 * "reward": {rule}, "audit": true | {policy}} (docs/judge.md, "Requests"; docs/audit.md). */
typedef struct pd_judge_req {
	char problem_id[128], problem_version[32];
	pd_problem *problem;    /* an inline problem (owned), or NULL: problem_id names one */
	char language[32];
	const char *code;       /* points into body */
	size_t code_len;
	char task_id[64], group_id[128], sample_id[128];
	int priority;           /* PD_PRIO_* */
	uint64_t deadline_ms;   /* from now; 0 = none */
	pd_judge_opts opts;
	pd_audit_policy *audit; /* "audit": true or {policy} (owned; opts.audit points at it), or NULL */
	json_t *body;           /* owned: the parsed request */
} pd_judge_req;

/* Parses a request; on error frees what it took, returns -1 and e names the field. */
int pd_judge_req_parse(json_t *o, pd_judge_req *q, pd_err *e);
void pd_judge_req_free(pd_judge_req *q);

/* ---- the audit of judged submissions (audit.c) ---------------------------------------------- */

/* The policy a submission is judged under: the template's, then the problem's over it (it may
 * replace what is allowed), then the request's (it may only tighten), when the request asks for
 * an audit or the template or problem makes it mandatory. *out is NULL when no audit runs. -1 (e
 * names the field) when the request would widen the template's or problem's policy. */
int pd_judge_policy(const pd_template *tpl, const pd_problem *p, const pd_audit_policy *req,
		    pd_audit_policy **out, pd_err *e);
/* 0 when the candidate's template for p and language allows the tier isolation ("" = its own);
 * else -1 with e->msg starting "isolation: " (EINVAL: not allowed, ENOENT: no such template,
 * ENOTSUP: the tier cannot offer what the template needs), as /v1/runs answers it. */
int pd_judge_check_isolation(pd_judge *j, const pd_problem *p, const char *language, const char *isolation,
			     pd_err *e);
/* The same check for a request before it is queued (400 at once): -1 with e when it is refused. */
int pd_judge_check_policy(pd_judge *j, const pd_problem *p, const char *language, const pd_audit_policy *req,
			  pd_err *e);
/* The record's audit: started (process pass until a run says otherwise), each candidate run's
 * events and verdict added, a run whose evidence is missing (a sandbox fault), then the process
 * level decided (policy_violation on a fail). */
/* -1 (a refusal naming whose policy, the decoy and the test) when a decoy of pol has as its
 * wrong answer a test's expected output of p: the audit would flag every correct submission.
 * Checked at load (the problem's own policy; each template's over it, pd_judge_prepare) and on
 * every merged policy (pd_judge_policy). */
int pd_judge_check_decoys(const pd_problem *p, const pd_audit_policy *pol, const char *whose, pd_err *e);
/* A problem on the risk list: *pol (NULL: none asked) becomes a full audit with egress denied. */
int pd_judge_policy_risky(pd_audit_policy **pol, pd_err *e);
void pd_judged_audit_start(pd_judged *d);
void pd_judged_audit_add(pd_judged *d, const char *test, const pd_jrun *x);
void pd_judged_audit_unseen(pd_judged *d);
void pd_judged_audit_decide(pd_judged *d);
/* {"status", "events": [{kind, time, pid, path|address, mode, op, denied}], "dropped", "counts",
 * "reasons", "failed"}, or null when not audited. */
json_t *pd_judged_audit_json(const pd_judged *d);

/* ---- episode problems (episode.c) ----------------------------------------------------------- */

typedef enum pd_ep_report { PD_EP_EXIT_CODE = 0, PD_EP_JUNIT, PD_EP_PYTEST } pd_ep_report;

/* A hidden file: placed in the grading fork, replacing what the agent left at that path. */
typedef struct pd_ep_file {
	char path[512]; /* absolute, or relative to the session's working directory */
	char *data;
	size_t len;
} pd_ep_file;

typedef struct pd_episode {
	pd_ep_file *files;
	size_t nfiles;
	char **argv;           /* the command (NULL-terminated): ["/bin/sh", "-c", text] or the list */
	pd_ep_report report;
	char junit_path[512];  /* report junit: the file the command writes */
	char **fail_to_pass, **pass_to_pass; /* test ids (SWE-bench's names) */
	size_t nf2p, np2p;
	uint64_t wall_ms, cpu_ms, memory_bytes, output_bytes; /* the command's limits (0: none) */
	json_t *reward;        /* the problem's reward rule (validated), or NULL */
	json_t *rules;         /* the problem's trajectory rules (validated by the server), or NULL */
} pd_episode;

/* The episode part of a problem (p's common fields parsed by problem.c): files (or dir/files/),
 * command, report, fail_to_pass, pass_to_pass, limits, reward, rules. e names the file and field. */
int pd_episode_parse(pd_problem *p, json_t *o, const char *dir, const char *where, pd_err *e);
void pd_episode_free(pd_episode *ep);

/* One test as the grade reports it. */
typedef struct pd_ep_test {
	char id[384];
	const char *status; /* "pass", "fail", "error", "skipped", "missing" (listed, not reported) */
	const char *group;  /* "fail_to_pass", "pass_to_pass", or NULL */
} pd_ep_test;

/* The grade of a command's result against the episode: per-test results (malloc'd *tests) and
 * the output level with its score: pass (every counted test passed), partial (the fraction of
 * fail_to_pass passed, every pass_to_pass passing), fail; report is the junit file's text (NULL:
 * none could be read: every test missing). why says what decided a fail. */
void pd_episode_grade(const pd_episode *ep, const pd_result *r, const char *report, size_t report_len,
		      pd_ep_test **tests, size_t *ntests, pd_level *output, double *score, char *why,
		      size_t why_len);

/* ---- rules over an episode's trajectory (rules.c) ------------------------------------------- */

#include <regex.h>

#define PD_RULES_DENY_MAX 32
enum { PD_FLAG_DENIED = 1, PD_FLAG_LOOP = 2, PD_FLAG_HISTORY = 4, PD_FLAG_REPEATED = 8 };

/* "rules" (a session's, a problem's): deny_commands (POSIX extended regular expressions over a
 * step's command), deny_action ("refuse", the default, or "flag"), max_repeats, history_probe,
 * repeated_violation, exempt (flag kinds that do not fail the process). */
typedef struct pd_rules {
	bool on;
	char *deny[PD_RULES_DENY_MAX];
	regex_t deny_re[PD_RULES_DENY_MAX];
	size_t ndeny;
	bool deny_flag_only;     /* deny_action "flag": the step runs, flagged */
	unsigned max_repeats;    /* 0: none */
	bool history_probe, repeated_violation;
	unsigned exempt;         /* PD_FLAG_* bits */
	bool exempt_set;
} pd_rules;

/* The running state of the rules over one trajectory. */
typedef struct pd_rules_state {
	char *last;              /* the last command (malloc'd) */
	unsigned repeats;        /* how many times in a row */
	uint32_t failed_kinds;   /* audit kinds that failed an earlier step */
} pd_rules_state;

/* Adds the rules of o to r, tighten-only: deny lists joined, the smaller max_repeats, either's
 * history_probe and repeated_violation, "refuse" over "flag", only the kinds both exempt. where
 * names the source in errors. */
int pd_rules_add(pd_rules *r, json_t *o, const char *where, pd_err *e);
void pd_rules_free(pd_rules *r);
void pd_rules_state_free(pd_rules_state *st);
/* A step's command against the rules before it runs: PD_FLAG_DENIED, LOOP, HISTORY; why (may be
 * NULL) says the first. */
unsigned pd_rules_before(const pd_rules *r, pd_rules_state *st, const char *cmd, char *why, size_t why_len);
/* After it ran: PD_FLAG_REPEATED when it failed the audit for a kind an earlier step failed. */
unsigned pd_rules_after(const pd_rules *r, pd_rules_state *st, uint32_t failed_kinds);
/* ["denied_command", "loop", "history_probe", "repeated_violation"] of flags */
json_t *pd_rules_flags_json(unsigned flags);
/* The rules as given, normalized (null when none). */
json_t *pd_rules_json(const pd_rules *r);
/* A step's command as the rules read it: argv joined by spaces ("/bin/sh -c TEXT" for a shell). */
char *pd_rules_cmd_text(char *const *argv);

/* ---- judge jobs (jobs.c) ---------------------------------------------------------------------- */

/* A judge request (body) as a scheduler job whose execute judges it and leaves the judged record in
 * j->record: the problem is the inline one or problem_id@problem_version among problems. NULL when
 * refused: *status is 400 (e names the field), 404 (no such problem) or 500. The caller sets client,
 * done and done_arg and submits it. run_id prefixes generated task ids. */
pd_job *pd_judge_job(pd_judge *judge, const pd_problem_set *problems, json_t *body, uint32_t run_id, int *status,
		     pd_err *e);
/* The judged record of a finished judge job (a new reference): j->record, or for a job that never
 * ran (queue_timeout, cancelled) a record of that failure, with no reward. */
json_t *pd_judge_job_record(const pd_job *j);
/* Marks a judge job's problem as on the risk list (pd_judge_opts.risky). */
void pd_judge_job_risky(pd_job *j);

/* ---- the fingerprint cache (cache.c) --------------------------------------------------------- */

typedef struct pd_jcache pd_jcache;

pd_jcache *pd_jcache_new(size_t max_entries);
void pd_jcache_free(pd_jcache *c);
/* The key of a judged work: the problem's id, version and digest, the submission, its language, the
 * limits and checker (in the digest), the template's identity and the options that change results. */
/* False when it could not be computed (out of memory): the cache is then not used. */
bool pd_jcache_key(const pd_problem *p, const char *language, const char *code, size_t code_len,
		   const pd_template *tpl, const pd_template *judge_tpl, bool stop_at_first, const pd_audit_policy *audit,
		   unsigned char key[32]);
/* Whether a judged record may be stored: no TO, no XX, no infrastructure failure, no judge error. */
bool pd_jcache_cacheable(const pd_judged *d);
/* Copies d's malloc'd parts (tests, audit events) into dst, a copy by value of d; -1 on ENOMEM. */
int pd_judged_copy(pd_judged *dst, const pd_judged *d);
/* Copies the stored record into *out (tests malloc'd) and returns true on a hit. */
bool pd_jcache_get(pd_jcache *c, const unsigned char key[32], pd_judged *out);
void pd_jcache_put(pd_jcache *c, const unsigned char key[32], const pd_judged *d);
void pd_jcache_stats(pd_jcache *c, uint64_t *hits, uint64_t *misses, uint64_t *entries, uint64_t *cpu_ms_saved);

/* ---- the judged record (record.c) ------------------------------------------------------------ */

/* The judged record (docs/judge.md, "The record"): ids, verdict (three levels), usable, reward
 * (a number or null), failure_class, cache, compile, tests. */
json_t *pd_judged_to_json(const pd_judged *d);

#endif
