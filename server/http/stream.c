/* A producer on a thread of its own (a session's download, a streamed step) whose first bytes
 * decide the answer: bytes first, 200 and the rest streamed through an http_stream (http.c); its
 * end without a byte leaves the answer to the caller (its error, usually, with its status).
 * The producer holds a reference of its own on the stream, so it still ends the stream after a
 * client that left dropped the response's. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <stdlib.h>
#include <unistd.h>

static void *piped_main(void *arg)
{
	http_piped *pp = arg;
	pp->produce(pp);
	return NULL;
}

void http_piped_end(http_piped *pp, bool ok)
{
	pthread_mutex_lock(&pp->mu);
	pp->done = true;
	pp->ok = ok;
	if (pp->st) {
		/* the end and the reader's end of file at once; then the producer's reference, which
		 * kept the stream alive after a client that left dropped the response's */
		http_stream_close(pp->st, ok, pp->wfd);
		http_stream_release(pp->st);
		pp->st = NULL;
	} else {
		close(pp->wfd);
	}
	pp->wfd = -1;
	pthread_mutex_unlock(&pp->mu);
}

int http_piped_run(req *r, http_piped *pp, const char *ctype)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		http_set_error(r, 500, "pipe: %s", strerror(errno));
		return HTTP_PIPED_FAILED;
	}
	if (pp->pipe_bytes) /* room for a burst while the client catches up */
		fcntl(p[1], F_SETPIPE_SZ, pp->pipe_bytes);
	if (pp->nonblocking)
		fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
	pp->wfd = p[1];
	pp->st = NULL;
	pp->done = false;
	pthread_mutex_init(&pp->mu, NULL);
	pthread_t t;
	if ((errno = pthread_create(&t, NULL, piped_main, pp)) != 0) {
		http_set_error(r, 503, "cannot start a thread: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		pthread_mutex_destroy(&pp->mu);
		return HTTP_PIPED_FAILED;
	}
	/* the first bytes, or the end without any */
	struct pollfd pf = {p[0], POLLIN, 0};
	while (poll(&pf, 1, -1) < 0 && errno == EINTR)
		;
	int avail = 0, ret = HTTP_PIPED_ENDED;
	if (ioctl(p[0], FIONREAD, &avail) == 0 && avail > 0) {
		pd_server *s = r->srv;
		struct MHD_Connection *conn = r->conn;
		http_stream *st = http_stream_new(s, conn, p[0]);
		if (st) {
			pthread_mutex_lock(&pp->mu);
			if (pp->done) {
				http_stream_end(st, pp->ok); /* its write end is closed already */
			} else {
				http_stream_hold(st);
				pp->st = st;
			}
			pthread_mutex_unlock(&pp->mu);
			http_set_resp_stream(r, 200, ctype, st);
			p[0] = -1;
			/* r belongs to the event thread from here */
			pthread_mutex_lock(&s->mu);
			MHD_resume_connection(conn);
			pthread_mutex_unlock(&s->mu);
			ret = HTTP_PIPED_STREAMED;
		}
	}
	if (p[0] >= 0)
		close(p[0]); /* the producer's later writes fail (EPIPE) and go nowhere */
	pthread_join(t, NULL);
	pthread_mutex_destroy(&pp->mu);
	return ret;
}
