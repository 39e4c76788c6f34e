/* paddock export TRAJECTORY [--url URL] [--format jsonl|atif] [-o FILE]
 * (paddock export --runs: the store's records, export_runs.c)
 *
 * TRAJECTORY is a trajectory file (JSON lines, as GET /v1/sessions/{id}/trajectory serves it) or,
 * with --url, a session id whose trajectory the daemon there holds. jsonl writes the lines as they
 * are (a cut last line left out); atif writes one ATIF trajectory (the Agent Trajectory Interchange
 * Format, v1.4): each step an agent step whose tool call is the action (function_name the step's
 * kind, arguments its action) and whose observation is the result, with paddock's own fields
 * (request_id, group/sample, files changed, noise, times) in the step's extra. */
#define _GNU_SOURCE
#include "cli.h"
#include "episode.h"
#include "httpc.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

json_t *cli_trajectory_load(const char *arg, const char *url, char *err, size_t errlen)
{
	struct stat st;
	json_t *arr = json_array();
	char *text = NULL;
	size_t len = 0;
	if (!url || stat(arg, &st) == 0) {
		FILE *f = fopen(arg, "re");
		if (!f) {
			snprintf(err, errlen, "%s: %s", arg, strerror(errno));
			json_decref(arr);
			return NULL;
		}
		FILE *m = open_memstream(&text, &len);
		char buf[65536];
		size_t n;
		while (m && (n = fread(buf, 1, sizeof buf, f)) > 0)
			fwrite(buf, 1, n, m);
		fclose(f);
		if (m)
			fclose(m);
	} else {
		char path[512];
		snprintf(path, sizeof path, "/v1/sessions/%s/trajectory", arg);
		httpc_resp r;
		if (httpc_call(url, "GET", path, NULL, 0, NULL, &r, err, errlen) < 0) {
			json_decref(arr);
			return NULL;
		}
		if (r.status != 200) {
			snprintf(err, errlen, "GET %s: %d %.200s", path, r.status, r.body);
			free(r.body);
			json_decref(arr);
			return NULL;
		}
		text = r.body;
		len = r.len;
	}
	for (char *p = text; p && p < text + len;) {
		char *nl = memchr(p, '\n', (size_t)(text + len - p));
		if (!nl)
			break; /* a last line cut by a crash */
		json_t *o = json_loadb(p, (size_t)(nl - p), 0, NULL);
		if (json_is_object(o))
			json_array_append_new(arr, o);
		else
			json_decref(o);
		p = nl + 1;
	}
	free(text);
	if (!json_array_size(arr)) {
		snprintf(err, errlen, "%s: no trajectory lines", arg);
		json_decref(arr);
		return NULL;
	}
	return arr;
}

/* An annotation's reward and note (the last one given) on the step it annotates (issue 40). */
static void atif_annotate(json_t *lines, json_t *extra, json_t *l)
{
	json_t *rid = json_object_get(l, "request_id");
	size_t i;
	json_t *a;
	json_array_foreach(lines, i, a) {
		const char *k = json_string_value(json_object_get(a, "kind"));
		if (k && !strcmp(k, "annotation") && json_is_string(rid) && json_equal(json_object_get(a, "request_id"), rid)) {
			json_object_set(extra, "reward", json_object_get(a, "reward"));
			json_object_set(extra, "note", json_object_get(a, "note"));
		}
	}
}

/* A verdict line (POST /v1/sessions/{id}/judge) as a step of the system's, not a tool call. */
static json_t *atif_verdict(json_t *l, int n)
{
	json_t *obs = json_object_get(l, "observation"), *v = json_object_get(obs, "verdict");
	char msg[256];
	char *rw = json_object_get(l, "reward") ? pd_json_dumps(json_object_get(l, "reward"), JSON_ENCODE_ANY) : NULL;
	snprintf(msg, sizeof msg, "verdict: output %s, process %s, resources %s; reward %s",
		 json_string_value(json_object_get(json_object_get(v, "output"), "status")) ?: "?",
		 json_string_value(json_object_get(json_object_get(v, "process"), "status")) ?: "?",
		 json_string_value(json_object_get(json_object_get(v, "resources"), "status")) ?: "?", rw ? rw : "null");
	free(rw);
	json_t *extra = json_deep_copy(l);
	json_object_del(extra, "action");
	return json_pack("{s:i,s:O,s:s,s:s,s:o}", "step_id", n, "timestamp", json_object_get(l, "started_at"), "source",
			 "system", "message", msg, "extra", extra);
}

/* The ATIF rendering of a paddock trajectory. */
static json_t *atif_of(json_t *lines)
{
	json_t *head = json_array_get(lines, 0), *steps = json_array(), *last_verdict = NULL;
	size_t i;
	json_t *l;
	int n = 0;
	json_array_foreach(lines, i, l) {
		const char *kind = json_string_value(json_object_get(l, "kind"));
		if (!kind || !strcmp(kind, "session") || !strcmp(kind, "close") || !strcmp(kind, "annotation"))
			continue;
		n++;
		if (!strcmp(kind, "verdict")) {
			last_verdict = l;
			json_t *step = atif_verdict(l, n);
			if (step)
				json_array_append_new(steps, step);
			continue;
		}
		char call_id[64];
		snprintf(call_id, sizeof call_id, "call-%lld", (long long)json_integer_value(json_object_get(l, "step")));
		json_t *obs = json_object_get(l, "observation");
		char *content = obs ? pd_json_dumps(obs, JSON_COMPACT) : NULL;
		json_t *extra = json_deep_copy(l);
		json_object_del(extra, "action");
		json_object_del(extra, "observation");
		atif_annotate(lines, extra, l);
		json_t *step = json_pack(
			"{s:i,s:O,s:s,s:s,s:[{s:s,s:s,s:O}],s:{s:[{s:s,s:s}]},s:o}", "step_id", n, "timestamp",
			json_object_get(l, "started_at"), "source", "agent", "message", "", "tool_calls", "tool_call_id",
			call_id, "function_name", kind, "arguments", json_object_get(l, "action"), "observation",
			"results", "source_call_id", call_id, "content", content ? content : "{}", "extra", extra);
		free(content);
		if (step)
			json_array_append_new(steps, step);
	}
	json_t *extra = json_deep_copy(head);
	/* the episode's reward: its last verdict's (null: never graded, or no reward) */
	json_object_set(extra, "reward", last_verdict ? json_object_get(last_verdict, "reward") : json_null());
	return json_pack("{s:s,s:O,s:O,s:{s:s,s:s},s:o,s:o}", "schema_version", "ATIF-v1.4", "session_id",
			 json_object_get(head, "trajectory_id"), "trajectory_id", json_object_get(head, "trajectory_id"),
			 "agent", "name", "paddock-session", "version", "1", "steps", steps, "extra", extra);
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {{"url", required_argument, 0, 'u'},
					     {"format", required_argument, 0, 'f'},
					     {"output", required_argument, 0, 'o'},
					     {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--runs"))
			return cmd_export_runs(argc, argv);
	const char *url = NULL, *format = "jsonl", *out = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":u:f:o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'u':
			url = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "jsonl") && strcmp(optarg, "atif"))
				return cli_bad("export: --format", optarg, "jsonl or atif"), EXIT_USAGE;
			format = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			printf("usage: paddock export TRAJECTORY [--url URL] [--format jsonl|atif] [-o FILE]\n"
			       "       paddock export --runs ...   stored (judged) records as JSONL (--runs --help)\n"
			       "  TRAJECTORY      a trajectory file, or with --url a session id\n"
			       "  --url URL       the daemon holding the trajectory (http://host:port)\n"
			       "  --format FMT    jsonl (the lines as recorded; default) or atif (ATIF-v1.4 JSON)\n"
			       "  -o, --output F  write there instead of stdout\n");
			return 0;
		default:
			return cli_bad_option("export", "export", NULL, ch, argv, opts);
		}
	}
	if (optind != argc - 1) {
		cli_error("export: give one TRAJECTORY (a file, or a session id with --url)");
		return EXIT_USAGE;
	}
	char err[600];
	json_t *lines = cli_trajectory_load(argv[optind], url, err, sizeof err);
	if (!lines) {
		cli_error("export: %s", err);
		return EXIT_PADDOCK_FAILED;
	}
	FILE *f = out ? fopen(out, "we") : stdout;
	if (!f) {
		cli_error("export: %s: %s", out, strerror(errno));
		json_decref(lines);
		return EXIT_PADDOCK_FAILED;
	}
	int rc = 0;
	if (!strcmp(format, "atif")) {
		json_t *a = atif_of(lines);
		rc = a ? json_dumpf(a, f, JSON_INDENT(1) | JSON_REAL_PRECISION(PD_JSON_REAL_DIGITS)) : -1;
		fputc('\n', f);
		json_decref(a);
	} else {
		size_t i;
		json_t *l;
		json_array_foreach(lines, i, l) {
			if (json_dumpf(l, f, JSON_COMPACT | JSON_REAL_PRECISION(PD_JSON_REAL_DIGITS)) < 0)
				rc = -1;
			fputc('\n', f);
		}
	}
	if ((out ? fclose(f) : fflush(f)) != 0)
		rc = -1;
	json_decref(lines);
	if (rc < 0) {
		cli_error("export: write failed");
		return EXIT_PADDOCK_FAILED;
	}
	return 0;
}
