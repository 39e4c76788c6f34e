/* A judge request as a scheduler job (pd_job with its own work), shared by POST /v1/judge and
 * `paddock run`: parse, resolve the problem, and a job whose execute runs the judge on a scheduler
 * worker and leaves the judged record in j->record (what the store keeps and the caller answers).
 * Priorities, deadlines (queue_timeout), retries of admission and the breaker stay the scheduler's. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct judge_work {
	pd_judge *judge;
	pd_judge_req q;
	pd_problem *problem; /* a loaded one, or q.problem */
} judge_work;

static void work_free(void *arg)
{
	judge_work *w = arg;
	if (!w)
		return;
	pd_judge_req_free(&w->q);
	free(w);
}


static void fill_ids(const pd_job *j, const judge_work *w, pd_judged *d)
{
	snprintf(d->task_id, sizeof d->task_id, "%s", j->task_id);
	snprintf(d->group_id, sizeof d->group_id, "%s", w->q.group_id);
	snprintf(d->sample_id, sizeof d->sample_id, "%s", w->q.sample_id);
	snprintf(d->attempt_id, sizeof d->attempt_id, "%s#%u", j->task_id, j->attempts ? j->attempts : 1);
	snprintf(d->problem_id, sizeof d->problem_id, "%s", j->problem_id);
	snprintf(d->problem_version, sizeof d->problem_version, "%s", j->problem_version);
	snprintf(d->language, sizeof d->language, "%s", j->language);
	snprintf(d->template_name, sizeof d->template_name, "%s", j->template_name);
}

/* A verdict without judging: an infrastructure failure (no reward). */
static json_t *failed_record(const pd_job *j, const judge_work *w, pd_failure fc, const char *error)
{
	pd_judged d;
	memset(&d, 0, sizeof d);
	fill_ids(j, w, &d);
	d.v.process = PD_LV_NOT_AUDITED;
	d.v.failure = fc;
	snprintf(d.error, sizeof d.error, "%s", error);
	pd_verdict_decide(&d.v, &w->q.opts.rule);
	return pd_judged_to_json(&d);
}

/* One judging of the submission: the record of attempt j->attempts in j->record. Returns whether
 * the sandboxes failed it (startup_failure, internal_error): another attempt may do better. */
static bool judge_once(pd_job *j, judge_work *w, const pd_judge_opts *o)
{
	pd_judged d;
	memset(&d, 0, sizeof d);
	fill_ids(j, w, &d);
	pd_err e = {0};
	bool retry = false;
	json_decref(j->record);
	if (w->q.problem && pd_judge_prepare(w->judge, w->problem, &e) < 0) {
		/* an inline checker that does not build: the request's judge material is broken */
		j->failure = PD_F_JUDGE;
		snprintf(j->error, sizeof j->error, "%s", PD_ERR_STR(&e));
		j->record = failed_record(j, w, PD_F_JUDGE, PD_ERR_STR(&e));
	} else if (pd_judge_submit(w->judge, w->problem, w->q.language, w->q.code, w->q.code_len, o, &d, &e) < 0) {
		j->failure = PD_F_INTERNAL;
		snprintf(j->error, sizeof j->error, "%s", PD_ERR_STR(&e));
		j->record = failed_record(j, w, PD_F_INTERNAL, PD_ERR_STR(&e));
	} else {
		j->failure = d.v.failure;
		snprintf(j->error, sizeof j->error, "%s", d.error);
		/* the process level for the metrics (paddock_process_verdicts_total) */
		j->verdict.status = d.v.process == PD_LV_FAIL ? PD_PROCESS_FAIL
				    : d.v.process == PD_LV_PASS ? PD_PROCESS_PASS : PD_PROCESS_NOT_AUDITED;
		/* and the kinds that failed it and the events seen (paddock_audit_detections_total,
		 * paddock_audit_events_total): a cache hit ran nothing, so it saw no events */
		j->verdict.failed_kinds = d.audit_verdict.failed_kinds;
		for (int k = 0; d.audited && !d.cache_hit && k < PD_AK_N; k++)
			j->work_audit_kinds[k] += d.audit_kinds[k];
		/* the cost of every attempt, the usable of the last (paddock_cpu_seconds_total,
		 * paddock_usable_samples_total): a cache hit ran nothing, whatever its stored record's
		 * cpu_ms says */
		j->work_usable = d.v.usable;
		if (!d.cache_hit) {
			j->work_cpu_ms += d.cpu_ms;
			for (size_t t = 0; t < d.ntests; t++)
				j->work_mem_byte_s += (double)d.tests[t].memory_kb * 1024.0 * ((double)d.tests[t].wall_ms / 1000.0);
		}
		j->record = pd_judged_to_json(&d);
		retry = j->failure == PD_F_STARTUP || j->failure == PD_F_INTERNAL;
	}
	json_object_set_new(j->record, "attempt", json_integer(j->attempts));
	/* the submission's size, for the review queue's short_pass (a pass far shorter than the
	 * problem's usual ones is worth a look) */
	json_object_set_new(j->record, "code_bytes", json_integer((json_int_t)w->q.code_len));
	json_object_set_new(j->record, "finished_at", json_integer((json_int_t)(pd_wall_us() / 1000)));
	pd_judged_free(&d);
	/* cluster mode: the verdict names the node that judged it and the request it answers, as a
	 * run's record does */
	if (j->record && j->node[0])
		json_object_set_new(j->record, "node", json_string(j->node));
	if (j->record && j->request_id[0])
		json_object_set_new(j->record, "request_id", json_string(j->request_id));
	return retry;
}

/* A sandbox failure is retried as a new attempt (docs/judge.md), judged whole again in new sandboxes,
 * not as a test rerun inside the same attempt: the store keeps each attempt's record, so the first
 * one's error is not lost to the retry. A failing checker is the judge's own retry (judge.c). */
static void execute(pd_job *j, pd_pools *pools)
{
	(void)pools;
	judge_work *w = j->work;
	j->started_us = pd_wall_us();
	pd_judge_opts o = w->q.opts;
	o.job = j; /* the client's hang-up (pd_sched_cancel) kills the running program */
	unsigned retries = o.infra_retries;
	o.infra_retries = 0;
	for (j->attempts = 1;; j->attempts++) {
		j->work_usable = false;
		bool retry = judge_once(j, w, &o);
		if (!retry || j->attempts > retries || pd_job_is_cancelled(j) ||
		    (j->deadline_us && pd_now_us() >= j->deadline_us))
			break;
		if (!j->prior)
			j->prior = json_array();
		json_array_append_new(j->prior, j->record);
		j->record = NULL;
	}
	j->finished_us = pd_wall_us();
}

void pd_judge_job_risky(pd_job *j)
{
	judge_work *w = j->work;
	w->q.opts.risky = true;
}

pd_job *pd_judge_job(pd_judge *judge, const pd_problem_set *problems, json_t *body, uint32_t run_id, int *status,
		     pd_err *e)
{
	*status = 400;
	judge_work *w = calloc(1, sizeof *w);
	if (!w) {
		pd_fail(e, ENOMEM, "request");
		*status = 500;
		return NULL;
	}
	if (pd_judge_req_parse(body, &w->q, e) < 0) {
		free(w);
		return NULL;
	}
	w->judge = judge;
	w->problem = w->q.problem ? w->q.problem
				  : problems ? pd_problems_find(problems, w->q.problem_id, w->q.problem_version) : NULL;
	if (!w->problem) {
		*status = 404;
		pd_refuse(e, "problem_id: no problem %s%s%s is loaded", w->q.problem_id, w->q.problem_version[0] ? "@" : "",
			  w->q.problem_version);
		work_free(w);
		return NULL;
	}
	if (w->problem->episode) {
		pd_refuse(e, "problem_id: %s is an episode problem: grade a session with POST /v1/sessions/{id}/judge",
			  w->problem->id);
		work_free(w);
		return NULL;
	}
	/* a request policy that would widen the template's or problem's: the client's error, now */
	if (pd_judge_check_policy(judge, w->problem, w->q.language, w->q.audit, e) < 0) {
		work_free(w);
		return NULL;
	}
	/* a tier the template does not allow: 400 naming the field, as /v1/runs answers it */
	if (pd_judge_check_isolation(judge, w->problem, w->q.language, w->q.opts.isolation, e) < 0) {
		*status = e->code == ENOENT ? 404 : 400;
		work_free(w);
		return NULL;
	}
	const pd_language *l = pd_language_find(w->q.language);
	if (w->problem->call_based && !pd_jharness_supported(l)) {
		pd_refuse(e, "language: problem %s is call-based (fn_name %s): python, node or cpp", w->problem->id,
			  w->problem->fn_name);
		work_free(w);
		return NULL;
	}
	pd_job *j = pd_job_new();
	if (!j) {
		work_free(w);
		*status = 500;
		pd_fail(e, ENOMEM, "job");
		return NULL;
	}
	snprintf(j->template_name, sizeof j->template_name, "%s",
		 w->problem->template_name[0] ? w->problem->template_name : l->template);
	snprintf(j->language, sizeof j->language, "%s", l->name);
	/* for the edge's allowlist check: the request's image, or its inline problem's (a problem
	 * loaded from --problems is the operator's, its image too) */
	snprintf(j->image, sizeof j->image, "%s",
		 w->q.opts.image[0] ? w->q.opts.image : w->q.problem ? w->q.problem->image : "");
	snprintf(j->problem_id, sizeof j->problem_id, "%s", w->problem->id);
	snprintf(j->problem_version, sizeof j->problem_version, "%s", w->problem->version);
	/* every inline problem without an id is called "inline": its content tells them apart */
	if (!strcmp(w->problem->id, "inline"))
		snprintf(j->problem_key, sizeof j->problem_key, "inline:%.16s", w->problem->digest_hex);
	if (w->q.task_id[0]) {
		snprintf(j->task_id, sizeof j->task_id, "%s", w->q.task_id);
	} else {
		pd_new_id(j->task_id, sizeof j->task_id, run_id, "j");
	}
	j->priority = w->q.priority;
	if (w->q.deadline_ms)
		j->deadline_us = pd_now_us() + w->q.deadline_ms * 1000;
	j->execute = execute;
	j->work = w;
	j->work_free = work_free;
	*status = 200;
	return j;
}

json_t *pd_judge_job_record(const pd_job *j)
{
	if (j->record)
		return json_incref(j->record);
	/* never ran: its deadline passed in the queue, or the scheduler stopped */
	return failed_record(j, j->work, j->failure == PD_F_NONE ? PD_F_INTERNAL : j->failure, j->error);
}
