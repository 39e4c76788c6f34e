/* POST /v1/judge: a submission judged against a loaded problem (--problems DIR) or an inline one
 * (docs/judge.md). On the event thread the body is parsed (server/judge/request.c) and queued on
 * the scheduler as a job that does its own work: a worker runs the judge (compile once, every test
 * in a clean sandbox, checkers in theirs), the store records the judged record, and judge_done
 * answers it. Priorities, deadlines (queue_timeout), admission and the circuit breaker are the
 * scheduler's, as for runs. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

typedef struct judge_work {
	pd_server *srv;
	pd_judge_req q;
	pd_problem *problem; /* the loaded one, or q.problem */
	char attempt_id[80];
} judge_work;

static void work_free(void *arg)
{
	judge_work *w = arg;
	if (!w)
		return;
	pd_judge_req_free(&w->q);
	free(w);
}

static uint64_t wall_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* The job's failure class, for the metrics and the store's column. */
static pd_failure failure_of(const char *fc)
{
	static const struct {
		const char *name;
		pd_failure f;
	} map[] = {{"startup_failure", PD_F_STARTUP}, {"dependency_missing", PD_F_DEPENDENCY},
		   {"exec_timeout", PD_F_TIMEOUT},    {"judge_error", PD_F_JUDGE},
		   {"oom", PD_F_OOM},                 {"output_limit", PD_F_OUTPUT},
		   {"policy_violation", PD_F_POLICY}, {"queue_timeout", PD_F_QUEUE},
		   {"cancelled", PD_F_CANCELLED},     {"internal_error", PD_F_INTERNAL}};
	for (size_t i = 0; fc && i < sizeof map / sizeof map[0]; i++)
		if (!strcmp(fc, map[i].name))
			return map[i].f;
	return PD_F_NONE;
}

static void fill_ids(const pd_job *j, const judge_work *w, pd_judged *d)
{
	snprintf(d->task_id, sizeof d->task_id, "%s", j->task_id);
	snprintf(d->group_id, sizeof d->group_id, "%s", w->q.group_id);
	snprintf(d->sample_id, sizeof d->sample_id, "%s", w->q.sample_id);
	snprintf(d->attempt_id, sizeof d->attempt_id, "%s#1", j->task_id);
}

static void judge_execute(pd_job *j, pd_pools *pools)
{
	(void)pools;
	judge_work *w = j->work;
	j->started_us = wall_us();
	j->attempts = 1;
	pd_judged d;
	memset(&d, 0, sizeof d);
	fill_ids(j, w, &d);
	pd_err e = {0};
	if (w->q.problem && pd_judge_prepare(w->srv->judge, w->problem, &e) < 0) {
		/* an inline checker that does not build: the request's judge material is broken */
		snprintf(d.problem_id, sizeof d.problem_id, "%s", w->problem->id);
		snprintf(d.problem_version, sizeof d.problem_version, "%s", w->problem->version);
		snprintf(d.language, sizeof d.language, "%s", w->q.language);
		d.v.process = PD_LV_NOT_AUDITED;
		d.v.failure_class = "judge_error";
		snprintf(d.error, sizeof d.error, "%s", e.msg);
		pd_verdict_decide(&d.v, &w->q.opts.rule);
	} else if (pd_judge_submit(w->srv->judge, w->problem, w->q.language, w->q.code, w->q.code_len, &w->q.opts, &d,
				   &e) < 0) {
		d.v.process = PD_LV_NOT_AUDITED;
		d.v.failure_class = "internal_error";
		snprintf(d.error, sizeof d.error, "%s", e.msg);
		pd_verdict_decide(&d.v, &w->q.opts.rule);
	}
	j->failure = failure_of(d.v.failure_class);
	snprintf(j->error, sizeof j->error, "%s", d.error);
	j->record = pd_judged_to_json(&d);
	pd_judged_free(&d);
	j->finished_us = wall_us();
}

static void judge_done(pd_job *j, void *arg)
{
	req *r = arg;
	if (j->store_errno) {
		r->retry_after = j->store_errno == ENOSPC ? 30 : 5;
		http_set_error(r, j->store_errno == ENOSPC ? 507 : 503,
			       "%sthe verdict of %s could not be recorded (%s) and was not kept: retry later",
			       j->store_errno == ENOSPC ? "disk full: " : "", j->task_id, j->store_error);
		pd_job_free(j);
		http_resume(r);
		return;
	}
	json_t *out = j->record ? json_incref(j->record) : NULL;
	if (!out) { /* never ran: its deadline passed in the queue, or the server stopped */
		judge_work *w = j->work;
		pd_judged d;
		memset(&d, 0, sizeof d);
		fill_ids(j, w, &d);
		snprintf(d.problem_id, sizeof d.problem_id, "%s", j->problem_id);
		snprintf(d.problem_version, sizeof d.problem_version, "%s", j->problem_version);
		snprintf(d.language, sizeof d.language, "%s", j->language);
		d.v.process = PD_LV_NOT_AUDITED;
		d.v.failure_class = pd_failure_name(j->failure == PD_F_NONE ? PD_F_INTERNAL : j->failure);
		snprintf(d.error, sizeof d.error, "%s", j->error);
		pd_verdict_decide(&d.v, &w->q.opts.rule);
		out = pd_judged_to_json(&d);
	}
	http_set_json(r, 200, out);
	pd_job_free(j);
	http_resume(r);
}

void judge_submit(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	pd_server *srv = r->srv;
	json_error_t je;
	json_t *body = json_loadb(r->body ? r->body : "", r->len, 0, &je);
	if (!body) {
		http_set_error(r, 400, "request body is not JSON (line %d column %d: %s)", je.line, je.column, je.text);
		return;
	}
	judge_work *w = calloc(1, sizeof *w);
	pd_err e = {0};
	int rc = w ? pd_judge_req_parse(body, &w->q, &e) : pd_fail(&e, ENOMEM, "request");
	json_decref(body);
	if (rc < 0) {
		free(w);
		http_set_error(r, 400, "%s", e.msg);
		return;
	}
	w->srv = srv;
	w->problem = w->q.problem ? w->q.problem : pd_problems_find(&srv->problems, w->q.problem_id, w->q.problem_version);
	if (!w->problem) {
		http_set_error(r, 404, "problem_id: no problem %s%s%s is loaded", w->q.problem_id,
			       w->q.problem_version[0] ? "@" : "", w->q.problem_version);
		work_free(w);
		return;
	}
	pd_job *j = pd_job_new();
	if (!j) {
		work_free(w);
		http_set_error(r, 500, "out of memory");
		return;
	}
	const pd_language *l = pd_language_find(w->q.language);
	snprintf(j->template_name, sizeof j->template_name, "%s",
		 w->problem->template_name[0] ? w->problem->template_name : l->template);
	snprintf(j->language, sizeof j->language, "%s", l->name);
	snprintf(j->problem_id, sizeof j->problem_id, "%s", w->problem->id);
	snprintf(j->problem_version, sizeof j->problem_version, "%s", w->problem->version);
	if (w->q.task_id[0]) {
		snprintf(j->task_id, sizeof j->task_id, "%s", w->q.task_id);
	} else {
		static uint64_t seq;
		snprintf(j->task_id, sizeof j->task_id, "j-%08" PRIx32 "-%" PRIu64, pd_ctx_run_id(srv->ctx),
			 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	}
	j->priority = w->q.priority;
	if (w->q.deadline_ms)
		j->deadline_us = pd_now_us() + w->q.deadline_ms * 1000;
	const char *client = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Paddock-Client");
	snprintf(j->client, sizeof j->client, "%s", client && *client ? client : "judge");
	j->execute = judge_execute;
	j->work = w;
	j->work_free = work_free;
	j->done = judge_done;
	j->done_arg = r;
	char fdwhy[300];
	if (conns_fds_short(srv, j->template_name, fdwhy, sizeof fdwhy)) {
		pd_job_free(j);
		r->retry_after = 2;
		http_set_error(r, 503, "%s", fdwhy);
		return;
	}
	http_suspend(r);
	pd_admit a = pd_sched_submit(srv->sched, j);
	if (a == PD_ADMIT_OK)
		return;
	pd_job_free(j);
	r->retry_after = pd_sched_retry_after(srv->sched);
	http_set_error(r, a == PD_ADMIT_DISK_FULL ? 507 : 503, "%s",
		       a == PD_ADMIT_FULL	  ? "queue full: retry later"
		       : a == PD_ADMIT_BREAKER	  ? "overloaded (circuit breaker open): retry later"
		       : a == PD_ADMIT_DISK_FULL ? "disk full: the results store cannot record results"
						 : "shutting down");
	pthread_mutex_lock(&srv->mu);
	MHD_resume_connection(r->conn);
	pthread_mutex_unlock(&srv->mu);
}
