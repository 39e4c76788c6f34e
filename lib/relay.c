/* The egress relay: an HTTP proxy the host runs for one allowlist sandbox.
 *
 * Why a relay and not a route: the sandbox keeps its own network namespace with only lo, so
 * nothing it sends can leave except through a socket the host chose to give it. The relay's
 * listening socket was made inside that namespace (127.0.0.1:3128 there); the connections it
 * makes to targets are the host's. So the allowlist is judged by the host on names and ports
 * the program asked for (relayreq.c), every connection is seen whole (target, name, TLS SNI,
 * bytes each way, how it ended), and a program that ignores the proxy variables reaches
 * nothing at all.
 *
 * How: one acceptor thread per relay and one thread per connection (a name lookup blocks; a
 * thread per connection keeps one slow lookup from holding up the others, and the bound on
 * connections bounds the threads). Every thread polls an eventfd that stop() makes readable
 * for good, so a stop reaches each wherever it waits; stop() then shuts the sockets down and
 * joins. A thread stuck in getaddrinfo cannot be reached: stop() waits for it about two
 * seconds, then leaves it to end on its own (it holds a reference to the relay, the last one
 * out frees it). No thread of the daemon ever blocks on a program: the relay's threads are the
 * relay's. */
#define _GNU_SOURCE
#include "audit.h"
#include "encforms.h"
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define DEF_CONNS 16
#define DEF_BYTES (64ull << 20)
#define DEF_IDLE_MS 30000
#define CONNECT_MS 10000
#define MAX_EVENTS 256 /* kept between two collects; beyond, counted as dropped */
#define MAX_ADDRS 8
#define STACK (256 * 1024) /* getaddrinfo needs more than a minimal stack */

typedef struct conn {
	struct pd_relay *relay;
	pthread_t th;
	int cfd, ufd;
	bool done, reported, joinable;
	uint64_t t_us;
	pd_audit_event ev; /* built as the connection goes */
	char carry[31];    /* the last bytes sent out, for a honey mark cut between two reads */
	size_t ncarry;
	struct conn *next;
} conn;

struct pd_relay {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int lfd, wake;
	pthread_t acceptor;
	bool acceptor_on;
	relay_rule *rules;
	size_t nrules;
	uint32_t max_conns;
	uint64_t max_bytes, idle_ms;
	bool stopping;
	unsigned refs;    /* the owner, the acceptor, each connection thread */
	unsigned nactive; /* connections not done */
	conn *conns;      /* all not yet collected, newest first */
	pd_audit_event *events; /* refused at once (no thread), and finished connections */
	size_t nevents;
	uint64_t dropped;
};

static void relay_free(pd_relay *r)
{
	for (conn *c = r->conns, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	if (r->lfd >= 0)
		close(r->lfd);
	close(r->wake);
	free(r->rules);
	free(r->events);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static void relay_unref(pd_relay *r)
{
	pthread_mutex_lock(&r->lock);
	bool last = --r->refs == 0;
	pthread_mutex_unlock(&r->lock);
	if (last)
		relay_free(r);
}

/* an event into the relay's list (under the lock) */
static void push_event(pd_relay *r, const pd_audit_event *ev)
{
	if (r->nevents >= MAX_EVENTS) {
		r->dropped++;
		return;
	}
	r->events[r->nevents++] = *ev;
}

/* Waits for fd to be ready for ev, the stop signal, or ms. 1 ready, 0 timed out, -1 stopping. */
static int wait_fd(pd_relay *r, int fd, short ev, uint64_t ms)
{
	struct pollfd p[2] = {{.fd = fd, .events = ev}, {.fd = r->wake, .events = POLLIN}};
	for (;;) {
		int n = poll(p, 2, ms > 600000 ? 600000 : (int)ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[1].revents)
			return -1;
		return n > 0;
	}
}

static bool send_all(pd_relay *r, int fd, const char *b, size_t n, uint64_t ms)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			b += w, n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_fd(r, fd, POLLOUT, ms) > 0)
			continue;
		return false;
	}
	return true;
}

static void answer(pd_relay *r, int fd, int status, const char *why)
{
	const char *text = status == 403 ? "Forbidden" : status == 502 ? "Bad Gateway"
			 : status == 503 ? "Service Unavailable" : status == 501 ? "Not Implemented"
			 : status == 504 ? "Gateway Timeout" : "Bad Request";
	char b[512];
	int n = snprintf(b, sizeof b,
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
			 "Content-Length: %zu\r\n\r\npaddock egress relay: %s\n",
			 status, text, strlen(why) + 22, why);
	if (n > 0 && (size_t)n < sizeof b)
		send_all(r, fd, b, (size_t)n, 1000);
}

/* the request head, up to its blank line; returns its length, 0 on a closed or idle client or
 * a stop, -1 when too long. *got: all bytes read (the head and what followed it) */
static ssize_t read_head(pd_relay *r, int fd, char *buf, size_t cap, size_t *got)
{
	size_t n = 0, from = 0;
	for (;;) {
		for (size_t i = from; i + 1 < n; i++) {
			if (buf[i] == '\n' && buf[i + 1] == '\n') {
				*got = n;
				return (ssize_t)(i + 2);
			}
			if (i + 3 < n && !memcmp(buf + i, "\r\n\r\n", 4)) {
				*got = n;
				return (ssize_t)(i + 4);
			}
		}
		if (n == cap)
			return -1;
		if (wait_fd(r, fd, POLLIN, r->idle_ms) <= 0)
			return 0;
		ssize_t k = recv(fd, buf + n, cap - n, MSG_DONTWAIT);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			return 0;
		from = n >= 3 ? n - 3 : 0; /* a terminator may straddle the reads */
		n += (size_t)k;
	}
}

/* a non-blocking connect to each address in turn; the socket or -1 (why) */
static int dial(pd_relay *r, const struct sockaddr_storage *a, int na, char *addr, size_t al, char *why, size_t wl)
{
	snprintf(why, wl, "connection refused");
	for (int i = 0; i < na; i++) {
		int fd = socket(a[i].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(why, wl, "socket: %s", strerror(errno));
			continue;
		}
		socklen_t len = a[i].ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
		int rc = connect(fd, (const struct sockaddr *)&a[i], len);
		if (rc < 0 && errno == EINPROGRESS) {
			int w = wait_fd(r, fd, POLLOUT, CONNECT_MS);
			int err = 0;
			socklen_t el = sizeof err;
			if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && !err)
				rc = 0;
			else
				errno = w == 0 ? ETIMEDOUT : err ? err : ECONNABORTED;
			if (w < 0) {
				close(fd);
				snprintf(why, wl, "relay stopped");
				return -1;
			}
		}
		if (rc == 0) {
			relay_addr_str(&a[i], addr, al);
			return fd;
		}
		snprintf(why, wl, "connect: %s", strerror(errno));
		close(fd);
	}
	return -1;
}

/* Every honey token the audit makes starts so (auditpolicy.c): one in the bytes a program sends
 * out means it harvested its environment (an env_probe when the exec is audited). The mark is
 * looked for as it is and in the spellings a harvester would use to slip it past that search
 * (as auditverdict.c looks for whole tokens): reversed, upper-cased, hex (either case),
 * percent-encoded (either case), base64 (standard and URL-safe) at each of the 3 alignments it
 * can have in a longer text, only the characters that depend on the mark alone. In a TLS tunnel
 * the bytes are encrypted and nothing is seen; a mark cut across two connections is not joined. */
#define HONEY_MARK "pdk-honey-"
#define HONEY_MARK_LEN (sizeof HONEY_MARK - 1)
#define HONEY_FORMS 13
#define HONEY_FORM_MAX (3 * HONEY_MARK_LEN) /* the percent-encoded one */

static char honey_forms[HONEY_FORMS][HONEY_FORM_MAX + 1];
static size_t honey_form_len[HONEY_FORMS];
static int honey_nforms; /* those made: a form of length 0 would match anything */
static pthread_once_t honey_once = PTHREAD_ONCE_INIT;

static bool honey_form_add(const char *form, size_t len, void *arg)
{
	int *f = arg;
	memcpy(honey_forms[*f], form, len);
	honey_form_len[(*f)++] = len;
	return *f == HONEY_FORMS; /* full: the count below is the generator's for this mark */
}

static void honey_forms_make(void)
{
	int f = 0;
	memcpy(honey_forms[f], HONEY_MARK, HONEY_MARK_LEN);
	honey_form_len[f++] = HONEY_MARK_LEN;
	pd_enc_forms(HONEY_MARK, HONEY_MARK_LEN, PD_ENC_PERCENT, honey_form_add, &f);
	honey_nforms = f;
}

static bool honey_in(const char *b, size_t n)
{
	for (int i = 0; i < honey_nforms; i++)
		if (memmem(b, n, honey_forms[i], honey_form_len[i]))
			return true;
	return false;
}

static void honey_scan(conn *c, pd_audit_event *ev, const char *b, size_t n)
{
	_Static_assert(sizeof c->carry >= HONEY_FORM_MAX - 1, "carry holds a form's head");
	const size_t m1 = HONEY_FORM_MAX - 1;
	if (ev->honey || !n)
		return;
	pthread_once(&honey_once, honey_forms_make);
	char edge[2 * HONEY_FORM_MAX];
	size_t take = n < m1 ? n : m1;
	memcpy(edge, c->carry, c->ncarry);
	memcpy(edge + c->ncarry, b, take);
	if (honey_in(edge, c->ncarry + take) || honey_in(b, n)) {
		ev->honey = true;
		return;
	}
	/* keep the last m1 bytes of what went out */
	size_t all = c->ncarry + n, keep = all < m1 ? all : m1;
	if (n >= keep) {
		memcpy(c->carry, b + n - keep, keep);
	} else {
		memmove(c->carry, c->carry + c->ncarry - (keep - n), keep - n);
		memcpy(c->carry + keep - n, b, n);
	}
	c->ncarry = keep;
}

/* Copies both ways until both sides are done, the byte cap, idle, or a stop. */
/* out_left: what the program may still send (a request's body; UINT64_MAX in a tunnel): past it,
 * its side is no longer read. */
static void pump(pd_relay *r, conn *c, pd_audit_event *ev, uint64_t out_left)
{
	char buf[16384];
	bool open_[2] = {out_left > 0, true}; /* [0] program -> target, [1] target -> program */
	int from[2] = {c->cfd, c->ufd}, to[2] = {c->ufd, c->cfd};
	uint64_t *count[2] = {&ev->bytes_out, &ev->bytes_in};
	uint64_t *shown[2] = {&c->ev.bytes_out, &c->ev.bytes_in}; /* what a collect reads */
	while (open_[0] || open_[1]) {
		struct pollfd p[3];
		int np = 0, idx[2] = {-1, -1};
		for (int d = 0; d < 2; d++)
			if (open_[d]) {
				idx[d] = np;
				p[np++] = (struct pollfd){.fd = from[d], .events = POLLIN};
			}
		p[np++] = (struct pollfd){.fd = r->wake, .events = POLLIN};
		int n = poll(p, (nfds_t)np, r->idle_ms > 600000 ? 600000 : (int)r->idle_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(ev->note, sizeof ev->note, n == 0 ? "idle" : "poll failed");
			return;
		}
		if (p[np - 1].revents) {
			snprintf(ev->note, sizeof ev->note, "relay stopped");
			return;
		}
		for (int d = 0; d < 2; d++) {
			if (idx[d] < 0 || !p[idx[d]].revents)
				continue;
			size_t want = d == 0 && out_left < sizeof buf ? (size_t)out_left : sizeof buf;
			ssize_t k = recv(from[d], buf, want, MSG_DONTWAIT);
			if (k < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (k <= 0) {
				open_[d] = false;
				shutdown(to[d], SHUT_WR);
				continue;
			}
			pthread_mutex_lock(&r->lock);
			bool over = ev->bytes_out + ev->bytes_in + (uint64_t)k > r->max_bytes;
			if (!over)
				*count[d] += (uint64_t)k;
			*shown[d] = *count[d];
			pthread_mutex_unlock(&r->lock);
			if (over) {
				snprintf(ev->note, sizeof ev->note, "byte limit");
				return;
			}
			if (d == 0)
				honey_scan(c, ev, buf, (size_t)k);
			if (!send_all(r, to[d], buf, (size_t)k, r->idle_ms)) {
				snprintf(ev->note, sizeof ev->note, "write failed");
				return;
			}
			if (d == 0 && out_left != UINT64_MAX && (out_left -= (uint64_t)k) == 0)
				open_[0] = false; /* the body is through: what follows is not relayed */
		}
	}
}

/* What a collect may show of a connection still going (its bytes follow in pump). */
static void publish(pd_relay *r, conn *c, const pd_audit_event *ev)
{
	pthread_mutex_lock(&r->lock);
	c->ev = *ev;
	pthread_mutex_unlock(&r->lock);
}

/* One connection: its head, the judgement, the target, the copying; into ev (the thread's own,
 * published to c->ev under the lock). */
static void serve(pd_relay *r, conn *c, pd_audit_event *ev)
{
	char head[RELAY_HEAD_MAX], why[128] = "", addr[64] = "";
	size_t got = 0;
	snprintf(ev->op, sizeof ev->op, "http");
	ssize_t hl = read_head(r, c->cfd, head, sizeof head, &got);
	honey_scan(c, ev, head, got); /* a refused request carried it out of the program all the same */
	if (hl <= 0) {
		snprintf(ev->note, sizeof ev->note, hl < 0 ? "request head too long" : "no request");
		if (hl < 0)
			answer(r, c->cfd, 400, "request head too long");
		return;
	}
	relay_req q;
	int status;
	if (relay_parse_head(head, (size_t)hl, &q, &status, why, sizeof why) < 0) {
		snprintf(ev->note, sizeof ev->note, "%s", why);
		answer(r, c->cfd, status, why);
		return;
	}
	snprintf(ev->op, sizeof ev->op, q.tunnel ? "tunnel" : "http");
	snprintf(ev->host, sizeof ev->host, "%s", q.host);
	snprintf(ev->target, sizeof ev->target, strchr(q.host, ':') ? "[%s]:%u" : "%s:%u", q.host, q.port);
	const relay_rule *rule = relay_match(r->rules, r->nrules, q.host, q.port, why, sizeof why);
	struct sockaddr_storage as[MAX_ADDRS];
	int na = rule ? relay_resolve(rule, as, MAX_ADDRS, why, sizeof why) : -1;
	if (na < 0 && rule && strncmp(why, "resolves to", 11)) {
		/* granted, but nowhere to go: not a refusal */
		ev->denied = false;
		snprintf(ev->mode, sizeof ev->mode, "allowed");
		snprintf(ev->note, sizeof ev->note, "%s", why);
		answer(r, c->cfd, 502, why);
		free(q.fwd);
		return;
	}
	if (na < 0) {
		snprintf(ev->note, sizeof ev->note, "%s", why);
		answer(r, c->cfd, 403, why);
		free(q.fwd);
		return;
	}
	snprintf(ev->mode, sizeof ev->mode, "allowed");
	ev->denied = false;
	int ufd = dial(r, as, na, addr, sizeof addr, why, sizeof why);
	if (ufd < 0) {
		snprintf(ev->note, sizeof ev->note, "%s", why);
		answer(r, c->cfd, 502, why);
		free(q.fwd);
		return;
	}
	pthread_mutex_lock(&r->lock);
	c->ufd = ufd;
	pthread_mutex_unlock(&r->lock);
	snprintf(ev->address, sizeof ev->address, "%s", addr);
	publish(r, c, ev);
	const char *rest = head + hl;
	size_t rest_len = got - (size_t)hl;
	uint64_t out_left = q.tunnel ? UINT64_MAX : q.body_len;
	if (!q.tunnel && rest_len > out_left)
		rest_len = (size_t)out_left; /* a pipelined second request: not relayed */
	if (!q.tunnel)
		out_left -= rest_len;
	bool ok;
	if (q.tunnel) {
		static const char est[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		ok = send_all(r, c->cfd, est, sizeof est - 1, r->idle_ms);
		/* the first bytes of a TLS tunnel name the server it wants: a name other than the
		 * one granted is domain fronting (the address serves both, the allowlist one) */
		if (ok && !rest_len && wait_fd(r, c->cfd, POLLIN, r->idle_ms) > 0) {
			ssize_t k = recv(c->cfd, head, sizeof head, MSG_DONTWAIT);
			if (k > 0) {
				rest = head;
				rest_len = (size_t)k;
				honey_scan(c, ev, rest, rest_len);
			}
		}
		char sni[128];
		relay_sni((const unsigned char *)rest, rest_len, sni, sizeof sni);
		if (sni[0]) {
			snprintf(ev->host, sizeof ev->host, "%s", sni);
			if (!rule->is_ip && strcmp(sni, rule->host)) {
				snprintf(ev->mode, sizeof ev->mode, "out");
				ev->denied = true;
				snprintf(ev->note, sizeof ev->note, "TLS server name differs from CONNECT's");
				free(q.fwd);
				return;
			}
		}
	} else {
		ok = send_all(r, ufd, q.fwd, q.fwd_len, r->idle_ms);
		ev->bytes_out += q.fwd_len;
	}
	free(q.fwd);
	if (ok && rest_len) {
		ok = send_all(r, ufd, rest, rest_len, r->idle_ms);
		ev->bytes_out += rest_len;
	}
	if (ok) {
		publish(r, c, ev);
		pump(r, c, ev, out_left);
	}
}

static void *conn_main(void *arg)
{
	conn *c = arg;
	pd_relay *r = c->relay;
	pthread_mutex_lock(&r->lock);
	pd_audit_event ev = c->ev;
	pthread_mutex_unlock(&r->lock);
	serve(r, c, &ev);
	pthread_mutex_lock(&r->lock);
	c->ev = ev;
	close(c->cfd);
	c->cfd = -1;
	if (c->ufd >= 0)
		close(c->ufd);
	c->ufd = -1;
	c->done = true;
	r->nactive--;
	pthread_cond_broadcast(&r->cond);
	/* dropped under the same lock: once done is seen, this thread touches nothing of the relay
	 * (a joiner holding the lock must not wait for it) */
	bool last = --r->refs == 0;
	pthread_mutex_unlock(&r->lock);
	if (last)
		relay_free(r);
	return NULL;
}

static bool start_thread(pthread_t *th, void *(*fn)(void *), void *arg)
{
	pthread_attr_t at;
	if (pthread_attr_init(&at))
		return false;
	pthread_attr_setstacksize(&at, STACK);
	bool ok = pthread_create(th, &at, fn, arg) == 0;
	pthread_attr_destroy(&at);
	return ok;
}

/* Joins connection threads that ended and files their events (not yet reported ones) with the
 * others, bounded: a program that loops over connections between two execs grows nothing but a
 * dropped count. Under the lock. */
static void reap_done(pd_relay *r)
{
	conn **pp = &r->conns;
	while (*pp) {
		conn *c = *pp;
		if (!c->done || !c->joinable) {
			pp = &c->next;
			continue;
		}
		pthread_join(c->th, NULL);
		if (!c->reported)
			push_event(r, &c->ev);
		*pp = c->next;
		free(c);
	}
}

static void refuse_now(pd_relay *r, int fd, const char *why)
{
	answer(r, fd, 503, why);
	close(fd);
	pd_audit_event ev;
	memset(&ev, 0, sizeof ev);
	ev.t_us = pd_now_us();
	snprintf(ev.kind, sizeof ev.kind, "egress");
	snprintf(ev.op, sizeof ev.op, "http");
	snprintf(ev.mode, sizeof ev.mode, "out");
	snprintf(ev.target, sizeof ev.target, "relay");
	snprintf(ev.note, sizeof ev.note, "%s", why);
	ev.denied = true;
	pthread_mutex_lock(&r->lock);
	push_event(r, &ev);
	pthread_mutex_unlock(&r->lock);
}

static void *acceptor_main(void *arg)
{
	pd_relay *r = arg;
	for (;;) {
		if (wait_fd(r, r->lfd, POLLIN, 600000) < 0)
			break;
		int fd = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&r->lock);
		reap_done(r);
		bool full = r->nactive >= r->max_conns || r->stopping;
		pthread_mutex_unlock(&r->lock);
		if (full) {
			refuse_now(r, fd, "connection limit");
			continue;
		}
		conn *c = calloc(1, sizeof *c);
		if (!c) {
			refuse_now(r, fd, "out of memory");
			continue;
		}
		c->relay = r;
		c->cfd = fd;
		c->ufd = -1;
		c->t_us = c->ev.t_us = pd_now_us();
		snprintf(c->ev.kind, sizeof c->ev.kind, "egress");
		snprintf(c->ev.mode, sizeof c->ev.mode, "out");
		snprintf(c->ev.target, sizeof c->ev.target, "relay");
		c->ev.denied = true; /* until granted */
		pthread_mutex_lock(&r->lock);
		r->refs++;
		r->nactive++;
		c->joinable = true;
		c->next = r->conns;
		r->conns = c;
		bool ok = start_thread(&c->th, conn_main, c);
		if (!ok) {
			r->conns = c->next;
			r->refs--;
			r->nactive--;
		}
		pthread_mutex_unlock(&r->lock);
		if (!ok) {
			free(c);
			refuse_now(r, fd, "no thread");
		}
	}
	relay_unref(r);
	return NULL;
}

int pd_relay_start(int lfd, const pd_egress_opts *o, pd_relay **out, pd_err *e)
{
	pd_relay *r = calloc(1, sizeof *r);
	size_t n = 0;
	while (o && o->allow && o->allow[n])
		n++;
	if (!r || !(r->rules = calloc(n ? n : 1, sizeof *r->rules)) ||
	    !(r->events = calloc(MAX_EVENTS, sizeof *r->events))) {
		if (r) {
			free(r->rules);
			free(r);
		}
		close(lfd);
		return pd_fail(e, ENOMEM, "egress relay");
	}
	for (size_t i = 0; i < n; i++) {
		pd_err pe;
		if (relay_rule_parse(o->allow[i], &r->rules[i], &pe) < 0) {
			free(r->rules);
			free(r->events);
			free(r);
			close(lfd);
			return pd_fail(e, EINVAL, "egress.allow[%zu]: %s", i, pe.msg);
		}
	}
	r->nrules = n;
	r->max_conns = o && o->max_conns ? o->max_conns : DEF_CONNS;
	r->max_bytes = o && o->max_bytes ? o->max_bytes : DEF_BYTES;
	r->idle_ms = o && o->idle_ms ? o->idle_ms : DEF_IDLE_MS;
	r->lfd = lfd;
	r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->wake < 0) {
		int err = errno;
		free(r->rules);
		free(r->events);
		free(r);
		close(lfd);
		return pd_fail(e, err, "egress relay: eventfd");
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->refs = 2; /* the owner and the acceptor */
	if (!start_thread(&r->acceptor, acceptor_main, r)) {
		r->refs = 1;
		relay_unref(r);
		return pd_fail(e, EAGAIN, "egress relay: thread");
	}
	r->acceptor_on = true;
	*out = r;
	return 0;
}

void pd_relay_stop(pd_relay *r)
{
	if (!r)
		return;
	uint64_t one = 1;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_mutex_unlock(&r->lock);
	/* readable from now on: every poll of every thread returns */
	if (write(r->wake, &one, sizeof one) < 0) {
		/* an eventfd write fails only at its maximum count, which is readable too */
	}
	if (r->acceptor_on)
		pthread_join(r->acceptor, NULL);
	r->acceptor_on = false;
	pthread_mutex_lock(&r->lock);
	close(r->lfd);
	r->lfd = -1;
	for (conn *c = r->conns; c; c = c->next)
		if (!c->done) {
			if (c->cfd >= 0)
				shutdown(c->cfd, SHUT_RDWR);
			if (c->ufd >= 0)
				shutdown(c->ufd, SHUT_RDWR);
		}
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	while (r->nactive && pthread_cond_timedwait(&r->cond, &r->lock, &until) == 0) {
	}
	reap_done(r);
	/* what is still running (a name lookup) is detached: it frees the relay if last */
	for (conn *c = r->conns; c; c = c->next)
		if (c->joinable) {
			pthread_detach(c->th);
			c->joinable = false;
		}
	pthread_mutex_unlock(&r->lock);
	relay_unref(r);
}

/* the event as the result takes it: time since the exec started */
static void put(pd_result *res, const pd_audit_opts *ao, pd_audit_event ev, uint64_t t0_us)
{
	bool allowed = !strcmp(ev.mode, "allowed");
	ev.t_us = ev.t_us > t0_us ? ev.t_us - t0_us : 0;
	size_t before = res->audit_len;
	pd_audit_record(res, ao, PD_AK_EGRESS, ev.op, ev.mode, ev.target, ev.denied, 0, ev.t_us);
	if (res->audit_len > before) {
		pd_audit_event *d = &res->audit[res->audit_len - 1];
		memcpy(d->host, ev.host, sizeof d->host);
		memcpy(d->address, ev.address, sizeof d->address);
		memcpy(d->note, ev.note, sizeof d->note);
		d->bytes_out = ev.bytes_out;
		d->bytes_in = ev.bytes_in;
	}
	if (ev.honey)
		pd_audit_record(res, ao, PD_AK_ENV_PROBE, ev.op, "out", ev.target, false, 0, ev.t_us);
	res->audit_net++;
	if (ev.denied)
		res->audit_denied++;
	/* the relay refused it either way; under "log" the policy only records */
	if (allowed || (ao && ao->egress == PD_EGRESS_LOG && !ao->deny_net))
		res->audit_egress_allowed++;
}

static int by_time(const void *a, const void *b)
{
	uint64_t x = ((const pd_audit_event *)a)->t_us, y = ((const pd_audit_event *)b)->t_us;
	return x < y ? -1 : x > y;
}

void pd_relay_collect(pd_relay *r, pd_result *res, const pd_audit_opts *ao, uint64_t t0_us)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	/* a connection whose program side has closed is ending: let it record its last bytes */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 500 * 1000000L;
	if (until.tv_nsec >= 1000000000L)
		until.tv_sec++, until.tv_nsec -= 1000000000L;
	for (;;) {
		bool ending = false;
		for (conn *c = r->conns; c && !ending; c = c->next) {
			if (c->done || c->cfd < 0)
				continue;
			struct pollfd p = {.fd = c->cfd, .events = POLLRDHUP};
			ending = poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
		}
		if (!ending || pthread_cond_timedwait(&r->cond, &r->lock, &until) != 0)
			break;
	}
	reap_done(r);
	/* in the order the connections came (the list is newest first) */
	size_t n = r->nevents;
	for (conn *c = r->conns; c; c = c->next)
		n += !c->reported;
	pd_audit_event *all = n ? malloc(n * sizeof *all) : NULL;
	size_t k = 0;
	for (size_t i = 0; all && i < r->nevents; i++)
		all[k++] = r->events[i];
	for (conn *c = r->conns; all && c; c = c->next)
		if (!c->reported)
			all[k++] = c->ev;
	if (all) {
		qsort(all, k, sizeof *all, by_time);
		for (size_t i = 0; i < k; i++)
			put(res, ao, all[i], t0_us);
	} else {
		res->audit_dropped += n; /* out of memory: counted, not shown */
	}
	free(all);
	r->nevents = 0;
	res->audit_dropped += r->dropped;
	r->dropped = 0;
	for (conn *c = r->conns; c; c = c->next)
		c->reported = true;
	pthread_mutex_unlock(&r->lock);
}
