/* Soak: PADDOCK_SOAK_N (default 100,000) sandbox lifecycles through the warm pools with 2
 * workers; every 100th run is a dirty workload (a daemon, files, /dev/shm, SysV IPC). Released
 * sandboxes are reset and reused (the default) or destroyed; the dirty runs' sandboxes go through
 * the same reset. Then the host is counted: nothing may be left. Run with `make soak`. */
#define _GNU_SOURCE
#include "internal.h"
#include "pool.h"
#include "tap.h"
#include "../hostcount.h"

#include <pthread.h>

static pd_pools *pools;
static long total, next_i;
static long bad, dirty_runs;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char first_bad[256];

static void *worker(void *arg)
{
	(void)arg;
	static char sh[] = "/bin/sh", c[] = "-c",
		    dirty[] = "(setsid sleep 30 &); echo x > /tmp/f; : > /dev/shm/s; "
			      "ipcmk -M 4096 >/dev/null 2>&1; true",
		    t[] = "/bin/true";
	char *argv_dirty[] = {sh, c, dirty, NULL}, *argv_true[] = {t, NULL};
	for (;;) {
		pthread_mutex_lock(&mu);
		long i = next_i < total ? next_i++ : total;
		pthread_mutex_unlock(&mu);
		if (i >= total)
			return NULL;
		pd_err e = {0};
		pd_sandbox *s = pd_pool_acquire(pools, "bash", NULL, &e);
		pd_exec_opts x = {0};
		x.argv = i % 100 == 0 ? argv_dirty : argv_true;
		x.stdin_fd = -1;
		pd_result r;
		memset(&r, 0, sizeof r);
		bool ok_run = s && pd_sandbox_exec(s, &x, &r, &e) == 0 && r.status == PD_OK;
		if (s)
			pd_pool_release(pools, s);
		pthread_mutex_lock(&mu);
		if (!ok_run && !bad++)
			snprintf(first_bad, sizeof first_bad, "run %ld: %s %s", i,
				 s ? pd_status_name(r.status) : "acquire", s ? r.error : e.msg);
		dirty_runs += i % 100 == 0;
		if ((i + 1) % 10000 == 0)
			fprintf(stderr, "# soak: %ld/%ld\n", i + 1, total);
		pthread_mutex_unlock(&mu);
		pd_result_free(&r);
	}
}

int main(void)
{
	total = getenv("PADDOCK_SOAK_N") ? atol(getenv("PADDOCK_SOAK_N")) : 100000;
	plan(13);
	pd_err e = {0};
	pd_ctx *c = pd_ctx_new(NULL, &e);
	if (!ok(c != NULL, "context: %s", c ? "ok" : e.msg))
		return 1;
	pd_template *t;
	size_t n;
	pd_templates_default(&t, &n, &e);
	for (size_t i = 0; i < n; i++)
		t[i].pool_min = !strcmp(t[i].name, "bash") ? 4 : 0;
	snap before, after;
	take(c, &before);
	/* PADDOCK_SOAK_RECLAIMERS: reclaimer threads (default: the pools' own choice) */
	pd_pools_opts po = {0};
	if (getenv("PADDOCK_SOAK_RECLAIMERS"))
		po.reclaimers = (uint32_t)atoi(getenv("PADDOCK_SOAK_RECLAIMERS"));
	pools = pd_pools_new(c, t, n, &po, &e);
	pd_templates_free(t, n);
	pd_pools_wait_ready(pools, 10000);
	uint64_t t0 = pd_now_us();
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	double secs = (pd_now_us() - t0) / 1e6;
	size_t ns;
	pd_pool_stats *st = pd_pools_stats(pools, &ns);
	uint64_t residue = 0, created = 0, forced = 0, resets = 0, refusals = 0;
	for (size_t i = 0; i < ns; i++) {
		residue += st[i].residue_failures;
		created += st[i].created;
		forced += st[i].forced_reclaims;
		resets += st[i].resets;
		refusals += st[i].reset_refusals;
	}
	free(st);
	pd_pools_free(pools);
	printf("# %ld lifecycles (%ld dirty) in %.1f s: %.0f/s; %llu sandboxes created, %llu resets "
	       "(%llu refused)\n",
	       total, dirty_runs, secs, total / secs, (unsigned long long)created,
	       (unsigned long long)resets, (unsigned long long)refusals);
	is_int(bad, 0, "every run OK %s", first_bad);
	is_int(residue, 0, "every teardown clean");
	is_int(forced, 0, "no forced reclaim was needed");
	settle(c, &before, &after);
	is_int(own_fds(&after), own_fds(&before), "no parent-side fd left (%ld idle network namespaces kept)",
	       after.netns_idle);
	ok(after.slot_locks <= 256, "uid slots recycled: %d held for the peak concurrency", after.slot_locks);
	is_int(after.threads, before.threads, "no thread left");
	/* <=: a host mount of something else may have gone meanwhile */
	ok(after.mounts <= before.mounts, "no mount left (%d, %d before)", after.mounts, before.mounts);
	is_int(after.cgroups, before.cgroups, "no sandbox cgroup left");
	is_int(after.procs, 0, "no process in the sandboxes' uid ranges");
	is_int(after.stage, 0, "staging directory empty");
	ok(after.netns <= before.netns + after.netns_idle + NS_SLACK,
	   "network namespaces back to %ld + %ld idle (now %ld)", before.netns, after.netns_idle, after.netns);
	ok(after.pidns <= before.pidns + NS_SLACK && after.userns <= before.userns + NS_SLACK,
	   "pid and user namespaces back (%ld/%ld, now %ld/%ld)", before.pidns, before.userns,
	   after.pidns, after.userns);
	pd_ctx_free(c);
	return done();
}
