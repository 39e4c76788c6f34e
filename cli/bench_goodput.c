/* paddock bench --goodput and --memory-verdict: a trainer's load against a daemon, and the time
 * to a limit's verdict (issue 20). Each starts its own daemon (`paddock serve` on loopback, a fresh
 * store in a temporary directory): this binary's, and with --against PATH another build's too,
 * the two measured in alternating rounds so that both see the same machine.
 *
 * --goodput: python jobs of --job-cpu seconds of CPU, each with a deadline (deadline_ms) that is
 * also its client's read timeout: the client gives up then, as verl's does. First the capacity:
 * as many closed-loop clients as the daemon has workers; then open-loop arrivals at each of
 * --loads times that rate. For each load:
 *   in time     accepted requests answered before their deadline / accepted (target >= 0.99)
 *   cpu useful  CPU of the runs answered in time / CPU of every run the daemon started, from the
 *               store's records (a run cancelled when its client left counts what it used)
 *               (target >= 0.9)
 *   recovery    from the flood's last arrival until another client's request is admitted
 *               (target <= 1 s), and until it is answered
 *   lost        requests a client that waits up to its own time-out did not get answered in time
 *               (refused, or answered late): a lost training sample (target: 0 at 2x)
 *   unavoidable of those, how many no scheduler could have answered in time: the offered minus
 *               what the measured capacity finishes between the first arrival and the last
 *               deadline (target: lost <= unavoidable at any load)
 * --memory-verdict: the run time (exec_ms) to the verdict of a python program allocating 300 MB
 * under 256 MB, alone and 8 at once (target: under 100 ms alone), and how far past a 1 s limit
 * the time verdict of an infinite loop comes (target: within 50 ms). */
#define _GNU_SOURCE
#include "cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* SQLite, loaded when a goodput run reads a store (paddock.h: pd_dl_lib), not at every start */
#define GP_SQL(X) X(sqlite3_bind_text) X(sqlite3_close) X(sqlite3_column_double) X(sqlite3_column_text) X(sqlite3_finalize) X(sqlite3_open_v2) X(sqlite3_prepare_v2) X(sqlite3_step)
#define GP_ENUM(name) GP_##name,
enum { GP_SQL(GP_ENUM) GP_NSQL };
#define GP_NAME(name) #name,
static const char *const gp_sql_names[] = {GP_SQL(GP_NAME) NULL};
static void *gp_sql_fn[GP_NSQL];
static pd_dl_lib gp_sql = {"libsqlite3.so.0", "libsqlite3-0", gp_sql_names, gp_sql_fn, 0, ""};
#define sqlite3_bind_text ((__typeof__(sqlite3_bind_text) *)pd_dl_fn(&gp_sql, GP_sqlite3_bind_text))
#define sqlite3_close ((__typeof__(sqlite3_close) *)pd_dl_fn(&gp_sql, GP_sqlite3_close))
#define sqlite3_column_double ((__typeof__(sqlite3_column_double) *)pd_dl_fn(&gp_sql, GP_sqlite3_column_double))
#define sqlite3_column_text ((__typeof__(sqlite3_column_text) *)pd_dl_fn(&gp_sql, GP_sqlite3_column_text))
#define sqlite3_finalize ((__typeof__(sqlite3_finalize) *)pd_dl_fn(&gp_sql, GP_sqlite3_finalize))
#define sqlite3_open_v2 ((__typeof__(sqlite3_open_v2) *)pd_dl_fn(&gp_sql, GP_sqlite3_open_v2))
#define sqlite3_prepare_v2 ((__typeof__(sqlite3_prepare_v2) *)pd_dl_fn(&gp_sql, GP_sqlite3_prepare_v2))
#define sqlite3_step ((__typeof__(sqlite3_step) *)pd_dl_fn(&gp_sql, GP_sqlite3_step))

#define MAX_BUILDS 2
#define MAX_LOADS 8
#define MAX_ROUNDS 20

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

static void pause_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- the daemon ------------------------------------------------------------------------------ */

typedef struct daemon_proc {
	pid_t pid;
	int port;
	char dir[64], db[128];
} daemon_proc;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* Starts `bin serve` on a free loopback port with a store of its own; waits until it serves. */
static int daemon_start(daemon_proc *d, const char *bin, char *err, size_t len)
{
	memset(d, 0, sizeof *d);
	snprintf(d->dir, sizeof d->dir, "/tmp/paddock-bench-goodput.XXXXXX");
	if (!mkdtemp(d->dir)) {
		snprintf(err, len, "mkdtemp: %s", strerror(errno));
		return -1;
	}
	snprintf(d->db, sizeof d->db, "%s/db.sqlite", d->dir);
	char logp[96];
	snprintf(logp, sizeof logp, "%s/daemon.log", d->dir);
	int lfd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (lfd < 0) {
		snprintf(err, len, "%s: %s", logp, strerror(errno));
		return -1;
	}
	pid_t parent = getpid();
	d->pid = fork();
	if (d->pid < 0) {
		close(lfd);
		snprintf(err, len, "fork: %s", strerror(errno));
		return -1;
	}
	if (d->pid == 0) {
		/* a bench that dies takes its daemon with it */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		int nul = open("/dev/null", O_RDONLY);
		dup2(nul, 0);
		dup2(lfd, 1);
		dup2(lfd, 2);
		execl(bin, "paddock", "serve", "--listen", "127.0.0.1:0", "--db", d->db, (char *)NULL);
		_exit(127);
	}
	close(lfd);
	/* "serving on ADDR" in its log, or its end */
	for (uint64_t until = mono_us() + 60000000u; mono_us() < until; pause_ms(50)) {
		int st;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = 0;
			snprintf(err, len, "%s serve exited before serving (its log: %s)", bin, logp);
			return -1;
		}
		char buf[8192] = "";
		FILE *f = fopen(logp, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = 0;
		const char *p = strstr(buf, "serving on ");
		const char *colon = p ? strchr(p + 11, ':') : NULL;
		if (colon && strchr(colon, '\n')) {
			d->port = atoi(colon + 1);
			return 0;
		}
	}
	snprintf(err, len, "%s serve did not start serving within 60 s (its log: %s)", bin, logp);
	return -1;
}

static void daemon_stop(daemon_proc *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		int st;
		uint64_t until = mono_us() + 60000000u;
		while (waitpid(d->pid, &st, WNOHANG) == 0 && mono_us() < until)
			pause_ms(20);
		if (mono_us() >= until) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &st, 0);
		}
		d->pid = 0;
	}
	if (d->dir[0])
		nftw(d->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	d->dir[0] = 0;
}

/* ---- a client with a read timeout ------------------------------------------------------------ */

/* One request on a connection of its own; the whole answer must come within timeout_us, or the
 * client gives up and closes the socket (the daemon sees the hang-up). Returns the HTTP status,
 * 0 when the client gave up, -1 when the request could not be made; *body (malloc'd) the answer's
 * body when a status is returned and body is not NULL. */
static int http_call(int port, const char *method, const char *path, const char *req, uint64_t timeout_us,
		     char **body, const char *client)
{
	if (body)
		*body = NULL;
	uint64_t until = mono_us() + timeout_us;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	size_t bl = req ? strlen(req) : 0;
	char head[320];
	int hl = snprintf(head, sizeof head,
			  "%s %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\nContent-Type: application/json\r\n"
			  "%s%s%sContent-Length: %zu\r\n\r\n",
			  method, path, client ? "X-Paddock-Client: " : "", client ? client : "", client ? "\r\n" : "", bl);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || write(fd, head, (size_t)hl) != hl ||
	    (bl && write(fd, req, bl) != (ssize_t)bl)) {
		close(fd);
		return -1;
	}
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	int status = -1;
	while (buf) {
		uint64_t now = mono_us();
		if (now >= until) {
			status = 0;
			break;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, (int)((until - now + 999) / 1000));
		if (r == 0)
			continue;
		if (r < 0 && errno == EINTR)
			continue;
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		ssize_t got = r > 0 ? read(fd, buf + n, cap - 1 - n) : -1;
		if (got < 0 && errno == EINTR)
			continue;
		if (got > 0) {
			n += (size_t)got;
			buf[n] = 0;
		}
		char *end = n ? strstr(buf, "\r\n\r\n") : NULL;
		if (end) {
			char *cl = strcasestr(buf, "Content-Length:");
			size_t want = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
			size_t have = n - (size_t)(end + 4 - buf);
			if (have >= want || got <= 0) {
				status = atoi(buf + 9);
				if (body) {
					memmove(buf, end + 4, have);
					buf[have] = 0;
					*body = buf;
					buf = NULL;
				}
				break;
			}
		}
		if (got <= 0)
			break; /* closed before a whole answer */
	}
	free(buf);
	close(fd);
	return status;
}

/* ---- goodput --------------------------------------------------------------------------------- */

typedef struct gp_opts {
	double job_cpu, deadline_s, duration_s;
	double loads[MAX_LOADS];
	int nloads;
} gp_opts;

/* What one load came to. */
typedef struct gp_load {
	int offered, refused, accepted, in_time, lost, unavoidable;
	double share, cpu_useful, recovery_s, answered_s; /* < 0: never within 30 s */
} gp_load;

typedef struct gp_result {
	double capacity;
	int workers;
	gp_load l[MAX_LOADS];
} gp_result;

static char *job_body(const gp_opts *o, const char *tid)
{
	char code[160];
	snprintf(code, sizeof code,
		 "import time\nt = time.process_time()\nwhile time.process_time() - t < %g: pass\nprint('ok')",
		 o->job_cpu);
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:{s:f}}", "language", "python", "code", code, "task_id", tid,
			      "deadline_ms", (json_int_t)(o->deadline_s * 1000), "limits", "wall_time",
			      o->deadline_s * 4);
	char *s = j ? pd_json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return s;
}

/* status 200 with "status":"OK" */
static bool run_ok(int code, const char *body)
{
	if (code != 200 || !body)
		return false;
	json_t *j = json_loads(body, 0, NULL);
	const char *st = json_string_value(json_object_get(j, "status"));
	bool ok = st && !strcmp(st, "OK");
	json_decref(j);
	return ok;
}

typedef struct gp_call {
	const gp_opts *o;
	int port;
	char tid[48];
	uint64_t stop_us; /* closed loop: until when */
	int code;
	bool ok;
	uint64_t took_us;
	int done_ok; /* closed loop: successes */
} gp_call;

static void *closed_loop(void *arg)
{
	gp_call *c = arg;
	for (int k = 0; mono_us() < c->stop_us; k++) {
		char tid[64];
		snprintf(tid, sizeof tid, "%s-%d", c->tid, k);
		char *req = job_body(c->o, tid), *body = NULL;
		int code = req ? http_call(c->port, "POST", "/v1/runs", req, 60000000u, &body, NULL) : -1;
		c->done_ok += run_ok(code, body);
		free(req);
		free(body);
	}
	return NULL;
}

static void *one_call(void *arg)
{
	gp_call *c = arg;
	char *req = job_body(c->o, c->tid), *body = NULL;
	uint64_t t0 = mono_us();
	c->code = req ? http_call(c->port, "POST", "/v1/runs", req, (uint64_t)(c->o->deadline_s * 1e6), &body, NULL) : -1;
	c->took_us = mono_us() - t0;
	c->ok = run_ok(c->code, body) && c->took_us <= (uint64_t)(c->o->deadline_s * 1e6);
	free(req);
	free(body);
	return NULL;
}

static long metric(int port, const char *name)
{
	char *body = NULL;
	long v = -1;
	if (http_call(port, "GET", "/metrics", NULL, 10000000u, &body, NULL) == 200 && body) {
		size_t nl = strlen(name);
		for (char *p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
			if (!strncmp(p, name, nl) && p[nl] == ' ') {
				v = strtol(p + nl + 1, NULL, 10);
				break;
			}
	}
	free(body);
	return v;
}

/* Waits (at most 60 s) until no worker is busy and nothing is queued: the records of the runs
 * cancelled when their clients left are written by then. */
static void wait_idle(int port)
{
	for (uint64_t until = mono_us() + 60000000u; mono_us() < until; pause_ms(100))
		if (metric(port, "paddock_workers_busy") == 0 &&
		    metric(port, "paddock_queue_length{priority=\"normal\"}") == 0)
			return;
}

/* CPU of every attempt of the tag's runs, and of those answered in time (calls[i].ok) */
static void cpu_of(const char *db, const char *tag, const gp_call *calls, int n, double *total, double *useful)
{
	*total = *useful = 0;
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	char like[64];
	snprintf(like, sizeof like, "%s-%%", tag);
	if (pd_dl_load(&gp_sql, NULL) < 0)
		return; /* no figures: the table says 0 */
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(h,
			       "SELECT task_id, json_extract(record, '$.run.cpu_ms') FROM attempts WHERE task_id LIKE ?",
			       -1, &st, NULL) != SQLITE_OK) {
		sqlite3_close(h);
		return;
	}
	sqlite3_bind_text(st, 1, like, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *tid = (const char *)sqlite3_column_text(st, 0);
		double cpu = sqlite3_column_double(st, 1);
		*total += cpu;
		/* tag-N: calls[N] */
		const char *dash = tid ? strrchr(tid, '-') : NULL;
		int i = dash ? atoi(dash + 1) : -1;
		if (i >= 0 && i < n && calls[i].ok && !strcmp(calls[i].tid, tid))
			*useful += cpu;
	}
	sqlite3_finalize(st);
	sqlite3_close(h);
}

/* The capacity: closed-loop clients, one per worker (at most 64), for the duration; the calls
 * completed a second. */
static double goodput_capacity(const gp_opts *o, int port, int workers, pthread_attr_t *attr, int round, int build)
{
	gp_call cap[64];
	pthread_t th[64];
	int nw = workers < 64 ? workers : 64;
	uint64_t t0 = mono_us();
	for (int i = 0; i < nw; i++) {
		cap[i] = (gp_call){.o = o, .port = port, .stop_us = t0 + (uint64_t)(o->duration_s * 1e6)};
		snprintf(cap[i].tid, sizeof cap[i].tid, "r%db%dcap%d", round, build, i);
		pthread_create(&th[i], attr, closed_loop, &cap[i]);
	}
	int done = 0;
	for (int i = 0; i < nw; i++) {
		pthread_join(th[i], NULL);
		done += cap[i].done_ok;
	}
	return done / ((mono_us() - t0) / 1e6);
}

/* recovery: the first quick request (no deadline of its own) of another client admitted after the
 * flood that ended at end: when it was sent (a refusal comes at once, so the attempt that was not
 * refused was admitted when sent), and when it was answered (clients are served round robin: it
 * waits for the jobs running, not for the flood's queue); -1 when none was within 30 s. */
static void goodput_recovery(int port, const char *tag, uint64_t end, double *recovery, double *answered)
{
	*recovery = *answered = -1;
	for (int k = 0; *recovery < 0 && mono_us() - end < 30000000u; k++) {
		uint64_t t_try = mono_us();
		char req[160];
		snprintf(req, sizeof req, "{\"shell\":\"true\",\"task_id\":\"%s-idle-%d\"}", tag, k);
		if (http_call(port, "POST", "/v1/runs", req, 30000000u, NULL, "bench-idle") == 200) {
			*recovery = (t_try - end) / 1e6;
			*answered = (mono_us() - end) / 1e6;
		} else
			pause_ms(10);
	}
}

/* One load: load x capacity calls a second, open loop (a thread per call) for the duration, tagged
 * tag; what they came to into *l. -1 (err) when out of memory. */
static int goodput_load(const gp_opts *o, const daemon_proc *d, pthread_attr_t *attr, double capacity, double load,
			const char *tag, gp_load *l, char *err, size_t len)
{
	double rate = capacity * load;
	int n = (int)(rate * o->duration_s);
	if (n < 1)
		n = 1;
	gp_call *calls = calloc((size_t)n, sizeof *calls);
	pthread_t *ts = calloc((size_t)n, sizeof *ts);
	bool *started = calloc((size_t)n, sizeof *started);
	if (!calls || !ts || !started) {
		free(calls);
		free(ts);
		free(started);
		snprintf(err, len, "out of memory");
		return -1;
	}
	uint64_t start = mono_us();
	for (int i = 0; i < n; i++) {
		uint64_t at = start + (uint64_t)(i / rate * 1e6), now = mono_us();
		if (at > now)
			pause_ms((unsigned)((at - now) / 1000));
		calls[i] = (gp_call){.o = o, .port = d->port};
		snprintf(calls[i].tid, sizeof calls[i].tid, "%s-%d", tag, i);
		started[i] = pthread_create(&ts[i], attr, one_call, &calls[i]) == 0;
	}
	double recovery, answered;
	goodput_recovery(d->port, tag, mono_us(), &recovery, &answered);
	for (int i = 0; i < n; i++)
		if (started[i])
			pthread_join(ts[i], NULL);
	wait_idle(d->port);
	pause_ms(200); /* an old build frees its worker a moment before the record is written */
	int refused = 0, accepted = 0, in_time = 0;
	for (int i = 0; i < n; i++) {
		int c = calls[i].code;
		if (c == 429 || c == 503 || c == 504)
			refused++;
		else {
			accepted++;
			in_time += calls[i].ok;
		}
	}
	double total, useful;
	cpu_of(d->db, tag, calls, n, &total, &useful);
	/* what capacity finishes from the first arrival to the last deadline, less one job's own
	 * time: more than that could not have been answered in time by anyone */
	double window = o->duration_s + o->deadline_s - o->job_cpu;
	int feasible = (int)(capacity * (window > 0 ? window : 0));
	*l = (gp_load){.offered = n,
		       .refused = refused,
		       .accepted = accepted,
		       .in_time = in_time,
		       .lost = n - in_time,
		       .unavoidable = n > feasible ? n - feasible : 0,
		       .share = accepted ? (double)in_time / accepted : 1,
		       .cpu_useful = total > 0 ? useful / total : 1,
		       .recovery_s = recovery,
		       .answered_s = answered};
	free(calls);
	free(ts);
	free(started);
	return 0;
}

static int goodput_run(const char *bin, const gp_opts *o, int round, int build, gp_result *res, char *err,
		       size_t len)
{
	daemon_proc d;
	memset(res, 0, sizeof *res);
	if (daemon_start(&d, bin, err, len) < 0) {
		daemon_stop(&d);
		return -1;
	}
	/* the workers native runs get: the CPU class (an older build has one class) */
	res->workers = (int)metric(d.port, "paddock_class_workers{class=\"cpu\"}");
	if (res->workers <= 0)
		res->workers = (int)metric(d.port, "paddock_workers");
	if (res->workers <= 0)
		res->workers = 4;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	res->capacity = goodput_capacity(o, d.port, res->workers, &attr, round, build);
	wait_idle(d.port);
	for (int li = 0; li < o->nloads && res->capacity > 0; li++) {
		char tag[32];
		snprintf(tag, sizeof tag, "r%db%dl%d", round, build, li);
		if (goodput_load(o, &d, &attr, res->capacity, o->loads[li], tag, &res->l[li], err, len) < 0)
			break;
	}
	pthread_attr_destroy(&attr);
	daemon_stop(&d);
	return 0;
}

static void print_goodput(const gp_opts *o, const gp_result *r)
{
	printf("  capacity %.2f jobs/s (%d closed-loop clients)\n", r->capacity, r->workers);
	printf("  %-5s %8s %8s %8s %8s %9s %10s %10s %10s %6s %11s\n", "load", "offered", "refused", "accepted",
	       "in_time", "in_time%", "cpu_useful", "recovery_s", "answered_s", "lost", "unavoidable");
	for (int i = 0; i < o->nloads; i++) {
		char rec[16] = "never", ans[16] = "never";
		if (r->l[i].recovery_s >= 0)
			snprintf(rec, sizeof rec, "%.3f", r->l[i].recovery_s);
		if (r->l[i].answered_s >= 0)
			snprintf(ans, sizeof ans, "%.3f", r->l[i].answered_s);
		char load[16];
		snprintf(load, sizeof load, "%gx", o->loads[i]);
		printf("  %-5s %8d %8d %8d %8d %9.3f %10.3f %10s %10s %6d %11d\n", load, r->l[i].offered,
		       r->l[i].refused, r->l[i].accepted, r->l[i].in_time, r->l[i].share, r->l[i].cpu_useful, rec, ans,
		       r->l[i].lost, r->l[i].unavoidable);
	}
}

/* ---- memory verdict -------------------------------------------------------------------------- */

#define MV_REPS 3  /* of each batch (1 and 8 at once) */
#define MV_LOOPS 5 /* infinite loops, one after the other */

typedef struct mv_result {
	/* [0]: alone, [1]: 8 at once; each sample a run's exec_ms, -1 if it had no run */
	double ms[2][8 * MV_REPS];
	int n[2], as_memory[2];
	double loop_over[MV_LOOPS]; /* exec_ms past the 1 s limit */
	int nloop, loop_timed_out;
} mv_result;

typedef struct mv_call {
	int port;
	const char *req;
	char status[8];
	double exec_ms;
} mv_call;

static void *mv_one(void *arg)
{
	mv_call *c = arg;
	char *body = NULL;
	c->status[0] = 0;
	c->exec_ms = -1;
	if (http_call(c->port, "POST", "/v1/runs", c->req, 120000000u, &body, NULL) == 200 && body) {
		json_t *j = json_loads(body, 0, NULL);
		snprintf(c->status, sizeof c->status, "%s", json_string_value(json_object_get(j, "status")) ?: "");
		json_t *ms = json_object_get(json_object_get(j, "run"), "exec_ms");
		if (json_is_number(ms))
			c->exec_ms = json_number_value(ms);
		json_decref(j);
	}
	free(body);
	return NULL;
}

static int memory_run(const char *bin, mv_result *res, char *err, size_t len)
{
	daemon_proc d;
	memset(res, 0, sizeof *res);
	if (daemon_start(&d, bin, err, len) < 0) {
		daemon_stop(&d);
		return -1;
	}
	static const char oom[] = "{\"language\":\"python\",\"code\":\"x = bytearray(300 * 1024 * 1024)\","
				  "\"limits\":{\"memory\":\"256M\",\"wall_time\":2}}";
	static const char loop[] = "{\"language\":\"python\",\"code\":\"while True: pass\","
				   "\"limits\":{\"wall_time\":1}}";
	/* a first run warms the python pool: the figures are of verdicts, not of a cold start */
	mv_call warm = {.port = d.port, .req = "{\"language\":\"python\",\"code\":\"pass\"}"};
	mv_one(&warm);
	for (int b = 0; b < 2; b++) {
		int at_once = b ? 8 : 1;
		for (int rep = 0; rep < MV_REPS; rep++) {
			mv_call c[8];
			pthread_t th[8];
			for (int i = 0; i < at_once; i++) {
				c[i] = (mv_call){.port = d.port, .req = oom};
				pthread_create(&th[i], NULL, mv_one, &c[i]);
			}
			for (int i = 0; i < at_once; i++) {
				pthread_join(th[i], NULL);
				res->ms[b][res->n[b]++] = c[i].exec_ms;
				res->as_memory[b] += !strcmp(c[i].status, "ML");
			}
		}
	}
	for (int i = 0; i < MV_LOOPS; i++) {
		mv_call c = {.port = d.port, .req = loop};
		mv_one(&c);
		res->loop_over[res->nloop++] = c.exec_ms >= 0 ? c.exec_ms - 1000 : -1;
		res->loop_timed_out += !strcmp(c.status, "TO");
	}
	daemon_stop(&d);
	return 0;
}

static double median_of(const double *v, int n, double *max)
{
	double s[64];
	int k = 0;
	for (int i = 0; i < n && k < 64; i++)
		if (v[i] >= -1000)
			s[k++] = v[i];
	if (!k) {
		*max = 0;
		return 0;
	}
	cli_sort_latencies(s, (size_t)k);
	*max = s[k - 1];
	return k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
}

static void print_memory(const mv_result *r)
{
	for (int b = 0; b < 2; b++) {
		double mx, med = median_of(r->ms[b], r->n[b], &mx);
		printf("  memory verdict, %d at once: %d of %d ML; exec_ms median %.0f, max %.0f%s\n", b ? 8 : 1,
		       r->as_memory[b], r->n[b], med, mx, b ? "" : " (target: under 100 ms)");
	}
	double mx, med = median_of(r->loop_over, r->nloop, &mx);
	printf("  time verdict, infinite loop at 1 s: %d of %d TO; ms past the limit median %.0f, max %.0f "
	       "(target: within 50 ms)\n",
	       r->loop_timed_out, r->nloop, med, mx);
}

/* ---- the command ----------------------------------------------------------------------------- */

static bool parse_loads(const char *arg, gp_opts *o)
{
	o->nloads = 0;
	for (const char *p = arg; *p;) {
		char *end;
		double v = strtod(p, &end);
		if (end == p || v <= 0 || v > 100 || o->nloads == MAX_LOADS || (*end && *end != ','))
			return false;
		o->loads[o->nloads++] = v;
		p = *end ? end + 1 : end;
	}
	return o->nloads > 0;
}

enum { O_GOODPUT = 256, O_MEMORY, O_AGAINST, O_LOADS, O_JOB_CPU, O_DEADLINE, O_ROUNDS };

typedef struct goodput_args {
	gp_opts o;
	bool goodput, memory;
	const char *against;
	int rounds;
} goodput_args;

/* One option into a: 0, an exit status, or -1 when c is none of these. */
static int goodput_option(int ch, goodput_args *a)
{
	uint64_t ms;
	long v;
	switch (ch) {
	case O_GOODPUT: a->goodput = true; return 0;
	case O_MEMORY: a->memory = true; return 0;
	case O_AGAINST: a->against = optarg; return 0;
	case 'd':
		if (!cli_duration_ms("bench --goodput: --duration", optarg, 1000, 600000, &ms))
			return EXIT_USAGE;
		a->o.duration_s = ms / 1000.0;
		return 0;
	case O_LOADS:
		if (!parse_loads(optarg, &a->o)) {
			cli_error("bench --goodput: --loads: '%s' is not a comma list of up to %d multiples "
				  "of the capacity (each above 0, at most 100)",
				  optarg, MAX_LOADS);
			return EXIT_USAGE;
		}
		return 0;
	case O_JOB_CPU:
		if (!cli_duration_ms("bench --goodput: --job-cpu", optarg, 10, 60000, &ms))
			return EXIT_USAGE;
		a->o.job_cpu = ms / 1000.0;
		return 0;
	case O_DEADLINE:
		if (!cli_duration_ms("bench --goodput: --deadline", optarg, 100, 600000, &ms))
			return EXIT_USAGE;
		a->o.deadline_s = ms / 1000.0;
		return 0;
	case O_ROUNDS:
		if (!cli_count("bench --goodput: --rounds", optarg, 1, MAX_ROUNDS, &v))
			return EXIT_USAGE;
		a->rounds = (int)v;
		return 0;
	default: return -1;
	}
}

/* The command line: 0 or the exit status of a bad one. */
static int goodput_args_parse(int argc, char **argv, goodput_args *a)
{
	static const struct option opts[] = {
	    {"goodput", no_argument, 0, O_GOODPUT},
	    {"memory-verdict", no_argument, 0, O_MEMORY},
	    {"against", required_argument, 0, O_AGAINST},
	    {"duration", required_argument, 0, 'd'},
	    {"loads", required_argument, 0, O_LOADS},
	    {"job-cpu", required_argument, 0, O_JOB_CPU},
	    {"deadline", required_argument, 0, O_DEADLINE},
	    {"rounds", required_argument, 0, O_ROUNDS},
	    {0, 0, 0, 0},
	};
	*a = (goodput_args){
	    .o = {.job_cpu = 0.3, .deadline_s = 20, .duration_s = 10, .loads = {1, 2, 5}, .nloads = 3},
	    .rounds = 1};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":d:", opts, NULL)) != -1) {
		int rc = goodput_option(ch, a);
		if (rc < 0)
			return cli_bad_option("bench", "bench",
					      "--against and --rounds, and with --goodput --duration, --loads, "
					      "--job-cpu and --deadline",
					      ch, argv, opts);
		if (rc)
			return rc;
	}
	if (optind < argc) {
		cli_error("bench --goodput: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (a->against && access(a->against, X_OK) != 0) {
		cli_error("bench --goodput: --against: '%s' is not an executable", a->against);
		return EXIT_USAGE;
	}
	return 0;
}

int cmd_bench_goodput(int argc, char **argv)
{
	goodput_args a;
	int rc = goodput_args_parse(argc, argv, &a);
	if (rc)
		return rc;
	const gp_opts *o = &a.o;
	/* this build: the very binary running the bench, even if a rebuild replaced the file */
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl <= 0) {
		cli_error("bench: /proc/self/exe: %s", strerror(errno));
		return EXIT_PADDOCK_FAILED;
	}
	self[sl] = 0;
	const char *bins[MAX_BUILDS] = {self, a.against};
	int nbuilds = a.against ? 2 : 1;
	double load1 = 0;
	getloadavg(&load1, 1);
	printf("paddock bench --%s — %ld CPUs, load average %.2f, %d round%s%s%s\n",
	       a.goodput && a.memory ? "goodput --memory-verdict" : a.goodput ? "goodput" : "memory-verdict",
	       sysconf(_SC_NPROCESSORS_ONLN), load1, a.rounds, a.rounds == 1 ? "" : "s",
	       a.against ? ", alternating with " : "", a.against ? a.against : "");
	if (a.goodput)
		printf("goodput: python jobs of %.2f s CPU, deadline (and client read timeout) %.1f s, %.0f s per "
		       "load; targets: in_time >= 0.99, cpu_useful >= 0.9, recovery <= 1 s, lost 0 at 2x and <= unavoidable\n",
		       o->job_cpu, o->deadline_s, o->duration_s);
	fflush(stdout);
	char err[512] = "";
	for (int r = 0; r < a.rounds && !rc; r++)
		for (int b = 0; b < nbuilds && !rc; b++) {
			printf("\nround %d/%d, %s:\n", r + 1, a.rounds, bins[b]);
			if (a.goodput) {
				gp_result g;
				if (goodput_run(bins[b], o, r, b, &g, err, sizeof err) < 0)
					rc = EXIT_PADDOCK_FAILED;
				else
					print_goodput(o, &g);
			}
			if (a.memory && !rc) {
				mv_result m;
				if (memory_run(bins[b], &m, err, sizeof err) < 0)
					rc = EXIT_PADDOCK_FAILED;
				else
					print_memory(&m);
			}
			fflush(stdout);
		}
	if (rc)
		cli_error("bench: %s", err);
	return rc;
}
