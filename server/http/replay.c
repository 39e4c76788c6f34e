/* Replay (issue 23): POST /v1/sessions/<id>/replay replays that session's trajectory (ended or not);
 * POST /v1/replay replays the trajectory in the body (its JSON lines, e.g. a file exported from
 * another daemon). `paddock replay` is a client of the latter.
 *
 * The recorded actions are re-executed in a fresh session of the recorded template, each as the
 * request a client would make (session_dispatch: the same parsing and the same trajectory lines),
 * with the recorded request ids. Replayed: exec (command, cwd, stdin when it was recorded whole,
 * time and no-output limits), file writes (content when recorded: up to 64 KiB), deletes, reads and
 * resets. Compared: status, exit code, signal, stdout and stderr as kept, the HTTP status of file
 * steps, a read's digest, and the files each step changed (path, kind of change, size, digest;
 * never /proc, /dev or /sys, which no step changes).
 * Not compared: times, peaks, sandbox ids. Uploads and downloads (their archives are not recorded),
 * snapshots, and steps whose input was too large to record are reported as not replayed.
 *
 * The answer: {"trajectory_id", "replay_trajectory_id", "replayed", "matched", "not_replayed",
 * "first_divergent_step", "steps": [{"step", "kind", "request_id", "replayed", "match", "diffs" |
 * "why"}]}. The replay's session is closed at the end; its trajectory stays. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool same(json_t *a, json_t *b)
{
	return json_equal(a ? a : json_null(), b ? b : json_null());
}

/* Whether path is one no step can change: the mount points of /proc, /dev and /sys (and what is
 * under them), which the sandbox's build makes. A trajectory recorded before the upper listing
 * left them out (on an image without them) names them at its first reset; compared, they would be
 * a divergence of the sandbox's history (fresh or reused), not of the steps. */
static bool not_a_step_change(const char *path)
{
	static const char *const mounts[] = {"/proc", "/dev", "/sys"};
	for (size_t i = 0; path && i < sizeof mounts / sizeof mounts[0]; i++) {
		size_t n = strlen(mounts[i]);
		if (!strncmp(path, mounts[i], n) && (path[n] == 0 || path[n] == '/'))
			return true;
	}
	return false;
}

/* the files a step changed, as comparable text entries "path change size sha256" */
static json_t *changes(json_t *line)
{
	json_t *out = json_array(), *f;
	size_t i;
	json_array_foreach(json_object_get(line, "files_changed"), i, f) {
		if (not_a_step_change(json_string_value(json_object_get(f, "path"))))
			continue;
		const char *digest = json_string_value(json_object_get(f, "sha256"));
		char *t = NULL;
		if (asprintf(&t, "%s %s %lld %s", json_string_value(json_object_get(f, "path")),
			     json_string_value(json_object_get(f, "change")),
			     (long long)json_integer_value(json_object_get(f, "size")), digest ? digest : "-") >= 0)
			json_array_append_new(out, json_string(t));
		free(t);
	}
	return out;
}

static void diff_field(json_t *diffs, const char *name, json_t *a, json_t *b)
{
	if (same(a, b))
		return;
	char *ta = json_dumps(a ? a : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
	char *tb = json_dumps(b ? b : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
	char *t = NULL;
	if (asprintf(&t, "%s: recorded %.120s, replayed %.120s", name, ta ? ta : "?", tb ? tb : "?") >= 0)
		json_array_append_new(diffs, json_string(t));
	free(t);
	free(ta);
	free(tb);
}

/* The request a client would make for recorded step l: r's method, operation, query and body.
 * false (why says) when the step cannot be replayed. */
static bool request_of(json_t *l, req *r, char *op, size_t oplen, char *why, size_t wlen)
{
	const char *skind = json_string_value(json_object_get(l, "kind"));
	json_t *a = json_object_get(l, "action");
	const char *fpath = json_string_value(json_object_get(a, "path"));
	const char *rid = json_string_value(json_object_get(l, "request_id"));
	if (rid)
		pd_session_query_set(&r->q, "X-Request-Id", rid, strlen(rid));
	if (!strcmp(skind, "exec")) {
		json_t *stdin_bytes = json_object_get(a, "stdin_bytes");
		if (stdin_bytes && json_is_null(json_object_get(a, "stdin"))) {
			snprintf(why, wlen, "its stdin (%lld bytes) was too large to be recorded",
				 (long long)json_integer_value(stdin_bytes));
			return false;
		}
		json_t *body = json_pack("{s:O}", "cmd", json_object_get(a, "cmd"));
		if (json_is_string(json_object_get(a, "cwd")))
			json_object_set(body, "cwd", json_object_get(a, "cwd"));
		if (json_is_string(json_object_get(a, "stdin")))
			json_object_set(body, "stdin", json_object_get(a, "stdin"));
		if (json_is_integer(json_object_get(a, "timeout_ms")))
			json_object_set_new(body, "timeout",
					    json_real((double)json_integer_value(json_object_get(a, "timeout_ms")) / 1000));
		if (json_is_integer(json_object_get(a, "idle_timeout_ms")))
			json_object_set_new(body, "idle_timeout",
					    json_real((double)json_integer_value(json_object_get(a, "idle_timeout_ms")) / 1000));
		if (rid)
			json_object_set_new(body, "request_id", json_string(rid));
		if (json_is_string(json_object_get(l, "agent"))) /* run as the agent it was, one step at a time */
			json_object_set(body, "agent", json_object_get(l, "agent"));
		r->body = json_dumps(body, JSON_COMPACT);
		json_decref(body);
		r->len = r->body ? strlen(r->body) : 0;
		snprintf(r->method, sizeof r->method, "POST");
		snprintf(op, oplen, "exec");
		return r->body != NULL || (snprintf(why, wlen, "out of memory"), false);
	}
	if (!strcmp(skind, "write") || !strcmp(skind, "delete") || !strcmp(skind, "read")) {
		if (!fpath) {
			snprintf(why, wlen, "its path is not recorded");
			return false;
		}
		pd_session_query_set(&r->q, "path", fpath, strlen(fpath));
		snprintf(op, oplen, "files");
		if (!strcmp(skind, "write")) {
			const char *b64 = json_string_value(json_object_get(a, "content_b64"));
			if (!b64 || pd_b64_decode(b64, &r->body, &r->len) < 0) {
				snprintf(why, wlen, "its content was too large to be recorded");
				return false;
			}
			snprintf(r->method, sizeof r->method, "PUT");
		} else {
			snprintf(r->method, sizeof r->method, "%s", !strcmp(skind, "delete") ? "DELETE" : "GET");
		}
		return true;
	}
	if (!strcmp(skind, "reset")) {
		snprintf(r->method, sizeof r->method, "POST");
		snprintf(op, oplen, "reset");
		return true;
	}
	snprintf(why, wlen, "a %s step's data is not recorded", skind);
	return false;
}

/* Runs recorded step l in the replay's session: the answer as JSON (with "http_status"), or NULL
 * with why. */
static json_t *run_step(pd_server *s, sess_entry *se, json_t *l, char *why, size_t wlen)
{
	req *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(why, wlen, "out of memory");
		return NULL;
	}
	r->srv = s;
	char op[16] = "";
	json_t *resp = NULL;
	if (request_of(l, r, op, sizeof op, why, wlen)) {
		session_dispatch(r, se, op);
		resp = r->resp_from_fd || !r->resp ? json_object() : json_loadb(r->resp, r->resp_len, 0, NULL);
		if (!json_is_object(resp)) {
			json_decref(resp);
			resp = json_object();
		}
		json_object_set_new(resp, "http_status", json_integer(r->status));
	}
	if (r->resp_from_fd)
		close(r->resp_fd);
	free(r->resp);
	free(r->body);
	free(r);
	return resp;
}

/* The step's report: what differs between the recorded line and the replay's (its answer, and its
 * own trajectory line mline for the files changed and a read's digest). */
static json_t *compare(json_t *rec, json_t *resp, json_t *mline)
{
	const char *skind = json_string_value(json_object_get(rec, "kind"));
	json_t *diffs = json_array(), *ro = json_object_get(rec, "observation");
	if (!strcmp(skind, "exec")) {
		static const char *const f[] = {"status", "exit_code", "signal", "stdout", "stderr", NULL};
		for (int j = 0; f[j]; j++)
			diff_field(diffs, f[j], json_object_get(ro, f[j]), json_object_get(resp, f[j]));
	} else {
		/* a reset's record has no HTTP status: only its files are compared */
		if (json_object_get(ro, "http_status"))
			diff_field(diffs, "http_status", json_object_get(ro, "http_status"), json_object_get(resp, "http_status"));
		if (!strcmp(skind, "read"))
			diff_field(diffs, "sha256", json_object_get(ro, "sha256"),
				   json_object_get(json_object_get(mline, "observation"), "sha256"));
	}
	json_t *ca = changes(rec), *cb = mline ? changes(mline) : json_array();
	diff_field(diffs, "files_changed", ca, cb);
	json_decref(ca);
	json_decref(cb);
	return diffs;
}

/* Parses a trajectory's JSON lines (a last line without its newline, cut by a crash, left out). */
static json_t *parse_lines(const char *text, size_t len)
{
	json_t *arr = json_array();
	for (const char *p = text; p && p < text + len;) {
		const char *nl = memchr(p, '\n', (size_t)(text + len - p));
		if (!nl)
			break;
		json_t *o = json_loadb(p, (size_t)(nl - p), 0, NULL);
		if (json_is_object(o))
			json_array_append_new(arr, o);
		else
			json_decref(o);
		p = nl + 1;
	}
	return arr;
}

void replay_run(req *r, const char *id)
{
	pd_server *s = r->srv;
	if (strcmp(r->method, "POST")) {
		http_set_error(r, 405, "replay: POST");
		return;
	}
	pd_err e = {0};
	json_t *lines = id ? pd_trajectory_load(pd_ctx_state_dir(s->ctx), id, &e) : parse_lines(r->body, r->len);
	json_t *head = json_array_get(lines, 0);
	const char *hk = json_string_value(json_object_get(head, "kind"));
	if (!lines || !hk || strcmp(hk, "session")) {
		if (id && e.code)
			http_set_error(r, 404, "no trajectory %s", id);
		else
			http_set_error(r, 400, "replay: the trajectory must start with its session line (kind \"session\")");
		json_decref(lines);
		return;
	}
	const char *tpl = json_string_value(json_object_get(head, "template"));
	const char *orig = json_string_value(json_object_get(head, "trajectory_id"));
	pd_session_create_req cq;
	memset(&cq, 0, sizeof cq);
	snprintf(cq.template_name, sizeof cq.template_name, "%s", tpl ? tpl : "bash");
	json_t *meta = json_pack("{s:s}", "replay_of", orig ? orig : "");
	cq.o.metadata = json_dumps(meta, JSON_COMPACT);
	json_decref(meta);
	int status = 0;
	json_t *created = session_open_one(s, &cq, NULL, &status, &e);
	pd_session_create_req_free(&cq);
	const char *sid_v = json_string_value(json_object_get(created, "session_id"));
	char sid[64];
	snprintf(sid, sizeof sid, "%s", sid_v ? sid_v : "");
	json_decref(created);
	sess_entry *se = sid[0] ? session_hold(s, sid) : NULL;
	if (!se) {
		http_set_error(r, status ? status : 503, "replay: a session of template %s: %s", tpl ? tpl : "bash",
			       e.code ? PD_ERR_STR(&e) : "closed meanwhile");
		json_decref(lines);
		return;
	}
	/* every step, keeping which recorded line each replayed one answers: [line, answer | why];
	 * agents' steps that overlapped run at once (replay_agents.c) */
	json_t *done = json_array(), *todo = json_array(), *l;
	size_t i;
	json_array_foreach(lines, i, l) {
		const char *skind = json_string_value(json_object_get(l, "kind"));
		/* a verdict or an annotation (issue 40) is not a step of the agent's: nothing to re-run */
		if (skind && strcmp(skind, "session") && strcmp(skind, "close") && strcmp(skind, "verdict") &&
		    strcmp(skind, "annotation"))
			json_array_append(todo, l);
	}
	replay_steps(s, se, todo, done, run_step);
	json_decref(todo);
	session_unhold(s, se);
	session_delete_quiet(s, sid);
	/* the replay's own trajectory: the header, then one line per replayed step */
	json_t *mine = pd_trajectory_load(pd_ctx_state_dir(s->ctx), sid, &e);
	replay_union_batches(done, mine);
	size_t k = 1, matched = 0, replayed = 0, skipped = 0;
	long first = -1;
	json_t *steps = json_array(), *d, *used = json_array();
	json_array_foreach(done, i, d) {
		json_t *rec = json_array_get(d, 0), *resp = json_array_get(d, 1);
		long step = (long)json_integer_value(json_object_get(rec, "step"));
		json_t *out = json_pack("{s:I,s:O,s:O}", "step", (json_int_t)step, "kind", json_object_get(rec, "kind"),
					"request_id", json_object_get(rec, "request_id") ? json_object_get(rec, "request_id")
											  : json_null());
		if (json_is_string(resp)) {
			skipped++;
			json_object_set_new(out, "replayed", json_false());
			json_object_set(out, "why", resp);
		} else {
			replayed++;
			json_t *diffs = compare(rec, resp, mine ? replay_own_line(mine, rec, used, &k) : NULL);
			bool match = json_array_size(diffs) == 0;
			matched += match;
			if (!match && first < 0)
				first = step;
			json_object_set_new(out, "replayed", json_true());
			json_object_set_new(out, "match", json_boolean(match));
			json_object_set_new(out, "diffs", diffs);
		}
		json_array_append_new(steps, out);
	}
	http_set_json(r, 200,
		      json_pack("{s:s,s:s,s:I,s:I,s:I,s:o,s:o}", "trajectory_id", orig ? orig : "", "replay_trajectory_id",
				sid, "replayed", (json_int_t)replayed, "matched", (json_int_t)matched, "not_replayed",
				(json_int_t)skipped, "first_divergent_step", first >= 0 ? json_integer(first) : json_null(),
				"steps", steps));
	json_decref(mine);
	json_decref(used);
	json_decref(done);
	json_decref(lines);
}
