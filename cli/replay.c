/* paddock replay TRAJECTORY [--url URL | --local [--templates FILE]] [--json]
 *
 * Re-executes a recorded trajectory's actions in a fresh session of the same template and says,
 * step by step, what matches and which step diverges first. Replayed: exec (command, cwd, stdin
 * when it was recorded whole, time limit), file writes (content when recorded: up to 64 KiB),
 * deletes, reads (the digest of what is read) and resets. Compared: status, exit code, signal,
 * stdout and stderr as kept, the HTTP status of file steps, and the files each step changed
 * (path, kind of change, size, digest). Not compared: times, peaks, sandbox ids. Uploads and
 * downloads (their archives are not recorded) are reported as not replayed; so is a step whose
 * input was too large to be recorded.
 *
 * With --url the replay runs in that daemon; with --local (the default) in a daemon started in
 * this process on loopback. The replay's own session keeps its own trajectory: its id is in the
 * summary. Exit 0 when every replayed step matches, 1 at a divergence, 2 when it could not run. */
#define _GNU_SOURCE
#include "cli.h"
#include "episode.h"
#include "httpc.h"
#include "server.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool same(json_t *a, json_t *b)
{
	return json_equal(a ? a : json_null(), b ? b : json_null());
}

/* the files a step changed, as comparable text entries "path change size sha256" */
static json_t *changes(json_t *line)
{
	json_t *out = json_array(), *f;
	size_t i;
	json_array_foreach(json_object_get(line, "files_changed"), i, f) {
		char *t = NULL;
		if (asprintf(&t, "%s %s %lld %s", json_string_value(json_object_get(f, "path")),
			     json_string_value(json_object_get(f, "change")),
			     (long long)json_integer_value(json_object_get(f, "size")),
			     json_string_value(json_object_get(f, "sha256")) ? json_string_value(json_object_get(f, "sha256"))
									       : "-") >= 0)
			json_array_append_new(out, json_string(t));
		free(t);
	}
	return out;
}

static void diff_field(json_t *diffs, const char *name, json_t *a, json_t *b)
{
	if (!same(a, b)) {
		char *ta = json_dumps(a ? a : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
		char *tb = json_dumps(b ? b : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
		char *t = NULL;
		if (asprintf(&t, "%s: recorded %.120s, replayed %.120s", name, ta ? ta : "?", tb ? tb : "?") >= 0)
			json_array_append_new(diffs, json_string(t));
		free(t);
		free(ta);
		free(tb);
	}
}

/* The replay's request for a recorded step: method, path and body; false if it cannot be replayed
 * (why says so). */
static bool request_of(json_t *l, const char *sid, char *method, char *path, size_t plen, json_t **body,
		       char **raw, size_t *rawlen, char *why, size_t wlen)
{
	const char *kind = json_string_value(json_object_get(l, "kind"));
	json_t *a = json_object_get(l, "action");
	*body = NULL;
	*raw = NULL;
	*rawlen = 0;
	const char *fpath = json_string_value(json_object_get(a, "path"));
	char *qp = NULL;
	if (fpath) {
		/* the path as a query value: every byte outside the unreserved set escaped */
		size_t n = strlen(fpath);
		qp = malloc(3 * n + 1);
		char *q = qp;
		for (size_t i = 0; qp && i < n; i++) {
			unsigned char c = (unsigned char)fpath[i];
			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-_.~/", c))
				*q++ = (char)c;
			else
				q += sprintf(q, "%%%02X", c);
		}
		if (qp)
			*q = 0;
	}
	bool ok = true;
	if (!strcmp(kind, "exec")) {
		json_t *stdin_bytes = json_object_get(a, "stdin_bytes");
		if (stdin_bytes && json_is_null(json_object_get(a, "stdin"))) {
			snprintf(why, wlen, "its stdin (%lld bytes) was too large to be recorded",
				 (long long)json_integer_value(stdin_bytes));
			ok = false;
		} else {
			strcpy(method, "POST");
			snprintf(path, plen, "/v1/sessions/%s/exec", sid);
			*body = json_pack("{s:O}", "cmd", json_object_get(a, "cmd"));
			if (json_is_string(json_object_get(a, "cwd")))
				json_object_set(*body, "cwd", json_object_get(a, "cwd"));
			if (json_is_string(json_object_get(a, "stdin")))
				json_object_set(*body, "stdin", json_object_get(a, "stdin"));
			if (json_is_integer(json_object_get(a, "timeout_ms")))
				json_object_set_new(*body, "timeout",
						    json_real((double)json_integer_value(json_object_get(a, "timeout_ms")) / 1000));
		}
	} else if (!strcmp(kind, "write")) {
		const char *b64 = json_string_value(json_object_get(a, "content_b64"));
		if (!b64 || !qp || pd_b64_decode(b64, raw, rawlen) < 0) {
			snprintf(why, wlen, "its content was too large to be recorded");
			ok = false;
		} else {
			strcpy(method, "PUT");
			snprintf(path, plen, "/v1/sessions/%s/files?path=%s", sid, qp);
		}
	} else if (!strcmp(kind, "delete") || !strcmp(kind, "read")) {
		strcpy(method, !strcmp(kind, "delete") ? "DELETE" : "GET");
		snprintf(path, plen, "/v1/sessions/%s/files?path=%s", sid, qp ? qp : "");
	} else if (!strcmp(kind, "reset")) {
		strcpy(method, "POST");
		snprintf(path, plen, "/v1/sessions/%s/reset", sid);
	} else {
		snprintf(why, wlen, "a %s step's data is not recorded", kind);
		ok = false;
	}
	free(qp);
	return ok;
}

static int replay(const char *url, json_t *lines, bool json_out)
{
	json_t *head = json_array_get(lines, 0);
	const char *tpl = json_string_value(json_object_get(head, "template"));
	const char *orig = json_string_value(json_object_get(head, "trajectory_id"));
	char err[600];
	int st = 0;
	json_t *cb = json_pack("{s:s,s:{s:s}}", "template", tpl ? tpl : "bash", "metadata", "replay_of", orig ? orig : "");
	json_t *cr = httpc_json(url, "POST", "/v1/sessions", cb, NULL, &st, err, sizeof err);
	json_decref(cb);
	const char *sid = json_string_value(json_object_get(cr, "session_id"));
	if (!sid) {
		cli_error("replay: create a session of template %s: %s", tpl ? tpl : "bash",
			  cr ? json_string_value(json_object_get(cr, "error")) : err);
		json_decref(cr);
		return EXIT_PADDOCK_FAILED;
	}
	char sidbuf[64];
	snprintf(sidbuf, sizeof sidbuf, "%s", sid);
	json_decref(cr);
	sid = sidbuf;
	/* replay every step, keeping which recorded line each replayed step answers */
	json_t *done = json_array(); /* [recorded line, response, skipped reason] */
	size_t i;
	json_t *l;
	json_array_foreach(lines, i, l) {
		const char *kind = json_string_value(json_object_get(l, "kind"));
		if (!kind || !strcmp(kind, "session") || !strcmp(kind, "close"))
			continue;
		char method[8], path[2048], why[200] = "";
		json_t *body;
		char *raw;
		size_t rawlen;
		if (!request_of(l, sid, method, path, sizeof path, &body, &raw, &rawlen, why, sizeof why)) {
			json_array_append_new(done, json_pack("[O,n,s]", l, why));
			continue;
		}
		char hdr[200] = "";
		const char *rid = json_string_value(json_object_get(l, "request_id"));
		if (rid && strlen(rid) < 128 && !strpbrk(rid, "\r\n"))
			snprintf(hdr, sizeof hdr, "X-Request-Id: %s\r\n", rid);
		if (body && rid)
			json_object_set_new(body, "request_id", json_string(rid));
		httpc_resp r;
		char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
		int rc = httpc_call(url, method, path, text ? text : raw, text ? strlen(text) : rawlen, hdr, &r, err, sizeof err);
		free(text);
		free(raw);
		json_decref(body);
		if (rc < 0) {
			json_array_append_new(done, json_pack("[O,n,s]", l, err));
			continue;
		}
		json_t *resp = !strcmp(kind, "read") ? json_pack("{s:i}", "http_status", r.status) : json_loadb(r.body, r.len, 0, NULL);
		if (resp && strcmp(kind, "exec"))
			json_object_set_new(resp, "http_status", json_integer(r.status));
		free(r.body);
		json_array_append_new(done, json_pack("[O,o,n]", l, resp ? resp : json_object()));
	}
	/* the replay's own trajectory holds what each replayed step changed */
	char tpath[128];
	snprintf(tpath, sizeof tpath, "/v1/sessions/%s", sid);
	httpc_resp dr;
	if (httpc_call(url, "DELETE", tpath, NULL, 0, NULL, &dr, err, sizeof err) == 0)
		free(dr.body);
	json_t *mine = cli_trajectory_load(sid, url, err, sizeof err);
	size_t k = 1; /* the replay's lines: the header, then one per replayed step */
	long first = -1;
	size_t matched = 0, replayed = 0, skipped = 0;
	json_t *d;
	json_array_foreach(done, i, d) {
		json_t *rec = json_array_get(d, 0), *resp = json_array_get(d, 1);
		json_t *skip = json_array_get(d, 2);
		long step = (long)json_integer_value(json_object_get(rec, "step"));
		const char *kind = json_string_value(json_object_get(rec, "kind"));
		json_t *out = json_pack("{s:i,s:s,s:O}", "step", (int)step, "kind", kind, "request_id",
					json_object_get(rec, "request_id"));
		if (json_is_string(skip)) {
			skipped++;
			json_object_set_new(out, "replayed", json_false());
			json_object_set(out, "why", skip);
		} else {
			replayed++;
			json_t *diffs = json_array(), *ro = json_object_get(rec, "observation");
			json_t *mline = mine ? json_array_get(mine, k++) : NULL;
			if (!strcmp(kind, "exec")) {
				static const char *const f[] = {"status", "exit_code", "signal", "stdout", "stderr", NULL};
				for (int j = 0; f[j]; j++)
					diff_field(diffs, f[j], json_object_get(ro, f[j]), json_object_get(resp, f[j]));
			} else {
				/* a reset's record has no HTTP status: only its files are compared */
				if (json_object_get(ro, "http_status"))
					diff_field(diffs, "http_status", json_object_get(ro, "http_status"),
						   json_object_get(resp, "http_status"));
				if (!strcmp(kind, "read") && mline)
					diff_field(diffs, "sha256", json_object_get(ro, "sha256"),
						   json_object_get(json_object_get(mline, "observation"), "sha256"));
			}
			json_t *ca = changes(rec), *cbb = mline ? changes(mline) : json_array();
			diff_field(diffs, "files_changed", ca, cbb);
			json_decref(ca);
			json_decref(cbb);
			bool match = json_array_size(diffs) == 0;
			matched += match;
			if (!match && first < 0)
				first = step;
			json_object_set_new(out, "replayed", json_true());
			json_object_set_new(out, "match", json_boolean(match));
			json_object_set_new(out, "diffs", diffs);
		}
		if (json_out) {
			json_dumpf(out, stdout, JSON_COMPACT);
			putchar('\n');
		} else {
			json_t *df = json_object_get(out, "diffs");
			printf("step %3ld %-8s %-10s %s\n", step, kind,
			       json_is_string(skip) ? "not run" : json_is_true(json_object_get(out, "match")) ? "match" : "DIVERGES",
			       json_is_string(skip) ? json_string_value(skip) : "");
			size_t j;
			json_t *x;
			json_array_foreach(df, j, x) printf("             %s\n", json_string_value(x));
		}
		json_decref(out);
	}
	json_t *sum = json_pack("{s:s,s:s,s:I,s:I,s:I,s:o}", "trajectory_id", orig ? orig : "", "replay_trajectory_id", sid,
				"replayed", (json_int_t)replayed, "matched", (json_int_t)matched, "not_replayed",
				(json_int_t)skipped, "first_divergent_step", first >= 0 ? json_integer(first) : json_null());
	if (json_out) {
		json_dumpf(sum, stdout, JSON_COMPACT);
		putchar('\n');
	} else {
		printf("%zu of %zu replayed steps match%s", matched, replayed, skipped ? "" : "\n");
		if (skipped)
			printf(" (%zu not replayed)\n", skipped);
		if (first >= 0)
			printf("first divergent step: %ld\n", first);
		printf("replay trajectory: %s\n", sid);
	}
	json_decref(sum);
	json_decref(mine);
	json_decref(done);
	return first >= 0 ? EXIT_PROGRAM_FAILED : 0;
}

int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {{"url", required_argument, 0, 'u'},
					     {"local", no_argument, 0, 'l'},
					     {"templates", required_argument, 0, 't'},
					     {"json", no_argument, 0, 'j'},
					     {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	const char *url = NULL, *templates = NULL;
	bool json_out = false, local = false;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "u:lt:jh", opts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			url = optarg;
			break;
		case 'l':
			local = true;
			break;
		case 't':
			templates = optarg;
			break;
		case 'j':
			json_out = true;
			break;
		case 'h':
			printf("usage: paddock replay TRAJECTORY [--url URL | --local [--templates FILE]] [--json]\n"
			       "  TRAJECTORY       a trajectory file, or with --url a session id\n"
			       "  --url URL        replay in the daemon there (http://host:port)\n"
			       "  --local          replay in a daemon started in this process (the default)\n"
			       "  --templates F    the local daemon's templates (default: the built-in ones)\n"
			       "  --json           one JSON line per step and a summary line\n"
			       "exit 0: every replayed step matches; 1: a step diverges; 2: the replay could not run\n");
			return 0;
		default:
			cli_error("replay: see paddock replay --help");
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		cli_error("replay: give one TRAJECTORY (a file, or a session id with --url)");
		return EXIT_USAGE;
	}
	if (url && local) {
		cli_error("replay: --url or --local, not both");
		return EXIT_USAGE;
	}
	char err[600];
	json_t *lines = cli_trajectory_load(argv[optind], url, err, sizeof err);
	if (!lines) {
		cli_error("replay: %s", err);
		return EXIT_PADDOCK_FAILED;
	}
	pd_server *srv = NULL;
	char db[] = "/tmp/paddock-replay-XXXXXX", base[200];
	if (!url) {
		pd_log_enable(false);
		int dfd = mkstemp(db);
		if (dfd >= 0)
			close(dfd);
		pd_server_opts o = {0};
		o.sched.retries = 2; /* as serve's default: the scheduler takes 0 as no retries */
		o.listen = "127.0.0.1:0";
		o.db_path = db;
		o.templates_file = templates;
		pd_err e = {0};
		srv = pd_server_start(&o, &e);
		if (!srv) {
			cli_error("replay: %s", e.msg);
			unlink(db);
			json_decref(lines);
			return EXIT_PADDOCK_FAILED;
		}
		snprintf(base, sizeof base, "http://%s", pd_server_address(srv));
		url = base;
	}
	int rc = replay(url, lines, json_out);
	if (srv) {
		pd_server_stop(srv);
		unlink(db);
	}
	json_decref(lines);
	return rc;
}
