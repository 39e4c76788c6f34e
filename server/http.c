/* The HTTP server: libmicrohttpd on an epoll thread. Nothing slow runs on that thread: a run is
 * parsed, queued on the scheduler and its connection suspended; a session operation runs on its
 * own thread; either resumes the connection with the response when done. So thousands of idle or
 * slow connections cost only sockets, and one client's slow upload holds up nobody. */
#define _GNU_SOURCE
#include "internal.h"
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_SESSIONS 4096
#define MAX_SESSION_OPS 256

typedef struct sess_entry {
	pd_session *s;
	int ops;      /* requests using it now: it is closed only when this drops to 0 */
	bool closing; /* DELETE arrived while in use */
	char id[48];
	char template_name[64];
	uint64_t created_ms;
} sess_entry;

struct pd_server {
	pd_server_opts o;
	pd_ctx *ctx;
	pd_template *tpl;
	size_t ntpl;
	pd_pools *pools;
	pd_store *store;
	pd_metrics *metrics;
	pd_sched *sched;
	struct MHD_Daemon *mhd;
	int listen_fd;
	char address[160];
	char unix_path[108];
	pthread_mutex_t mu;
	sess_entry sessions[MAX_SESSIONS];
	unsigned session_ops;
	pthread_cond_t ops_cv;
	bool stopping;
};

typedef enum { K_NONE, K_NATIVE, K_RUN_CODE, K_PISTON } kind;

typedef struct req {
	pd_server *srv;
	struct MHD_Connection *conn;
	char *body;
	size_t len, cap;
	bool too_big, suspended, answered, unauthorized;
	/* filled by the worker that finished the request */
	int status;
	char *resp;
	size_t resp_len;
	const char *content_type;
	unsigned retry_after;
	kind k;
	/* session operations */
	char method[8];
	char url[512];
	pd_session_query q;
} req;

static bool log_on = true;

void pd_log_enable(bool on)
{
	__atomic_store_n(&log_on, on, __ATOMIC_RELAXED);
}

void pd_log(const char *level, const char *msg, const char *fmt, ...)
{
	if (!__atomic_load_n(&log_on, __ATOMIC_RELAXED))
		return;
	char fields[1024] = "";
	if (fmt && *fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(fields, sizeof fields, fmt, ap);
		va_end(ap);
	}
	struct timeval tv;
	gettimeofday(&tv, NULL);
	/* one write per line: lines from many threads never interleave */
	char line[1400];
	int n = snprintf(line, sizeof line, "{\"ts\":%lld.%03ld,\"level\":\"%s\",\"msg\":\"%s\"%s%s}\n",
			 (long long)tv.tv_sec, (long)(tv.tv_usec / 1000), level, msg, *fields ? "," : "",
			 fields);
	if (n > 0) {
		ssize_t w = write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
		(void)w;
	}
}

/* ---- responses ------------------------------------------------------------------------------- */

static void set_resp(req *r, int status, const char *ctype, char *body, size_t len)
{
	free(r->resp);
	r->status = status;
	r->content_type = ctype;
	r->resp = body;
	r->resp_len = len;
}

static void set_json(req *r, int status, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s) {
		s = strdup("{\"error\":\"out of memory\"}");
		status = 500;
	}
	size_t len = strlen(s);
	/* a trailing newline makes curl output and JSONL logs friendlier */
	char *nl = realloc(s, len + 2);
	if (nl) {
		nl[len++] = '\n';
		nl[len] = 0;
		s = nl;
	}
	set_resp(r, status, "application/json", s, len);
}

static void set_error(req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_error(req *r, int status, const char *fmt, ...)
{
	char msg[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_t *j = json_object();
	/* pd_json_text: msg may quote a client's bytes (jansson's "invalid escape near '\xc3'") */
	json_object_set_new(j, "error", pd_json_text(msg));
	/* Piston's clients read "message" */
	if (r->k == K_PISTON)
		json_object_set_new(j, "message", pd_json_text(msg));
	set_json(r, status, j);
}

static enum MHD_Result send_resp(struct MHD_Connection *c, req *r)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(r->resp_len, r->resp ? r->resp : (char *)"", MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO;
	r->resp = NULL; /* MHD owns it now */
	MHD_add_response_header(resp, "Content-Type", r->content_type ? r->content_type : "application/json");
	if (r->retry_after) {
		char ra[16];
		snprintf(ra, sizeof ra, "%u", r->retry_after);
		MHD_add_response_header(resp, "Retry-After", ra);
	}
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	if (r->srv->metrics)
		pd_metrics_http(r->srv->metrics, r->status);
	r->answered = true;
	return ret;
}

/* ---- jobs ------------------------------------------------------------------------------------ */

static void job_done(pd_job *j, void *arg)
{
	req *r = arg;
	json_t *out = r->k == K_RUN_CODE ? pd_job_to_run_code(j) : r->k == K_PISTON ? pd_job_to_piston(j)
										    : pd_job_to_json(j);
	int status = 200;
	if (r->k == K_PISTON && j->failure == PD_F_DEPENDENCY) {
		json_decref(out);
		out = json_object();
		json_object_set_new(out, "message", pd_json_text(j->error));
		status = 400;
	}
	set_json(r, status, out);
	pd_job_free(j);
	/* once resumed, the event thread may answer and free r at any moment: touch it no more */
	pd_server *srv = r->srv;
	struct MHD_Connection *conn = r->conn;
	pthread_mutex_lock(&srv->mu);
	MHD_resume_connection(conn);
	pthread_mutex_unlock(&srv->mu);
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

static void submit(req *r, kind k)
{
	r->k = k;
	json_error_t je;
	json_t *body = json_loadb(r->body ? r->body : "", r->len, 0, &je);
	if (!body) {
		set_error(r, 400, "request body is not JSON (line %d column %d: %s)", je.line, je.column, je.text);
		return;
	}
	pd_err e = {0};
	pd_job *j = k == K_RUN_CODE ? pd_job_from_run_code(body, &e)
		    : k == K_PISTON ? pd_job_from_piston(body, &e)
				    : pd_job_from_native(body, &e);
	json_decref(body);
	if (!j) {
		set_error(r, 400, "%s", pd_refusal_text(&e));
		return;
	}
	if (!j->task_id[0]) {
		static uint64_t seq;
		/* the context's random run id keeps ids of two daemons (or restarts) apart */
		snprintf(j->task_id, sizeof j->task_id, "t-%08" PRIx32 "-%" PRIu64, r->srv->ctx->run_id,
			 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	}
	client_of(r->conn, j->client, sizeof j->client);
	j->done = job_done;
	j->done_arg = r;
	/* suspend first: the job may finish (and resume us) before submit returns */
	pthread_mutex_lock(&r->srv->mu);
	MHD_suspend_connection(r->conn);
	r->suspended = true;
	pthread_mutex_unlock(&r->srv->mu);
	pd_admit a = pd_sched_submit(r->srv->sched, j);
	if (a == PD_ADMIT_OK)
		return;
	pd_job_free(j);
	r->retry_after = pd_sched_retry_after(r->srv->sched);
	/* verl's SandboxFusion client retries on 504 only: overload must say 504 there */
	int code = k == K_RUN_CODE ? 504 : 503;
	set_error(r, code, "%s", a == PD_ADMIT_FULL ? "queue full: retry later"
			       : a == PD_ADMIT_BREAKER ? "overloaded (circuit breaker open): retry later"
						       : "shutting down");
	pd_server *srv = r->srv;
	pthread_mutex_lock(&srv->mu);
	MHD_resume_connection(r->conn);
	pthread_mutex_unlock(&srv->mu);
}

/* ---- sessions -------------------------------------------------------------------------------- */

static sess_entry *find_session(pd_server *s, const char *id)
{
	for (int i = 0; i < MAX_SESSIONS; i++)
		if (s->sessions[i].s && !s->sessions[i].closing && !strcmp(s->sessions[i].id, id))
			return &s->sessions[i];
	return NULL;
}

json_t *pd_session_result_json(const pd_result *x)
{
	json_t *o = json_object();
	json_object_set_new(o, "sandbox_id", json_string(x->sandbox_id));
	json_object_set_new(o, "status", json_string(pd_status_name(x->status)));
	json_object_set_new(o, "exit_code", json_integer(x->exit_code));
	json_object_set_new(o, "signal", json_integer(x->signal));
	json_object_set_new(o, "error", pd_json_text(x->error));
	json_object_set_new(o, "wall_ms", json_integer((json_int_t)x->wall_ms));
	json_object_set_new(o, "cpu_ms", json_integer((json_int_t)x->cpu_ms));
	json_object_set_new(o, "memory_peak_bytes", json_integer((json_int_t)x->memory_peak_bytes));
	char *h = NULL;
	size_t hl = 0;
	FILE *f = open_memstream(&h, &hl);
	if (f) {
		fwrite(x->out.head ? x->out.head : "", 1, x->out.head_len, f);
		if (x->out.truncated && x->out.tail_len)
			fprintf(f, "\n[... %llu bytes omitted ...]\n",
				(unsigned long long)(x->out.total - x->out.head_len - x->out.tail_len));
		fwrite(x->out.tail ? x->out.tail : "", 1, x->out.tail_len, f);
		fclose(f);
	}
	json_t *js = h ? json_stringn(h, hl) : NULL;
	json_object_set_new(o, "stdout", js ? js : json_string("(output is not UTF-8: fetch it raw)"));
	free(h);
	json_t *je = json_stringn(x->err.head ? x->err.head : "", x->err.head_len);
	json_object_set_new(o, "stderr", je ? je : json_string("(output is not UTF-8: fetch it raw)"));
	json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)x->out.total));
	json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)x->err.total));
	json_object_set_new(o, "stdout_truncated", json_boolean(x->out.truncated));
	json_object_set_new(o, "stderr_truncated", json_boolean(x->err.truncated));
	return o;
}

static void session_exec(req *r, sess_entry *se)
{
	pd_session_exec_req q;
	pd_err e = {0};
	if (pd_session_exec_parse(r->body, r->len, &q, &e) < 0) {
		set_error(r, 400, "%s", e.msg);
		return;
	}
	const char *rid = q.request_id;
	pd_result res;
	if (pd_session_exec(se->s, &q.x, rid, &res, &e) < 0) {
		set_error(r, e.code == EBUSY ? 409 : e.code == ESRCH ? 410 : 400, "%s", e.msg);
		goto out;
	}
	json_t *o = pd_session_result_json(&res);
	json_object_set_new(o, "session_id", json_string(se->id));
	/* without a client id, the exec is recorded as "#<n>": say which, for /output */
	char auto_id[32];
	snprintf(auto_id, sizeof auto_id, "#%u", pd_session_exec_count(se->s));
	json_object_set_new(o, "request_id", json_string(rid ? rid : auto_id));
	pd_result_free(&res);
	set_json(r, 200, o);
out:
	pd_session_exec_req_free(&q);
}

/* 409 while another request uses the session, 410 once it has ended */
static bool session_enter(req *r, sess_entry *se)
{
	pd_err e = {0};
	if (pd_session_begin(se->s, &e) == 0)
		return true;
	set_error(r, e.code == EBUSY ? 409 : 410, "%s", e.msg);
	return false;
}

static void session_files_in(req *r, sess_entry *se);

static void session_files(req *r, sess_entry *se)
{
	if (!*r->q.path) {
		set_error(r, 400, "path: required (?path=/work/file)");
		return;
	}
	if (!session_enter(r, se))
		return;
	session_files_in(r, se);
	pd_session_end(se->s);
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
			set_error(r, e.code == ENOSPC ? 507 : 400, "%s", e.msg);
		else
			set_json(r, 200, json_pack("{s:o,s:I}", "path", pd_json_text(path), "bytes", (json_int_t)r->len));
	} else if (!strcmp(r->method, "DELETE")) {
		if (pd_sandbox_remove(sb, path, &e) < 0)
			set_error(r, e.code == ENOENT ? 404 : 400, "%s", e.msg);
		else
			set_json(r, 200, json_pack("{s:o,s:b}", "path", pd_json_text(path), "deleted", 1));
	} else {
		struct stat st;
		if (pd_sandbox_stat(sb, path, &st, &e) < 0) {
			set_error(r, e.code == ENOENT ? 404 : 400, "%s", e.msg);
			return;
		}
		if (S_ISDIR(st.st_mode) || r->q.list) {
			pd_dirent *d;
			size_t n;
			if (pd_sandbox_list(sb, path, &d, &n, &e) < 0) {
				set_error(r, 400, "%s", e.msg);
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
			set_json(r, 200, json_pack("{s:o,s:o}", "path", pd_json_text(path), "entries", arr));
			return;
		}
		char *buf;
		size_t len;
		if (pd_sandbox_read_file(sb, path, 64u << 20, &buf, &len, &e) < 0) {
			set_error(r, e.code == EFBIG ? 413 : 400, "%s", e.msg);
			return;
		}
		set_resp(r, 200, "application/octet-stream", buf, len);
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
		set_error(r, e.code == ENOENT ? 404 : 400, "%s", e.msg);
		return;
	}
	set_json(r, 200, json_pack("{s:o,s:s,s:I,s:I,s:I,s:I,s:I}", "path", pd_json_text(r->q.path), "type",
				   S_ISDIR(st.st_mode)   ? "dir"
				   : S_ISLNK(st.st_mode) ? "symlink"
				   : S_ISREG(st.st_mode) ? "file"
							 : "other",
				   "size", (json_int_t)st.st_size, "mode", (json_int_t)(st.st_mode & 07777), "uid",
				   (json_int_t)st.st_uid, "gid", (json_int_t)st.st_gid, "mtime",
				   (json_int_t)st.st_mtim.tv_sec));
}

static void session_tar(req *r, sess_entry *se, bool upload)
{
	const char *dir = *r->q.dir ? r->q.dir : "/work";
	char tmp[] = "/tmp/paddock-tar-XXXXXX";
	int fd = mkstemp(tmp);
	if (fd < 0) {
		set_error(r, 500, "temporary file: %s", strerror(errno));
		return;
	}
	unlink(tmp);
	pd_err e = {0};
	if (upload) {
		if (write(fd, r->body ? r->body : "", r->len) != (ssize_t)r->len) {
			set_error(r, 507, "temporary file: %s", strerror(errno));
			close(fd);
			return;
		}
		lseek(fd, 0, SEEK_SET);
		if (pd_session_upload_tar(se->s, dir, fd, &e) < 0)
			set_error(r, e.code == EBUSY ? 409 : e.code == ESRCH ? 410 : 400, "%s", e.msg);
		else
			set_json(r, 200, json_pack("{s:o,s:I}", "dir", pd_json_text(dir), "bytes", (json_int_t)r->len));
		close(fd);
		return;
	}
	if (pd_session_download_tar(se->s, dir, fd, &e) < 0) {
		set_error(r, e.code == EBUSY ? 409 : e.code == ESRCH ? 410 : 400, "%s", e.msg);
		close(fd);
		return;
	}
	off_t len = lseek(fd, 0, SEEK_END);
	char *buf = len > 0 ? malloc((size_t)len) : NULL;
	if (len > 0 && (!buf || pread(fd, buf, (size_t)len, 0) != len)) {
		free(buf);
		set_error(r, 500, "read archive");
	} else {
		set_resp(r, 200, "application/x-tar", buf, (size_t)(len > 0 ? len : 0));
	}
	close(fd);
}

static void session_output(req *r, sess_entry *se)
{
	char path[PD_PATH];
	pd_err e = {0};
	int stream = r->q.stderr_stream ? 2 : 1;
	if (pd_session_output_path(se->s, r->q.request_id, stream, path, sizeof path, &e) < 0) {
		set_error(r, 404, "%s", e.msg);
		return;
	}
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !(buf = malloc((size_t)st.st_size + 1)) ||
	    pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		if (fd >= 0)
			close(fd);
		set_error(r, 500, "read output: %s", strerror(errno));
		return;
	}
	close(fd);
	set_resp(r, 200, "application/octet-stream", buf, (size_t)st.st_size);
}

static void session_create(req *r);

static void *session_op_main(void *arg)
{
	req *r = arg;
	pd_server *s = r->srv;
	/* /v1/sessions/<id>/<op> */
	char id[48] = "", op[32] = "";
	bool url_ok = pd_session_url(r->url, id, sizeof id, op, sizeof op) == 0;
	pthread_mutex_lock(&s->mu);
	sess_entry *se = find_session(s, id);
	if (se)
		se->ops++;
	pthread_mutex_unlock(&s->mu);
	if (!strcmp(r->url, "/v1/sessions"))
		session_create(r);
	else if (!url_ok)
		set_error(r, 404, "no such session operation: %s %s", r->method, r->url);
	else if (!se)
		set_error(r, 404, "no session %s", id);
	else if (r->q.error[0])
		set_error(r, 400, "%s", r->q.error);
	else if (!strcmp(op, "exec") && !strcmp(r->method, "POST"))
		session_exec(r, se);
	else if (!strcmp(op, "files"))
		session_files(r, se);
	else if (!strcmp(op, "stat"))
		session_stat(r, se);
	else if (!strcmp(op, "upload") && !strcmp(r->method, "POST"))
		session_tar(r, se, true);
	else if (!strcmp(op, "download"))
		session_tar(r, se, false);
	else if (!strcmp(op, "output"))
		session_output(r, se);
	else
		set_error(r, 404, "no such session operation: %s %s", r->method, op);
	struct MHD_Connection *conn = r->conn; /* r belongs to the event thread once resumed */
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
	pthread_mutex_lock(&s->mu);
	s->session_ops--;
	pthread_cond_broadcast(&s->ops_cv);
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
		set_error(r, 503, "too many session operations at once: retry later");
		return;
	}
	s->session_ops++;
	MHD_suspend_connection(r->conn);
	r->suspended = true;
	pthread_mutex_unlock(&s->mu);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, session_op_main, r) != 0) {
		pthread_mutex_lock(&s->mu);
		s->session_ops--;
		set_error(r, 503, "cannot start a thread: retry later");
		MHD_resume_connection(r->conn);
		pthread_mutex_unlock(&s->mu);
	}
	pthread_attr_destroy(&at);
}

static void session_create(req *r)
{
	pd_server *s = r->srv;
	pd_session_create_req q;
	pd_err e = {0};
	if (pd_session_create_parse(r->body, r->len, &q, &e) < 0) {
		set_error(r, 400, "%s", e.msg);
		return;
	}
	/* the acquire may create a sandbox on the spot: a few ms on the event thread, bounded */
	pd_session *ss = pd_session_open(s->pools, q.template_name, &q.o, &e);
	pd_session_create_req_free(&q);
	const char *tpl = q.template_name;
	if (!ss) {
		set_error(r, e.code == ENOENT ? 400 : 503, "%s", e.msg);
		return;
	}
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
	if (slot) {
		slot->s = ss;
		snprintf(slot->id, sizeof slot->id, "%s", pd_session_id(ss));
		snprintf(slot->template_name, sizeof slot->template_name, "%s", tpl);
		struct timeval tv;
		gettimeofday(&tv, NULL);
		slot->created_ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
	}
	pthread_mutex_unlock(&s->mu);
	if (!slot) {
		pd_session_close(ss);
		r->retry_after = 5;
		set_error(r, 503, "too many open sessions (%d): close some", MAX_SESSIONS);
		return;
	}
	pd_log("info", "session opened", "\"session_id\":\"%s\",\"sandbox_id\":\"%s\",\"template\":\"%s\"",
	       pd_session_id(ss), pd_sandbox_id(pd_session_sandbox(ss)), tpl);
	set_json(r, 201, json_pack("{s:s,s:s,s:s}", "session_id", pd_session_id(ss), "sandbox_id",
				   pd_sandbox_id(pd_session_sandbox(ss)), "template", tpl));
}

static void session_delete(req *r, const char *id)
{
	pd_server *s = r->srv;
	pthread_mutex_lock(&s->mu);
	sess_entry *se = find_session(s, id);
	pd_session *ss = NULL;
	bool found = se != NULL;
	if (se && se->ops) {
		se->closing = true; /* the last request using it closes it */
	} else if (se) {
		ss = se->s;
		se->s = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	if (!found) {
		set_error(r, 404, "no session %s", id);
		return;
	}
	if (ss)
		pd_session_close(ss);
	pd_log("info", "session closed", "\"session_id\":\"%s\"", id);
	set_json(r, 200, json_pack("{s:s,s:b}", "session_id", id, "closed", 1));
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
		char sid[40], state[32];
		pd_session_info(se->s, sid, sizeof sid, state, sizeof state);
		json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s,s:I,s:b}", "session_id", se->id,
						     "sandbox_id", sid, "template", se->template_name, "state",
						     state, "created_ms", (json_int_t)se->created_ms, "expired",
						     pd_session_expired(se->s, now)));
	}
	pthread_mutex_unlock(&s->mu);
	set_json(r, 200, json_pack("{s:o}", "sessions", arr));
}

/* ---- routing --------------------------------------------------------------------------------- */

static json_t *pools_json(pd_server *s)
{
	size_t n;
	pd_pool_stats *st = pd_pools_stats(s->pools, &n);
	json_t *arr = json_array();
	for (size_t i = 0; st && i < n; i++)
		json_array_append_new(arr, json_pack("{s:s,s:b,s:i,s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
						     "template", st[i].template_name, "available",
						     st[i].available, "target", st[i].target, "ready", st[i].ready,
						     "in_use", st[i].in_use, "creating", st[i].creating,
						     "reclaiming", st[i].reclaiming, "acquires",
						     (json_int_t)st[i].acquires, "hits", (json_int_t)st[i].hits,
						     "created", (json_int_t)st[i].created, "destroyed",
						     (json_int_t)st[i].destroyed, "expired",
						     (json_int_t)st[i].expired, "forced_reclaims",
						     (json_int_t)st[i].forced_reclaims, "residue_failures",
						     (json_int_t)st[i].residue_failures));
	free(st);
	return arr;
}

static char *pool_metrics(pd_server *s)
{
	size_t n;
	pd_pool_stats *st = pd_pools_stats(s->pools, &n);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f) {
		free(st);
		return NULL;
	}
	static const char *const gauges[][2] = {{"ready", "READY sandboxes waiting"},
						{"in_use", "sandboxes acquired"},
						{"creating", "sandboxes being created"},
						{"reclaiming", "sandboxes waiting for teardown"},
						{"target", "READY sandboxes the pool aims for"}};
	for (size_t g = 0; g < 5; g++) {
		fprintf(f, "# HELP paddock_pool_%s %s, per template.\n# TYPE paddock_pool_%s gauge\n", gauges[g][0],
			gauges[g][1], gauges[g][0]);
		for (size_t i = 0; st && i < n; i++) {
			uint32_t v = g == 0 ? st[i].ready : g == 1 ? st[i].in_use : g == 2 ? st[i].creating
							   : g == 3 ? st[i].reclaiming : st[i].target;
			fprintf(f, "paddock_pool_%s{template=\"%s\"} %u\n", gauges[g][0], st[i].template_name, v);
		}
	}
	static const char *const counters[][2] = {
		{"acquires_total", "acquires"}, {"hits_total", "acquires served by a READY sandbox"},
		{"created_total", "sandboxes created"}, {"create_failures_total", "sandbox creations that failed"},
		{"destroyed_total", "sandboxes destroyed"}, {"expired_total", "sandboxes or sessions past their TTL"},
		{"forced_reclaims_total", "sandboxes reclaimed by force past a deadline"},
		{"residue_failures_total", "teardowns that left something behind"}};
	for (size_t c = 0; c < 8; c++) {
		fprintf(f, "# HELP paddock_pool_%s Pool %s, per template.\n# TYPE paddock_pool_%s counter\n",
			counters[c][0], counters[c][1], counters[c][0]);
		for (size_t i = 0; st && i < n; i++) {
			uint64_t v = c == 0 ? st[i].acquires : c == 1 ? st[i].hits : c == 2 ? st[i].created
				     : c == 3 ? st[i].create_failures : c == 4 ? st[i].destroyed
				     : c == 5 ? st[i].expired : c == 6 ? st[i].forced_reclaims : st[i].residue_failures;
			fprintf(f, "paddock_pool_%s{template=\"%s\"} %llu\n", counters[c][0], st[i].template_name,
				(unsigned long long)v);
		}
	}
	uint64_t stuck = 0, stuck_total = 0;
	pd_ctx_stuck(s->ctx, &stuck, &stuck_total);
	fprintf(f, "# HELP paddock_sandboxes_stuck Sandboxes whose teardown waits on a task that outlived SIGKILL.\n"
		   "# TYPE paddock_sandboxes_stuck gauge\npaddock_sandboxes_stuck %llu\n",
		(unsigned long long)stuck);
	char mi[4096];
	if (pd_read_file("/proc/meminfo", mi, sizeof mi) > 0) {
		char *a = strstr(mi, "MemAvailable:"), *t = strstr(mi, "MemTotal:");
		if (a && t)
			fprintf(f, "# HELP paddock_host_memory_bytes Host memory.\n# TYPE paddock_host_memory_bytes gauge\n"
				   "paddock_host_memory_bytes{kind=\"total\"} %llu\npaddock_host_memory_bytes{kind=\"available\"} %llu\n",
				strtoull(t + 9, NULL, 10) * 1024, strtoull(a + 13, NULL, 10) * 1024);
	}
	double l1 = 0;
	if (pd_read_file("/proc/loadavg", mi, sizeof mi) > 0)
		l1 = strtod(mi, NULL);
	fprintf(f, "# HELP paddock_host_load1 Host load average (1 min).\n# TYPE paddock_host_load1 gauge\n"
		   "paddock_host_load1 %.2f\n", l1);
	fclose(f);
	free(st);
	return out;
}

static bool authorized(pd_server *s, struct MHD_Connection *c)
{
	if (!s->o.token || !*s->o.token)
		return true;
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (!h || strncmp(h, "Bearer ", 7))
		return false;
	const char *got = h + 7, *want = s->o.token;
	size_t gl = strlen(got), wl = strlen(want);
	/* constant time in the token's length: no timing oracle on how much matched */
	unsigned diff = (unsigned)(gl ^ wl);
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)want[i] ^ (unsigned char)(i < gl ? got[i] : 0);
	return diff == 0;
}

static void route(req *r, const char *url, const char *method)
{
	pd_server *s = r->srv;
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
	if (!strcmp(url, "/healthz") && get) {
		set_json(r, 200, json_pack("{s:s}", "status", "ok"));
	} else if (!strcmp(url, "/readyz") && get) {
		bool open = pd_sched_breaker_open(s->sched);
		set_json(r, open || s->stopping ? 503 : 200,
			 json_pack("{s:s,s:b}", "status", open || s->stopping ? "not ready" : "ready", "breaker_open", open));
	} else if (!strcmp(url, "/metrics") && get) {
		char *sm = pd_sched_metrics(s->sched), *pm = pool_metrics(s);
		char *extra = NULL;
		if (asprintf(&extra, "%s%s", sm ? sm : "", pm ? pm : "") < 0)
			extra = NULL;
		free(sm);
		free(pm);
		char *text = pd_metrics_render(s->metrics, extra);
		free(extra);
		set_resp(r, 200, "text/plain; version=0.0.4", text, text ? strlen(text) : 0);
	} else if (!strcmp(url, "/v1/ping") && get) {
		/* SandboxFusion's liveness check answers the bare string */
		set_resp(r, 200, "application/json", strdup("\"pong\""), 6);
	} else if (!strcmp(url, "/run_code") && post) {
		submit(r, K_RUN_CODE);
	} else if (!strcmp(url, "/api/v2/execute") && post) {
		submit(r, K_PISTON);
	} else if (!strcmp(url, "/api/v2/runtimes") && get) {
		size_t n;
		const pd_language *l = pd_languages(&n);
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++) {
			const pd_template *t = pd_pools_template(s->pools, l[i].template);
			char p[256];
			bool have = false;
			static const char *const bins[] = {"/usr/local/bin", "/usr/bin", "/bin", NULL};
			for (int b = 0; bins[b] && !have; b++) {
				snprintf(p, sizeof p, "%s/%s", bins[b], l[i].requires);
				have = access(p, X_OK) == 0;
			}
			if (t && t->available && have)
				json_array_append_new(arr, json_pack("{s:s,s:s,s:[],s:s}", "language", l[i].name,
								     "version", l[i].version, "aliases", "runtime",
								     l[i].name));
		}
		set_json(r, 200, arr);
	} else if (!strcmp(url, "/v1/runs") && post) {
		submit(r, K_NATIVE);
	} else if (!strcmp(url, "/v1/pools") && get) {
		set_json(r, 200, json_pack("{s:o}", "pools", pools_json(s)));
	} else if (!strcmp(url, "/v1/sessions") && post) {
		/* the pool may be empty and the sandbox made on the spot: not on the event thread */
		snprintf(r->url, sizeof r->url, "%s", url);
		snprintf(r->method, sizeof r->method, "%s", method);
		session_async(r);
	} else if (!strcmp(url, "/v1/sessions") && get) {
		session_list(r);
	} else if (!strncmp(url, "/v1/sessions/", 13)) {
		const char *rest = url + 13;
		if (!strchr(rest, '/') && !strcmp(method, "DELETE"))
			session_delete(r, rest);
		else if (!strchr(rest, '/') && get) {
			pthread_mutex_lock(&s->mu);
			sess_entry *se = find_session(s, rest);
			json_t *o = NULL;
			if (se) {
				char sid[40], state[32];
				pd_session_info(se->s, sid, sizeof sid, state, sizeof state);
				o = json_pack("{s:s,s:s,s:s,s:s}", "session_id", se->id, "sandbox_id", sid,
					      "template", se->template_name, "state", state);
			}
			pthread_mutex_unlock(&s->mu);
			if (o)
				set_json(r, 200, o);
			else
				set_error(r, 404, "no session %s", rest);
		} else {
			snprintf(r->url, sizeof r->url, "%s", url);
			snprintf(r->method, sizeof r->method, "%s", method);
			session_async(r);
		}
	} else {
		set_error(r, 404, "no such endpoint: %s %s", method, url);
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)version;
	pd_server *s = cls;
	req *r = *con_cls;
	if (!r) {
		r = calloc(1, sizeof *r);
		if (!r)
			return MHD_NO;
		r->srv = s;
		r->conn = c;
		/* the headers are here already: an unauthorized body is never buffered */
		r->unauthorized = strcmp(url, "/healthz") && strcmp(url, "/readyz") && !authorized(s, c);
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!r->too_big && !r->unauthorized) {
			if (r->len + *upload_size > s->o.max_body) {
				r->too_big = true;
			} else {
				if (r->len + *upload_size + 1 > r->cap) {
					size_t cap = r->cap ? r->cap : 4096;
					while (cap < r->len + *upload_size + 1)
						cap *= 2;
					char *nb = realloc(r->body, cap);
					if (!nb)
						return MHD_NO;
					r->body = nb;
					r->cap = cap;
				}
				memcpy(r->body + r->len, upload, *upload_size);
				r->len += *upload_size;
				r->body[r->len] = 0;
			}
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->suspended) {
		/* resumed: the worker left the response */
		r->suspended = false;
		return send_resp(c, r);
	}
	if (r->answered)
		return MHD_YES;
	if (r->unauthorized) {
		set_error(r, 401, "a valid 'Authorization: Bearer <token>' header is required");
		return send_resp(c, r);
	}
	if (r->too_big) {
		set_error(r, 413, "request body over %zu bytes", s->o.max_body);
		return send_resp(c, r);
	}
	/* with their lengths: a %00 in a value must not shorten it silently */
	static const char *const keys[] = {"path", "dir", "request_id", "stream", "list"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const char *v = NULL;
		size_t vlen = 0;
		if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, keys[i], strlen(keys[i]), &v, &vlen) == MHD_YES)
			pd_session_query_set(&r->q, keys[i], v, vlen);
	}
	route(r, url, method);
	if (r->suspended)
		return MHD_YES;
	return send_resp(c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	req *r = *con_cls;
	if (!r)
		return;
	free(r->body);
	free(r->resp);
	free(r);
	*con_cls = NULL;
}

/* ---- start and stop -------------------------------------------------------------------------- */

static int bind_listen(pd_server *s, pd_err *e)
{
	const char *l = s->o.listen ? s->o.listen : "127.0.0.1:8080";
	int fd;
	if (!strncmp(l, "unix:", 5)) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		if (strlen(l + 5) >= sizeof sa.sun_path)
			return pd_fail(e, ENAMETOOLONG, "unix socket path %s", l + 5);
		snprintf(sa.sun_path, sizeof sa.sun_path, "%s", l + 5);
		snprintf(s->unix_path, sizeof s->unix_path, "%s", l + 5);
		unlink(sa.sun_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0) {
			int err = errno;
			if (fd >= 0)
				close(fd);
			return pd_fail(e, err, "listen on %s", l);
		}
		chmod(sa.sun_path, 0660);
		snprintf(s->address, sizeof s->address, "%s", l);
		s->listen_fd = fd;
		return 0;
	}
	char host[128];
	const char *colon = strrchr(l, ':');
	if (!colon || colon == l || (size_t)(colon - l) >= sizeof host)
		return pd_fail(e, EINVAL, "listen: '%s' must be HOST:PORT or unix:/path", l);
	memcpy(host, l, (size_t)(colon - l));
	host[colon - l] = 0;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535)
		return pd_fail(e, EINVAL, "listen: bad port in '%s'", l);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return pd_fail(e, EINVAL, "listen: '%s' is not an IPv4 address", host);
	bool loopback = (ntohl(sa.sin_addr.s_addr) >> 24) == 127;
	if (!loopback && (!s->o.token || !*s->o.token))
		return pd_fail(e, EPERM, "listening on %s needs a bearer token (--token): sandboxes run code", l);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		return pd_fail(e, err, "listen on %s", l);
	}
	socklen_t sl = sizeof sa;
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	snprintf(s->address, sizeof s->address, "%s:%u", host, ntohs(sa.sin_port));
	s->listen_fd = fd;
	return 0;
}

const char *pd_server_address(const pd_server *s)
{
	return s->address;
}

pd_server *pd_server_start(const pd_server_opts *o, pd_err *e)
{
	pd_server *s = calloc(1, sizeof *s);
	if (!s) {
		pd_fail(e, ENOMEM, "server");
		return NULL;
	}
	s->o = *o;
	s->listen_fd = -1;
	if (!s->o.max_body)
		s->o.max_body = 16u << 20;
	if (!s->o.max_connections)
		s->o.max_connections = 4096;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->ops_cv, NULL);
	if (bind_listen(s, e) < 0)
		goto fail;
	int rc = o->templates_file ? pd_templates_load(o->templates_file, &s->tpl, &s->ntpl, e)
				   : pd_templates_default(&s->tpl, &s->ntpl, e);
	if (rc < 0)
		goto fail;
	for (size_t i = 0; i < s->ntpl; i++)
		if (o->warm && s->tpl[i].pool_min < o->warm) {
			s->tpl[i].pool_min = o->warm;
			if (s->tpl[i].pool_max < o->warm)
				s->tpl[i].pool_max = o->warm;
		}
	if (!(s->ctx = pd_ctx_new(NULL, e)))
		goto fail;
	for (size_t i = 0; i < s->ntpl; i++) {
		pd_template_check(s->ctx, &s->tpl[i]);
		if (!s->tpl[i].available)
			pd_log("warn", "template unavailable", "\"template\":\"%s\",\"failure_class\":\"dependency_missing\",\"missing\":\"%s\"",
			       s->tpl[i].name, s->tpl[i].missing);
	}
	if (!(s->pools = pd_pools_new(s->ctx, s->tpl, s->ntpl, NULL, e)))
		goto fail;
	char db[PD_PATH];
	if (o->db_path)
		snprintf(db, sizeof db, "%s", o->db_path);
	else
		snprintf(db, sizeof db, "%s/paddock.db", s->ctx->state_dir);
	if (!(s->store = pd_store_open(db, e)))
		goto fail;
	s->metrics = pd_metrics_new();
	if (!(s->sched = pd_sched_new(s->pools, s->store, s->metrics, &o->sched, e)))
		goto fail;
	s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME,
				  0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
				  MHD_OPTION_CONNECTION_LIMIT, s->o.max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned)120, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
	if (!s->mhd) {
		pd_fail(e, EIO, "start the HTTP server on %s", s->address);
		goto fail;
	}
	pd_log("info", "listening", "\"address\":\"%s\",\"cgroup\":\"%s\",\"templates\":%zu", s->address,
	       pd_ctx_cgroup_backend(s->ctx), s->ntpl);
	return s;
fail:
	pd_server_stop(s);
	return NULL;
}

void pd_server_stop(pd_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	pthread_mutex_unlock(&s->mu);
	if (s->mhd) {
		/* stop accepting; queued and running work still completes and is answered */
		int lfd = MHD_quiesce_daemon(s->mhd);
		if (lfd >= 0)
			close(lfd);
		s->listen_fd = -1;
	}
	if (s->sched)
		pd_sched_drain(s->sched);
	pthread_mutex_lock(&s->mu);
	while (s->session_ops)
		pthread_cond_wait(&s->ops_cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	if (s->mhd) {
		/* give resumed connections a moment to send what they were handed */
		for (int i = 0; i < 20; i++) {
			const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
			if (!di || di->num_connections == 0)
				break;
			usleep(50000);
		}
		MHD_stop_daemon(s->mhd);
	}
	for (int i = 0; i < MAX_SESSIONS; i++)
		if (s->sessions[i].s)
			pd_session_close(s->sessions[i].s);
	pd_sched_free(s->sched);
	pd_pools_free(s->pools);
	pd_store_close(s->store);
	pd_metrics_free(s->metrics);
	pd_templates_free(s->tpl, s->ntpl);
	pd_ctx_free(s->ctx);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->unix_path[0])
		unlink(s->unix_path);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->ops_cv);
	free(s);
}
