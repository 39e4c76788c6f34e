/* paddock bench --only density: N idle sandboxes at once and what they cost the host. */
#define _GNU_SOURCE
#include "bench_case.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define DENSITY_DEFAULT 1000
#define DENSITY_MAX	10000
#define DENSITY_SAMPLE	100 /* inits whose memory is read one by one */
/* host fds a live sandbox holds: its init's pidfd, its socket, and the lock of its uid slot (which
 * the context keeps even after the sandbox) */
#define DENSITY_FDS_PER 3
#define DENSITY_MAX_FAILS 5 /* failed creates after which the case stops: a limit was reached */


static int read_meminfo(meminfo *m)
{
	memset(m, 0, sizeof *m);
	/* field names, and where each goes */
	const char *const names[] = {"MemTotal:", "MemAvailable:", "MemFree:", "Slab:",
				     "SReclaimable:", "SUnreclaim:", "PageTables:",
				     "KernelStack:", "Percpu:", "Shmem:", "VmallocUsed:"};
	long long *const dst[] = {&m->total, &m->avail, &m->free, &m->slab,
				  &m->sreclaimable, &m->sunreclaim, &m->pagetables,
				  &m->kstack, &m->percpu, &m->shmem, &m->vmalloc};
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return -1;
	char line[256];
	int found = 0;
	while (fgets(line, sizeof line, f))
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
			size_t l = strlen(names[i]);
			if (!strncmp(line, names[i], l) && sscanf(line + l, "%lld", dst[i]) == 1)
				found++;
		}
	fclose(f);
	return found >= 3 ? 0 : -1;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}


#define SETTLE_STEP_MS	 500
#define SETTLE_WINDOW_MS 3000
#define SETTLE_TOL_KB	 1024

/* Waits at least min_ms, then until MemAvailable moved less than 1 MiB over the last 3 s, or
 * max_ms passed. */
static void settle_meminfo(settled *out, unsigned min_ms, unsigned max_ms)
{
	enum { WINDOW = SETTLE_WINDOW_MS / SETTLE_STEP_MS };
	long long hist[WINDOW + 1];
	int nh = 0;
	memset(out, 0, sizeof *out);
	sleep_ms(min_ms);
	unsigned waited = min_ms;
	for (;;) {
		if (read_meminfo(&out->m) < 0)
			break;
		/* hist[0] is the reading WINDOW steps ago once the window is full */
		if (nh == WINDOW + 1) {
			memmove(hist, hist + 1, sizeof hist[0] * WINDOW);
			nh--;
		}
		hist[nh++] = out->m.avail;
		long long moved = hist[nh - 1] - hist[0];
		if (nh == WINDOW + 1 && moved < SETTLE_TOL_KB && moved > -SETTLE_TOL_KB) {
			out->settled = true;
			break;
		}
		if (waited >= max_ms)
			break;
		sleep_ms(SETTLE_STEP_MS);
		waited += SETTLE_STEP_MS;
	}
	out->waited_s = waited / 1000.0;
}

static bool has_token(const char *list, const char *tok)
{
	size_t l = strlen(tok);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (n == l && !strncmp(p, tok, l))
			return true;
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

/* Mount point of the v1 memory controller, or of the v2 hierarchy. */
static bool memcg_mount(bool v2, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		char mnt[512], type[32], opts[512];
		if (sscanf(line, "%*s %511s %31s %511s", mnt, type, opts) != 3)
			continue;
		if (v2 ? !strcmp(type, "cgroup2")
		       : !strcmp(type, "cgroup") && has_token(opts, "memory"))
			found = (size_t)snprintf(out, len, "%s", mnt) < len;
	}
	fclose(f);
	return found;
}

/* The number a kernel file holds (a sysctl, a cgroup counter), or -1. */
static long long read_ll(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtoll(buf, NULL, 10);
}

/* Bytes charged to the memory cgroup of a process (v1 memory.usage_in_bytes, which includes the
 * kernel memory charged to it; v2 memory.current), or -1. */
static long long memcg_bytes(pid_t pid)
{
	char path[700], line[1024], cg[512] = "";
	bool v2 = false;
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		c2[1 + strcspn(c2 + 1, "\n")] = 0;
		if (!c1[1]) { /* "0::/path": the v2 hierarchy, if no v1 memory controller is seen */
			if (!cg[0]) {
				snprintf(cg, sizeof cg, "%s", c2 + 1);
				v2 = true;
			}
		} else if (has_token(c1 + 1, "memory")) {
			snprintf(cg, sizeof cg, "%s", c2 + 1);
			v2 = false;
			break;
		}
	}
	fclose(f);
	char mnt[512];
	if (!cg[0] || !strcmp(cg, "/") || !memcg_mount(v2, mnt, sizeof mnt))
		return -1; /* the root cgroup's figure is the whole host's */
	snprintf(path, sizeof path, "%s%s/%s", mnt, cg,
		 v2 ? "memory.current" : "memory.usage_in_bytes");
	return read_ll(path);
}

/* Rss, Pss and private (Private_Clean + Private_Dirty) of a process, in KiB. */
static bool read_rollup(pid_t pid, double *rss, double *pss, double *uss)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	long long v;
	int found = 0;
	*rss = *pss = *uss = 0;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "Rss: %lld", &v) == 1)
			*rss = (double)v, found++;
		else if (sscanf(line, "Pss: %lld", &v) == 1)
			*pss = (double)v, found++;
		else if (sscanf(line, "Private_Clean: %lld", &v) == 1 ||
			 sscanf(line, "Private_Dirty: %lld", &v) == 1)
			*uss += (double)v;
	}
	fclose(f);
	return found == 2;
}

/* Room for n sandboxes, or why not (into rep->stopped). Raises RLIMIT_NOFILE as far as needed. */
static bool density_room(int n, density_report *rep)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		snprintf(rep->stopped, sizeof rep->stopped, "getrlimit(RLIMIT_NOFILE): %s",
			 strerror(errno));
		return false;
	}
	rlim_t soft0 = rl.rlim_cur, hard0 = rl.rlim_max;
	long open_now = pd_open_fds();
	rlim_t need = (rlim_t)(open_now > 0 ? open_now : 0) + (rlim_t)n * DENSITY_FDS_PER + 64;
	/* up to the hard limit is anyone's to take */
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (need > rl.rlim_max) {
		/* past it takes CAP_SYS_RESOURCE, which root has, and stays under fs.nr_open: a
		 * limit of this process only, gone when it exits */
		struct rlimit up = {need, need};
		if (setrlimit(RLIMIT_NOFILE, &up) < 0) {
			snprintf(rep->stopped, sizeof rep->stopped,
				 "%d sandboxes need about %llu open files (%d each); "
				 "RLIMIT_NOFILE's hard limit is %llu and could not be raised: %s",
				 n, (unsigned long long)need, DENSITY_FDS_PER,
				 (unsigned long long)rl.rlim_max, strerror(errno));
			return false;
		}
		rl = up;
	}
	long long pid_max = read_ll("/proc/sys/kernel/pid_max");
	long long threads_max = read_ll("/proc/sys/kernel/threads-max");
	long long tasks = -1;
	FILE *f = fopen("/proc/loadavg", "re");
	if (f) {
		if (fscanf(f, "%*f %*f %*f %*d/%lld", &tasks) != 1)
			tasks = -1;
		fclose(f);
	}
	int len = snprintf(
	    rep->limits, sizeof rep->limits,
	    "RLIMIT_NOFILE %llu/%llu -> %llu/%llu (soft/hard); %lld tasks of pid_max "
	    "%lld",
	    (unsigned long long)soft0, (unsigned long long)hard0, (unsigned long long)rl.rlim_cur,
	    (unsigned long long)rl.rlim_max, tasks, pid_max);
	/* every idle sandbox is one task (its init) */
	long long lim = pid_max < threads_max || threads_max < 0 ? pid_max : threads_max;
	if (lim > 0 && tasks >= 0 && tasks + n + 256 > lim) {
		snprintf(rep->stopped, sizeof rep->stopped,
			 "%d sandboxes need %d more tasks; %lld run of at most %lld (pid_max, "
			 "threads-max)",
			 n, n, tasks, lim);
		return false;
	}
	/* every sandbox has its own user, pid, mount, ipc, uts and net namespace, all counted
	 * against our uid's per-user limits (other sandboxes of ours on the host count too) */
	static const char *const ns[] = {"user", "pid", "mnt", "ipc", "uts", "net"};
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		char p[64];
		snprintf(p, sizeof p, "/proc/sys/user/max_%s_namespaces", ns[i]);
		long long m = read_ll(p);
		if (m >= 0 && m < n + 64) {
			snprintf(rep->stopped, sizeof rep->stopped,
				 "%d sandboxes need %d %s namespaces; %s is %lld", n, n, ns[i], p,
				 m);
			return false;
		}
		if (!strcmp(ns[i], "user") && len > 0 && (size_t)len < sizeof rep->limits)
			snprintf(rep->limits + len, sizeof rep->limits - (size_t)len,
				 "; max_user_namespaces %lld", m);
	}
	return true;
}

typedef struct density_run {
	const bench_env *env;
	pd_sandbox **sb;
	bool *made;   /* which creates succeeded */
	uint64_t *ns; /* time of each create, then of each destroy */
	int n;
	int next;	    /* the next index to take (atomic) */
	bool stop;	    /* atomic */
	int running;	    /* threads not finished (atomic): for the progress line */
	long long floor_kb; /* creates stop when MemAvailable falls below this */
	pthread_mutex_t lock;
	uint64_t failures, residue_failures;
	char error[ERR_LEN], stopped[ERR_LEN];
} density_run;

static void *density_create_main(void *arg)
{
	density_run *d = arg;
	for (;;) {
		if (__atomic_load_n(&d->stop, __ATOMIC_RELAXED))
			break;
		int i = __atomic_fetch_add(&d->next, 1, __ATOMIC_RELAXED);
		if (i >= d->n)
			break;
		meminfo m;
		/* a shared machine must not be run out of memory for a figure */
		if (i % 16 == 0 && read_meminfo(&m) == 0 && m.avail < d->floor_kb) {
			pthread_mutex_lock(&d->lock);
			if (!d->stopped[0])
				snprintf(d->stopped, sizeof d->stopped,
					 "stopped near %d sandboxes: MemAvailable %lld MiB fell "
					 "below the %lld MiB kept free",
					 i, m.avail / 1024, d->floor_kb / 1024);
			pthread_mutex_unlock(&d->lock);
			__atomic_store_n(&d->stop, true, __ATOMIC_RELAXED);
			break;
		}
		pd_err e = {0};
		uint64_t t0 = now_ns();
		pd_sandbox *s = pd_sandbox_create(d->env->ctx, &d->env->so, &e);
		d->ns[i] = now_ns() - t0;
		d->sb[i] = s;
		if (s) {
			d->made[i] = true;
			bench_note_sandbox(s);
			continue;
		}
		pthread_mutex_lock(&d->lock);
		d->failures++;
		if (!d->error[0])
			snprintf(d->error, sizeof d->error, "create #%d: %s", i + 1, PD_ERR_STR(&e));
		if (d->failures >= DENSITY_MAX_FAILS) {
			if (!d->stopped[0])
				snprintf(d->stopped, sizeof d->stopped,
					 "stopped near %d sandboxes after %d failed creates", i,
					 DENSITY_MAX_FAILS);
			__atomic_store_n(&d->stop, true, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&d->lock);
	}
	__atomic_fetch_sub(&d->running, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *density_destroy_main(void *arg)
{
	density_run *d = arg;
	for (;;) {
		int i = __atomic_fetch_add(&d->next, 1, __ATOMIC_RELAXED);
		if (i >= d->n)
			break;
		if (!d->sb[i])
			continue;
		char residue[128];
		uint64_t t0 = now_ns();
		int dirty = pd_sandbox_destroy(d->sb[i], residue, sizeof residue);
		d->ns[i] = now_ns() - t0;
		d->sb[i] = NULL;
		if (dirty) {
			pthread_mutex_lock(&d->lock);
			d->residue_failures++;
			if (!d->error[0])
				snprintf(d->error, sizeof d->error, "teardown left residue: %s",
					 residue);
			pthread_mutex_unlock(&d->lock);
		}
	}
	__atomic_fetch_sub(&d->running, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Runs fn on MAX_WORKERS threads over d's indices; prints progress on a terminal. Returns the
 * wall time in seconds. */
static double density_phase(density_run *d, void *(*fn)(void *), const char *what, bool progress)
{
	pthread_t th[MAX_WORKERS];
	bool started[MAX_WORKERS] = {false};
	d->next = 0;
	d->running = MAX_WORKERS;
	uint64_t t0 = now_ns();
	for (int i = 0; i < MAX_WORKERS; i++) {
		int err = pthread_create(&th[i], NULL, fn, d);
		if (err) {
			__atomic_fetch_sub(&d->running, 1, __ATOMIC_RELEASE);
			pthread_mutex_lock(&d->lock);
			if (!d->error[0])
				snprintf(d->error, sizeof d->error, "pthread_create: %s",
					 strerror(err));
			pthread_mutex_unlock(&d->lock);
		} else
			started[i] = true;
	}
	while (progress && __atomic_load_n(&d->running, __ATOMIC_ACQUIRE) > 0) {
		int at = __atomic_load_n(&d->next, __ATOMIC_RELAXED);
		fprintf(stderr, "\r\033[Kbench: density, %s %d/%d", what, at < d->n ? at : d->n,
			d->n);
		sleep_ms(250);
	}
	for (int i = 0; i < MAX_WORKERS; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	return (double)(now_ns() - t0) / 1e9;
}

/* p50 and p99 (ms) of the times of the sandboxes that were made. */
static void density_percentiles(const density_run *d, double *p50, double *p99)
{
	*p50 = *p99 = 0;
	uint64_t *v = calloc((size_t)d->n, sizeof *v);
	if (!v)
		return;
	size_t k = 0;
	for (int i = 0; i < d->n; i++)
		if (d->made[i])
			v[k++] = d->ns[i];
	if (k) {
		qsort(v, k, sizeof *v, bench_cmp_u64);
		*p50 = bench_percentile_ms(v, k, 50);
		*p99 = bench_percentile_ms(v, k, 99);
	}
	free(v);
}

/* N idle sandboxes at once, made with pd_sandbox_create (no pools: nothing but the sandboxes),
 * and what they cost the host: /proc/meminfo before and with all of them (whole host, so other
 * work on a shared machine shows up in it), their inits' memory maps (sampled), the memory
 * charged to their cgroups; then they are all destroyed and the memory should come back. */
void bench_run_density(const bench_env *env, int n, density_report *rep, bool progress)
{
	memset(rep, 0, sizeof *rep);
	rep->ran = true;
	rep->asked = n;
	rep->threads = MAX_WORKERS;
	if (!density_room(n, rep))
		return;
	density_run d;
	memset(&d, 0, sizeof d);
	d.env = env;
	d.n = n;
	d.sb = calloc((size_t)n, sizeof *d.sb);
	d.ns = calloc((size_t)n, sizeof *d.ns);
	d.made = calloc((size_t)n, sizeof *d.made);
	pthread_mutex_init(&d.lock, NULL);
	if (!d.sb || !d.ns || !d.made) {
		snprintf(rep->stopped, sizeof rep->stopped, "out of memory for %d sandboxes", n);
		goto out;
	}
	meminfo m0;
	read_meminfo(&m0);
	/* keep a tenth of the machine, and at least 1 GiB, for everyone else */
	d.floor_kb = m0.total / 10 > (1LL << 20) ? m0.total / 10 : (1LL << 20);
	settle_meminfo(&rep->before, 1000, 20000);
	long long own0 = memcg_bytes(getpid());

	rep->create_s = density_phase(&d, density_create_main, "creating", progress);
	for (int i = 0; i < n; i++)
		rep->created += d.sb[i] != NULL;
	density_percentiles(&d, &rep->create_p50, &rep->create_p99);
	if (progress)
		fprintf(stderr, "\r\033[Kbench: density, %d idle, settling", rep->created);
	settle_meminfo(&rep->after, 2000, 60000);
	long long own1 = memcg_bytes(getpid());
	rep->own_memcg_ok = own0 >= 0 && own1 >= 0;
	rep->own_memcg_kb = rep->own_memcg_ok ? (own1 - own0) / 1024 : 0;

	/* a sample spread over the creation order: early and late sandboxes alike */
	int step = rep->created > DENSITY_SAMPLE ? rep->created / DENSITY_SAMPLE : 1;
	double memcg_sum = 0;
	for (int i = 0, live = 0; i < n && rep->sampled < DENSITY_SAMPLE; i++) {
		if (!d.sb[i] || live++ % step)
			continue;
		pid_t pid = pd_sandbox_pid(d.sb[i]);
		double rss, pss, uss;
		if (read_rollup(pid, &rss, &pss, &uss)) {
			rep->rss_kb += rss;
			rep->pss_kb += pss;
			rep->uss_kb += uss;
			rep->sampled++;
		}
		long long b = memcg_bytes(pid);
		if (b >= 0) {
			memcg_sum += (double)b / 1024.0;
			rep->memcg_n++;
		}
	}
	if (rep->sampled) {
		rep->rss_kb /= rep->sampled;
		rep->pss_kb /= rep->sampled;
		rep->uss_kb /= rep->sampled;
	}
	if (rep->memcg_n)
		rep->memcg_kb = memcg_sum / rep->memcg_n;

	rep->destroy_s = density_phase(&d, density_destroy_main, "destroying", progress);
	density_percentiles(&d, &rep->destroy_p50, &rep->destroy_p99);
	if (progress)
		fprintf(stderr, "\r\033[Kbench: density, settling");
	settle_meminfo(&rep->end, 2000, 90000);
	bench_count_leftovers(&rep->left);
out:
	rep->create_failures = d.failures;
	rep->residue_failures = d.residue_failures;
	snprintf(rep->error, sizeof rep->error, "%s", d.error);
	if (d.stopped[0])
		snprintf(rep->stopped, sizeof rep->stopped, "%s", d.stopped);
	pthread_mutex_destroy(&d.lock);
	free(d.sb);
	free(d.ns);
	free(d.made);
}
