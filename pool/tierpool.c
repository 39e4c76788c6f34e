/* Tier pools, a kind of derived pool: a template's recipe under another isolation tier than its
 * own, for the requests that ask for it ("isolation": "gvisor" on a container template). One
 * demand-sized pool per (pool, tier), made on first use (acquire.c) in a derived slot like an
 * image pool's (sized from zero, retired when idle to make room: pool.c), so a tier nobody asks
 * for costs nothing, and the sandboxes of two tiers never mix in one pool. Here: whether a tier
 * may serve a template, and the recipe. */
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

int pd_tier_allowed(const pd_template *bt, const char *base, int tier, pd_err *e)
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
		return pd_fail_as(e, EINVAL, "isolation: template '%s' allows %s, not %s", base,
				  tiers, pd_isolation_name((pd_isolation)tier));
	}
	const char *why = lacks(bt, tier);
	if (why)
		return pd_fail_as(e, ENOTSUP, "isolation: %s does not offer %s",
				  pd_isolation_name((pd_isolation)tier), why);
	return 0;
}

int pd_tier_recipe(pd_pools *p, pd_template *t, const char *name, int tier, pd_err *e)
{
	(void)e;
	snprintf(t->name, sizeof t->name, "%s", name);
	t->isolation = (pd_isolation)tier;
	t->pool_min = 0; /* demand-sized from zero: a tier nobody asks for costs nothing */
	if (tier == PD_ISO_GVISOR)
		t->pool_reuse = false; /* never reset: lib/gvisor/sandbox.c's reuse rule */
	pd_template_check(p->ctx, t);  /* the image's lease of its own, and the version */
	return 0;
}
