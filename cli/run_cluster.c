/* paddock run --cluster URL[,URL...] FILE.jsonl: the batch goes to a cluster's nodes over HTTP
 * instead of this process's pools. Each line is posted (native to /v1/runs, SandboxFusion's to
 * /run_code) with an X-Request-Id: the line's request_id or task_id, else one made of this run's
 * tag and the line number. A refused or unanswered post (503, 504, a node gone) is retried with
 * the same id, on the next URL: the cluster runs a request id once and answers every retry with
 * the first result, so a retry never runs anything twice. The result lines are the nodes'
 * answers plus "line" and "request_id"; the summary is the local run's. */
#define _GNU_SOURCE
#include "cli.h"
#include "jsonl.h"
#include "server.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_URLS 16
#define TRIES 30

typedef struct crun {
	char urls[MAX_URLS][160];
	int nurls;
	json_t **reqs;
	const int *lines;
	size_t n, next;
	char tag[32];
	pthread_mutex_t mu;
	FILE *out;
	double *lat;
	size_t nlat, failed;
	uint64_t failure[PD_F_COUNT + 1];
	uint64_t retries;
} crun;

static int failure_index(const char *name)
{
	for (int f = 0; name && f < PD_F_COUNT; f++)
		if (!strcmp(name, pd_failure_name((pd_failure)f)))
			return f;
	return PD_F_COUNT;
}

static void one(crun *c, size_t i, int worker)
{
	json_t *o = c->reqs[i];
	bool rc = false;
	pd_err e = {0};
	/* the local parser says which API the line is for, and refuses what a node would */
	json_t *copy = json_deep_copy(o);
	pd_job *j = cli_run_job(copy, &rc, &e);
	char *body = pd_json_dumps(copy, JSON_COMPACT);
	json_decref(copy);
	char rid[128];
	const char *given = json_string_value(json_object_get(o, "request_id"));
	const char *task = json_string_value(json_object_get(o, "task_id"));
	if (given && *given)
		snprintf(rid, sizeof rid, "%s", given);
	else if (task && *task)
		snprintf(rid, sizeof rid, "%s", task);
	else
		snprintf(rid, sizeof rid, "%s-line-%d", c->tag, c->lines[i]);
	char *line = NULL;
	int fidx = PD_F_COUNT;
	uint64_t t0 = pd_now_us();
	if (!j) {
		line = cli_run_refusal(c->lines[i], task, PD_ERR_STR(&e));
	} else {
		pd_job_free(j);
		char hdr[300];
		snprintf(hdr, sizeof hdr, "Content-Type: application/json\r\nX-Request-Id: %s\r\n", rid);
		for (int t = 0; t < TRIES && !line; t++) {
			int status = 0;
			char *resp = NULL;
			size_t rlen = 0;
			pd_err he = {0};
			const char *u = c->urls[(worker + t) % c->nurls];
			if (pd_http_call(u, "POST", rc ? "/run_code" : "/v1/runs", hdr, body, strlen(body), 600 * 1000,
					 &status, NULL, &resp, &rlen, &he) == 0 &&
			    status != 503 && status != 504 && status != 502) {
				json_t *r = json_loadb(resp, rlen, 0, NULL);
				if (!r || !json_is_object(r)) {
					json_decref(r);
					r = json_pack("{s:s,s:i}", "error", "not a JSON object", "http_status", status);
				}
				if (status != 200)
					json_object_set_new(r, "http_status", json_integer(status));
				json_object_set_new(r, "line", json_integer(c->lines[i]));
				json_object_set_new(r, "request_id", json_string(rid));
				fidx = status == 200 ? failure_index(json_string_value(json_object_get(r, "failure_class")))
						     : PD_F_COUNT;
				line = pd_json_dumps(r, JSON_COMPACT);
				json_decref(r);
			} else {
				pthread_mutex_lock(&c->mu);
				c->retries++;
				pthread_mutex_unlock(&c->mu);
				usleep((useconds_t)(t < 10 ? 100000 * (t + 1) : 1000000));
			}
			free(resp);
		}
		if (!line) {
			char msg[200];
			snprintf(msg, sizeof msg, "no node of the cluster answered %s after %d tries", rid, TRIES);
			line = cli_run_unrun(c->lines[i], task, PD_F_INTERNAL, msg);
		}
	}
	free(body);
	pthread_mutex_lock(&c->mu);
	fprintf(c->out, "%s\n", line ? line : "{}");
	c->lat[c->nlat++] = (pd_now_us() - t0) / 1000.0;
	c->failure[fidx]++;
	if (fidx == PD_F_COUNT)
		c->failed++;
	pthread_mutex_unlock(&c->mu);
	free(line);
}

typedef struct wctx {
	crun *c;
	int worker;
} wctx;

static void *worker_main(void *arg)
{
	wctx *w = arg;
	crun *c = w->c;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		size_t i = c->next++;
		pthread_mutex_unlock(&c->mu);
		if (i >= c->n)
			break;
		one(c, i, w->worker);
	}
	return NULL;
}

int cli_run_cluster(const char *urls, json_t **reqs, const int *lines, size_t n, size_t bad, long workers,
		    FILE *out)
{
	crun c;
	memset(&c, 0, sizeof c);
	for (const char *p = urls; *p && c.nurls < MAX_URLS;) {
		size_t l = strcspn(p, ",");
		const char *u = p;
		if (!strncmp(u, "http://", 7))
			u += 7, l -= 7;
		snprintf(c.urls[c.nurls], sizeof c.urls[0], "%.*s", (int)l, u);
		c.urls[c.nurls][strcspn(c.urls[c.nurls], "/")] = 0;
		if (c.urls[c.nurls][0])
			c.nurls++;
		p = u + l;
		if (*p == ',')
			p++;
	}
	if (!c.nurls) {
		cli_error("run: --cluster %s: no http://HOST:PORT in it", urls);
		return EXIT_USAGE;
	}
	snprintf(c.tag, sizeof c.tag, "run-%08" PRIx64, (pd_now_us() ^ ((uint64_t)getpid() << 32)) & 0xffffffffu);
	c.reqs = reqs;
	c.lines = lines;
	c.n = n;
	c.out = out;
	c.lat = calloc(n ? n : 1, sizeof *c.lat);
	pthread_mutex_init(&c.mu, NULL);
	if (workers <= 0)
		workers = 16;
	pthread_t th[1024];
	wctx w[1024];
	uint64_t t0 = pd_now_us();
	int started = 0;
	for (long i = 0; i < workers && i < 1024; i++) {
		w[i].c = &c;
		w[i].worker = (int)i;
		if (pthread_create(&th[i], NULL, worker_main, &w[i]) == 0)
			started++;
	}
	if (!started)
		worker_main(&(wctx){&c, 0});
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	double secs = (pd_now_us() - t0) / 1e6;
	cli_sort_latencies(c.lat, c.nlat);
	fprintf(stderr,
		"paddock run --cluster: %zu requests in %.2f s: %.1f/s; latency p50 %.1f ms, p90 %.1f ms, p99 %.1f ms;"
		" retried posts %" PRIu64 "\n",
		n + bad, secs, secs > 0 ? (n + bad) / secs : 0.0, cli_percentile(c.lat, c.nlat, 50),
		cli_percentile(c.lat, c.nlat, 90), cli_percentile(c.lat, c.nlat, 99), c.retries);
	fprintf(stderr, "  failure classes:");
	for (int f = 0; f < PD_F_COUNT; f++)
		fprintf(stderr, " %s %llu", pd_failure_name((pd_failure)f), (unsigned long long)c.failure[f]);
	fprintf(stderr, "\n  requests refused or unanswered: %zu\n", bad + c.failed);
	for (size_t i = 0; i < n; i++)
		json_decref(reqs[i]);
	free(c.lat);
	pthread_mutex_destroy(&c.mu);
	return bad + c.failed ? EXIT_PADDOCK_FAILED : 0;
}
