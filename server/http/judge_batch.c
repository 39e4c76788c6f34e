/* POST /v1/judge with {"submissions": [...], <fields shared by all>}: one judge job per submission,
 * all parsed before any is queued (a bad one refuses the batch, naming its index). Two answers:
 *
 *   - one array, {"results": [...]} in the submissions' order, once all are judged, each result
 *     with "index" (its place in "submissions") as in the streamed form;
 *   - with "stream": true, JSON lines (application/x-ndjson, chunked) in the order they finish:
 *     each line is a judged record with "index" (its place in "submissions"), so a trainer can
 *     start on the first verdicts while the slow ones run. A submission that could not be judged
 *     (not admitted, or its verdict not recorded) is a line with "index" and "error"; the others
 *     go on. The body ends (the chunked terminator) after the last line: exactly one line per
 *     submission.
 *
 * Either way a client that hangs up cancels what is still queued or running (hangup.c watches the
 * socket for as long as the request lives, through the streamed answer too).
 *
 * On a cluster node (--cluster) each submission is published as a judge request of its own under
 * a request id of its own (the batch's X-Request-Id with "-<index>", else one made here): judged
 * on a node with room, exactly once, and the same batch sent again through any node answers the
 * first verdicts. Both answers work the same way there: the cluster's answers fill the slots (or
 * the lines). A client that hangs up does not cancel them (work published to the cluster is not
 * taken back): they are judged and recorded, and a retry with the same X-Request-Id answers them.
 *
 * The streamed lines are written into a pipe that the response reads (stream.c). Workers finish
 * jobs and must never wait for a slow client: their done callbacks only queue the line; a writer
 * thread of the batch's own writes the pipe, blocking if it must, and ends the stream after the
 * last line. The batch is shared by the jobs' callbacks, the writer and the hang-up watch, and
 * freed by the last of them (refs). */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define BATCH_MAX 1024

typedef struct batch {
	pd_server *srv;
	req *r;          /* the array form: answered (resumed) by the last job */
	bool stream;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;        /* the jobs (as one), the hang-up watch, the writer */
	size_t n, pending;
	pd_job **jobs;   /* a slot is NULL once its job finished (it is freed then) */
	bool gone;       /* the client hung up: what is left is cancelled */
	json_t *results; /* the array form: one slot per submission */
	/* the streamed form: lines not yet written, the pipe's write end, the response's stream */
	char *lines;
	size_t len, cap;
	int wfd;
	int wake;        /* an eventfd: the writer stops waiting for the pipe once the client left */
	http_stream *st;
	bool broken;     /* the client left: lines go nowhere */
} batch;

typedef struct batch_slot {
	batch *b;
	size_t i;
	char rid[128]; /* cluster mode: the submission's request id */
} batch_slot;

static void batch_unref(batch *b)
{
	pthread_mutex_lock(&b->mu);
	bool last = --b->refs == 0;
	pthread_mutex_unlock(&b->mu);
	if (!last)
		return;
	json_decref(b->results);
	if (b->wake >= 0)
		close(b->wake);
	free(b->lines);
	free(b->jobs);
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
	free(b);
}

/* b->mu held: the jobs still queued or running are cancelled (taken out of the queue, or their
 * sandbox killed); each still ends through its done callback, as cancelled. */
static void cancel_rest(batch *b)
{
	b->gone = true;
	for (size_t i = 0; i < b->n; i++)
		if (b->jobs[i])
			pd_sched_cancel(b->srv->sched, b->jobs[i]);
}

/* b->mu held: the streamed answer goes nowhere; the writer stops waiting for the pipe */
static void set_broken(batch *b)
{
	if (b->broken)
		return;
	b->broken = true;
	cancel_rest(b);
	uint64_t one = 1;
	if (b->wake >= 0 && write(b->wake, &one, sizeof one) != sizeof one)
		pd_log("warn", "judge batch: could not wake its writer");
	pthread_cond_broadcast(&b->cv);
}

/* The hang-up watch (under srv->mu, which is taken before b->mu everywhere): fired on a hang-up,
 * or not when the request completed. A streamed answer completes normally only after the writer
 * sent every line: a completion with lines still to come is a client that left while
 * libmicrohttpd was sending (it saw the broken socket itself). */
static void on_hangup(void *arg, bool fired)
{
	batch *b = arg;
	pthread_mutex_lock(&b->mu);
	if (fired && !b->stream)
		cancel_rest(b);
	else if (b->stream && (fired || b->pending || b->len))
		set_broken(b);
	pthread_mutex_unlock(&b->mu);
	batch_unref(b);
}

/* One submission's outcome (rec taken). The streamed form queues its line for the writer; the
 * array form fills its slot, and the last one answers the request. */
static void batch_put(batch *b, size_t i, json_t *rec)
{
	pthread_mutex_lock(&b->mu);
	b->jobs[i] = NULL;
	/* both forms: a result names its place in "submissions" (the array's order says it too, but
	 * a trainer that filters or reorders the array keeps it) */
	json_object_set_new(rec, "index", json_integer((json_int_t)i));
	if (b->stream) {
		char *text = pd_json_dumps(rec, JSON_COMPACT);
		size_t n = text ? strlen(text) : 0;
		if (text && !b->broken && b->len + n + 1 > b->cap) {
			size_t cap = b->cap ? b->cap : 16384;
			while (cap < b->len + n + 1)
				cap *= 2;
			char *nl = realloc(b->lines, cap);
			if (nl) {
				b->lines = nl;
				b->cap = cap;
			}
		}
		if (text && !b->broken && b->len + n + 1 <= b->cap) {
			memcpy(b->lines + b->len, text, n);
			b->lines[b->len + n] = '\n';
			b->len += n + 1;
		} else if (!b->broken) {
			pd_log("error", "judge batch: a line could not be queued (out of memory)", PD_LU("bytes", n));
		}
		free(text);
		json_decref(rec);
	} else {
		json_array_set_new(b->results, i, rec);
	}
	bool last = --b->pending == 0, stream = b->stream;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	/* past the unlock, b is only the last put's (the others' last may free it meanwhile) */
	if (!last || stream)
		return;
	req *r = b->r;
	/* once resumed, r may be answered and freed: nothing of it after */
	http_set_json(r, 200, json_pack("{s:O}", "results", b->results));
	batch_unref(b);
	http_resume(r);
}

static void batch_done(pd_job *j, void *arg)
{
	batch_slot *s = arg;
	json_t *rec = j->store_errno ? json_pack("{s:s,s:s,s:n}", "task_id", j->task_id, "error",
						 "the verdict could not be recorded: retry later", "reward")
				     : pd_judge_job_record(j);
	/* the job's own reference to its record goes here, before the put: the record then lives in
	 * the batch's array, whose last reference another thread may drop (the hang-up watcher's
	 * batch_unref), and jansson's decrements are release-only, so this thread's decref after the
	 * put was unordered with that thread's json_delete (make tsan, judge.t's batch hang-up).
	 * Dropped before b->mu is taken in the put, it is ordered by that lock. */
	json_decref(j->record);
	j->record = NULL;
	batch *b = s->b;
	size_t i = s->i;
	bool stream = b->stream; /* the array form's b may be gone after its last put */
	free(s);
	/* the slot is emptied (under b->mu) before the job is freed: a cancel sees it alive or not
	 * at all */
	batch_put(b, i, rec ? rec : json_pack("{s:s,s:n}", "error", "out of memory", "reward"));
	pd_job_free(j);
	if (stream)
		batch_unref(b); /* the streamed form: each job holds a reference */
}

/* A submission's answer from the cluster (on the cluster's threads): its verdict, or (a refusal, a
 * failure) a record saying why, as the local batch's. */
static void batch_cluster_answer(void *arg, int status, const char *body, size_t len, unsigned retry_after)
{
	(void)retry_after;
	batch_slot *s = arg;
	json_t *rec = json_loadb(body ? body : "", len, 0, NULL);
	if (status != 200 || !json_is_object(rec)) {
		const char *why = json_string_value(json_object_get(rec, "error"));
		json_t *err = json_pack("{s:s,s:s,s:s,s:n}", "task_id", s->rid, "request_id", s->rid, "error",
					why ? why : "the cluster gave no verdict: retry later", "reward");
		json_decref(rec);
		rec = err;
	}
	batch *b = s->b;
	size_t i = s->i;
	bool stream = b->stream;
	free(s);
	batch_put(b, i, rec ? rec : json_pack("{s:s,s:n}", "error", "out of memory", "reward"));
	if (stream)
		batch_unref(b);
}

/* Cluster mode: texts[i] is submission i with the batch's shared fields, published under its own
 * request id. b->jobs stays empty: nothing here is cancellable. */
static void batch_to_cluster(req *r, batch *b, char **texts, char (*tpls)[64])
{
	pd_server *srv = r->srv;
	const char *hid = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Request-Id");
	/* the array form's b is gone once its last slot is filled: nothing of it is read after */
	size_t n = b->n;
	bool stream = b->stream;
	for (size_t i = 0; i < n; i++) {
		batch_slot *s = malloc(sizeof *s);
		if (!s) {
			batch_put(b, i, json_pack("{s:s,s:n}", "error", "out of memory", "reward"));
			if (stream)
				batch_unref(b);
			continue;
		}
		s->b = b;
		s->i = i;
		if (hid && *hid)
			snprintf(s->rid, sizeof s->rid, "%.100s-%zu", hid, i);
		else
			pd_new_id(s->rid, sizeof s->rid, pd_ctx_run_id(srv->ctx), "j-%s", pd_cluster_node_id(srv->cluster));
		/* the answer may come (and, the array form's last, answer r) before this returns */
		pd_cluster_submit(srv->cluster, "judge", tpls[i], texts[i], strlen(texts[i]), s->rid,
				  batch_cluster_answer, s);
	}
}

/* Writes all of buf into the pipe (non-blocking), waiting for the client if it must; false once
 * it is gone (EPIPE, or the hang-up watch woke us: the pipe's reader may never read again). */
static bool write_all(batch *b, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(b->wfd, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pf[2] = {{b->wfd, POLLOUT, 0}, {b->wake, POLLIN, 0}};
			while (poll(pf, 2, -1) < 0 && errno == EINTR)
				;
			if (pf[1].revents)
				return false;
			continue;
		}
		return false; /* EPIPE: the response was dropped (SIGPIPE is ignored by serve) */
	}
	return true;
}

static void *writer_main(void *arg)
{
	batch *b = arg;
	pd_server *s = b->srv;
	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (!b->len && b->pending)
			pthread_cond_wait(&b->cv, &b->mu);
		if (!b->len && !b->pending)
			break;
		char *buf = b->lines;
		size_t len = b->len;
		b->lines = NULL;
		b->len = b->cap = 0;
		bool broken = b->broken;
		pthread_mutex_unlock(&b->mu);
		bool ok = broken || write_all(b, buf, len);
		free(buf);
		pthread_mutex_lock(&b->mu);
		if (!ok) /* the client left: the rest runs for nobody */
			set_broken(b);
	}
	pthread_mutex_unlock(&b->mu);
	http_stream_close(b->st, true, b->wfd); /* the end and the reader's end of file at once */
	b->wfd = -1;
	http_stream_release(b->st);
	batch_unref(b);
	pthread_mutex_lock(&s->mu);
	s->session_ops--;
	pthread_cond_broadcast(&s->ops_cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* The streamed form's response and writer; false (r answered with the error) when they could not be
 * had. */
static bool stream_start(req *r, batch *b)
{
	pd_server *s = r->srv;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		http_set_error(r, 503, "pipe: %s: retry later", strerror(errno));
		return false;
	}
	http_stream *st = http_stream_new(s, r->conn, p[0]);
	if (!st) {
		close(p[0]);
		close(p[1]);
		http_set_error(r, 503, "cannot start the stream: retry later");
		return false;
	}
	http_stream_hold(st); /* the writer's: it ends the stream even after the client left */
	b->st = st;
	b->wfd = p[1];
	/* room for many lines while the client catches up (the writer waits past it) */
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
	b->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (b->wake < 0) {
		http_stream_end(st, false);
		http_stream_release(st);
		http_stream_drop(st);
		close(p[1]);
		http_set_error(r, 503, "eventfd: retry later");
		return false;
	}
	pthread_mutex_lock(&s->mu);
	s->session_ops++; /* the daemon's stop waits for the writer (after the scheduler drained) */
	pthread_mutex_unlock(&s->mu);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	b->refs++;
	int rc = pthread_create(&t, &at, writer_main, b);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		b->refs--;
		pthread_mutex_lock(&s->mu);
		s->session_ops--;
		pthread_cond_broadcast(&s->ops_cv);
		pthread_mutex_unlock(&s->mu);
		http_stream_end(st, false);
		http_stream_release(st);
		http_stream_drop(st); /* the response's reference: never sent */
		close(p[1]);
		http_set_error(r, 503, "cannot start a thread: retry later");
		return false;
	}
	http_set_resp_stream(r, 200, "application/x-ndjson", st);
	return true;
}

/* Every submission through the intake, none queued yet: jobs[] (and in cluster mode each one's
 * text and template). A bad one refuses the batch, naming its index: what the caps counted of the
 * others is given back. */
static bool batch_check(req *r, json_t *body, json_t *subs, size_t n, pd_job **jobs, char **texts, char (*tpls)[64])
{
	pd_server *srv = r->srv;
	for (size_t i = 0; i < n; i++) {
		/* a request of its own, with the batch's shared fields it does not set itself */
		json_t *one = json_deep_copy(json_array_get(subs, i));
		const char *k;
		json_t *v;
		if (json_is_object(one))
			json_object_foreach(body, k, v)
				if (strcmp(k, "submissions") && strcmp(k, "stream") && !json_object_get(one, k))
					json_object_set(one, k, v);
		pd_err e = {0};
		int status;
		unsigned ra = 0;
		jobs[i] = pd_intake_check(&srv->intake, &pd_api_judge, one, PD_INTAKE_CLIENT, 0, &status, &ra, &e);
		if (texts && jobs[i] && !(texts[i] = json_dumps(one, JSON_COMPACT))) {
			pd_intake_drop(&srv->intake, jobs[i], true);
			jobs[i] = NULL;
			status = 500;
			pd_fail(&e, 0, "out of memory");
		}
		json_decref(one);
		if (jobs[i]) {
			if (tpls)
				snprintf(tpls[i], sizeof *tpls, "%s", jobs[i]->template_name);
			continue;
		}
		for (size_t k2 = 0; k2 < i; k2++) {
			pd_intake_drop(&srv->intake, jobs[k2], true);
			jobs[k2] = NULL;
		}
		for (size_t k2 = 0; texts && k2 <= i; k2++)
			free(texts[k2]);
		http_refuse(r, status, ra, "submissions[%zu]: %s", i, PD_ERR_STR(&e));
		return false;
	}
	return true;
}

/* Queues the jobs; one not admitted says why in its line (or slot), the others still run. */
static void batch_submit(req *r, batch *b, pd_job **jobs, size_t n)
{
	pd_server *srv = r->srv;
	const char *client = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Paddock-Client");
	for (size_t i = 0; i < n; i++) {
		pd_job *j = jobs[i];
		snprintf(j->client, sizeof j->client, "%s", client && *client ? client : "judge");
		batch_slot *s = malloc(sizeof *s);
		pd_admit a = PD_ADMIT_FULL;
		int code;
		unsigned ra;
		char why[600];
		snprintf(why, sizeof why, "%s", pd_admit_text(a));
		if (s) {
			s->b = b;
			s->i = i;
			j->done = batch_done;
			j->done_arg = s;
			pthread_mutex_lock(&b->mu);
			if (b->gone)
				pd_job_cancel(j); /* queued, but never run */
			pthread_mutex_unlock(&b->mu);
			a = pd_intake_admit(&srv->intake, &pd_api_judge, j, &code, &ra, why, sizeof why);
		}
		if (a != PD_ADMIT_OK) {
			json_t *rec = json_pack("{s:s,s:o,s:n}", "task_id", j->task_id, "error", pd_json_text(why), "reward");
			free(s);
			batch_put(b, i, rec);
			pd_job_free(j);
			if (b->stream)
				batch_unref(b);
		}
	}
}

void judge_batch(req *r, json_t *body)
{
	pd_server *srv = r->srv;
	json_t *subs = json_object_get(body, "submissions");
	size_t n = json_array_size(subs);
	if (!json_is_array(subs) || !n || n > BATCH_MAX) {
		http_set_error(r, 400, "submissions: must be a list of 1 to %d judge requests", BATCH_MAX);
		return;
	}
	json_t *sv = json_object_get(body, "stream");
	if (sv && !json_is_boolean(sv)) {
		http_set_error(r, 400, "stream: must be true or false");
		return;
	}
	bool stream = json_is_true(sv);
	pd_job **jobs = calloc(n, sizeof *jobs);
	batch *b = calloc(1, sizeof *b);
	/* cluster mode: each submission's text and template, published once all are checked */
	char **texts = srv->cluster ? calloc(n, sizeof *texts) : NULL;
	char(*tpls)[64] = srv->cluster ? calloc(n, sizeof *tpls) : NULL;
	if (!jobs || !b || (srv->cluster && (!texts || !tpls)) || !batch_check(r, body, subs, n, jobs, texts, tpls)) {
		if (!jobs || !b || (srv->cluster && (!texts || !tpls)))
			http_set_error(r, 500, "out of memory");
		free(jobs);
		free(b);
		free(texts);
		free(tpls);
		return;
	}
	b->srv = srv;
	b->r = r;
	b->stream = stream;
	b->n = b->pending = n;
	b->jobs = jobs;
	b->wfd = b->wake = -1;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	/* references: the array form's last job answers and gives one back, the streamed form's jobs
	 * one each; the hang-up watch one (given back when it fires or r completes) */
	b->refs = stream ? (int)n + 1 : 2;
	if (!stream) {
		b->results = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(b->results, json_null());
	}
	/* the local jobs only checked the submissions: the cluster's nodes make their own */
	for (size_t i = 0; texts && i < n; i++) {
		pd_job_free(jobs[i]);
		jobs[i] = NULL;
	}
	if (stream && !stream_start(r, b)) {
		for (size_t i = 0; i < n; i++) {
			pd_job_free(jobs[i]);
			if (texts)
				free(texts[i]);
		}
		free(texts);
		free(tpls);
		b->refs = 1;
		batch_unref(b);
		return;
	}
	if (!stream)
		http_suspend(r);
	/* before any job is queued: a client gone already cancels them all before they run */
	hangup_watch_fn(r, on_hangup, b);
	if (texts) {
		batch_to_cluster(r, b, texts, tpls);
		for (size_t i = 0; i < n; i++)
			free(texts[i]);
		free(texts);
		free(tpls);
		return;
	}
	/* the streamed form is answered now: the body follows as the jobs finish */
	batch_submit(r, b, jobs, n);
}
