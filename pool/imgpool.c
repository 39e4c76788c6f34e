/* Image pools: a template's recipe on an imported image a request names, one demand-sized pool per
 * (template, image) pair, made on first use in a slot of the pools' array (which never moves: the
 * sandboxes and sessions point at their pool) and retired when idle to make room for another.
 *
 * Why per pair and not per image: a template's requires, warm-up and files are part of what a
 * READY sandbox is; the same image under "bash" and "python" are different sandboxes. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEX_KEPT 24 /* digits of the digest in a pool's name: 96 bits, and room for the template's */

/* The image's Env is the base and the template's variables fill in the names it does not set;
 * the image's WorkingDir wins over the template's cwd. A request names the image for its task,
 * while the template is a generic recipe ("python": PATH=/usr/bin...), whose defaults must not
 * hide the image's own (a conda PATH, /testbed). */
static void apply_image_config(pd_template *t, char **tenv, char *tcwd)
{
	int n = 0;
	while (t->env[n])
		n++;
	for (int k = 0; tenv[k]; k++) {
		size_t klen = strcspn(tenv[k], "=");
		bool have = false;
		for (int i = 0; i < n && !have; i++)
			have = !strncmp(t->env[i], tenv[k], klen) && t->env[i][klen] == '=';
		if (have || n >= PD_TPL_MAX_ENV) {
			free(tenv[k]);
			continue;
		}
		t->env[n++] = tenv[k];
	}
	if (!t->cwd)
		t->cwd = tcwd;
	else
		free(tcwd);
}

/* A new template for the pool named name: base's recipe on the image of the digest. */
static int make_template(pd_pools *p, const pd_template *base, const char *name, const char *digest,
			 pd_template *t, pd_err *e)
{
	if (pd_template_clone(t, base) < 0)
		return pd_fail(e, ENOMEM, "image pool %s", name);
	snprintf(t->name, sizeof t->name, "%s", name);
	for (int k = 0; t->layers[k]; k++) {
		free(t->layers[k]);
		t->layers[k] = NULL;
	}
	free(t->image_ref);
	/* the template's env and cwd step aside while the image fills them in (pd_template_check
	 * takes the image's where the template has none), then fill in what the image left */
	char *tenv[PD_TPL_MAX_ENV + 1] = {0};
	memcpy(tenv, t->env, sizeof t->env);
	memset(t->env, 0, sizeof t->env);
	char *tcwd = t->cwd;
	t->cwd = NULL;
	t->image_ref = strdup(digest);
	t->pool_min = 0; /* an idle image has no sandbox */
	if (!t->image_ref) {
		for (int k = 0; tenv[k]; k++)
			free(tenv[k]);
		free(tcwd);
		pd_template_release(t);
		return pd_fail(e, ENOMEM, "image pool %s", name);
	}
	pd_template_check(p->ctx, t);
	apply_image_config(t, tenv, tcwd);
	if (!t->available) {
		if (!t->image) { /* the image itself could not be opened: t->missing says why */
			pd_fail(e, ENOENT, "%s", t->missing);
		} else {
			pd_fail(e, ENOENT, "dependency_missing: template '%s' needs %s, which image %s lacks",
				base->name, t->missing, digest);
			if (e)
				e->kind = PD_EK_DEPENDENCY;
		}
		pd_template_release(t);
		return -1;
	}
	return 0;
}

/* No sandbox of it alive, no session on it, and no acquire for a second: a lookup
 * (pd_pools_template) just before may be about to acquire from it. */
static bool unused_locked(pd_pools *p, pd_pool *pl, uint64_t now)
{
	if (!pl->live || !pl->image || pl->in_use || now - pl->last_acquire_us < 1000000)
		return false;
	for (pd_session *s = p->sessions; s; s = s->next)
		if (s->pl == pl)
			return false;
	return true;
}

static bool retirable_locked(pd_pools *p, pd_pool *pl, uint64_t now)
{
	return unused_locked(p, pl, now) && !pl->nready && !pl->creating && !pl->nreclaiming;
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
		if (unused_locked(p, pl, now) && (!lru || pl->last_acquire_us < lru->last_acquire_us))
			lru = pl;
	}
	if (!lru)
		return NULL;
	if (retirable_locked(p, lru, now)) {
		/* its image's lease goes with it; its name brings it back (pd_pool_image_revive) */
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
int pd_pool_install_locked(pd_pools *p, pd_template *t, pd_err *e)
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
	slot->image = true;
	slot->live = true;
	return 0;
}

/* Makes the pool name (template@hex) live if it is not; digest is the image's full digest. */
static int ensure(pd_pools *p, const char *tname, const char *name, const char *digest, pd_err *e)
{
	pthread_mutex_lock(&p->mu);
	pd_pool *pl = pd_pool_find_locked(p, name);
	pd_pool *base = pd_pool_find_locked(p, tname);
	pthread_mutex_unlock(&p->mu);
	if (pl)
		return 0;
	if (!base || base->image)
		return pd_fail_as(e, ENOENT, "no template named '%s'", tname);
	/* the templates' pools never change after start: base is read without the lock */
	pd_template t;
	if (make_template(p, &base->t, name, digest, &t, e) < 0)
		return -1;
	pthread_mutex_lock(&p->mu);
	int rc = pd_pool_install_locked(p, &t, e);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int pd_pools_image(pd_pools *p, const char *tname, const char *ref, char *pool, size_t pool_len, char *digest,
		   pd_err *e)
{
	char d[PD_DIGEST_LEN];
	if (strlen(tname) + 1 + HEX_KEPT >= sizeof ((pd_template *)0)->name || strchr(tname, '@'))
		return pd_fail(e, EINVAL, "template '%s': too long a name for an image pool (at most %zu characters)",
			       tname, sizeof ((pd_template *)0)->name - 2 - HEX_KEPT);
	if (pd_image_resolve(pd_ctx_state_dir(p->ctx), ref, d, e) < 0)
		return -1;
	char name[sizeof ((pd_template *)0)->name];
	snprintf(name, sizeof name, "%s@%.*s", tname, HEX_KEPT, d + 7);
	if (ensure(p, tname, name, d, e) < 0)
		return -1;
	snprintf(pool, pool_len, "%s", name);
	if (digest)
		snprintf(digest, PD_DIGEST_LEN, "%s", d);
	return 0;
}

int pd_pool_image_revive(pd_pools *p, const char *name, pd_err *e)
{
	const char *at = strchr(name, '@');
	char tname[sizeof ((pd_template *)0)->name], d[PD_DIGEST_LEN];
	if (!at || (size_t)(at - name) >= sizeof tname || strlen(at + 1) != HEX_KEPT ||
	    strspn(at + 1, "0123456789abcdef") != HEX_KEPT)
		return pd_fail_as(e, ENOENT, "no template named '%s'", name);
	snprintf(tname, sizeof tname, "%.*s", (int)(at - name), name);
	/* the digits kept are a unique prefix of the digest (the store refuses an ambiguous one) */
	if (pd_image_resolve(pd_ctx_state_dir(p->ctx), at + 1, d, e) < 0)
		return -1;
	return ensure(p, tname, name, d, e);
}
