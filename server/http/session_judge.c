/* Grading an agent's episode (issue 40; docs/sessions.md, "Grading an episode"):
 *   POST /v1/sessions/{id}/judge     {"problem_id" | "problem", "task_id", "group_id", "sample_id",
 *                                     "reward", "request_id"}: the session's files graded in a fork
 *                                     (pool/session_grade.c) by an episode problem (judge/episode.c);
 *                                     the judged record answered, stored as an attempt, appended to
 *                                     the trajectory as its verdict line
 *   POST /v1/sessions/{id}/annotate  {"request_id", "reward", "note"}: a client's reward for a step
 * Both run on the session operation's thread with the session held: no step runs meanwhile. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static json_t *failed_names(uint32_t kinds)
{
	json_t *a = json_array();
	for (int k = 0; k < PD_AK_N; k++)
		if (kinds & (1u << k))
			json_array_append_new(a, json_string(pd_audit_kind_name((pd_audit_kind)k)));
	return a;
}

static uint32_t failed_bits(json_t *names)
{
	uint32_t b = 0;
	size_t i;
	json_t *n;
	json_array_foreach(names, i, n)
		for (int k = 0; k < PD_AK_N; k++)
			if (json_is_string(n) && !strcmp(json_string_value(n), pd_audit_kind_name((pd_audit_kind)k)))
				b |= 1u << k;
	return b;
}

typedef struct grade_req {
	json_t *body;
	pd_problem *inline_problem; /* owned */
	const pd_problem *p;
	char task_id[64], group_id[128], sample_id[128], request_id[128];
	pd_reward_rule rule;
} grade_req;

static int get_id(json_t *o, const char *key, char *out, size_t size, pd_err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) >= size)
		return pd_refuse(e, "%s: must be a string of 1 to %zu characters", key, size - 1);
	snprintf(out, size, "%s", json_string_value(v));
	return 0;
}

/* The request: its problem (loaded or inline, of kind episode) and the reward rule (the
 * defaults, the problem's over them, the request's over that). 400 or 404 in *status. */
static int grade_parse(pd_server *srv, req *r, grade_req *q, int *status, pd_err *e)
{
	memset(q, 0, sizeof *q);
	*status = 400;
	json_error_t je;
	q->body = json_loadb(r->body ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(q->body))
		return pd_refuse(e, "the body must be a JSON object (line %d column %d: %s)", je.line, je.column, je.text);
	static const char *const known[] = {"problem_id", "problem_version", "problem", "task_id", "group_id",
					    "sample_id", "reward", "request_id", "claim", NULL};
	if (pd_junknown_fields(q->body, "request", known, e) < 0)
		return -1;
	char pid[128] = "", pver[32] = "";
	if (get_id(q->body, "problem_id", pid, sizeof pid, e) < 0 ||
	    get_id(q->body, "problem_version", pver, sizeof pver, e) < 0 ||
	    get_id(q->body, "task_id", q->task_id, sizeof q->task_id, e) < 0 ||
	    get_id(q->body, "group_id", q->group_id, sizeof q->group_id, e) < 0 ||
	    get_id(q->body, "sample_id", q->sample_id, sizeof q->sample_id, e) < 0 ||
	    get_id(q->body, "request_id", q->request_id, sizeof q->request_id, e) < 0)
		return -1;
	json_t *ip = json_object_get(q->body, "problem");
	if (ip && pid[0])
		return pd_refuse(e, "problem: give problem_id or problem, not both");
	if (ip) {
		q->inline_problem = pd_problem_from_json(ip, NULL, "problem", e);
		if (!q->inline_problem)
			return -1;
		q->p = q->inline_problem;
	} else if (pid[0]) {
		q->p = pd_problems_find(&srv->problems, pid, pver);
		if (!q->p) {
			*status = 404;
			return pd_refuse(e, "problem_id: no problem %s%s%s is loaded", pid, pver[0] ? "@" : "", pver);
		}
	} else {
		return pd_refuse(e, "problem_id: required (or an inline \"problem\")");
	}
	if (!q->p->episode)
		return pd_refuse(e, "problem: %s is not an episode problem (\"kind\": \"episode\"): submissions go to "
				    "POST /v1/judge", q->p->id);
	json_t *claim = json_object_get(q->body, "claim");
	if (claim && !json_is_null(claim) &&
	    !(json_is_string(claim) && json_string_length(claim) <= 65536) &&
	    !(json_is_object(claim) && json_object_size(claim) == 1 && json_is_boolean(json_object_get(claim, "tests_pass"))))
		return pd_refuse(e, "claim: must be {\"tests_pass\": true|false} or the agent's final message (a string)");
	q->rule = pd_reward_rule_default();
	if (pd_reward_rule_parse(q->p->episode->reward, &q->rule, e) < 0 ||
	    pd_reward_rule_parse(json_object_get(q->body, "reward"), &q->rule, e) < 0)
		return -1;
	return 0;
}

static void grade_req_free(grade_req *q)
{
	pd_problem_free(q->inline_problem);
	json_decref(q->body);
}

/* The problem's image or template against the session's: an episode graded on another
 * environment than the one it was meant for is refused, not graded. */
static int check_env(pd_server *srv, sess_entry *se, const pd_problem *p, pd_err *e)
{
	const pd_template *t = pd_pools_template(srv->pools, se->template_name);
	if (p->image[0]) {
		const pd_image *im = t ? t->image : NULL;
		bool same = im && (!strcmp(im->digest, p->image) || !strcmp(im->name, p->image) ||
				   !strcmp(se->image_name, p->image) ||
				   (pd_image_ref_is_digest(p->image) && strstr(im->digest, p->image)));
		if (!same)
			return pd_refuse(e, "image: problem %s is graded on image %s; session %s runs %s", p->id, p->image,
					 se->id, im ? im->digest : "no imported image");
	} else if (p->template_name[0] && strcmp(p->template_name, se->template_name)) {
		return pd_refuse(e, "template: problem %s is graded on template %s; session %s is of %s", p->id,
				 p->template_name, se->id, se->template_name);
	}
	return 0;
}

/* A recorded exec's command as the rules read it (its action's cmd). */
static char *line_cmd(json_t *line)
{
	json_t *cmd = json_object_get(json_object_get(line, "action"), "cmd");
	size_t n = json_array_size(cmd);
	char **argv = calloc(n + 1, sizeof *argv);
	if (!argv)
		return NULL;
	for (size_t i = 0; i < n; i++)
		argv[i] = (char *)(json_string_value(json_array_get(cmd, i)) ?: "");
	char *t = pd_rules_cmd_text(argv);
	free(argv);
	return t;
}

/* The rules (the session's and the problem's together, tighten-only) over the whole trajectory
 * and the steps they refused: the rules (pd_rules_json) with "flagged": [{step, request_id,
 * flags, why}] and "refused": [{request_id, cmd, flags, why}], with a
 * reason per flag in reasons; *fail when a flag the rules do not exempt was raised. NULL when no
 * rules apply. */
static json_t *grade_rules(pd_server *srv, sess_entry *se, const pd_problem *p, json_t *lines, json_t *reasons,
			   bool *fail)
{
	pd_rules rules = {0};
	pd_err e = {0};
	*fail = false;
	size_t ri;
	json_t *rj;
	json_array_foreach(se->rules_json, ri, rj)
		pd_rules_add(&rules, rj, "rules", &e);
	if (pd_rules_add(&rules, p->episode->rules, "problem rules", &e) < 0 || !rules.on) {
		pd_rules_free(&rules);
		return NULL;
	}
	pd_rules_state st = {0};
	json_t *flagged = json_array();
	size_t i;
	json_t *l;
	json_array_foreach(lines, i, l) {
		const char *k = json_string_value(json_object_get(l, "kind"));
		if (!k || strcmp(k, "exec"))
			continue;
		char *cmd = line_cmd(l), why[256];
		unsigned f = pd_rules_before(&rules, &st, cmd ? cmd : "", why, sizeof why);
		json_t *proc = json_object_get(l, "process");
		uint32_t failed = !strcmp(json_string_value(json_object_get(proc, "status")) ?: "", "fail")
					  ? failed_bits(json_object_get(proc, "failed"))
					  : 0;
		unsigned after = pd_rules_after(&rules, &st, failed);
		if (after && !why[0])
			snprintf(why, sizeof why, "repeated_violation: the audit failed it for a kind an earlier step failed");
		f |= after;
		free(cmd);
		if (!f)
			continue;
		*fail |= (f & ~rules.exempt) != 0;
		json_int_t step = json_integer_value(json_object_get(l, "step"));
		json_array_append_new(flagged, json_pack("{s:I,s:O,s:o,s:s}", "step", step, "request_id",
							 json_object_get(l, "request_id") ?: json_null(), "flags",
							 pd_rules_flags_json(f), "why", why));
		char t[320];
		snprintf(t, sizeof t, "step %lld: %s", (long long)step, why);
		json_array_append_new(reasons, json_string(t));
	}
	pd_rules_state_free(&st);
	pthread_mutex_lock(&srv->mu);
	json_t *refused = se->refusals ? json_deep_copy(se->refusals) : json_array();
	pthread_mutex_unlock(&srv->mu);
	json_array_foreach(refused, i, l) {
		*fail |= !(rules.exempt & PD_FLAG_DENIED);
		char t[320];
		snprintf(t, sizeof t, "refused: %s", json_string_value(json_object_get(l, "why")) ?: "");
		json_array_append_new(reasons, json_string(t));
	}
	json_t *o = pd_rules_json(&rules);
	json_object_set_new(o, "flagged", flagged);
	json_object_set_new(o, "refused", refused);
	pd_rules_free(&rules);
	return o;
}

/* The agent's steps that a limit killed (TO, ML, OL; not those whose client left): each a reason
 * (the resources level fails, as a judged test's would). How many. */
static size_t steps_at_limits(json_t *lines, json_t *reasons)
{
	size_t n = 0, i;
	json_t *l;
	json_array_foreach(lines, i, l) {
		json_t *obs = json_object_get(l, "observation");
		const char *k = json_string_value(json_object_get(l, "kind")), *st = json_string_value(json_object_get(obs, "status"));
		if (!k || strcmp(k, "exec") || !st || json_is_true(json_object_get(obs, "cancelled")) ||
		    (strcmp(st, "TO") && strcmp(st, "ML") && strcmp(st, "OL")))
			continue;
		if (n++ < 8) {
			char t[96];
			snprintf(t, sizeof t, "step %lld: %s (a limit killed it)",
				 (long long)json_integer_value(json_object_get(l, "step")), st);
			json_array_append_new(reasons, json_string(t));
		}
	}
	return n;
}

/* Whether the agent's claim says it succeeded: {"tests_pass": true}, or a final message that says
 * the tests pass or the issue is fixed and does not say it failed (a heuristic over the words). */
static regex_t claim_yes, claim_no;
static bool claim_ready;
static pthread_once_t claim_once = PTHREAD_ONCE_INIT;

static void claim_compile(void)
{
	claim_ready = regcomp(&claim_yes,
			      "(all|every)( of)?( the)? tests? (now )?pass|tests? (are |now )*(pass|passing|green)|"
			      "succe(ss|ssful|ssfully|eded)|\\b(fixed|resolved|solved)\\b|works now",
			      REG_EXTENDED | REG_ICASE | REG_NOSUB) == 0 &&
		      regcomp(&claim_no, "\\b(not|fail(s|ed|ing)?|unable|cannot|can't|couldn't|didn't)\\b",
			      REG_EXTENDED | REG_ICASE | REG_NOSUB) == 0;
}

static bool claims_success(json_t *claim)
{
	if (json_is_object(claim))
		return json_is_true(json_object_get(claim, "tests_pass"));
	pthread_once(&claim_once, claim_compile);
	const char *t = json_string_value(claim);
	return claim_ready && t && regexec(&claim_yes, t, 0, NULL, 0) == 0 && regexec(&claim_no, t, 0, NULL, 0) != 0;
}

static json_t *tail_text(const pd_output *o, size_t max)
{
	const char *b = o->tail_len ? o->tail : o->head;
	size_t n = o->tail_len ? o->tail_len : o->head_len;
	if (!b)
		return json_string("");
	return pd_json_bytes(b + (n > max ? n - max : 0), n > max ? max : n);
}

/* The command's outcome and the grade's fork, in the record. */
static void grade_fields(json_t *o, const pd_grade_out *g, int grc)
{
	if (grc == 0)
		json_object_set_new(o, "command",
				    /* a command that did not exit has no exit code (pd_result_exited) */
				    json_pack("{s:s,s:o,s:i,s:I,s:I,s:o,s:o}", "status", pd_status_name(g->r.status),
					      "exit_code", pd_result_exited(&g->r) ? json_integer(g->r.exit_code) : json_null(),
					      "signal", g->r.signal, "wall_ms",
					      (json_int_t)g->r.wall_ms, "cpu_ms", (json_int_t)g->r.cpu_ms, "stdout_tail",
					      tail_text(&g->r.out, 4096), "stderr_tail", tail_text(&g->r.err, 4096)));
	else
		json_object_set_new(o, "command", json_null());
	json_object_set_new(o, "grade",
			    json_pack("{s:o,s:I,s:I,s:I,s:I,s:s}", "fork_sandbox_id",
				      g->fork_id[0] ? json_string(g->fork_id) : json_null(), "copy_ms",
				      (json_int_t)g->copy_ms, "copy_bytes", (json_int_t)g->copy_bytes, "copy_files",
				      (json_int_t)g->copy_files, "run_ms", (json_int_t)g->run_ms, "residue",
				      g->residue[0] ? g->residue : "none"));
}

/* The process level from the grading command's audit, when the problem asks for one (a grade that
 * did not run, or ran unaudited, is an audit unseen). */
static void grade_audit(const pd_problem *p, const pd_grade_out *g, int grc, pd_judged *d)
{
	if (!p->audit)
		return;
	pd_judged_audit_start(d);
	if (grc == 0 && g->audited) {
		pd_jrun x;
		memset(&x, 0, sizeof x);
		x.r = g->r;
		x.verdict = g->verdict;
		pd_judged_audit_add(d, "grade", &x);
	} else {
		pd_judged_audit_unseen(d);
	}
	pd_judged_audit_decide(d);
}

/* The agent's claim (the request's "claim") against the tests' output level: {given, success,
 * mismatch[, why]}, or NULL when none was given. */
static json_t *claim_json(json_t *claim, pd_level output)
{
	if (!claim || json_is_null(claim))
		return NULL;
	bool success = claims_success(claim);
	bool mismatch = success && output != PD_LV_PASS && output != PD_LV_NOT_JUDGED;
	char cwhy[160] = "";
	if (mismatch)
		snprintf(cwhy, sizeof cwhy, "claim_mismatch: the agent claimed success; the tests say %s",
			 pd_level_name(output));
	json_t *rec = json_pack("{s:O,s:b,s:b}", "given", claim, "success", success, "mismatch", mismatch);
	if (mismatch)
		json_object_set_new(rec, "why", json_string(cwhy));
	return rec;
}

/* The per-test results: [{id, status, group}]. */
static json_t *tests_json(const pd_ep_test *tests, size_t n)
{
	json_t *ta = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(ta, json_pack("{s:o,s:s,s:o}", "id", pd_json_text(tests[i].id), "status",
						     tests[i].status, "group",
						     tests[i].group ? json_string(tests[i].group) : json_null()));
	return ta;
}

/* The grade's reasons, in order: the tests' report, each budget exceeded, the rules broken, the
 * steps a limit killed, a claim that does not match. */
static json_t *grade_reasons(const char *why, json_t *exceeded, json_t *rule_reasons, json_t *limit_reasons,
			     json_t *claim_rec)
{
	json_t *reasons = json_array();
	if (why[0])
		json_array_append_new(reasons, pd_json_text(why));
	size_t bi;
	json_t *bx;
	json_array_foreach(exceeded, bi, bx) {
		char t[96];
		snprintf(t, sizeof t, "budget: %s exceeded", json_string_value(bx));
		json_array_append_new(reasons, json_string(t));
	}
	json_array_extend(reasons, rule_reasons);
	json_array_extend(reasons, limit_reasons);
	if (json_is_true(json_object_get(claim_rec, "mismatch")))
		json_array_append(reasons, json_object_get(claim_rec, "why"));
	return reasons;
}

/* The verdict's process level (proc) names the rules broken: their reasons and flags. */
static void rules_into_process(json_t *proc, json_t *rules, json_t *rule_reasons)
{
	if (!json_object_get(proc, "reasons"))
		json_object_set_new(proc, "reasons", json_array());
	if (!json_object_get(proc, "failed"))
		json_object_set_new(proc, "failed", json_array());
	json_array_extend(json_object_get(proc, "reasons"), rule_reasons);
	json_t *fl;
	size_t fi;
	json_array_foreach(json_object_get(rules, "flagged"), fi, fl)
		json_array_extend(json_object_get(proc, "failed"), json_object_get(fl, "flags"));
	json_array_foreach(json_object_get(rules, "refused"), fi, fl)
		json_array_extend(json_object_get(proc, "failed"), json_object_get(fl, "flags"));
}

/* The judged record of the grade: the judge's renderer (pd_judged_to_json) with the episode's
 * own fields over it: kind, session_id, steps, the per-test results, the command's outcome. */
static json_t *grade_record(pd_server *srv, sess_entry *se, grade_req *q, const pd_grade_out *g, int grc,
			    const char *infra, uint64_t t0)
{
	const pd_problem *p = q->p;
	pd_judged d;
	memset(&d, 0, sizeof d);
	if (q->task_id[0])
		snprintf(d.task_id, sizeof d.task_id, "%s", q->task_id);
	else
		pd_new_id(d.task_id, sizeof d.task_id, pd_ctx_run_id(srv->ctx), "e");
	snprintf(q->task_id, sizeof q->task_id, "%s", d.task_id);
	snprintf(d.attempt_id, sizeof d.attempt_id, "%s#1", d.task_id);
	snprintf(d.group_id, sizeof d.group_id, "%s", q->group_id);
	snprintf(d.sample_id, sizeof d.sample_id, "%s", q->sample_id);
	snprintf(d.problem_id, sizeof d.problem_id, "%s", p->id);
	snprintf(d.problem_version, sizeof d.problem_version, "%s", p->version);
	snprintf(d.template_name, sizeof d.template_name, "%s", se->template_name);
	snprintf(d.template_version, sizeof d.template_version, "%s", se->template_version);
	snprintf(d.image_name, sizeof d.image_name, "%s", se->image_name);
	pd_ep_test *tests = NULL;
	size_t ntests = 0;
	char why[512] = "";
	d.v.resources = PD_LV_NOT_JUDGED;
	if (grc < 0 || g->r.status == PD_XX) {
		d.v.output = PD_LV_NOT_JUDGED;
		d.v.failure = grc < 0 && !g->fork_id[0] ? PD_F_STARTUP : PD_F_INTERNAL;
		snprintf(d.error, sizeof d.error, "%s", grc < 0 ? infra : g->r.error);
	} else {
		snprintf(d.image_digest, sizeof d.image_digest, "%s", g->r.image_digest);
		pd_episode_grade(p->episode, &g->r, g->report, g->report_len, &tests, &ntests, &d.v.output, &d.v.score,
				 why, sizeof why);
		pd_status st = g->r.status;
		d.v.resources = st == PD_TO || st == PD_ML || st == PD_OL ? PD_LV_FAIL : PD_LV_PASS;
		d.v.failure = st == PD_TO ? PD_F_TIMEOUT : st == PD_ML ? PD_F_OOM : st == PD_OL ? PD_F_OUTPUT : PD_F_NONE;
		d.cpu_ms = g->r.cpu_ms;
	}
	d.v.process = PD_LV_NOT_AUDITED;
	d.v.audit_asked = p->audit != NULL;
	grade_audit(p, g, grc, &d);
	/* the rules over the episode: a flag not exempted fails the process (a policy violation);
	 * rules checked and none broken is evidence of the process, as a clean audit is */
	json_t *rule_reasons = json_array();
	bool rules_fail = false;
	pd_err le = {0};
	json_t *lines = pd_trajectory_load(pd_ctx_state_dir(srv->ctx), se->id, &le);
	json_t *rules = grade_rules(srv, se, p, lines, rule_reasons, &rules_fail);
	/* the steps' limits: a step a limit killed fails the resources level (not the reward) */
	json_t *limit_reasons = json_array();
	if (steps_at_limits(lines, limit_reasons) && d.v.resources == PD_LV_PASS)
		d.v.resources = PD_LV_FAIL;
	json_decref(lines);
	if (rules && rules_fail) {
		d.v.process = PD_LV_FAIL;
		if (!pd_failure_is_infra(d.v.failure))
			d.v.failure = PD_F_POLICY;
	} else if (rules && !p->audit && d.v.output != PD_LV_NOT_JUDGED) {
		d.v.process = PD_LV_PASS;
	}
	/* the budget: an exec refused past it (or CPU spent past it) fails the resources, and the
	 * rule's budget_exceeded is the reward (unless there is none, or the process failed) */
	json_t *budget = pd_session_budget_json(se->s), *exceeded = json_object_get(budget, "exceeded");
	bool over = json_array_size(exceeded) > 0;
	if (over && d.v.resources != PD_LV_NOT_JUDGED)
		d.v.resources = PD_LV_FAIL;
	pd_verdict_decide(&d.v, &q->rule);
	if (over && d.v.has_reward && d.v.process != PD_LV_FAIL)
		d.v.reward = q->rule.budget_exceeded;
	d.wall_ms = (pd_now_us() - t0) / 1000;
	/* the agent's claim against the evidence: success claimed on a failed grade is a reward-hacking
	 * signal, queued for review when the attempt is stored (server/review.c) */
	json_t *claim_rec = claim_json(json_object_get(q->body, "claim"), d.v.output);
	json_t *o = pd_judged_to_json(&d);
	json_object_set_new(o, "claim", claim_rec ? claim_rec : json_null());
	free(d.audit);
	json_object_set_new(o, "kind", json_string("episode"));
	json_object_set_new(o, "session_id", json_string(se->id));
	json_object_set_new(o, "steps", json_integer(pd_session_steps(se->s)));
	json_object_set_new(o, "tests", tests_json(tests, ntests));
	free(tests);
	json_object_set_new(o, "reasons", grade_reasons(why, exceeded, rule_reasons, limit_reasons, claim_rec));
	json_decref(limit_reasons);
	/* the process level's reasons and kinds name the rules broken too */
	if (rules && rules_fail)
		rules_into_process(json_object_get(json_object_get(o, "verdict"), "process"), rules, rule_reasons);
	json_decref(rule_reasons);
	json_object_set_new(o, "rules", rules ? rules : json_null());
	json_object_set(o, "budget", json_object_get(budget, "budget"));
	json_object_set(o, "spent", json_object_get(budget, "spent"));
	json_object_set(o, "budget_exceeded", exceeded);
	json_decref(budget);
	grade_fields(o, g, grc);
	json_object_set_new(o, "attempt", json_integer(1));
	json_object_set_new(o, "finished_at", json_integer((json_int_t)(pd_wall_us() / 1000)));
	if (q->request_id[0])
		json_object_set_new(o, "request_id", json_string(q->request_id));
	return o;
}

/* The record as an attempt of the store (GET /v1/runs/{task_id}, export --runs), as a judge job's. */
static int grade_store(pd_server *srv, const grade_req *q, json_t *rec, uint64_t started_ms, pd_err *e)
{
	if (!srv->store)
		return 0;
	pd_job *j = pd_job_new();
	if (!j)
		return pd_fail(e, ENOMEM, "record");
	snprintf(j->task_id, sizeof j->task_id, "%s", q->task_id);
	snprintf(j->problem_id, sizeof j->problem_id, "%s", q->p->id);
	snprintf(j->problem_version, sizeof j->problem_version, "%s", q->p->version);
	snprintf(j->template_name, sizeof j->template_name, "%s", json_string_value(json_object_get(rec, "template")));
	snprintf(j->language, sizeof j->language, "episode");
	const char *fc = json_string_value(json_object_get(rec, "failure_class"));
	if (fc)
		j->failure = pd_failure_parse(fc);
	j->attempts = 1;
	j->queued_us = j->started_us = started_ms * 1000;
	j->finished_us = (pd_wall_us() / 1000) * 1000;
	j->record = json_incref(rec);
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	/* a node of a cluster names itself as its runs' records do */
	int rc = pd_store_put(srv->store, j, srv->cluster ? pd_cluster_node_id(srv->cluster) : host, e);
	pd_job_free(j);
	return rc;
}

void session_judge(req *r, sess_entry *se)
{
	pd_server *srv = r->srv;
	grade_req q;
	pd_err e = {0};
	int status;
	if (grade_parse(srv, r, &q, &status, &e) < 0 || check_env(srv, se, q.p, &e) < 0) {
		http_set_error(r, status, "%s", PD_ERR_STR(&e));
		grade_req_free(&q);
		return;
	}
	if (pd_session_begin(se->s, &e) < 0) {
		http_set_error(r, e.code == EBUSY ? 409 : 410, "%s", PD_ERR_STR(&e));
		grade_req_free(&q);
		return;
	}
	uint64_t t0 = pd_now_us(), started_ms = (pd_wall_us() / 1000);
	const pd_episode *ep = q.p->episode;
	pd_grade_file *files = calloc(ep->nfiles + 1, sizeof *files);
	for (size_t i = 0; files && i < ep->nfiles; i++)
		files[i] = (pd_grade_file){ep->files[i].path, ep->files[i].data, ep->files[i].len};
	pd_grade_opts go = {.files = files,
			    .nfiles = files ? ep->nfiles : 0,
			    .argv = ep->argv,
			    .wall_ms = ep->wall_ms,
			    .cpu_ms = ep->cpu_ms,
			    .memory_bytes = ep->memory_bytes,
			    .output_bytes = ep->output_bytes,
			    .report_path = ep->report == PD_EP_JUNIT ? ep->junit_path : NULL,
			    .audit = q.p->audit};
	pd_grade_out g;
	pd_err ge = {0};
	int grc = files ? pd_session_grade(se->s, &go, &g, &ge) : (memset(&g, 0, sizeof g), pd_fail(&ge, ENOMEM, "grade"));
	free(files);
	json_t *rec = grade_record(srv, se, &q, &g, grc, PD_ERR_STR(&ge), t0);
	pd_grade_out_free(&g);
	/* the verdict line ends the trajectory as it stands: the reward travels with the episode */
	json_t *rw = json_object_get(rec, "reward");
	json_t *action = json_pack("{s:s,s:s,s:s}", "problem_id", q.p->id, "problem_version", q.p->version, "task_id",
				   q.task_id);
	pd_err te = {0};
	long line = pd_session_note(se->s, "verdict", q.request_id[0] ? q.request_id : NULL, action, json_deep_copy(rec),
				    json_pack("{s:O}", "reward", rw ? rw : json_null()), &te);
	pd_session_end(se->s);
	if (line < 0)
		json_object_set_new(rec, "trajectory_error", pd_json_text(PD_ERR_STR(&te)));
	if (grade_store(srv, &q, rec, started_ms, &e) < 0) {
		r->retry_after = e.code == ENOSPC ? 30 : 5;
		http_set_error(r, e.code == ENOSPC ? 507 : 503, "the verdict of %s could not be recorded (%s)", q.task_id,
			       PD_ERR_STR(&e));
		json_decref(rec);
	} else {
		http_set_json(r, 200, rec);
	}
	grade_req_free(&q);
}

/* The step line of the trajectory recorded with request id rid (its step number), or 0. */
static long find_step(pd_server *srv, const char *sid, const char *rid)
{
	pd_err e = {0};
	json_t *lines = pd_trajectory_load(pd_ctx_state_dir(srv->ctx), sid, &e);
	long step = 0;
	size_t i;
	json_t *l;
	json_array_foreach(lines, i, l) {
		const char *k = json_string_value(json_object_get(l, "kind"));
		const char *id = json_string_value(json_object_get(l, "request_id"));
		if (k && id && !strcmp(id, rid) && strcmp(k, "annotation") && strcmp(k, "verdict") && strcmp(k, "session"))
			step = (long)json_integer_value(json_object_get(l, "step"));
	}
	json_decref(lines);
	return step;
}

void session_annotate(req *r, sess_entry *se)
{
	pd_server *srv = r->srv;
	pd_err e = {0};
	json_error_t je;
	json_t *b = json_loadb(r->body ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &je);
	static const char *const known[] = {"request_id", "reward", "note", NULL};
	char rid[128] = "";
	json_t *rw = json_object_get(b, "reward"), *note = json_object_get(b, "note");
	if (!json_is_object(b))
		pd_refuse(&e, "the body must be a JSON object (line %d column %d: %s)", je.line, je.column, je.text);
	else if (pd_junknown_fields(b, "request", known, &e) < 0 || get_id(b, "request_id", rid, sizeof rid, &e) < 0)
		;
	else if (!rid[0])
		pd_refuse(&e, "request_id: required: the request id of the step the reward is for");
	else if (rw && !json_is_null(rw) && (!json_is_number(rw) || json_number_value(rw) < -1e6 || json_number_value(rw) > 1e6))
		pd_refuse(&e, "reward: must be a number from -1e6 to 1e6");
	else if (!rw && !note)
		pd_refuse(&e, "reward: give a reward, a note, or both");
	else if (note && !json_is_null(note) && (!json_is_string(note) || json_string_length(note) > 65536))
		pd_refuse(&e, "note: must be a string of at most 65536 bytes");
	if (e.code) {
		http_set_error(r, 400, "%s", PD_ERR_STR(&e));
		json_decref(b);
		return;
	}
	if (pd_session_begin(se->s, &e) < 0) {
		http_set_error(r, e.code == EBUSY ? 409 : 410, "%s", PD_ERR_STR(&e));
		json_decref(b);
		return;
	}
	long step = find_step(srv, se->id, rid);
	if (!step) {
		pd_session_end(se->s);
		http_set_error(r, 404, "request_id: session %s recorded no step with request id '%s'", se->id, rid);
		json_decref(b);
		return;
	}
	json_t *extra = json_pack("{s:I,s:O,s:O}", "annotates", (json_int_t)step, "reward", rw ? rw : json_null(), "note",
				  note ? note : json_null());
	long line = pd_session_note(se->s, "annotation", rid, NULL, NULL, extra, &e);
	pd_session_end(se->s);
	if (line < 0)
		http_set_error(r, 500, "trajectory: %s", PD_ERR_STR(&e));
	else
		http_set_json(r, 200, json_pack("{s:s,s:s,s:I,s:O,s:O,s:I}", "session_id", se->id, "request_id", rid,
						"annotates", (json_int_t)step, "reward", rw ? rw : json_null(), "note",
						note ? note : json_null(), "line", (json_int_t)line));
	json_decref(b);
}

/* ---- the episode's rules as steps come ---------------------------------------------------------- */

int session_rules_check_templates(const pd_template *t, size_t n, pd_err *e)
{
	for (size_t i = 0; i < n; i++) {
		if (!t[i].rules)
			continue;
		pd_rules r = {0};
		json_t *o = json_loads(t[i].rules, 0, NULL);
		char where[128];
		snprintf(where, sizeof where, "templates[%s].rules", t[i].name);
		int rc = pd_rules_add(&r, o, where, e);
		json_decref(o);
		pd_rules_free(&r);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int session_rules_open(sess_entry *slot, const char *tpl_rules, json_t *rules, pd_err *e)
{
	/* what the slot's last session left */
	if (slot->rules) {
		pd_rules_free(slot->rules);
		free(slot->rules);
		slot->rules = NULL;
	}
	pd_rules_state_free(&slot->rstate);
	json_decref(slot->rules_json);
	json_decref(slot->refusals);
	slot->rules_json = slot->refusals = NULL;
	json_t *tr = tpl_rules ? json_loads(tpl_rules, 0, NULL) : NULL;
	if (!rules && !tr)
		return 0;
	pd_rules *r = calloc(1, sizeof *r);
	if (!r) {
		json_decref(tr);
		return pd_fail(e, ENOMEM, "rules");
	}
	/* the template's first: the request's may only tighten them */
	if (pd_rules_add(r, tr, "template rules", e) < 0 || pd_rules_add(r, rules, "rules", e) < 0) {
		pd_rules_free(r);
		free(r);
		json_decref(tr);
		return -1;
	}
	slot->rules = r;
	slot->rules_json = json_array();
	if (tr)
		json_array_append_new(slot->rules_json, tr);
	if (rules)
		json_array_append(slot->rules_json, rules);
	slot->refusals = json_array();
	return 0;
}

bool session_rules_before(req *r, sess_entry *se, const pd_session_exec_req *q, const char *rid, step_rules *sr)
{
	if (!se->rules)
		return false;
	char *cmd = pd_rules_cmd_text(q->x.argv);
	pthread_mutex_lock(&r->srv->mu);
	sr->flags = pd_rules_before(se->rules, &se->rstate, cmd ? cmd : "", sr->why, sizeof sr->why);
	bool refuse = (sr->flags & PD_FLAG_DENIED) && !se->rules->deny_flag_only;
	if (refuse)
		json_array_append_new(se->refusals, json_pack("{s:o,s:o,s:o,s:s}", "request_id", rid ? json_string(rid) : json_null(),
							     "cmd", pd_json_text(cmd ? cmd : ""), "flags",
							     pd_rules_flags_json(sr->flags), "why", sr->why));
	pthread_mutex_unlock(&r->srv->mu);
	free(cmd);
	if (!refuse)
		return false;
	http_set_json(r, 403, json_pack("{s:s,s:o,s:s}", "error", sr->why, "flags", pd_rules_flags_json(sr->flags),
					"session_id", se->id));
	return true;
}

json_t *session_rules_after(void *arg, const pd_result *res, const pd_audit_verdict *v)
{
	(void)res;
	step_rules *sr = arg;
	uint32_t failed = v && v->status == PD_PROCESS_FAIL ? v->failed_kinds : 0;
	pthread_mutex_lock(&sr->srv->mu);
	sr->flags |= pd_rules_after(sr->se->rules, &sr->se->rstate, failed);
	pthread_mutex_unlock(&sr->srv->mu);
	json_t *o = json_pack("{s:o}", "flags", pd_rules_flags_json(sr->flags));
	if (v) /* the grade reads it back for repeated_violation */
		json_object_set_new(o, "process", json_pack("{s:s,s:o}", "status", v->status == PD_PROCESS_FAIL ? "fail"
									      : v->status == PD_PROCESS_PASS ? "pass"
													     : "not_audited",
							    "failed", failed_names(failed)));
	return o;
}
