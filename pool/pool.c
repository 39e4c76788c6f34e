/* Warm pools: a builder thread keeps READY sandboxes per template, sized by demand; acquire and
 * release. Reclaimer threads (reclaim.c) reset released sandboxes for reuse or destroy them.
 *
 * Sizing: each pool tracks the peak number of its sandboxes in use over the current and the last
 * window (10 s). The target of READY sandboxes covers that peak with 20% headroom, within the
 * template's min/max and the pools' memory budget. So a pool grows as soon as acquires miss (they
 * raise the in-use peak) and shrinks after two quiet windows, its surplus reclaimed once idle for
 * the template's idle TTL. */
#define _GNU_SOURCE
#include "pools.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Deep copy, so the pools own their templates whatever the caller does with theirs. */
int pd_template_clone(pd_template *dst, const pd_template *src)
{
	*dst = *src;
	memset(dst->layers, 0, sizeof dst->layers);
	memset(dst->env, 0, sizeof dst->env);
	memset(dst->requires, 0, sizeof dst->requires);
	dst->cwd = NULL;
	dst->rules = NULL;
	/* a clone leases the image itself (pd_template_check): its layers are not copied */
	dst->image = NULL;
	dst->image_ref = NULL;
	if (src->image_ref && !(dst->image_ref = xstrdup(src->image_ref)))
		return -1;
	for (size_t k = 0; k < src->nfiles; k++)
		dst->files[k].path = dst->files[k].data = NULL;
	bool bad = false;
	for (int k = 0; src->layers[k] && !src->image_ref; k++)
		bad |= !(dst->layers[k] = xstrdup(src->layers[k]));
	for (int k = 0; src->env[k]; k++)
		bad |= !(dst->env[k] = xstrdup(src->env[k]));
	for (int k = 0; src->requires[k]; k++)
		bad |= !(dst->requires[k] = xstrdup(src->requires[k]));
	memset(dst->warmup, 0, sizeof dst->warmup);
	if (src->audit)
		bad |= !(dst->audit = pd_audit_policy_copy(src->audit));
	if (src->rules)
		bad |= !(dst->rules = xstrdup(src->rules));
	bad |= pd_egress_clone(dst, src) < 0;
	for (int k = 0; src->warmup[k]; k++)
		bad |= !(dst->warmup[k] = xstrdup(src->warmup[k]));
	if (src->cwd)
		bad |= !(dst->cwd = xstrdup(src->cwd));
	for (size_t k = 0; k < src->nfiles; k++) {
		dst->files[k].path = xstrdup(src->files[k].path);
		dst->files[k].data = malloc(src->files[k].len + 1);
		bad |= !dst->files[k].path || !dst->files[k].data;
		if (dst->files[k].data)
			memcpy(dst->files[k].data, src->files[k].data, src->files[k].len + 1);
	}
	return bad ? -1 : 0;
}

void pd_template_release(pd_template *tt)
{
	for (int k = 0; tt->layers[k]; k++)
		free(tt->layers[k]);
	for (int k = 0; tt->env[k]; k++)
		free(tt->env[k]);
	for (int k = 0; tt->requires[k]; k++)
		free(tt->requires[k]);
	for (int k = 0; tt->warmup[k]; k++)
		free(tt->warmup[k]);
	for (size_t k = 0; k < tt->nfiles; k++) {
		free(tt->files[k].path);
		free(tt->files[k].data);
	}
	free(tt->cwd);
	pd_audit_policy_free(tt->audit);
	free(tt->rules);
	pd_egress_list_free(tt->egress_allow);
	free(tt->image_ref);
	if (tt->image)
		pd_image_close(tt->image);
	free(tt->image);
	memset(tt, 0, sizeof *tt);
}

void pd_sandbox_set_owner(pd_sandbox *s, pd_pool *pl)
{
	pd_sandbox_set_user(s, pl);
}

pd_pool *pd_pool_of(pd_pools *p, pd_sandbox *s)
{
	pd_pool *pl = pd_sandbox_user(s);
	return pl >= p->pools && pl < p->pools + p->cap ? pl : NULL;
}

static pd_pool *find(pd_pools *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->pools[i].live && !strcmp(p->pools[i].t.name, name))
			return &p->pools[i];
	return NULL;
}

pd_pool *pd_pool_find_locked(pd_pools *p, const char *name)
{
	return find(p, name);
}

/* find, and an image pool ("<template>@<hex>") made again if it is not live: its name says what
 * it is, so a pool retired between a lookup and a use comes back. Called with the lock held;
 * drops it meanwhile. */
static pd_pool *find_or_revive_locked(pd_pools *p, const char *name, pd_err *e)
{
	pd_pool *pl = find(p, name);
	if (pl || !strpbrk(name, "@~"))
		return pl;
	pthread_mutex_unlock(&p->mu);
	int rc = strchr(name, '~') ? pd_pool_tier_revive(p, name, e) : pd_pool_image_revive(p, name, e);
	pthread_mutex_lock(&p->mu);
	return rc == 0 ? find(p, name) : NULL;
}

const pd_template *pd_pools_template(pd_pools *p, const char *name)
{
	pthread_mutex_lock(&p->mu);
	pd_pool *pl = find_or_revive_locked(p, name, NULL);
	/* a lookup is a use about to happen: an image pool is not retired for a second after it
	 * (imgpool.c), so the template stays while its caller goes on to acquire */
	if (pl && pl->image)
		pl->last_acquire_us = pd_now_us();
	pthread_mutex_unlock(&p->mu);
	return pl ? &pl->t : NULL;
}

void pd_pools_template_image(pd_pools *p, const pd_template *t, char *name, size_t nlen, char *digest,
			     size_t dlen)
{
	if (t && t->image) {
		snprintf(name, nlen, "%s", t->image->name);
		snprintf(digest, dlen, "%s", t->image->digest);
	} else if (t && t->layers[0]) {
		snprintf(name, nlen, "%s", t->layers[0]);
		digest[0] = 0;
	} else {
		snprintf(name, nlen, "host");
		snprintf(digest, dlen, "%s", pd_ctx_default_image_id(p->ctx));
	}
}

const pd_template *pd_pool_template_of(pd_pools *p, pd_sandbox *s)
{
	pd_pool *pl = s ? pd_pool_of(p, s) : NULL;
	return pl ? &pl->t : NULL;
}


/* What the template puts in a new (or reset) sandbox before use: its working directory, its
 * files, and a warm-up exec: the template's own (a new sandbox), /bin/true (a reset one), or none. */
/* Notes what the preparation of s cost (pd_sandbox_use_costs: a record's preparation segment). */
static int prepared(pd_sandbox *s, uint64_t t0, int rc)
{
	if (rc == 0)
		pd_sandbox_note_prepare(s, pd_now_us() - t0);
	return rc;
}

static int prepare(pd_pool *pl, pd_sandbox *s, pd_warm warm, pd_err *e);

int pd_pool_prepare(pd_pool *pl, pd_sandbox *s, pd_warm warm, pd_err *e)
{
	uint64_t t0 = pd_now_us();
	return prepared(s, t0, prepare(pl, s, warm, e));
}

static int prepare(pd_pool *pl, pd_sandbox *s, pd_warm warm, pd_err *e)
{
	/* every sandbox has /work (paddock.h): no round trip to init for it */
	if (pl->t.cwd && strcmp(pl->t.cwd, "/work") && pd_sandbox_mkdir(s, pl->t.cwd, 0755, e) < 0)
		return -1;
	for (size_t i = 0; i < pl->t.nfiles; i++) {
		const pd_tpl_file *f = &pl->t.files[i];
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", f->path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = 0;
			if (pd_sandbox_mkdir(s, dir, 0755, e) < 0)
				return -1;
		}
		if (pd_sandbox_write_file(s, f->path, f->data, f->len, f->mode, e) < 0)
			return -1;
	}
	if (warm == PD_WARM_NONE)
		return 0;
	/* a fresh overlay has cold lookups: the first exec in a sandbox costs more than the next.
	 * Pay that here, off the request path, with a program that changes nothing. */
	static char t_true[] = "/bin/true";
	char *argv[] = {t_true, NULL};
	pd_exec_opts x = {0};
	/* the template's own interpreter warms the files its requests will open first */
	x.argv = warm == PD_WARM_TEMPLATE && pl->t.warmup[0] ? pl->t.warmup : argv;
	x.envp = pl->t.env[0] ? pl->t.env : NULL;
	x.cwd = pl->t.cwd;
	pd_result r;
	if (pd_sandbox_exec(s, &x, &r, e) < 0 || r.status != PD_OK) {
		if (r.status != PD_OK)
			pd_fail(e, EIO, "warm-up exec in a new sandbox: %s %s", pd_status_name(r.status), r.error);
		pd_result_free(&r);
		return -1;
	}
	pd_result_free(&r);
	/* the user's first program gets pid 2, warmed or not, fresh or reset */
	return pd_sandbox_rewind_pids(s, e);
}

int pd_pool_reset(pd_pool *pl, pd_sandbox *s, pd_err *e)
{
	if (pd_sandbox_reset(s, e) < 0)
		return -1;
	return pd_pool_prepare(pl, s, PD_WARM_NONE, e);
}

pd_sandbox *pd_pool_make_fork(pd_pools *p, pd_pool *pl, const char *top_layer, pd_err *e)
{
	pd_sandbox_opts o = pl->sopts;
	o.top_layer = top_layer;
	pd_sandbox *s = pd_sandbox_create(p->ctx, &o, e);
	if (!s)
		return NULL;
	/* no owner: released, it is destroyed, never filed READY for the template's next user; the
	 * template's files are in the snapshot already, as the session had them */
	if (pl->t.cwd && strcmp(pl->t.cwd, "/work") && pd_sandbox_mkdir(s, pl->t.cwd, 0755, e) < 0) {
		pd_sandbox_destroy(s, NULL, 0);
		return NULL;
	}
	return s;
}

pd_pool *pd_pool_named(pd_pools *p, const char *name)
{
	pthread_mutex_lock(&p->mu);
	pd_pool *pl = find_or_revive_locked(p, name, NULL);
	pthread_mutex_unlock(&p->mu);
	return pl;
}

/* Creates a sandbox for the template and places what the template puts in it before use. */
pd_sandbox *pd_pool_make(pd_pools *p, pd_pool *pl, pd_err *e)
{
	pd_sandbox *s = pd_sandbox_create(p->ctx, &pl->sopts, e);
	if (!s)
		return NULL;
	pd_sandbox_set_owner(s, pl);
	if (pd_pool_prepare(pl, s, PD_WARM_TEMPLATE, e) < 0) {
		pd_sandbox_destroy(s, NULL, 0);
		return NULL;
	}
	return s;
}

/* Sandboxes all pools hold against the memory budget: READY, being built, and waiting for the
 * reclaimer (still alive). Called with the lock held. */
uint64_t pd_pools_held_locked(const pd_pools *p)
{
	uint64_t held = 0;
	for (size_t i = 0; i < p->n; i++)
		held += p->pools[i].nready + p->pools[i].creating + p->pools[i].nreclaiming;
	return held;
}

/* Files s at the front of pl's READY list (newest first) and wakes waiting acquires. */
void pd_pool_file_ready_locked(pd_pools *p, pd_pool *pl, pd_entry *en, pd_sandbox *s)
{
	en->sb = s;
	en->since = pd_now_us();
	en->next = pl->ready;
	pl->ready = en;
	pl->nready++;
	pthread_cond_broadcast(&p->cv_ready);
}

/* Target READY count of a pool; called with the lock held. */
uint32_t pd_pool_target_of(pd_pools *p, pd_pool *pl)
{
	if (!pl->t.available || pl->evicting)
		return 0;
	uint64_t peak = pl->win_peak > pl->prev_win_peak ? pl->win_peak : pl->prev_win_peak;
	uint64_t want_total = (peak * 12 + 9) / 10; /* peak concurrency + 20% */
	uint64_t want = want_total > pl->in_use ? want_total - pl->in_use : 0;
	if (peak > 0 && want == 0)
		want = 1; /* in demand: keep one ready for the next acquire */
	if (want < pl->t.pool_min)
		want = pl->t.pool_min;
	uint64_t room = pl->t.pool_max > pl->in_use ? pl->t.pool_max - pl->in_use : 0;
	if (want > room)
		want = room;
	/* the memory budget caps what all pools hold ready (in-use sandboxes were asked for) */
	uint64_t held = pd_pools_held_locked(p);
	uint64_t mine = pl->nready + pl->creating;
	uint64_t cap = p->opts.memory_budget / p->opts.idle_cost_bytes;
	uint64_t others = held - mine;
	uint64_t allowed = cap > others ? cap - others : 0;
	if (want > allowed)
		want = allowed;
	if (pl->image) {
		/* image pools share a budget of READY sandboxes, the hottest first: with thousands of
		 * per-task images, the few in demand now stay warm and the rest cost nothing */
		uint64_t mine_score = pl->win_acquires + pl->prev_win_acquires, hotter = 0;
		for (size_t i = p->nbase; i < p->n; i++) {
			const pd_pool *o = &p->pools[i];
			uint64_t sc = o->win_acquires + o->prev_win_acquires;
			if (o != pl && o->live && (sc > mine_score || (sc == mine_score && o < pl)))
				hotter += o->nready + o->creating;
		}
		uint64_t img_room = p->opts.image_ready_max > hotter ? p->opts.image_ready_max - hotter : 0;
		if (want > img_room)
			want = img_room;
	}
	return (uint32_t)want;
}

static void note_demand(pd_pools *p, pd_pool *pl, uint64_t now)
{
	uint64_t window = p->opts.window_ms * 1000;
	if (now - pl->win_start >= window) {
		/* two quiet windows forget a burst */
		bool quiet = now - pl->win_start >= 2 * window;
		pl->prev_win_peak = quiet ? pl->in_use : pl->win_peak;
		pl->prev_win_acquires = quiet ? 0 : pl->win_acquires;
		pl->win_peak = pl->in_use;
		pl->win_acquires = 0;
		pl->win_start = now;
	}
	if (pl->in_use > pl->win_peak)
		pl->win_peak = pl->in_use;
	if (pl->in_use > pl->st.peak_in_use)
		pl->st.peak_in_use = pl->in_use;
}

/* Background work yields to requests: a refill must not preempt the thread that just acquired.
 * RESET_ON_FORK: the sandboxes these threads create get ordinary scheduling. */
void pd_pool_background_priority(void)
{
	struct sched_param sp = {0};
	sched_setscheduler(0, SCHED_BATCH | SCHED_RESET_ON_FORK, &sp);
}

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

/* How many sandboxes pl lacks against target: those READY, being built and, with reuse, being
 * reset to come back are counted. Called with the lock held. */
static int64_t deficit_of(const pd_pool *pl, uint32_t target)
{
	int64_t coming = pl->t.pool_reuse ? pl->nreclaiming : 0;
	return (int64_t)target - (int64_t)(pl->nready + pl->creating) - coming;
}

/* Wakes the builder if a pool lacks a sandbox. In steady use none does: an acquire takes a READY
 * sandbox and its release comes back reset, and waking the builder on each of both, to find
 * nothing to do, cost four context switches a request (it also looks every tick). Every pool,
 * not just the caller's: a reset shortens the backlog another pool's build may wait for. */
void pd_pools_wake_builder_locked(pd_pools *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (deficit_of(&p->pools[i], pd_pool_target_of(p, &p->pools[i])) > 0) {
			pthread_cond_signal(&p->cv_builder);
			return;
		}
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
			note_demand(p, pl, now);
			pl->target = pd_pool_target_of(p, pl);
			int64_t deficit = deficit_of(pl, pl->target);
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
		if (pthread_create(&p->reclaimers[i], NULL, pd_pools_reclaimer_main, p) != 0)
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

static pd_sandbox *acquire_locked(pd_pools *p, pd_pool *pl, bool *hit, pd_err *e);

pd_sandbox *pd_pool_acquire(pd_pools *p, const char *name, bool *hit, pd_err *e)
{
	pthread_mutex_lock(&p->mu);
	pd_err re = {0};
	pd_pool *pl = find_or_revive_locked(p, name, &re);
	if (!pl) {
		pthread_mutex_unlock(&p->mu);
		if (re.code) {
			if (e)
				*e = re;
		} else {
			pd_fail_as(e, ENOENT, "no template named '%s'", name);
		}
		return NULL;
	}
	return acquire_locked(p, pl, hit, e);
}

/* Called with the lock held; returns with it released. */
static pd_sandbox *acquire_locked(pd_pools *p, pd_pool *pl, bool *hit, pd_err *e)
{
	if (!pl->t.available) {
		pthread_mutex_unlock(&p->mu);
		pd_fail(e, ENOENT, "dependency_missing: template '%s' needs %s, which its image lacks",
			pl->t.name, pl->t.missing);
		if (e)
			e->kind = PD_EK_DEPENDENCY;
		return NULL;
	}
	pl->st.acquires++;
	pl->in_use++;
	pl->win_acquires++;
	pl->last_acquire_us = pd_now_us();
	pl->evicting = false;
	note_demand(p, pl, pd_now_us());
	if (pl->ready) {
		pd_entry *en = pl->ready;
		pl->ready = en->next;
		pl->nready--;
		pl->st.hits++;
		pd_pools_wake_builder_locked(p); /* refill */
		pthread_mutex_unlock(&p->mu);
		pd_sandbox *s = en->sb;
		free(en);
		if (hit)
			*hit = true;
		return s;
	}
	pl->st.misses++;
	pthread_cond_signal(&p->cv_builder); /* demand: grow */
	pthread_mutex_unlock(&p->mu);
	if (hit)
		*hit = false;
	/* an empty pool creates on the spot rather than fail */
	uint64_t t0 = pd_now_us();
	pd_sandbox *s = pd_pool_make(p, pl, e);
	pthread_mutex_lock(&p->mu);
	pl->st.waits_ms_total += (pd_now_us() - t0) / 1000;
	if (s) {
		pl->st.created++;
		pd_sandbox_set_owner(s, pl);
	} else {
		pl->st.create_failures++;
		if (e && e->code == ETIMEDOUT)
			pl->st.forced_reclaims++;
		pl->in_use--;
	}
	pthread_mutex_unlock(&p->mu);
	return s;
}

void pd_pool_release(pd_pools *p, pd_sandbox *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&p->mu);
	pd_pool *pl = pd_pool_of(p, s);
	if (!pl) {
		/* not ours: destroy it here rather than file it under a pool */
		pthread_mutex_unlock(&p->mu);
		pd_sandbox_destroy(s, NULL, 0);
		return;
	}
	if (pl->in_use)
		pl->in_use--;
	pd_pool_reclaim_locked(p, pl, s);
	/* The reclaimer runs at background priority: when requests keep the CPUs busy it falls
	 * behind, and every sandbox it has not destroyed yet is still alive (processes, memory,
	 * cgroup). Past the bound the releasing thread pays for one destroy itself, so the backlog
	 * stays bounded and throughput is set by what the machine can tear down. */
	if (p->nreclaim > p->opts.reclaim_backlog)
		pd_pools_reclaim_one_locked(p);
	pthread_mutex_unlock(&p->mu);
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
