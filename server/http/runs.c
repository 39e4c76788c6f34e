/* The run endpoints: POST /v1/runs (native), /run_code (SandboxFusion), /api/v2/execute (Piston).
 * On the event thread: the body goes through the intake (server/intake.c: its API's parser and
 * every admission rule), is checked against the descriptor reserve, and queued on the scheduler
 * with the connection suspended; a scheduler worker runs it and calls job_done, which renders the
 * answer by its API's row and resumes the connection. In cluster mode it is handed on instead. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The end of a job's answer: the job freed, the same request id's waiters answered (dedupe.c),
 * the connection handed back. */
static void runs_end(req *r, pd_job *j)
{
	pd_job_free(j);
	if (r->dedupe_rid[0])
		dedupe_end(r->dedupe_rid, r);
	http_resume(r);
}

void runs_answer(req *r, const pd_api *api, pd_job *j)
{
	/* before j is freed: the hang-up watcher may hold it otherwise */
	hangup_unwatch(r);
	if (j->store_errno) {
		/* ran, but not recorded: answering the result would let it be lost, so it is an error the
		 * client can retry (507 for a full disk) */
		bool full = j->store_errno == ENOSPC;
		http_refuse(r, full ? 507 : 503, full ? 30 : 5,
			    "%sthe %s of %s could not be recorded (%s) and was not kept: retry later",
			    full ? "disk full: " : "", api->judged ? "verdict" : "result", j->task_id, j->store_error);
	} else {
		int status;
		json_t *out = api->render(j, &status);
		http_set_json(r, status, out);
	}
	runs_end(r, j);
}

static void job_done(pd_job *j, void *arg)
{
	req *r = arg;
	runs_answer(r, r->api, j);
}

static const char *client_of(struct MHD_Connection *c, char *buf, size_t len)
{
	const char *id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Paddock-Client");
	if (id && *id) {
		snprintf(buf, len, "%s", id);
		return buf;
	}
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	buf[0] = 0;
	if (ci && ci->client_addr) {
		if (ci->client_addr->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)ci->client_addr)->sin_addr, buf,
				  (socklen_t)len);
		else if (ci->client_addr->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)ci->client_addr)->sin6_addr,
				  buf, (socklen_t)len);
	}
	if (!buf[0])
		snprintf(buf, len, "local");
	return buf;
}

/* A cluster's answer (a cluster thread): the first result of the request id, whichever node ran
 * it. */
void cluster_answer(void *arg, int status, const char *body, size_t len, unsigned retry_after)
{
	req *r = arg;
	char *copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, body, len);
		copy[len] = 0;
		http_set_resp(r, status, "application/json", copy, len);
	} else {
		http_set_error(r, 503, "out of memory");
	}
	r->retry_after = retry_after;
	http_resume(r);
}

/* The intake's hooks into this daemon's own checks (intake.h), and its rules' state. */
static int image_hook(void *arg, const char *ref, char digest[PD_DIGEST_LEN], pd_err *e)
{
	return images_check(arg, ref, digest, e);
}

static int network_hook(void *arg, pd_job *j, char *why, size_t len)
{
	return netmodes_pick(arg, j, why, len);
}

void runs_intake_init(pd_server *s)
{
	s->intake = (pd_intake){.pools = s->pools, .sched = s->sched, .store = s->store, .caps = s->caps,
				.judge = s->judge, .problems = &s->problems, .ctx = s->ctx, .tpl = s->tpl,
				.ntpl = s->ntpl, .self = "daemon", .output_dir = s->output_dir,
				.run_code_output_max = s->o.run_code_output_max,
				.deadline_margin_s = s->o.deadline_margin_s ? s->o.deadline_margin_s : 10,
				.image_check = image_hook, .network_pick = network_hook, .arg = s};
}

int http_check_template(pd_server *srv, const char *name, pd_err *e)
{
	return pd_intake_template(&srv->intake, name, e);
}

/* Cluster mode: the request, checked here as a local one is, runs where the cluster has room
 * (the node that takes it checks it again: intake.h); the same request id answers the first
 * result. */
static void runs_to_cluster(req *r, const pd_api *api, pd_job *j, char *rid, size_t ridlen)
{
	char tpl[64];
	snprintf(tpl, sizeof tpl, "%s", j->template_name);
	/* a network twin is the node's own pick (netmodes.c): the work goes to the template's queue */
	char *twin = j->network[0] ? strstr(tpl, ".net-") : NULL;
	if (twin)
		*twin = 0;
	pd_job_free(j);
	if (!rid[0]) {
		pd_new_id(rid, ridlen, pd_ctx_run_id(r->srv->ctx), "r-%s", pd_cluster_node_id(r->srv->cluster));
	}
	http_suspend(r);
	pd_cluster_submit(r->srv->cluster, api->name, tpl, r->body ? r->body : "", r->len, rid, cluster_answer, r);
}

void runs_admit(req *r, const pd_api *api, pd_job *j)
{
	/* suspend first: the job may finish (and resume us) before submit returns; watched for the
	 * same reason before it is queued */
	http_suspend(r);
	hangup_watch(r, j);
	int code;
	unsigned ra;
	char why[600];
	if (pd_intake_admit(&r->srv->intake, api, j, &code, &ra, why, sizeof why) == PD_ADMIT_OK)
		return;
	hangup_unwatch(r);
	http_refuse(r, code, ra, "%s", why);
	runs_end(r, j);
}

void runs_submit(req *r, const pd_api *api)
{
	r->api = api;
	json_error_t je;
	json_t *body = json_loadb(r->body ? r->body : "", r->len, 0, &je);
	if (!body) {
		http_set_error(r, 400, "request body is not JSON (line %d column %d: %s)", je.line, je.column, je.text);
		return;
	}
	/* cluster mode: the request id is the client's (X-Request-Id, else the body's request_id),
	 * or one made here */
	char rid[128] = "";
	const char *hid = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
	const char *bid = json_string_value(json_object_get(body, "request_id"));
	snprintf(rid, sizeof rid, "%s", hid && *hid ? hid : bid ? bid : "");
	/* a task_id sent with "idempotent": true names one run, as a request id does */
	json_t *tid = json_object_get(body, "task_id");
	bool idem = json_is_true(json_object_get(body, "idempotent")) && json_is_string(tid) && json_string_length(tid);
	char idem_rid[128] = "";
	if (idem)
		snprintf(idem_rid, sizeof idem_rid, "task:%s", json_string_value(tid));
	pd_err e = {0};
	int status;
	unsigned ra;
	pd_job *j = pd_intake_check(&r->srv->intake, api, body, PD_INTAKE_CLIENT, 0, &status, &ra, &e);
	json_decref(body);
	if (!j) {
		http_refuse(r, status, ra, "%s", PD_ERR_STR(&e));
		return;
	}
	if (r->srv->cluster) {
		runs_to_cluster(r, api, j, rid, sizeof rid);
		return;
	}
	if (!j->task_id[0]) {
		pd_new_id(j->task_id, sizeof j->task_id, pd_ctx_run_id(r->srv->ctx), "t");
	}
	char fdwhy[300];
	if (conns_fds_short(r->srv, j->template_name, fdwhy, sizeof fdwhy)) {
		pd_job_free(j);
		http_refuse(r, api->overload_status, 2, "%s", fdwhy);
		return;
	}
	client_of(r->conn, j->client, sizeof j->client);
	j->done = job_done;
	j->done_arg = r;
	/* one run per request id (dedupe.c): the same id again, while this one runs or after, gets
	 * its answer instead of a second run */
	const char *guard = rid[0] ? rid : idem_rid;
	if (guard[0]) {
		snprintf(j->request_id, sizeof j->request_id, "%s", guard);
		if (dedupe_begin(r, guard)) {
			pd_job_free(j);
			return;
		}
		snprintf(r->dedupe_rid, sizeof r->dedupe_rid, "%s", guard);
	}
	runs_admit(r, api, j);
}
