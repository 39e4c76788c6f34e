/* The run endpoints: POST /v1/runs (native), /run_code (SandboxFusion), /api/v2/execute (Piston).
 * On the event thread: the body is parsed by its API's parser (server/api/), checked against the
 * descriptor reserve, and queued on the scheduler with the connection suspended; a scheduler worker
 * runs it and calls job_done, which encodes the answer in the API's shape and resumes the
 * connection. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void job_done(pd_job *j, void *arg)
{
	req *r = arg;
	/* before j is freed: the hang-up watcher may hold it otherwise */
	hangup_unwatch(r);
	if (j->store_errno) {
		/* ran, but not recorded: answering the result would let it be lost, so it is an error the
		 * client can retry (507 for a full disk) */
		r->retry_after = j->store_errno == ENOSPC ? 30 : 5;
		http_set_error(r, j->store_errno == ENOSPC ? 507 : 503,
			  "%sthe result of %s could not be recorded (%s) and was not kept: retry later",
			  j->store_errno == ENOSPC ? "disk full: " : "", j->task_id, j->store_error);
		pd_job_free(j);
		if (r->dedupe_rid[0])
			dedupe_end(r->dedupe_rid, r);
		http_resume(r);
		return;
	}
	json_t *out = r->k == K_RUN_CODE ? pd_job_to_run_code(j) : r->k == K_PISTON ? pd_job_to_piston(j)
										    : pd_job_to_json(j);
	int status = 200;
	if (r->k == K_PISTON && j->failure == PD_F_DEPENDENCY) {
		json_decref(out);
		out = json_object();
		json_object_set_new(out, "message", pd_json_text(j->error));
		status = 400;
	}
	http_set_json(r, status, out);
	pd_job_free(j);
	if (r->dedupe_rid[0])
		dedupe_end(r->dedupe_rid, r);
	http_resume(r);
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

/* A request without deadline_ms gets the one its client most likely has: SandboxFusion's clients
 * (verl's) read for compile + run timeout + 10 s, Piston's wait for its run and compile
 * timeouts; the native API's steps have their limits (or the template's). Plus the margin
 * (--deadline-margin, 10 s by default): the sandbox's setup, the answer's way back. */
static void default_deadline(pd_server *srv, pd_job *j)
{
	if (j->deadline_us)
		return;
	const pd_template *t = pd_pools_template(srv->pools, j->template_name);
	uint64_t tw = t ? t->limits.wall_ms : 0;
	uint64_t run = j->run.wall_ms ? j->run.wall_ms : tw;
	uint64_t comp = j->compile.wall_ms ? j->compile.wall_ms : j->compile.argv ? tw : 0;
	if (!run)
		return; /* no limit on the run: no deadline can be derived */
	uint64_t margin = srv->o.deadline_margin_s ? srv->o.deadline_margin_s : 10;
	j->deadline_us = pd_now_us() + (run + comp + margin * 1000) * 1000;
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

static const char *const kind_names[] = {"native", "native", "run_code", "piston"};

/* Refused as an unknown language is, naming the field and what there is, rather than answered 200
 * with the XX record of a run that never was. The network twins ("<name>.net-<mode>") are picked
 * by "network", so not listed. */
int http_check_template(pd_server *srv, const char *name, pd_err *e)
{
	if (!srv->pools || pd_pools_template(srv->pools, name))
		return 0;
	char names[512] = "";
	size_t used = 0;
	for (size_t i = 0; i < srv->ntpl && used < sizeof names; i++)
		if (!strstr(srv->tpl[i].name, ".net-"))
			used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
						 srv->tpl[i].name);
	return pd_refuse(e, "template: '%s' is not a template of this daemon (%s)", name, names);
}

void runs_submit(req *r, kind k)
{
	r->k = k;
	json_error_t je;
	json_t *body = json_loadb(r->body ? r->body : "", r->len, 0, &je);
	if (!body) {
		http_set_error(r, 400, "request body is not JSON (line %d column %d: %s)", je.line, je.column, je.text);
		return;
	}
	pd_err e = {0};
	pd_job *j = k == K_RUN_CODE ? pd_job_from_run_code(body, &e)
		    : k == K_PISTON ? pd_job_from_piston(body, &e)
				    : pd_job_from_native(body, &e);
	/* cluster mode: the request id is the client's (X-Request-Id, else the body's request_id),
	 * or one made here */
	char rid[128] = "";
	const char *hid = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
	const char *bid = json_string_value(json_object_get(body, "request_id"));
	snprintf(rid, sizeof rid, "%s", hid && *hid ? hid : bid ? bid : "");
	/* the client's own choice; a language's template is the daemon's, and its absence from a
	 * templates file stays a dependency_missing record */
	bool named = k == K_NATIVE && json_object_get(body, "template");
	/* a task_id sent with "idempotent": true names one run, as a request id does */
	json_t *tid = json_object_get(body, "task_id");
	bool idem = json_is_true(json_object_get(body, "idempotent")) && json_is_string(tid) && json_string_length(tid);
	char idem_rid[128] = "";
	if (idem)
		snprintf(idem_rid, sizeof idem_rid, "task:%s", json_string_value(tid));
	json_decref(body);
	if (j && named && http_check_template(r->srv, j->template_name, &e) < 0) {
		pd_job_free(j);
		j = NULL;
	}
	if (!j) {
		http_set_error(r, 400, "%s", PD_ERR_STR(&e));
		return;
	}
	if (k == K_NATIVE) /* output past what the record keeps: GET /v1/runs/{task_id}/output */
		j->output_dir = r->srv->output_dir;
	if (j->image[0]) {
		int st = images_check(r->srv, j->image, j->image_digest, &e);
		if (st) {
			pd_job_free(j);
			http_set_error(r, st, "%s", PD_ERR_STR(&e));
			return;
		}
	}
	if (j->isolation[0] && pd_pools_tier_allowed(r->srv->pools, j->template_name, pd_isolation_parse(j->isolation), &e) < 0) {
		pd_job_free(j);
		http_set_error(r, e.code == ENOENT ? 404 : 400, "%s", PD_ERR_STR(&e));
		return;
	}
	/* a policy that would widen the template's is the client's error, said now (400 naming the
	 * field), not a record of a run that never was; before a cluster hands it on, as the nodes
	 * share the templates */
	if (r->srv->pools && pd_job_audit_policy(j, pd_pools_template(r->srv->pools, j->template_name), &e) < 0) {
		pd_job_free(j);
		http_set_error(r, 400, "%s", PD_ERR_STR(&e));
		return;
	}
	if (r->srv->cluster) {
		/* refused requests were answered above, here; the rest runs where the cluster has room */
		char tpl[64];
		snprintf(tpl, sizeof tpl, "%s", j->template_name);
		pd_job_free(j);
		if (!rid[0]) {
			pd_new_id(rid, sizeof rid, pd_ctx_run_id(r->srv->ctx), "r-%s", pd_cluster_node_id(r->srv->cluster));
		}
		http_suspend(r);
		pd_cluster_submit(r->srv->cluster, kind_names[k], tpl, r->body ? r->body : "", r->len, rid, cluster_answer, r);
		return;
	}
	if (!j->task_id[0]) {
		pd_new_id(j->task_id, sizeof j->task_id, pd_ctx_run_id(r->srv->ctx), "t");
	}
	char fdwhy[300];
	if (conns_fds_short(r->srv, j->template_name, fdwhy, sizeof fdwhy)) {
		pd_job_free(j);
		r->retry_after = 2;
		http_set_error(r, k == K_RUN_CODE ? 504 : 503, "%s", fdwhy);
		return;
	}
	int rst = 0;
	if (!run_controls(r->srv, j, &rst, &e)) {
		pd_job_free(j);
		http_set_error(r, rst, "%s", PD_ERR_STR(&e));
		return;
	}
	char netwhy[200];
	if (netmodes_pick(r->srv, j, netwhy, sizeof netwhy) < 0) {
		pd_job_free(j);
		http_set_error(r, 400, "%s", netwhy);
		return;
	}
	client_of(r->conn, j->client, sizeof j->client);
	default_deadline(r->srv, j);
	/* Piston's memory failure is the kernel's OOM kill: SG, SIGKILL, "memory limit exceeded" */
	j->mem_fast_off = k == K_PISTON;
	if (k == K_RUN_CODE) {
		/* SandboxFusion keeps a program's whole output and judges it by its exit status */
		uint64_t cap = r->srv->o.run_code_output_max ? r->srv->o.run_code_output_max : 16u << 20;
		j->run.keep_whole = j->compile.keep_whole = cap;
	}
	j->done = job_done;
	j->done_arg = r;
	/* one run per request id (dedupe.c): the same id again, while this one runs or after, gets
	 * its answer instead of a second run */
	const char *guard = rid[0] ? rid : idem_rid;
	if (guard[0]) {
		snprintf(j->request_id, sizeof j->request_id, "%s", guard);
		int d = dedupe_begin(r, guard);
		if (d) {
			pd_job_free(j);
			return;
		}
		snprintf(r->dedupe_rid, sizeof r->dedupe_rid, "%s", guard);
	}
	/* suspend first: the job may finish (and resume us) before submit returns; watched for the
	 * same reason before it is queued */
	http_suspend(r);
	hangup_watch(r, j);
	pd_admit a = pd_sched_submit(r->srv->sched, j);
	if (a == PD_ADMIT_OK)
		return;
	hangup_unwatch(r);
	r->retry_after = j->retry_after_s ? j->retry_after_s : 1;
	pd_job_free(j);
	/* verl's SandboxFusion client retries on 504 only: overload must say 504 there */
	int code = k == K_RUN_CODE ? 504 : 503;
	char why[600];
	if (a == PD_ADMIT_DISK_FULL) {
		/* not an overload to retry at once: the operator must free space */
		code = 507;
		r->retry_after = 30;
		if (!pd_store_full(r->srv->store, why, sizeof why))
			snprintf(why, sizeof why, "disk full: the results store cannot record results");
	}
	http_set_error(r, code, "%s", a == PD_ADMIT_DISK_FULL ? why : pd_admit_text(a));
	if (r->dedupe_rid[0])
		dedupe_end(r->dedupe_rid, r);
	pd_server *srv = r->srv;
	pthread_mutex_lock(&srv->mu);
	MHD_resume_connection(r->conn);
	pthread_mutex_unlock(&srv->mu);
}
