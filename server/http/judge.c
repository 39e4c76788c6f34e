/* POST /v1/judge: a submission judged against a problem loaded with --problems or an inline one
 * (docs/judge.md). On the event thread the body becomes a judge job through the intake
 * (server/intake.c: the judge's parser, server/judge/jobs.c, and every admission rule) queued on
 * the scheduler with the connection suspended; a worker judges it, the store records the judged
 * record, and judge_done answers with it. Admission and the answer are a run's (runs_admit,
 * runs_answer: runs.c), by the judge's row. The batch form ({"submissions": [...]}) is judge_batch.c's. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void judge_done(pd_job *j, void *arg)
{
	runs_answer(arg, &pd_api_judge, j);
}

/* Cluster mode: the request, refused here when it is bad, runs on a node with room, as runs do
 * (runs.c; the node checks it again); the same request id answers the first verdict. */
static void judge_to_cluster(req *r, pd_job *j)
{
	char rid[128];
	const char *hid = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
	if (hid && *hid) {
		snprintf(rid, sizeof rid, "%s", hid);
	} else {
		pd_new_id(rid, sizeof rid, pd_ctx_run_id(r->srv->ctx), "j-%s", pd_cluster_node_id(r->srv->cluster));
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
	unsigned ra;
	pd_job *j = pd_intake_check(&srv->intake, &pd_api_judge, body, PD_INTAKE_CLIENT, 0, &status, &ra, &e);
	json_decref(body);
	if (!j) {
		http_refuse(r, status, ra, "%s", PD_ERR_STR(&e));
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
		http_refuse(r, 503, 2, "%s", fdwhy);
		return;
	}
	/* one judged attempt per request id (dedupe.c): a retry gets the first verdict */
	const char *hid = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
	if (hid && *hid) {
		snprintf(j->request_id, sizeof j->request_id, "%s", hid);
		if (dedupe_begin(r, hid)) {
			pd_job_free(j);
			return;
		}
		snprintf(r->dedupe_rid, sizeof r->dedupe_rid, "%s", hid);
	}
	runs_admit(r, &pd_api_judge, j);
}
