/* paddock bench: the kinds of operation a case measures, each how a worker gets ready, does one
 * operation and cleans up: spawned commands (the floor, bwrap, the paddock CLI), the library in
 * process (pd_run, create+destroy, exec in a live sandbox) and the warm pools. */
#define _GNU_SOURCE
#include "bench_case.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- spawned commands: floor, bwrap, the paddock CLI ----------------------------------------- */

static int spawn_setup(worker *w)
{
	w->nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
	/* a child's stderr is kept so that a failure can be reported in its own words */
	w->errfd = memfd_create("paddock-bench-stderr", MFD_CLOEXEC);
	if (w->nullfd < 0 || w->errfd < 0)
		return bench_record_failure(w, "child stdio: %s", strerror(errno));
	posix_spawn_file_actions_init(&w->fa);
	w->fa_ok = true;
	if (posix_spawn_file_actions_adddup2(&w->fa, w->nullfd, STDIN_FILENO) ||
	    posix_spawn_file_actions_adddup2(&w->fa, w->nullfd, STDOUT_FILENO) ||
	    posix_spawn_file_actions_adddup2(&w->fa, w->errfd, STDERR_FILENO))
		return bench_record_failure(w, "posix_spawn_file_actions: out of memory");
	if (w->bc->bound_ms) {
		posix_spawnattr_init(&w->attr);
		w->attr_ok = true;
		if (posix_spawnattr_setflags(&w->attr, POSIX_SPAWN_SETPGROUP) ||
		    posix_spawnattr_setpgroup(&w->attr, 0))
			return bench_record_failure(w, "posix_spawnattr: out of memory");
	}
	return 0;
}

/* A bounded case's child: waited for until the worker's deadline, then killed with its process
 * group (runsc's gofer and sandbox are its children) and reaped. 1 when it was killed. */
static int wait_bounded(worker *w, pid_t pid)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	uint64_t now = now_ns();
	int left = w->deadline_ns > now ? (int)((w->deadline_ns - now + 999999) / 1000000) : 0;
	struct pollfd pf = {.fd = pfd, .events = POLLIN};
	int r = 1;
	if (pfd >= 0)
		while ((r = poll(&pf, 1, left)) < 0 && errno == EINTR)
			;
	if (pfd >= 0)
		close(pfd);
	if (r != 0)
		return 0; /* ended (or no pidfd: waitpid waits as for the other cases) */
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	return 1;
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
	int err = posix_spawn(&pid, argv[0], &w->fa, w->attr_ok ? &w->attr : NULL, argv, environ);
	if (err)
		return bench_record_failure(w, "spawn %s: %s", w->bc->argv[0], strerror(err));
	int killed = w->deadline_ns ? wait_bounded(w, pid) : 0;
	int st;
	pid_t r;
	do
		r = waitpid(pid, &st, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return bench_record_failure(w, "waitpid %d: %s", (int)pid, strerror(errno));
	if (killed) {
		char ignored[8];
		take_stderr(w, ignored, sizeof ignored);
		return bench_record_failure(w, "timed out: killed at the cell's bound of %.0f s",
					    (double)w->bc->bound_ms / 1000.0);
	}
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
		return bench_record_failure(w, "exit %d%s%s", WEXITSTATUS(st), msg[0] ? ": " : "", msg);
	return bench_record_failure(w, "killed by signal %d%s%s", WTERMSIG(st), msg[0] ? ": " : "", msg);
}

static void spawn_cleanup(worker *w)
{
	if (w->fa_ok)
		posix_spawn_file_actions_destroy(&w->fa);
	if (w->attr_ok)
		posix_spawnattr_destroy(&w->attr);
	w->fa_ok = w->attr_ok = false;
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
		return bench_record_failure(w, "%s", PD_ERR_STR(e));
	if (r->status == PD_XX)
		return bench_record_failure(w, "XX: %s", r->error[0] ? r->error : PD_ERR_STR(e));
	if (r->status != PD_OK)
		return bench_record_failure(w, "%s after %" PRIu64 " ms (exit %d, signal %d)%s%s",
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
		ret = bench_record_failure(w, "teardown left residue: %s", r.residue);
	if (ret == 0) {
		w->part_us[0] += r.setup_us;
		w->part_us[1] += r.exec_us;
		w->part_us[2] += r.teardown_us;
		w->audit_runs++;
		w->audit_reported += r.audit_files + r.audit_net;
		w->audit_kept += r.audit_len;
		w->audit_notified += r.audit_notified;
	}
	pd_result_free(&r);
	return ret;
}

/* create + destroy, no exec: the cost of the sandbox itself. */
static int lib_create_op(worker *w)
{
	pd_err e = {0};
	uint64_t t0 = now_ns();
	pd_sandbox *s = pd_sandbox_create(w->env->ctx, case_so(w), &e);
	if (!s)
		return bench_record_failure(w, "create: %s", PD_ERR_STR(&e));
	uint64_t t1 = now_ns();
	char residue[128];
	int dirty = pd_sandbox_destroy(s, residue, sizeof residue);
	uint64_t t2 = now_ns();
	if (dirty)
		return bench_record_failure(w, "teardown left residue: %s", residue);
	w->part_us[0] += (t1 - t0) / 1000;
	w->part_us[2] += (t2 - t1) / 1000;
	return 0;
}

static int lib_exec_setup(worker *w)
{
	pd_err e = {0};
	w->sb = pd_sandbox_create(w->env->ctx, &w->env->so, &e);
	return w->sb ? 0 : bench_record_failure(w, "create: %s", PD_ERR_STR(&e));
}

static void lib_exec_cleanup(worker *w)
{
	char residue[128];
	if (w->sb && pd_sandbox_destroy(w->sb, residue, sizeof residue))
		bench_record_failure(w, "teardown left residue: %s", residue);
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
		/* the pools have no wait for this: poll, every 1 ms (finer than a teardown) */
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
		return bench_case_failure(bc, "built-in templates: %s", PD_ERR_STR(&e));
	pd_template *t = NULL;
	for (size_t i = 0; i < n && !t; i++)
		if (!strcmp(all[i].name, POOL_TEMPLATE))
			t = &all[i];
	if (!t) {
		pd_templates_free(all, n);
		return bench_case_failure(bc, "no built-in template '%s'", POOL_TEMPLATE);
	}
	t->pool_min = (uint32_t)nworkers + 2;
	t->pool_max = POOL_MAX;
	/* the gvisor row: the same template under runsc, with that tier's reuse rule (none) */
	if (bc->so && bc->so->isolation == PD_ISO_GVISOR) {
		t->isolation = PD_ISO_GVISOR;
		t->pool_reuse = false;
	}
	pd_pools_opts po = {.prewarm = true};
	uint64_t wait_ms = bc->bound_ms && bc->bound_ms < POOL_WAIT_MS ? bc->bound_ms : POOL_WAIT_MS;
	bc->pools = pd_pools_new(env->ctx, t, 1, &po, &e); /* copies the template */
	pd_templates_free(all, n);
	if (!bc->pools)
		return bench_case_failure(bc, "pools: %s", PD_ERR_STR(&e));
	const pd_template *pt = pd_pools_template(bc->pools, POOL_TEMPLATE);
	int rc = 0;
	if (pt && !pt->available)
		rc =
		    bench_case_failure(bc, "template %s: its image lacks %s", POOL_TEMPLATE, pt->missing);
	else if (pd_pools_wait_ready(bc->pools, wait_ms) < 0 || !pool_quiet(bc->pools, wait_ms, NULL)) {
		pd_pool_stats st = pool_stats(bc->pools);
		rc = bench_case_failure(bc,
				  "the pool did not fill in %.0f s (%u ready of %u, %" PRIu64
				  " creates failed)",
				  (double)wait_ms / 1000.0, st.ready, st.target, st.create_failures);
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
	uint64_t wait_ms = bc->bound_ms && bc->bound_ms < POOL_WAIT_MS ? bc->bound_ms : POOL_WAIT_MS;
	pp->drain_timeout = !pool_quiet(bc->pools, wait_ms, &pp->backlog);
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
	bench_count_leftovers(&pp->left);
	pp->done = true;
	if (pp->drain_timeout)
		bench_case_failure(bc, "the reclaimer did not drain in %.0f s",
				   (double)(bc->bound_ms && bc->bound_ms < POOL_WAIT_MS ? bc->bound_ms : POOL_WAIT_MS) / 1000.0);
	uint64_t bad = pp->residue_failures + bench_leftovers_bad(&pp->left);
	if (bad) {
		bench_case_failure(bc,
			     "residue: %" PRIu64 " teardowns not clean, %ld processes left in our "
			     "uid slots, %ld cgroups left",
			     pp->residue_failures, pp->left.procs, pp->left.cgroups);
		bc->failed += bad - 1; /* bench_case_failure counted one */
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
	uint64_t wait_ms = POOL_WAIT_MS, now = now_ns();
	/* a bounded case waits no longer than its bound: the latency loop then stops */
	if (w->deadline_ns)
		wait_ms = w->deadline_ns > now ? (w->deadline_ns - now) / 1000000 : 0;
	if (wait_ms > POOL_WAIT_MS)
		wait_ms = POOL_WAIT_MS;
	pd_pools_wait_ready(p, wait_ms);
	pool_quiet(p, wait_ms, NULL);
}

/* acquire a READY sandbox + exec /bin/true + release: what a request costs with warm pools. The
 * reclaimer resets it for the next acquire (or destroys it) off the request path, and counts
 * its residue. */
static int pool_op(worker *w)
{
	pd_pools *p = w->bc->pools;
	if (!p)
		return bench_record_failure(w, "no pools");
	bool hit = false;
	pd_err e = {0};
	uint64_t t0 = now_ns();
	pd_sandbox *s = pd_pool_acquire(p, POOL_TEMPLATE, &hit, &e);
	if (!s)
		return bench_record_failure(w, "acquire: %s", PD_ERR_STR(&e));
	uint64_t t1 = now_ns();
	bench_note_sandbox(s);
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

const bench_kind bench_kind_spawn = {
    .setup = spawn_setup, .op = spawn_op, .cleanup = spawn_cleanup};
const bench_kind bench_kind_lib_run = {.op = lib_run_op};
const bench_kind bench_kind_lib_create = {.op = lib_create_op};
const bench_kind bench_kind_lib_exec = {
    .setup = lib_exec_setup, .op = lib_exec_op, .cleanup = lib_exec_cleanup};
const bench_kind bench_kind_pool_exec = {.op = pool_op,
					 .begin = pool_begin,
					 .drain = pool_drain,
					 .end = pool_end,
					 .pace = pool_pace,
					 .no_throughput = true};
const bench_kind bench_kind_pool_tp = {
    .op = pool_op, .begin = pool_begin, .drain = pool_drain, .end = pool_end, .no_latency = true};
/* the audit pair: pd_run of a program that opens many files (python3 starting), with and without
 * the audit, its cost against the same run unaudited */
const bench_kind bench_kind_audit = {.op = lib_run_op, .no_throughput = true};
/* the egress pair: create + destroy of a loopback sandbox and of an allowlist one (its relay:
 * the listener made in the sandbox's namespace, a thread started, then stopped and joined) */
const bench_kind bench_kind_egress = {.op = lib_create_op, .no_throughput = true};
const bench_kind bench_kind_density = {.apart = true};
/* the tier cells (--only gvisor): create+destroy and a cold pd_run of each tier, latency only
 * (alternating container and gvisor); their warm and throughput rows are the pool kinds */
const bench_kind bench_kind_tier_create = {.op = lib_create_op, .no_throughput = true};
const bench_kind bench_kind_tier_run = {.op = lib_run_op, .no_throughput = true};
