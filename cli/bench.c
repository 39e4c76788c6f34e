/* paddock bench: sandbox start latency and throughput, side by side with the floor (a plain spawn
 * of the same program) and a peer (bwrap with the same namespaces), all in one run. These machines
 * are noisy, so only ratios taken in the same run mean much (DESIGN.md §7).
 *
 * Every case is one kind of operation (spawn a command, pd_run, create+destroy, exec in a live
 * sandbox, exec in a sandbox taken from a warm pool) driven by workers: first a latency phase
 * (1 worker, N timed operations), then fixed-duration throughput cells with 1 and 2 workers. Phases
 * run case after case, so that the rows a ratio compares were measured close together in time.
 * Failed operations are counted and never timed: a row that measured errors says so.
 *
 * Two measurements do not fit that mould: the audit overhead runs the same program with and
 * without the audit, alternating, so that both see the same machine; the density case (only on
 * request) holds N idle sandboxes at once and reads what they cost the host. */
#define _GNU_SOURCE
#include "cli.h"
#include "pool.h"

#include <dirent.h>
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
typedef struct bench_case bench_case;

/* One kind of measurement: how a worker gets ready, does one operation, and cleans up. op returns
 * 0 when the operation did what it should, -1 after recording why not. */
typedef struct bench_kind {
	int (*setup)(worker *w);
	int (*op)(worker *w);
	void (*cleanup)(worker *w);
	/* State the workers of a case share for one phase (the pools): begin runs before the
	 * workers start, untimed; drain after they stop, timed (a cell lasts until the work its
	 * operations queued is done); end after the figures are taken. phase: 0 latency, 1 + slot
	 * for a throughput cell. */
	int (*begin)(bench_case *bc, const bench_env *env, int phase, int nworkers);
	void (*drain)(bench_case *bc, int phase);
	uint64_t (*end)(bench_case *bc, int phase); /* returns failures found after the fact */
	/* untimed, before each operation of the latency phase */
	void (*pace)(worker *w);
	bool no_latency, no_throughput;
	bool apart; /* measured by its own routine (density), not in the phases */
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

/* What is left of our sandboxes on the host after a phase: processes running under the uids of
 * our slots (others' sandboxes on a shared host are counted apart, never as ours) and cgroups
 * named after our context. */
typedef struct leftovers {
	long procs, others, cgroups;
} leftovers;

/* What the pools of one phase did (pd_pools_stats when the requests and the reclaimer are done). */
typedef struct pool_phase {
	bool done;
	int workers;
	uint64_t acquires, hits, misses, created, destroyed, create_failures, residue_failures;
	uint64_t forced, resets, reset_refusals;
	uint32_t backlog; /* sandboxes queued for the reclaimer when the requests ended */
	double drain_s;	  /* time the reclaimer then took to empty its queue */
	bool drain_timeout;
	leftovers left; /* after pd_pools_free */
} pool_phase;

struct bench_case {
	const char *key, *label;
	const char *group; /* a second --only name for rows measured together (audit) */
	const bench_kind *kind;
	const char *const *argv; /* spawned kinds: the command */
	const pd_sandbox_opts *so; /* lib kinds: NULL = the env's */
	const pd_exec_opts *xo;
	bench_case *twin; /* latency measured in the same loop, alternating with this one */
	bool optional;	  /* not in the default run */
	bool selected;
	bool paired;	  /* its latency was measured with the case it is the twin of */
	const char *skip; /* why it was not measured */
	/* results */
	bool lat_done;
	lat_stats lat;
	tp_cell tp[MAX_WORKERS];
	uint64_t failed; /* over all phases, warm-up included */
	char error[ERR_LEN];
	uint64_t parts_n, part_us[3]; /* lib: sums of the lifecycle parts over the latency phase */
	const char *part_names[3];
	/* audited runs over the latency phase: events reported (files + net) and kept */
	uint64_t audit_runs, audit_reported, audit_kept;
	/* pool kinds: the pools of the phase under way, and what each phase's pools did */
	pd_pools *pools;
	pool_phase pool[1 + MAX_WORKERS];
};

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
	uint64_t audit_runs, audit_reported, audit_kept;
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

static const pd_sandbox_opts *case_so(const worker *w)
{
	return w->bc->so ? w->bc->so : &w->env->so;
}

static const pd_exec_opts *case_xo(const worker *w)
{
	return w->bc->xo ? w->bc->xo : &w->env->xo;
}

/* pd_run: create + exec + destroy, the whole life of a one-shot sandbox (/bin/true unless the
 * case runs another program). */
static int lib_run_op(worker *w)
{
	pd_result r;
	pd_err e = {0};
	int rc = pd_run(w->env->ctx, case_so(w), case_xo(w), &r, &e);
	int ret = check_result(w, rc, &r, &e);
	if (ret == 0 && strcmp(r.residue, "clean"))
		ret = record_failure(w, "teardown left residue: %s", r.residue);
	if (ret == 0) {
		w->part_us[0] += r.setup_us;
		w->part_us[1] += r.exec_us;
		w->part_us[2] += r.teardown_us;
		w->audit_runs++;
		w->audit_reported += r.audit_files + r.audit_net;
		w->audit_kept += r.audit_len;
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

/* A failure of a case as a whole (its pools would not start, its residue), not of one worker. */
static int case_failure(bench_case *bc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int case_failure(bench_case *bc, const char *fmt, ...)
{
	bc->failed++;
	if (!bc->error[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(bc->error, sizeof bc->error, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ---- what our sandboxes leave on the host ---------------------------------------------------- */

/* The host uids of sandbox slots (lib/internal.h: PD_UID_BASE, PD_UID_RANGE, PD_UID_SLOTS). A
 * context keeps every slot it used locked until it is freed, so while ours lives, a process under
 * the uids of one of our slots can only be a leftover of ours; other sandboxes on a shared host
 * run in the same range and must not be taken for ours. */
#define SB_UID_BASE  0x40000000u
#define SB_UID_RANGE 65536u
#define SB_SLOTS     16384u

static uint64_t our_slots[SB_SLOTS / 64]; /* a bit per slot one of our sandboxes had */
static char our_prefix[24];		  /* "sb-<run id>-": our sandbox ids and cgroup names */
static bool our_prefix_set;
static pthread_mutex_t our_prefix_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_sandbox(const pd_sandbox *s)
{
	uint32_t base = pd_sandbox_uid_base(s);
	if (base >= SB_UID_BASE && (base - SB_UID_BASE) / SB_UID_RANGE < SB_SLOTS) {
		uint32_t k = (base - SB_UID_BASE) / SB_UID_RANGE;
		__atomic_fetch_or(&our_slots[k / 64], 1ull << (k % 64), __ATOMIC_RELAXED);
	}
	if (__atomic_load_n(&our_prefix_set, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&our_prefix_lock);
	const char *id = pd_sandbox_id(s);
	const char *dash = strncmp(id, "sb-", 3) ? NULL : strchr(id + 3, '-');
	if (!our_prefix_set && dash && (size_t)(dash - id) + 1 < sizeof our_prefix) {
		memcpy(our_prefix, id, (size_t)(dash - id) + 1);
		our_prefix[dash - id + 1] = 0;
		__atomic_store_n(&our_prefix_set, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&our_prefix_lock);
}

/* Host processes (and zombies) whose real uid lies in the sandbox range: ours, and others'. */
static void count_slot_procs(leftovers *l)
{
	DIR *d = opendir("/proc");
	if (!d) {
		l->procs = l->others = -1;
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char path[300], buf[4096];
		snprintf(path, sizeof path, "/proc/%s/status", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* it ended meanwhile */
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		const char *u = strstr(buf, "\nUid:");
		unsigned long uid;
		if (!u || sscanf(u + 5, "%lu", &uid) != 1)
			continue;
		if (uid < SB_UID_BASE || uid >= SB_UID_BASE + (uint64_t)SB_SLOTS * SB_UID_RANGE)
			continue;
		uint32_t k = (uint32_t)((uid - SB_UID_BASE) / SB_UID_RANGE);
		if (__atomic_load_n(&our_slots[k / 64], __ATOMIC_RELAXED) & (1ull << (k % 64)))
			l->procs++;
		else
			l->others++;
	}
	closedir(d);
}

/* Sandbox cgroups named after our context, under <every cgroup mount>/paddock (v1 and v2). */
static void count_our_cgroups(leftovers *l)
{
	if (!__atomic_load_n(&our_prefix_set, __ATOMIC_ACQUIRE))
		return;
	FILE *f = fopen("/proc/self/mounts", "re");
	if (!f) {
		l->cgroups = -1;
		return;
	}
	char line[1024];
	size_t plen = strlen(our_prefix);
	while (fgets(line, sizeof line, f)) {
		char mnt[512], type[32];
		if (sscanf(line, "%*s %511s %31s", mnt, type) != 2 ||
		    (strcmp(type, "cgroup") && strcmp(type, "cgroup2")))
			continue;
		char dir[600];
		snprintf(dir, sizeof dir, "%s/paddock", mnt);
		DIR *d = opendir(dir);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, our_prefix, plen))
				l->cgroups++;
		closedir(d);
	}
	fclose(f);
}

static void count_leftovers(leftovers *l)
{
	memset(l, 0, sizeof *l);
	count_slot_procs(l);
	count_our_cgroups(l);
}

static uint64_t leftovers_bad(const leftovers *l)
{
	return (uint64_t)(l->procs > 0 ? l->procs : 0) +
	       (uint64_t)(l->cgroups > 0 ? l->cgroups : 0);
}

/* ---- warm pools ------------------------------------------------------------------------------ */

#define POOL_TEMPLATE "bash"
#define POOL_MAX      64    /* far above what 2 workers hold: never what limits the pool */
#define POOL_WAIT_MS  60000 /* filling or draining the pool longer than this is a fault */

static pd_pool_stats pool_stats(pd_pools *p)
{
	pd_pool_stats st;
	memset(&st, 0, sizeof st);
	size_t n = 0;
	pd_pool_stats *all = pd_pools_stats(p, &n);
	if (all && n)
		st = all[0];
	free(all);
	return st;
}

/* Waits until no create and no teardown is under way; false at the timeout. *backlog (if not
 * NULL) receives how many sandboxes were waiting for the reclaimer at the start. */
static bool pool_quiet(pd_pools *p, uint64_t timeout_ms, uint32_t *backlog)
{
	uint64_t deadline = now_ns() + timeout_ms * 1000000u;
	for (bool first = true;; first = false) {
		pd_pool_stats st = pool_stats(p);
		if (first && backlog)
			*backlog = st.reclaiming;
		if (!st.reclaiming && !st.creating)
			return true;
		if (now_ns() >= deadline)
			return false;
		/* the pools have no wait for this: poll, every 1 ms (a teardown takes several) */
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

/* Fresh pools for each phase, started after the phase's CPU counter (their builder and reclaimer
 * threads, and the sandboxes those create, must be counted) and with the bash template's pool
 * sized for the phase: every worker can hold one while the builder replaces it, and two spare. */
static int pool_begin(bench_case *bc, const bench_env *env, int phase, int nworkers)
{
	pool_phase *pp = &bc->pool[phase];
	memset(pp, 0, sizeof *pp);
	pp->workers = nworkers;
	pd_err e = {0};
	pd_template *all = NULL;
	size_t n = 0;
	if (pd_templates_default(&all, &n, &e) < 0)
		return case_failure(bc, "built-in templates: %s", e.msg);
	pd_template *t = NULL;
	for (size_t i = 0; i < n && !t; i++)
		if (!strcmp(all[i].name, POOL_TEMPLATE))
			t = &all[i];
	if (!t) {
		pd_templates_free(all, n);
		return case_failure(bc, "no built-in template '%s'", POOL_TEMPLATE);
	}
	t->pool_min = (uint32_t)nworkers + 2;
	t->pool_max = POOL_MAX;
	pd_pools_opts po = {.prewarm = true};
	bc->pools = pd_pools_new(env->ctx, t, 1, &po, &e); /* copies the template */
	pd_templates_free(all, n);
	if (!bc->pools)
		return case_failure(bc, "pools: %s", e.msg);
	const pd_template *pt = pd_pools_template(bc->pools, POOL_TEMPLATE);
	int rc = 0;
	if (pt && !pt->available)
		rc =
		    case_failure(bc, "template %s: its image lacks %s", POOL_TEMPLATE, pt->missing);
	else if (pd_pools_wait_ready(bc->pools, POOL_WAIT_MS) < 0 ||
		 !pool_quiet(bc->pools, POOL_WAIT_MS, NULL)) {
		pd_pool_stats st = pool_stats(bc->pools);
		rc = case_failure(bc,
				  "the pool did not fill in %d s (%u ready of %u, %" PRIu64
				  " creates failed)",
				  POOL_WAIT_MS / 1000, st.ready, st.target, st.create_failures);
	}
	if (rc < 0) {
		pd_pools_free(bc->pools);
		bc->pools = NULL;
	}
	return rc;
}

static void pool_drain(bench_case *bc, int phase)
{
	pool_phase *pp = &bc->pool[phase];
	if (!bc->pools)
		return;
	uint64_t t0 = now_ns();
	pp->drain_timeout = !pool_quiet(bc->pools, POOL_WAIT_MS, &pp->backlog);
	pp->drain_s = (double)(now_ns() - t0) / 1e9;
}

/* Takes the pools' figures, frees the pools and looks for what they left. Returns how many
 * failures that found after the fact (teardowns that were not clean, leftovers). */
static uint64_t pool_end(bench_case *bc, int phase)
{
	pool_phase *pp = &bc->pool[phase];
	if (!bc->pools)
		return 0;
	pd_pool_stats st = pool_stats(bc->pools);
	pp->acquires = st.acquires;
	pp->hits = st.hits;
	pp->misses = st.misses;
	pp->created = st.created;
	pp->destroyed = st.destroyed;
	pp->create_failures = st.create_failures;
	pp->residue_failures = st.residue_failures;
	pp->forced = st.forced_reclaims;
	pp->resets = st.resets;
	pp->reset_refusals = st.reset_refusals;
	/* the spare READY sandboxes are destroyed here: their residue is not in the stats above
	 * any more, but what they could leave (processes, cgroups) is counted just after */
	pd_pools_free(bc->pools);
	bc->pools = NULL;
	count_leftovers(&pp->left);
	pp->done = true;
	if (pp->drain_timeout)
		case_failure(bc, "the reclaimer did not drain in %d s", POOL_WAIT_MS / 1000);
	uint64_t bad = pp->residue_failures + leftovers_bad(&pp->left);
	if (bad) {
		case_failure(bc,
			     "residue: %" PRIu64 " teardowns not clean, %ld processes left in our "
			     "uid slots, %ld cgroups left",
			     pp->residue_failures, pp->left.procs, pp->left.cgroups);
		bc->failed += bad - 1; /* case_failure counted one */
	}
	return bad;
}

/* Untimed: the pool as a request finds it when the service is not under load, full and with no
 * teardown of the previous sandbox competing for the CPU. */
static void pool_pace(worker *w)
{
	pd_pools *p = w->bc->pools;
	if (!p)
		return;
	pd_pools_wait_ready(p, POOL_WAIT_MS);
	pool_quiet(p, POOL_WAIT_MS, NULL);
}

/* acquire a READY sandbox + exec /bin/true + release: what a request costs with warm pools. The
 * reclaimer resets it for the next acquire (or destroys it) off the request path, and counts
 * its residue. */
static int pool_op(worker *w)
{
	pd_pools *p = w->bc->pools;
	if (!p)
		return record_failure(w, "no pools");
	bool hit = false;
	pd_err e = {0};
	uint64_t t0 = now_ns();
	pd_sandbox *s = pd_pool_acquire(p, POOL_TEMPLATE, &hit, &e);
	if (!s)
		return record_failure(w, "acquire: %s", e.msg);
	uint64_t t1 = now_ns();
	note_sandbox(s);
	pd_result r;
	int rc = pd_sandbox_exec(s, &w->env->xo, &r, &e);
	int ret = check_result(w, rc, &r, &e);
	pd_result_free(&r);
	uint64_t t2 = now_ns();
	pd_pool_release(p, s);
	uint64_t t3 = now_ns();
	if (ret == 0) {
		w->part_us[0] += (t1 - t0) / 1000;
		w->part_us[1] += (t2 - t1) / 1000;
		w->part_us[2] += (t3 - t2) / 1000;
	}
	return ret;
}

static const bench_kind kind_spawn = {
    .setup = spawn_setup, .op = spawn_op, .cleanup = spawn_cleanup};
static const bench_kind kind_lib_run = {.op = lib_run_op};
static const bench_kind kind_lib_create = {.op = lib_create_op};
static const bench_kind kind_lib_exec = {
    .setup = lib_exec_setup, .op = lib_exec_op, .cleanup = lib_exec_cleanup};
static const bench_kind kind_pool_exec = {.op = pool_op,
					  .begin = pool_begin,
					  .drain = pool_drain,
					  .end = pool_end,
					  .pace = pool_pace,
					  .no_throughput = true};
static const bench_kind kind_pool_tp = {
    .op = pool_op, .begin = pool_begin, .drain = pool_drain, .end = pool_end, .no_latency = true};
/* the audit pair: python3 start-up, ~55 opens (strace on the host) and some 30 ms of work */
static const bench_kind kind_audit = {.op = lib_run_op, .no_throughput = true};
static const bench_kind kind_density = {.apart = true};

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

/* Latency phase of one case, or of two (a case and its twin) measured in the same loop: their
 * operations alternate, in an order that flips every iteration, so that whatever else the machine
 * does weighs on both alike and a difference between them is theirs. */
static void measure_latency(const bench_env *env, bench_case **bcs, int nb, int iterations)
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
			record_failure(&w[k], "latency samples: out of memory");
			continue;
		}
		if (bc->kind->begin && bc->kind->begin(bc, env, 0, 1) < 0)
			continue;
		ready[k] = worker_setup(&w[k]) == 0;
	}
	for (int i = 0; i < WARMUP && i < iterations; i++)
		for (int k = 0; k < nb; k++)
			if (ready[k]) {
				if (bcs[k]->kind->pace)
					bcs[k]->kind->pace(&w[k]);
				bcs[k]->kind->op(&w[k]);
			}
	for (int k = 0; k < nb; k++) {
		memset(w[k].part_us, 0, sizeof w[k].part_us);
		w[k].audit_runs = w[k].audit_reported = w[k].audit_kept = 0;
	}
	for (int i = 0; i < iterations; i++)
		for (int j = 0; j < nb; j++) {
			int k = i & 1 ? nb - 1 - j : j;
			if (!ready[k])
				continue;
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
		if (n[k]) {
			uint64_t *v = ns[k];
			qsort(v, n[k], sizeof *v, cmp_u64);
			double sum = 0;
			for (size_t i = 0; i < n[k]; i++)
				sum += (double)v[i];
			bc->lat.n = n[k];
			bc->lat.p50 = percentile_ms(v, n[k], 50);
			bc->lat.p99 = percentile_ms(v, n[k], 99);
			bc->lat.mean = sum / (double)n[k] / 1e6;
			bc->lat.min = (double)v[0] / 1e6;
			bc->lat.max = (double)v[n[k] - 1] / 1e6;
			bc->lat_done = true;
			bc->parts_n = n[k];
			memcpy(bc->part_us, w[k].part_us, sizeof bc->part_us);
			bc->audit_runs = w[k].audit_runs;
			bc->audit_reported = w[k].audit_reported;
			bc->audit_kept = w[k].audit_kept;
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

/* ---- density: N idle sandboxes at once ------------------------------------------------------- */

#define DENSITY_DEFAULT 1000
#define DENSITY_MAX	10000
#define DENSITY_SAMPLE	100 /* inits whose memory is read one by one */
/* host fds a live sandbox holds: its init's pidfd, its socket, and the lock of its uid slot (which
 * the context keeps even after the sandbox) */
#define DENSITY_FDS_PER 3
#define DENSITY_MAX_FAILS 5 /* failed creates after which the case stops: a limit was reached */

/* The /proc/meminfo fields the case reads, in KiB. */
typedef struct meminfo {
	long long total, avail, free, slab, sreclaimable, sunreclaim, pagetables, kstack, percpu,
	    shmem, vmalloc;
} meminfo;

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

/* A reading of /proc/meminfo taken once MemAvailable has stopped moving: RCU callbacks, the
 * kernel's deferred namespace teardown and the release of offlined memory cgroups go on for
 * seconds (tens of seconds after thousands of sandboxes) after the last create or destroy. */
typedef struct settled {
	meminfo m;
	double waited_s; /* from the end of the creates or destroys to the reading */
	bool settled;	 /* MemAvailable moved less than SETTLE_TOL_KB over SETTLE_WINDOW_MS */
} settled;

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

static long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	long n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

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

typedef struct density_report {
	bool ran;
	int asked, created, threads;
	uint64_t create_failures, residue_failures;
	char error[ERR_LEN];   /* the first failure */
	char stopped[ERR_LEN]; /* why the case did not start, or stopped short of N */
	char limits[ERR_LEN];  /* the limits that bound N, and what was raised */
	double create_s, destroy_s;
	double create_p50, create_p99, destroy_p50, destroy_p99; /* ms */
	settled before, after, end;    /* before the creates, with all N idle, after the destroys */
	int sampled;		       /* inits whose memory was read */
	double rss_kb, pss_kb, uss_kb; /* means over them */
	int memcg_n;
	double memcg_kb;	/* mean charged to a sandbox's own memory cgroup */
	long long own_memcg_kb; /* growth of ours over the creates (what clone charged to us) */
	bool own_memcg_ok;
	leftovers left;
} density_report;

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
	rlim_t need =
	    (rlim_t)(count_fds() > 0 ? count_fds() : 0) + (rlim_t)n * DENSITY_FDS_PER + 64;
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
			note_sandbox(s);
			continue;
		}
		pthread_mutex_lock(&d->lock);
		d->failures++;
		if (!d->error[0])
			snprintf(d->error, sizeof d->error, "create #%d: %s", i + 1, e.msg);
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
		qsort(v, k, sizeof *v, cmp_u64);
		*p50 = percentile_ms(v, k, 50);
		*p99 = percentile_ms(v, k, 99);
	}
	free(v);
}

/* N idle sandboxes at once, made with pd_sandbox_create (no pools: nothing but the sandboxes),
 * and what they cost the host: /proc/meminfo before and with all of them (whole host, so other
 * work on a shared machine shows up in it), their inits' memory maps (sampled), the memory
 * charged to their cgroups; then they are all destroyed and the memory should come back. */
static void run_density(const bench_env *env, int n, density_report *rep, bool progress)
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
	count_leftovers(&rep->left);
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

static void print_residue(const pool_phase *pp)
{
	if (!pp->residue_failures && !leftovers_bad(&pp->left))
		printf("residue: clean");
	else
		printf("residue: %" PRIu64
		       " teardowns not clean, %ld processes left in our uid slots, "
		       "%ld cgroups left",
		       pp->residue_failures, pp->left.procs, pp->left.cgroups);
	if (pp->left.others > 0)
		printf(" (%ld processes of other paddock users in the sandbox uid range: not ours)",
		       pp->left.others);
}

/* The notes of the pool and audit rows: what the table's columns cannot say. */
static void print_case_notes(const bench_case *c, const bench_case *cases, size_t ncases,
			     const bench_case *floor_c, const bench_case *bwrap_c,
			     uint64_t duration_ms)
{
	const pool_phase *pl = &c->pool[0];
	if (c->kind == &kind_pool_exec && c->lat_done) {
		printf("  %s: p50 %.2f ms", c->key, c->lat.p50);
		if (floor_c->lat_done && floor_c->lat.p50 > 0)
			printf(" = %.2fx the floor's p50 (%.2f ms; issue target <= 1.25x)",
			       c->lat.p50 / floor_c->lat.p50, floor_c->lat.p50);
		printf("\n");
	}
	if (c->kind == &kind_pool_exec && pl->done) {
		printf(
		    "  %s: pool hits %" PRIu64 "/%" PRIu64 " (%.1f%%; a miss is a create on the "
		    "request path);\n    each acquire waited, untimed, for a full pool and an idle "
		    "reclaimer; ",
		    c->key, pl->hits, pl->acquires,
		    pl->acquires ? 100.0 * (double)pl->hits / (double)pl->acquires : 0.0);
		print_residue(pl);
		printf("\n");
	}
	for (int s = 0; c->kind == &kind_pool_tp && s < MAX_WORKERS; s++) {
		const pool_phase *pp = &c->pool[1 + s];
		if (!pp->done)
			continue;
		printf("  %s %dw: pool hits %" PRIu64 "/%" PRIu64 " (%.1f%%: %" PRIu64
		       " created on the request path); sandboxes created %" PRIu64 ", reset %" PRIu64
		       " (%" PRIu64 " resets refused);\n    reclaimer backlog %u when the requests "
		       "ended, drained in %.2f s (in the cell's time); ",
		       c->key, pp->workers, pp->hits, pp->acquires,
		       pp->acquires ? 100.0 * (double)pp->hits / (double)pp->acquires : 0.0,
		       pp->misses, pp->created, pp->resets, pp->reset_refusals, pp->backlog, pp->drain_s);
		print_residue(pp);
		printf("\n");
	}
	if (c->kind == &kind_pool_tp && c->tp[MAX_WORKERS - 1].done) {
		int last = MAX_WORKERS - 1;
		printf("  %s %dw: ", c->key, MAX_WORKERS);
		if (have_tp(c, last) && have_tp(floor_c, last))
			printf("%.3fx floor (issue target >= 0.8x)", ratio(c, floor_c, last));
		else
			printf("no floor figure");
		if (have_tp(c, last) && have_tp(bwrap_c, last))
			printf(", %.2fx bwrap (issue target >= 3x)", ratio(c, bwrap_c, last));
		if (duration_ms < 60000)
			printf("; the issue's figure is over 60 s: --duration 60");
		printf("\n");
	}
	/* the audit pair is reported on the audited row, against its unaudited twin */
	const bench_case *off = NULL;
	for (size_t i = 0; i < ncases; i++)
		if (cases[i].twin == c)
			off = &cases[i];
	if (c->kind == &kind_audit && c->lat_done && c->so && c->so->audit) {
		printf("  %s: p50", c->key);
		if (off && off->lat_done && off->lat.p50 > 0)
			printf(" without audit %.2f ms, with %.2f ms: %+.2f ms (%+.1f%%)",
			       off->lat.p50, c->lat.p50, c->lat.p50 - off->lat.p50,
			       100.0 * (c->lat.p50 - off->lat.p50) / off->lat.p50);
		else
			printf(" with audit %.2f ms (no unaudited run to compare)", c->lat.p50);
		if (c->audit_runs)
			printf(";\n    per audited run %.1f events reported (opens, execs, sends "
			       "outside the allowed paths), %.1f kept",
			       (double)c->audit_reported / (double)c->audit_runs,
			       (double)c->audit_kept / (double)c->audit_runs);
		printf("\n");
	}
}

static void print_density(const density_report *r)
{
	printf("\ndensity: %d idle sandboxes at once (pd_sandbox_create, default limits, "
	       "%d threads)\n",
	       r->asked, r->threads);
	if (r->limits[0])
		printf("  limits: %s\n", r->limits);
	if (!r->created) {
		printf("  no sandbox was created: %s\n", r->stopped[0] ? r->stopped : r->error);
		return;
	}
	double n = r->created;
	const meminfo *b = &r->before.m, *a = &r->after.m, *e = &r->end.m;
	printf("  create   %d in %.1f s: %.1f/s (p50 %.2f ms, p99 %.2f ms)%s%s\n", r->created,
	       r->create_s, n / r->create_s, r->create_p50, r->create_p99,
	       r->stopped[0] ? "; " : "", r->stopped);
	printf("  destroy  %d in %.1f s: %.1f/s (p50 %.2f ms, p99 %.2f ms)\n", r->created,
	       r->destroy_s, n / r->destroy_s, r->destroy_p50, r->destroy_p99);
	double total = (double)(b->avail - a->avail) / n;
	printf("  host memory per idle sandbox, KiB (whole-host /proc/meminfo, before and with all "
	       "%d,\n  read %.1f s after the last create%s):\n",
	       r->created, r->after.waited_s, r->after.settled ? ", settled" : ", still moving");
	printf("    total   %.1f (MemAvailable drop; MemFree drop %.1f)\n", total,
	       (double)(b->free - a->free) / n);
	if (r->sampled)
		printf("    user    %.1f Pss (Rss %.1f, private %.1f): mean of %d inits\n",
		       r->pss_kb, r->rss_kb, r->uss_kb, r->sampled);
	printf(
	    "    kernel  Slab %.1f (unreclaimable %.1f), PageTables %.1f, KernelStack %.1f, Percpu "
	    "%.1f, Shmem %.1f, Vmalloc %.1f\n",
	    (double)(a->slab - b->slab) / n, (double)(a->sunreclaim - b->sunreclaim) / n,
	    (double)(a->pagetables - b->pagetables) / n, (double)(a->kstack - b->kstack) / n,
	    (double)(a->percpu - b->percpu) / n, (double)(a->shmem - b->shmem) / n,
	    (double)(a->vmalloc - b->vmalloc) / n);
	if (r->memcg_n || r->own_memcg_ok) {
		/* memory cgroups see only what they are charged, but see it whatever else the host
		 * does: a steadier figure than meminfo's on a shared machine */
		printf("    memcg   %.1f charged to each sandbox's own memory cgroup (mean of %d)",
		       r->memcg_kb, r->memcg_n);
		if (r->own_memcg_ok) {
			double acc = r->memcg_kb + (double)r->own_memcg_kb / n;
			printf(" + %.1f to the bench's\n            (what clone3 and the cgroup "
			       "mkdirs allocate before init moves in) = %.1f accounted;\n"
			       "            %.1f of the total is charged to no memory cgroup",
			       (double)r->own_memcg_kb / n, acc, total - acc);
		}
		printf("\n");
	}
	printf("  issue target <= 400 KiB per idle sandbox: %.1f KiB, %.2fx the target: %s\n",
	       total, total / 400.0, total <= 400.0 ? "met" : "not met");
	printf(
	    "  %.1f s after destroying all%s: MemAvailable %+.1f MiB from the start (%+.1f KiB per "
	    "sandbox);\n    Slab %+.1f MiB, Percpu %+.1f MiB\n",
	    r->end.waited_s, r->end.settled ? " (settled)" : " (still moving)",
	    (double)(e->avail - b->avail) / 1024.0, (double)(e->avail - b->avail) / n,
	    (double)(e->slab - b->slab) / 1024.0, (double)(e->percpu - b->percpu) / 1024.0);
	printf("  ");
	pool_phase pp;
	memset(&pp, 0, sizeof pp);
	pp.residue_failures = r->residue_failures;
	pp.left = r->left;
	print_residue(&pp);
	printf("\n");
	if (r->create_failures || r->residue_failures)
		printf("  %" PRIu64 " creates failed, %" PRIu64 " teardowns not clean; first: %s\n",
		       r->create_failures, r->residue_failures, r->error);
	printf("  whole-host figures: other work on the machine moves them too; run it twice\n");
}

static void print_table(const machine *m, const bench_case *cases, size_t ncases,
			const bench_case *floor_c, const bench_case *bwrap_c, int iterations,
			uint64_t duration_ms, const density_report *dens)
{
	int last = MAX_WORKERS - 1;
	bool rows = false;
	for (size_t i = 0; i < ncases; i++)
		rows |= cases[i].selected && !cases[i].kind->apart;
	printf("paddock bench — %ld CPU%s, Linux %s, cgroup %s", m->cpus, m->cpus == 1 ? "" : "s",
	       m->kernel, m->cgroup);
	if (rows)
		printf(", %d iterations, %g s per throughput cell", iterations,
		       (double)duration_ms / 1000.0);
	printf("\nload average at start: %.2f %.2f %.2f\n", m->load[0], m->load[1], m->load[2]);
	if (!rows) {
		if (dens && dens->ran)
			print_density(dens);
		return;
	}
	printf("\n%-32s %8s %8s %8s %9s %9s %11s %11s %9s %9s %6s\n", "case", "p50 ms", "p99 ms",
	       "mean ms", "ops/s 1w", "ops/s 2w", "x floor(2w)", "x bwrap(2w)", "cpu ms/op",
	       "host ms/op", "fails");
	for (size_t i = 0; i < ncases; i++) {
		const bench_case *c = &cases[i];
		if (!c->selected || c->kind->apart)
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
		if (!c->selected || c->kind->apart)
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
		print_case_notes(c, cases, ncases, floor_c, bwrap_c, duration_ms);
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
	if (dens && dens->ran)
		print_density(dens);
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

static void json_pool_phase(const pool_phase *pp, const char *phase)
{
	printf("{\"phase\":\"%s\",\"workers\":%d,\"acquires\":%" PRIu64 ",\"hits\":%" PRIu64
	       ",\"hit_rate\":",
	       phase, pp->workers, pp->acquires, pp->hits);
	json_num(pp->acquires ? (double)pp->hits / (double)pp->acquires : 0, pp->acquires > 0);
	printf(",\"created\":%" PRIu64 ",\"resets\":%" PRIu64 ",\"reset_refusals\":%" PRIu64
	       ",\"destroyed\":%" PRIu64 ",\"create_failures\":%" PRIu64
	       ",\"residue_failures\":%" PRIu64 ",\"forced_reclaims\":%" PRIu64
	       ",\"reclaim_backlog\":%u,\"drain_s\":%.4f,\"drain_timeout\":%s,"
	       "\"leftover_processes\":%ld,\"leftover_cgroups\":%ld,\"others_processes\":%ld,"
	       "\"residue_clean\":%s}",
	       pp->created, pp->resets, pp->reset_refusals, pp->destroyed, pp->create_failures,
	       pp->residue_failures, pp->forced, pp->backlog, pp->drain_s, pp->drain_timeout ? "true" : "false", pp->left.procs,
	       pp->left.cgroups, pp->left.others,
	       !pp->residue_failures && !leftovers_bad(&pp->left) ? "true" : "false");
}

static void json_density(const density_report *r)
{
	if (!r || !r->ran) {
		fputs("null", stdout);
		return;
	}
	double n = r->created ? r->created : 1;
	const meminfo *b = &r->before.m, *a = &r->after.m, *e = &r->end.m;
	printf("{\"asked\":%d,\"created\":%d,\"threads\":%d,\"stopped\":", r->asked, r->created,
	       r->threads);
	json_str(r->stopped[0] ? r->stopped : NULL);
	printf(",\"limits\":");
	json_str(r->limits[0] ? r->limits : NULL);
	printf(",\"create_failures\":%" PRIu64 ",\"residue_failures\":%" PRIu64 ",\"first_error\":",
	       r->create_failures, r->residue_failures);
	json_str(r->error[0] ? r->error : NULL);
	bool have = r->created > 0;
	printf(",\"create\":{\"seconds\":");
	json_num(r->create_s, have);
	printf(",\"per_s\":");
	json_num(r->create_s > 0 ? r->created / r->create_s : 0, have && r->create_s > 0);
	printf(",\"p50_ms\":");
	json_num(r->create_p50, have);
	printf(",\"p99_ms\":");
	json_num(r->create_p99, have);
	printf("},\"destroy\":{\"seconds\":");
	json_num(r->destroy_s, have);
	printf(",\"per_s\":");
	json_num(r->destroy_s > 0 ? r->created / r->destroy_s : 0, have && r->destroy_s > 0);
	printf(",\"p50_ms\":");
	json_num(r->destroy_p50, have);
	printf(",\"p99_ms\":");
	json_num(r->destroy_p99, have);
	printf("},\"per_sandbox_kib\":{\"total_memavailable\":");
	json_num((double)(b->avail - a->avail) / n, have);
	printf(",\"memfree\":");
	json_num((double)(b->free - a->free) / n, have);
	printf(",\"user_pss\":");
	json_num(r->pss_kb, have && r->sampled);
	printf(",\"user_rss\":");
	json_num(r->rss_kb, have && r->sampled);
	printf(",\"user_private\":");
	json_num(r->uss_kb, have && r->sampled);
	printf(",\"slab\":");
	json_num((double)(a->slab - b->slab) / n, have);
	printf(",\"sunreclaim\":");
	json_num((double)(a->sunreclaim - b->sunreclaim) / n, have);
	printf(",\"pagetables\":");
	json_num((double)(a->pagetables - b->pagetables) / n, have);
	printf(",\"kernelstack\":");
	json_num((double)(a->kstack - b->kstack) / n, have);
	printf(",\"percpu\":");
	json_num((double)(a->percpu - b->percpu) / n, have);
	printf(",\"shmem\":");
	json_num((double)(a->shmem - b->shmem) / n, have);
	printf(",\"vmalloc\":");
	json_num((double)(a->vmalloc - b->vmalloc) / n, have);
	printf(",\"memcg_sandbox\":");
	json_num(r->memcg_kb, have && r->memcg_n);
	printf(",\"memcg_bench\":");
	json_num((double)r->own_memcg_kb / n, have && r->own_memcg_ok);
	printf("},\"after_create\":{\"seconds_after\":%.1f,\"settled\":%s}", r->after.waited_s,
	       r->after.settled ? "true" : "false");
	printf(",\"sampled_inits\":%d,\"target_kib\":400,\"after_destroy\":{"
	       "\"memavailable_delta_kib\":",
	       r->sampled);
	json_num((double)(e->avail - b->avail), have);
	printf(",\"slab_delta_kib\":");
	json_num((double)(e->slab - b->slab), have);
	printf(",\"percpu_delta_kib\":");
	json_num((double)(e->percpu - b->percpu), have);
	printf(",\"seconds_after\":%.1f,\"settled\":%s", r->end.waited_s,
	       r->end.settled ? "true" : "false");
	printf(",\"leftover_processes\":%ld,\"leftover_cgroups\":%ld,\"others_processes\":%ld}}",
	       r->left.procs, r->left.cgroups, r->left.others);
}

static void print_json(const machine *m, const bench_case *cases, size_t ncases,
		       const bench_case *floor_c, const bench_case *bwrap_c, int iterations,
		       uint64_t duration_ms, const density_report *dens)
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
		if (!c->selected || c->kind->apart)
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
		printf(",\"p50_x_floor\":");
		bool pf = c->lat_done && floor_c->lat_done && floor_c->lat.p50 > 0;
		json_num(pf ? c->lat.p50 / floor_c->lat.p50 : 0, pf);
		if (c->kind->begin) {
			printf(",\"pool\":[");
			bool pfirst = true;
			for (int s = 0; s <= MAX_WORKERS; s++)
				if (c->pool[s].done) {
					char ph[16];
					snprintf(ph, sizeof ph, s ? "%dw" : "latency", s);
					printf("%s", pfirst ? "" : ",");
					json_pool_phase(&c->pool[s], ph);
					pfirst = false;
				}
			putchar(']');
		}
		if (c->kind == &kind_audit) {
			printf(",\"audit\":{\"enabled\":%s,\"runs\":%" PRIu64
			       ",\"reported_per_run\":",
			       c->so && c->so->audit ? "true" : "false", c->audit_runs);
			json_num(c->audit_runs ? (double)c->audit_reported / (double)c->audit_runs
					       : 0,
				 c->audit_runs > 0);
			printf(",\"kept_per_run\":");
			json_num(c->audit_runs ? (double)c->audit_kept / (double)c->audit_runs : 0,
				 c->audit_runs > 0);
			const bench_case *off = NULL;
			for (size_t k = 0; k < ncases; k++)
				if (cases[k].twin == c)
					off = &cases[k];
			bool ov = c->so && c->so->audit && c->lat_done && off && off->lat_done &&
				  off->lat.p50 > 0;
			printf(",\"overhead_p50_ms\":");
			json_num(ov ? c->lat.p50 - off->lat.p50 : 0, ov);
			printf(",\"overhead_p50_pct\":");
			json_num(ov ? 100.0 * (c->lat.p50 - off->lat.p50) / off->lat.p50 : 0, ov);
			putchar('}');
		}
		putchar('}');
	}
	printf("],\"density\":");
	json_density(dens);
	printf("}\n");
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
	      "  pool-exec    warm exec: pd_pool_acquire a READY sandbox (bash template, pool\n"
	      "               min = workers + 2) + exec + pd_pool_release; latency only, each\n"
	      "               acquire waiting (untimed) for a full pool and an idle reclaimer;\n"
	      "               p50 against the floor's p50, and the pool's hit rate\n"
	      "  pool-throughput  the same through the pools, back to back, each exec in a clean\n"
	      "               sandbox: fresh, or reset for reuse (pd_sandbox_reset, proven by\n"
	      "               tests/unit/reset.c); throughput only; a cell ends when the\n"
	      "               reclaimer has reset or destroyed every sandbox it was given, then\n"
	      "               the residue is checked (teardowns, processes in our uid slots,\n"
	      "               cgroups)\n"
	      "  audit        (audit-off, audit-on) pd_run of python3 -c 'import json,os; ...'\n"
	      "               without and with the audit, alternating; latency only; overhead\n"
	      "               of the audit in ms and %, and audit events per run\n"
	      "  density      (only with --only density) N idle sandboxes at once: host memory\n"
	      "               per idle sandbox (/proc/meminfo, the inits' smaps_rollup, memory\n"
	      "               cgroups), create and destroy rates, and whether memory came back\n"
	      "Each case: latency (p50, p99, mean) over N operations with 1 worker, then\n"
	      "throughput with 1 and 2 workers (threads) over a fixed time, and ratios to floor\n"
	      "and bwrap.\n"
	      "\n"
	      "options:\n"
	      "  -n, --iterations N     operations timed for latency (default 200)\n"
	      "  -d, --duration T       time of each throughput cell, e.g. 3, 500ms (default 3s;\n"
	      "                         0 skips throughput); --duration 60 gives the 60 s\n"
	      "                         pool-throughput figure of the issue\n"
	      "  --only LIST            comma list of cases to run (default: all but density)\n"
	      "  --density N            idle sandboxes of the density case (default 1000, at\n"
	      "                         most 10000); raises RLIMIT_NOFILE as needed, stops if\n"
	      "                         MemAvailable falls below a tenth of the machine.\n"
	      "                         Note: every memory cgroup then created on the host\n"
	      "                         costs more until reboot (the kernel sizes each one's\n"
	      "                         shrinker map by the most superblocks ever alive)\n"
	      "  --json                 one JSON object with all figures on stdout\n"
	      "  --http                 instead: the daemon's section (POST /run_code python print(1)\n"
	      "                         against python3 -c 'print(1)' on the host, GET /healthz);\n"
	      "                         takes --iterations (default 100) and --duration\n"
	      "  --rounds N             with --http: the whole measure N times over (default 1),\n"
	      "                         each round's two ratios, then medians and ranges\n"
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
			if ((strlen(cases[i].key) == n && !strncmp(cases[i].key, p, n)) ||
			    (cases[i].group && strlen(cases[i].group) == n &&
			     !strncmp(cases[i].group, p, n)))
				known = cases[i].selected = true;
		if (n && !known)
			return p;
		p += n;
		if (*p == ',')
			p++;
	}
	return NULL;
}

enum { O_ONLY = 256, O_JSON, O_DENSITY };

/* the audit pair's options: they must outlive cmd_bench's cases, which point at them */
static pd_exec_opts py_xo;
static pd_sandbox_opts audit_so;
static const pd_audit_opts audit_opts = {.enabled = true};

int cmd_bench(int argc, char **argv)
{
	/* the daemon's own section: a server, clients and python3, not the lifecycle rows */
	bool http = false, help = false;
	for (int i = 1; i < argc; i++) {
		http |= !strcmp(argv[i], "--http");
		help |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
	}
	if (http && help) {
		bench_usage(stdout);
		return 0;
	}
	if (http)
		return cmd_bench_http(argc, argv);
	static const struct option opts[] = {
	    {"help", no_argument, 0, 'h'},
	    {"iterations", required_argument, 0, 'n'},
	    {"duration", required_argument, 0, 'd'},
	    {"only", required_argument, 0, O_ONLY},
	    {"json", no_argument, 0, O_JSON},
	    {"density", required_argument, 0, O_DENSITY},
	    {0, 0, 0, 0},
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
	    {.key = "floor",
	     .label = "floor: spawn /bin/true",
	     .kind = &kind_spawn,
	     .argv = argv_floor},
	    {.key = "bwrap", .label = "bwrap /bin/true", .kind = &kind_spawn, .argv = argv_bwrap},
	    {.key = "cli",
	     .label = "paddock exec (CLI process)",
	     .kind = &kind_spawn,
	     .argv = argv_cli},
	    {.key = "lib",
	     .label = "lib pd_run create+exec+destroy",
	     .kind = &kind_lib_run,
	     .part_names = {"setup", "exec", "teardown"}},
	    {.key = "lib-create",
	     .label = "lib create+destroy (no exec)",
	     .kind = &kind_lib_create,
	     .part_names = {"create", NULL, "destroy"}},
	    {.key = "lib-exec", .label = "lib exec in a live sandbox", .kind = &kind_lib_exec},
	    {.key = "pool-exec",
	     .label = "pool acquire+exec+release (warm)",
	     .kind = &kind_pool_exec,
	     .part_names = {"acquire", "exec", "release"}},
	    {.key = "pool-throughput",
	     .label = "pool exec, clean sandbox each",
	     .kind = &kind_pool_tp},
	    {.key = "audit-off",
	     .group = "audit",
	     .label = "lib pd_run python3, no audit",
	     .kind = &kind_audit,
	     .xo = &py_xo},
	    {.key = "audit-on",
	     .group = "audit",
	     .label = "lib pd_run python3, audit on",
	     .kind = &kind_audit,
	     .so = &audit_so,
	     .xo = &py_xo},
	    {.key = "density",
	     .label = "density: idle sandboxes",
	     .kind = &kind_density,
	     .optional = true},
	};
	const size_t ncases = sizeof cases / sizeof cases[0];
	bench_case *floor_c = &cases[0], *bwrap_c = &cases[1];
	for (size_t i = 0; i < ncases; i++) {
		cases[i].selected = !cases[i].optional;
		/* audit-off is measured with audit-on in one alternating loop */
		if (!strcmp(cases[i].key, "audit-off"))
			cases[i].twin = &cases[i + 1];
	}
	int density_n = DENSITY_DEFAULT;
	bool density_set = false;

	int iterations = 200;
	uint64_t duration_ms = 3000;
	bool json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+hn:d:", opts, NULL)) != -1) {
		switch (c) {
		case 'h': bench_usage(stdout); return 0;
		case 'n': {
			long n;
			if (!cli_count("--iterations", optarg, 1, 10000000, &n))
				return EXIT_USAGE;
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
					  "lib, lib-create, lib-exec, pool-exec, pool-throughput, "
					  "audit (audit-off, audit-on), density)",
					  (int)strcspn(bad, ","), bad);
				return EXIT_USAGE;
			}
			break;
		}
		case O_JSON: json = true; break;
		case O_DENSITY: {
			char *end;
			long n = strtol(optarg, &end, 10);
			if (*end || n < 1 || n > DENSITY_MAX) {
				cli_error("--density: '%s' is not a count from 1 to %d", optarg,
					  DENSITY_MAX);
				return EXIT_USAGE;
			}
			density_n = (int)n;
			density_set = true;
			break;
		}
		default: bench_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("bench: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	bench_case *density_c = &cases[ncases - 1];
	if (density_set && !density_c->selected) {
		cli_error("--density sets the size of the density case, which runs only when "
			  "selected: --only density");
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
	/* the audit pair: interpreter start-up, ~55 opens of the image's files, one of /etc */
	static char *py_argv[] = {(char *)"python3", (char *)"-c",
				  (char *)"import json,os; open(\"/etc/hostname\").read()", NULL};
	if (access("/usr/bin/python3", X_OK) == 0)
		py_argv[0] = (char *)"/usr/bin/python3";
	py_xo = env.xo;
	py_xo.argv = py_argv;
	audit_so = env.so;
	audit_so.audit = &audit_opts;
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
			if (!bc->selected || bc->skip || bc->kind->apart || bc->paired ||
			    (phase == 0 && bc->kind->no_latency) ||
			    (phase > 0 && bc->kind->no_throughput))
				continue;
			if (progress)
				fprintf(stderr, "\r\033[Kbench: %s, %s", bc->label,
					phase ? "throughput" : "latency");
			if (phase == 0) {
				bench_case *group[2] = {bc, bc->twin};
				int nb = 1;
				if (bc->twin && bc->twin->selected && !bc->twin->skip) {
					bc->twin->paired = true;
					nb = 2;
				}
				measure_latency(&env, group, nb, iterations);
			} else
				measure_throughput(&env, bc, phase - 1, phase, duration_ms);
		}
	}
	/* last, and alone: it holds thousands of sandboxes, which would weigh on any other row */
	density_report dens;
	memset(&dens, 0, sizeof dens);
	if (density_c->selected && !density_c->skip) {
		run_density(&env, density_n, &dens, progress);
		if (dens.create_failures || dens.residue_failures || leftovers_bad(&dens.left) ||
		    !dens.created) {
			density_c->failed = dens.create_failures + dens.residue_failures +
					    leftovers_bad(&dens.left) + !dens.created;
			snprintf(density_c->error, sizeof density_c->error, "%s",
				 dens.error[0] ? dens.error : dens.stopped);
		}
	}
	if (progress)
		fputs("\r\033[K", stderr);
	pd_ctx_free(env.ctx);

	if (json)
		print_json(&m, cases, ncases, floor_c, bwrap_c, iterations, duration_ms, &dens);
	else
		print_table(&m, cases, ncases, floor_c, bwrap_c, iterations, duration_ms, &dens);
	/* a missing bwrap is the machine's business; a paddock case that could not run is ours */
	bool failed = false;
	for (size_t i = 0; i < ncases; i++)
		if (cases[i].selected &&
		    (cases[i].failed || (cases[i].skip && cases[i].kind != &kind_spawn)))
			failed = true;
	return failed ? EXIT_PADDOCK_FAILED : 0;
}
