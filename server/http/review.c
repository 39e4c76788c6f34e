/* The review queue over HTTP: GET /v1/review?state=pending|confirmed|dismissed|all (default
 * pending) lists the items; POST /v1/review/{id} {"decision":"confirm"|"dismiss","note":"..."}
 * records a reviewer's decision (once: a decided item answers 409). The queue itself is in the
 * store (server/review.c). And the per-problem controls that follow from it: the risk list
 * (GET /v1/review/risk; DELETE /v1/review/risk/{problem_id} takes a problem off it) and the
 * submission caps, both applied to judge jobs as they are made (judge_controls); the risk list
 * applies to runs too (run_controls). */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void review_list_http(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	const char *state = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "state");
	if (!state || !state[0])
		state = "pending";
	if (strcmp(state, "pending") && strcmp(state, "confirmed") && strcmp(state, "dismissed") && strcmp(state, "all")) {
		http_set_error(r, 400, "state: '%.64s' is not pending, confirmed, dismissed or all", state);
		return;
	}
	pd_err e = {0};
	json_t *items = pd_store_review_list(r->srv->store, state, &e);
	if (!items) {
		http_set_error(r, 500, "%s", PD_ERR_STR(&e));
		return;
	}
	uint64_t pending, confirmed, dismissed;
	pd_store_review_stats(r->srv->store, &pending, &confirmed, &dismissed);
	json_t *o = json_object();
	json_object_set_new(o, "count", json_integer((json_int_t)json_array_size(items)));
	json_object_set_new(o, "pending", json_integer((json_int_t)pending));
	json_object_set_new(o, "items", items);
	http_set_json(r, 200, o);
}

void review_decide_http(req *r, const char *url, const char *method)
{
	(void)method;
	const char *id = url + strlen("/v1/review/");
	char *end;
	errno = 0;
	long long n = strtoll(id, &end, 10);
	if (!id[0] || *end || errno || n <= 0) {
		http_set_error(r, 404, "no such endpoint: POST %s", url);
		return;
	}
	json_error_t je;
	json_t *body = json_loadb(r->body ? r->body : "", r->len, 0, &je);
	const char *decision = json_string_value(json_object_get(body, "decision"));
	json_t *note = json_object_get(body, "note");
	if (!json_is_object(body) || !decision || (strcmp(decision, "confirm") && strcmp(decision, "dismiss"))) {
		json_decref(body);
		http_set_error(r, 400, "decision: must be \"confirm\" or \"dismiss\"");
		return;
	}
	if (note && !json_is_string(note) && !json_is_null(note)) {
		json_decref(body);
		http_set_error(r, 400, "note: must be a string");
		return;
	}
	pd_err e = {0};
	json_t *item = NULL;
	int rc = pd_store_review_decide(r->srv->store, n, decision, json_string_value(note), &item, &e);
	json_decref(body);
	if (rc < 0) {
		http_set_error(r, e.code == ENOENT ? 404 : e.code == EALREADY ? 409 : 500, "%s", PD_ERR_STR(&e));
		return;
	}
	http_set_json(r, 200, item);
}

void review_risk_http(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	pd_err e = {0};
	json_t *items = pd_store_risk_list(r->srv->store, &e);
	if (!items) {
		http_set_error(r, 500, "%s", e.msg);
		return;
	}
	json_t *o = json_object();
	json_object_set_new(o, "count", json_integer((json_int_t)json_array_size(items)));
	json_object_set_new(o, "problems", items);
	http_set_json(r, 200, o);
}

void review_risk_remove_http(req *r, const char *url, const char *method)
{
	(void)method;
	const char *id = url + strlen("/v1/review/risk/");
	pd_err e = {0};
	if (!id[0] || strchr(id, '/')) {
		http_set_error(r, 404, "no such endpoint: DELETE %s", url);
		return;
	}
	if (pd_store_risk_remove(r->srv->store, id, &e) < 0) {
		http_set_error(r, e.code == ENOENT ? 404 : 500, "%s", e.msg);
		return;
	}
	http_set_json(r, 200, json_pack("{s:s,s:b}", "problem_id", id, "removed", 1));
}

bool run_controls(pd_server *srv, pd_job *j, int *status, pd_err *e)
{
	const char *key = pd_job_problem_key(j);
	if (!key[0] || !pd_store_risky(srv->store, key))
		return true;
	/* no egress: a network that reaches out is refused rather than quietly changed (the caller
	 * asked for it; a run without it may not be what it meant) */
	const pd_template *t = pd_pools_template(srv->pools, j->template_name);
	const char *net = j->network[0] ? j->network : t ? pd_net_name(t->net) : "";
	if (!strcmp(net, "allowlist") || !strcmp(net, "host")) {
		*status = 403;
		pd_refuse(e, "network: problem_id %s is on the risk list (confirmed hacks): no egress, not '%s'", key,
			  net);
		return false;
	}
	/* the defaults of "audit": true when the request asked for none (the template's policy is
	 * merged over it when the job starts), with egress denied over whatever it asked */
	if (!j->audit) {
		pd_err pe = {0};
		j->audit = pd_audit_policy_parse("true", 4, "audit", j->cwd ? j->cwd : "/work", &pe);
		if (!j->audit) {
			*status = 500;
			pd_fail(e, ENOMEM, "audit");
			return false;
		}
	}
	if (pd_judge_policy_risky(&j->audit, e) < 0) {
		*status = e->code == ENOMEM ? 500 : 400;
		return false;
	}
	j->risk_list = true;
	return true;
}

bool judge_controls(pd_server *srv, pd_job *j, int *status, unsigned *retry_after, pd_err *e)
{
	*retry_after = 0;
	const char *key = pd_job_problem_key(j);
	if (!pd_caps_take(srv->caps, key, 1, retry_after)) {
		*status = 429;
		pd_refuse(e, "problem_id: %s has had its %u submissions in %u s (--problem-submit-max): retry in %u s",
			  key, pd_caps_max(srv->caps), pd_caps_window_s(srv->caps), *retry_after);
		return false;
	}
	if (pd_store_risky(srv->store, key))
		pd_judge_job_risky(j);
	return true;
}
