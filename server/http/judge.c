/* POST /v1/judge: a submission judged against a problem loaded with --problems or an inline one
 * (docs/judge.md). On the event thread the body becomes a judge job (server/judge/jobs.c) queued on
 * the scheduler with the connection suspended; a worker judges it, the store records the judged
 * record, and judge_done answers with it. The batch form ({"submissions": [...]} with fields shared
 * by all) queues one job per submission and answers {"results": [...]} in order once all are done. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void judge_done(pd_job *j, void *arg)
{
	req *r = arg;
	/* before j is freed: the hang-up watcher may hold it otherwise */
	hangup_unwatch(r);
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

/* ---- the batch form: {"submissions": [...], shared fields} answered as one array ---- */

#define BATCH_MAX 1024

typedef struct batch {
	req *r;
	pthread_mutex_t mu;
	size_t pending;
	json_t *results; /* one slot per submission, in order */
} batch;

typedef struct batch_slot {
	batch *b;
	size_t i;
} batch_slot;

/* Fills slot i; the last one answers the request. */
static void batch_put(batch *b, size_t i, json_t *rec)
{
	pthread_mutex_lock(&b->mu);
	json_array_set_new(b->results, i, rec);
	bool last = --b->pending == 0;
	pthread_mutex_unlock(&b->mu);
	if (!last)
		return;
	req *r = b->r;
	http_set_json(r, 200, json_pack("{s:o}", "results", b->results));
	pthread_mutex_destroy(&b->mu);
	free(b);
	http_resume(r);
}

static void batch_done(pd_job *j, void *arg)
{
	batch_slot *s = arg;
	json_t *rec = j->store_errno ? json_pack("{s:s,s:s,s:n}", "task_id", j->task_id, "error",
						 "the verdict could not be recorded: retry later", "reward")
				     : pd_judge_job_record(j);
	batch *b = s->b;
	size_t i = s->i;
	free(s);
	pd_job_free(j);
	batch_put(b, i, rec);
}

/* Every submission is a request of its own with the batch's shared fields (those it does not set
 * itself); all are parsed before any runs, so a bad one refuses the batch, naming it. */
static void judge_batch(req *r, json_t *body)
{
	pd_server *srv = r->srv;
	json_t *subs = json_object_get(body, "submissions");
	size_t n = json_array_size(subs);
	if (!json_is_array(subs) || !n || n > BATCH_MAX) {
		http_set_error(r, 400, "submissions: must be a list of 1 to %d judge requests", BATCH_MAX);
		return;
	}
	pd_job **jobs = calloc(n, sizeof *jobs);
	if (!jobs) {
		http_set_error(r, 500, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *one = json_deep_copy(json_array_get(subs, i));
		const char *k;
		json_t *v;
		if (json_is_object(one))
			json_object_foreach(body, k, v)
				if (strcmp(k, "submissions") && !json_object_get(one, k))
					json_object_set(one, k, v);
		pd_err e = {0};
		int status;
		jobs[i] = pd_judge_job(srv->judge, &srv->problems, one, pd_ctx_run_id(srv->ctx), &status, &e);
		json_decref(one);
		char digest[PD_DIGEST_LEN];
		if (jobs[i] && jobs[i]->image[0] && (status = images_check(srv, jobs[i]->image, digest, &e)) != 0) {
			pd_job_free(jobs[i]);
			jobs[i] = NULL;
		}
		/* the caps count every submission; a batch refused gives back what it took */
		unsigned ra = 0;
		if (jobs[i] && !judge_controls(srv, jobs[i], &status, &ra, &e)) {
			pd_job_free(jobs[i]);
			jobs[i] = NULL;
		}
		if (!jobs[i]) {
			for (size_t k2 = 0; k2 < i; k2++) {
				pd_caps_give_back(srv->caps, jobs[k2]->problem_id, 1);
				pd_job_free(jobs[k2]);
			}
			free(jobs);
			r->retry_after = ra;
			http_set_error(r, status, "submissions[%zu]: %s", i, e.msg);
			return;
		}
	}
	batch *b = calloc(1, sizeof *b);
	b->r = r;
	b->pending = n;
	b->results = json_array();
	pthread_mutex_init(&b->mu, NULL);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(b->results, json_null());
	const char *client = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Paddock-Client");
	http_suspend(r);
	for (size_t i = 0; i < n; i++) {
		pd_job *j = jobs[i];
		snprintf(j->client, sizeof j->client, "%s", client && *client ? client : "judge");
		batch_slot *s = malloc(sizeof *s);
		s->b = b;
		s->i = i;
		j->done = batch_done;
		j->done_arg = s;
		pd_admit a = pd_sched_submit(srv->sched, j);
		if (a != PD_ADMIT_OK) {
			/* the others still run: this one's slot says why it did not */
			json_t *rec = json_pack("{s:s,s:s,s:n}", "task_id", j->task_id, "error",
						a == PD_ADMIT_FULL ? "queue full: retry later" : "not admitted: retry later",
						"reward");
			free(s);
			pd_job_free(j);
			batch_put(b, i, rec);
		}
	}
	free(jobs);
}

pd_job *judge_job_for_cluster(void *arg, json_t *body, int *status, pd_err *e)
{
	pd_server *srv = arg;
	return pd_judge_job(srv->judge, &srv->problems, body, pd_ctx_run_id(srv->ctx), status, e);
}

/* Cluster mode: the request, refused here when it is bad, runs on a node with room, as runs do
 * (runs.c); the same request id answers the first verdict. */
static void judge_to_cluster(req *r, pd_job *j)
{
	char rid[128];
	const char *hid = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
	if (hid && *hid) {
		snprintf(rid, sizeof rid, "%s", hid);
	} else {
		static uint64_t seq;
		snprintf(rid, sizeof rid, "j-%s-%08" PRIx32 "-%" PRIu64, pd_cluster_node_id(r->srv->cluster),
			 pd_ctx_run_id(r->srv->ctx), __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	}
	char tpl[64];
	snprintf(tpl, sizeof tpl, "%s", j->template_name);
	pd_job_free(j);
	http_suspend(r);
	pd_cluster_submit(r->srv->cluster, "judge", tpl, r->body ? r->body : "", r->len, rid, cluster_answer, r);
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
	if (json_object_get(body, "submissions")) {
		judge_batch(r, body);
		json_decref(body);
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
	char digest[PD_DIGEST_LEN];
	if (j->image[0] && (status = images_check(srv, j->image, digest, &e)) != 0) {
		pd_job_free(j);
		http_set_error(r, status, "%s", e.msg);
		return;
	}
	unsigned ra = 0;
	if (!judge_controls(srv, j, &status, &ra, &e)) {
		pd_job_free(j);
		r->retry_after = ra;
		http_set_error(r, status, "%s", e.msg);
		return;
	}
	if (srv->cluster) {
		judge_to_cluster(r, j);
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
	/* suspend first: the job may finish (and resume us) before submit returns; watched for
	 * hang-ups before it is queued, for the same reason */
	http_suspend(r);
	hangup_watch(r, j);
	pd_admit a = pd_sched_submit(srv->sched, j);
	if (a == PD_ADMIT_OK)
		return;
	hangup_unwatch(r);
	r->retry_after = j->retry_after_s ? j->retry_after_s : 1;
	pd_job_free(j);
	http_set_error(r, a == PD_ADMIT_DISK_FULL ? 507 : 503, "%s",
		       a == PD_ADMIT_FULL	  ? "queue full: retry later"
		       : a == PD_ADMIT_BREAKER	  ? "circuit breaker open (sandboxes are failing to start): retry later"
		       : a == PD_ADMIT_DEADLINE  ? "overloaded: the work queued ahead would not let this request "
						   "finish before its deadline: retry later"
		       : a == PD_ADMIT_MEMORY	  ? "overloaded: the host is short of free memory: retry later"
		       : a == PD_ADMIT_DISK_FULL ? "disk full: the results store cannot record results"
						 : "shutting down");
	pthread_mutex_lock(&srv->mu);
	MHD_resume_connection(r->conn);
	pthread_mutex_unlock(&srv->mu);
}
