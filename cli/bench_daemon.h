/* The daemon the HTTP sections of paddock bench (--http, --guard, --judge, --episode) measure, and
 * the client they talk to it with (cli/bench_daemon.c): a `paddock serve` started in this process
 * on loopback with a store of its own in a temporary directory, and a keep-alive connection that
 * costs the bench next to nothing per request (the figures are the daemon's). */
#ifndef PADDOCK_CLI_BENCH_DAEMON_H
#define PADDOCK_CLI_BENCH_DAEMON_H

#include "server.h"

#include <stddef.h>

typedef struct bench_daemon {
	pd_server *s;
	char dir[64];  /* /tmp/paddock-bench-WHAT-XXXXXX: the store, and a section's own files */
	char db[96];   /* dir/store.db */
	char url[128]; /* http://127.0.0.1:PORT */
	int port;
} bench_daemon;

/* Makes the directory, then starts the daemon with warm sandboxes per pool (0: the default) and
 * the scheduler's retries as serve's; the daemon's log is off. 0, or -1 after saying why
 * (cli_error, "bench --WHAT: ..."), with nothing left behind. */
int bench_daemon_start(bench_daemon *d, const char *what, unsigned warm);
/* Stops it and removes its store (and the directory, once the section removed its own files). */
void bench_daemon_stop(bench_daemon *d);

typedef struct bench_hconn {
	int fd;
	char buf[65536];
	size_t len;
} bench_hconn;
/* A keep-alive connection to 127.0.0.1:port: connect's result. */
int bench_hconnect(bench_hconn *c, int port);
/* One request; returns the status code (-1: the connection failed), the body in c->buf. */
int bench_hrequest(bench_hconn *c, const char *method, const char *path, const char *body);
/* Asks GET /v1/pools every poll_ms until the python pool neither resets nor creates (up to 30 s):
 * the work requests queued for the reclaimer is theirs. Returns the questions asked (each costs
 * both sides CPU the requests did not), -1 if a question failed or the pool never went quiet. */
int bench_pool_quiet(bench_hconn *c, unsigned poll_ms);

#endif
