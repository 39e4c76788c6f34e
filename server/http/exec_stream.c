/* A session exec whose output is sent while the step runs: POST /v1/sessions/<id>/exec with
 * "stream": true answers application/x-ndjson, chunked, one JSON object a line:
 *   {"event": "started", "request_id": ...}             the program started
 *   {"event": "output", "stream": "stdout", "data": ...} bytes as they were read (UTF-8 text; a
 *                                                         sequence cut by a read is held until whole)
 *   {"event": "result", ...the exec's usual answer...}   last, once the step ended
 * A step that never starts (a refusal: 409 busy, 410 ended, 400) is answered as without stream, with
 * its status; one answered without running (a retry of a recorded request id, a fast-forward, an
 * injected failure) is one "result" line.
 *
 * The step runs on a thread of its own, which writes the lines into a pipe; the response reads the
 * pipe (stream.c) once the first line is there, as a download does. The exec loop (lib/exec.c) must
 * never wait for the client: a line the pipe cannot take now is queued, up to QUEUE_MAX, and past
 * that the output is dropped from the stream and counted ("stream_dropped_bytes" in the result: the
 * result and /output still have it all). The result line itself is written whole, waiting for the
 * client if it must. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <stdatomic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QUEUE_MAX (4u << 20)
#define PIPE_BYTES (1 << 20)

typedef struct live {
	http_piped pp; /* first: produce's argument is this */
	sess_entry *se;
	pd_session_exec_req *q;
	const char *rid;  /* rid_buf's, or NULL */
	/* a copy: the request's own id (r->q) goes with r, which a client that leaves mid-stream
	 * frees while the step still runs */
	char rid_buf[256];
	char *queue; /* lines the pipe could not take yet */
	size_t qlen, qcap;
	bool wrote;   /* a line went into the queue: the answer streams, the result goes there too */
	bool broken;  /* the reader is gone */
	_Atomic bool gone; /* ... seen by the exec (pd_exec_opts.cancel): the step is cancelled */
	uint64_t dropped;
	char carry[2][4]; /* the start of a UTF-8 sequence a read cut, per stream */
	size_t ncarry[2];
	/* the step's end, for an answer that did not stream */
	int status;     /* of a step that did not start: its HTTP status */
	pd_err e;
	json_t *answer; /* of a step answered without any line written */
	pd_session_step st; /* its agent; the id its output is fetched by, known as it starts */
} live;

/* Writes what the pipe takes now; with wait, all of it (or until the reader is gone). */
static void flush(live *l, bool wait)
{
	while (l->qlen && !l->broken) {
		ssize_t n = write(l->pp.wfd, l->queue, l->qlen);
		if (n > 0) {
			memmove(l->queue, l->queue + n, l->qlen - (size_t)n);
			l->qlen -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (!wait)
				return;
			struct pollfd pf = {l->pp.wfd, POLLOUT, 0};
			while (poll(&pf, 1, -1) < 0 && errno == EINTR)
				;
			continue;
		}
		/* EPIPE: the client left; its step is cancelled (killed as at a limit, the session
		 * goes on) */
		l->broken = true;
		atomic_store(&l->gone, true);
	}
}

/* Queues one line (o taken); false when it did not fit. */
static bool put(live *l, json_t *o, bool must)
{
	char *text = pd_json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return false;
	size_t n = strlen(text);
	bool fit = l->qlen + n + 1 <= QUEUE_MAX || must;
	if (fit && l->qlen + n + 1 > l->qcap) {
		size_t cap = l->qcap ? l->qcap : 65536;
		while (cap < l->qlen + n + 1)
			cap *= 2;
		char *q = realloc(l->queue, cap);
		if (q) {
			l->queue = q;
			l->qcap = cap;
		} else {
			fit = false;
		}
	}
	if (fit) {
		memcpy(l->queue + l->qlen, text, n);
		l->queue[l->qlen + n] = '\n';
		l->qlen += n + 1;
		l->wrote = true;
	}
	free(text);
	flush(l, false);
	return fit;
}

/* How many of buf's n bytes end in whole UTF-8 sequences (at most 3 bytes of a cut one held). */
static size_t whole_utf8(const unsigned char *buf, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = buf[n - back];
		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back for its lead */
		size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		return need > back ? n - back : n;
	}
	return n;
}

static void on_data(void *arg, int stream, const char *buf, size_t len)
{
	live *l = arg;
	if (l->broken)
		return;
	if (stream == 0) {
		json_t *o = json_pack("{s:s,s:s}", "event", "started", "request_id", l->st.output_request_id);
		if (l->st.agent)
			json_object_set_new(o, "agent", json_string(l->st.agent));
		put(l, o, true);
		return;
	}
	int i = stream - 1;
	size_t total = l->ncarry[i] + len;
	char *joined = malloc(total ? total : 1);
	if (!joined) {
		l->dropped += len;
		return;
	}
	memcpy(joined, l->carry[i], l->ncarry[i]);
	memcpy(joined + l->ncarry[i], buf, len);
	size_t send = whole_utf8((const unsigned char *)joined, total);
	l->ncarry[i] = total - send;
	memcpy(l->carry[i], joined + send, l->ncarry[i]);
	if (send) {
		json_t *o = json_pack("{s:s,s:s,s:o}", "event", "output", "stream", stream == 1 ? "stdout" : "stderr",
				      "data", pd_json_bytes(joined, send));
		if (!put(l, o, false))
			l->dropped += send;
	}
	free(joined);
}

static void step_main(http_piped *pp)
{
	live *l = (live *)pp;
	pd_session_exec_req *q = l->q;
	json_t *answer = session_exec_fast_forward(l->se, l->rid);
	pd_err e = {0};
	int status = 200;
	if (!answer) {
		q->x.on_data = on_data;
		q->x.data_arg = l;
		q->x.cancel = &l->gone;
		pd_result res;
		l->st.agent = q->agent;
		if (pd_session_exec_step(l->se->s, &q->x, q->audit, l->rid, &l->st, &res, &q->verdict, &e) < 0) {
			status = session_exec_status(&e);
		} else {
			q->evaluated = q->audit != NULL;
			answer = session_exec_answer(l->se, q, &l->st, &res);
			pd_result_free(&res);
			if (!answer) {
				status = 500;
				pd_fail(&e, ENOMEM, "out of memory for the result");
			}
		}
	}
	if (l->wrote) {
		/* the answer streams: its last line says how the step ended */
		/* nothing more comes: a sequence the program left cut goes as it is (U+FFFD) */
		for (int i = 0; i < 2; i++)
			if (l->ncarry[i] && !l->broken) {
				json_t *o = json_pack("{s:s,s:s,s:o}", "event", "output", "stream", i ? "stderr" : "stdout",
						      "data", pd_json_bytes(l->carry[i], l->ncarry[i]));
				put(l, o, true);
				l->ncarry[i] = 0;
			}
		json_t *last = answer ? json_pack("{s:s}", "event", "result")
				      : json_pack("{s:s,s:i,s:s}", "event", "error", "http_status", status, "error", PD_ERR_STR(&e));
		if (answer) {
			json_object_set_new(answer, "stream_dropped_bytes", json_integer((json_int_t)l->dropped));
			json_object_update(last, answer);
		}
		put(l, last, true);
		flush(l, true);
	}
	/* read by the caller after the thread ended, and only if nothing streamed */
	l->status = status;
	l->e = e;
	if (!l->wrote)
		l->answer = answer;
	else
		json_decref(answer);
	http_piped_end(pp, true);
}

/* A body of one JSON line, as a stream that had nothing to send before its result. */
static void answer_lines(req *r, json_t *answer)
{
	json_t *o = json_pack("{s:s}", "event", "result");
	json_object_set_new(answer, "stream_dropped_bytes", json_integer(0));
	json_object_update(o, answer);
	json_decref(answer);
	char *text = pd_json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text) {
		http_set_error(r, 500, "out of memory for the result");
		return;
	}
	size_t n = strlen(text);
	text[n] = '\n'; /* over the NUL: the length is known */
	http_set_resp(r, 200, "application/x-ndjson", text, n + 1);
}

bool session_exec_stream(req *r, sess_entry *se, pd_session_exec_req *q, const char *rid)
{
	live l = {.se = se, .q = q};
	if (rid) {
		snprintf(l.rid_buf, sizeof l.rid_buf, "%s", rid);
		l.rid = l.rid_buf;
	}
	l.pp.produce = step_main;
	l.pp.pipe_bytes = PIPE_BYTES;
	l.pp.nonblocking = true;
	int how = http_piped_run(r, &l.pp, "application/x-ndjson");
	free(l.queue);
	if (how == HTTP_PIPED_ENDED) {
		if (l.answer)
			answer_lines(r, l.answer);
		else if (l.wrote)
			http_set_error(r, 500, "the streamed answer could not be sent");
		else
			http_set_error(r, l.status, "%s", PD_ERR_STR(&l.e));
	}
	return how == HTTP_PIPED_STREAMED;
}
