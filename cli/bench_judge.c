/* paddock bench --judge: the judge's cells of issue 21 ("Speed"), side by side in one run, each round
 * alternating the sides so that the machine's noise falls on both, and the ratios per round:
 *
 *   cpp20   a C++ submission with 20 stdin tests: POST /v1/judge (compiled once, 20 runs in clean
 *           sandboxes, checked) against the same 20 tests sent the way verl's SandboxFusion path sends
 *           them (one POST /run_code per test, compiling each time; the client compares stdout)
 *   py20    a python submission with 20 tests: POST /v1/judge against the floor (python3 on the host,
 *           20 processes, the output compared in this process: the checker included) and a peer
 *           (the same 20 runs under bubblewrap with paddock's namespaces)
 *   rate2   judged python submissions per second with 2 clients at once, against 2 host workers
 *           running the floor's 20 tests per submission
 *   grpo    a GRPO-like mix at 2 clients (groups of 8 samples, 2 of them duplicates of another in
 *           the group: 25%), the fingerprint cache on against the same mix with "cache": false
 *   audit   the cpp20 and py20 submissions judged with "audit": true (every test run audited under
 *           the default policy) against the same with no audit, in the order off, on, on, off in
 *           each round (issue 22's target: full audit at most 10% over audit off). --audit runs
 *           only these cells, --rounds of them.
 *
 * The daemon is started in this process (as --http does) with inline problems, so that no file
 * outside the run is needed. Not a test: timings are never asserted. */
#define _GNU_SOURCE
#include "bench_daemon.h"
#include "bench_util.h"
#include "cli.h"
#include "httpc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NTESTS 20

static const char cpp_code[] = "#include <iostream>\nint main(){long x;std::cin>>x;std::cout<<x*x<<'\\n';}\n";
static const char py_code[] = "x = int(input())\nprint(x * x)\n";

static const char *url; /* the daemon's */
static char *py_dir; /* main.py for the floor and the peer */
static char bwrap_path[4096];
static bool have_bwrap;

static double now_ms(void)
{
	return now_ns() / 1e6;
}

/* A judge request: the inline problem of NTESTS squares, the code (with a comment that makes it
 * unique when tag >= 0), the cache on or off. */
static char *judge_body_audit(const char *lang, const char *code, long tag, bool cache, bool audit);

static char *judge_body(const char *lang, const char *code, long tag, bool cache)
{
	return judge_body_audit(lang, code, tag, cache, false);
}

static char *judge_body_audit(const char *lang, const char *code, long tag, bool cache, bool audit)
{
	json_t *tests = json_array();
	for (int i = 1; i <= NTESTS; i++) {
		char in[32], out[32];
		snprintf(in, sizeof in, "%d\n", i);
		snprintf(out, sizeof out, "%d\n", i * i);
		json_array_append_new(tests, json_pack("{s:s,s:s}", "input", in, "output", out));
	}
	char *src = NULL;
	if (tag >= 0 && asprintf(&src, "%s# sample %ld\n", code, tag) < 0)
		src = NULL;
	json_t *o = json_pack("{s:{s:o},s:s,s:s,s:b}", "problem", "tests", tests, "language", lang, "code",
			      src ? src : code, "cache", cache);
	free(src);
	/* said either way: the judge audits by default, and the off side must run without it */
	json_object_set_new(o, "audit", audit ? json_true() : json_false());
	char *s = pd_json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* POSTs a judge request; 0 when it passed, its process level as asked (audited: "pass"; else
 * "not_audited", so that no side is timed without the work it stands for); *hit set when the
 * cache answered. */
static int post_judge(const char *body, bool *hit)
{
	int status = 0;
	char err[256];
	json_error_t je;
	json_t *req = json_loads(body, 0, &je);
	const char *want = json_is_true(json_object_get(req, "audit")) ? "pass" : "not_audited";
	json_t *rec = httpc_json(url, "POST", "/v1/judge", req, NULL, &status, err, sizeof err);
	json_decref(req);
	json_t *v = json_object_get(rec, "verdict");
	const char *out = json_string_value(json_object_get(json_object_get(v, "output"), "status"));
	const char *proc = json_string_value(json_object_get(json_object_get(v, "process"), "status"));
	int rc = status == 200 && out && !strcmp(out, "pass") && proc && !strcmp(proc, want) ? 0 : -1;
	if (hit)
		*hit = !strcmp(json_string_value(json_object_get(rec, "cache")) ?: "", "hit");
	json_decref(rec);
	return rc;
}

/* verl's way: one POST /run_code per test, the client comparing stdout. 0 when all 20 matched. */
static int verl_cpp(void)
{
	int bad = 0;
	for (int i = 1; i <= NTESTS; i++) {
		char in[32], want[32];
		snprintf(in, sizeof in, "%d\n", i);
		snprintf(want, sizeof want, "%d\n", i * i);
		json_t *req = json_pack("{s:s,s:s,s:s}", "code", cpp_code, "language", "cpp", "stdin", in);
		int status = 0;
		char err[256];
		json_t *r = httpc_json(url, "POST", "/run_code", req, NULL, &status, err, sizeof err);
		json_decref(req);
		const char *got = json_string_value(json_object_get(json_object_get(r, "run_result"), "stdout"));
		bad += !(status == 200 && got && !strcmp(got, want));
		json_decref(r);
	}
	return bad ? -1 : 0;
}

/* Runs argv with input on stdin; 0 when it exited 0 and its stdout, trailing whitespace aside,
 * is want's (the lines checker's rule, done here: the floor includes the check). */
static int run_check(char *const argv[], const char *input, const char *want)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (pid > 0 && write(in[1], input, strlen(input)) < 0)
		pid = -1;
	close(in[1]);
	char buf[256];
	size_t n = 0;
	ssize_t k;
	while ((k = read(out[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)k;
	close(out[0]);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	while (n && strchr(" \t\r\n", buf[n - 1]))
		n--;
	buf[n] = 0;
	size_t wl = strlen(want);
	while (wl && strchr(" \t\r\n", want[wl - 1]))
		wl--;
	return n == wl && !memcmp(buf, want, wl) ? 0 : -1;
}

/* The 20 tests of the python submission on the host (peer: under bwrap). */
static int py_local(bool peer)
{
	char main_py[512];
	snprintf(main_py, sizeof main_py, "%s/main.py", py_dir);
	char *floor_argv[] = {(char *)"/usr/bin/python3", main_py, NULL};
	char *peer_argv[] = {bwrap_path, (char *)"--unshare-user", (char *)"--unshare-pid", (char *)"--unshare-net",
			     (char *)"--unshare-ipc", (char *)"--unshare-uts", (char *)"--unshare-cgroup",
			     (char *)"--die-with-parent", (char *)"--ro-bind", (char *)"/usr", (char *)"/usr",
			     (char *)"--symlink", (char *)"usr/bin", (char *)"/bin", (char *)"--symlink",
			     (char *)"usr/lib", (char *)"/lib", (char *)"--symlink", (char *)"usr/lib64",
			     (char *)"/lib64", (char *)"--proc", (char *)"/proc", (char *)"--dev", (char *)"/dev",
			     (char *)"--tmpfs", (char *)"/tmp", (char *)"--ro-bind", py_dir, (char *)"/work",
			     (char *)"/usr/bin/python3", (char *)"/work/main.py", NULL};
	int bad = 0;
	for (int i = 1; i <= NTESTS; i++) {
		char in[32], want[32];
		snprintf(in, sizeof in, "%d\n", i);
		snprintf(want, sizeof want, "%d\n", i * i);
		bad += run_check(peer ? peer_argv : floor_argv, in, want) < 0;
	}
	return bad ? -1 : 0;
}

/* ---- the 2-client cells ---------------------------------------------------------------------- */

typedef enum { C_JUDGE, C_FLOOR, C_GRPO_ON, C_GRPO_OFF } cell_kind;

typedef struct cell {
	cell_kind k;
	double until_ms;
	pthread_mutex_t mu;
	long next_tag;      /* unique samples, across the whole run: a new group never hits an old one */
	uint64_t ok, failed, hits;
} cell;

static const char *py_body_nocache;

/* One GRPO group of 8 by one client: 6 unique samples and 2 duplicates of two of them (25%). */
static void grpo_group(cell *c, bool cache)
{
	pthread_mutex_lock(&c->mu);
	long base = c->next_tag;
	c->next_tag += 6;
	pthread_mutex_unlock(&c->mu);
	static const int order[8] = {0, 1, 2, 0, 3, 4, 5, 3};
	for (int i = 0; i < 8; i++) {
		char *b = judge_body("python", py_code, base + order[i], cache);
		bool hit = false;
		int rc = b ? post_judge(b, &hit) : -1;
		free(b);
		pthread_mutex_lock(&c->mu);
		rc == 0 ? c->ok++ : c->failed++;
		c->hits += hit;
		pthread_mutex_unlock(&c->mu);
	}
}

static void *cell_worker(void *arg)
{
	cell *c = arg;
	while (now_ms() < c->until_ms) {
		if (c->k == C_GRPO_ON || c->k == C_GRPO_OFF) {
			grpo_group(c, c->k == C_GRPO_ON);
			continue;
		}
		int rc = c->k == C_JUDGE ? post_judge(py_body_nocache, NULL) : py_local(false);
		pthread_mutex_lock(&c->mu);
		rc == 0 ? c->ok++ : c->failed++;
		pthread_mutex_unlock(&c->mu);
	}
	return NULL;
}

/* Submissions per second of a cell at 2 clients; the work started before the deadline is counted
 * and timed to its end. *cpu_per_op (if asked): paddock's own CPU per completed submission. */
static double run_cell(cell_kind k, double secs, long *tag, uint64_t *hits, uint64_t *failed, double *cpu_per_op)
{
	cell c = {.k = k, .next_tag = *tag};
	pthread_mutex_init(&c.mu, NULL);
	double t0 = now_ms(), c0 = bench_self_cpu_ms();
	c.until_ms = t0 + secs * 1000;
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, cell_worker, &c);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	double el = (now_ms() - t0) / 1000;
	/* this process's threads (the in-process daemon's and the two clients'): not the sandboxed
	 * programs, which are other processes' CPU */
	if (cpu_per_op)
		*cpu_per_op = c.ok ? (bench_self_cpu_ms() - c0) / (double)c.ok : 0;
	*tag = c.next_tag;
	if (hits)
		*hits = c.hits;
	*failed += c.failed;
	pthread_mutex_destroy(&c.mu);
	return el > 0 ? c.ok / el : 0;
}

/* The machine's cost of handing the CPU between two processes: a one-byte pipe round trip (us),
 * both on CPU 0, or on CPUs 0 and 1. Each audited call is such a hand-over to the daemon's
 * handler and back, so the audit's share moves with it from machine to machine (a nested VM's
 * may be several times a bare host's). Measured in a child of its own: the caller's affinity
 * is left alone. -1 when it could not be measured. */
static double switch_rt_us(bool cross)
{
	int res[2];
	if (pipe2(res, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		int a[2], b[2];
		double us = -1;
		cpu_set_t cs;
		CPU_ZERO(&cs);
		CPU_SET(0, &cs);
		if (pipe(a) == 0 && pipe(b) == 0 && sched_setaffinity(0, sizeof cs, &cs) == 0) {
			enum { N = 20000 };
			char c = 0;
			pid_t peer = fork();
			if (peer == 0) {
				CPU_ZERO(&cs);
				CPU_SET(cross ? 1 : 0, &cs);
				if (sched_setaffinity(0, sizeof cs, &cs) < 0)
					_exit(1);
				for (int i = 0; i < N; i++)
					if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
						_exit(1);
				_exit(0);
			}
			double t = now_ms();
			int i = 0;
			for (; peer > 0 && i < N; i++)
				if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
					break;
			if (i == N)
				us = (now_ms() - t) * 1000.0 / N;
			if (peer > 0)
				waitpid(peer, NULL, 0);
		}
		_exit(write(res[1], &us, sizeof us) == sizeof us ? 0 : 1);
	}
	close(res[1]);
	double us = -1;
	if (pid < 0 || read(res[0], &us, sizeof us) != sizeof us)
		us = -1;
	close(res[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return us;
}

/* ---- the command ----------------------------------------------------------------------------- */

enum { F_CPP_JUDGE, F_CPP_VERL, F_PY_JUDGE, F_PY_FLOOR, F_PY_BWRAP, F_RATE_JUDGE, F_RATE_FLOOR, F_GRPO_ON,
       F_GRPO_OFF, F_GRPO_HITS, F_CPP_AUDIT_OFF, F_CPP_AUDIT_ON, F_PY_AUDIT_OFF, F_PY_AUDIT_ON, F_JUDGE_CPU, NF };

/* The audit cells of one round: each side twice, off on on off, the sum of the two (ms). */
static void audit_cells(double *row, const char *off_body, const char *on_body, int f_off, int f_on, uint64_t *failed)
{
	const char *order[4] = {off_body, on_body, on_body, off_body};
	row[f_off] = row[f_on] = 0;
	for (int k = 0; k < 4; k++) {
		double t = now_ms();
		*failed += post_judge(order[k], NULL) < 0;
		row[order[k] == on_body ? f_on : f_off] += now_ms() - t;
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median and range of one ratio over the rounds. */
static void ratio_line(const char *what, double (*r)[NF], int rounds, int num, int den, const char *target)
{
	double v[100];
	int n = 0;
	for (int i = 0; i < rounds; i++)
		if (r[i][den] > 0)
			v[n++] = r[i][num] / r[i][den];
	if (!n) {
		printf("  %-58s n/a\n", what);
		return;
	}
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	printf("  %-58s %6.2fx  (rounds %.2f-%.2f)  %s\n", what, v[n / 2], v[0], v[n - 1], target);
}

static double median_of(double (*r)[NF], int rounds, int f)
{
	double v[100];
	for (int i = 0; i < rounds; i++)
		v[i] = r[i][f];
	qsort(v, (size_t)rounds, sizeof *v, cmp_d);
	return v[rounds / 2];
}

typedef struct judge_args {
	int rounds;
	bool audit_only;
	uint64_t duration_ms;
} judge_args;

/* The command line; 0, or the exit status of a bad one. */
static int judge_args_parse(int argc, char **argv, judge_args *a)
{
	static const struct option opts[] = {
	    {"judge", no_argument, 0, 'J'},
	    {"duration", required_argument, 0, 'd'},
	    {"rounds", required_argument, 0, 'r'},
	    {"audit", no_argument, 0, 'A'},
	    {0, 0, 0, 0},
	};
	*a = (judge_args){.rounds = 3, .duration_ms = 5000};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":d:", opts, NULL)) != -1) {
		long v;
		switch (ch) {
		case 'J':
			break;
		case 'A':
			a->audit_only = true;
			break;
		case 'd':
			if (!cli_duration_ms("bench --judge: --duration", optarg, 1000, 600000, &a->duration_ms))
				return EXIT_USAGE;
			break;
		case 'r':
			if (!cli_count("bench --judge: --rounds", optarg, 1, 100, &v))
				return EXIT_USAGE;
			a->rounds = (int)v;
			break;
		default:
			return cli_bad_option("bench --judge", "bench", "--duration, --rounds and --audit", ch, argv, opts);
		}
	}
	if (optind < argc) {
		cli_error("bench --judge: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	return 0;
}

/* The requests of the cells: the two submissions, without and with the audit. */
typedef struct judge_bodies {
	char *cpp, *py, *cpp_audit, *py_audit;
} judge_bodies;

/* Round i into row: the audit cells, then (unless audit_only) every other side, each printed. */
static void judge_round(int i, double *row, const judge_bodies *b, const judge_args *a, long *tag,
			uint64_t *failed)
{
	audit_cells(row, b->cpp, b->cpp_audit, F_CPP_AUDIT_OFF, F_CPP_AUDIT_ON, failed);
	audit_cells(row, b->py, b->py_audit, F_PY_AUDIT_OFF, F_PY_AUDIT_ON, failed);
	printf("round %d: audit (2 each, off on on off): cpp20 off %.0f ms, on %.0f ms | py20 off %.0f ms, on %.0f ms\n",
	       i + 1, row[F_CPP_AUDIT_OFF], row[F_CPP_AUDIT_ON], row[F_PY_AUDIT_OFF], row[F_PY_AUDIT_ON]);
	fflush(stdout);
	if (a->audit_only)
		return;
	double t, secs = a->duration_ms / 1000.0;
	t = now_ms();
	*failed += post_judge(b->cpp, NULL) < 0;
	row[F_CPP_JUDGE] = now_ms() - t;
	t = now_ms();
	*failed += verl_cpp() < 0;
	row[F_CPP_VERL] = now_ms() - t;
	t = now_ms();
	*failed += py_local(false) < 0;
	row[F_PY_FLOOR] = now_ms() - t;
	t = now_ms();
	*failed += post_judge(b->py, NULL) < 0;
	row[F_PY_JUDGE] = now_ms() - t;
	if (have_bwrap) {
		t = now_ms();
		*failed += py_local(true) < 0;
		row[F_PY_BWRAP] = now_ms() - t;
	}
	row[F_RATE_FLOOR] = run_cell(C_FLOOR, secs, tag, NULL, failed, NULL);
	row[F_RATE_JUDGE] = run_cell(C_JUDGE, secs, tag, NULL, failed, &row[F_JUDGE_CPU]);
	row[F_GRPO_OFF] = run_cell(C_GRPO_OFF, secs, tag, NULL, failed, NULL);
	uint64_t hits = 0;
	row[F_GRPO_ON] = run_cell(C_GRPO_ON, secs, tag, &hits, failed, NULL);
	row[F_GRPO_HITS] = (double)hits;
	printf("round %d: cpp20 judge %.0f ms, verl-style %.0f ms | py20 judge %.0f ms, floor %.0f ms, bwrap %.0f ms | "
	       "2 clients: judge %.2f/s, floor %.2f/s | grpo cache on %.2f/s (%llu hits), off %.2f/s\n",
	       i + 1, row[F_CPP_JUDGE], row[F_CPP_VERL], row[F_PY_JUDGE], row[F_PY_FLOOR], row[F_PY_BWRAP],
	       row[F_RATE_JUDGE], row[F_RATE_FLOOR], row[F_GRPO_ON], (unsigned long long)hits, row[F_GRPO_OFF]);
	fflush(stdout);
}

/* The medians and the ratios over the rounds. */
static void judge_report(double (*r)[NF], int rounds, bool audit_only, uint64_t failed)
{
	if (!audit_only) {
		printf("\nmedians: cpp20 judge %.0f ms, verl-style %.0f ms; py20 judge %.0f ms, floor %.0f ms, bwrap %.0f "
		       "ms;\n"
		       "         2 clients judge %.2f/s, floor %.2f/s; grpo cache on %.2f/s, off %.2f/s\n\n",
		       median_of(r, rounds, F_CPP_JUDGE), median_of(r, rounds, F_CPP_VERL),
		       median_of(r, rounds, F_PY_JUDGE), median_of(r, rounds, F_PY_FLOOR),
		       median_of(r, rounds, F_PY_BWRAP), median_of(r, rounds, F_RATE_JUDGE),
		       median_of(r, rounds, F_RATE_FLOOR), median_of(r, rounds, F_GRPO_ON),
		       median_of(r, rounds, F_GRPO_OFF));
		printf("ratios (median over rounds, and their range):\n");
		ratio_line("cpp20: verl-style time / judge time (speed-up)", r, rounds, F_CPP_VERL, F_CPP_JUDGE,
			   "target >= 5x");
		ratio_line("py20: floor time / judge time (judge speed vs the floor)", r, rounds, F_PY_FLOOR,
			   F_PY_JUDGE, "target >= 0.8x");
		if (have_bwrap)
			ratio_line("py20: bwrap time / judge time (judge speed vs the peer)", r, rounds, F_PY_BWRAP,
				   F_PY_JUDGE, "");
		ratio_line("2 clients: judge rate / floor rate", r, rounds, F_RATE_JUDGE, F_RATE_FLOOR, "");
		ratio_line("grpo mix (8 per group, 25% duplicates): cache on / off", r, rounds, F_GRPO_ON, F_GRPO_OFF,
			   "ideal 1.33x");
		printf("\n  paddock's own CPU per judged submission (py20, 2 clients, no cache): %.2f ms (median over "
		       "rounds;\n  this process's threads: HTTP, judge, scheduler, store, pools; not the sandboxed "
		       "programs)\n",
		       median_of(r, rounds, F_JUDGE_CPU));
	}
	printf("\naudit overhead (judged, 20 tests, \"audit\": true over no audit; median over rounds):\n");
	ratio_line("cpp20: audit on / audit off", r, rounds, F_CPP_AUDIT_ON, F_CPP_AUDIT_OFF, "target <= 1.10x");
	ratio_line("py20: audit on / audit off", r, rounds, F_PY_AUDIT_ON, F_PY_AUDIT_OFF, "target <= 1.10x");
	if (failed)
		printf("\n%llu operations failed (a judge that did not pass or not audited as asked, or a wrong output)\n",
		       (unsigned long long)failed);
}

int cmd_bench_judge(int argc, char **argv)
{
	judge_args a;
	int rc = judge_args_parse(argc, argv, &a);
	if (rc)
		return rc;
	have_bwrap = access("/usr/bin/bwrap", X_OK) == 0;
	snprintf(bwrap_path, sizeof bwrap_path, "/usr/bin/bwrap");
	/* before the daemon's threads: the measurement forks */
	double rt_same = switch_rt_us(false), rt_cross = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? switch_rt_us(true) : -1;
	bench_daemon d;
	if (bench_daemon_start(&d, "judge", 4) < 0)
		return EXIT_PADDOCK_FAILED;
	url = d.url;
	py_dir = d.dir;
	char path[128];
	snprintf(path, sizeof path, "%s/main.py", d.dir);
	FILE *f = fopen(path, "we");
	if (!f || fputs(py_code, f) < 0 || fclose(f) != 0) {
		cli_error("bench --judge: %s: %s", path, strerror(errno));
		unlink(path);
		bench_daemon_stop(&d);
		return EXIT_PADDOCK_FAILED;
	}
	printf("paddock bench --judge — %ld CPUs, %d round%s, %.1f s per 2-client cell, daemon on %s\n"
	       "(20 tests per submission; each round runs every side, alternating; ratios per round)\n\n",
	       sysconf(_SC_NPROCESSORS_ONLN), a.rounds, a.rounds == 1 ? "" : "s", a.duration_ms / 1000.0,
	       pd_server_address(d.s));
	/* what an audited call's stop costs here at the least: the ratio is read against it */
	printf("this machine: a pipe round trip between two processes takes %.1f us on one CPU, %.1f us across "
	       "two\n(each audited call hands the CPU to the daemon and back)\n\n",
	       rt_same, rt_cross);
	judge_bodies b = {judge_body("cpp", cpp_code, -1, false), judge_body("python", py_code, -1, false),
			  judge_body_audit("cpp", cpp_code, -1, false, true),
			  judge_body_audit("python", py_code, -1, false, true)};
	py_body_nocache = b.py;
	/* warm-up: the pools, the compilers' page cache, python's */
	post_judge(b.cpp, NULL);
	post_judge(b.py, NULL);
	py_local(false);
	double(*r)[NF] = calloc((size_t)a.rounds, sizeof *r);
	uint64_t failed = 0;
	long tag = (long)getpid() * 1000000L; /* unique samples: the store's cache is per daemon anyway */
	post_judge(b.cpp_audit, NULL);
	post_judge(b.py_audit, NULL);
	for (int i = 0; i < a.rounds; i++)
		judge_round(i, r[i], &b, &a, &tag, &failed);
	judge_report(r, a.rounds, a.audit_only, failed);
	free(r);
	free(b.cpp);
	free(b.py);
	free(b.cpp_audit);
	free(b.py_audit);
	unlink(path);
	bench_daemon_stop(&d);
	return failed ? EXIT_PADDOCK_FAILED : 0;
}
