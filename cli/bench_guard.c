/* paddock bench --guard: the two figures of issue 42 that crept up unnoticed, as CPU-time ratios a
 * loaded machine does not break, so that `make test` can keep them from sliding back.
 *
 *   cli     CPU of `paddock exec -q -- /bin/true` / CPU of `bwrap /bin/true` (the bench's bwrap
 *           row): each process tree's task clock, from a counter the spawned processes inherit
 *           (wait4's rusage misses bwrap's pid 1, which its outer process never reaps; kernel
 *           workers count for neither side)
 *   daemon  this process's CPU per POST /run_code to an in-process daemon (HTTP, scheduler,
 *           store, pool, reset: the bench --http figure) / CPU of spawning /bin/true (the floor)
 *
 * Each round measures the pairs alternately, op by op, so that both sides of a ratio see the
 * same machine; a round's daemon figure is the median request's (see daemon_round), and the
 * verdict is on the lowest round (see verdict). Wall time is never used: on a shared
 * 2-CPU machine it moves by 2x, CPU time per operation by far less, and alike for both sides.
 * With --baseline CLI,DAEMON the exit status is 1 when the lowest round is more than 25% over
 * its baseline (tests/api/perf_guard.t passes the figures docs/benchmarks.md records). */
#define _GNU_SOURCE
#include "bench_daemon.h"
#include "bench_util.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define GUARD_MARGIN 1.25 /* a regression is a median past baseline x this */

static double tv_ms(struct timeval a, struct timeval b)
{
	return (double)(a.tv_sec + b.tv_sec) * 1e3 + (double)(a.tv_usec + b.tv_usec) / 1e3;
}

/* The task clock of this thread and every process it starts after (the daemon's threads, older,
 * are not in it); -1 where perf events are not allowed (then wait4's rusage). */
static int clock_fd = -1;

static double clock_ms(void)
{
	uint64_t v = 0;
	return read(clock_fd, &v, sizeof v) == (ssize_t)sizeof v ? (double)v / 1e6 : 0;
}

/* Spawns argv with stdio on /dev/null, waits; its tree's CPU in ms, or -1 if it failed. */
static double spawn_cpu_ms(const char *const *argv)
{
	double c0 = clock_fd >= 0 ? clock_ms() : 0;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	/* POSIX's char *const argv[] is historical: never written to */
	int err = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		return -1;
	int st;
	struct rusage ru;
	pid_t r;
	do
		r = wait4(pid, &st, 0, &ru);
	while (r < 0 && errno == EINTR);
	if (r != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return clock_fd >= 0 ? clock_ms() - c0 : tv_ms(ru.ru_utime, ru.ru_stime);
}

/* One round of the cli cell: ops pairs, alternating; the ratio of the sums, or -1. */
static double cli_round(const char *const *cli, const char *const *bwrap, int ops, double *cli_ms, double *bw_ms)
{
	double a = 0, b = 0;
	for (int i = 0; i < ops; i++) {
		double x = spawn_cpu_ms(cli), y = spawn_cpu_ms(bwrap);
		if (x < 0 || y < 0)
			return -1;
		a += x;
		b += y;
	}
	*cli_ms = a / ops;
	*bw_ms = b / ops;
	return b > 0 ? a / b : -1;
}

static const char run_code_body[] = "{\"language\":\"python\",\"code\":\"print(1)\"}";

/* One round of the daemon cell: each /run_code measured until the pool has reset what it
 * released (the reset is part of a request's cost, and the next request then finds a READY
 * sandbox whatever the load: a pool left to refill on the request path would charge a creation
 * to the requests of a slow moment), the questions about the pool taken off at their measured
 * cost, between spawns of the floor. The round's figure is the median request's CPU over the
 * median spawn's: work the daemon does now and then for all requests (the store's checkpoint
 * every thousand pages, a pool's refill) falls on one request in tens, and an average made a
 * round's figure jump by a third with where it fell. */
static double daemon_round(bench_hconn *c, int ops, double q_ms, double *req_ms, double *floor_ms)
{
	static const char *const floor_argv[] = {"/bin/true", NULL};
	double *d = calloc((size_t)ops, sizeof *d), *f = calloc((size_t)ops, sizeof *f), ratio = -1;
	int i = 0;
	for (; d && f && i < ops; i++) {
		double c0 = bench_self_cpu_ms();
		if (bench_hrequest(c, "POST", "/run_code", run_code_body) != 200 ||
		    !strstr(c->buf, "\"status\":\"Success\""))
			break;
		int q = bench_pool_quiet(c, 2); /* asking every 2 ms */
		if (q < 0)
			break;
		d[i] = bench_self_cpu_ms() - c0 - q * q_ms;
		f[i] = spawn_cpu_ms(floor_argv);
		if (f[i] < 0)
			break;
	}
	if (i == ops) {
		*req_ms = bench_median(d, ops);
		*floor_ms = bench_median(f, ops);
		ratio = *floor_ms > 0 ? *req_ms / *floor_ms : -1;
	}
	free(d);
	free(f);
	return ratio;
}

/* What one question about the pool costs, asked of an idle pool. */
static double question_ms(bench_hconn *c)
{
	if (bench_pool_quiet(c, 2) < 0)
		return -1;
	double c0 = bench_self_cpu_ms();
	for (int i = 0; i < 50; i++)
		if (bench_hrequest(c, "GET", "/v1/pools", NULL) != 200)
			return -1;
	return (bench_self_cpu_ms() - c0) / 50;
}

/* Judged by the round least disturbed (the lowest ratio): load from elsewhere only ever adds to
 * the paddock side's figure more than to its reference's (on the development VM a daemon round
 * moved from 1.2 to 1.8 with the machine's load, the lowest of five rounds by less than 0.2),
 * while a regression raises every round. */
static int verdict(const char *what, const double *sorted, int n, double base)
{
	double med = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	printf("%-44s lowest %.2f, median %.2f, highest %.2f", what, sorted[0], med, sorted[n - 1]);
	if (base <= 0) {
		printf("\n");
		return 0;
	}
	bool bad = sorted[0] > base * GUARD_MARGIN;
	printf("; baseline %.2f, limit %.2f: %s\n", base, base * GUARD_MARGIN, bad ? "REGRESSION" : "ok");
	return bad;
}

static int parse_baseline(const char *arg, double *cli, double *daemon)
{
	char *end;
	*cli = strtod(arg, &end);
	if (end == arg || *end != ',' || *cli < 0)
		return -1;
	const char *p = end + 1;
	*daemon = strtod(p, &end);
	return end == p || *end || *daemon < 0 ? -1 : 0;
}

typedef struct guard_args {
	int rounds, ops;
	double base_cli, base_daemon;
	const char *cli_bin;
} guard_args;

/* The command line; 0, or the exit status of a bad one. */
static int guard_args_parse(int argc, char **argv, guard_args *a)
{
	static const struct option opts[] = {
	    {"guard", no_argument, 0, 'G'},
	    {"rounds", required_argument, 0, 'r'},
	    {"iterations", required_argument, 0, 'n'},
	    {"baseline", required_argument, 0, 'b'},
	    {"cli", required_argument, 0, 'c'},
	    {0, 0, 0, 0},
	};
	/* the very binary running the guard, unless --cli names another build's */
	*a = (guard_args){.rounds = 5, .ops = 20, .cli_bin = "/proc/self/exe"};
	int ch;
	long v;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":n:", opts, NULL)) != -1) {
		switch (ch) {
		case 'G': break;
		case 'r':
			if (!cli_count("bench --guard: --rounds", optarg, 1, 100, &v))
				return EXIT_USAGE;
			a->rounds = (int)v;
			break;
		case 'n':
			if (!cli_count("bench --guard: --iterations", optarg, 5, 10000, &v))
				return EXIT_USAGE;
			a->ops = (int)v;
			break;
		case 'c': a->cli_bin = optarg; break;
		case 'b':
			if (parse_baseline(optarg, &a->base_cli, &a->base_daemon) < 0) {
				cli_bad("--baseline", optarg, "CLI,DAEMON: two ratios, e.g. 1.4,1.5");
				return EXIT_USAGE;
			}
			break;
		default:
			return cli_bad_option("bench --guard", "bench", "--rounds, --iterations, --baseline and --cli", ch,
					      argv, opts);
		}
	}
	return 0;
}

/* The rounds, each printed, then the verdicts; the exit status. */
static int guard_rounds(const guard_args *a, bench_hconn *c, double q_ms, const char *const *cli,
			const char *const *bwrap)
{
	int rounds = a->rounds, rc = 0;
	double *rc_cli = calloc((size_t)rounds, sizeof *rc_cli), *rc_d = calloc((size_t)rounds, sizeof *rc_d);
	for (int r = 0; rc_cli && rc_d && r < rounds && !rc; r++) {
		double x1 = 0, x2 = 0, y1 = 0, y2 = 0;
		rc_cli[r] = bwrap ? cli_round(cli, bwrap, a->ops, &x1, &x2) : 0;
		rc_d[r] = daemon_round(c, a->ops, q_ms, &y1, &y2);
		if (rc_cli[r] < 0 || rc_d[r] < 0) {
			cli_error("bench --guard: an operation failed in round %d", r + 1);
			rc = EXIT_PADDOCK_FAILED;
			break;
		}
		printf("round %d: cli %.2f ms / bwrap %.2f ms = %.2f;  daemon %.3f ms per /run_code / floor %.3f ms = "
		       "%.2f\n",
		       r + 1, x1, x2, rc_cli[r], y1, y2, rc_d[r]);
		fflush(stdout);
	}
	if (!rc && rc_cli && rc_d) {
		bench_median(rc_cli, rounds); /* sorts */
		bench_median(rc_d, rounds);
		printf("\n");
		int bad = 0;
		if (!bwrap)
			printf("paddock exec CPU / bwrap CPU: not measured (bwrap not found in PATH)\n");
		else if (clock_fd < 0) {
			/* wait4 misses bwrap's pid 1: a ratio that is not the baseline's kind */
			verdict("paddock exec CPU / bwrap CPU (target <= 0.67)", rc_cli, rounds, 0);
			printf("  not judged: no task clock here (perf events refused), and wait4 misses bwrap's "
			       "pid 1\n");
		} else
			bad |= verdict("paddock exec CPU / bwrap CPU (target <= 0.67)", rc_cli, rounds, a->base_cli);
		bad |= verdict("daemon CPU per /run_code / floor CPU", rc_d, rounds, a->base_daemon);
		rc = bad ? EXIT_PROGRAM_FAILED : 0;
	}
	free(rc_cli);
	free(rc_d);
	return rc;
}

int cmd_bench_guard(int argc, char **argv)
{
	guard_args a;
	int rc = guard_args_parse(argc, argv, &a);
	if (rc)
		return rc;
	char bwrap_path[4096];
	bool have_bwrap = bench_find_in_path("bwrap", bwrap_path, sizeof bwrap_path);
	const char *bwrap[BENCH_BWRAP_ARGC];
	bench_bwrap_argv(bwrap_path, bwrap);
	const char *const cli[] = {a.cli_bin, "exec", "-q", "--", "/bin/true", NULL};

	bench_daemon d;
	if (bench_daemon_start(&d, "guard", 2) < 0)
		return EXIT_PADDOCK_FAILED;
	clock_fd = bench_task_clock_open(); /* after the daemon's threads exist: they are not in it */
	bench_hconn c;
	if (bench_hconnect(&c, d.port) < 0) {
		cli_error("connect: %s", strerror(errno));
		rc = EXIT_PADDOCK_FAILED;
		goto out;
	}
	printf("paddock bench --guard — %d rounds of %d operations a side, CPU time (%s)\n", a.rounds, a.ops,
	       clock_fd >= 0 ? "an inherited task clock; getrusage for the daemon" : "wait4, getrusage");
	/* warm: the page cache, the pools, the seccomp cache of the run directory */
	double w1, w2;
	double q_ms = question_ms(&c);
	if ((have_bwrap && cli_round(cli, bwrap, 2, &w1, &w2) < 0) || q_ms < 0 ||
	    daemon_round(&c, 5, q_ms, &w1, &w2) < 0) {
		cli_error("bench --guard: a warm-up operation failed");
		rc = EXIT_PADDOCK_FAILED;
	} else
		rc = guard_rounds(&a, &c, q_ms, cli, have_bwrap ? bwrap : NULL);
	close(c.fd);
out:
	if (clock_fd >= 0)
		close(clock_fd);
	bench_daemon_stop(&d);
	return rc;
}
