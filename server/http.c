/* The HTTP server: libmicrohttpd on an epoll thread. Nothing slow runs on that thread: a run is
 * parsed, queued on the scheduler and its connection suspended; a session operation runs on its
 * own thread; either resumes the connection with the response when done. So thousands of idle or
 * slow connections cost only sockets, and one client's slow upload holds up nobody. */
#define _GNU_SOURCE
#include "server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include "mhd.h" /* <microhttpd.h>, its functions loaded on first use */
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_SESSIONS 4096
#define MAX_SESSION_OPS 256
#define MAX_EXEMPT 16

/* Open connections per client address (IPv4), for the per-address limit. Only the event thread
 * touches it (the accept policy and connection notifications both run there): no lock. A plain
 * array, linear search: it holds only the addresses connected now, at most max_connections. */
typedef struct ip_count {
	uint32_t ip;
	unsigned n;
} ip_count;

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
	/* connections: the per-address limit and its figures (metrics read them from any thread) */
	ip_count *ips;
	size_t nips;
	struct {
		uint32_t net, mask;
	} exempt[MAX_EXEMPT];
	size_t nexempt;
	unsigned conns_open;
	uint64_t refused_per_ip, refused_limit;
	uint64_t refusal_logged_us;
	/* file descriptors: RLIMIT_NOFILE (0 = unlimited) and the work refused for lack of them */
	uint64_t fd_limit;
	uint64_t fd_refused;
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
	/* or a file sent from its descriptor (an archive, a spilled output): held whole in memory
	 * it could take the daemon's memory; resp_fd is valid while resp_from_fd */
	bool resp_from_fd;
	int resp_fd;
	uint64_t resp_fd_len;
	const char *content_type;
	unsigned retry_after;
	kind k;
	/* session operations */
	char method[8];
	char url[512];
	pd_session_query q;
} req;

/* ---- responses ------------------------------------------------------------------------------- */

static void drop_resp_fd(req *r)
{
	if (r->resp_from_fd)
		close(r->resp_fd);
	r->resp_from_fd = false;
}

/* The body is fd's first len bytes, sent by libmicrohttpd, which closes fd. */
static void set_resp_fd(req *r, int status, const char *ctype, int fd, uint64_t len)
{
	free(r->resp);
	r->resp = NULL;
	r->resp_len = 0;
	drop_resp_fd(r);
	r->status = status;
	r->content_type = ctype;
	r->resp_from_fd = true;
	r->resp_fd = fd;
	r->resp_fd_len = len;
}

static void set_resp(req *r, int status, const char *ctype, char *body, size_t len)
{
	drop_resp_fd(r);
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
		r->resp_from_fd
			? MHD_create_response_from_fd64(r->resp_fd_len, r->resp_fd)
			: MHD_create_response_from_buffer(r->resp_len, r->resp ? r->resp : (char *)"", MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO; /* on_completed frees what is left */
	r->resp = NULL; /* MHD owns it now (the buffer, or the descriptor) */
	r->resp_from_fd = false;
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

/* ---- file descriptors ------------------------------------------------------------------------ */

/* Every connection and every sandbox holds descriptors (a sandbox: its init's socket, a pidfd,
 * its uid-slot lock, and a dozen more while it is built). The connection limit keeps connections
 * within their share of RLIMIT_NOFILE; this keeps sandboxes within theirs, so that the last
 * descriptors are always there for accept(). Without it, sessions could take every descriptor:
 * accept() would fail with EMFILE, libmicrohttpd would stop accepting (or, with no connection
 * open, retry accept() in a busy loop), and clients would wait unanswered in the backlog. */
#define FD_MARGIN 16      /* the store, logs, a pipe or two */
#define FD_PER_SANDBOX 16 /* what building one sandbox may hold at once */

static long fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1; /* no descriptor even for this: as short as can be */
	long n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/* Whether the template's pool has a READY sandbox: taking it needs no new descriptor (its own are
 * open already, and counted). */
static bool pool_has_ready(pd_server *s, const char *template_name)
{
	size_t n;
	pd_pool_stats *st = pd_pools_stats(s->pools, &n);
	bool ready = false;
	for (size_t i = 0; st && i < n && !ready; i++)
		ready = !strcmp(st[i].template_name, template_name) && st[i].ready > 0;
	free(st);
	return ready;
}

/* True (and why, in msg) when a sandbox of this template would have to be built from descriptors
 * kept for the connections that may still come. */
static bool fds_short(pd_server *s, const char *template_name, char *msg, size_t len)
{
	/* a READY sandbox needs no new descriptor, and checking for one is cheaper than counting
	 * the open descriptors in /proc/self/fd */
	if (!s->fd_limit || pool_has_ready(s, template_name))
		return false;
	long open_ = fds_open();
	unsigned conns = __atomic_load_n(&s->conns_open, __ATOMIC_RELAXED);
	uint64_t conn_room = s->o.max_connections > conns ? s->o.max_connections - conns : 0;
	uint64_t need = conn_room + FD_MARGIN + FD_PER_SANDBOX;
	uint64_t free_ = open_ < 0 ? 0 : s->fd_limit > (uint64_t)open_ ? s->fd_limit - (uint64_t)open_ : 0;
	if (free_ >= need)
		return false;
	__atomic_add_fetch(&s->fd_refused, 1, __ATOMIC_RELAXED);
	snprintf(msg, len,
		 "out of file descriptors: %llu of %llu free, %llu kept for connections and the daemon: retry later",
		 (unsigned long long)free_, (unsigned long long)s->fd_limit,
		 (unsigned long long)(conn_room + FD_MARGIN));
	return true;
}

/* ---- jobs ------------------------------------------------------------------------------------ */

/* Hands an answered request back to the event thread. Once resumed, the event thread may answer
 * and free r at any moment: r is not touched after the resume. */
static void resume(req *r)
{
	pd_server *srv = r->srv;
	struct MHD_Connection *conn = r->conn;
	pthread_mutex_lock(&srv->mu);
	MHD_resume_connection(conn);
	pthread_mutex_unlock(&srv->mu);
}

static void job_done(pd_job *j, void *arg)
{
	req *r = arg;
	if (j->store_errno) {
		/* ran, but not recorded: answering the result would let it be lost, so it is an error the
		 * client can retry (507 for a full disk) */
		r->retry_after = j->store_errno == ENOSPC ? 30 : 5;
		set_error(r, j->store_errno == ENOSPC ? 507 : 503,
			  "%sthe result of %s could not be recorded (%s) and was not kept: retry later",
			  j->store_errno == ENOSPC ? "disk full: " : "", j->task_id, j->store_error);
		pd_job_free(j);
		resume(r);
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
	set_json(r, status, out);
	pd_job_free(j);
	resume(r);
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
		snprintf(j->task_id, sizeof j->task_id, "t-%08" PRIx32 "-%" PRIu64, pd_ctx_run_id(r->srv->ctx),
			 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	}
	char fdwhy[300];
	if (fds_short(r->srv, j->template_name, fdwhy, sizeof fdwhy)) {
		pd_job_free(j);
		r->retry_after = 2;
		set_error(r, k == K_RUN_CODE ? 504 : 503, "%s", fdwhy);
		return;
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
	char why[600];
	if (a == PD_ADMIT_DISK_FULL) {
		/* not an overload to retry at once: the operator must free space */
		code = 507;
		r->retry_after = 30;
		if (!pd_store_full(r->srv->store, why, sizeof why))
			snprintf(why, sizeof why, "disk full: the results store cannot record results");
	}
	set_error(r, code, "%s", a == PD_ADMIT_FULL ? "queue full: retry later"
			       : a == PD_ADMIT_BREAKER ? "overloaded (circuit breaker open): retry later"
			       : a == PD_ADMIT_DISK_FULL ? why
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
	json_t *o = pd_result_json(&res, true);
	if (!o) {
		pd_result_free(&res);
		set_error(r, 500, "out of memory for the result");
		goto out;
	}
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
		/* sent from the file itself, not read into memory first: up to MAX_SESSION_OPS of
		 * these may run at once */
		uint64_t size;
		int fd = pd_sandbox_open_regular(sb, path, 64u << 20, &size, &e);
		if (fd < 0) {
			set_error(r, e.code == EFBIG ? 413 : 400, "%s", e.msg);
			return;
		}
		set_resp_fd(r, 200, "application/octet-stream", fd, size);
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
		int code = e.code == EBUSY ? 409 : e.code == ESRCH ? 410 : e.code == EFBIG ? 413 : 400;
		set_error(r, e.code == ENOSPC ? 507 : code, "%s", e.msg);
		close(fd);
		return;
	}
	off_t len = lseek(fd, 0, SEEK_END);
	if (len < 0) {
		set_error(r, 500, "archive: %s", strerror(errno));
		close(fd);
		return;
	}
	set_resp_fd(r, 200, "application/x-tar", fd, (uint64_t)len);
}

static void session_output(req *r, sess_entry *se)
{
	char path[PATH_MAX];
	pd_err e = {0};
	int stream = r->q.stderr_stream ? 2 : 1;
	if (pd_session_output_path(se->s, r->q.request_id, stream, path, sizeof path, &e) < 0) {
		set_error(r, 404, "%s", e.msg);
		return;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		set_error(r, 500, "read output: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	set_resp_fd(r, 200, "application/octet-stream", fd, (uint64_t)st.st_size);
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
	char why[300];
	if (fds_short(s, q.template_name, why, sizeof why)) {
		pd_session_create_req_free(&q);
		r->retry_after = 2;
		set_error(r, 503, "%s", why);
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
	pd_log("info", "session opened", PD_LS("session_id", pd_session_id(ss)),
	       PD_LS("sandbox_id", pd_sandbox_id(pd_session_sandbox(ss))), PD_LS("template", tpl));
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
	pd_log("info", "session closed", PD_LS("session_id", id));
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

/* ---- connections ----------------------------------------------------------------------------- */

/* The client's IPv4 address, false for another family (a unix socket has none). */
static bool client_ipv4(const struct sockaddr *sa, socklen_t len, uint32_t *ip)
{
	if (!sa || sa->sa_family != AF_INET || len < (socklen_t)sizeof(struct sockaddr_in))
		return false;
	*ip = ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr);
	return true;
}

static bool ip_exempt(const pd_server *s, uint32_t ip)
{
	for (size_t i = 0; i < s->nexempt; i++)
		if ((ip & s->exempt[i].mask) == s->exempt[i].net)
			return true;
	return false;
}

static ip_count *ip_find(pd_server *s, uint32_t ip)
{
	for (size_t i = 0; i < s->nips; i++)
		if (s->ips[i].ip == ip)
			return &s->ips[i];
	return NULL;
}

/* A refusal is logged at most once a second: a client hammering the limit must not flood the log. */
static void log_refusal(pd_server *s, const char *reason, uint32_t ip)
{
	uint64_t now = pd_now_us();
	if (now - s->refusal_logged_us < 1000000)
		return;
	s->refusal_logged_us = now;
	char client[16];
	snprintf(client, sizeof client, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
	pd_log("warn", "connection refused", PD_LS("reason", reason), PD_LS("client", client),
	       PD_LU("open", __atomic_load_n(&s->conns_open, __ATOMIC_RELAXED)));
}

/* libmicrohttpd's accept policy: called on the event thread for each accepted socket, before any
 * byte is read; MHD_NO closes it at once. This is where one address is kept from taking every
 * connection slot (libmicrohttpd's own per-IP limit would refuse as well, but without telling us,
 * so the refusals could not be counted). */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	pd_server *s = cls;
	uint32_t ip = 0;
	bool v4 = client_ipv4(addr, addrlen, &ip);
	if (__atomic_load_n(&s->conns_open, __ATOMIC_RELAXED) >= s->o.max_connections) {
		__atomic_add_fetch(&s->refused_limit, 1, __ATOMIC_RELAXED);
		log_refusal(s, "max_connections", ip);
		return MHD_NO;
	}
	if (!v4 || s->o.max_conns_per_ip == UINT_MAX || ip_exempt(s, ip))
		return MHD_YES;
	ip_count *c = ip_find(s, ip);
	if (c && c->n >= s->o.max_conns_per_ip) {
		__atomic_add_fetch(&s->refused_per_ip, 1, __ATOMIC_RELAXED);
		log_refusal(s, "max_connections_per_ip", ip);
		return MHD_NO;
	}
	return MHD_YES;
}

/* Counts connections as libmicrohttpd starts and closes them; *socket_context remembers whether
 * this one was counted against its address (1 + the address), so the close undoes exactly that. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	pd_server *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		__atomic_add_fetch(&s->conns_open, 1, __ATOMIC_RELAXED);
		*socket_context = NULL;
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		uint32_t ip;
		if (!ci || !client_ipv4(ci->client_addr, sizeof(struct sockaddr_in), &ip) || ip_exempt(s, ip) ||
		    s->o.max_conns_per_ip == UINT_MAX)
			return;
		ip_count *e = ip_find(s, ip);
		if (!e) {
			if (s->nips >= (size_t)s->o.max_connections + 16)
				return; /* cannot happen within the connection limit; uncounted beats a crash */
			e = &s->ips[s->nips++];
			*e = (ip_count){ip, 0};
		}
		e->n++;
		*socket_context = (void *)(uintptr_t)((uint64_t)ip + 1);
		return;
	}
	__atomic_sub_fetch(&s->conns_open, 1, __ATOMIC_RELAXED);
	if (!*socket_context)
		return;
	uint32_t ip = (uint32_t)((uintptr_t)*socket_context - 1);
	*socket_context = NULL;
	ip_count *e = ip_find(s, ip);
	if (e && --e->n == 0)
		*e = s->ips[--s->nips]; /* the last entry takes its place */
}

/* "10.0.0.0/8,192.168.1.7" into the exemption list. */
static int parse_exempt(pd_server *s, const char *list, pd_err *e)
{
	s->nexempt = 0;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", list);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		if (!strcmp(tok, "none"))
			continue;
		if (s->nexempt == MAX_EXEMPT)
			return pd_fail(e, EINVAL, "per_ip_exempt: at most %d networks", MAX_EXEMPT);
		char *slash = strchr(tok, '/');
		long bits = 32;
		if (slash) {
			char *end;
			*slash = 0;
			bits = strtol(slash + 1, &end, 10);
			if (*end || end == slash + 1 || bits < 0 || bits > 32)
				return pd_fail(e, EINVAL, "per_ip_exempt: '%s' has a bad prefix length", tok);
		}
		struct in_addr a;
		if (inet_pton(AF_INET, tok, &a) != 1)
			return pd_fail(e, EINVAL, "per_ip_exempt: '%s' is not an IPv4 address or network", tok);
		uint32_t mask = bits ? ~0u << (32 - bits) : 0;
		s->exempt[s->nexempt].mask = mask;
		s->exempt[s->nexempt].net = ntohl(a.s_addr) & mask;
		s->nexempt++;
	}
	return 0;
}

/* ---- routing --------------------------------------------------------------------------------- */

static json_t *pools_json(pd_server *s)
{
	size_t n;
	pd_pool_stats *st = pd_pools_stats(s->pools, &n);
	json_t *arr = json_array();
	for (size_t i = 0; st && i < n; i++)
		json_array_append_new(arr, json_pack("{s:s,s:b,s:i,s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
						     "template", st[i].template_name, "available",
						     st[i].available, "target", st[i].target, "ready", st[i].ready,
						     "in_use", st[i].in_use, "creating", st[i].creating,
						     "reclaiming", st[i].reclaiming, "acquires",
						     (json_int_t)st[i].acquires, "hits", (json_int_t)st[i].hits,
						     "created", (json_int_t)st[i].created, "destroyed",
						     (json_int_t)st[i].destroyed, "expired",
						     (json_int_t)st[i].expired, "forced_reclaims",
						     (json_int_t)st[i].forced_reclaims, "residue_failures",
						     (json_int_t)st[i].residue_failures, "resets",
						     (json_int_t)st[i].resets, "reset_refusals",
						     (json_int_t)st[i].reset_refusals, "resets_kept",
						     (json_int_t)st[i].resets_kept, "resets_scratch_kept",
						     (json_int_t)st[i].resets_scratch_kept));
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
		{"residue_failures_total", "teardowns that left something behind"},
		{"resets_total", "released sandboxes reset for the next user instead of destroyed"},
		{"reset_refusals_total", "resets refused (network state or processes left): destroyed instead"},
		{"resets_kept_total", "resets that kept the untouched root (only /tmp, /work, /dev/shm and devpts new)"},
		{"resets_scratch_kept_total",
		 "resets that kept the root and also /tmp, /work, /dev/shm and devpts (the last user only read them)"}};
	for (size_t c = 0; c < 12; c++) {
		fprintf(f, "# HELP paddock_pool_%s Pool %s, per template.\n# TYPE paddock_pool_%s counter\n",
			counters[c][0], counters[c][1], counters[c][0]);
		for (size_t i = 0; st && i < n; i++) {
			uint64_t v = c == 0 ? st[i].acquires : c == 1 ? st[i].hits : c == 2 ? st[i].created
				     : c == 3 ? st[i].create_failures : c == 4 ? st[i].destroyed
				     : c == 5 ? st[i].expired : c == 6 ? st[i].forced_reclaims
				     : c == 7 ? st[i].residue_failures : c == 8 ? st[i].resets
				     : c == 9 ? st[i].reset_refusals : c == 10 ? st[i].resets_kept
				     : st[i].resets_scratch_kept;
			fprintf(f, "paddock_pool_%s{template=\"%s\"} %llu\n", counters[c][0], st[i].template_name,
				(unsigned long long)v);
		}
	}
	pd_netns_stats ns;
	pd_ctx_netns_stats(s->ctx, &ns);
	fprintf(f, "# HELP paddock_netns_total Network namespaces: created, reused (proven untouched), "
		   "discarded (used, or not provably fresh).\n# TYPE paddock_netns_total counter\n"
		   "paddock_netns_total{outcome=\"created\"} %llu\npaddock_netns_total{outcome=\"reused\"} %llu\n"
		   "paddock_netns_total{outcome=\"discarded\"} %llu\n"
		   "# HELP paddock_netns_idle Network namespaces kept for reuse.\n# TYPE paddock_netns_idle gauge\n"
		   "paddock_netns_idle %llu\n",
		(unsigned long long)ns.created, (unsigned long long)ns.reused, (unsigned long long)ns.discarded,
		(unsigned long long)ns.idle);
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
	fprintf(f, "# HELP paddock_fds_open File descriptors the daemon holds.\n# TYPE paddock_fds_open gauge\n"
		   "paddock_fds_open %ld\n# HELP paddock_fds_limit Its RLIMIT_NOFILE (0: none).\n"
		   "# TYPE paddock_fds_limit gauge\npaddock_fds_limit %llu\n"
		   "# HELP paddock_fd_refusals_total Runs and sessions refused to keep descriptors for connections.\n"
		   "# TYPE paddock_fd_refusals_total counter\npaddock_fd_refusals_total %llu\n",
		fds_open(), (unsigned long long)s->fd_limit,
		(unsigned long long)__atomic_load_n(&s->fd_refused, __ATOMIC_RELAXED));
	uint64_t sf = 0, so = 0;
	pd_store_failures(s->store, &sf, &so);
	fprintf(f, "# HELP paddock_store_write_failures_total Results that could not be recorded (and were not answered as results).\n"
		   "# TYPE paddock_store_write_failures_total counter\n"
		   "paddock_store_write_failures_total{reason=\"disk_full\"} %llu\n"
		   "paddock_store_write_failures_total{reason=\"other\"} %llu\n"
		   "# HELP paddock_store_pruned_records_total Oldest records deleted to keep the store under its cap.\n"
		   "# TYPE paddock_store_pruned_records_total counter\n"
		   "paddock_store_pruned_records_total %llu\n",
		(unsigned long long)sf, (unsigned long long)so, (unsigned long long)pd_store_pruned(s->store));
	uint64_t used = 0, cap = 0;
	pd_store_size(s->store, &used, &cap);
	fprintf(f, "# HELP paddock_store_bytes Bytes the results store's records use.\n"
		   "# TYPE paddock_store_bytes gauge\npaddock_store_bytes %llu\n"
		   "# HELP paddock_store_cap_bytes Its cap (--store-max; 0: none).\n"
		   "# TYPE paddock_store_cap_bytes gauge\npaddock_store_cap_bytes %llu\n",
		(unsigned long long)used, (unsigned long long)cap);
	fprintf(f, "# HELP paddock_connections_open HTTP connections open now.\n"
		   "# TYPE paddock_connections_open gauge\npaddock_connections_open %u\n"
		   "# HELP paddock_connections_refused_total Connections closed at accept, by the limit that refused them.\n"
		   "# TYPE paddock_connections_refused_total counter\n"
		   "paddock_connections_refused_total{reason=\"max_connections\"} %llu\n"
		   "paddock_connections_refused_total{reason=\"max_connections_per_ip\"} %llu\n",
		__atomic_load_n(&s->conns_open, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&s->refused_limit, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&s->refused_per_ip, __ATOMIC_RELAXED));
	fclose(f);
	free(st);
	return out;
}

/* Piston's runtime list: each language once, by Piston's name, with its aliases and the version
 * its toolchain reports; only those this host can run. */
static json_t *piston_runtimes(pd_server *s)
{
	size_t n;
	const pd_runtime *rt = pd_piston_runtimes(&n);
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		const pd_language *l = pd_language_find(rt[i].paddock);
		const pd_template *t = l ? pd_pools_template(s->pools, l->template) : NULL;
		char p[256];
		bool have = false;
		static const char *const bins[] = {"/usr/local/bin", "/usr/bin", "/bin", NULL};
		for (int b = 0; l && bins[b] && !have; b++) {
			snprintf(p, sizeof p, "%s/%s", bins[b], l->requires);
			have = access(p, X_OK) == 0;
		}
		if (!t || !t->available || !have)
			continue;
		json_t *aliases = json_array();
		for (int a = 0; rt[i].aliases[a]; a++)
			json_array_append_new(aliases, json_string(rt[i].aliases[a]));
		json_t *o = json_pack("{s:s,s:s,s:o}", "language", rt[i].language, "version", pd_language_version(l),
				      "aliases", aliases);
		if (rt[i].runtime)
			json_object_set_new(o, "runtime", json_string(rt[i].runtime));
		json_array_append_new(arr, o);
	}
	return arr;
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
		bool open = pd_sched_breaker_open(s->sched), full = pd_store_full(s->store, NULL, 0);
		bool ready = !open && !full && !s->stopping;
		set_json(r, ready ? 200 : 503,
			 json_pack("{s:s,s:b,s:b}", "status", ready ? "ready" : "not ready", "breaker_open", open,
				   "disk_full", full));
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
		set_json(r, 200, piston_runtimes(s));
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
	drop_resp_fd(r);
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
	if (pd_mhd_load(e) < 0)
		return NULL;
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
	if (!s->o.max_conns_per_ip)
		s->o.max_conns_per_ip = 256;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->ops_cv, NULL);
	/* loopback by default: the host's own clients (a trainer on the node, a local proxy that
	 * carries everyone's requests) are not one remote address hogging the slots */
	if (parse_exempt(s, o->per_ip_exempt ? o->per_ip_exempt : "127.0.0.0/8", e) < 0)
		goto fail;
	if (!(s->ips = calloc((size_t)s->o.max_connections + 16, sizeof *s->ips))) {
		pd_fail(e, ENOMEM, "connection table");
		goto fail;
	}
	if (bind_listen(s, e) < 0)
		goto fail;
	int rc = o->templates_file ? pd_templates_load(o->templates_file, &s->tpl, &s->ntpl, e)
				   : pd_templates_default(&s->tpl, &s->ntpl, e);
	if (rc < 0)
		goto fail;
	/* a sandbox cannot raise a hard limit (no CAP_SYS_RESOURCE where it runs): a template's nofile
	 * above the daemon's own hard RLIMIT_NOFILE would make every exec fail, so it is lowered */
	struct rlimit nof;
	if (getrlimit(RLIMIT_NOFILE, &nof) == 0 && nof.rlim_cur != RLIM_INFINITY)
		s->fd_limit = nof.rlim_cur;
	if (getrlimit(RLIMIT_NOFILE, &nof) == 0 && nof.rlim_max != RLIM_INFINITY)
		for (size_t i = 0; i < s->ntpl; i++)
			if (s->tpl[i].limits.nofile > nof.rlim_max) {
				pd_log("warn", "template nofile lowered to the daemon's hard limit",
				       PD_LS("template", s->tpl[i].name), PD_LU("nofile", s->tpl[i].limits.nofile),
				       PD_LU("hard_limit", nof.rlim_max));
				s->tpl[i].limits.nofile = (uint32_t)nof.rlim_max;
			}
	for (size_t i = 0; i < s->ntpl; i++)
		if (o->warm && s->tpl[i].pool_min < o->warm) {
			s->tpl[i].pool_min = o->warm;
			if (s->tpl[i].pool_max < o->warm)
				s->tpl[i].pool_max = o->warm;
		}
	/* versions for Piston's clients, asked of the toolchains while the pools start */
	pd_languages_probe();
	if (!(s->ctx = pd_ctx_new(NULL, e)))
		goto fail;
	for (size_t i = 0; i < s->ntpl; i++) {
		pd_template_check(s->ctx, &s->tpl[i]);
		if (!s->tpl[i].available)
			pd_log("warn", "template unavailable", PD_LS("template", s->tpl[i].name),
			       PD_LS("failure_class", "dependency_missing"), PD_LS("missing", s->tpl[i].missing));
	}
	/* refills of the warm pools stay out of the connections' share of descriptors too (at a
	 * large limit the share is never reached and the per-build count is not worth it) */
	pd_pools_opts po = {0};
	if (s->fd_limit && s->fd_limit <= 65536)
		po.fd_reserve = s->o.max_connections + FD_MARGIN;
	if (!(s->pools = pd_pools_new(s->ctx, s->tpl, s->ntpl, &po, e)))
		goto fail;
	char db[PATH_MAX];
	if (o->db_path)
		snprintf(db, sizeof db, "%s", o->db_path);
	else
		snprintf(db, sizeof db, "%s/paddock.db", pd_ctx_state_dir(s->ctx));
	uint64_t cap = o->store_max ? o->store_max : (1ull << 30);
	if (!(s->store = pd_store_open(db, cap == UINT64_MAX ? 0 : cap, e)))
		goto fail;
	s->metrics = pd_metrics_new();
	if (!(s->sched = pd_sched_new(s->pools, s->store, s->metrics, &o->sched, e)))
		goto fail;
	/* the limits are enforced (and counted) by on_accept; libmicrohttpd's own limit, a little
	 * higher, is only the backstop */
	s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME,
				  0, on_accept, s, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
				  MHD_OPTION_CONNECTION_LIMIT, s->o.max_connections + 8, MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned)120, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
	if (!s->mhd) {
		pd_fail(e, EIO, "start the HTTP server on %s", s->address);
		goto fail;
	}
	pd_log("info", "listening", PD_LS("address", s->address), PD_LS("cgroup", pd_ctx_cgroup_backend(s->ctx)),
	       PD_LU("templates", s->ntpl));
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
	free(s->ips);
	free(s);
}
