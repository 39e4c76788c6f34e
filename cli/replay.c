/* paddock replay TRAJECTORY [--url URL | --local [--templates FILE]] [--json]
 *
 * Re-executes a recorded trajectory's actions in a fresh session of the same template and says,
 * step by step, what matches and which step diverges first. The replay itself is the daemon's
 * (POST /v1/replay, server/http/replay.c: what is replayed and compared is said there); this
 * sends the trajectory's lines and prints the answer.
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

/* The trajectory's lines as the body of POST /v1/replay (malloc'd JSON lines). */
static char *lines_text(json_t *lines, size_t *len)
{
	char *text = NULL;
	*len = 0;
	FILE *m = open_memstream(&text, len);
	size_t i;
	json_t *l;
	json_array_foreach(lines, i, l) {
		if (m && json_dumpf(l, m, JSON_COMPACT) == 0)
			fputc('\n', m);
	}
	if (m)
		fclose(m);
	return text;
}

static int replay(const char *url, json_t *lines, bool json_out)
{
	size_t len;
	char *body = lines_text(lines, &len);
	httpc_resp r;
	char err[600];
	int rc = body ? httpc_call(url, "POST", "/v1/replay", body, len, "Content-Type: application/x-ndjson\r\n", &r, err,
				   sizeof err)
		      : (snprintf(err, sizeof err, "out of memory"), -1);
	free(body);
	if (rc < 0) {
		cli_error("replay: %s", err);
		return EXIT_PADDOCK_FAILED;
	}
	json_t *ans = json_loadb(r.body, r.len, 0, NULL);
	if (r.status != 200 || !json_is_object(ans)) {
		cli_error("replay: POST /v1/replay: %d %.300s", r.status, r.body);
		free(r.body);
		json_decref(ans);
		return EXIT_PADDOCK_FAILED;
	}
	free(r.body);
	size_t i;
	json_t *out;
	json_array_foreach(json_object_get(ans, "steps"), i, out) {
		if (json_out) {
			json_dumpf(out, stdout, JSON_COMPACT | JSON_REAL_PRECISION(PD_JSON_REAL_DIGITS));
			putchar('\n');
			continue;
		}
		bool run = json_is_true(json_object_get(out, "replayed"));
		printf("step %3lld %-8s %-10s %s\n", (long long)json_integer_value(json_object_get(out, "step")),
		       json_string_value(json_object_get(out, "kind")),
		       !run ? "not run" : json_is_true(json_object_get(out, "match")) ? "match" : "DIVERGES",
		       !run ? json_string_value(json_object_get(out, "why")) : "");
		size_t j;
		json_t *x;
		json_array_foreach(json_object_get(out, "diffs"), j, x) printf("             %s\n", json_string_value(x));
	}
	json_t *first = json_object_get(ans, "first_divergent_step");
	if (json_out) {
		json_object_del(ans, "steps");
		json_dumpf(ans, stdout, JSON_COMPACT | JSON_REAL_PRECISION(PD_JSON_REAL_DIGITS));
		putchar('\n');
	} else {
		long long skipped = json_integer_value(json_object_get(ans, "not_replayed"));
		printf("%lld of %lld replayed steps match", json_integer_value(json_object_get(ans, "matched")),
		       json_integer_value(json_object_get(ans, "replayed")));
		if (skipped)
			printf(" (%lld not replayed)", skipped);
		putchar('\n');
		if (json_is_integer(first))
			printf("first divergent step: %lld\n", json_integer_value(first));
		printf("replay trajectory: %s\n", json_string_value(json_object_get(ans, "replay_trajectory_id")));
	}
	int ret = json_is_integer(first) ? EXIT_PROGRAM_FAILED : 0;
	json_decref(ans);
	return ret;
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
	while ((ch = getopt_long(argc, argv, ":u:lt:jh", opts, NULL)) != -1) {
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
			return cli_bad_option("replay", "replay", NULL, ch, argv, opts);
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
			cli_error("replay: %s", PD_ERR_STR(&e));
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
