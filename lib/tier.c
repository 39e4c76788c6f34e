/* The table of isolation tiers and pd_run, which routes a one-shot run to its tier. */
#define _GNU_SOURCE
#include "tier.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool always(char *msg, size_t len)
{
	(void)msg, (void)len;
	return true;
}

static const pd_tier tiers[PD_ISO_N] = {
	[PD_ISO_CONTAINER] = {"container", pd_container_run, always},
	[PD_ISO_GVISOR] = {"gvisor", pd_gvisor_run, pd_gvisor_available},
};

const pd_tier *pd_tier_get(pd_isolation i)
{
	return (unsigned)i < PD_ISO_N ? &tiers[i] : NULL;
}

const char *pd_isolation_name(pd_isolation i)
{
	return (unsigned)i < PD_ISO_N ? tiers[i].name : "?";
}

int pd_isolation_parse(const char *name)
{
	for (int i = 0; name && i < PD_ISO_N; i++)
		if (!strcmp(name, tiers[i].name))
			return i;
	return -1;
}

int pd_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e)
{
	const pd_tier *t = pd_tier_get(o->isolation);
	if (!t) {
		memset(r, 0, sizeof *r);
		r->status = PD_XX;
		snprintf(r->error, sizeof r->error, "unknown isolation %d", (int)o->isolation);
		snprintf(r->residue, sizeof r->residue, "not-created");
		return pd_fail(e, EINVAL, "unknown isolation %d", (int)o->isolation);
	}
	int rc = t->run(c, o, x, r, e);
	snprintf(r->isolation, sizeof r->isolation, "%s", t->name);
	return rc;
}
