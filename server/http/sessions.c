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
 * s->mu guards the session table and the count of running operations; a session is closed only
 * when no operation uses it (ops), so pd_session_close never runs under s->mu. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static sess_entry *find_session(pd_server *s, const char *id)
{
	for (int i = 0; i < MAX_SESSIONS; i++)
		if (s->sessions[i].s && !s->sessions[i].closing && !strcmp(s->sessions[i].id, id))
			return &s->sessions[i];
	return NULL;
}

/* The step's request id: X-Request-Id, or the request_id parameter (but for /output, where it
 * names the exec whose output is asked for). */
static const char *step_id(req *r)
{
	return r->q.step_id[0] ? r->q.step_id : r->q.request_id[0] ? r->q.request_id : NULL;
}

static json_t *digest_json(const void *data, size_t len)
{
	char hex[65];
	return pd_sha256_of(data, len, hex) == 0 ? json_string(hex) : json_null();
}

json_t *session_exec_fast_forward(sess_entry *se, const char *rid)
{
	json_t *ff = rid ? pd_session_fast_forward(se->s, "exec", rid) : NULL;
	if (ff) {
		/* recorded by the trajectory this session resumes: answered from it, not run */
		json_object_set_new(ff, "session_id", json_string(se->id));
		json_object_set_new(ff, "request_id", json_string(rid));
		json_object_set_new(ff, "fast_forward", json_true());
	}
	return ff;
}

int session_exec_status(const pd_err *e)
{
	return e->code == EBUSY || e->code == EDQUOT ? 409 : e->code == ESRCH ? 410 : 400;
}

json_t *session_exec_answer(sess_entry *se, const pd_session_exec_req *q, const pd_session_step *st,
			    pd_result *res)
{
	/* the process level of this exec, first: its output is evidence too */
	pd_audit_verdict v = q->verdict;
	if (q->audit && !q->evaluated)
		pd_audit_evaluate(q->audit, res, NULL, &v);
	if (se->image_name[0]) /* the session's pool is per digest: the name is the one it was opened by */
		snprintf(res->image_name, sizeof res->image_name, "%s", se->image_name);
	json_t *o = pd_result_json(res, true);
	if (!o)
		return NULL;
	if (q->audit) {
		json_t *vo = pd_audit_verdict_json(&v);
		json_object_set_new(o, "process", vo ? vo : json_null());
	}
	json_object_set_new(o, "session_id", json_string(se->id));
	json_object_set_new(o, "template_version", se->template_version[0] ? json_string(se->template_version) : json_null());
	/* without a client id, the exec is recorded as "#<n>": say which, for /output */
	json_object_set_new(o, "request_id", json_string(st->output_request_id));
	if (st->ran_by[0]) /* several agents in the session: whose step it was */
		json_object_set_new(o, "agent", json_string(st->ran_by));
	char *noise = pd_session_noise_of(se->s, st->output_request_id);
	if (noise)
		json_object_set_new(o, "noise", json_loads(noise, 0, NULL));
	free(noise);
	return o;
}

int session_exec_policy(pd_server *srv, sess_entry *se, pd_session_exec_req *q, pd_err *e)
{
	const pd_template *t = srv->pools ? pd_pools_template(srv->pools, se->template_name) : NULL;
	int rc = pd_audit_policy_effective(t ? t->audit : NULL, &q->audit, e);
	if (rc > 0)
		q->x.audit = pd_audit_policy_opts(q->audit);
	return rc < 0 ? -1 : 0;
}

/* The hang-up watcher's call (its thread, under srv->mu): the step's client left */
static void step_client_gone(void *arg, bool fired)
{
	if (fired)
		atomic_store((_Atomic bool *)arg, true);
}

/* Returns true when the connection was resumed here (a streamed answer). */
static bool session_exec(req *r, sess_entry *se)
{
	pd_session_exec_req q;
	pd_err e = {0};
	bool resumed = false;
	if (pd_session_exec_parse(r->body, r->len, &q, &e) < 0) {
		http_set_error(r, 400, "%s", PD_ERR_STR(&e));
		return false;
	}
	/* the template's policy, as for a run: mandatory, and a request may only tighten it */
	if (session_exec_policy(r->srv, se, &q, &e) < 0) {
		http_set_error(r, 400, "%s", PD_ERR_STR(&e));
		goto out;
	}
	const char *rid = q.request_id ? q.request_id : step_id(r);
	if (q.stream) {
		resumed = session_exec_stream(r, se, &q, rid);
		goto out;
	}
	json_t *ff = session_exec_fast_forward(se, rid);
	if (ff) {
		http_set_json(r, 200, ff);
		goto out;
	}
	/* A client that leaves cancels its step: the program (its sessions only) is killed, the
	 * session goes on, the trajectory's step says cancelled. The connection stays suspended until
	 * this returns, so r and `gone` outlive the watch. (A streamed step's request outlives this
	 * frame: its stream cancels it when a line finds the client gone, exec_stream.c.) */
	_Atomic bool gone = false;
	bool watched = r->conn != NULL; /* a replayed step (replay.c) has no client connection */
	if (watched) {
		hangup_watch_fn(r, step_client_gone, &gone);
		q.x.cancel = &gone;
	}
	/* the episode's rules: a denied command refused before it runs, flags in the answer and line */
	step_rules sr = {.srv = r->srv, .se = se};
	if (session_rules_before(r, se, &q, rid, &sr)) {
		if (watched)
			hangup_unwatch(r);
		goto out;
	}
	pd_result res;
	pd_session_step st = {.agent = q.agent, .fn = se->rules ? session_rules_after : NULL, .fn_arg = &sr};
	int rc = pd_session_exec_step(se->s, &q.x, q.audit, rid, &st, &res, &q.verdict, &e);
	q.evaluated = rc == 0 && q.audit;
	if (watched)
		hangup_unwatch(r);
	if (atomic_load(&gone))
		__atomic_add_fetch(&r->srv->steps_cancelled, 1, __ATOMIC_RELAXED);
	if (rc < 0 && e.code == EDQUOT) {
		/* past the episode's budget: the error names it, the session stays readable */
		json_t *b = pd_session_budget_json(se->s);
		json_object_set_new(b, "error", pd_json_text(PD_ERR_STR(&e)));
		json_object_set_new(b, "session_id", json_string(se->id));
		http_set_json(r, 409, b);
		goto out;
	}
	if (rc < 0) {
		http_set_error(r, session_exec_status(&e), "%s", PD_ERR_STR(&e));
		goto out;
	}
	json_t *o = session_exec_answer(se, &q, &st, &res);
	if (o && se->rules)
		json_object_set_new(o, "flags", pd_rules_flags_json(sr.flags));
	pd_result_free(&res);
	if (o)
		http_set_json(r, 200, o);
	else
		http_set_error(r, 500, "out of memory for the result");
out:
	pd_session_exec_req_free(&q);
	return resumed;
}

/* 409 while another request uses the session, 410 once it has ended */
static bool session_enter(req *r, sess_entry *se)
{
	pd_err e = {0};
	if (pd_session_begin(se->s, &e) == 0)
		return true;
	http_set_error(r, e.code == EBUSY ? 409 : 410, "%s", PD_ERR_STR(&e));
	return false;
}

static void session_files_in(req *r, sess_entry *se);
static void record_files_step(req *r, sess_entry *se, uint64_t t0);

static void session_files(req *r, sess_entry *se)
{
	if (!*r->q.path) {
		http_set_error(r, 400, "path: required (?path=/work/file)");
		return;
	}
	const char *step_kind = !strcmp(r->method, "PUT") ? "write" : !strcmp(r->method, "DELETE") ? "delete" : NULL;
	json_t *ff = step_kind && step_id(r) ? pd_session_fast_forward(se->s, step_kind, step_id(r)) : NULL;
	if (ff) {
		json_object_set_new(ff, "fast_forward", json_true());
		http_set_json(r, 200, ff);
		return;
	}
	if (!session_enter(r, se))
		return;
	uint64_t t0 = pd_wall_us();
	session_files_in(r, se);
	record_files_step(r, se, t0);
	pd_session_end(se->s);
}

/* The trajectory's line for a file step: writes, deletes and reads of a regular file (listings
 * and stats change nothing and are not steps) */
static void record_files_step(req *r, sess_entry *se, uint64_t t0)
{
	const char *step_kind = !strcmp(r->method, "PUT")	  ? "write"
			   : !strcmp(r->method, "DELETE") ? "delete"
			   : r->resp_from_fd		  ? "read"
							  : NULL;
	if (!step_kind)
		return;
	json_t *action = json_pack("{s:o}", "path", pd_json_text(r->q.path));
	if (!strcmp(step_kind, "write")) {
		json_object_set_new(action, "bytes", json_integer((json_int_t)r->len));
		json_object_set_new(action, "sha256", digest_json(r->body ? r->body : "", r->len));
		/* the content itself up to a cap, for a replay to write it again */
		if (r->len <= (64u << 10)) {
			char *b64 = pd_b64_encode(r->body ? r->body : "", r->len);
			json_object_set_new(action, "content_b64", b64 ? json_string(b64) : json_null());
			free(b64);
		}
	}
	json_t *obs = json_pack("{s:i}", "http_status", r->status);
	if (r->status >= 400 && r->resp)
		json_object_set_new(obs, "error", json_loadb(r->resp, r->resp_len, 0, NULL));
	if (!strcmp(step_kind, "read") && r->status == 200) {
		/* the digest of what is sent: read from the descriptor, which is sent from its start */
		char hex[65];
		if (pd_session_digest_fd(r->resp_fd, hex) == 0)
			json_object_set_new(obs, "sha256", json_string(hex));
		json_object_set_new(obs, "bytes", json_integer((json_int_t)r->resp_fd_len));
	}
	pd_err e = {0};
	pd_session_record(se->s, step_kind, step_id(r), t0, action, obs, &e);
}

static void session_files_in(req *r, sess_entry *se)
{
	pd_sandbox *sb = pd_session_sandbox(se->s);
	pd_err e = {0};
	const char *path = r->q.path;
	if (!strcmp(r->method, "PUT")) {
		char dir[1024];
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = 0;
			pd_sandbox_mkdir(sb, dir, 0755, NULL);
		}
		if (pd_sandbox_write_file(sb, path, r->body ? r->body : "", r->len, 0644, &e) < 0)
			http_set_error(r, e.code == ENOSPC ? 507 : 400, "%s", PD_ERR_STR(&e));
		else
			http_set_json(r, 200, json_pack("{s:o,s:I}", "path", pd_json_text(path), "bytes", (json_int_t)r->len));
	} else if (!strcmp(r->method, "DELETE")) {
		if (pd_sandbox_remove(sb, path, &e) < 0)
			http_set_error(r, e.code == ENOENT ? 404 : 400, "%s", PD_ERR_STR(&e));
		else
			http_set_json(r, 200, json_pack("{s:o,s:b}", "path", pd_json_text(path), "deleted", 1));
	} else {
		struct stat st;
		if (pd_sandbox_stat(sb, path, &st, &e) < 0) {
			http_set_error(r, e.code == ENOENT ? 404 : 400, "%s", PD_ERR_STR(&e));
			return;
		}
		if (S_ISDIR(st.st_mode) || r->q.list) {
			pd_dirent *d;
			size_t n;
			if (pd_sandbox_list(sb, path, &d, &n, &e) < 0) {
				http_set_error(r, 400, "%s", PD_ERR_STR(&e));
				return;
			}
			json_t *arr = json_array();
			for (size_t i = 0; i < n; i++)
				json_array_append_new(arr, json_pack("{s:o,s:s,s:I,s:o,s:I}", "name", pd_json_text(d[i].name), "type",
								     S_ISDIR(d[i].mode)   ? "dir"
								     : S_ISLNK(d[i].mode) ? "symlink"
								     : S_ISREG(d[i].mode) ? "file"
											  : "other",
								     "size", (json_int_t)d[i].size, "mode",
								     json_integer(d[i].mode & 07777), "mtime",
								     (json_int_t)d[i].mtime));
			free(d);
			http_set_json(r, 200, json_pack("{s:o,s:o}", "path", pd_json_text(path), "entries", arr));
			return;
		}
		/* sent from the file itself, not read into memory first: up to MAX_SESSION_OPS of
		 * these may run at once */
		uint64_t size;
		int fd = pd_sandbox_open_regular(sb, path, 64u << 20, &size, &e);
		if (fd < 0) {
			http_set_error(r, e.code == EFBIG ? 413 : 400, "%s", PD_ERR_STR(&e));
			return;
		}
		http_set_resp_fd(r, 200, "application/octet-stream", fd, size);
	}
}

static void session_stat(req *r, sess_entry *se)
{
	struct stat st;
	pd_err e = {0};
	if (!session_enter(r, se))
		return;
	int rc = pd_sandbox_stat(pd_session_sandbox(se->s), r->q.path, &st, &e);
	pd_session_end(se->s);
	if (rc < 0) {
		http_set_error(r, e.code == ENOENT ? 404 : 400, "%s", PD_ERR_STR(&e));
		return;
	}
	http_set_json(r, 200, json_pack("{s:o,s:s,s:I,s:I,s:I,s:I,s:I}", "path", pd_json_text(r->q.path), "type",
				   S_ISDIR(st.st_mode)   ? "dir"
				   : S_ISLNK(st.st_mode) ? "symlink"
				   : S_ISREG(st.st_mode) ? "file"
							 : "other",
				   "size", (json_int_t)st.st_size, "mode", (json_int_t)(st.st_mode & 07777), "uid",
				   (json_int_t)st.st_uid, "gid", (json_int_t)st.st_gid, "mtime",
				   (json_int_t)st.st_mtim.tv_sec));
}

static void session_upload(req *r, sess_entry *se)
{
	const char *dir = *r->q.dir ? r->q.dir : "/work";
	/* the body is in memory already (up to the daemon's body limit): a memfd hands it to tar
	 * without a copy in the host's /tmp */
	int fd = memfd_create("paddock-upload", MFD_CLOEXEC);
	if (fd < 0) {
		http_set_error(r, 500, "upload buffer: %s", strerror(errno));
		return;
	}
	pd_err e = {0};
	if (write(fd, r->body ? r->body : "", r->len) != (ssize_t)r->len) {
		http_set_error(r, 507, "upload buffer: %s", strerror(errno));
		close(fd);
		return;
	}
	lseek(fd, 0, SEEK_SET);
	if (pd_session_upload_tar(se->s, dir, fd, step_id(r), &e) < 0)
		http_set_error(r, e.code == EBUSY ? 409 : e.code == ESRCH ? 410 : 400, "%s", PD_ERR_STR(&e));
	else
		http_set_json(r, 200, json_pack("{s:o,s:I}", "dir", pd_json_text(dir), "bytes", (json_int_t)r->len));
	close(fd);
}

typedef struct {
	http_piped pp; /* first: produce's argument is this */
	pd_session *s;
	pd_cluster *cluster; /* a node of a cluster keeps the archive in the broker (sessobj.c) */
	/* copies: r's own (r->q) go with r, which a client that leaves mid-transfer frees while tar
	 * still runs and the step is recorded */
	char dir[PATH_MAX], rid_buf[256], sid[48];
	const char *rid; /* rid_buf, or NULL */
	pd_err e;
	int rc;
} download;

static void download_main(http_piped *pp)
{
	download *d = (download *)pp;
	int fd = pp->wfd;
	pd_cluster_tee *tee = pd_cluster_download_tee(d->cluster, d->sid, d->rid, pp->wfd, &fd);
	d->rc = pd_session_download_tar(d->s, d->dir, fd, d->rid, &d->e);
	pd_cluster_download_kept(tee, d->rc == 0);
	http_piped_end(pp, d->rc == 0);
}

/* The archive streams from tar in the sandbox to the client: nothing is spooled on the host.
 * The status is decided by what comes first: the archive's first bytes (200, then streamed; a
 * later failure, such as the size cap, cuts the transfer) or tar's end without output (its
 * error, as before). Returns true when the connection was resumed here (the response streams
 * while the operation still runs). */
static bool session_download(req *r, sess_entry *se)
{
	download d = {.s = se->s, .cluster = r->srv->cluster, .pp.produce = download_main};
	snprintf(d.dir, sizeof d.dir, "%s", *r->q.dir ? r->q.dir : "/work");
	snprintf(d.sid, sizeof d.sid, "%s", se->id);
	if (step_id(r)) {
		snprintf(d.rid_buf, sizeof d.rid_buf, "%s", step_id(r));
		d.rid = d.rid_buf;
	}
	int how = http_piped_run(r, &d.pp, "application/x-tar");
	if (how == HTTP_PIPED_ENDED) {
		if (d.rc == 0) {
			http_set_error(r, 500, "the archive could not be sent");
		} else {
			pd_err *e = &d.e;
			int code = e->code == EBUSY ? 409 : e->code == ESRCH ? 410 : e->code == EFBIG ? 413 : 400;
			http_set_error(r, code, "%s", PD_ERR_STR(e));
		}
	}
	return how == HTTP_PIPED_STREAMED;
}

static void session_output(req *r, sess_entry *se)
{
	char path[PATH_MAX];
	pd_err e = {0};
	int stream = r->q.stderr_stream ? 2 : 1;
	if (pd_session_output_path(se->s, r->q.request_id, stream, path, sizeof path, &e) < 0) {
		http_set_error(r, 404, "%s", PD_ERR_STR(&e));
		return;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		http_set_error(r, 500, "read output: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	http_set_resp_fd(r, 200, "application/octet-stream", fd, (uint64_t)st.st_size);
}

static void session_create(req *r);
static void session_delete(req *r, sess_entry *se);

static void session_reset(req *r, sess_entry *se)
{
	pd_err e = {0};
	const char *rid = step_id(r);
	json_t *ff = rid ? pd_session_fast_forward(se->s, "reset", rid) : NULL;
	if (ff) {
		json_object_set_new(ff, "fast_forward", json_true());
		http_set_json(r, 200, ff);
		return;
	}
	if (pd_session_reset(se->s, rid, &e) < 0) {
		http_set_error(r, e.code == EBUSY ? 409 : e.code == ESRCH ? 410 : 503, "%s", PD_ERR_STR(&e));
		return;
	}
	char sid[40], state[32], uid[56];
	pd_session_info(se->s, sid, sizeof sid, state, sizeof state);
	pd_session_use_id(se->s, uid, sizeof uid);
	http_set_json(r, 200, json_pack("{s:s,s:s,s:s,s:s,s:b}", "session_id", se->id, "sandbox_id", sid, "use_id", uid,
				   "state", state, "reset", 1));
}

bool session_dispatch(req *r, sess_entry *se, const char *op)
{
	bool resumed = false;
	if (r->q.error[0])
		http_set_error(r, 400, "%s", r->q.error);
	else if (!strcmp(op, "exec") && !strcmp(r->method, "POST"))
		resumed = session_exec(r, se);
	else if (!strcmp(op, "files"))
		session_files(r, se);
	else if (!strcmp(op, "stat"))
		session_stat(r, se);
	else if (!strcmp(op, "upload") && !strcmp(r->method, "POST"))
		session_upload(r, se);
	else if (!strcmp(op, "download"))
		resumed = session_download(r, se);
	else if (!strcmp(op, "output"))
		session_output(r, se);
	else if (!strcmp(op, "reset") && !strcmp(r->method, "POST"))
		session_reset(r, se);
	else if (!strcmp(op, "snapshot") && !strcmp(r->method, "POST"))
		session_snapshot(r, se);
	else if (!strcmp(op, "network") && !strcmp(r->method, "POST"))
		session_network(r, se);
	else if (!strcmp(op, "judge") && !strcmp(r->method, "POST"))
		session_judge(r, se);
	else if (!strcmp(op, "annotate") && !strcmp(r->method, "POST"))
		session_annotate(r, se);
	else
		http_set_error(r, 404, "no such session operation: %s %s", r->method, op);
	return resumed;
}

sess_entry *session_hold(pd_server *s, const char *id)
{
	pthread_mutex_lock(&s->mu);
	sess_entry *se = find_session(s, id);
	if (se)
		se->ops++;
	pthread_mutex_unlock(&s->mu);
	return se;
}

void session_unhold(pd_server *s, sess_entry *se)
{
	pd_session *to_close = NULL;
	pthread_mutex_lock(&s->mu);
	if (se && --se->ops == 0 && se->closing) {
		to_close = se->s;
		se->s = NULL;
		se->closing = false;
	}
	pthread_mutex_unlock(&s->mu);
	if (to_close)
		pd_session_close(to_close);
}

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
		r->retry_after = 1;
		http_set_error(r, 503, "too many session operations at once: retry later");
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

/* Opens one session for q and files it in the table: its description, or NULL with the answer's
 * status and e filled. digest: the request image's, or NULL. */
json_t *session_open_one(pd_server *s, pd_session_create_req *q, const char *digest, int *status, pd_err *e)
{
	/* the acquire may create a sandbox on the spot: this runs on the operation's own thread */
	pd_session *ss = pd_session_open(s->pools, q->from_snapshot[0] && !q->template_given ? NULL : q->template_name,
					 &q->o, e);
	if (!ss) {
		*status = e->code == ENOENT || e->code == EINVAL ? 400 : 503;
		return NULL;
	}
	if (session_open_network(ss, q, status, e) < 0) {
		pd_session_close(ss);
		return NULL;
	}
	char tpl[64], tver[48];
	pd_session_template(ss, tpl, sizeof tpl);
	const pd_template *st = pd_pools_template(s->pools, tpl); /* its pool holds the session's sandbox */
	snprintf(tver, sizeof tver, "%s", st ? st->version : "");
	pthread_mutex_lock(&s->mu);
	sess_entry *slot = NULL;
	for (int i = 0; i < MAX_SESSIONS && !slot; i++)
		if (!s->sessions[i].s)
			slot = &s->sessions[i];
	if (!slot) {
		/* full: forget sessions the pools already ended (their sandboxes are gone; a client
		 * asking about one now gets 404 rather than 410) */
		uint64_t now = pd_now_us();
		for (int i = 0; i < MAX_SESSIONS; i++) {
			pd_session *old = s->sessions[i].s;
			if (old && !s->sessions[i].ops && pd_session_expired(old, now)) {
				s->sessions[i].s = NULL;
				pthread_mutex_unlock(&s->mu);
				pd_session_close(old);
				pthread_mutex_lock(&s->mu);
				if (!slot && !s->sessions[i].s)
					slot = &s->sessions[i];
			}
		}
	}
	if (slot && session_rules_open(slot, st ? st->rules : NULL, q->rules, e) < 0) {
		pthread_mutex_unlock(&s->mu);
		pd_session_close(ss);
		*status = 400;
		return NULL;
	}
	if (slot) {
		slot->s = ss;
		snprintf(slot->id, sizeof slot->id, "%s", pd_session_id(ss));
		snprintf(slot->template_name, sizeof slot->template_name, "%s", tpl);
		snprintf(slot->image_name, sizeof slot->image_name, "%s",
			 q->image[0] && !pd_image_ref_is_digest(q->image) ? q->image : "");
		snprintf(slot->template_version, sizeof slot->template_version, "%s", tver);
		slot->created_ms = pd_wall_us() / 1000;
	}
	pthread_mutex_unlock(&s->mu);
	if (!slot) {
		pd_session_close(ss);
		*status = 503;
		pd_fail(e, EAGAIN, "too many open sessions (%d): close some", MAX_SESSIONS);
		return NULL;
	}
	char uid[56];
	pd_session_use_id(ss, uid, sizeof uid);
	pd_log("info", "session opened", PD_LS("session_id", pd_session_id(ss)),
	       PD_LS("sandbox_id", pd_sandbox_id(pd_session_sandbox(ss))), PD_LS("use_id", uid),
	       PD_LS("template", tpl));
	json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "session_id", pd_session_id(ss), "sandbox_id",
			      pd_sandbox_id(pd_session_sandbox(ss)), "use_id", uid, "template", tpl);
	if (q->from_snapshot[0])
		json_object_set_new(o, "from_snapshot", json_string(q->from_snapshot));
	if (q->network[0])
		json_object_set_new(o, "network", json_string(q->network));
	if (digest && digest[0]) {
		json_t *im = json_object();
		if (!pd_image_ref_is_digest(q->image))
			json_object_set_new(im, "name", json_string(q->image));
		json_object_set_new(im, "digest", json_string(digest));
		json_object_set_new(o, "image", im);
	}
	return o;
}

/* A session create refused with status st (e says why): 503s say when to try again. */
static void create_refused(req *r, pd_session_create_req *q, int st, pd_err *e)
{
	pd_session_create_req_free(q);
	if (st == 503)
		r->retry_after = 5;
	http_set_error(r, st, "%s", PD_ERR_STR(e));
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
		r->retry_after = 2;
		http_set_error(r, 503, "%s", why);
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
		if (status == 503)
			r->retry_after = 5;
		http_set_error(r, status ? status : 503, "%s", PD_ERR_STR(&e));
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

void session_delete_quiet(pd_server *s, const char *id)
{
	pthread_mutex_lock(&s->mu);
	sess_entry *se = find_session(s, id);
	pd_session *ss = NULL;
	if (se && se->ops)
		se->closing = true;
	else if (se) {
		ss = se->s;
		se->s = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	if (ss)
		pd_session_close(ss);
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
	sess_entry *se = find_session(s, id);
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
