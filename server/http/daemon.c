/* The HTTP server: libmicrohttpd on an epoll thread. Nothing slow runs on that thread: a run is
 * parsed, queued on the scheduler and its connection suspended; a session operation runs on its
 * own thread; either resumes the connection with the response when done. So thousands of idle or
 * slow connections cost only sockets, and one client's slow upload holds up nobody.
 *
 * This file is the conductor of server/http/: start and stop (the daemon's parts built in order,
 * then libmicrohttpd), and libmicrohttpd's request callbacks (authorization, the body, the query
 * parameters, then http_route; the response the handler or its worker set, sent). It calls the
 * others; none calls it. http.h lists them. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- requests --------------------------------------------------------------------------------- */

static enum MHD_Result send_resp(struct MHD_Connection *c, req *r)
{
	struct MHD_Response *resp =
		r->resp_stream	 ? http_stream_response(r->resp_stream)
		: r->resp_from_fd ? MHD_create_response_from_fd64(r->resp_fd_len, r->resp_fd)
				  : MHD_create_response_from_buffer(r->resp_len, r->resp ? r->resp : (char *)"",
								    MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO; /* on_completed frees what is left */
	r->resp = NULL; /* MHD owns it now (the buffer, the descriptor or the stream) */
	r->resp_from_fd = false;
	r->resp_stream = NULL;
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
		http_set_error(r, 401, "a valid 'Authorization: Bearer <token>' header is required");
		return send_resp(c, r);
	}
	if (r->too_big) {
		http_set_error(r, 413, "request body over %zu bytes", s->o.max_body);
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
	{
		const char *v = NULL;
		size_t vlen = 0;
		if (MHD_lookup_connection_value_n(c, MHD_HEADER_KIND, "X-Request-Id", 12, &v, &vlen) == MHD_YES)
			pd_session_query_set(&r->q, "X-Request-Id", v, vlen);
	}
	http_route(r, url, method);
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
	/* a batch's watch lasts as long as its request (hangup_watch_fn) */
	if (r->hup_owned)
		hangup_unwatch(r);
	http_req_free(r);
	*con_cls = NULL;
}
/* ---- start and stop -------------------------------------------------------------------------- */

/* The pools' reclaimer finished with a use of a sandbox: its stored record's residue and teardown
 * cost completed (with the next record's commit while a job runs: store_residue.c). */
static void reclaimed(void *store, const char *use_id, const char *residue, uint64_t teardown_us)
{
	pd_store_reclaimed_later(store, use_id, residue, (int64_t)teardown_us);
}

static int bind_listen(pd_server *s, pd_err *e)
{
	const char *l = s->o.listen ? s->o.listen : "127.0.0.1:8080";
	listen_addr a;
	if (settings_listen(l, s->o.token, &a, e) < 0)
		return -1;
	int fd;
	if (a.is_unix) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a.path);
		snprintf(s->unix_path, sizeof s->unix_path, "%s", a.path);
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
	struct sockaddr_in sa = a.in;
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
	snprintf(s->address, sizeof s->address, "%s:%u", a.host, ntohs(sa.sin_port));
	s->listen_fd = fd;
	return 0;
}

const char *pd_server_address(const pd_server *s)
{
	return s->address;
}

/* The templates: loaded, their network twins added, their rules checked, their nofile within the
 * daemon's hard limit, warmed as asked, and checked against this host (a context made for that). */
static int start_templates(pd_server *s, const pd_server_opts *o, pd_err *e)
{
	int rc = o->templates_file ? pd_templates_load(o->templates_file, &s->tpl, &s->ntpl, e)
				   : pd_templates_default(&s->tpl, &s->ntpl, e);
	if (rc < 0)
		return -1;
	if (netmodes_add(s, e) < 0 || session_rules_check_templates(s->tpl, s->ntpl, e) < 0)
		return -1;
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
		/* the network twins stay cold: built on demand */
		if (o->warm && s->tpl[i].pool_min < o->warm && !strstr(s->tpl[i].name, ".net-")) {
			s->tpl[i].pool_min = o->warm;
			if (s->tpl[i].pool_max < o->warm)
				s->tpl[i].pool_max = o->warm;
		}
	/* versions for Piston's clients, asked of the toolchains while the pools start */
	pd_languages_probe();
	if (!(s->ctx = pd_ctx_new(NULL, e)))
		return -1;
	for (size_t i = 0; i < s->ntpl; i++) {
		pd_template_check(s->ctx, &s->tpl[i]);
		if (!s->tpl[i].available)
			pd_log("warn", "template unavailable", PD_LS("template", s->tpl[i].name),
			       PD_LS("failure_class", "dependency_missing"), PD_LS("missing", s->tpl[i].missing));
	}
	return 0;
}

/* The store (before the pools: their reclaimers complete its records' residue), the spilled
 * outputs' directory beside it, its review settings, and the per-problem submission caps. */
static int start_store(pd_server *s, const pd_server_opts *o, pd_err *e)
{
	char db[PATH_MAX];
	if (o->db_path)
		snprintf(db, sizeof db, "%s", o->db_path);
	else
		snprintf(db, sizeof db, "%s/paddock.db", pd_ctx_state_dir(s->ctx));
	uint64_t cap = o->store_max ? o->store_max : (1ull << 30);
	if ((o->db_path && settings_db(o->db_path, e) < 0) || !(s->store = pd_store_open(db, cap == UINT64_MAX ? 0 : cap, e)))
		return -1;
	if (pd_run_output_init(db, s->output_dir, sizeof s->output_dir, e) < 0)
		return -1;
	pd_review_cfg rv;
	pd_review_cfg_default(&rv);
	const struct {
		unsigned given, *to;
	} knobs[] = {
		{o->review_min_samples, &rv.min_samples},   {o->review_rare_percent, &rv.rare_percent},
		{o->review_fast_percent, &rv.fast_percent}, {o->review_short_percent, &rv.short_percent},
		{o->review_jump_percent, &rv.jump_percent}, {o->review_group_min, &rv.group_min},
	};
	for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
		if (knobs[i].given)
			*knobs[i].to = knobs[i].given == UINT_MAX ? 0 : knobs[i].given;
	pd_store_set_review(s->store, &rv);
	if (!(s->caps = pd_caps_new(o->problem_submit_max == UINT_MAX ? 0 : o->problem_submit_max,
				    o->problem_submit_window)))
		return pd_fail(e, ENOMEM, "caps");
	return 0;
}

/* The pools, the judge over them, and --problems DIR loaded and prepared. */
static int start_pools(pd_server *s, const pd_server_opts *o, pd_err *e)
{
	/* refills of the warm pools stay out of the connections' share of descriptors too (at a
	 * large limit the share is never reached and the per-build count is not worth it) */
	pd_pools_opts po = {.on_reclaimed = reclaimed, .on_reclaimed_arg = s->store};
	po.image_pools = o->image_pools;
	po.image_ready_max = o->image_ready;
	po.trajectory_retention_s = o->trajectory_retention == UINT_MAX ? 0
				    : o->trajectory_retention       ? o->trajectory_retention
								    : 30u * 86400;
	if (s->fd_limit && s->fd_limit <= 65536)
		po.fd_reserve = s->o.max_connections + FD_MARGIN;
	if (!(s->pools = pd_pools_new(s->ctx, s->tpl, s->ntpl, &po, e)))
		return -1;
	if (!(s->judge = pd_judge_new(s->pools, NULL, e)))
		return -1;
	/* a problem the judge cannot judge (a checker that does not build) stops the start, with the
	 * file and field: found now, not at the first submission */
	if (o->problems_dir) {
		if (pd_problems_load_dir(o->problems_dir, &s->problems, e) < 0)
			return -1;
		for (size_t i = 0; i < s->problems.n; i++)
			if (pd_judge_prepare(s->judge, s->problems.p[i], e) < 0)
				return -1;
		pd_log("info", "problems loaded", PD_LS("dir", o->problems_dir), PD_LU("problems", s->problems.n));
	}
	return 0;
}

/* The metrics and the scheduler (its breaker, memory watermark and budget as serve's flags say). */
static int start_sched(pd_server *s, const pd_server_opts *o, pd_err *e)
{
	s->metrics = pd_metrics_new();
	pd_sched_opts so = o->sched;
	if (o->breaker_fail_percent)
		so.breaker_fail_ratio = o->breaker_fail_percent / 100.0;
	if (o->breaker_min_jobs)
		so.breaker_min_jobs = o->breaker_min_jobs;
	if (o->breaker_cooldown_s)
		so.breaker_cooldown_ms = (uint64_t)o->breaker_cooldown_s * 1000;
	if (o->memory_watermark && settings_watermark(o->memory_watermark, &so, e) < 0)
		return -1;
	if (o->memory_budget && settings_budget(o->memory_budget, &so, e) < 0)
		return -1;
	if (!(s->sched = pd_sched_new(s->pools, s->store, s->metrics, &so, e)))
		return -1;
	runs_intake_init(s);
	return 0;
}

/* This node's part of a cluster (--cluster): none without it. */
static int start_cluster(pd_server *s, const pd_server_opts *o, pd_err *e)
{
	if (!o->cluster)
		return 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pd_cluster_opts co = {.urls = o->cluster, .node_id = o->node_id, .address = s->address,
			      .ack_wait_s = o->cluster_ack_wait, .token = o->token,
			      .max_deliver = o->cluster_max_deliver, .records_max_age_s = o->cluster_records_max_age,
			      .records_max_bytes = o->cluster_records_max_bytes,
			      .objects = o->cluster_objects, .s3_endpoint = o->cluster_s3_endpoint,
			      .s3_region = o->cluster_s3_region, .s3_credentials = o->cluster_s3_credentials,
			      .s3_ca = o->cluster_s3_ca,
			      .intake = &s->intake,
			      .slots = o->sched.workers ? o->sched.workers : (unsigned)(cpus > 0 ? 2 * cpus : 2)};
	if (!(s->cluster = pd_cluster_start(&co, s->sched, s->pools, s->ctx, s->store, e)))
		return -1;
	return 0;
}

/* libmicrohttpd on the bound listener. The limits are enforced (and counted) by conns_on_accept;
 * libmicrohttpd's own limit, a little higher, is only the backstop. */
static int start_mhd(pd_server *s, pd_err *e)
{
	s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME,
				  0, conns_on_accept, s, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
				  MHD_OPTION_CONNECTION_LIMIT, s->o.max_connections + 8, MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned)120, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				  MHD_OPTION_NOTIFY_CONNECTION, conns_on_connection, s, MHD_OPTION_END);
	if (!s->mhd)
		return pd_fail_as(e, EIO, "start the HTTP server on %s", s->address);
	return 0;
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
	s->hup_epfd = s->hup_evfd = -1;
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
	if (conns_parse_exempt(s, o->per_ip_exempt ? o->per_ip_exempt : "127.0.0.0/8", e) < 0)
		goto fail;
	if (!(s->ips = calloc((size_t)s->o.max_connections + 16, sizeof *s->ips))) {
		pd_fail(e, ENOMEM, "connection table");
		goto fail;
	}
	/* each part needs the ones before it: the listener's address goes to the cluster, the
	 * context to the store's default path, the store to the pools, the pools to the scheduler */
	if (bind_listen(s, e) < 0 || start_templates(s, o, e) < 0 || start_store(s, o, e) < 0 ||
	    start_pools(s, o, e) < 0 || start_sched(s, o, e) < 0 || hangup_start(s, e) < 0 ||
	    start_cluster(s, o, e) < 0 || start_mhd(s, e) < 0)
		goto fail;
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
		/* stop accepting; queued and running work still completes and is answered. The socket is
		 * shut down now (new clients are refused) but closed only after MHD_stop_daemon below:
		 * libmicrohttpd's thread removes it from its epoll set a little later, and a close here let
		 * another descriptor take its number meanwhile (its docs say so; make tsan, bench.t) */
		int lfd = MHD_quiesce_daemon(s->mhd);
		if (lfd >= 0)
			shutdown(lfd, SHUT_RDWR);
		s->listen_fd = lfd;
	}
	/* a node stops pulling before its scheduler drains: what it pulled finishes, is recorded and
	 * acked; what it did not stays in the stream for the others */
	pd_cluster_quiesce(s->cluster);
	if (s->sched)
		pd_sched_drain(s->sched);
	/* after the drain: a client that leaves meanwhile still cancels its job */
	hangup_stop(s);
	/* stopped, not freed: the event thread still reads s->cluster for the requests of open
	 * connections until MHD_stop_daemon below (make tsan saw the old NULL store race with it; in
	 * cluster mode that was a read of freed memory) */
	pd_cluster_stop(s->cluster);
	sessions_drain(s);
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
	pd_cluster_free(s->cluster);
	s->cluster = NULL;
	for (int i = 0; i < MAX_SESSIONS; i++) {
		if (s->sessions[i].s)
			pd_session_close_lost(s->sessions[i].s, PD_SESSION_LOST_STOP);
		/* with no rules, this frees what the slot's last episode held (its rules, their state,
		 * its refusals), else freed only at the slot's next open (make asan, episode_rules.t) */
		session_rules_open(&s->sessions[i], NULL, NULL, NULL);
	}
	pd_sched_free(s->sched);
	pd_judge_free(s->judge);
	pd_caps_free(s->caps);
	pd_problems_free(&s->problems);
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

