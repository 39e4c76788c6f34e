/* POST /v1/judge: a submission judged against a problem loaded with --problems or an inline one
 * (docs/judge.md). On the event thread the body becomes a judge job (server/judge/jobs.c) queued on
 * the scheduler with the connection suspended; a worker judges it, the store records the judged
 * record, and judge_done answers with it. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void judge_done(pd_job *j, void *arg)
{
	req *r = arg;
	if (j->store_errno) {
		r->retry_after = j->store_errno == ENOSPC ? 30 : 5;
		http_set_error(r, j->store_errno == ENOSPC ? 507 : 503,
			       "%sthe verdict of %s could not be recorded (%s) and was not kept: retry later",
			       j->store_errno == ENOSPC ? "disk full: " : "", j->task_id, j->store_error);
	} else {
		http_set_json(r, 200, pd_judge_job_record(j));
	}
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
	pd_err e = {0};
	int status;
	pd_job *j = pd_judge_job(srv->judge, &srv->problems, body, pd_ctx_run_id(srv->ctx), &status, &e);
	json_decref(body);
	if (!j) {
		http_set_error(r, status, "%s", e.msg);
		return;
	}
	const char *client = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Paddock-Client");
	snprintf(j->client, sizeof j->client, "%s", client && *client ? client : "judge");
	j->done = judge_done;
	j->done_arg = r;
	char fdwhy[300];
	if (conns_fds_short(srv, j->template_name, fdwhy, sizeof fdwhy)) {
		pd_job_free(j);
		r->retry_after = 2;
		http_set_error(r, 503, "%s", fdwhy);
		return;
	}
	/* suspend first: the job may finish (and resume us) before submit returns */
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
