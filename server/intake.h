/* The intake (server/intake.c): every way a request becomes a job — HTTP runs (/v1/runs,
 * /run_code, Piston), HTTP judge and its batch, a cluster node taking work off the broker, and
 * paddock run — goes through these rules, in this one order:
 *
 *   1. parse, by the request's API (its row: pd_api)
 *   2. the template it names (a native "template"), its image, its tier
 *   3. the audit policy (may tighten the template's, never widen it)
 *   4. caps and review (a judge submission's cap; the risk list's controls, runs and judge alike)
 *   5. the network it asks for (the daemon's allowed modes and the template's twins)
 *   6. the deadline, and its default when the request gives none (pd_intake.deadline_margin_s)
 *   7. the API's own output and memory rules (SandboxFusion keeps the whole output, Piston's
 *      memory failure is the kernel's OOM kill)
 *   8. admission (pd_sched_submit), refused with one status and one text per reason
 *
 * A way in keeps only its transport: reading the body, where the answer goes. */
#ifndef PADDOCK_SERVER_INTAKE_H
#define PADDOCK_SERVER_INTAKE_H

#include "server.h"

struct pd_judge;
struct pd_problem_set;
typedef struct pd_intake pd_intake;

/* One API: its name (the cluster's task kind too), its parser, its answer, its refusal's body
 * and the status its clients read as "overloaded, retry". Adding an API is one file (its parse
 * and render) and one row in intake.c's table (docs/internals.md, "How to add an API"). */
typedef struct pd_api {
	const char *name;
	/* the request as a job; NULL when refused (*status and e say why) */
	pd_job *(*parse)(const pd_intake *in, json_t *body, int *status, pd_err *e);
	/* the finished job's answer; *status is 200 unless the API answers otherwise */
	json_t *(*render)(const pd_job *j, int *status);
	/* a refusal's body: {"error": msg}, and whatever else the API's clients read */
	json_t *(*error_body)(const char *msg);
	int overload_status;
	const char *route; /* the HTTP path a POST of it comes in on (NULL: a transport of its own, the
			    * judge's); the daemon routes by it (server/http/routes.c) */
	bool keep_whole;   /* the output kept whole (pd_intake.run_code_output_max): SandboxFusion's rule */
	bool mem_fast_off; /* no memory fast path: Piston's clients read the OOM kill's SIGKILL */
	bool output_dir;   /* output past the record's head and tail kept for GET .../output (native) */
	bool judged;       /* a judged submission: its problem's caps count it, the judge checks its own
			    * policy, its time is its tests' (no default deadline) */
} pd_api;

/* The API named name ("native", "run_code", "piston", "judge"); NULL for none. */
const pd_api *pd_api_find(const char *name);
/* The API whose route is path; NULL for none. */
const pd_api *pd_api_route(const char *path);
/* The rows: each run API's in its file under server/api/, the judge's in intake.c. */
extern const pd_api pd_api_native, pd_api_run_code, pd_api_piston, pd_api_judge;
/* {"error": msg}: the refusal body of an API whose clients read nothing else */
json_t *pd_api_error_plain(const char *msg);

/* What the rules are checked against. A NULL member's rule does not apply where the way in has
 * none (paddock run has no store, so no risk list; no caps). */
struct pd_intake {
	pd_pools *pools;
	pd_sched *sched;
	pd_store *store; /* the risk list (review), the disk-full text */
	pd_caps *caps;   /* judge submissions per problem (--problem-submit-max) */
	struct pd_judge *judge;
	const struct pd_problem_set *problems;
	pd_ctx *ctx;                    /* its run id prefixes task ids */
	const pd_template *tpl;         /* the templates a refusal lists (twins "*.net-*" left out) */
	size_t ntpl;
	const char *self;               /* "daemon", "run": "not a template of this ..." */
	const char *output_dir;         /* native output past the record (NULL: none) */
	uint64_t run_code_output_max;   /* 0 = 16 MiB */
	unsigned deadline_margin_s;     /* 0 = no default deadline (paddock run: its batch is its own) */
	/* the daemon's own checks (server/http): an image the request names is one it allows
	 * (returns 0, or the HTTP status of the refusal), the network asked for is one it allows
	 * (the job moved to the template's twin); NULL: images unchecked, networks refused */
	int (*image_check)(void *arg, const char *ref, char digest[PD_DIGEST_LEN], pd_err *e);
	int (*network_pick)(void *arg, pd_job *j, char *why, size_t len);
	void *arg;
	const char *no_network; /* the refusal of a network where network_pick is NULL */
};

/* How the request came: from its client (the caps count it), or off the cluster's broker (the
 * edge node that took it from its client counted it already). */
enum { PD_INTAKE_CLIENT = 0, PD_INTAKE_BROKER = 1 };

/* Rules 1 to 7: the job, or NULL with the HTTP status, e, and *retry_after (a cap's, else 0).
 * waited_us: how long ago the request reached the node its client sent it to (its time in the
 * cluster's broker; 0 from a client): its deadline, given or the default, counts from then. */
pd_job *pd_intake_check(const pd_intake *in, const pd_api *api, json_t *body, int from, uint64_t waited_us,
			int *status, unsigned *retry_after, pd_err *e);
/* A caller that drops a checked job without running it (a batch refused whole, a job handed on
 * to the cluster) gives back what the caps counted. Frees j. */
void pd_intake_drop(const pd_intake *in, pd_job *j, bool give_back);
/* Rule 8: pd_sched_submit. On a refusal: the status (the API's overload status; 507 for a full
 * disk), the text (one per reason: pd_admit_text, or the store's own words for its disk) and
 * *retry_after; j is the caller's still. */
pd_admit pd_intake_admit(const pd_intake *in, const pd_api *api, pd_job *j, int *status, unsigned *retry_after,
			 char *why, size_t len);
/* A template a request names is one of in's: else refused (400), naming the templates there are. */
int pd_intake_template(const pd_intake *in, const char *name, pd_err *e);

#endif
