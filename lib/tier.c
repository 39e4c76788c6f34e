/* The table of isolation tiers, and the public calls that route through it: pd_run (a one-shot
 * run) by the options' tier, and a kept sandbox's create, exec, destroy, reset, pid rewind and
 * upper listing by the row its create set (s->tier). The state checks every tier shares are made
 * here once; what is a tier's own is in its row (tier.h). */
#define _GNU_SOURCE
#include "sandbox.h"
#include "tier.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool always(char *msg, size_t len)
{
	(void)msg, (void)len;
	return true;
}

int pd_kept_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, const pd_kept_steps *k, pd_result *r,
		pd_err *e)
{
	uint64_t t0 = pd_now_us();
	pd_sandbox *s = pd_sandbox_create(c, o, e);
	if (!s) {
		memset(r, 0, sizeof *r);
		r->status = PD_XX;
		snprintf(r->error, sizeof r->error, "%s", e ? PD_ERR_STR(e) : "sandbox setup failed");
		r->setup_us = pd_now_us() - t0;
		snprintf(r->residue, sizeof r->residue, "not-created");
		return -1;
	}
	if (k && k->ready && k->ready(s, k->arg, r, e) < 0) {
		pd_sandbox_destroy(s, r->residue, sizeof r->residue);
		return -1;
	}
	uint64_t t1 = pd_now_us();
	int rc = k && k->exec ? k->exec(s, x, k->arg, r, e) : pd_sandbox_exec(s, x, r, e);
	if (rc < 0) {
		pd_sandbox_destroy(s, NULL, 0);
		return -1;
	}
	r->setup_us = t1 - t0;
	uint64_t t2 = pd_now_us();
	pd_sandbox_destroy(s, r->residue, sizeof r->residue);
	r->teardown_us = pd_now_us() - t2;
	return 0;
}

/* The container tier's one-shot run: its kept sandbox's, as it is. */
static int kept_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e)
{
	return pd_kept_run(c, o, x, NULL, r, e);
}

static const pd_tier tiers[PD_ISO_N] = {
	[PD_ISO_CONTAINER] = {.name = "container",
			      .run = kept_run,
			      .available = always,
			      .sb_create = pd_ct_create,
			      .sb_exec = pd_ct_exec,
			      .concurrent = true,
			      .sb_destroy = pd_ct_destroy,
			      .sb_fileop = pd_ct_fileop,
			      .sb_reset = pd_ct_reset,
			      .sb_rewind_pids = pd_ct_rewind_pids,
			      .sb_upper_list = pd_ct_upper_list},
	/* lib/gvisor/sandbox.c: the reuse rule is none; the Sentry's pids and its root's writes are
	 * its own, out of the host's reach */
	[PD_ISO_GVISOR] = {.name = "gvisor",
			   .run = pd_gvisor_run,
			   .available = pd_gvisor_available,
			   .sb_create = pd_gv_sandbox_create,
			   .sb_exec = pd_gv_sandbox_exec,
			   .sb_destroy = pd_gv_sandbox_destroy,
			   .sb_fileop = pd_gv_fileop},
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

/* ---- a kept sandbox ---------------------------------------------------------------------------- */

pd_sandbox *pd_sandbox_create(pd_ctx *c, const pd_sandbox_opts *o, pd_err *e)
{
	pd_sandbox_opts none = {0};
	if (!o) {
		none.limits = pd_limits_default();
		o = &none;
	}
	const pd_tier *t = pd_tier_get(o->isolation);
	if (!t) {
		pd_fail(e, ENOTSUP, "isolation %d: unknown", (int)o->isolation);
		return NULL;
	}
	pd_sandbox *s = t->sb_create(c, o, e);
	if (s)
		s->tier = t;
	return s;
}

static int not_ready(const pd_sandbox *s, pd_err *e)
{
	return pd_fail(e, EINVAL, "sandbox %s is %s, not READY", s->id, pd_state_name(s->state));
}

/* A concurrent exec on a tier that runs one exec at a time: it claims the sandbox (READY to
 * RUNNING in one step, so two agents' execs cannot both find it READY) or is refused, EBUSY while
 * another runs. One that failed before it ran gives the sandbox back. */
static int one_at_a_time(pd_sandbox *s, const pd_exec_opts *o, pd_result *r, pd_err *e)
{
	pd_state st = PD_READY;
	if (!__atomic_compare_exchange_n(&s->state, &st, PD_RUNNING, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return pd_fail(e, st == PD_RUNNING ? EBUSY : EINVAL, "sandbox %s is %s, not READY", s->id,
			       pd_state_name(st));
	int rc = s->tier->sb_exec(s, o, r, e);
	st = PD_RUNNING;
	if (rc < 0)
		__atomic_compare_exchange_n(&s->state, &st, PD_READY, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	return rc;
}

int pd_sandbox_exec(pd_sandbox *s, const pd_exec_opts *o, pd_result *r, pd_err *e)
{
	memset(r, 0, sizeof *r);
	snprintf(r->sandbox_id, sizeof r->sandbox_id, "%s", s->id);
	pd_sandbox_use_id(s, r->use_id, sizeof r->use_id);
	pd_image_note(r, &s->opts, s->ctx->default_image_id);
	/* beside other execs: the tier's exec looks at the state itself, under its own lock */
	if (o->concurrent && s->tier->concurrent)
		return s->tier->sb_exec(s, o, r, e);
	if (o->concurrent)
		return one_at_a_time(s, o, r, e);
	if (s->state != PD_READY)
		return not_ready(s, e);
	return s->tier->sb_exec(s, o, r, e);
}

int pd_sandbox_destroy(pd_sandbox *s, char *residue, size_t residue_len)
{
	return s ? s->tier->sb_destroy(s, residue, residue_len) : 0;
}

int pd_sandbox_reset(pd_sandbox *s, pd_err *e)
{
	if (s->state != PD_READY)
		return not_ready(s, e);
	if (!s->tier->sb_reset)
		return pd_fail(e, ENOTSUP, "sandbox %s is a %s sandbox: never reset, a fresh one is made for each user",
			       s->id, s->tier->name);
	return s->tier->sb_reset(s, e);
}

int pd_sandbox_rewind_pids(pd_sandbox *s, pd_err *e)
{
	if (s->state != PD_READY)
		return not_ready(s, e);
	return s->tier->sb_rewind_pids ? s->tier->sb_rewind_pids(s, e) : 0;
}

int pd_sandbox_upper_list(pd_sandbox *s, const char *const *skip, pd_upper_ent **out, size_t *n, pd_err *e)
{
	*out = NULL;
	*n = 0;
	if (s->state != PD_READY)
		return not_ready(s, e);
	if (!s->tier->sb_upper_list)
		return pd_fail(e, ENOTSUP, "sandbox %s is a %s sandbox: its root's changes cannot be listed", s->id,
			       s->tier->name);
	return s->tier->sb_upper_list(s, skip, out, n, e);
}
