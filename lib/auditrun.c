/* auditrun.c: one audited run — the policy's decoys planted, its honey variables in the
 * environment, the program run under its audit, the evidence judged with the sandbox still
 * there (the files the attempt wrote are part of it), then the teardown. What every API does
 * with "audit", in one place. */
#define _GNU_SOURCE
#include "auditpolicy.h"
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the program's environment with the honey variables over it (a program's own variable of the
 * same name is replaced: the token must be what it sees) */
static char **with_honey(const pd_audit_policy *p, char *const *envp)
{
	return pd_env_merge(envp, (char *const *)pd_audit_policy_env(p));
}

int pd_run_audited(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, const pd_audit_policy *p,
		   pd_result *r, pd_audit_verdict *v, pd_err *e)
{
	memset(v, 0, sizeof *v);
	pd_sandbox_opts so = *o;
	so.audit = pd_audit_policy_opts(p);
	pd_exec_opts xo = *x;
	char **env = with_honey(p, x->envp);
	if (!env) {
		memset(r, 0, sizeof *r);
		r->status = PD_XX;
		return pd_fail(e, ENOMEM, "audit environment");
	}
	xo.envp = env;
	uint64_t t0 = pd_now_us();
	pd_sandbox *s = pd_sandbox_create(c, &so, e);
	if (!s) {
		memset(r, 0, sizeof *r);
		r->status = PD_XX;
		snprintf(r->error, sizeof r->error, "%s", e ? PD_ERR_STR(e) : "sandbox setup failed");
		r->setup_us = pd_now_us() - t0;
		snprintf(r->residue, sizeof r->residue, "not-created");
		free(env);
		return -1;
	}
	if (pd_audit_policy_plant(p, s, e) < 0) {
		memset(r, 0, sizeof *r);
		r->status = PD_XX;
		snprintf(r->error, sizeof r->error, "plant the audit's decoys: %s", e ? PD_ERR_STR(e) : "");
		pd_sandbox_destroy(s, r->residue, sizeof r->residue);
		free(env);
		return -1;
	}
	uint64_t t1 = pd_now_us();
	if (pd_sandbox_exec(s, &xo, r, e) < 0) {
		pd_sandbox_destroy(s, NULL, 0);
		free(env);
		return -1;
	}
	free(env);
	r->setup_us = t1 - t0;
	pd_audit_evaluate(p, r, s, v);
	uint64_t t2 = pd_now_us();
	pd_sandbox_destroy(s, r->residue, sizeof r->residue);
	r->teardown_us = pd_now_us() - t2;
	return 0;
}
