/* Clients that give up: a run request's connection is suspended while its job is queued or runs,
 * and libmicrohttpd does not watch a suspended connection's socket (it learns of a closed one
 * only when it resumes it to send the answer). A trainer's client with a read timeout closes its
 * socket and goes on; without this, its job would wait its turn and run for nobody.
 *
 * So each suspended run's socket is also registered, for hang-ups only (EPOLLRDHUP; EPOLLHUP and
 * EPOLLERR come anyway), in an epoll set of our own, which a thread waits on: no polling, and a
 * pipelined request behind the suspended one (readable data, EPOLLIN) is not mistaken for a
 * hang-up. A client that shuts down its sending side still counts as gone: HTTP clients keep it
 * open while they wait for an answer. A hang-up cancels the job (pd_sched_cancel): taken out of
 * the queue, or its sandbox killed; it ends as cancelled, recorded and counted like any job.
 *
 * A judge batch (judge_batch.c) registers a function instead of one job: it cancels every
 * submission not judged yet, and its watch lasts until the request completes, since a streamed
 * batch's answer is sent while its jobs still run (the connection is not suspended then).
 *
 * Each registration carries an id, not the request's address: an event read just before the job
 * finished and its request was freed must not reach a new request that got the same memory. The
 * registrations are a list under srv->mu, which also brackets suspend and resume. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define STOP_ID UINT64_MAX

/* lock held */
static req *find(pd_server *s, uint64_t id)
{
	for (req *r = s->watched; r; r = r->wnext)
		if (r->watch_id == id)
			return r;
	return NULL;
}

/* lock held */
static void unlink_req(pd_server *s, req *r)
{
	epoll_ctl(s->hup_epfd, EPOLL_CTL_DEL, r->watch_fd, NULL);
	if (r->wprev)
		r->wprev->wnext = r->wnext;
	else
		s->watched = r->wnext;
	if (r->wnext)
		r->wnext->wprev = r->wprev;
	r->wprev = r->wnext = NULL;
	r->watch_id = 0;
}

/* lock held: r's socket watched for hang-ups under a new id (watch_id 0 if it cannot be) */
static void link_req(pd_server *s, req *r, int fd)
{
	r->watch_fd = fd;
	r->watch_id = ++s->watch_seq;
	struct epoll_event ev = {.events = EPOLLRDHUP, .data.u64 = r->watch_id};
	if (epoll_ctl(s->hup_epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		r->watch_id = 0;
		return;
	}
	r->wprev = NULL;
	r->wnext = s->watched;
	if (s->watched)
		s->watched->wprev = r;
	s->watched = r;
}

static void *hangup_main(void *arg)
{
	pd_server *s = arg;
	struct epoll_event ev[64];
	for (;;) {
		int n = epoll_wait(s->hup_epfd, ev, 64, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == STOP_ID)
				return NULL;
			pthread_mutex_lock(&s->mu);
			req *r = find(s, ev[i].data.u64);
			if (r) {
				pd_job *j = r->job;
				unlink_req(s, r);
				s->hangups++;
				if (r->hup_fn) {
					r->hup_fn(r->hup_arg, true);
					r->hup_fn = NULL;
				} else if (j) {
					/* j is alive: its completion unwatches under this lock before freeing it */
					pd_sched_cancel(s->sched, j);
				}
			}
			pthread_mutex_unlock(&s->mu);
		}
	}
	return NULL;
}

int hangup_start(pd_server *s, pd_err *e)
{
	s->hup_epfd = epoll_create1(EPOLL_CLOEXEC);
	s->hup_evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->hup_epfd < 0 || s->hup_evfd < 0)
		return pd_fail(e, errno, "hang-up watcher");
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = STOP_ID};
	if (epoll_ctl(s->hup_epfd, EPOLL_CTL_ADD, s->hup_evfd, &ev) < 0)
		return pd_fail(e, errno, "hang-up watcher");
	if (pthread_create(&s->hup_thread, NULL, hangup_main, s) != 0)
		return pd_fail(e, EAGAIN, "start the hang-up watcher");
	s->hup_started = true;
	return 0;
}

void hangup_stop(pd_server *s)
{
	if (s->hup_started) {
		uint64_t one = 1;
		if (write(s->hup_evfd, &one, sizeof one) != sizeof one)
			pd_log("warn", "hang-up watcher: could not wake it");
		pthread_join(s->hup_thread, NULL);
		s->hup_started = false;
	}
	if (s->hup_epfd > 0)
		close(s->hup_epfd);
	if (s->hup_evfd > 0)
		close(s->hup_evfd);
	s->hup_epfd = s->hup_evfd = -1;
}

void hangup_watch(req *r, pd_job *j)
{
	pd_server *s = r->srv;
	if (!s->hup_started)
		return;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || ci->connect_fd < 0)
		return;
	pthread_mutex_lock(&s->mu);
	r->job = j;
	link_req(s, r, ci->connect_fd);
	pthread_mutex_unlock(&s->mu);
	/* A pipelined request read from the buffer after its client already left: the watcher thread
	 * will see the hang-up, but an idle worker could take the job and finish a short program
	 * first. Asked here, before the job is queued, it is never run. */
	struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		pd_job_cancel(j);
}

void hangup_unwatch(req *r)
{
	pd_server *s = r->srv;
	pthread_mutex_lock(&s->mu);
	if (r->watch_id)
		unlink_req(s, r);
	r->job = NULL;
	if (r->hup_fn) {
		r->hup_fn(r->hup_arg, false);
		r->hup_fn = NULL;
	}
	pthread_mutex_unlock(&s->mu);
}

/* A batch: its jobs are its own to cancel (fn), and the watch lasts as long as r, through an
 * answer that streams while r is not suspended; the registration is r's, so a hang-up seen after
 * r was freed cannot reach it (on_completed unwatches first). */
void hangup_watch_fn(req *r, void (*fn)(void *arg, bool fired), void *arg)
{
	pd_server *s = r->srv;
	r->hup_owned = true;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	pthread_mutex_lock(&s->mu);
	r->hup_fn = fn;
	r->hup_arg = arg;
	if (s->hup_started && ci && ci->connect_fd >= 0)
		link_req(s, r, ci->connect_fd);
	/* gone already (a pipelined batch read after its client left): nothing of it runs */
	struct pollfd p = {.fd = ci ? ci->connect_fd : -1, .events = POLLRDHUP};
	if (ci && ci->connect_fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		if (r->watch_id)
			unlink_req(s, r);
		s->hangups++;
		r->hup_fn(r->hup_arg, true);
		r->hup_fn = NULL;
	}
	pthread_mutex_unlock(&s->mu);
}
