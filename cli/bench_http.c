/* paddock bench --http: the daemon measured side by side with its floor in one run.
 *
 *   floor      python3 -c 'print(1)' spawned and waited on the host
 *   run_code   POST /run_code {"language":"python","code":"print(1)"} over a keep-alive
 *              connection to an in-process `paddock serve` on loopback
 *   healthz    GET /healthz over keep-alive: what the HTTP layer alone costs
 *
 * p50/p99 with one client, then throughput with 1 and 2 clients; the three cases interleaved. */
#define _GNU_SOURCE
#include "bench_daemon.h"
#include "bench_util.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef enum { OP_FLOOR, OP_RUN_CODE, OP_HEALTHZ } op_kind;

static const char run_code_body[] = "{\"language\":\"python\",\"code\":\"print(1)\"}";

/* One operation; true if it succeeded. */
static bool op(op_kind k, bench_hconn *c)
{
	if (k == OP_FLOOR) {
		static char py[] = "python3", dc[] = "-c", prog[] = "print(1)";
		char *argv[] = {py, dc, prog, NULL};
		pid_t pid;
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		/* the interpreter the sandbox runs, not whatever python3 PATH finds first */
		int rc = posix_spawn(&pid, "/usr/bin/python3", &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		int st;
		return rc == 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	if (k == OP_RUN_CODE)
		return bench_hrequest(c, "POST", "/run_code", run_code_body) == 200 &&
		       strstr(c->buf, "\"status\":\"Success\"") && strstr(c->buf, "\"stdout\":\"1\\n\"");
	return bench_hrequest(c, "GET", "/healthz", NULL) == 200;
}

typedef struct tput {
	op_kind k;
	int port;
	double secs;
	uint64_t ok, bad;
} tput;

static void *tput_main(void *arg)
{
	tput *t = arg;
	bench_hconn c;
	if (t->k != OP_FLOOR && bench_hconnect(&c, t->port) < 0)
		return NULL;
	uint64_t end = pd_now_us() + (uint64_t)(t->secs * 1e6);
	while (pd_now_us() < end) {
		if (op(t->k, &c))
			t->ok++;
		else
			t->bad++;
	}
	if (t->k != OP_FLOOR)
		close(c.fd);
	return NULL;
}

/* Waits until the python pool neither resets nor creates: the work a cell's requests queued for
 * the reclaimer (and the refill to the pool's target) is part of that cell, or it would run in
 * the next cell, the floor's, and flatter /run_code's ratio twice. */
static void pool_quiet(int port)
{
	bench_hconn c;
	if (bench_hconnect(&c, port) == 0)
		bench_pool_quiet(&c, 1); /* every 1 ms: finer than a reset */
	close(c.fd);
}

/* ops completed by `clients` threads in about secs; *elapsed grows by the time they really took
 * (the last op started before the deadline ends after it, and for /run_code until the pool has
 * reset what the ops released); *cpu_ms by this process's CPU over them, all threads (the
 * in-process daemon's and the clients') */
static uint64_t throughput(op_kind k, int port, int clients, double secs, uint64_t *bad, double *elapsed,
			   double *cpu_ms)
{
	uint64_t t0 = pd_now_us();
	double c0 = bench_self_cpu_ms();
	tput t[8];
	pthread_t th[8];
	for (int i = 0; i < clients; i++) {
		t[i] = (tput){k, port, secs, 0, 0};
		pthread_create(&th[i], NULL, tput_main, &t[i]);
	}
	uint64_t ok = 0;
	for (int i = 0; i < clients; i++) {
		pthread_join(th[i], NULL);
		ok += t[i].ok;
		*bad += t[i].bad;
	}
	if (k == OP_RUN_CODE)
		pool_quiet(port);
	*elapsed += (pd_now_us() - t0) / 1e6;
	*cpu_ms += bench_self_cpu_ms() - c0;
	return ok;
}

enum { NK = 3 };

/* One round's figures, per case. */
typedef struct hround {
	double p50[NK], p99[NK], t1[NK], t2[NK];
	uint64_t bad[NK];
	/* this process's CPU per op in the throughput cells: for /run_code, what paddock itself
	 * spends per request (HTTP, scheduler, store, pool, reset) without the sandboxed program */
	double cpu_ms[NK];
} hround;

/* Latency with one client, then throughput with one and with two; the cases interleaved, op by
 * op for latency and in 0.5 s slices for throughput: on a shared machine the speed drifts over
 * tens of seconds, and cases measured one after the other would carry that drift into their
 * ratio. */
static void measure(int port, bench_hconn *c, int iterations, double secs, hround *h)
{
	double e1[NK] = {0}, e2[NK] = {0}, cpu[NK] = {0};
	uint64_t ops[NK] = {0};
	memset(h, 0, sizeof *h);
	double *lat[NK];
	for (int k = 0; k < NK; k++)
		lat[k] = calloc((size_t)iterations, sizeof *lat[k]);
	for (int i = 0; i < iterations; i++)
		for (int k = 0; k < NK; k++) {
			uint64_t t0 = pd_now_us();
			if (!op((op_kind)k, &c[k]))
				h->bad[k]++;
			if (lat[k])
				lat[k][i] = (pd_now_us() - t0) / 1000.0;
		}
	const double slice = 0.5;
	int slices = (int)ceil(secs / slice);
	for (int r = 0; r < slices; r++)
		for (int k = 0; k < NK; k++) {
			uint64_t n1 = throughput((op_kind)k, port, 1, slice, &h->bad[k], &e1[k], &cpu[k]);
			uint64_t n2 = throughput((op_kind)k, port, 2, slice, &h->bad[k], &e2[k], &cpu[k]);
			h->t1[k] += (double)n1;
			h->t2[k] += (double)n2;
			ops[k] += n1 + n2;
		}
	for (int k = 0; k < NK; k++) {
		h->cpu_ms[k] = ops[k] ? cpu[k] / (double)ops[k] : 0;
		h->t1[k] = e1[k] > 0 ? h->t1[k] / e1[k] : 0;
		h->t2[k] = e2[k] > 0 ? h->t2[k] / e2[k] : 0;
		if (!lat[k])
			continue;
		cli_sort_latencies(lat[k], (size_t)iterations);
		h->p50[k] = cli_percentile(lat[k], (size_t)iterations, 50);
		h->p99[k] = cli_percentile(lat[k], (size_t)iterations, 99);
		free(lat[k]);
	}
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static const char *const names[NK] = {"floor: /usr/bin/python3 -c 'print(1)'", "POST /run_code python print(1)",
				      "GET /healthz (keep-alive)"};

typedef struct http_args {
	int iterations, rounds;
	uint64_t duration_ms;
} http_args;

/* The command line; 0, or the exit status of a bad one. */
static int http_args_parse(int argc, char **argv, http_args *a)
{
	static const struct option opts[] = {
	    {"http", no_argument, 0, 'H'},
	    {"iterations", required_argument, 0, 'n'},
	    {"duration", required_argument, 0, 'd'},
	    {"rounds", required_argument, 0, 'r'},
	    {0, 0, 0, 0},
	};
	*a = (http_args){.iterations = 100, .rounds = 1, .duration_ms = 3000};
	int ch;
	while ((ch = getopt_long(argc, argv, ":n:d:", opts, NULL)) != -1) {
		long v;
		switch (ch) {
		case 'H':
			break;
		case 'n':
			if (!cli_count("bench --http: --iterations", optarg, 10, 100000, &v))
				return EXIT_USAGE;
			a->iterations = (int)v;
			break;
		case 'd':
			if (!cli_duration_ms("bench --http: --duration", optarg, 500, 600000, &a->duration_ms))
				return EXIT_USAGE;
			break;
		case 'r':
			if (!cli_count("bench --http: --rounds", optarg, 1, 100, &v))
				return EXIT_USAGE;
			a->rounds = (int)v;
			break;
		default:
			return cli_bad_option("bench --http", "bench", "--iterations, --duration and --rounds", ch,
					      argv, opts);
		}
	}
	if (optind < argc) {
		cli_error("bench --http: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	return 0;
}

/* The table: each figure the median of the rounds' (the ratio too: the median of the rounds'
 * ratios, each taken within its round), then paddock's own CPU per request and the ratios the
 * issue sets targets for (p50x, t2x: per round). Returns whether an operation failed. */
static bool http_report(const hround *h, int rounds, double *p50x, double *t2x)
{
	bool failed = false;
	double v[5][100];
	if (rounds > 1)
		printf("\nmedians of the %d rounds:\n", rounds);
	printf("%-44s %8s %8s %10s %10s %10s %6s\n", "case", "p50 ms", "p99 ms", "ops/s 1c", "ops/s 2c", "x floor",
	       "fails");
	for (int k = 0; k < NK; k++) {
		uint64_t bad = 0;
		for (int r = 0; r < rounds; r++) {
			v[0][r] = h[r].p50[k];
			v[1][r] = h[r].p99[k];
			v[2][r] = h[r].t1[k];
			v[3][r] = h[r].t2[k];
			v[4][r] = ratio(h[r].t2[k], h[r].t2[OP_FLOOR]);
			bad += h[r].bad[k];
		}
		char x[32] = "1.00";
		if (k == OP_RUN_CODE)
			snprintf(x, sizeof x, "%.2f", bench_median(v[4], rounds));
		else if (k == OP_HEALTHZ)
			snprintf(x, sizeof x, "—");
		double p50 = bench_median(v[0], rounds), p99 = bench_median(v[1], rounds);
		double t1 = bench_median(v[2], rounds), t2 = bench_median(v[3], rounds);
		printf("%-44s %8.2f %8.2f %10.0f %10.0f %10s %6llu\n", names[k], p50, p99, t1, t2, x,
		       (unsigned long long)bad);
		failed |= bad > 0;
	}
	for (int r = 0; r < rounds; r++)
		v[0][r] = h[r].cpu_ms[OP_RUN_CODE];
	printf("\n  paddock's own CPU per /run_code: %.3f ms (issue 42 target <= 1.0 ms; this process's "
	       "threads over the\n  /run_code cells: HTTP, scheduler, store, pool and reset; not the "
	       "sandboxed program, not the\n  sandboxes' inits)\n",
	       bench_median(v[0], rounds));
	if (rounds == 1)
		printf("\n  /run_code p50 = %.2fx the floor's p50 (issue 42 target <= 1.08x); throughput "
		       "at 2 clients = %.2fx the floor's (target >= 0.9x)\n",
		       p50x[0], t2x[0]);
	else {
		double pm = bench_median(p50x, rounds), tm = bench_median(t2x, rounds);
		/* bench_median sorted them: the range is the ends */
		printf("\n  over %d rounds: /run_code p50 = %.2fx the floor's (%.2fx-%.2fx; issue "
		       "42 target <= 1.08x); throughput at 2 clients = %.2fx the floor's (%.2fx-%.2fx; "
		       "target >= 0.9x)\n",
		       rounds, pm, p50x[0], p50x[rounds - 1], tm, t2x[0], t2x[rounds - 1]);
	}
	return failed;
}

/* The rounds over connections c (one per case; the floor's unused); the exit status. */
static int http_rounds(const bench_daemon *d, bench_hconn *c, const http_args *a)
{
	double secs = a->duration_ms / 1000.0;
	int rounds = a->rounds;
	hround *h = calloc((size_t)rounds, sizeof *h);
	/* per round: the two ratios the issue sets targets for */
	double *p50x = calloc((size_t)rounds, sizeof *p50x), *t2x = calloc((size_t)rounds, sizeof *t2x);
	int rc = 0;
	if (!h || !p50x || !t2x) {
		cli_error("out of memory");
		rounds = 0;
		rc = EXIT_PADDOCK_FAILED;
	}
	for (int r = 0; r < rounds; r++) {
		measure(d->port, c, a->iterations, secs, &h[r]);
		p50x[r] = ratio(h[r].p50[OP_RUN_CODE], h[r].p50[OP_FLOOR]);
		t2x[r] = ratio(h[r].t2[OP_RUN_CODE], h[r].t2[OP_FLOOR]);
		if (rounds > 1) {
			printf("round %d/%d: /run_code p50 %.2fx the floor's, throughput at 2 clients %.2fx "
			       "(%.0f against %.0f ops/s)\n",
			       r + 1, rounds, p50x[r], t2x[r], h[r].t2[OP_RUN_CODE], h[r].t2[OP_FLOOR]);
			fflush(stdout);
		}
	}
	if (rounds > 0 && http_report(h, rounds, p50x, t2x))
		rc = EXIT_PADDOCK_FAILED;
	free(h);
	free(p50x);
	free(t2x);
	return rc;
}

int cmd_bench_http(int argc, char **argv)
{
	http_args a;
	int rc = http_args_parse(argc, argv, &a);
	if (rc)
		return rc;
	bench_daemon d;
	if (bench_daemon_start(&d, "http", 4) < 0)
		return EXIT_PADDOCK_FAILED;
	sleep(1); /* let the pools warm */
	printf("paddock bench --http — %ld CPUs, %d iterations, %.1f s per throughput cell, %d round%s, "
	       "daemon on %s\n\n",
	       sysconf(_SC_NPROCESSORS_ONLN), a.iterations, a.duration_ms / 1000.0, a.rounds,
	       a.rounds == 1 ? "" : "s", pd_server_address(d.s));
	bench_hconn c[NK];
	int k = 0;
	for (; k < NK; k++) {
		if (k != OP_FLOOR && bench_hconnect(&c[k], d.port) < 0) {
			cli_error("connect: %s", strerror(errno));
			rc = EXIT_PADDOCK_FAILED;
			break;
		}
		for (int i = 0; i < 5; i++)
			op((op_kind)k, &c[k]); /* warm-up */
	}
	if (!rc)
		rc = http_rounds(&d, c, &a);
	for (int j = 1; j < k; j++)
		close(c[j].fd);
	bench_daemon_stop(&d);
	return rc;
}
