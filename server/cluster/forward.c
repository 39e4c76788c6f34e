/* The HTTP side of cluster mode: GET /v1/cluster, and session requests for a session another
 * node holds. A session lives on the node that made it (its sandbox is there); its id names that
 * node (by the node's run id), and any other node forwards the request to it over HTTP, on a
 * thread of its own (counted with the session operations, so a stop waits for it), and relays the
 * answer. A node that is gone takes its sessions with it: 410, saying so. */
#define _GNU_SOURCE
#include "http/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cluster_list(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	if (!r->srv->cluster) {
		http_set_error(r, 404, "this daemon is not part of a cluster (serve --cluster)");
		return;
	}
	/* a few bucket reads: quick next to what the event thread waits for elsewhere */
	http_set_json(r, 200, pd_cluster_nodes(r->srv->cluster));
}

void cluster_result(req *r, const char *url, const char *method)
{
	(void)method;
	if (!r->srv->cluster) {
		http_set_error(r, 404, "this daemon is not part of a cluster (serve --cluster)");
		return;
	}
	char *text = NULL;
	size_t len = 0;
	pd_err e = {0};
	/* a file read on the event thread: local disk, once per oversize result */
	if (pd_cluster_result_file(r->srv->cluster, url + strlen("/v1/cluster/results/"), &text, &len, &e) < 0) {
		http_set_error(r, e.code == ENOENT ? 404 : e.code == EINVAL ? 400 : 500, "%s", PD_ERR_STR(&e));
		return;
	}
	http_set_resp(r, 200, "application/json", text, len);
}

typedef struct fwd {
	req *r;
	char addr[160]; /* "": the node is gone (what it published answers, sessobj.c) */
	char id[64], op[64], why[300];
	char target[4096];
	char headers[4096];
} fwd;

static void pct(FILE *f, const char *key, const char *v)
{
	fprintf(f, "%s=", key);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-_.~/", *p))
			fputc(*p, f);
		else
			fprintf(f, "%%%02X", *p);
	fputc('&', f);
}

/* The session API's query parameters as this node parsed them (the five it reads). */
static void target_of(req *r, const char *url, char *out, size_t len)
{
	char *q = NULL;
	size_t ql = 0;
	FILE *f = open_memstream(&q, &ql);
	if (f) {
		if (r->q.path[0])
			pct(f, "path", r->q.path);
		if (r->q.dir[0])
			pct(f, "dir", r->q.dir);
		if (r->q.request_id[0])
			pct(f, "request_id", r->q.request_id);
		if (r->q.stderr_stream)
			fputs("stream=stderr&", f);
		if (r->q.list)
			fputs("list=1&", f);
		fclose(f);
	}
	if (q && ql)
		q[ql - 1] = 0; /* the last '&' */
	snprintf(out, len, "%s%s%s", url, q && ql ? "?" : "", q && ql ? q : "");
	free(q);
}

static const char *ctype_of(const char *t)
{
	static const char *const known[] = {"application/json", "application/x-tar", "application/octet-stream",
					    "text/plain", NULL};
	for (int i = 0; t && known[i]; i++)
		if (!strncmp(t, known[i], strlen(known[i])))
			return known[i];
	return "application/octet-stream";
}

static void *forward_main(void *arg)
{
	fwd *f = arg;
	req *r = f->r;
	pd_server *s = r->srv;
	int status = 0;
	char *ctype = NULL, *resp = NULL;
	size_t rlen = 0;
	pd_err e = {0};
	/* a session operation may run for as long as its client asked (an exec's timeout): the
	 * forwarder waits as long as a direct client would */
	if (!f->addr[0]) {
		if (!cluster_session_kept(r, f->id, f->op))
			http_set_error(r, 410, "%s", f->why);
	} else if (pd_http_call(f->addr, r->method, f->target, f->headers, r->body, r->len, 600 * 1000, &status,
				&ctype, &resp, &rlen, &e) == 0) {
		http_set_resp(r, status, ctype_of(ctype), resp, rlen);
	} else if ((e.code == ECONNREFUSED || e.code == EHOSTUNREACH || e.code == ENETUNREACH) &&
		   cluster_session_kept(r, f->id, f->op)) {
		/* gone before its heartbeat expired: answered from what it published */
	} else if (e.code == ECONNREFUSED || e.code == EHOSTUNREACH || e.code == ENETUNREACH) {
		http_set_error(r, 410, "the node holding this session (%s) is gone: %s; its sandbox and state went with it",
			       f->addr, PD_ERR_STR(&e));
	} else {
		http_set_error(r, 502, "forwarding to the node holding this session (%s): %s", f->addr, PD_ERR_STR(&e));
	}
	free(ctype);
	free(f);
	http_resume(r);
	pthread_mutex_lock(&s->mu);
	if (--s->session_ops == 0)
		pthread_cond_broadcast(&s->ops_cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

void cluster_session_op(req *r, const char *url, const char *method)
{
	pd_server *s = r->srv;
	char id[64], op[64], addr[160], why[300] = "";
	/* a request forwarded once is this node's to answer, whatever it thinks of the id */
	const char *fwd_hdr = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Paddock-Forwarded");
	if (!s->cluster || fwd_hdr || pd_session_url(url, id, sizeof id, op, sizeof op) < 0) {
		sessions_op(r, url, method);
		return;
	}
	int where = pd_cluster_session_node(s->cluster, id, addr, sizeof addr, why, sizeof why);
	if (where == 0) {
		sessions_op(r, url, method);
		return;
	}
	/* a gone node's trajectory, outputs and downloads: from the broker, on a thread below */
	if (where < 0 && !cluster_session_kept_op(method, op)) {
		http_set_error(r, 410, "%s", why);
		return;
	}
	fwd *f = calloc(1, sizeof *f);
	if (!f) {
		http_set_error(r, 503, "out of memory");
		return;
	}
	f->r = r;
	snprintf(f->addr, sizeof f->addr, "%s", where > 0 ? addr : "");
	snprintf(f->id, sizeof f->id, "%s", id);
	snprintf(f->op, sizeof f->op, "%s", op);
	snprintf(f->why, sizeof f->why, "%s", why);
	snprintf(r->method, sizeof r->method, "%s", method);
	target_of(r, url, f->target, sizeof f->target);
	const char *auth = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
	snprintf(f->headers, sizeof f->headers, "X-Paddock-Forwarded: %s\r\n%s%.2000s%s%s%.200s%s",
		 pd_cluster_node_id(s->cluster), auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "",
		 ct ? "Content-Type: " : "", ct ? ct : "", ct ? "\r\n" : "");
	pthread_mutex_lock(&s->mu);
	if (s->session_ops >= MAX_SESSION_OPS || s->stopping) {
		pthread_mutex_unlock(&s->mu);
		free(f);
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
	if (pthread_create(&t, &at, forward_main, f) != 0) {
		free(f);
		http_set_error(r, 503, "no thread to forward the request: retry later");
		r->retry_after = 1;
		pthread_mutex_lock(&s->mu);
		if (--s->session_ops == 0)
			pthread_cond_broadcast(&s->ops_cv);
		MHD_resume_connection(r->conn);
		pthread_mutex_unlock(&s->mu);
	}
	pthread_attr_destroy(&at);
}
