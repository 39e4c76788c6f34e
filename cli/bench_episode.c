/* paddock bench --episode: the cost of grading an agent's episode in a fork (issue 40's target: a
 * session of 100 MB of files graded at most 1.2x the time of running the same command in the
 * session itself). One session gets --episode-mb MB of files in /work (1 MB each, as a repository's
 * and its build's would be, many smaller ones being slower to copy), then each round, alternating:
 *
 *   exec    the command as a step of the session (POST /v1/sessions/{id}/exec)
 *   grade   the same command graded by an inline episode problem (POST /v1/sessions/{id}/judge):
 *           the files copied into a fork, the fork made, the command run there, the fork destroyed
 *
 * The command reads every file and digests it (a test run reading its repository). The daemon is
 * started in this process, as --judge does. Not a test: timings are never asserted. */
#define _GNU_SOURCE
#include "bench_daemon.h"
#include "bench_util.h"
#include "cli.h"
#include "httpc.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char command[] = "find /work/data -type f -exec cat {} + | sha256sum";

static double ms_now(void)
{
	return now_ns() / 1e6;
}

static int call(const char *url, const char *path, json_t *body, json_t **out)
{
	int status = 0;
	char err[256];
	json_t *r = httpc_json(url, "POST", path, body, NULL, &status, err, sizeof err);
	if (out)
		*out = r;
	else
		json_decref(r);
	return status;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The rounds against the session at url (its exec and judge paths ex and jd), each alternating
 * which side goes first, then the medians; the operations that failed. */
static unsigned episode_rounds(const char *url, const char *ex, const char *jd, long rounds, long mb)
{
	json_t *problem = json_pack("{s:s,s:s}", "kind", "episode", "command", command);
	printf("paddock bench --episode — %ld CPUs, %ld rounds, a session of %ld MB of files (1 MB each)\n"
	       "command: %s\n\n",
	       sysconf(_SC_NPROCESSORS_ONLN), rounds, mb, command);
	double *ex_ms = calloc((size_t)rounds, sizeof *ex_ms), *gr_ms = calloc((size_t)rounds, sizeof *gr_ms),
	       *ratio = calloc((size_t)rounds, sizeof *ratio);
	unsigned failed = 0;
	for (long i = 0; i < rounds; i++) {
		/* alternate which side goes first: the page cache and the machine's noise fall on both */
		for (int side = 0; side < 2; side++) {
			bool grade = (side == 0) == (i % 2 == 1);
			json_t *ans = NULL;
			double t = ms_now();
			int st = grade ? call(url, jd, json_pack("{s:O}", "problem", problem), &ans)
				       : call(url, ex, json_pack("{s:s}", "shell", command), &ans);
			double d = ms_now() - t;
			const char *ok = grade ? json_string_value(json_object_get(
							 json_object_get(json_object_get(ans, "verdict"), "output"), "status"))
					       : json_string_value(json_object_get(ans, "status"));
			failed += st != 200 || !ok || (strcmp(ok, "pass") && strcmp(ok, "OK"));
			if (grade) {
				gr_ms[i] = d;
				json_t *g = json_object_get(ans, "grade");
				printf("round %ld: grade %.0f ms (copy %lld ms of %lld bytes, run %lld ms)", i + 1, d,
				       (long long)json_integer_value(json_object_get(g, "copy_ms")),
				       (long long)json_integer_value(json_object_get(g, "copy_bytes")),
				       (long long)json_integer_value(json_object_get(g, "run_ms")));
			} else {
				ex_ms[i] = d;
			}
			json_decref(ans);
		}
		ratio[i] = gr_ms[i] / ex_ms[i];
		printf(", exec %.0f ms: %.2fx\n", ex_ms[i], ratio[i]);
		fflush(stdout);
	}
	qsort(ratio, (size_t)rounds, sizeof *ratio, cmp_d);
	qsort(gr_ms, (size_t)rounds, sizeof *gr_ms, cmp_d);
	qsort(ex_ms, (size_t)rounds, sizeof *ex_ms, cmp_d);
	printf("\nmedians: grade %.0f ms, exec %.0f ms\nepisode: grade time / exec time %.2fx (range %.2f-%.2f)  target <= 1.20x\n",
	       gr_ms[rounds / 2], ex_ms[rounds / 2], ratio[rounds / 2], ratio[0], ratio[rounds - 1]);
	if (failed)
		printf("%u operations failed\n", failed);
	free(ex_ms);
	free(gr_ms);
	free(ratio);
	json_decref(problem);
	return failed;
}

int cmd_bench_episode(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"episode", no_argument, 0, 'E'},
	    {"rounds", required_argument, 0, 'r'},
	    {"episode-mb", required_argument, 0, 'm'},
	    {0, 0, 0, 0},
	};
	long rounds = 5, mb = 100;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (ch == 'E')
			continue;
		if (ch == 'r' && cli_count("bench --episode: --rounds", optarg, 1, 100, &rounds))
			continue;
		if (ch == 'm' && cli_count("bench --episode: --episode-mb", optarg, 1, 4096, &mb))
			continue;
		if (ch == 'r' || ch == 'm')
			return EXIT_USAGE;
		return cli_bad_option("bench --episode", "bench", "--rounds and --episode-mb", ch, argv, opts);
	}
	bench_daemon dm;
	if (bench_daemon_start(&dm, "episode", 0) < 0)
		return EXIT_PADDOCK_FAILED;
	const char *url = dm.url;
	int rc = EXIT_PADDOCK_FAILED;
	json_t *sess = NULL;
	if (call(url, "/v1/sessions", json_pack("{s:s,s:I}", "template", "bash", "ttl", (json_int_t)3600), &sess) != 201) {
		cli_error("bench --episode: could not open a session");
		goto out;
	}
	char base[160], ex[200], jd[200];
	snprintf(base, sizeof base, "/v1/sessions/%s", json_string_value(json_object_get(sess, "session_id")));
	snprintf(ex, sizeof ex, "%s/exec", base);
	snprintf(jd, sizeof jd, "%s/judge", base);
	char fill[256];
	snprintf(fill, sizeof fill,
		 "mkdir -p /work/data && for i in $(seq %ld); do head -c 1048576 /dev/urandom > /work/data/f$i; done", mb);
	if (call(url, ex, json_pack("{s:s,s:I}", "shell", fill, "timeout", (json_int_t)600), NULL) != 200) {
		cli_error("bench --episode: could not write the session's files");
		goto out;
	}
	unsigned failed = episode_rounds(url, ex, jd, rounds, mb);
	call(url, base, NULL, NULL);
	rc = failed ? EXIT_PADDOCK_FAILED : 0;
out:
	if (sess) {
		httpc_resp hr = {0};
		char err[128];
		if (httpc_call(url, "DELETE", base, NULL, 0, NULL, &hr, err, sizeof err) == 0)
			free(hr.body);
	}
	json_decref(sess);
	bench_daemon_stop(&dm);
	return rc;
}
