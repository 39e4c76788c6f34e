/* POST /v1/sessions/<id>/snapshot {"name", "ttl", "max_bytes"}: the session's files as a named,
 * immutable snapshot (pool/snapshot.c), from which POST /v1/sessions {"from_snapshot", "count"}
 * forks sessions. Runs on the session operation's thread (a copy of the session's files). */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <string.h>

void session_snapshot(req *r, sess_entry *se)
{
	json_error_t je;
	json_t *b = r->len ? json_loadb(r->body, r->len, 0, &je) : json_object();
	if (!json_is_object(b)) {
		json_decref(b);
		http_set_error(r, 400, "request body must be a JSON object");
		return;
	}
	json_t *name = json_object_get(b, "name"), *ttl = json_object_get(b, "ttl"), *max = json_object_get(b, "max_bytes");
	const char *why = NULL;
	if (name && !json_is_null(name) && !json_is_string(name))
		why = "name: must be a string";
	else if (ttl && !json_is_null(ttl) && (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
					       json_integer_value(ttl) > 30 * 86400))
		why = "ttl: must be a whole number of seconds from 1 to 2592000 (30 days)";
	else if (max && !json_is_null(max) && (!json_is_integer(max) || json_integer_value(max) < 1))
		why = "max_bytes: must be a positive whole number";
	if (why) {
		json_decref(b);
		http_set_error(r, 400, "%s", why);
		return;
	}
	pd_err e = {0};
	const char *rid = r->q.step_id[0] ? r->q.step_id : r->q.request_id[0] ? r->q.request_id : NULL;
	json_t *res = pd_session_snapshot(se->s, json_is_string(name) ? json_string_value(name) : NULL,
					  ttl ? (uint64_t)json_integer_value(ttl) : 0,
					  max ? (uint64_t)json_integer_value(max) : 0, rid, &e);
	json_decref(b);
	if (!res) {
		int code = e.code == EBUSY || e.code == EEXIST ? 409 : e.code == ESRCH ? 410 : e.code == EINVAL ? 400
			 : e.code == EFBIG ? 413 : e.code == ENOSPC ? 507 : 500;
		http_set_error(r, code, "%s", PD_ERR_STR(&e));
		return;
	}
	http_set_json(r, 201, res);
}
