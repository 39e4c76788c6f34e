/* paddock bench: the drivers. A latency phase (one worker, N timed operations, a case and its
 * twin alternating) and fixed-duration throughput cells (1 and 2 workers on threads), with the
 * CPU the operations cost. Failed operations are counted and never timed. */
#define _GNU_SOURCE
#include "bench_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define WARMUP 5 /* untimed operations before the latency phase (page cache, slot files) */

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

/* Latency phase of one case, or of two (a case and its twin) measured in the same loop: their
 * operations alternate, in an order that flips every iteration, so that whatever else the machine
 * does weighs on both alike and a difference between them is theirs. */
void bench_measure_latency(const bench_env *env, bench_case **bcs, int nb, int iterations)
{
	worker w[2];
	uint64_t *ns[2] = {NULL, NULL};
	size_t n[2] = {0, 0};
	bool ready[2] = {false, false};
	for (int k = 0; k < nb; k++) {
		bench_case *bc = bcs[k];
		worker_init(&w[k], env, bc);
		ns[k] = calloc((size_t)iterations, sizeof *ns[k]);
		if (!ns[k]) {
			bench_record_failure(&w[k], "latency samples: out of memory");
			continue;
		}
		if (bc->kind->begin && bc->kind->begin(bc, env, 0, 1) < 0)
			continue;
		ready[k] = worker_setup(&w[k]) == 0;
	}
	/* a bounded pair stops starting operations at the first one's bound (warm-up included) */
	uint64_t deadline = 0;
	for (int k = 0; k < nb; k++)
		if (bcs[k]->bound_ms) {
			uint64_t d = now_ns() + bcs[k]->bound_ms * 1000000u;
			deadline = deadline && deadline < d ? deadline : d;
		}
	for (int k = 0; k < nb; k++)
		w[k].deadline_ns = deadline;
	bool cut = false;
	/* a bounded case's operation takes long enough (runsc: 0.03-2 s) that one warms it up */
	int warmup = deadline ? 1 : WARMUP;
	for (int i = 0; i < warmup && i < iterations && !(cut = deadline && now_ns() >= deadline); i++)
		for (int k = 0; k < nb; k++)
			if (ready[k]) {
				if (bcs[k]->kind->pace)
					bcs[k]->kind->pace(&w[k]);
				bcs[k]->kind->op(&w[k]);
			}
	for (int k = 0; k < nb; k++) {
		memset(w[k].part_us, 0, sizeof w[k].part_us);
		w[k].audit_runs = w[k].audit_reported = w[k].audit_kept = w[k].audit_notified = 0;
	}
	for (int i = 0; i < iterations && !cut; i++)
		for (int j = 0; j < nb; j++) {
			int k = i & 1 ? nb - 1 - j : j;
			if (!ready[k])
				continue;
			if (deadline && now_ns() >= deadline) {
				cut = true;
				break;
			}
			if (bcs[k]->kind->pace)
				bcs[k]->kind->pace(&w[k]);
			uint64_t t0 = now_ns();
			int rc = bcs[k]->kind->op(&w[k]);
			uint64_t t1 = now_ns();
			if (rc == 0)
				ns[k][n[k]++] = t1 - t0;
		}
	for (int k = 0; k < nb; k++) {
		bench_case *bc = bcs[k];
		bc->lat_cut = cut;
		if (n[k]) {
			uint64_t *v = ns[k];
			qsort(v, n[k], sizeof *v, bench_cmp_u64);
			double sum = 0;
			for (size_t i = 0; i < n[k]; i++)
				sum += (double)v[i];
			bc->lat.n = n[k];
			bc->lat.p50 = bench_percentile_ms(v, n[k], 50);
			bc->lat.p99 = bench_percentile_ms(v, n[k], 99);
			bc->lat.mean = sum / (double)n[k] / 1e6;
			bc->lat.min = (double)v[0] / 1e6;
			bc->lat.max = (double)v[n[k] - 1] / 1e6;
			bc->lat_done = true;
			bc->parts_n = n[k];
			memcpy(bc->part_us, w[k].part_us, sizeof bc->part_us);
			bc->audit_runs = w[k].audit_runs;
			bc->audit_reported = w[k].audit_reported;
			bc->audit_kept = w[k].audit_kept;
			bc->audit_notified = w[k].audit_notified;
		}
		free(ns[k]);
		worker_done(&w[k], bc);
		if (bc->kind->drain)
			bc->kind->drain(bc, 0);
		if (bc->kind->end)
			bc->kind->end(bc, 0);
	}
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

void bench_measure_throughput(const bench_env *env, bench_case *bc, int slot, int nworkers,
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
	int counter = bench_task_clock_open(); /* -1: getrusage is the fallback */
	if (bc->kind->begin && bc->kind->begin(bc, env, 1 + slot, nworkers) < 0)
		setup_ok = false;
	for (int i = 0; i < nworkers; i++) {
		worker_init(&w[i], env, bc);
		w[i].run = &run;
		if (setup_ok && worker_setup(&w[i]) < 0)
			setup_ok = false;
	}
	for (int i = 0; setup_ok && i < nworkers; i++) {
		int err = pthread_create(&th[i], NULL, tp_worker, &w[i]);
		if (err) {
			bench_record_failure(&w[i], "pthread_create: %s", strerror(err));
			setup_ok = false;
		} else
			started[i] = true;
	}
	double cpu0 = cpu_ms(counter), host0 = host_busy_ms();
	uint64_t t0 = now_ns();
	/* a bounded case's operation may run past the cell's end by its bound, no more */
	for (int i = 0; bc->bound_ms && i < nworkers; i++)
		w[i].deadline_ns = t0 + (duration_ms + bc->bound_ms) * 1000000u;
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
	/* work the operations queued (the pools' teardowns) belongs to the cell: a reclaimer that
	 * falls behind must not pass for throughput */
	if (bc->kind->drain) {
		bc->kind->drain(bc, 1 + slot);
		t1 = now_ns();
	}
	double cpu1 = cpu_ms(counter), host1 = host_busy_ms();
	if (counter >= 0)
		close(counter);
	/* teardowns found unclean after the fact are failed operations, taken out of ops/s */
	uint64_t late = bc->kind->end ? bc->kind->end(bc, 1 + slot) : 0;
	pthread_cond_destroy(&run.cond);
	pthread_mutex_destroy(&run.lock);
	if (!setup_ok)
		return;
	ok -= late < ok ? late : ok;
	failed += late;
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

/* ---- the watchdog of bounded cells ------------------------------------------------------------ */

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watch_cond = PTHREAD_COND_INITIALIZER;
static const char *watch_label;
static uint64_t watch_end_ns;
static bool watch_started;

static void *watchdog(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&watch_lock);
	for (;;) {
		if (watch_label && now_ns() >= watch_end_ns) {
			/* nothing of the bench can interrupt an operation inside the library (a runsc
			 * that never returns): the run ends here, saying which cell and why, rather
			 * than holding the machine (and the callers' test lock) without end */
			fprintf(stderr,
				"\npaddock: bench: the cell '%s' did not end within its bound; an operation "
				"is stuck (ps shows which runsc); the bench stops, its sandboxes may be left\n",
				watch_label);
			fflush(stdout);
			_exit(EXIT_PADDOCK_FAILED);
		}
		if (!watch_label)
			pthread_cond_wait(&watch_cond, &watch_lock);
		else {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t left = watch_end_ns - now_ns();
			ts.tv_sec += (time_t)(left / 1000000000u);
			ts.tv_nsec += (long)(left % 1000000000u);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&watch_cond, &watch_lock, &ts);
		}
	}
	return NULL;
}

void bench_watch(const char *label, uint64_t limit_ms)
{
	pthread_mutex_lock(&watch_lock);
	if (label && !watch_started) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_destroy(&watch_cond);
		pthread_cond_init(&watch_cond, &ca);
		pthread_condattr_destroy(&ca);
		pthread_t th;
		if (pthread_create(&th, NULL, watchdog, NULL) == 0) {
			pthread_detach(th);
			watch_started = true;
		}
	}
	watch_label = limit_ms ? label : NULL;
	watch_end_ns = now_ns() + limit_ms * 1000000u;
	pthread_cond_broadcast(&watch_cond);
	pthread_mutex_unlock(&watch_lock);
}
