/* A retried request never runs twice on one node (issue 37): the client's request id (its
 * X-Request-Id, its body's request_id, or its task_id with "idempotent": true) names one run. The
 * first request with an id runs; one with the same id that arrives while it runs waits for its
 * answer, and one that arrives after gets the same answer again, byte for byte — as cluster mode
 * does through its results bucket. Answers are kept in memory, newest first, up to DD_MAX_ENTRIES
 * and DD_MAX_BYTES, for DD_TTL_US: a trainer's retries come within seconds or minutes. A refusal
 * (5xx) is not kept: it said "try again", and the next try runs.
 *
 * Threads: dedupe_begin on the event thread, dedupe_end on the worker that answers; dd_mu guards
 * the table. A waiter is a suspended request, resumed by dedupe_end as its first answer is. */
#define _GNU_SOURCE
#include "http.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DD_BUCKETS 4096
#define DD_MAX_ENTRIES 65536
#define DD_MAX_BYTES (256u << 20)
#define DD_TTL_US (3600ull * 1000000)

typedef struct dd_waiter {
	req *r;
	struct dd_waiter *next;
} dd_waiter;

typedef struct dd_entry {
	char rid[128];
	bool done;
	int status;
	char *body;
	size_t len;
	const char *ctype;
	unsigned retry_after;
	uint64_t at; /* when it was answered (monotonic us) */
	dd_waiter *waiters;
	struct dd_entry *hnext;	     /* bucket chain */
	struct dd_entry *older, *newer; /* answered ones, newest first */
} dd_entry;

static pthread_mutex_t dd_mu = PTHREAD_MUTEX_INITIALIZER;
static dd_entry *dd_bucket[DD_BUCKETS];
static dd_entry *dd_newest, *dd_oldest;
static size_t dd_entries, dd_bytes;
static uint64_t dd_hits;

static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)(h % DD_BUCKETS);
}

static dd_entry *find(const char *rid)
{
	for (dd_entry *e = dd_bucket[hash(rid)]; e; e = e->hnext)
		if (!strcmp(e->rid, rid))
			return e;
	return NULL;
}

static void unlink_bucket(dd_entry *e)
{
	for (dd_entry **p = &dd_bucket[hash(e->rid)]; *p; p = &(*p)->hnext)
		if (*p == e) {
			*p = e->hnext;
			return;
		}
}

static void unlink_age(dd_entry *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else if (dd_oldest == e)
		dd_oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else if (dd_newest == e)
		dd_newest = e->older;
	e->older = e->newer = NULL;
}

static void drop(dd_entry *e)
{
	unlink_bucket(e);
	if (e->done) {
		unlink_age(e);
		dd_bytes -= e->len;
	}
	dd_entries--;
	free(e->body);
	free(e);
}

/* Forgets answers past their time or past the bounds, oldest first; under dd_mu. */
static void trim(uint64_t now)
{
	while (dd_oldest && (now - dd_oldest->at > DD_TTL_US || dd_entries > DD_MAX_ENTRIES || dd_bytes > DD_MAX_BYTES))
		drop(dd_oldest);
}

/* r answered with a copy of e's answer. */
static void answer_copy(req *r, const dd_entry *e)
{
	char *copy = malloc(e->len + 1);
	if (!copy) {
		http_set_error(r, 503, "out of memory");
		return;
	}
	memcpy(copy, e->body, e->len);
	copy[e->len] = 0;
	http_set_resp(r, e->status, e->ctype, copy, e->len);
	r->retry_after = e->retry_after;
}

int dedupe_begin(req *r, const char *rid)
{
	pthread_mutex_lock(&dd_mu);
	trim(pd_now_us());
	dd_entry *e = find(rid);
	if (e && e->done) {
		dd_hits++;
		answer_copy(r, e);
		pthread_mutex_unlock(&dd_mu);
		return 1;
	}
	if (e) {
		dd_waiter *w = malloc(sizeof *w);
		if (!w) {
			pthread_mutex_unlock(&dd_mu);
			http_set_error(r, 503, "out of memory");
			return 1;
		}
		dd_hits++;
		w->r = r;
		w->next = e->waiters;
		e->waiters = w;
		http_suspend(r);
		pthread_mutex_unlock(&dd_mu);
		return 2;
	}
	e = calloc(1, sizeof *e);
	if (!e) {
		pthread_mutex_unlock(&dd_mu);
		return 0; /* runs without the guard rather than not at all */
	}
	snprintf(e->rid, sizeof e->rid, "%s", rid);
	size_t b = hash(rid);
	e->hnext = dd_bucket[b];
	dd_bucket[b] = e;
	dd_entries++;
	pthread_mutex_unlock(&dd_mu);
	return 0;
}

void dedupe_end(const char *rid, const req *r)
{
	pthread_mutex_lock(&dd_mu);
	dd_entry *e = find(rid);
	if (!e || e->done) {
		pthread_mutex_unlock(&dd_mu);
		return;
	}
	e->status = r->status;
	e->ctype = r->content_type ? r->content_type : "application/json";
	e->retry_after = r->retry_after;
	e->len = r->resp_len;
	e->body = malloc(r->resp_len + 1);
	if (e->body)
		memcpy(e->body, r->resp ? r->resp : "", r->resp_len);
	dd_waiter *ws = e->waiters;
	e->waiters = NULL;
	/* the waiters hear the same, whatever it is */
	for (dd_waiter *w = ws, *nx; w; w = nx) {
		nx = w->next;
		if (e->body)
			answer_copy(w->r, e);
		else
			http_set_error(w->r, 503, "out of memory");
		http_resume(w->r);
		free(w);
	}
	if (!e->body || r->status >= 500) {
		/* a refusal says "try again": the next try runs */
		unlink_bucket(e);
		dd_entries--;
		free(e->body);
		free(e);
		pthread_mutex_unlock(&dd_mu);
		return;
	}
	e->done = true;
	e->at = pd_now_us();
	e->older = dd_newest;
	if (dd_newest)
		dd_newest->newer = e;
	dd_newest = e;
	if (!dd_oldest)
		dd_oldest = e;
	dd_bytes += e->len;
	trim(e->at);
	pthread_mutex_unlock(&dd_mu);
}

uint64_t dedupe_hits(void)
{
	pthread_mutex_lock(&dd_mu);
	uint64_t n = dd_hits;
	pthread_mutex_unlock(&dd_mu);
	return n;
}
