/* The pools' lifecycle, the conductor that calls the rest of the layer: start (the templates' pools,
 * the builder and reclaimer threads, the sessions a dead daemon left closed as lost), the
 * builder's loop that fills the pools, the reclaimers' loop (the reclaim work in reclaim.c, the
 * deadlines of idle surplus and of sessions, old trajectories pruned), the figures, and stop.
 * Nothing else in the layer calls this file. */
#define _GNU_SOURCE
#include "pools.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* Whether a build leaves the reserved descriptors free. A READY sandbox taken by an acquire is
 * replaced by the builder: without this check, acquires a daemon admitted within its descriptor
 * budget would have their replacements built past it, until accept() had nothing left. */
static bool fds_allow_build(const pd_pools *p)
{
	if (!p->opts.fd_reserve)
		return true;
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) < 0 || r.rlim_cur == RLIM_INFINITY)
		return true;
	long n = pd_open_fds();
	if (n < 0)
		return false;
	/* a build holds up to ~16 at once (layers, pipes, the socket pair) */
	return (rlim_t)n + 16 + p->opts.fd_reserve <= r.rlim_cur;
}

static void *builder_main(void *arg)
{
	pd_pools *p = arg;
	pd_pool_background_priority();
	pthread_mutex_lock(&p->mu);
	unsigned backoff = 0;
	while (!p->stop) {
		uint64_t now = pd_now_us();
		pd_pool *best = NULL;
		int64_t best_deficit = 0;
		for (size_t i = 0; i < p->n; i++) {
			pd_pool *pl = &p->pools[i];
			pd_pool_note_demand(p, pl, now);
			pl->target = pd_pool_target_of(p, pl);
			int64_t deficit = pd_pool_deficit(pl, pl->target);
			if (deficit > best_deficit && now >= pl->retry_at) {
				best = pl;
				best_deficit = deficit;
			}
		}
		/* building while the reclaimer is behind would only add live sandboxes */
		if (best && p->opts.fd_reserve) {
			pthread_mutex_unlock(&p->mu);
			bool fds_ok = fds_allow_build(p);
			pthread_mutex_lock(&p->mu);
			if (!fds_ok)
				best = NULL;
		}
		if (!best || p->nreclaim > p->opts.reclaim_backlog) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			uint64_t ns = (uint64_t)ts.tv_nsec + p->opts.tick_ms * 1000000ull;
			ts.tv_sec += (time_t)(ns / 1000000000ull);
			ts.tv_nsec = (long)(ns % 1000000000ull);
			pthread_cond_timedwait(&p->cv_builder, &p->mu, &ts);
			continue;
		}
		best->creating++;
		pthread_mutex_unlock(&p->mu);
		pd_err e = {0};
		pd_sandbox *s = pd_pool_make(p, best, &e);
		pthread_mutex_lock(&p->mu);
		best->creating--;
		if (!s) {
			best->st.create_failures++;
			if (e.code == ETIMEDOUT)
				best->st.forced_reclaims++; /* CREATING past its deadline: killed */
			snprintf(best->last_error, sizeof best->last_error, "%s", PD_ERR_STR(&e));
			/* a failing template must not spin: back off up to ~6 s */
			backoff = backoff < 6 ? backoff + 1 : backoff;
			best->retry_at = pd_now_us() + (100000ull << backoff);
			continue;
		}
		backoff = 0;
		best->st.created++;
		pd_sandbox_set_owner(s, best);
		pd_entry *en = calloc(1, sizeof *en);
		if (!en) {
			pd_pool_reclaim_locked(p, best, s);
			continue;
		}
		pd_pool_file_ready_locked(p, best, en, s);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
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
				pd_pool_discard_locked(p, pl, en->sb);
				free(en);
				continue;
			}
			pp = &en->next;
		}
	}
	pd_sessions_expire_locked(p, now);
}

static void *reclaimer_main(void *arg)
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

pd_pools *pd_pools_new(pd_ctx *c, const pd_template *t, size_t n, const pd_pools_opts *o, pd_err *e)
{
	pd_pools *p = calloc(1, sizeof *p);
	uint32_t image_pools = o && o->image_pools ? o->image_pools : 64;
	if (!p || !(p->pools = calloc(n + image_pools, sizeof *p->pools))) {
		free(p);
		pd_fail(e, ENOMEM, "pools");
		return NULL;
	}
	p->ctx = c;
	p->ncpu = get_nprocs() > 0 ? (unsigned long)get_nprocs() : 1;
	if (o)
		p->opts = *o;
	if (!p->opts.memory_budget) {
		struct sysinfo si;
		p->opts.memory_budget = sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit / 2 : (1ull << 30);
	}
	if (!p->opts.idle_cost_bytes)
		p->opts.idle_cost_bytes = 1ull << 20;
	if (!p->opts.setup_timeout_ms)
		p->opts.setup_timeout_ms = 10000;
	if (!p->opts.teardown_timeout_ms)
		p->opts.teardown_timeout_ms = 10000;
	if (!p->opts.tick_ms)
		p->opts.tick_ms = 100;
	if (!p->opts.window_ms)
		p->opts.window_ms = 10000;
	if (!p->opts.reclaim_backlog)
		p->opts.reclaim_backlog = 8 * (uint32_t)p->ncpu;
	p->opts.image_pools = image_pools;
	if (!p->opts.image_ready_max)
		p->opts.image_ready_max = 4 * (uint32_t)p->ncpu;
	p->n = p->nbase = n;
	p->cap = n + image_pools;
	for (size_t i = 0; i < n; i++) {
		pd_pool *pl = &p->pools[i];
		if (pd_template_clone(&pl->t, &t[i]) < 0) {
			p->n = i + 1;
			pd_fail(e, ENOMEM, "templates");
			goto fail;
		}
		pl->live = true;
		pl->kind = PD_POOL_PLAIN;
		pd_template_check(c, &pl->t);
		pd_template_sandbox_opts(&pl->t, &pl->sopts);
		pl->sopts.setup_timeout_ms = p->opts.setup_timeout_ms;
		pl->sopts.teardown_timeout_ms = p->opts.teardown_timeout_ms;
		pl->win_start = pd_now_us();
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_builder, NULL);
	pthread_cond_init(&p->cv_reclaimer, NULL);
	pthread_cond_init(&p->cv_ready, NULL);
	p->threads_ok = true;
	if (pthread_create(&p->builder, NULL, builder_main, p) != 0) {
		p->threads_ok = false;
		pd_fail(e, EAGAIN, "start the pool builder thread");
		goto fail;
	}
	unsigned want = p->opts.reclaimers ? p->opts.reclaimers : (unsigned)(p->ncpu / 4);
	want = want < 1 ? 1 : want > 16 ? 16 : want;
	for (unsigned i = 0; i < want; i++) {
		if (pthread_create(&p->reclaimers[i], NULL, reclaimer_main, p) != 0)
			break;
		p->nreclaimers++;
	}
	if (!p->nreclaimers) {
		pthread_mutex_lock(&p->mu);
		p->stop = true;
		pthread_cond_broadcast(&p->cv_builder);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->builder, NULL);
		p->threads_ok = false;
		pd_fail(e, EAGAIN, "start the pool reclaimer thread");
		goto fail;
	}
	/* before any session opens: the sessions of daemons that died are closed as lost */
	pd_sessions_recover(p);
	return p;
fail:
	for (size_t i = 0; i < p->n; i++)
		pd_template_release(&p->pools[i].t);
	free(p->pools);
	free(p);
	return NULL;
}

/* Every sandbox held ready goes to the reclaimer, which drains its queue before it stops. */
static void drain_ready_locked(pd_pools *p)
{
	for (size_t i = 0; i < p->n; i++) {
		pd_pool *pl = &p->pools[i];
		while (pl->ready) {
			pd_entry *en = pl->ready;
			pl->ready = en->next;
			pl->nready--;
			pd_pool_reclaim_locked(p, pl, en->sb);
			free(en);
		}
	}
}

void pd_pools_free(pd_pools *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	drain_ready_locked(p);
	pthread_cond_broadcast(&p->cv_builder);
	pthread_cond_broadcast(&p->cv_reclaimer);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->builder, NULL);
	/* the builder may have finished one more sandbox after the drain above */
	pthread_mutex_lock(&p->mu);
	drain_ready_locked(p);
	pthread_cond_broadcast(&p->cv_reclaimer);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nreclaimers; i++)
		pthread_join(p->reclaimers[i], NULL);
	pd_sessions_free_all(p);
	for (size_t i = 0; i < p->n; i++)
		pd_template_release(&p->pools[i].t);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_builder);
	pthread_cond_destroy(&p->cv_reclaimer);
	pthread_cond_destroy(&p->cv_ready);
	free(p->pools);
	free(p);
}

pd_pool_stats *pd_pools_stats(pd_pools *p, size_t *n)
{
	pthread_mutex_lock(&p->mu);
	pd_pool_stats *st = calloc(p->n ? p->n : 1, sizeof *st);
	*n = 0;
	if (!st) {
		pthread_mutex_unlock(&p->mu);
		return NULL;
	}
	size_t k = 0;
	for (size_t j = 0; j < p->n; j++) {
		pd_pool *pl = &p->pools[j];
		if (!pl->live)
			continue;
		size_t i = k++;
		st[i] = pl->st;
		snprintf(st[i].template_name, sizeof st[i].template_name, "%s", pl->t.name);
		st[i].available = pl->t.available;
		st[i].ready = pl->nready;
		st[i].in_use = pl->in_use;
		st[i].creating = pl->creating;
		st[i].reclaiming = pl->nreclaiming;
		st[i].target = pl->target;
	}
	*n = k;
	pthread_mutex_unlock(&p->mu);
	return st;
}

int pd_pools_wait_ready(pd_pools *p, uint64_t timeout_ms)
{
	uint64_t deadline = pd_now_us() + timeout_ms * 1000;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		bool all = true;
		for (size_t i = 0; i < p->n; i++) {
			pd_pool *pl = &p->pools[i];
			uint32_t t = pd_pool_target_of(p, pl);
			if (pl->t.available && pl->nready < t)
				all = false;
		}
		uint64_t now = pd_now_us();
		if (all || now >= deadline) {
			pthread_mutex_unlock(&p->mu);
			return all ? 0 : -1;
		}
		pthread_cond_signal(&p->cv_builder);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + 50000000ull;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		pthread_cond_timedwait(&p->cv_ready, &p->mu, &ts);
	}
}
