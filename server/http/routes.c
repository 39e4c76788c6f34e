/* Routing: the route table, one row per endpoint (method, path, handler), and the endpoints small
 * enough to answer here. A request is routed once its body is in (http.c's on_request): the first
 * row whose method and path match (a path ending in '/' matches every path under it) handles it;
 * none matching is a 404 naming the method and path. A handler answers at once (http_set_*), or
 * suspends the connection and has a worker answer later (runs.c, sessions.c). */
#define _GNU_SOURCE
#include "http.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void healthz(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	/* the run id: the daemon's session ids (ss-<run>-<n>) carry it; it tells this run from a
	 * restarted one */
	char run[16];
	snprintf(run, sizeof run, "%08" PRIx32, pd_ctx_run_id(r->srv->ctx));
	http_set_json(r, 200, json_pack("{s:s,s:s}", "status", "ok", "run_id", run));
}

static void readyz(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	pd_server *s = r->srv;
	bool open = pd_sched_breaker_open(s->sched), full = pd_store_full(s->store, NULL, 0);
	/* stopping is s->mu's (http.h): pd_server_stop sets it while this thread still answers
	 * (make tsan, auth.t) */
	pthread_mutex_lock(&s->mu);
	bool stopping = s->stopping;
	pthread_mutex_unlock(&s->mu);
	bool ready = !open && !full && !stopping;
	http_set_json(r, ready ? 200 : 503,
		      json_pack("{s:s,s:b,s:b}", "status", ready ? "ready" : "not ready", "breaker_open", open,
				"disk_full", full));
}

static void metrics(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	char *text = prometheus_text(r->srv);
	http_set_resp(r, 200, "text/plain; version=0.0.4", text, text ? strlen(text) : 0);
}

static void ping(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	/* SandboxFusion's liveness check answers the bare string */
	http_set_resp(r, 200, "application/json", strdup("\"pong\""), 6);
}

static void runtimes(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	http_set_json(r, 200, piston_runtimes(r->srv));
}

static void pools(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	http_set_json(r, 200, json_pack("{s:o}", "pools", pools_json(r->srv)));
}

typedef struct route {
	const char *method; /* NULL: any */
	const char *path;   /* ending in '/': a prefix */
	void (*handle)(req *r, const char *url, const char *method);
} route;

static const route routes[] = {
	{"GET", "/healthz", healthz},
	{"GET", "/readyz", readyz},
	{"GET", "/metrics", metrics},
	/* native (POST /v1/runs, /run_code, /api/v2/execute: the run APIs' rows, pd_api.route) */
	{"GET", "/v1/runs", records_list},
	{"GET", "/v1/runs/", records_get},
	{"GET", "/v1/groups/", groups_get},
	{"POST", "/v1/judge", judge_submit},
	{"GET", "/v1/review", review_list_http},
	{"GET", "/v1/review/risk", review_risk_http},
	{"DELETE", "/v1/review/risk/", review_risk_remove_http},
	{"POST", "/v1/review/", review_decide_http},
	{"GET", "/v1/pools", pools},
	{"POST", "/v1/sessions", sessions_create},
	{"GET", "/v1/sessions", sessions_list},
	{NULL, "/v1/sessions/", cluster_session_op}, /* sessions_op, unless on another node */
	/* a trajectory replayed in a new session: on a session operation's thread (replay.c) */
	{"POST", "/v1/replay", sessions_create},
	{"GET", "/v1/cluster", cluster_list},
	{"GET", "/v1/cluster/results/", cluster_result},
	/* SandboxFusion */
	{"GET", "/v1/ping", ping},
	/* Piston */
	{"GET", "/api/v2/runtimes", runtimes},
};

void http_route(req *r, const char *url, const char *method)
{
	/* a run API comes in on its row's route: adding one touches no file here */
	const pd_api *api = !strcmp(method, "POST") ? pd_api_route(url) : NULL;
	if (api) {
		runs_submit(r, api);
		return;
	}
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const route *rt = &routes[i];
		size_t n = strlen(rt->path);
		bool match = rt->path[n - 1] == '/' ? !strncmp(url, rt->path, n) : !strcmp(url, rt->path);
		if (match && (!rt->method || !strcmp(method, rt->method))) {
			rt->handle(r, url, method);
			return;
		}
	}
	http_set_error(r, 404, "no such endpoint: %s %s", method, url);
}
