/* paddock bench: sandbox start latency and throughput, side by side with the floor (a plain spawn
 * of the same program) and a peer (bwrap with the same namespaces), all in one run. These machines
 * are noisy, so only ratios taken in the same run mean much (DESIGN.md §7).
 *
 * Every case is one kind of operation (spawn a command, pd_run, create+destroy, exec in a live
 * sandbox) driven by workers: first a latency phase (1 worker, N timed operations), then fixed-
 * duration throughput cells with 1 and 2 workers. Phases run case after case, so that the rows a
 * ratio compares were measured close together in time. Failed operations are counted and never
 * timed: a row that measured errors says so. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_WORKERS 2 /* the throughput cells: 1 worker, then 2 */
#define WARMUP 5      /* untimed operations before the latency phase (page cache, slot files) */
#define ERR_LEN 256

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- what the workers share (read-only while they run) --------------------------------------- */

typedef struct bench_env {
	pd_ctx *ctx;        /* NULL when the library could not start: lib cases are skipped */
	pd_sandbox_opts so; /* full isolation, default limits */
	pd_exec_opts xo;    /* /bin/true, stdin /dev/null, output kept (not passed through) */
} bench_env;

typedef struct worker worker;

/* One kind of measurement: how a worker gets ready, does one operation, and cleans up. op returns
 * 0 when the operation did what it should, -1 after recording why not. */
typedef struct bench_kind {
	int (*setup)(worker *w);
	int (*op)(worker *w);
	void (*cleanup)(worker *w);
} bench_kind;

typedef struct lat_stats {
	size_t n;
	double p50, p99, mean, min, max; /* ms */
} lat_stats;

typedef struct tp_cell {
	bool done;
	int workers;
	uint64_t ok, failed;
	double secs, ops_s;
	double max_op_ms;   /* the slowest operation: a stall shows here and in secs */
	bool cpu_from_perf; /* cpu_ms_op from an inherited task-clock counter, else getrusage */
	double cpu_ms_op;   /* CPU of this process and all it started, per OK operation */
	double host_ms_op;  /* busy time of all CPUs (/proc/stat) per OK operation: adds kernel
			     * workers (namespace teardown is deferred to them) and other load */
} tp_cell;

typedef struct bench_case {
	const char *key, *label;
	const bench_kind *kind;
	const char *const *argv; /* spawned kinds: the command */
	bool selected;
	const char *skip; /* why it was not measured */
	/* results */
	bool lat_done;
	lat_stats lat;
	tp_cell tp[MAX_WORKERS];
	uint64_t failed; /* over all phases, warm-up included */
	char error[ERR_LEN];
	uint64_t parts_n, part_us[3]; /* lib: sums of the lifecycle parts over the latency phase */
	const char *part_names[3];
} bench_case;

struct worker {
	const bench_env *env;
	const bench_case *bc;
	/* spawned kinds */
	posix_spawn_file_actions_t fa;
	bool fa_ok;
	int nullfd, errfd; /* children's stdio: /dev/null, and a memfd that keeps their stderr */
	/* lib-exec: this worker's long-lived sandbox */
	pd_sandbox *sb;
	/* counts */
	uint64_t ok, failed;
	char error[ERR_LEN]; /* the first failure, as it was reported */
	uint64_t part_us[3];
	/* throughput: the start signal and the end of the cell */
	struct tp_run *run;
	uint64_t max_op_ns;
};

static int record_failure(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int record_failure(worker *w, const char *fmt, ...)
{
	w->failed++;
	if (!w->error[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->error, sizeof w->error, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ---- spawned commands: floor, bwrap, the paddock CLI ----------------------------------------- */

static int spawn_setup(worker *w)
{
	w->nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	/* a child's stderr is kept so that a failure can be reported in its own words */
	w->errfd = memfd_create("paddock-bench-stderr", MFD_CLOEXEC);
	if (w->nullfd < 0 || w->errfd < 0)
		return record_failure(w, "child stdio: %s", strerror(errno));
	posix_spawn_file_actions_init(&w->fa);
	w->fa_ok = true;
	if (posix_spawn_file_actions_adddup2(&w->fa, w->nullfd, STDIN_FILENO) ||
	    posix_spawn_file_actions_adddup2(&w->fa, w->nullfd, STDOUT_FILENO) ||
	    posix_spawn_file_actions_adddup2(&w->fa, w->errfd, STDERR_FILENO))
		return record_failure(w, "posix_spawn_file_actions: out of memory");
	return 0;
}

/* The first line of what the child wrote to stderr, then the memfd is emptied for the next one. */
static void take_stderr(worker *w, char *buf, size_t len)
{
	buf[0] = 0;
	ssize_t n = pread(w->errfd, buf, len - 1, 0);
	if (n > 0) {
		buf[n] = 0;
		buf[strcspn(buf, "\n")] = 0;
	}
	if (ftruncate(w->errfd, 0) == 0)
		lseek(w->errfd, 0, SEEK_SET);
}

/* posix_spawn is glibc's clone(CLONE_VM|CLONE_VFORK) + execve: the cheapest honest way for one
 * process to start another, and the same path for all three spawned rows. */
static int spawn_op(worker *w)
{
	pid_t pid;
	/* POSIX declares argv as char *const[] for historical reasons; it is never written to */
	char *const *argv = (char *const *)w->bc->argv;
	int err = posix_spawn(&pid, argv[0], &w->fa, NULL, argv, environ);
	if (err)
		return record_failure(w, "spawn %s: %s", w->bc->argv[0], strerror(err));
	int st;
	pid_t r;
	do
		r = waitpid(pid, &st, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return record_failure(w, "waitpid %d: %s", (int)pid, strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		/* a warning on a successful run must not pile up in the memfd */
		if (lseek(w->errfd, 0, SEEK_CUR) > 0) {
			char ignored[8];
			take_stderr(w, ignored, sizeof ignored);
		}
		return 0;
	}
	char msg[160];
	take_stderr(w, msg, sizeof msg);
	if (WIFEXITED(st))
		return record_failure(w, "exit %d%s%s", WEXITSTATUS(st), msg[0] ? ": " : "", msg);
	return record_failure(w, "killed by signal %d%s%s", WTERMSIG(st), msg[0] ? ": " : "", msg);
}

static void spawn_cleanup(worker *w)
{
	if (w->fa_ok)
		posix_spawn_file_actions_destroy(&w->fa);
	w->fa_ok = false;
	if (w->nullfd >= 0)
		close(w->nullfd);
	if (w->errfd >= 0)
		close(w->errfd);
	w->nullfd = w->errfd = -1;
}

/* ---- library, in process --------------------------------------------------------------------- */

/* A result counts only if the program ran to OK; anything else is what the row would hide. */
static int check_result(worker *w, int rc, const pd_result *r, const pd_err *e)
{
	if (rc < 0 && r->status != PD_XX)
		return record_failure(w, "%s", e->msg);
	if (r->status == PD_XX)
		return record_failure(w, "XX: %s", r->error[0] ? r->error : e->msg);
	if (r->status != PD_OK)
		return record_failure(w, "%s after %" PRIu64 " ms (exit %d, signal %d)%s%s",
				      pd_status_name(r->status), r->wall_ms, r->exit_code,
				      r->signal, r->error[0] ? ": " : "", r->error);
	return 0;
}

/* pd_run: create + exec /bin/true + destroy, the whole life of a one-shot sandbox. */
static int lib_run_op(worker *w)
{
	pd_result r;
	pd_err e = {0};
	int rc = pd_run(w->env->ctx, &w->env->so, &w->env->xo, &r, &e);
	int ret = check_result(w, rc, &r, &e);
	if (ret == 0 && strcmp(r.residue, "clean"))
		ret = record_failure(w, "teardown left residue: %s", r.residue);
	if (ret == 0) {
		w->part_us[0] += r.setup_us;
		w->part_us[1] += r.exec_us;
		w->part_us[2] += r.teardown_us;
	}
	pd_result_free(&r);
	return ret;
}

/* create + destroy, no exec: the cost of the sandbox itself. */
static int lib_create_op(worker *w)
{
	pd_err e = {0};
	uint64_t t0 = now_ns();
	pd_sandbox *s = pd_sandbox_create(w->env->ctx, &w->env->so, &e);
	if (!s)
		return record_failure(w, "create: %s", e.msg);
	uint64_t t1 = now_ns();
	char residue[128];
	int dirty = pd_sandbox_destroy(s, residue, sizeof residue);
	uint64_t t2 = now_ns();
	if (dirty)
		return record_failure(w, "teardown left residue: %s", residue);
	w->part_us[0] += (t1 - t0) / 1000;
	w->part_us[2] += (t2 - t1) / 1000;
	return 0;
}

static int lib_exec_setup(worker *w)
{
	pd_err e = {0};
	w->sb = pd_sandbox_create(w->env->ctx, &w->env->so, &e);
	return w->sb ? 0 : record_failure(w, "create: %s", e.msg);
}

static void lib_exec_cleanup(worker *w)
{
	char residue[128];
	if (w->sb && pd_sandbox_destroy(w->sb, residue, sizeof residue))
		record_failure(w, "teardown left residue: %s", residue);
	w->sb = NULL;
}

/* One exec in this worker's long-lived sandbox: what a session pays per command. */
static int lib_exec_op(worker *w)
{
	/* a sandbox left unusable by a failure is replaced: one fault is one failure, not all */
	if (!w->sb || pd_sandbox_state(w->sb) != PD_READY) {
		lib_exec_cleanup(w);
		if (lib_exec_setup(w) < 0)
			return -1;
	}
	pd_result r;
	pd_err e = {0};
	int rc = pd_sandbox_exec(w->sb, &w->env->xo, &r, &e);
	int ret = check_result(w, rc, &r, &e);
	if (ret == 0)
		w->part_us[1] += r.exec_us;
	pd_result_free(&r);
	return ret;
}

static const bench_kind kind_spawn = {spawn_setup, spawn_op, spawn_cleanup};
static const bench_kind kind_lib_run = {NULL, lib_run_op, NULL};
static const bench_kind kind_lib_create = {NULL, lib_create_op, NULL};
static const bench_kind kind_lib_exec = {lib_exec_setup, lib_exec_op, lib_exec_cleanup};

/* ---- drivers --------------------------------------------------------------------------------- */

static void worker_init(worker *w, const bench_env *env, const bench_case *bc)
{
	memset(w, 0, sizeof *w);
	w->env = env;
	w->bc = bc;
	w->nullfd = w->errfd = -1;
}

static int worker_setup(worker *w)
{
	return w->bc->kind->setup ? w->bc->kind->setup(w) : 0;
}

/* Folds a worker's counts into its case and ends the worker. */
static void worker_done(worker *w, bench_case *bc)
{
	if (bc->kind->cleanup)
		bc->kind->cleanup(w);
	bc->failed += w->failed;
	if (!bc->error[0] && w->error[0])
		snprintf(bc->error, sizeof bc->error, "%s", w->error);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples, in ms. */
static double percentile_ms(const uint64_t *ns, size_t n, unsigned pct)
{
	size_t rank = (pct * n + 99) / 100;
	return (double)ns[rank ? rank - 1 : 0] / 1e6;
}

static void measure_latency(const bench_env *env, bench_case *bc, int iterations)
{
	worker w;
	worker_init(&w, env, bc);
	uint64_t *ns = calloc((size_t)iterations, sizeof *ns);
	if (!ns) {
		record_failure(&w, "latency samples: out of memory");
		worker_done(&w, bc);
		return;
	}
	size_t n = 0;
	if (worker_setup(&w) == 0) {
		for (int i = 0; i < WARMUP && i < iterations; i++)
			bc->kind->op(&w);
		memset(w.part_us, 0, sizeof w.part_us);
		for (int i = 0; i < iterations; i++) {
			uint64_t t0 = now_ns();
			int rc = bc->kind->op(&w);
			uint64_t t1 = now_ns();
			if (rc == 0)
				ns[n++] = t1 - t0;
		}
	}
	if (n) {
		qsort(ns, n, sizeof *ns, cmp_u64);
		double sum = 0;
		for (size_t i = 0; i < n; i++)
			sum += (double)ns[i];
		bc->lat.n = n;
		bc->lat.p50 = percentile_ms(ns, n, 50);
		bc->lat.p99 = percentile_ms(ns, n, 99);
		bc->lat.mean = sum / (double)n / 1e6;
		bc->lat.min = (double)ns[0] / 1e6;
		bc->lat.max = (double)ns[n - 1] / 1e6;
		bc->lat_done = true;
		bc->parts_n = n;
		memcpy(bc->part_us, w.part_us, sizeof bc->part_us);
	}
	free(ns);
	worker_done(&w, bc);
}

/* The start of a throughput cell: workers wait for go, then run until the deadline. */
typedef struct tp_run {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool go;
	uint64_t deadline_ns;
} tp_run;

static void *tp_worker(void *arg)
{
	worker *w = arg;
	tp_run *run = w->run;
	pthread_mutex_lock(&run->lock);
	while (!run->go)
		pthread_cond_wait(&run->cond, &run->lock);
	uint64_t deadline = run->deadline_ns;
	pthread_mutex_unlock(&run->lock);
	for (uint64_t t0 = now_ns(); t0 < deadline;) {
		int rc = w->bc->kind->op(w);
		uint64_t t1 = now_ns();
		if (t1 - t0 > w->max_op_ns)
			w->max_op_ns = t1 - t0;
		if (rc == 0)
			w->ok++;
		t0 = t1;
	}
	return NULL;
}

/* A task-clock counter inherited by every thread and process started after it opens. Better than
 * getrusage(RUSAGE_CHILDREN), which only sees descendants that were waited for: bwrap's outer
 * process exits without reaping its pid-1 child, so half of bwrap's CPU would go unseen.
 * -1 when perf events are not allowed here; getrusage is then the fallback. */
static int cpu_counter_open(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof a;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.inherit = 1;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static double tv_ms(struct timeval tv)
{
	return (double)tv.tv_sec * 1000.0 + (double)tv.tv_usec / 1000.0;
}

static double rusage_ms(void)
{
	struct rusage s, c;
	getrusage(RUSAGE_SELF, &s);
	getrusage(RUSAGE_CHILDREN, &c);
	return tv_ms(s.ru_utime) + tv_ms(s.ru_stime) + tv_ms(c.ru_utime) + tv_ms(c.ru_stime);
}

/* CPU used so far by this process and its descendants that have ended, in ms. */
static double cpu_ms(int counter)
{
	uint64_t ns;
	if (counter >= 0 && read(counter, &ns, sizeof ns) == (ssize_t)sizeof ns)
		return (double)ns / 1e6;
	return rusage_ms();
}

/* Busy time of all CPUs since boot (user, nice, system, irq, softirq), in ms; -1 if unknown. */
static double host_busy_ms(void)
{
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return -1;
	unsigned long long user, nice, sys, idle, iowait, irq, softirq;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle,
		       &iowait, &irq, &softirq);
	fclose(f);
	if (n != 7)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	return (double)(user + nice + sys + irq + softirq) * 1000.0 / (double)(hz > 0 ? hz : 100);
}

static void measure_throughput(const bench_env *env, bench_case *bc, int slot, int nworkers,
			       uint64_t duration_ms)
{
	tp_cell *cell = &bc->tp[slot];
	worker w[MAX_WORKERS];
	pthread_t th[MAX_WORKERS];
	bool started[MAX_WORKERS] = {false};
	tp_run run = {.go = false};
	pthread_mutex_init(&run.lock, NULL);
	pthread_cond_init(&run.cond, NULL);
	bool setup_ok = true;
	/* opened before the workers exist, so that they and everything they start inherit it */
	int counter = cpu_counter_open();
	for (int i = 0; i < nworkers; i++) {
		worker_init(&w[i], env, bc);
		w[i].run = &run;
		if (worker_setup(&w[i]) < 0)
			setup_ok = false;
	}
	for (int i = 0; setup_ok && i < nworkers; i++) {
		int err = pthread_create(&th[i], NULL, tp_worker, &w[i]);
		if (err) {
			record_failure(&w[i], "pthread_create: %s", strerror(err));
			setup_ok = false;
		} else
			started[i] = true;
	}
	double cpu0 = cpu_ms(counter), host0 = host_busy_ms();
	uint64_t t0 = now_ns();
	pthread_mutex_lock(&run.lock);
	/* a cell that could not start every worker releases the ones it has at once */
	run.deadline_ns = setup_ok ? t0 + duration_ms * 1000000u : 0;
	run.go = true;
	pthread_cond_broadcast(&run.cond);
	pthread_mutex_unlock(&run.lock);
	for (int i = 0; i < nworkers; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	/* the cell lasts until its last operation ends: operations are never cut short */
	uint64_t t1 = now_ns();
	uint64_t ok = 0, failed = 0, max_op = 0;
	for (int i = 0; i < nworkers; i++) {
		ok += w[i].ok;
		failed += w[i].failed;
		if (w[i].max_op_ns > max_op)
			max_op = w[i].max_op_ns;
		/* cleanup comes before the CPU snapshot: a long-lived sandbox's children are only
		 * reaped (and their CPU counted) when it is destroyed */
		worker_done(&w[i], bc);
	}
	double cpu1 = cpu_ms(counter), host1 = host_busy_ms();
	if (counter >= 0)
		close(counter);
	pthread_cond_destroy(&run.cond);
	pthread_mutex_destroy(&run.lock);
	if (!setup_ok)
		return;
	cell->done = true;
	cell->workers = nworkers;
	cell->ok = ok;
	cell->failed = failed;
	cell->secs = (double)(t1 - t0) / 1e9;
	cell->ops_s = (double)ok / cell->secs;
	cell->max_op_ms = (double)max_op / 1e6;
	cell->cpu_from_perf = counter >= 0;
	cell->cpu_ms_op = ok ? (cpu1 - cpu0) / (double)ok : -1;
	cell->host_ms_op = ok && host0 >= 0 && host1 >= 0 ? (host1 - host0) / (double)ok : -1;
}

/* ---- output ---------------------------------------------------------------------------------- */

typedef struct machine {
	long cpus;
	char kernel[65];
	const char *cgroup;
	double load[3];
} machine;

/* A right-aligned number, or a dash (three bytes of UTF-8, one column) when there is none. */
static void cell_num(int width, int prec, double v, bool have)
{
	if (have)
		printf(" %*.*f", width, prec, v);
	else
		printf(" %*s—", width - 1, "");
}

static bool have_tp(const bench_case *c, int slot)
{
	return c && c->tp[slot].done && c->tp[slot].ok;
}

static double ratio(const bench_case *c, const bench_case *base, int slot)
{
	return c->tp[slot].ops_s / base->tp[slot].ops_s;
}

static void print_table(const machine *m, const bench_case *cases, size_t ncases,
			const bench_case *floor_c, const bench_case *bwrap_c, int iterations,
			uint64_t duration_ms)
{
	int last = MAX_WORKERS - 1;
	printf("paddock bench — %ld CPU%s, Linux %s, cgroup %s, %d iterations, "
	       "%g s per throughput cell\n",
	       m->cpus, m->cpus == 1 ? "" : "s", m->kernel, m->cgroup, iterations,
	       (double)duration_ms / 1000.0);
	printf("load average at start: %.2f %.2f %.2f\n\n", m->load[0], m->load[1], m->load[2]);
	printf("%-32s %8s %8s %8s %9s %9s %11s %11s %9s %9s %6s\n", "case", "p50 ms", "p99 ms",
	       "mean ms", "ops/s 1w", "ops/s 2w", "x floor(2w)", "x bwrap(2w)", "cpu ms/op",
	       "host ms/op", "fails");
	for (size_t i = 0; i < ncases; i++) {
		const bench_case *c = &cases[i];
		if (!c->selected)
			continue;
		printf("%-32s", c->label);
		if (c->skip) {
			printf(" skipped\n");
			continue;
		}
		cell_num(8, 2, c->lat.p50, c->lat_done);
		cell_num(8, 2, c->lat.p99, c->lat_done);
		cell_num(8, 2, c->lat.mean, c->lat_done);
		cell_num(9, 0, c->tp[0].ops_s, c->tp[0].done);
		cell_num(9, 0, c->tp[last].ops_s, c->tp[last].done);
		bool fl = have_tp(c, last) && have_tp(floor_c, last);
		cell_num(11, 3, fl ? ratio(c, floor_c, last) : 0, fl);
		bool bw = c != floor_c && have_tp(c, last) && have_tp(bwrap_c, last);
		cell_num(11, 3, bw ? ratio(c, bwrap_c, last) : 0, bw);
		cell_num(9, 2, c->tp[0].cpu_ms_op, have_tp(c, 0) && c->tp[0].cpu_ms_op >= 0);
		cell_num(9, 2, c->tp[0].host_ms_op, have_tp(c, 0) && c->tp[0].host_ms_op >= 0);
		printf(" %5" PRIu64 "%s\n", c->failed, c->failed ? "!" : "");
	}
	printf("\n");
	for (size_t i = 0; i < ncases; i++) {
		const bench_case *c = &cases[i];
		if (!c->selected)
			continue;
		if (c->skip)
			printf("  %s: skipped: %s\n", c->key, c->skip);
		if (c->failed)
			printf("  %s: %" PRIu64 " failed operations; first: %s\n", c->key,
			       c->failed, c->error);
		for (int s = 0; s < MAX_WORKERS; s++) {
			const tp_cell *t = &c->tp[s];
			/* operations are never cut short: one stall stretches its cell */
			if (t->done && t->secs > 1.25 * (double)duration_ms / 1000.0)
				printf("  %s: the %d-worker cell ran %.1f s instead of %g s: its "
				       "slowest operation took %.0f ms\n",
				       c->key, t->workers, t->secs, (double)duration_ms / 1000.0,
				       t->max_op_ms);
		}
		if (c->parts_n && c->part_names[0]) {
			printf("  %s: mean", c->key);
			for (int p = 0; p < 3; p++)
				if (c->part_names[p])
					printf("%s %s %.2f ms", p ? " +" : "", c->part_names[p],
					       (double)c->part_us[p] / (double)c->parts_n / 1000.0);
			printf(" (latency phase)\n");
		}
	}
	bool rusage = false;
	for (size_t i = 0; i < ncases; i++)
		rusage |= cases[i].tp[0].done && !cases[i].tp[0].cpu_from_perf;
	printf("  ops/s counts OK operations only; x floor, x bwrap: throughput with %d workers "
	       "over that row's.\n  cpu ms/op: %s; host ms/op: all CPUs\n  busy (/proc/stat: "
	       "adds kernel workers and anything else running); both from the 1-worker cell.\n",
	       MAX_WORKERS,
	       rusage ? "getrusage self+reaped children (misses orphaned descendants)"
		      : "task-clock of the bench and all it started");
}

static void json_str(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void json_num(double v, bool have)
{
	if (have)
		printf("%.6g", v);
	else
		fputs("null", stdout);
}

static void print_json(const machine *m, const bench_case *cases, size_t ncases,
		       const bench_case *floor_c, const bench_case *bwrap_c, int iterations,
		       uint64_t duration_ms)
{
	printf("{\"machine\":{\"cpus\":%ld,\"kernel\":", m->cpus);
	json_str(m->kernel);
	printf(",\"cgroup\":");
	json_str(m->cgroup);
	printf(",\"loadavg\":[%.2f,%.2f,%.2f]},", m->load[0], m->load[1], m->load[2]);
	printf("\"options\":{\"iterations\":%d,\"duration_s\":%g,\"workers\":[1,%d]},\"cases\":[",
	       iterations, (double)duration_ms / 1000.0, MAX_WORKERS);
	bool first = true;
	for (size_t i = 0; i < ncases; i++) {
		const bench_case *c = &cases[i];
		if (!c->selected)
			continue;
		printf("%s{\"key\":", first ? "" : ",");
		first = false;
		json_str(c->key);
		printf(",\"label\":");
		json_str(c->label);
		printf(",\"skipped\":");
		json_str(c->skip);
		printf(",\"failures\":%" PRIu64 ",\"first_error\":", c->failed);
		json_str(c->error[0] ? c->error : NULL);
		printf(",\"latency_ms\":");
		if (c->lat_done)
			printf("{\"n\":%zu,\"p50\":%.4f,\"p99\":%.4f,\"mean\":%.4f,"
			       "\"min\":%.4f,\"max\":%.4f}",
			       c->lat.n, c->lat.p50, c->lat.p99, c->lat.mean, c->lat.min,
			       c->lat.max);
		else
			fputs("null", stdout);
		printf(",\"throughput\":[");
		for (int s = 0; s < MAX_WORKERS; s++) {
			const tp_cell *t = &c->tp[s];
			printf("%s{\"workers\":%d,\"ok\":%" PRIu64 ",\"failures\":%" PRIu64
			       ",\"seconds\":",
			       s ? "," : "", s + 1, t->ok, t->failed);
			json_num(t->secs, t->done);
			printf(",\"ops_per_s\":");
			json_num(t->ops_s, t->done);
			printf(",\"max_op_ms\":");
			json_num(t->max_op_ms, t->done);
			printf(",\"cpu_ms_per_op\":");
			json_num(t->cpu_ms_op, t->done && t->cpu_ms_op >= 0);
			printf(",\"cpu_source\":");
			json_str(t->done ? (t->cpu_from_perf ? "task-clock" : "getrusage") : NULL);
			printf(",\"host_cpu_ms_per_op\":");
			json_num(t->host_ms_op, t->done && t->host_ms_op >= 0);
			printf(",\"x_floor\":");
			bool fl = have_tp(c, s) && have_tp(floor_c, s);
			json_num(fl ? ratio(c, floor_c, s) : 0, fl);
			printf(",\"x_bwrap\":");
			bool bw = c != floor_c && have_tp(c, s) && have_tp(bwrap_c, s);
			json_num(bw ? ratio(c, bwrap_c, s) : 0, bw);
			putchar('}');
		}
		printf("],\"parts_ms\":");
		if (c->parts_n && c->part_names[0]) {
			putchar('{');
			bool pf = true;
			for (int p = 0; p < 3; p++)
				if (c->part_names[p]) {
					printf("%s\"%s\":%.4f", pf ? "" : ",", c->part_names[p],
					       (double)c->part_us[p] / (double)c->parts_n / 1000.0);
					pf = false;
				}
			putchar('}');
		} else
			fputs("null", stdout);
		putchar('}');
	}
	printf("]}\n");
}

/* ---- command line ---------------------------------------------------------------------------- */

static void bench_usage(FILE *f)
{
	fputs("usage: paddock bench [options]\n"
	      "\n"
	      "Measures, side by side in one run, the start of /bin/true as:\n"
	      "  floor        posix_spawn + waitpid, no isolation\n"
	      "  bwrap        bubblewrap, same namespaces (user pid net ipc uts cgroup mount)\n"
	      "  cli          the paddock command itself: paddock exec -q -- /bin/true\n"
	      "  lib          pd_run in process: create + exec + destroy, default limits\n"
	      "  lib-create   pd_sandbox_create + pd_sandbox_destroy, no exec\n"
	      "  lib-exec     pd_sandbox_exec repeated in one long-lived sandbox per worker\n"
	      "Each case: latency (p50, p99, mean) over N operations with 1 worker, then\n"
	      "throughput with 1 and 2 workers (threads) over a fixed time, and ratios to floor\n"
	      "and bwrap.\n"
	      "\n"
	      "options:\n"
	      "  -n, --iterations N     operations timed for latency (default 200)\n"
	      "  -d, --duration T       time of each throughput cell, e.g. 3, 500ms (default 3s;\n"
	      "                         0 skips throughput)\n"
	      "  --only LIST            comma list of cases to run (default: all)\n"
	      "  --json                 one JSON object with all figures on stdout\n"
	      "\n"
	      "exit status: 0 all operations succeeded; 2 some failed (see the notes);\n"
	      "             64 bad usage.\n"
	      "Needs root for the paddock cases.\n",
	      f);
}

/* The first executable `name` in $PATH, into buf; false if none. */
static bool find_in_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ":");
		if (n && (size_t)snprintf(buf, len, "%.*s/%s", (int)n, p, name) < len &&
		    access(buf, X_OK) == 0)
			return true;
		p += n;
		if (*p == ':')
			p++;
	}
	return false;
}

/* Marks the cases named in a comma list; returns where an unknown name starts, or NULL. */
static const char *select_cases(bench_case *cases, size_t ncases, const char *list)
{
	for (size_t i = 0; i < ncases; i++)
		cases[i].selected = false;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		bool known = false;
		for (size_t i = 0; i < ncases; i++)
			if (strlen(cases[i].key) == n && !strncmp(cases[i].key, p, n))
				known = cases[i].selected = true;
		if (n && !known)
			return p;
		p += n;
		if (*p == ',')
			p++;
	}
	return NULL;
}

enum { O_ONLY = 256, O_JSON };

int cmd_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, 0, 'h'},           {"iterations", required_argument, 0, 'n'},
		{"duration", required_argument, 0, 'd'}, {"only", required_argument, 0, O_ONLY},
		{"json", no_argument, 0, O_JSON},        {0, 0, 0, 0},
	};
	char bwrap_path[4096];
	bool have_bwrap = find_in_path("bwrap", bwrap_path, sizeof bwrap_path);
	const char *const argv_floor[] = {"/bin/true", NULL};
	/* the namespaces paddock uses, and a root that can run /bin/true (usrmerged host) */
	const char *const argv_bwrap[] = {
		bwrap_path, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
		"--unshare-uts", "--unshare-cgroup", "--die-with-parent",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin",
		"--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64",
		"--symlink", "usr/sbin", "/sbin",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"/bin/true", NULL};
	/* /proc/self/exe: the very binary running the bench, even if a rebuild replaced the file */
	const char *const argv_cli[] = {"/proc/self/exe", "exec", "-q", "--", "/bin/true", NULL};
	bench_case cases[] = {
		{.key = "floor", .label = "floor: spawn /bin/true", .kind = &kind_spawn,
		 .argv = argv_floor},
		{.key = "bwrap", .label = "bwrap /bin/true", .kind = &kind_spawn,
		 .argv = argv_bwrap},
		{.key = "cli", .label = "paddock exec (CLI process)", .kind = &kind_spawn,
		 .argv = argv_cli},
		{.key = "lib", .label = "lib pd_run create+exec+destroy", .kind = &kind_lib_run,
		 .part_names = {"setup", "exec", "teardown"}},
		{.key = "lib-create", .label = "lib create+destroy (no exec)",
		 .kind = &kind_lib_create, .part_names = {"create", NULL, "destroy"}},
		{.key = "lib-exec", .label = "lib exec in a live sandbox", .kind = &kind_lib_exec},
	};
	const size_t ncases = sizeof cases / sizeof cases[0];
	bench_case *floor_c = &cases[0], *bwrap_c = &cases[1];
	for (size_t i = 0; i < ncases; i++)
		cases[i].selected = true;

	int iterations = 200;
	uint64_t duration_ms = 3000;
	bool json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+hn:d:", opts, NULL)) != -1) {
		switch (c) {
		case 'h': bench_usage(stdout); return 0;
		case 'n': {
			char *end;
			long n = strtol(optarg, &end, 10);
			if (*end || n < 1 || n > 10000000) {
				cli_error("--iterations: '%s' is not a count from 1 to 10000000",
					  optarg);
				return EXIT_USAGE;
			}
			iterations = (int)n;
			break;
		}
		case 'd':
			if (pd_parse_duration_ms(optarg, &duration_ms) < 0 ||
			    duration_ms > 3600000) {
				cli_error("--duration: '%s' is not a time up to 1 hour", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_ONLY: {
			const char *bad = select_cases(cases, ncases, optarg);
			if (bad) {
				cli_error("--only: unknown case '%.*s' (cases: floor, bwrap, cli, "
					  "lib, lib-create, lib-exec)",
					  (int)strcspn(bad, ","), bad);
				return EXIT_USAGE;
			}
			break;
		}
		case O_JSON: json = true; break;
		default: bench_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("bench: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}

	machine m = {.cpus = sysconf(_SC_NPROCESSORS_ONLN), .cgroup = "unknown"};
	struct utsname u;
	snprintf(m.kernel, sizeof m.kernel, "%s", uname(&u) == 0 ? u.release : "?");
	if (getloadavg(m.load, 3) != 3)
		m.load[0] = m.load[1] = m.load[2] = -1;

	bench_env env = {0};
	pd_err e = {0};
	env.ctx = pd_ctx_new(NULL, &e);
	if (env.ctx)
		m.cgroup = pd_ctx_cgroup_backend(env.ctx);
	env.so.limits = pd_limits_default();
	static char *const true_argv[] = {(char *)"/bin/true", NULL};
	env.xo.argv = true_argv;
	env.xo.stdin_fd = -1;
	if (!have_bwrap)
		bwrap_c->skip = "bwrap not found in PATH";
	for (size_t i = 0; i < ncases; i++)
		if (cases[i].kind != &kind_spawn && !env.ctx)
			cases[i].skip = e.msg;

	/* progress goes to a terminal only, so that captured output is just the report */
	bool progress = isatty(STDERR_FILENO);
	for (int phase = 0; phase <= MAX_WORKERS; phase++) {
		if (phase > 0 && !duration_ms)
			break;
		for (size_t i = 0; i < ncases; i++) {
			bench_case *bc = &cases[i];
			if (!bc->selected || bc->skip)
				continue;
			if (progress)
				fprintf(stderr, "\r\033[Kbench: %s, %s", bc->label,
					phase ? "throughput" : "latency");
			if (phase == 0)
				measure_latency(&env, bc, iterations);
			else
				measure_throughput(&env, bc, phase - 1, phase, duration_ms);
		}
	}
	if (progress)
		fputs("\r\033[K", stderr);
	pd_ctx_free(env.ctx);

	if (json)
		print_json(&m, cases, ncases, floor_c, bwrap_c, iterations, duration_ms);
	else
		print_table(&m, cases, ncases, floor_c, bwrap_c, iterations, duration_ms);
	/* a missing bwrap is the machine's business; a paddock case that could not run is ours */
	bool failed = false;
	for (size_t i = 0; i < ncases; i++)
		if (cases[i].selected &&
		    (cases[i].failed || (cases[i].skip && cases[i].kind != &kind_spawn)))
			failed = true;
	return failed ? EXIT_PADDOCK_FAILED : 0;
}
