/* The bench's in-process daemon and its keep-alive client (bench_daemon.h). */
#define _GNU_SOURCE
#include "bench_daemon.h"
#include "cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int bench_daemon_start(bench_daemon *d, const char *what, unsigned warm)
{
	memset(d, 0, sizeof *d);
	snprintf(d->dir, sizeof d->dir, "/tmp/paddock-bench-%s-XXXXXX", what);
	if (!mkdtemp(d->dir)) {
		cli_error("bench --%s: mkdtemp: %s", what, strerror(errno));
		return -1;
	}
	snprintf(d->db, sizeof d->db, "%s/store.db", d->dir);
	pd_log_enable(false);
	pd_server_opts o = {0};
	o.sched.retries = 2; /* as serve's default: the scheduler takes 0 as no retries */
	o.listen = "127.0.0.1:0";
	o.db_path = d->db;
	o.warm = warm;
	pd_err e = {0};
	d->s = pd_server_start(&o, &e);
	if (!d->s) {
		cli_error("%s", PD_ERR_STR(&e));
		bench_daemon_stop(d);
		return -1;
	}
	const char *addr = pd_server_address(d->s);
	d->port = atoi(strrchr(addr, ':') + 1);
	snprintf(d->url, sizeof d->url, "http://%s", addr);
	return 0;
}

void bench_daemon_stop(bench_daemon *d)
{
	if (d->s)
		pd_server_stop(d->s);
	d->s = NULL;
	/* the store's files: the database, and SQLite's write-ahead log and shared memory */
	static const char *const sides[] = {"", "-wal", "-shm"};
	for (size_t i = 0; i < sizeof sides / sizeof *sides; i++) {
		char p[128];
		snprintf(p, sizeof p, "%s%s", d->db, sides[i]);
		unlink(p);
	}
	rmdir(d->dir);
}

int bench_hconnect(bench_hconn *c, int port)
{
	c->len = 0;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return connect(c->fd, (struct sockaddr *)&sa, sizeof sa);
}

int bench_hrequest(bench_hconn *c, const char *method, const char *path, const char *body)
{
	char head[512];
	size_t bl = body ? strlen(body) : 0;
	int hl = snprintf(head, sizeof head,
			  "%s %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
			  "Content-Length: %zu\r\n\r\n",
			  method, path, bl);
	if (write(c->fd, head, (size_t)hl) != hl || (bl && write(c->fd, body, bl) != (ssize_t)bl))
		return -1;
	c->len = 0;
	for (;;) {
		ssize_t n = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
		if (n <= 0)
			return -1;
		c->len += (size_t)n;
		c->buf[c->len] = 0;
		char *end = strstr(c->buf, "\r\n\r\n");
		if (!end)
			continue;
		char *cl = strcasestr(c->buf, "Content-Length:");
		size_t want = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
		size_t have = c->len - (size_t)(end + 4 - c->buf);
		if (have >= want) {
			int status = atoi(c->buf + 9);
			memmove(c->buf, end + 4, have);
			c->buf[have] = 0;
			return status;
		}
		if (c->len >= sizeof c->buf - 1)
			return -1;
	}
}

/* The python pool's count of field in the last GET /v1/pools answer (c->buf); -1 if absent. */
static long pool_count(const bench_hconn *c, const char *field)
{
	const char *p = strstr(c->buf, "\"template\":\"python\"");
	char key[32];
	snprintf(key, sizeof key, "\"%s\":", field);
	p = p ? strstr(p, key) : NULL;
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

int bench_pool_quiet(bench_hconn *c, unsigned poll_ms)
{
	uint64_t deadline = pd_now_us() + 30 * 1000000u;
	for (int n = 1;; n++) {
		if (bench_hrequest(c, "GET", "/v1/pools", NULL) != 200)
			return -1;
		if (pool_count(c, "reclaiming") <= 0 && pool_count(c, "creating") <= 0)
			return n;
		if (pd_now_us() >= deadline)
			return -1;
		struct timespec ts = {(time_t)(poll_ms / 1000), (long)(poll_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
}
