/* The session endpoints (/v1/sessions...): list and get run on the event thread (a table lookup;
 * for a session no longer held, its trajectory's last line); every other operation (create, which
 * may build a sandbox; exec; files; stat; tar; output; delete, whose close may tear the sandbox
 * down itself when the reclaim backlog is full) on a thread of its own, at most MAX_SESSION_OPS at
 * once (503 beyond), with the connection suspended until it answers. The client's bytes are parsed by
 * server/session_req.c; the sessions themselves are pool/'s (pd_session_*).
 *
 * Why a thread per operation and not a fixed worker pool like the scheduler's: a session operation
 * blocks for as long as the client asked (an exec waits up to its timeout, a tar for its archive),
 * and sessions are independent: with a small fixed pool a few clients' long execs would hold every
 * worker and queue everyone's cheap stat or file read behind them. The bound that matters, how many
 * run at once, is the same (MAX_SESSION_OPS); the cost of starting a thread is well under a
 * millisecond, small next to any operation that reaches the sandbox.
 *
 * The operations themselves are session_ops.c's, the table session_table.c's.
 *
 * s->mu guards the session table and the count of running operations; a session is closed only
 * when no operation uses it (ops), so pd_session_close never runs under s->mu. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void session_create(req *r);
static void session_delete(req *r, sess_entry *se);

static void *session_op_main(void *arg)
{
	req *r = arg;
	pd_server *s = r->srv;
	struct MHD_Connection *conn = r->conn; /* r belongs to the event thread once resumed */
	bool resumed = false; /* a download or a streamed exec resumes it as soon as it streams */
	/* /v1/sessions/<id>/<op> */
	char id[48] = "", op[32] = "";
	bool url_ok = pd_session_url(r->url, id, sizeof id, op, sizeof op) == 0;
	sess_entry *se = url_ok ? session_hold(s, id) : NULL;
	if (!strcmp(r->url, "/v1/sessions"))
		session_create(r);
	else if (!strcmp(r->url, "/v1/replay") || (url_ok && !strcmp(op, "replay")))
		replay_run(r, url_ok ? id : NULL);
	else if (!url_ok)
		http_set_error(r, 404, "no such session operation: %s %s", r->method, r->url);
	else if (!se)
		session_unknown(r, id);
	else if (!op[0] && !strcmp(r->method, "DELETE"))
		session_delete(r, se);
	else
		resumed = session_dispatch(r, se, op);
	if (s->cluster) /* its records in the broker, for the other nodes (server/cluster/sessobj.c) */
		cluster_session_step(s, resumed ? NULL : r, url_ok ? id : NULL, op, se);
	session_unhold(s, se);
	if (s->cluster && se && !op[0]) /* a DELETE's closing line, written as it let go */
		pd_cluster_session_step(s->cluster, id, NULL);
	pthread_mutex_lock(&s->mu);
	s->session_ops--;
	pthread_cond_broadcast(&s->ops_cv);
	if (!resumed)
		MHD_resume_connection(conn);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void session_async(req *r)
{
	pd_server *s = r->srv;
	pthread_mutex_lock(&s->mu);
	if (s->session_ops >= MAX_SESSION_OPS) {
		pthread_mutex_unlock(&s->mu);
		http_refuse(r, 503, 1, "too many session operations at once: retry later");
		return;
	}
	s->session_ops++;
	pthread_mutex_unlock(&s->mu);
	http_suspend(r);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, session_op_main, r) != 0) {
		pthread_mutex_lock(&s->mu);
		s->session_ops--;
		http_set_error(r, 503, "cannot start a thread: retry later");
		MHD_resume_connection(r->conn);
		pthread_mutex_unlock(&s->mu);
	}
	pthread_attr_destroy(&at);
}

/* A session create refused with status st (e says why): 503s say when to try again. */
static void create_refused(req *r, pd_session_create_req *q, int st, pd_err *e)
{
	pd_session_create_req_free(q);
	http_refuse(r, st, st == 503 ? 5 : 0, "%s", PD_ERR_STR(e));
}

static void session_create(req *r)
{
	pd_server *s = r->srv;
	pd_session_create_req q;
	pd_err e = {0};
	if (pd_session_create_parse(r->body, r->len, &q, &e) < 0) {
		http_set_error(r, 400, "%s", PD_ERR_STR(&e));
		return;
	}
	if (q.template_given && http_check_template(s, q.template_name, &e) < 0) {
		create_refused(r, &q, 400, &e);
		return;
	}
	char digest[PD_DIGEST_LEN] = "";
	if (q.image[0]) {
		/* the allowlist and the store first (a 4xx), then the (template, image) pool, whose
		 * name the session opens on */
		int st = images_check(s, q.image, digest, &e);
		char pool[64];
		if (!st && pd_pools_image(s->pools, q.template_name, q.image, pool, sizeof pool, digest, &e) < 0)
			st = e.code == EAGAIN ? 503 : 400;
		if (st) {
			create_refused(r, &q, st, &e);
			return;
		}
		snprintf(q.template_name, sizeof q.template_name, "%s", pool);
	}
	if (q.isolation[0]) {
		/* the (template or image) pool's recipe under the tier asked for, in a pool of its own */
		char pool[64];
		if (pd_pools_tier(s->pools, q.template_name, pd_isolation_parse(q.isolation), pool, sizeof pool, &e) < 0) {
			create_refused(r, &q, e.code == EAGAIN ? 503 : e.code == ENOENT ? 404 : 400, &e);
			return;
		}
		snprintf(q.template_name, sizeof q.template_name, "%s", pool);
	}
	char why[300];
	if (conns_fds_short(s, q.template_name, why, sizeof why)) {
		pd_session_create_req_free(&q);
		http_refuse(r, 503, 2, "%s", why);
		return;
	}
	unsigned n = q.count ? q.count : 1;
	json_t *list = json_array();
	int status = 0;
	for (unsigned i = 0; i < n; i++) {
		json_t *one = session_open_one(s, &q, digest, &status, &e);
		if (!one)
			break;
		json_array_append_new(list, one);
	}
	pd_session_create_req_free(&q);
	if (json_array_size(list) < n) {
		/* all or none: a group short of sessions is not the group asked for */
		size_t i;
		json_t *one;
		json_array_foreach(list, i, one) {
			char rest[80];
			snprintf(rest, sizeof rest, "/v1/sessions/%s", json_string_value(json_object_get(one, "session_id")));
			session_delete_quiet(s, rest + strlen("/v1/sessions/"));
		}
		json_decref(list);
		http_refuse(r, status ? status : 503, status == 503 ? 5 : 0, "%s", PD_ERR_STR(&e));
		return;
	}
	if (q.count)
		http_set_json(r, 201, json_pack("{s:o}", "sessions", list));
	else {
		json_t *one = json_incref(json_array_get(list, 0));
		json_decref(list);
		http_set_json(r, 201, one);
	}
}

/* DELETE /v1/sessions/<id>, on the operation's thread with se held (session_op_main): marked
 * closing, so that it is found no more, and closed by the last request using it — this one, in
 * session_unhold, before the answer is sent, unless another operation still runs in it. The close
 * hands the sandbox to the pool, whose release may destroy one sandbox on this thread when the
 * reclaim backlog is full: never on the event thread. */
static void session_delete(req *r, sess_entry *se)
{
	pd_server *s = r->srv;
	char id[sizeof se->id], uid[56] = "";
	pthread_mutex_lock(&s->mu);
	snprintf(id, sizeof id, "%s", se->id);
	if (se->s)
		pd_session_use_id(se->s, uid, sizeof uid);
	se->closing = true;
	pthread_mutex_unlock(&s->mu);
	pd_log("info", "session closed", PD_LS("session_id", id), PD_LS("use_id", uid));
	http_set_json(r, 200, json_pack("{s:s,s:b}", "session_id", id, "closed", 1));
}

static void session_list(req *r)
{
	pd_server *s = r->srv;
	json_t *arr = json_array();
	pthread_mutex_lock(&s->mu);
	uint64_t now = pd_now_us();
	for (int i = 0; i < MAX_SESSIONS; i++) {
		sess_entry *se = &s->sessions[i];
		if (!se->s)
			continue;
		char sid[40], state[32], uid[56];
		pd_session_info(se->s, sid, sizeof sid, state, sizeof state);
		pd_session_use_id(se->s, uid, sizeof uid);
		json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:b}", "session_id", se->id,
						     "sandbox_id", sid, "use_id", uid, "template", se->template_name, "state",
						     state, "created_ms", (json_int_t)se->created_ms, "expired",
						     pd_session_expired(se->s, now)));
	}
	pthread_mutex_unlock(&s->mu);
	http_set_json(r, 200, json_pack("{s:o}", "sessions", arr));
}

/* ---- entry points (routes.c) ------------------------------------------------------------------ */

void sessions_create(req *r, const char *url, const char *method)
{
	/* the pool may be empty and the sandbox made on the spot: not on the event thread (so for
	 * POST /v1/replay, which opens one and runs a trajectory's steps in it) */
	snprintf(r->url, sizeof r->url, "%s", url);
	snprintf(r->method, sizeof r->method, "%s", method);
	session_async(r);
}

void sessions_list(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	session_list(r);
}

static void session_get(req *r, const char *id)
{
	pd_server *s = r->srv;
	pthread_mutex_lock(&s->mu);
	sess_entry *se = session_find(s, id);
	json_t *o = NULL;
	if (se) {
		char sid[40], state[32], uid[56];
		pd_session_info(se->s, sid, sizeof sid, state, sizeof state);
		pd_session_use_id(se->s, uid, sizeof uid);
		o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "session_id", se->id, "sandbox_id", sid, "use_id", uid, "template",
			      se->template_name, "state", state);
	}
	pthread_mutex_unlock(&s->mu);
	if (o)
		http_set_json(r, 200, o);
	else
		session_unknown(r, id);
}

void sessions_op(req *r, const char *url, const char *method)
{
	const char *rest = url + strlen("/v1/sessions/");
	char id[48], op[32];
	if (!strcmp(method, "GET") && pd_session_url(url, id, sizeof id, op, sizeof op) == 0 &&
	    !strcmp(op, "trajectory")) {
		/* the session may have ended: the trajectory is a file of the state directory */
		trajectory_get(r, id);
	} else if (!strchr(rest, '/') && !strcmp(method, "GET")) {
		session_get(r, rest);
	} else {
		snprintf(r->url, sizeof r->url, "%s", url);
		snprintf(r->method, sizeof r->method, "%s", method);
		session_async(r);
	}
}

void sessions_drain(pd_server *s)
{
	pthread_mutex_lock(&s->mu);
	while (s->session_ops)
		pthread_cond_wait(&s->ops_cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}
