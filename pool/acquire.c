/* A user's way to a sandbox: the pool a name stands for, found live or made in one pass, and
 * acquire and release.
 *
 * A pool's name is a template's ("python"), an image pool's ("<template>@<the first 24 hex digits
 * of the image's manifest digest>", pd_pools_image) or a tier pool's ("<pool>~<tier>",
 * pd_pools_tier, over a template's pool or an image pool). A live pool is found by its name, and
 * what it is, is its kind (pd_pool.kind, set where it was made). A derived pool that is not live
 * (retired idle to make room, or named by a snapshot taken before a restart) is made again from
 * its name: decode is the one place a name is read apart, and only for such a name. The whole way
 * from a name to a pool is this file's, in one pass: base → image → tier, each found or made. */
#define _GNU_SOURCE
#include "pools.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lineage {
	pd_pool_kind kind; /* PD_POOL_IMAGE or PD_POOL_TIER */
	char parent[sizeof((pd_template *)0)->name];
	int tier;		    /* a tier pool's */
	char hex[PD_IMAGE_HEX + 1]; /* an image pool's digest, its first digits */
} lineage;

/* What a derived pool's name says it is made of; -1 when it names no derived pool. */
static int decode(const char *name, lineage *l)
{
	const char *tilde = strrchr(name, '~'), *at = strchr(name, '@');
	const char *cut = tilde ? tilde : at;
	if (!cut || (size_t)(cut - name) >= sizeof l->parent)
		return -1;
	snprintf(l->parent, sizeof l->parent, "%.*s", (int)(cut - name), name);
	if (tilde) {
		l->kind = PD_POOL_TIER;
		l->tier = pd_isolation_parse(tilde + 1);
		return l->tier < 0 ? -1 : 0;
	}
	if (strlen(at + 1) != PD_IMAGE_HEX || strspn(at + 1, "0123456789abcdef") != PD_IMAGE_HEX)
		return -1;
	l->kind = PD_POOL_IMAGE;
	snprintf(l->hex, sizeof l->hex, "%s", at + 1);
	return 0;
}

/* The derived pool name made from parent: its recipe (imgpool.c, tierpool.c) built without the
 * lock (the image's lease, the toolchain check), then filed in a slot (pool.c). Called with the
 * lock held; drops it meanwhile. digest: an image pool's; tier: a tier pool's. */
static pd_pool *make_locked(pd_pools *p, pd_pool *parent, pd_pool_kind kind, const char *name,
			    int tier, const char *digest, pd_err *e)
{
	pd_pool *pl = pd_pool_find_locked(p, name);
	if (pl)
		return pl;
	/* copied under the lock: a derived parent's slot is only reused under it */
	pd_template t;
	if (pd_template_clone(&t, &parent->t) < 0) {
		pd_fail(e, ENOMEM, "pool %s", name);
		return NULL;
	}
	pthread_mutex_unlock(&p->mu);
	int rc = kind == PD_POOL_IMAGE ? pd_image_recipe(p, &t, name, digest, e)
				       : pd_tier_recipe(p, &t, name, tier, e);
	pthread_mutex_lock(&p->mu);
	if (rc < 0 || pd_pool_install_locked(p, &t, kind, e) < 0)
		return NULL;
	return pd_pool_find_locked(p, name); /* made here, or by another request meanwhile */
}

/* The image pool of template tname on the image of that digest. Lock held; dropped meanwhile. */
static pd_pool *image_locked(pd_pools *p, const char *tname, const char *digest, pd_err *e)
{
	pd_pool *base = pd_pool_find_locked(p, tname);
	if (!base || base->kind != PD_POOL_PLAIN) {
		pd_fail_as(e, ENOENT, "no template named '%s'", tname);
		return NULL;
	}
	char name[sizeof base->t.name];
	snprintf(name, sizeof name, "%s@%.*s", tname, PD_IMAGE_HEX, digest + 7);
	return make_locked(p, base, PD_POOL_IMAGE, name, -1, digest, e);
}

static pd_pool *resolve_locked(pd_pools *p, const char *name, pd_err *e);

/* The tier pool of tier over bp, the pool named base (NULL: none; e says so), or bp itself when
 * tier is its own; NULL with e when the tier may not serve it. Lock held; dropped meanwhile. */
static pd_pool *tier_over_locked(pd_pools *p, pd_pool *bp, const char *base, int tier, pd_err *e)
{
	if (pd_tier_allowed(bp ? &bp->t : NULL, base, tier, e) < 0)
		return NULL;
	if (tier == (int)bp->t.isolation)
		return bp;
	char name[sizeof bp->t.name];
	if (snprintf(name, sizeof name, "%s~%s", base, pd_isolation_name((pd_isolation)tier)) >=
	    (int)sizeof name) {
		pd_fail(e, EINVAL, "template '%s': too long a name for a pool of another tier",
			base);
		return NULL;
	}
	return make_locked(p, bp, PD_POOL_TIER, name, tier, NULL, e);
}

/* The same over the pool named base, found or made first (its own failure reads as no such
 * template, as the tier's rules cannot be asked of it). */
static pd_pool *tier_locked(pd_pools *p, const char *base, int tier, pd_err *e)
{
	pd_err pe = {0};
	return tier_over_locked(p, resolve_locked(p, base, &pe), base, tier, e);
}

/* The pool of that name: live, or a derived pool made again from its name. Called with the lock
 * held; drops it while a pool is made. */
static pd_pool *resolve_locked(pd_pools *p, const char *name, pd_err *e)
{
	pd_pool *pl = pd_pool_find_locked(p, name);
	lineage l;
	if (pl)
		return pl;
	if (decode(name, &l) < 0) {
		pd_fail_as(e, ENOENT, "no template named '%s'", name);
		return NULL;
	}
	if (l.kind == PD_POOL_TIER) {
		pl = tier_locked(p, l.parent, l.tier, e);
		if (pl && strcmp(pl->t.name, name)) { /* "<pool>~<its own tier>" names no pool */
			pd_fail_as(e, ENOENT, "no template named '%s'", name);
			return NULL;
		}
		return pl;
	}
	/* the digits kept are a unique prefix of the digest (the store refuses an ambiguous one) */
	char d[PD_DIGEST_LEN];
	pthread_mutex_unlock(&p->mu);
	int rc = pd_image_resolve(pd_ctx_state_dir(p->ctx), l.hex, d, e);
	pthread_mutex_lock(&p->mu);
	return rc < 0 ? NULL : image_locked(p, l.parent, d, e);
}

/* A lookup is a use about to happen: a derived pool is not retired for a second after it
 * (pool.c), so the template stays while its caller goes on to acquire. Lock held. */
static const pd_template *used_locked(pd_pool *pl)
{
	if (!pl)
		return NULL;
	if (pl->kind != PD_POOL_PLAIN)
		pl->last_acquire_us = pd_now_us();
	return &pl->t;
}

const pd_template *pd_pools_template(pd_pools *p, const char *name)
{
	pthread_mutex_lock(&p->mu);
	const pd_template *t = used_locked(pd_pool_find_locked(p, name));
	pthread_mutex_unlock(&p->mu);
	return t;
}

const pd_template *pd_pools_template_ensure(pd_pools *p, const char *name, pd_err *e)
{
	pthread_mutex_lock(&p->mu);
	const pd_template *t = used_locked(resolve_locked(p, name, e));
	pthread_mutex_unlock(&p->mu);
	return t;
}

pd_pool *pd_pool_named(pd_pools *p, const char *name)
{
	pthread_mutex_lock(&p->mu);
	pd_pool *pl = resolve_locked(p, name, NULL);
	pthread_mutex_unlock(&p->mu);
	return pl;
}

/* "<template>@<hex>" fits a template's name field */
static int image_name_fits(const char *tname, pd_err *e)
{
	if (strlen(tname) + 1 + PD_IMAGE_HEX < sizeof((pd_template *)0)->name)
		return 0;
	return pd_fail(e, EINVAL,
		       "template '%s': too long a name for an image pool (at most %zu characters)",
		       tname, sizeof((pd_template *)0)->name - 2 - PD_IMAGE_HEX);
}

int pd_pools_image(pd_pools *p, const char *tname, const char *ref, char *pool, size_t pool_len,
		   char *digest, pd_err *e)
{
	return pd_pools_resolve(p, tname, ref, -1, pool, pool_len, digest, e) ? 0 : -1;
}

const pd_template *pd_pools_resolve(pd_pools *p, const char *tname, const char *ref, int tier,
				    char *pool, size_t pool_len, char *digest, pd_err *e)
{
	char d[PD_DIGEST_LEN];
	bool image = ref && *ref;
	/* the image's digest first, without the lock: the store is read */
	if (image && (image_name_fits(tname, e) < 0 ||
		      pd_image_resolve(pd_ctx_state_dir(p->ctx), ref, d, e) < 0))
		return NULL;
	pthread_mutex_lock(&p->mu);
	pd_err pe = {0};
	pd_pool *pl =
	    image ? image_locked(p, tname, d, e) : resolve_locked(p, tname, tier >= 0 ? &pe : e);
	if (tier >= 0 && (pl || !image))
		pl = tier_over_locked(p, pl, pl ? pl->t.name : tname, tier, e);
	const pd_template *t = used_locked(pl);
	if (pl)
		snprintf(pool, pool_len, "%s", pl->t.name);
	pthread_mutex_unlock(&p->mu);
	if (t && image && digest)
		snprintf(digest, PD_DIGEST_LEN, "%s", d);
	return t;
}

int pd_pools_tier(pd_pools *p, const char *base, int tier, char *pool, size_t pool_len, pd_err *e)
{
	pthread_mutex_lock(&p->mu);
	pd_pool *pl = tier_locked(p, base, tier, e);
	if (used_locked(pl)) /* the caller's lookup and acquire follow */
		snprintf(pool, pool_len, "%s", pl->t.name);
	pthread_mutex_unlock(&p->mu);
	return pl ? 0 : -1;
}

int pd_pools_tier_allowed(pd_pools *p, const char *tname, int tier, pd_err *e)
{
	pthread_mutex_lock(&p->mu);
	pd_pool *pl = pd_pool_find_locked(p, tname);
	int rc = pd_tier_allowed(pl ? &pl->t : NULL, tname, tier, e);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

static pd_sandbox *acquire_locked(pd_pools *p, pd_pool *pl, bool *hit, pd_err *e);

pd_sandbox *pd_pool_acquire(pd_pools *p, const char *name, bool *hit, pd_err *e)
{
	pthread_mutex_lock(&p->mu);
	pd_err re = {0};
	pd_pool *pl = resolve_locked(p, name, &re);
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
		pd_fail(e, ENOENT,
			"dependency_missing: template '%s' needs %s, which its image lacks",
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
	pd_pool_note_demand(p, pl, pd_now_us());
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
