/* Tier pools: a template's recipe under another isolation tier than its own, for the requests
 * that ask for it ("isolation": "gvisor" on a container template). One demand-sized pool per
 * (pool, tier), named "<pool>~<tier>", made on first use in a derived slot like an image pool's
 * (imgpool.c: sized from zero, retired when idle to make room), so a tier nobody asks for costs
 * nothing, and the sandboxes of two tiers never mix in one pool. */
#define _GNU_SOURCE
#include "pools.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* What tier cannot offer to t, or NULL. */
static const char *lacks(const pd_template *t, int tier)
{
	if (tier != PD_ISO_GVISOR)
		return NULL;
	const pd_limits *l = &t->limits;
	if (t->audit)
		return "an audit (the template has an audit policy)";
	if (t->net == PD_NET_HOST)
		return "the host's network";
	if (t->net == PD_NET_ALLOWLIST)
		return "an allowlist network (its relay)";
	if (l->io_read_bps || l->io_write_bps || l->io_read_iops || l->io_write_iops)
		return "I/O limits";
	return NULL;
}

static int allowed(const pd_template *bt, const char *base, int tier, pd_err *e)
{
	if (!bt)
		return pd_fail_as(e, ENOENT, "no template named '%s'", base);
	if (tier < 0 || tier >= PD_ISO_N)
		return pd_fail_as(e, EINVAL, "isolation: must be container or gvisor");
	if (tier == (int)bt->isolation)
		return 0;
	if (!(bt->isolation_allowed & (1u << tier))) {
		char tiers[64];
		pd_template_tiers(bt, tiers, sizeof tiers);
		return pd_fail_as(e, EINVAL, "isolation: template '%s' allows %s, not %s", base, tiers,
			       pd_isolation_name((pd_isolation)tier));
	}
	const char *why = lacks(bt, tier);
	if (why)
		return pd_fail_as(e, ENOTSUP, "isolation: %s does not offer %s", pd_isolation_name((pd_isolation)tier), why);
	return 0;
}

int pd_pools_tier_allowed(pd_pools *p, const char *tname, int tier, pd_err *e)
{
	return allowed(pd_pools_template(p, tname), tname, tier, e);
}

int pd_pools_tier(pd_pools *p, const char *base, int tier, char *pool, size_t pool_len, pd_err *e)
{
	const pd_template *bt = pd_pools_template(p, base);
	if (allowed(bt, base, tier, e) < 0)
		return -1;
	if (tier == (int)bt->isolation) {
		snprintf(pool, pool_len, "%s", base);
		return 0;
	}
	char name[sizeof bt->name];
	if (snprintf(name, sizeof name, "%s~%s", base, pd_isolation_name((pd_isolation)tier)) >= (int)sizeof name)
		return pd_fail(e, EINVAL, "template '%s': too long a name for a pool of another tier", base);
	pthread_mutex_lock(&p->mu);
	pd_pool *pl = pd_pool_find_locked(p, name), *bp = pd_pool_find_locked(p, base);
	pthread_mutex_unlock(&p->mu);
	if (!pl) {
		if (!bp)
			return pd_fail_as(e, ENOENT, "no template named '%s'", base);
		/* a base pool's template never changes while it is live; an image pool retired meanwhile
		 * is not read: its slot is only reused under the lock, after its template was copied */
		pd_template t;
		pthread_mutex_lock(&p->mu);
		int rc = pd_template_clone(&t, &bp->t);
		pthread_mutex_unlock(&p->mu);
		if (rc < 0)
			return pd_fail(e, ENOMEM, "pool %s", name);
		snprintf(t.name, sizeof t.name, "%s", name);
		t.isolation = (pd_isolation)tier;
		t.pool_min = 0; /* demand-sized from zero: a tier nobody asks for costs nothing */
		if (tier == PD_ISO_GVISOR)
			t.pool_reuse = false; /* never reset: lib/gvisor/sandbox.c's reuse rule */
		t.version_given = bp->t.version_given;
		pd_template_check(p->ctx, &t); /* the image's lease of its own, and the version */
		pthread_mutex_lock(&p->mu);
		rc = pd_pool_install_locked(p, &t, e);
		pthread_mutex_unlock(&p->mu);
		if (rc < 0)
			return -1;
	}
	snprintf(pool, pool_len, "%s", name);
	return 0;
}

int pd_pool_tier_revive(pd_pools *p, const char *name, pd_err *e)
{
	const char *tilde = strrchr(name, '~');
	char base[sizeof ((pd_template *)0)->name], got[sizeof base];
	int tier = tilde ? pd_isolation_parse(tilde + 1) : -1;
	if (tier < 0 || (size_t)(tilde - name) >= sizeof base)
		return pd_fail_as(e, ENOENT, "no template named '%s'", name);
	snprintf(base, sizeof base, "%.*s", (int)(tilde - name), name);
	return pd_pools_tier(p, base, tier, got, sizeof got, e);
}
