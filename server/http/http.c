/* The HTTP layer's toolbox, under every other file of server/http/: a request's response set (a
 * buffer, a file sent from its descriptor, or a body read from a pipe while it is produced), the
 * connection suspended and resumed around a worker's answer, and a request freed. It calls no
 * other file of the folder: the handlers above it use it, and daemon.c (start, stop,
 * libmicrohttpd's callbacks) sends what it set.
 *
 * A streamed body (http_stream): read from a pipe while its producer (a session's tar, a streamed
 * step, a judge batch) writes it on a thread of its own: nothing is spooled on the host.
 * libmicrohttpd reads the body on its one event thread, so the read must never block: the pipe
 * is non-blocking, and when it is empty the reader suspends the connection (allowed from a
 * content reader) and this stream's watcher thread resumes it once the pipe is readable again.
 * The producer says how it ended (http_stream_end) before it closes its end; at the pipe's end
 * the reader finishes the body only if the producer succeeded, else it ends the response with an
 * error: the client sees a cut transfer, never part of an archive passed off as the whole.
 * The watcher holds a session operation, so the daemon's shutdown (which must not stop
 * libmicrohttpd with a suspended connection) waits for it. The producer holds a reference of its
 * own on the stream: a client that leaves drops the response's and the watcher's, and the
 * producer still ends the stream after that (stream.c's http_piped_run is the common shape). */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- responses ------------------------------------------------------------------------------- */

static void drop_resp_fd(req *r)
{
	if (r->resp_from_fd)
		close(r->resp_fd);
	r->resp_from_fd = false;
	if (r->resp_stream)
		http_stream_drop(r->resp_stream);
	r->resp_stream = NULL;
}

void http_set_resp_stream(req *r, int status, const char *ctype, http_stream *st)
{
	free(r->resp);
	r->resp = NULL;
	r->resp_len = 0;
	drop_resp_fd(r);
	r->status = status;
	r->content_type = ctype;
	r->resp_stream = st;
}

void http_set_resp_fd(req *r, int status, const char *ctype, int fd, uint64_t len)
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

void http_set_resp(req *r, int status, const char *ctype, char *body, size_t len)
{
	drop_resp_fd(r);
	free(r->resp);
	r->status = status;
	r->content_type = ctype;
	r->resp = body;
	r->resp_len = len;
}

void http_set_json(req *r, int status, json_t *j)
{
	char *s = pd_json_dumps(j, JSON_COMPACT);
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
	http_set_resp(r, status, "application/json", s, len);
}

static void set_error(req *r, int status, const char *fmt, va_list ap)
{
	char msg[700];
	vsnprintf(msg, sizeof msg, fmt, ap);
	/* the body the request's API's clients read (Piston's read "message"); pd_json_text inside:
	 * msg may quote a client's bytes */
	http_set_json(r, status, (r->api ? r->api->error_body : pd_api_error_plain)(msg));
}

void http_set_error(req *r, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_error(r, status, fmt, ap);
	va_end(ap);
}

void http_refuse(req *r, int status, unsigned retry_after, const char *fmt, ...)
{
	r->retry_after = retry_after;
	va_list ap;
	va_start(ap, fmt);
	set_error(r, status, fmt, ap);
	va_end(ap);
}


void http_suspend(req *r)
{
	pthread_mutex_lock(&r->srv->mu);
	MHD_suspend_connection(r->conn);
	r->suspended = true;
	pthread_mutex_unlock(&r->srv->mu);
}

void http_resume(req *r)
{
	pd_server *srv = r->srv;
	struct MHD_Connection *conn = r->conn;
	pthread_mutex_lock(&srv->mu);
	MHD_resume_connection(conn);
	pthread_mutex_unlock(&srv->mu);
}

void http_req_free(req *r)
{
	free(r->body);
	free(r->resp);
	drop_resp_fd(r);
	free(r);
}

/* ---- a body read from a pipe while it is produced ------------------------------------------ */

struct http_stream {
	pd_server *srv;
	struct MHD_Connection *conn;
	int rfd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state;     /* 0 being produced, 1 produced whole, 2 failed */
	bool waiting;  /* the reader suspended the connection for want of data */
	bool gone;     /* libmicrohttpd dropped the response (sent, or the client left) */
	int refs;      /* the watcher, the response and a producer's own (http_stream_hold) */
	int readers;   /* the watcher and the response: with both gone rfd is closed, so the
			* producer's writes fail (EPIPE) even while it still holds the stream */
};

static void unref(http_stream *st, bool reader)
{
	pthread_mutex_lock(&st->mu);
	if (reader && --st->readers == 0) {
		close(st->rfd);
		st->rfd = -1;
	}
	bool last = --st->refs == 0;
	pthread_mutex_unlock(&st->mu);
	if (!last)
		return;
	pthread_mutex_destroy(&st->mu);
	pthread_cond_destroy(&st->cv);
	free(st);
}

static void *watcher(void *arg)
{
	http_stream *st = arg;
	pd_server *s = st->srv;
	pthread_mutex_lock(&st->mu);
	for (;;) {
		while (!st->waiting && !st->gone && st->state == 0)
			pthread_cond_wait(&st->cv, &st->mu);
		if (st->gone || (!st->waiting && st->state != 0))
			break; /* produced: the pipe holds the rest and its end, the reader waits no more */
		pthread_mutex_unlock(&st->mu);
		/* readable, or the producer closed its end (POLLHUP): either way the reader goes on */
		struct pollfd pf = {st->rfd, POLLIN, 0};
		while (poll(&pf, 1, -1) < 0 && errno == EINTR)
			;
		pthread_mutex_lock(&st->mu);
		if (st->waiting) {
			st->waiting = false;
			pthread_mutex_lock(&s->mu);
			MHD_resume_connection(st->conn);
			pthread_mutex_unlock(&s->mu);
		}
	}
	pthread_mutex_unlock(&st->mu);
	unref(st, true);
	pthread_mutex_lock(&s->mu);
	s->session_ops--;
	pthread_cond_broadcast(&s->ops_cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

http_stream *http_stream_new(pd_server *s, struct MHD_Connection *conn, int rfd)
{
	http_stream *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	int fl = fcntl(rfd, F_GETFL);
	if (fl < 0 || fcntl(rfd, F_SETFL, fl | O_NONBLOCK) < 0) {
		free(st);
		return NULL;
	}
	st->srv = s;
	st->conn = conn;
	st->rfd = rfd;
	st->refs = st->readers = 2;
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cv, NULL);
	pthread_mutex_lock(&s->mu);
	s->session_ops++;
	pthread_mutex_unlock(&s->mu);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&t, &at, watcher, st);
	pthread_attr_destroy(&at);
	if (rc != 0) {
		pthread_mutex_lock(&s->mu);
		s->session_ops--;
		pthread_cond_broadcast(&s->ops_cv);
		pthread_mutex_unlock(&s->mu);
		pthread_mutex_destroy(&st->mu);
		pthread_cond_destroy(&st->cv);
		free(st);
		return NULL;
	}
	return st;
}

void http_stream_end(http_stream *st, bool ok)
{
	pthread_mutex_lock(&st->mu);
	st->state = ok ? 1 : 2;
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
}

void http_stream_close(http_stream *st, bool ok, int wfd)
{
	pthread_mutex_lock(&st->mu);
	st->state = ok ? 1 : 2;
	close(wfd);
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
}

void http_stream_hold(http_stream *st)
{
	pthread_mutex_lock(&st->mu);
	st->refs++;
	pthread_mutex_unlock(&st->mu);
}

void http_stream_release(http_stream *st)
{
	unref(st, false);
}

void http_stream_drop(http_stream *st)
{
	pthread_mutex_lock(&st->mu);
	st->gone = true;
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
	unref(st, true);
}

/* libmicrohttpd's content reader, on the event thread: never blocks */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	http_stream *st = cls;
	ssize_t n;
	int err;
again:
	do
		n = read(st->rfd, buf, max);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		return n;
	err = errno;
	pthread_mutex_lock(&st->mu);
	ssize_t ret;
	if (n < 0 && err == EAGAIN && st->state != 0) {
		/* produced, but its write end not closed yet (or just now): the end of file is next.
		 * Suspending here would wait for a watcher that saw "produced" and left (a body that
		 * never ended: curl's timeout in judge_stream.t). http_stream_close closes under the
		 * lock, so for its producers the next read is the end; the others close right after
		 * http_stream_end. */
		pthread_mutex_unlock(&st->mu);
		goto again;
	}
	if (n == 0) {
		/* the producer set its state before it closed its end */
		ret = st->state == 1 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
	} else if (err == EAGAIN) {
		st->waiting = true;
		pthread_mutex_lock(&st->srv->mu);
		MHD_suspend_connection(st->conn);
		pthread_mutex_unlock(&st->srv->mu);
		pthread_cond_broadcast(&st->cv);
		ret = 0;
	} else {
		ret = MHD_CONTENT_READER_END_WITH_ERROR;
	}
	pthread_mutex_unlock(&st->mu);
	return ret;
}

static void stream_free(void *cls)
{
	http_stream_drop(cls);
}

struct MHD_Response *http_stream_response(http_stream *st)
{
	return MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_read, st, stream_free);
}
