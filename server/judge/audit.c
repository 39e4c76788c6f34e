/* The audit in the judge (issue 22): which policy a judged submission runs under, the evidence of its
 * test runs gathered into the record, and the process level of the verdict.
 *
 * Only the candidate's test runs are audited: the compile step runs the toolchain over text, and the
 * checkers and interactors are the judge's own programs (auditing them would flag the judge for
 * reading its own answers). Judge material never enters the candidate's sandbox in the first place;
 * the audit is the evidence of what the candidate tried (a trap read, a tamper, a probe), and a
 * failed process level makes the attempt unusable and gives the rule's penalty as reward. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pd_judge_policy(const pd_template *tpl, const pd_problem *p, const pd_audit_policy *req,
		    pd_audit_policy **out, pd_err *e)
{
	*out = NULL;
	const pd_audit_policy *tp = tpl ? tpl->audit : NULL, *pp = p->audit;
	bool want = req || (tp && pd_audit_policy_mandatory(tp)) || (pp && pd_audit_policy_mandatory(pp));
	if (!want)
		return 0;
	pd_audit_policy *pol = NULL;
	if (tp)
		pol = pd_audit_policy_copy(tp);
	/* the problem's over the template's: it knows its judge material and decoys, and may replace
	 * what the attempt may read or reach (a problem is not a request: it may widen) */
	if (pp) {
		if (pol) {
			if (pd_audit_policy_merge(pol, pp, false, e) < 0)
				goto fail;
		} else {
			pol = pd_audit_policy_copy(pp);
		}
	}
	/* the request's only tightens what the template and problem say */
	if (req) {
		if (pol) {
			if (pd_audit_policy_merge(pol, req, true, e) < 0)
				goto fail;
		} else {
			pol = pd_audit_policy_copy(req);
		}
	}
	if (!pol)
		return pd_fail(e, ENOMEM, "audit");
	/* a decoy planted by the template (or the request) over this problem's answers: refused
	 * as the problem's own would be at load */
	if (pd_judge_check_decoys(p, pol, p->id, e) < 0)
		goto fail;
	*out = pol;
	return 0;
fail:
	pd_audit_policy_free(pol);
	return -1;
}

int pd_judge_check_decoys(const pd_problem *p, const pd_audit_policy *pol, const char *whose, pd_err *e)
{
	/* an interactive problem's answer is the interactor's secret, never the candidate's output */
	if (!pol || p->checker.mode == PD_CHK_INTERACTIVE)
		return 0;
	for (size_t i = 0; i < p->ntests; i++) {
		const pd_jtest *t = &p->tests[i];
		const char *trap = pd_audit_policy_answer_trap(pol, t->answer, t->answer_len);
		if (trap)
			return pd_refuse(e,
					 "%s: audit: the decoy %s's answer is test %s's expected output: every correct "
					 "submission would be flagged as its wrong answer (trap_read); give the decoy "
					 "another answer",
					 whose, trap, t->name);
	}
	return 0;
}

int pd_judge_policy_risky(pd_audit_policy **pol, pd_err *e)
{
	static const char deny[] = "{\"egress\": \"deny\"}";
	pd_audit_policy *over = pd_audit_policy_parse(deny, sizeof deny - 1, "audit", "/work", e);
	if (!over)
		return -1;
	/* no policy yet: the defaults of "audit": true with egress denied; else the one there,
	 * tightened (a stricter egress is always a tightening) */
	if (!*pol) {
		*pol = over;
		return 0;
	}
	int rc = pd_audit_policy_merge(*pol, over, true, e);
	pd_audit_policy_free(over);
	return rc;
}

void pd_judged_audit_start(pd_judged *d)
{
	d->audited = true;
	memset(&d->audit_verdict, 0, sizeof d->audit_verdict);
	d->audit_verdict.status = PD_PROCESS_PASS; /* no run yet broke a rule */
}

static void add_reason(pd_judged *d, const char *test, const char *reason)
{
	pd_audit_verdict *v = &d->audit_verdict;
	for (size_t i = 0; i < v->nreasons; i++) {
		/* the same rule broken again in another test: once is enough. Compared whole, from
		 * where the rule starts (a reason cut at the buffer's end: as far as it was kept) */
		const char *kept = v->reasons[i] + d->audit_reason_at[i];
		size_t n = strlen(kept);
		if (strlen(v->reasons[i]) == sizeof v->reasons[0] - 1 ? !strncmp(kept, reason, n) : !strcmp(kept, reason))
			return;
	}
	if (v->nreasons < PD_VERDICT_REASONS) {
		int at = snprintf(v->reasons[v->nreasons], sizeof v->reasons[0], "test %s: ", test);
		at = at < 0 ? 0 : at >= (int)sizeof v->reasons[0] ? (int)sizeof v->reasons[0] - 1 : at;
		snprintf(v->reasons[v->nreasons] + at, sizeof v->reasons[0] - (size_t)at, "%s", reason);
		d->audit_reason_at[v->nreasons++] = (size_t)at;
	}
}

void pd_judged_audit_add(pd_judged *d, const char *test, const pd_jrun *x)
{
	if (!d->audited)
		return;
	const pd_result *r = &x->r;
	for (int k = 0; k < PD_AK_N; k++)
		d->audit_kinds[k] += r->audit_kinds[k];
	d->audit_dropped += r->audit_dropped;
	for (size_t i = 0; i < r->audit_len; i++) {
		if (d->audit_len >= PD_JUDGE_AUDIT_EVENTS) {
			d->audit_dropped += r->audit_len - i;
			break;
		}
		if (!d->audit) {
			d->audit = calloc(PD_JUDGE_AUDIT_EVENTS, sizeof *d->audit);
			if (!d->audit) {
				d->audit_dropped += r->audit_len - i;
				break;
			}
		}
		d->audit[d->audit_len++] = r->audit[i];
	}
	const pd_audit_verdict *v = &x->verdict;
	if (v->status == PD_PROCESS_FAIL) {
		d->audit_verdict.status = PD_PROCESS_FAIL;
		d->audit_verdict.failed_kinds |= v->failed_kinds;
		for (size_t i = 0; i < v->nreasons; i++)
			add_reason(d, test, v->reasons[i]);
	} else if (v->status == PD_PROCESS_NOT_AUDITED && d->audit_verdict.status == PD_PROCESS_PASS) {
		d->audit_verdict.status = PD_PROCESS_NOT_AUDITED;
	}
}

void pd_judged_audit_unseen(pd_judged *d)
{
	if (d->audited && d->audit_verdict.status == PD_PROCESS_PASS)
		d->audit_verdict.status = PD_PROCESS_NOT_AUDITED;
}

void pd_judged_audit_decide(pd_judged *d)
{
	if (!d->audited) {
		d->v.process = PD_LV_NOT_AUDITED;
		return;
	}
	pd_process_status s = d->audit_verdict.status;
	/* an infrastructure failure leaves runs unjudged: no evidence either way, unless a run that
	 * did complete already broke a rule */
	if (s == PD_PROCESS_PASS && pd_failure_is_infra(d->v.failure))
		s = d->audit_verdict.status = PD_PROCESS_NOT_AUDITED;
	d->v.process = s == PD_PROCESS_FAIL ? PD_LV_FAIL : s == PD_PROCESS_PASS ? PD_LV_PASS : PD_LV_NOT_AUDITED;
	if (s == PD_PROCESS_FAIL && !pd_failure_is_infra(d->v.failure))
		d->v.failure = PD_F_POLICY;
}

json_t *pd_judged_audit_json(const pd_judged *d)
{
	if (!d->audited)
		return json_null();
	json_t *a = json_object(), *ev = json_array(), *reasons = json_array(), *failed = json_array(),
	       *kinds = json_object();
	for (size_t i = 0; i < d->audit_len; i++) {
		const pd_audit_event *x = &d->audit[i];
		json_t *o = json_object();
		json_object_set_new(o, "kind", json_string(x->kind));
		/* the same shape as /v1/runs' events: time in ms since the run started */
		json_object_set_new(o, "time", json_real((double)x->t_us / 1000.0));
		json_object_set_new(o, "pid", json_integer(x->pid));
		bool relay = !strcmp(x->op, "tunnel") || !strcmp(x->op, "http");
		bool net = relay || !strcmp(x->op, "connect") || !strncmp(x->op, "send", 4);
		if (relay)
			json_object_update_missing_new(o, json_pack("{s:o,s:o,s:I,s:I,s:o}", "host", pd_json_text(x->host),
								    "resolved", pd_json_text(x->address), "bytes_out",
								    (json_int_t)x->bytes_out, "bytes_in",
								    (json_int_t)x->bytes_in, "note", pd_json_text(x->note)));
		json_object_set_new(o, net ? "address" : "path", pd_json_text(x->target));
		json_object_set_new(o, "mode", pd_json_text(x->mode));
		json_object_set_new(o, "op", pd_json_text(x->op));
		json_object_set_new(o, "denied", json_boolean(x->denied));
		json_array_append_new(ev, o);
	}
	for (size_t i = 0; i < d->audit_verdict.nreasons; i++)
		json_array_append_new(reasons, pd_json_text(d->audit_verdict.reasons[i]));
	for (int k = 0; k < PD_AK_N; k++) {
		if (d->audit_verdict.failed_kinds & (1u << k))
			json_array_append_new(failed, json_string(pd_audit_kind_name((pd_audit_kind)k)));
		if (d->audit_kinds[k])
			json_object_set_new(kinds, pd_audit_kind_name((pd_audit_kind)k),
					    json_integer((json_int_t)d->audit_kinds[k]));
	}
	json_object_set_new(a, "status", json_string(pd_process_status_name(d->audit_verdict.status)));
	json_object_set_new(a, "events", ev);
	json_object_set_new(a, "dropped", json_integer((json_int_t)d->audit_dropped));
	json_object_set_new(a, "counts", kinds);
	json_object_set_new(a, "reasons", reasons);
	json_object_set_new(a, "failed", failed);
	return a;
}
