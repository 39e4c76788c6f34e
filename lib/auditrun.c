/* auditrun.c: the one audited exec — the policy's decoys planted, its honey variables in the
 * environment, the program run under its audit, the evidence judged with the sandbox still there
 * (the files the attempt wrote are part of it) — and the one-shot audited run made of it. What
 * every API does with "audit" (runs, the judge, session steps, `paddock exec`), in one place. */
#define _GNU_SOURCE
#include "auditpolicy.h"
#include "internal.h"
#include "tier.h"

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

/* pd_run_audited's steps in its kept sandbox: the decoys planted (setup), the audited exec. */
typedef struct {
	const pd_audit_policy *p;
	pd_audit_verdict *v;
} audited;

static int audited_ready(pd_sandbox *s, void *arg, pd_result *r, pd_err *e)
{
	if (pd_audit_policy_plant(((audited *)arg)->p, s, e) < 0) {
		failed_before(r, "plant the audit's decoys: ", e);
		return -1;
	}
	return 0;
}

static int audited_exec(pd_sandbox *s, const pd_exec_opts *x, void *arg, pd_result *r, pd_err *e)
{
	audited *a = arg;
	return pd_sandbox_exec_audited(s, x, a->p, 0, r, a->v, e);
}

int pd_run_audited(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, const pd_audit_policy *p,
		   pd_result *r, pd_audit_verdict *v, pd_err *e)
{
	memset(v, 0, sizeof *v);
	pd_sandbox_opts so = *o;
	so.audit = pd_audit_policy_opts(p);
	audited a = {.p = p, .v = v};
	pd_kept_steps k = {.ready = audited_ready, .exec = audited_exec, .arg = &a};
	return pd_kept_run(c, &so, x, &k, r, e);
}
