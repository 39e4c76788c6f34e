/* auditrun.c: the one audited exec — the policy's decoys planted, its honey variables in the
 * environment, the program run under its audit, the evidence judged with the sandbox still there
 * (the files the attempt wrote are part of it) — and the one-shot audited run made of it. What
 * every API does with "audit" (runs, the judge, session steps, `paddock exec`), in one place. */
#define _GNU_SOURCE
#include "auditpolicy.h"
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void failed_before(pd_result *r, const char *what, const pd_err *e)
{
	memset(r, 0, sizeof *r);
	r->status = PD_XX;
	snprintf(r->error, sizeof r->error, "%s%s", what, e ? PD_ERR_STR(e) : "");
}

int pd_sandbox_exec_audited(pd_sandbox *s, const pd_exec_opts *x, const pd_audit_policy *p, unsigned flags,
			    pd_result *r, pd_audit_verdict *v, pd_err *e)
{
	if (v)
		memset(v, 0, sizeof *v);
	if (!p)
		return pd_sandbox_exec(s, x, r, e);
	if ((flags & PD_AUDITED_PLANT) && pd_audit_policy_plant(p, s, e) < 0) {
		failed_before(r, "plant the audit's decoys: ", e);
		return pd_err_prefix(e, "plant the audit's decoys: ");
	}
	pd_exec_opts xo = *x;
	/* the honey variables over everything else: a program's own of the same name is replaced */
	char **env = pd_env_merge(x->envp, (char *const *)pd_audit_policy_env(p));
	if (!env) {
		failed_before(r, "audit environment", NULL);
		return pd_fail(e, ENOMEM, "audit environment");
	}
	xo.envp = env;
	if (!xo.audit)
		xo.audit = pd_audit_policy_opts(p);
	/* the coarse clock, as the file systems stamp a change: a file this exec wrote is not older */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	int rc = pd_sandbox_exec(s, &xo, r, e);
	free(env);
	if (rc < 0 || !v)
		return rc;
	pd_sandbox *live = pd_sandbox_state(s) == PD_READY ? s : NULL;
	if (flags & PD_AUDITED_SINCE)
		pd_audit_evaluate_since(p, r, live, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, v);
	else
		pd_audit_evaluate(p, r, live, v);
	return 0;
}

int pd_run_audited(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, const pd_audit_policy *p,
		   pd_result *r, pd_audit_verdict *v, pd_err *e)
{
	memset(v, 0, sizeof *v);
	pd_sandbox_opts so = *o;
	so.audit = pd_audit_policy_opts(p);
	uint64_t t0 = pd_now_us();
	pd_sandbox *s = pd_sandbox_create(c, &so, e);
	if (!s) {
		failed_before(r, "", e);
		if (!e)
			snprintf(r->error, sizeof r->error, "sandbox setup failed");
		r->setup_us = pd_now_us() - t0;
		snprintf(r->residue, sizeof r->residue, "not-created");
		return -1;
	}
	if (pd_audit_policy_plant(p, s, e) < 0) {
		failed_before(r, "plant the audit's decoys: ", e);
		pd_sandbox_destroy(s, r->residue, sizeof r->residue);
		return -1;
	}
	uint64_t t1 = pd_now_us();
	if (pd_sandbox_exec_audited(s, x, p, 0, r, v, e) < 0) {
		pd_sandbox_destroy(s, NULL, 0);
		return -1;
	}
	r->setup_us = t1 - t0;
	uint64_t t2 = pd_now_us();
	pd_sandbox_destroy(s, r->residue, sizeof r->residue);
	r->teardown_us = pd_now_us() - t2;
	return 0;
}
