/* paddock bench --http: the daemon measured side by side with its floor in one run.
 *
 *   floor      python3 -c 'print(1)' spawned and waited on the host
 *   run_code   POST /run_code {"language":"python","code":"print(1)"} over a keep-alive
 *              connection to an in-process `paddock serve` on loopback
 *   healthz    GET /healthz over keep-alive: what the HTTP layer alone costs
 *
 * p50/p99 with one client, then throughput with 1 and 2 clients; the three cases interleaved. */
#define _GNU_SOURCE
#include "bench.h"
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int bench_hconnect(bench_hconn *c, int port)
{
	c->len = 0;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return connect(c->fd, (struct sockaddr *)&sa, sizeof sa);
}

/* One request on a keep-alive connection; returns the status code, body in c->buf. */
int bench_hrequest(bench_hconn *c, const char *method, const char *path, const char *body)
{
	char head[512];
	size_t bl = body ? strlen(body) : 0;
	int hl = snprintf(head, sizeof head,
			  "%s %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
			  "Content-Length: %zu\r\n\r\n",
			  method, path, bl);
	if (write(c->fd, head, (size_t)hl) != hl || (bl && write(c->fd, body, bl) != (ssize_t)bl))
		return -1;
	c->len = 0;
	for (;;) {
		ssize_t n = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
		if (n <= 0)
			return -1;
		c->len += (size_t)n;
		c->buf[c->len] = 0;
		char *end = strstr(c->buf, "\r\n\r\n");
		if (!end)
			continue;
		char *cl = strcasestr(c->buf, "Content-Length:");
		size_t want = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
		size_t have = c->len - (size_t)(end + 4 - c->buf);
		if (have >= want) {
			int status = atoi(c->buf + 9);
			memmove(c->buf, end + 4, have);
			c->buf[have] = 0;
			return status;
		}
		if (c->len >= sizeof c->buf - 1)
			return -1;
	}
}

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

/* The python pool's count of `field` in the last GET /v1/pools response (in c->buf); -1 if absent. */
static long pool_count(const bench_hconn *c, const char *field)
{
	const char *p = strstr(c->buf, "\"template\":\"python\"");
	char key[32];
	snprintf(key, sizeof key, "\"%s\":", field);
	p = p ? strstr(p, key) : NULL;
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* Waits until the python pool neither resets nor creates: the work a cell's requests queued for
 * the reclaimer (and the refill to the pool's target) is part of that cell, or it would run in
 * the next cell, the floor's, and flatter /run_code's ratio twice. */
void bench_pool_quiet(int port, unsigned poll_ms)
{
	bench_hconn c;
	if (bench_hconnect(&c, port) < 0)
		return;
	uint64_t deadline = pd_now_us() + 30 * 1000000u;
	while (pd_now_us() < deadline && bench_hrequest(&c, "GET", "/v1/pools", NULL) == 200 &&
	       (pool_count(&c, "reclaiming") > 0 || pool_count(&c, "creating") > 0)) {
		struct timespec ts = {(time_t)(poll_ms / 1000), (long)(poll_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	close(c.fd);
}

/* ops completed by `clients` threads in about secs; *elapsed grows by the time they really took
 * (the last op started before the deadline ends after it, and for /run_code until the pool has
 * reset what the ops released) */
/* CPU time of this process so far, all threads (the in-process daemon's and the clients'), in µs */
static uint64_t self_cpu_us(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
	       (uint64_t)ru.ru_stime.tv_usec;
}

static uint64_t throughput(op_kind k, int port, int clients, double secs, uint64_t *bad, double *elapsed,
			   uint64_t *cpu_us)
{
	uint64_t t0 = pd_now_us(), c0 = self_cpu_us();
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
		bench_pool_quiet(port, 1); /* every 1 ms: finer than a reset */
	*elapsed += (pd_now_us() - t0) / 1e6;
	*cpu_us += self_cpu_us() - c0;
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
	double e1[NK] = {0}, e2[NK] = {0};
	uint64_t cpu[NK] = {0}, ops[NK] = {0};
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
		h->cpu_ms[k] = ops[k] ? (double)cpu[k] / 1000.0 / (double)ops[k] : 0;
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

/* The median of n values (sorted in place). */
static double median(double *v, int n)
{
	cli_sort_latencies(v, (size_t)n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int cmd_bench_http(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"http", no_argument, 0, 'H'},
	    {"iterations", required_argument, 0, 'n'},
	    {"duration", required_argument, 0, 'd'},
	    {"rounds", required_argument, 0, 'r'},
	    {0, 0, 0, 0},
	};
	int iterations = 100, rounds = 1;
	uint64_t duration_ms = 3000;
	int ch;
	while ((ch = getopt_long(argc, argv, ":n:d:", opts, NULL)) != -1) {
		long v;
		switch (ch) {
		case 'H':
			break;
		case 'n':
			if (!cli_count("bench --http: --iterations", optarg, 10, 100000, &v))
				return EXIT_USAGE;
			iterations = (int)v;
			break;
		case 'd':
			if (!cli_duration_ms("bench --http: --duration", optarg, 500, 600000, &duration_ms))
				return EXIT_USAGE;
			break;
		case 'r':
			if (!cli_count("bench --http: --rounds", optarg, 1, 100, &v))
				return EXIT_USAGE;
			rounds = (int)v;
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
	double secs = duration_ms / 1000.0;
	pd_log_enable(false);
	char db[] = "/tmp/paddock-bench-http-XXXXXX";
	int dfd = mkstemp(db);
	if (dfd >= 0)
		close(dfd);
	pd_server_opts o = {0};
	o.sched.retries = 2; /* as serve's default: the scheduler takes 0 as no retries */
	o.listen = "127.0.0.1:0";
	o.db_path = db;
	o.warm = 4;
	pd_err e = {0};
	pd_server *s = pd_server_start(&o, &e);
	if (!s) {
		cli_error("%s", PD_ERR_STR(&e));
		unlink(db);
		return EXIT_PADDOCK_FAILED;
	}
	int port = atoi(strrchr(pd_server_address(s), ':') + 1);
	sleep(1); /* let the pools warm */
	printf("paddock bench --http — %ld CPUs, %d iterations, %.1f s per throughput cell, %d round%s, "
	       "daemon on %s\n\n",
	       sysconf(_SC_NPROCESSORS_ONLN), iterations, secs, rounds, rounds == 1 ? "" : "s",
	       pd_server_address(s));
	static const char *const names[] = {"floor: /usr/bin/python3 -c 'print(1)'",
					    "POST /run_code python print(1)", "GET /healthz (keep-alive)"};
	int rc = 0;
	bench_hconn c[NK];
	for (int k = 0; k < NK; k++) {
		if (k != OP_FLOOR && bench_hconnect(&c[k], port) < 0) {
			cli_error("connect: %s", strerror(errno));
			for (int j = 1; j < k; j++)
				close(c[j].fd);
			pd_server_stop(s);
			unlink(db);
			return EXIT_PADDOCK_FAILED;
		}
		for (int i = 0; i < 5; i++)
			op((op_kind)k, &c[k]); /* warm-up */
	}
	hround *h = calloc((size_t)rounds, sizeof *h);
	/* per round: the two ratios the issue sets targets for */
	double *p50x = calloc((size_t)rounds, sizeof *p50x), *t2x = calloc((size_t)rounds, sizeof *t2x);
	if (!h || !p50x || !t2x) {
		cli_error("out of memory");
		rounds = 0;
		rc = EXIT_PADDOCK_FAILED;
	}
	for (int r = 0; r < rounds; r++) {
		measure(port, c, iterations, secs, &h[r]);
		p50x[r] = ratio(h[r].p50[OP_RUN_CODE], h[r].p50[OP_FLOOR]);
		t2x[r] = ratio(h[r].t2[OP_RUN_CODE], h[r].t2[OP_FLOOR]);
		if (rounds > 1) {
			printf("round %d/%d: /run_code p50 %.2fx the floor's, throughput at 2 clients %.2fx "
			       "(%.0f against %.0f ops/s)\n",
			       r + 1, rounds, p50x[r], t2x[r], h[r].t2[OP_RUN_CODE], h[r].t2[OP_FLOOR]);
			fflush(stdout);
		}
	}
	for (int k = 1; k < NK; k++)
		close(c[k].fd);
	if (rounds > 0) {
		/* with several rounds, each figure is the median of the rounds' (the ratio too: the
		 * median of the rounds' ratios, each taken within its round) */
		double v[5][100];
		if (rounds > 1)
			printf("\nmedians of the %d rounds:\n", rounds);
		printf("%-44s %8s %8s %10s %10s %10s %6s\n", "case", "p50 ms", "p99 ms", "ops/s 1c",
		       "ops/s 2c", "x floor", "fails");
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
				snprintf(x, sizeof x, "%.2f", median(v[4], rounds));
			else if (k == OP_HEALTHZ)
				snprintf(x, sizeof x, "—");
			double p50 = median(v[0], rounds), p99 = median(v[1], rounds);
			double t1 = median(v[2], rounds), t2 = median(v[3], rounds);
			printf("%-44s %8.2f %8.2f %10.0f %10.0f %10s %6llu\n", names[k], p50, p99, t1, t2, x,
			       (unsigned long long)bad);
			if (bad)
				rc = EXIT_PADDOCK_FAILED;
		}
		for (int r = 0; r < rounds; r++)
			v[0][r] = h[r].cpu_ms[OP_RUN_CODE];
		printf("\n  paddock's own CPU per /run_code: %.3f ms (issue 42 target <= 1.0 ms; this process's "
		       "threads over the\n  /run_code cells: HTTP, scheduler, store, pool and reset; not the "
		       "sandboxed program, not the\n  sandboxes' inits)\n",
		       median(v[0], rounds));
		if (rounds == 1)
			printf("\n  /run_code p50 = %.2fx the floor's p50 (issue 42 target <= 1.08x); throughput "
			       "at 2 clients = %.2fx the floor's (target >= 0.9x)\n",
			       p50x[0], t2x[0]);
		else {
			double pm = median(p50x, rounds), tm = median(t2x, rounds);
			/* median() sorted them: the range is the ends */
			printf("\n  over %d rounds: /run_code p50 = %.2fx the floor's (%.2fx-%.2fx; issue "
			       "42 target <= 1.08x); throughput at 2 clients = %.2fx the floor's (%.2fx-%.2fx; "
			       "target >= 0.9x)\n",
			       rounds, pm, p50x[0], p50x[rounds - 1], tm, t2x[0], t2x[rounds - 1]);
		}
	}
	free(h);
	free(p50x);
	free(t2x);
	pd_server_stop(s);
	unlink(db);
	char wal[64];
	snprintf(wal, sizeof wal, "%s-wal", db);
	unlink(wal);
	snprintf(wal, sizeof wal, "%s-shm", db);
	unlink(wal);
	return rc;
}
