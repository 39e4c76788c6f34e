/* POST /v1/judge's body (and a judge line of `paddock run`): a problem reference or an inline
 * problem, a submission, ids, scheduling and the judging options. Parsed apart from the HTTP
 * plumbing so that the fuzzer reaches it. Errors name the field. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CODE_MAX (4u << 20)

static int get_id(json_t *o, const char *key, char *out, size_t size, pd_err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || json_string_length(v) >= size || memchr(json_string_value(v), 0, json_string_length(v)))
		return pd_refuse(e, "%s: must be a string of at most %zu characters", key, size - 1);
	snprintf(out, size, "%s", json_string_value(v));
	return 0;
}

static int check_known(json_t *o, pd_err *e)
{
	static const char *const known[] = {"problem_id", "problem_version", "problem", "language", "code",
					    "task_id", "group_id", "sample_id", "priority", "deadline_ms", "cache",
					    "stop_at_first_failure", "reward", "audit", "image", "isolation", NULL};
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool ok = false;
		for (int i = 0; known[i] && !ok; i++)
			ok = !strcmp(k, known[i]);
		if (!ok)
			return pd_refuse(e, "%s: unknown field", k);
	}
	return 0;
}

/* "image" and "isolation": what the candidate runs on */
static int parse_target(json_t *o, pd_judge_req *q, pd_err *e)
{
	json_t *im = json_object_get(o, "image");
	if (im && !json_is_null(im)) {
		if (!json_is_string(im) || !json_string_length(im) || json_string_length(im) >= sizeof q->opts.image ||
		    !pd_image_is_ref(json_string_value(im)))
			return pd_refuse(e, "image: must be an imported image's name or digest of at most %zu characters, "
					    "not a path", sizeof q->opts.image - 1);
		snprintf(q->opts.image, sizeof q->opts.image, "%s", json_string_value(im));
	}
	/* whether the template allows the tier is the edge's check (pd_judge_check_isolation): the
	 * template is known once the problem is */
	json_t *iso = json_object_get(o, "isolation");
	if (iso && !json_is_null(iso)) {
		if (!json_is_string(iso) || pd_isolation_parse(json_string_value(iso)) < 0)
			return pd_refuse(e, "isolation: must be container or gvisor");
		snprintf(q->opts.isolation, sizeof q->opts.isolation, "%s", json_string_value(iso));
	}
	return 0;
}

/* the ids, and the problem: a reference or an inline one (q->problem, NULL on failure) */
static int parse_problem(json_t *o, pd_judge_req *q, pd_err *e)
{
	if (get_id(o, "problem_id", q->problem_id, sizeof q->problem_id, e) < 0 ||
	    get_id(o, "problem_version", q->problem_version, sizeof q->problem_version, e) < 0 ||
	    get_id(o, "language", q->language, sizeof q->language, e) < 0 ||
	    get_id(o, "task_id", q->task_id, sizeof q->task_id, e) < 0 ||
	    get_id(o, "group_id", q->group_id, sizeof q->group_id, e) < 0 ||
	    get_id(o, "sample_id", q->sample_id, sizeof q->sample_id, e) < 0)
		return -1;
	json_t *prob = json_object_get(o, "problem");
	if (prob && !json_is_null(prob)) {
		if (q->problem_id[0])
			return pd_refuse(e, "problem: give problem_id or an inline problem, not both");
		q->problem = pd_problem_from_json(prob, NULL, "problem", e);
		if (!q->problem)
			return -1;
		/* an inline checker program is built per request: that is the judge's to do, not here */
	} else if (!q->problem_id[0]) {
		return pd_refuse(e, "problem_id: required (or an inline problem)");
	}
	return 0;
}

/* the submission: its language and code (q->body holds the text q->code points into) */
static int parse_submission(json_t *o, pd_judge_req *q, pd_err *e)
{
	if (!q->language[0])
		return pd_refuse(e, "language: required");
	if (!pd_language_find(q->language)) {
		char names[256];
		pd_language_names(names, sizeof names);
		return pd_refuse(e, "language: '%s' is not a language paddock knows (%s)", q->language, names);
	}
	json_t *code = json_object_get(o, "code");
	if (!json_is_string(code) || json_string_length(code) > CODE_MAX)
		return pd_refuse(e, "code: required, a string of at most %u bytes", CODE_MAX);
	q->code = json_string_value(code);
	q->code_len = json_string_length(code);
	q->body = json_incref(o);
	return 0;
}

/* "priority" and "deadline_ms" */
static int parse_schedule(json_t *o, pd_judge_req *q, pd_err *e)
{
	json_t *p = json_object_get(o, "priority");
	if (p && !json_is_null(p)) {
		const char *ps = json_string_value(p);
		if (ps && !strcmp(ps, "high"))
			q->priority = PD_PRIO_HIGH;
		else if (ps && !strcmp(ps, "normal"))
			q->priority = PD_PRIO_NORMAL;
		else if (ps && !strcmp(ps, "low"))
			q->priority = PD_PRIO_LOW;
		else
			return pd_refuse(e, "priority: must be high, normal or low");
	}
	json_t *d = json_object_get(o, "deadline_ms");
	if (d && !json_is_null(d)) {
		if (!json_is_integer(d) || json_integer_value(d) <= 0 || json_integer_value(d) > 31536000000LL)
			return pd_refuse(e, "deadline_ms: must be a positive whole number of milliseconds, at most a year");
		q->deadline_ms = (uint64_t)json_integer_value(d);
	}
	return 0;
}

/* A true/false field: 1 with *out when it is given, 0 when null or absent, or -1 refused. */
static int parse_bool(json_t *o, const char *key, bool *out, pd_err *e)
{
	json_t *b = json_object_get(o, key);
	if (!b || json_is_null(b))
		return 0;
	if (!json_is_boolean(b))
		return pd_refuse(e, "%s: must be true or false", key);
	*out = json_is_true(b);
	return 1;
}

/* "cache" and "stop_at_first_failure" (not given: the problem's) */
static int parse_switches(json_t *o, pd_judge_req *q, pd_err *e)
{
	bool cache = true, stop = false;
	int rc = parse_bool(o, "cache", &cache, e);
	if (rc > 0)
		q->opts.no_cache = !cache;
	if (rc >= 0 && (rc = parse_bool(o, "stop_at_first_failure", &stop, e)) > 0)
		q->opts.stop_at_first_failure = stop;
	return rc < 0 ? -1 : 0;
}

/* the audit is on unless the request says "audit": false: without it no judged submission can be
 * usable (its process level stays not_audited), and its cost is small (docs/judge.md) */
static int parse_audit(json_t *o, pd_judge_req *q, pd_err *e)
{
	json_t *au = json_object_get(o, "audit");
	bool dflt = !au || json_is_null(au);
	if (!dflt && json_is_false(au))
		return 0;
	if (!dflt && !json_is_true(au) && !json_is_object(au))
		return pd_refuse(e, "audit: must be true, false or a policy object");
	q->opts.audit_default = dflt;
	char *text = dflt ? strdup("true") : json_dumps(au, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return pd_fail(e, ENOMEM, "audit");
	q->audit = pd_audit_policy_parse(text, strlen(text), "audit", "/work", e);
	free(text);
	if (!q->audit) {
		pd_jrefusal(e);
		return -1;
	}
	q->opts.audit = q->audit;
	return 0;
}

int pd_judge_req_parse(json_t *o, pd_judge_req *q, pd_err *e)
{
	memset(q, 0, sizeof *q);
	pd_judge_opts_default(&q->opts);
	q->priority = PD_PRIO_NORMAL;
	if (!json_is_object(o))
		return pd_refuse(e, "request: must be a JSON object");
	if (check_known(o, e) < 0 || parse_target(o, q, e) < 0 || parse_problem(o, q, e) < 0)
		return -1;
	/* from here on, what was parsed is freed on a refusal */
	if (parse_submission(o, q, e) < 0 || parse_schedule(o, q, e) < 0 || parse_switches(o, q, e) < 0 ||
	    pd_reward_rule_parse(json_object_get(o, "reward"), &q->opts.rule, e) < 0 || parse_audit(o, q, e) < 0) {
		pd_judge_req_free(q);
		return -1;
	}
	return 0;
}

void pd_judge_req_free(pd_judge_req *q)
{
	pd_problem_free(q->problem);
	pd_audit_policy_free(q->audit);
	q->audit = NULL;
	q->opts.audit = NULL;
	json_decref(q->body);
	q->problem = NULL;
	q->body = NULL;
	q->code = NULL;
}
