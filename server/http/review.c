/* The review queue over HTTP: GET /v1/review?state=pending|confirmed|dismissed|all (default
 * pending) lists the items; POST /v1/review/{id} {"decision":"confirm"|"dismiss","note":"..."}
 * records a reviewer's decision (once: a decided item answers 409). The queue itself is in the
 * store (server/review.c). And the per-problem controls that follow from it: the risk list
 * (GET /v1/review/risk; DELETE /v1/review/risk/{problem_id} takes a problem off it); the intake
 * (server/intake.c) applies it, and the submission caps, to every run and judge job. */
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
