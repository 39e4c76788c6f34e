/* The reclaimer: sandboxes released by their users are reset for reuse (when the template reuses
 * them, the pool needs them and the reset proves them clean) or destroyed, off the request path,
 * on reclaimer threads; the first reclaimer also enforces every state's deadline (idle surplus,
 * sessions) and prunes old trajectories. The builder that fills the pools is in pool.c; both share
 * the pools' one lock (pools.h). */
#define _GNU_SOURCE
#include "pools.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void reclaim_locked(pd_pools *p, pd_pool *pl, pd_sandbox *s, bool no_reuse);

const double pd_lifetime_bounds_s[PD_LIFETIME_BUCKETS] = {0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400};

/* A destroyed sandbox's lifetime into its pool's histogram (born: pd_sandbox_created_us, read
 * before the destroy freed it); lock held. */
static void lifetime_locked(pd_pool *pl, uint64_t born)
{
	uint64_t now = pd_now_us();
	double secs = now > born ? (double)(now - born) / 1e6 : 0;
	size_t i = 0;
	while (i < PD_LIFETIME_BUCKETS && secs > pd_lifetime_bounds_s[i])
		i++;
	pl->st.lifetime_bucket[i]++;
	pl->st.lifetime_count++;
	pl->st.lifetime_sum_s += secs;
}

void pd_pool_reclaim_locked(pd_pools *p, pd_pool *pl, pd_sandbox *s)
{
	reclaim_locked(p, pl, s, false);
}

void pd_pool_discard_locked(pd_pools *p, pd_pool *pl, pd_sandbox *s)
{
	reclaim_locked(p, pl, s, true);
}

static void reclaim_locked(pd_pools *p, pd_pool *pl, pd_sandbox *s, bool no_reuse)
{
	pd_entry *en = calloc(1, sizeof *en);
	if (!en) {
		/* no memory for the queue: destroy right here rather than leak */
		uint64_t born = pd_sandbox_created_us(s);
		char use[64];
		pd_sandbox_use_id(s, use, sizeof use);
		pthread_mutex_unlock(&p->mu);
		char residue[128];
		uint64_t t0 = pd_now_us();
		int dirty = pd_sandbox_destroy(s, residue, sizeof residue);
		if (p->opts.on_reclaimed)
			p->opts.on_reclaimed(p->opts.on_reclaimed_arg, use, residue, pd_now_us() - t0);
		pthread_mutex_lock(&p->mu);
		lifetime_locked(pl, born);
		pl->st.destroyed++;
		pl->st.residue_failures += dirty != 0;
		return;
	}
	en->sb = s;
	en->pool = pl;
	en->since = pd_now_us();
	en->no_reuse = no_reuse;
	en->next = NULL;
	if (p->reclaim_tail)
		p->reclaim_tail->next = en;
	else
		p->reclaim = en;
	p->reclaim_tail = en;
	p->nreclaim++;
	pl->nreclaiming++;
	pthread_cond_signal(&p->cv_reclaimer);
}

/* Whether a CPU is idle now: fewer runnable tasks than CPUs, not counting the caller
 * (/proc/loadavg's fourth field, "runnable/total", is the kernel's instantaneous count). */
static bool cpu_idle_now(const pd_pools *p)
{
	char b[128];
	if (pd_read_file("/proc/loadavg", b, sizeof b) <= 0)
		return false;
	unsigned long runnable = 0;
	if (sscanf(b, "%*s %*s %*s %lu/", &runnable) != 1)
		return false;
	return runnable < 1 || runnable - 1 < p->ncpu;
}

/* Resets s for the next user and files it as READY: true. False if the pool does not need it
 * or the reset was refused (the caller destroys it). Called with the lock held; drops it
 * meanwhile. */
static bool reuse_locked(pd_pools *p, pd_pool *pl, pd_sandbox *s, uint64_t *reset_us)
{
	if (!pl->t.pool_reuse || p->stop || pd_sandbox_state(s) != PD_READY)
		return false;
	/* Kept up to the pool's max and the memory budget, not just its target: the builder has
	 * usually replaced the sandbox when it was acquired, and a reset is far cheaper than the
	 * next create. A surplus expires after the pool's idle TTL. */
	if (pl->nready + pl->creating >= pl->t.pool_max ||
	    pd_pools_held_locked(p) > p->opts.memory_budget / p->opts.idle_cost_bytes)
		return false;
	/* an image pool keeps no more than its share of the image pools' budget */
	if (pl->image && pl->nready + pl->creating >= pd_pool_target_of(p, pl))
		return false;
	bool backlog = p->nreclaim != 0;
	pthread_mutex_unlock(&p->mu); /* still counted in nreclaiming: the builder expects it back */
	pd_err e = {0};
	uint32_t kept0 = pd_sandbox_resets_kept(s), skept0 = pd_sandbox_resets_scratch_kept(s);
	uint64_t t0 = pd_now_us();
	bool ok = pd_sandbox_reset(s, &e) == 0;
	/* the ending use's teardown: the reset that readies the next use (its own figure, so that
	 * both records say the same), or the refused one's time */
	pd_use_costs uc;
	pd_sandbox_use_costs(s, &uc);
	*reset_us = ok ? uc.ready_us : pd_now_us() - t0;
	bool kept = ok && pd_sandbox_resets_kept(s) != kept0;
	bool skept = ok && pd_sandbox_resets_scratch_kept(s) != skept0;
	/* After a reset the image's files are in the page cache since the sandbox's first user; only
	 * a new overlay's own dentries are cold, and a reset that kept the root made none. /bin/true
	 * warms a new one, which is worth its CPU only when that CPU would otherwise idle, so only
	 * with no backlog and a CPU idle now (under load it cost more CPU than the exec it sped up
	 * saved). Never the template's warm-up, which is often a whole interpreter: as much CPU as
	 * the request it would speed up. */
	pd_warm warm = !kept && !backlog && cpu_idle_now(p) ? PD_WARM_TRUE : PD_WARM_NONE;
	ok = ok && pd_pool_prepare(pl, s, warm, &e) == 0;
	pd_entry *en = ok ? calloc(1, sizeof *en) : NULL;
	pthread_mutex_lock(&p->mu);
	if (p->stop) {
		/* the pools closed meanwhile and have drained their READY lists: not to be filed
		 * there now, where nothing would ever destroy it */
		free(en);
		return false;
	}
	if (!en) {
		pl->st.reset_refusals++;
		return false;
	}
	pl->st.resets++;
	pl->st.resets_kept += kept;
	pl->st.resets_scratch_kept += skept;
	pd_pool_file_ready_locked(p, pl, en, s);
	return true;
}

/* Resets for reuse, or destroys, the oldest sandbox waiting for reclaim. Called with the lock
 * held; drops it meanwhile. Returns false if there was none. */
bool pd_pools_reclaim_one_locked(pd_pools *p)
{
	pd_entry *en = p->reclaim;
	if (!en)
		return false;
	p->reclaim = en->next;
	if (!p->reclaim)
		p->reclaim_tail = NULL;
	p->nreclaim--;
	pd_pool *pl = en->pool;
	uint64_t t0 = pd_now_us();
	/* the use that ends here, named before a reset starts the next */
	char use[64];
	pd_sandbox_use_id(en->sb, use, sizeof use);
	uint64_t reset_us = 0;
	if (!en->no_reuse && reuse_locked(p, pl, en->sb, &reset_us)) {
		pl->nreclaiming--;
		free(en);
		pd_pools_wake_builder_locked(p);
		if (p->opts.on_reclaimed) {
			pthread_mutex_unlock(&p->mu);
			p->opts.on_reclaimed(p->opts.on_reclaimed_arg, use, "clean", reset_us);
			pthread_mutex_lock(&p->mu);
		}
		return true;
	}
	uint64_t born = pd_sandbox_created_us(en->sb);
	pthread_mutex_unlock(&p->mu);
	char residue[128];
	/* a refused reset, then the teardown: the use's teardown is both */
	uint64_t t1 = pd_now_us();
	int dirty = pd_sandbox_destroy(en->sb, residue, sizeof residue);
	if (p->opts.on_reclaimed)
		p->opts.on_reclaimed(p->opts.on_reclaimed_arg, use, residue, reset_us + (pd_now_us() - t1));
	uint64_t took = pd_now_us() - t0;
	pthread_mutex_lock(&p->mu);
	lifetime_locked(pl, born);
	pl->nreclaiming--;
	pl->st.destroyed++;
	if (dirty)
		pl->st.residue_failures++;
	/* a teardown that needed the forced path, or outlived its deadline, is counted */
	if (dirty || took > p->opts.teardown_timeout_ms * 1000)
		pl->st.forced_reclaims++;
	free(en);
	pthread_cond_broadcast(&p->cv_builder); /* it may have waited for the backlog */
	return true;
}

/* Idle READY sandboxes above target, past the idle TTL, and expired sessions go to reclaim. */
static void expire_locked(pd_pools *p, uint64_t now)
{
	for (size_t i = 0; i < p->n; i++) {
		pd_pool *pl = &p->pools[i];
		pd_entry **pp = &pl->ready;
		while (*pp) {
			pd_entry *en = *pp;
			bool surplus = pl->nready > pl->target;
			if (surplus && now - en->since > pl->t.pool_idle_ttl_ms * 1000) {
				*pp = en->next;
				pl->nready--;
				pl->st.expired++;
				reclaim_locked(p, pl, en->sb, true);
				free(en);
				continue;
			}
			pp = &en->next;
		}
	}
	pd_sessions_expire_locked(p, now);
}

void *pd_pools_reclaimer_main(void *arg)
{
	pd_pools *p = arg;
	pd_pool_background_priority();
	pthread_mutex_lock(&p->mu);
	bool first = p->reclaimer_ids++ == 0; /* the first one also expires idle sandboxes */
	uint64_t next_tick = 0, next_prune = 0;
	uint64_t keep_s = p->opts.trajectory_retention_s;
	for (;;) {
		uint64_t now = pd_now_us();
		if (first && now >= next_tick) {
			expire_locked(p, now);
			next_tick = now + p->opts.tick_ms * 1000;
		}
		if (first && keep_s && now >= next_prune && !p->stop) {
			/* files only: not under the lock (the prune takes it to see open sessions) */
			pthread_mutex_unlock(&p->mu);
			pd_trajectories_prune(p, keep_s);
			pthread_mutex_lock(&p->mu);
			next_prune = pd_now_us() + (keep_s < 600 ? keep_s : 600) * 1000000;
		}
		if (pd_pools_reclaim_one_locked(p))
			continue;
		if (p->stop)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + p->opts.tick_ms * 1000000ull;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		pthread_cond_timedwait(&p->cv_reclaimer, &p->mu, &ts);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

