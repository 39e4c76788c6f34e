/* The reclaim work: a sandbox its user released is reset for reuse (when the template reuses
 * sandboxes, the pool needs it and the reset proves it clean) or destroyed, off the request path:
 * on a reclaimer thread (lifecycle.c), or on the releasing thread when the reclaimers are behind
 * (acquire.c). The queue it takes from is the toolbox's (pool.c); all share the pools' one lock. */
#define _GNU_SOURCE
#include "pools.h"

#include <stdio.h>
#include <stdlib.h>

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
	/* a derived pool keeps no more than its share of the derived pools' budget */
	if (pl->kind != PD_POOL_PLAIN && pl->nready + pl->creating >= pd_pool_target_of(p, pl))
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
	pd_pool_lifetime_locked(pl, born);
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
