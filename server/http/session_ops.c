/* The operations on one open session (/v1/sessions/<id>/<op>: exec, files, stat, upload,
 * download, output, reset, and through their own files snapshot, network, judge, annotate), on the
 * operation's thread with the session held (sessions.c), or on a replay's (replay.c):
 * session_dispatch picks one by name. A streamed exec is exec_stream.c's; an exec's answer is
 * exec_answer.c's. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* the template's policy tightened by the request's, or the template's alone when mandatory; -1
 * with e naming the field when the request widens it */
static int session_exec_policy(pd_server *srv, sess_entry *se, pd_session_exec_req *q, pd_err *e)
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
