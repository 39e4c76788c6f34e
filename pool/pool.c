/* The pools' toolbox: what every other file of the layer uses, calling none of them (the layer's
 * calls go one way: this file below, the kinds of derived pool and the reclaim work above it, the
 * way in (acquire.c) and the sessions above those, the pools' lifecycle (lifecycle.c) on top).
 *
 * Here: a template's deep copy; a pool found by name (a lookup, never a make); a sandbox made and
 * prepared for its template, or reset; the sizing of a pool (its demand windows and target); a
 * READY sandbox filed; the reclaim queue; and the slots of the derived pools.
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

pd_pool *pd_pool_find_locked(pd_pools *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->pools[i].live && !strcmp(p->pools[i].t.name, name))
			return &p->pools[i];
	return NULL;
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
	if (pl->kind != PD_POOL_PLAIN) {
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

void pd_pool_note_demand(pd_pools *p, pd_pool *pl, uint64_t now)
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

/* How many sandboxes pl lacks against target: those READY, being built and, with reuse, being
 * reset to come back are counted. Called with the lock held. */
int64_t pd_pool_deficit(const pd_pool *pl, uint32_t target)
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
		if (pd_pool_deficit(&p->pools[i], pd_pool_target_of(p, &p->pools[i])) > 0) {
			pthread_cond_signal(&p->cv_builder);
			return;
		}
}

/* ---- the reclaim queue: what a reclaimer (reclaim.c) takes its work from ---- */

static void reclaim_locked(pd_pools *p, pd_pool *pl, pd_sandbox *s, bool no_reuse);

const double pd_lifetime_bounds_s[PD_LIFETIME_BUCKETS] = {0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400};

/* A destroyed sandbox's lifetime into its pool's histogram (born: pd_sandbox_created_us, read
 * before the destroy freed it); lock held. */
void pd_pool_lifetime_locked(pd_pool *pl, uint64_t born)
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
		pd_pool_lifetime_locked(pl, born);
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

/* ---- the slots of derived pools (an image's, a tier's): the pools' array never moves, since
 * sandboxes and sessions point at their pool; a derived pool idle long enough gives its slot up ---- */

/* No sandbox of it alive, no session on it, and no acquire for a second: a lookup
 * (pd_pools_template) just before may be about to acquire from it. */
static bool unused_locked(const pd_pool *pl, uint64_t now)
{
	return pl->live && pl->kind != PD_POOL_PLAIN && !pl->in_use && !pl->nsessions &&
	       now - pl->last_acquire_us >= 1000000;
}

static bool retirable_locked(const pd_pool *pl, uint64_t now)
{
	return unused_locked(pl, now) && !pl->nready && !pl->creating && !pl->nreclaiming;
}

/* A free slot for a new image pool: never used, retired, or made so by retiring the least
 * recently used pool that nothing uses. NULL if none is retirable now; *draining is set when the
 * least recently used unused pool still held READY sandboxes, which are sent to the reclaimer
 * (its slot frees once they are gone). Called with the lock held. */
static pd_pool *free_slot_locked(pd_pools *p, bool *draining)
{
	uint64_t now = pd_now_us();
	*draining = false;
	for (size_t i = p->nbase; i < p->n; i++)
		if (!p->pools[i].live)
			return &p->pools[i];
	if (p->n < p->cap)
		return &p->pools[p->n++];
	pd_pool *lru = NULL;
	for (size_t i = p->nbase; i < p->n; i++) {
		pd_pool *pl = &p->pools[i];
		if (unused_locked(pl, now) && (!lru || pl->last_acquire_us < lru->last_acquire_us))
			lru = pl;
	}
	if (!lru)
		return NULL;
	if (retirable_locked(lru, now)) {
		/* its image's lease goes with it; its name brings it back (acquire.c) */
		pd_template_release(&lru->t);
		lru->live = false;
		return lru;
	}
	/* the least recently used image gives its READY sandboxes up for a newer one, and builds
	 * no more until it is asked for again */
	lru->evicting = true;
	while (lru->ready) {
		pd_entry *en = lru->ready;
		lru->ready = en->next;
		lru->nready--;
		lru->st.expired++;
		pd_pool_discard_locked(p, lru, en->sb);
		free(en);
	}
	*draining = true;
	return NULL;
}

/* Files t (taken) as a live pool (a derived one: an image's or a tier's, retired when idle);
 * waits a few seconds for a slot being drained. Called with the lock held (dropped while
 * waiting). */
int pd_pool_install_locked(pd_pools *p, pd_template *t, pd_pool_kind kind, pd_err *e)
{
	uint64_t deadline = pd_now_us() + 5000000;
	pd_pool *slot = NULL;
	for (;;) {
		bool draining = false;
		if (pd_pool_find_locked(p, t->name)) { /* made by another request while we waited */
			pd_template_release(t);
			return 0;
		}
		slot = free_slot_locked(p, &draining);
		if (slot || !draining || pd_now_us() >= deadline)
			break;
		/* polled: a teardown signals nobody but the builder, whose wake-ups stay its own */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&p->cv_ready, &p->mu, &ts);
	}
	if (!slot) {
		pd_template_release(t);
		return pd_fail(e, EAGAIN, "%u image pools are in use at once (serve --image-pools): "
					  "none is idle enough to make room; retry", p->opts.image_pools);
	}
	uint64_t now = pd_now_us();
	memset(slot, 0, sizeof *slot);
	slot->t = *t;
	memset(t, 0, sizeof *t);
	pd_template_sandbox_opts(&slot->t, &slot->sopts);
	slot->sopts.setup_timeout_ms = p->opts.setup_timeout_ms;
	slot->sopts.teardown_timeout_ms = p->opts.teardown_timeout_ms;
	slot->win_start = now;
	slot->last_acquire_us = now;
	slot->kind = kind;
	slot->live = true;
	return 0;
}
