/* sandbox.c: the library end to end on the real runtime (root): a session of several execs in one
 * sandbox, per-exec environment, cwd and stdin, exit codes, the TIMED_OUT state, teardown with a
 * residue check, errors as values, many threads on one context, and no fd leak in the caller. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ARGV(...) ((char *const *)(const char *const[]){__VA_ARGS__, NULL})

static pd_ctx *ctx;

/* head and tail of a stream as one string (the tests' outputs are never truncated) */
static char out_buf[4][8192];
static int out_k;

static const char *text(const pd_output *o)
{
	char *b = out_buf[out_k++ % 4];
	size_t n = 0;
	if (o->head_len < sizeof out_buf[0]) {
		memcpy(b, o->head ? o->head : "", o->head_len);
		n = o->head_len;
	}
	if (n + o->tail_len < sizeof out_buf[0]) {
		memcpy(b + n, o->tail ? o->tail : "", o->tail_len);
		n += o->tail_len;
	}
	b[n] = 0;
	return b;
}

static pd_exec_opts xo(char *const *argv)
{
	pd_exec_opts x = {.argv = argv, .stdin_fd = -1};
	return x;
}

/* runs argv in s; fails the test (with the error) when no result is produced */
static int run(pd_sandbox *s, pd_exec_opts *x, pd_result *r)
{
	pd_err e = {0};
	int rc = pd_sandbox_exec(s, x, r, &e);
	if (rc < 0)
		printf("#   exec refused: %s\n", e.msg);
	else if (r->status != PD_OK)
		printf("#   status %s exit %d signal %d error '%s' stderr '%s'\n", pd_status_name(r->status),
		       r->exit_code, r->signal, r->error, text(&r->err));
	return rc;
}

static void test_session(void)
{
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	ok(s != NULL, "create a sandbox (%s)", e.msg);
	if (!s) {
		for (int i = 0; i < 25; i++)
			ok(0, "no sandbox");
		return;
	}
	ok(pd_sandbox_state(s) == PD_READY, "it is READY");
	ok(!strncmp(pd_sandbox_id(s), "sb-", 3) && pd_sandbox_pid(s) > 1, "id %s, init pid %d", pd_sandbox_id(s),
	   (int)pd_sandbox_pid(s));

	pd_result r;
	pd_exec_opts x = xo(ARGV("sh", "-c", "echo hello > /tmp/f; echo one; echo err >&2"));
	ok(run(s, &x, &r) == 0 && r.status == PD_OK && r.exit_code == 0, "exec 1: OK");
	is_str(text(&r.out), "one\n", "exec 1: stdout");
	is_str(text(&r.err), "err\n", "exec 1: stderr, separately");
	ok(!strcmp(r.sandbox_id, pd_sandbox_id(s)), "the result carries the sandbox id");
	pd_result_free(&r);
	ok(pd_sandbox_state(s) == PD_READY, "READY again after the exec");

	x = xo(ARGV("cat", "/tmp/f"));
	ok(run(s, &x, &r) == 0 && r.status == PD_OK, "exec 2: OK");
	is_str(text(&r.out), "hello\n", "exec 2 sees the file exec 1 wrote (a session)");
	pd_result_free(&r);

	/* environment: exactly what is given, or the defaults */
	x = xo(ARGV("sh", "-c", "echo \"$FOO|${HOME-unset}|$PATH\""));
	x.envp = ARGV("PATH=/usr/bin:/bin", "FOO=bar baz");
	run(s, &x, &r);
	is_str(text(&r.out), "bar baz|unset|/usr/bin:/bin\n", "env: exactly the variables given");
	pd_result_free(&r);
	x = xo(ARGV("sh", "-c", "echo \"${FOO-unset}|$HOME\""));
	run(s, &x, &r);
	is_str(text(&r.out), "unset|/root\n", "env: the defaults, and nothing from the previous exec");
	pd_result_free(&r);

	/* working directory */
	x = xo(ARGV("pwd"));
	x.cwd = "/tmp";
	run(s, &x, &r);
	is_str(text(&r.out), "/tmp\n", "cwd /tmp");
	pd_result_free(&r);
	x = xo(ARGV("pwd"));
	run(s, &x, &r);
	is_str(text(&r.out), "/\n", "default cwd /");
	pd_result_free(&r);
	x = xo(ARGV("pwd"));
	x.cwd = "/no/such/dir";
	pd_sandbox_exec(s, &x, &r, &e);
	ok(r.status == PD_RE && r.exit_code == 127 && strstr(r.error, "directory"),
	   "a missing cwd: RE 127 with a reason (%s)", r.error);
	pd_result_free(&r);

	/* stdin */
	static const char in[] = "line1\nli\0ne2";
	x = xo(ARGV("cat"));
	x.stdin_data = in;
	x.stdin_len = sizeof in - 1;
	run(s, &x, &r);
	ok(r.out.total == sizeof in - 1 && r.out.head_len == sizeof in - 1 && !memcmp(r.out.head, in, sizeof in - 1),
	   "stdin_data delivered byte for byte (with a NUL)");
	pd_result_free(&r);
	x = xo(ARGV("cat"));
	run(s, &x, &r);
	ok(r.status == PD_OK && r.out.total == 0, "stdin_fd -1: /dev/null");
	pd_result_free(&r);
	int p[2];
	if (pipe(p) == 0) {
		if (write(p[1], "piped\n", 6) != 6)
			printf("# short write\n");
		close(p[1]);
		x = xo(ARGV("cat"));
		x.stdin_fd = p[0];
		x.stdin_from_fd = true;
		run(s, &x, &r);
		close(p[0]);
		is_str(text(&r.out), "piped\n", "stdin_fd: a host pipe");
		pd_result_free(&r);
	}

	/* exit codes */
	x = xo(ARGV("sh", "-c", "exit 3"));
	pd_sandbox_exec(s, &x, &r, &e);
	ok(r.status == PD_RE && r.exit_code == 3 && r.signal == 0, "exit 3: RE, exit_code 3");
	pd_result_free(&r);
	x = xo(ARGV("sh", "-c", "kill -9 $$"));
	pd_sandbox_exec(s, &x, &r, &e);
	ok(r.status == PD_SG && r.signal == 9, "kill -9: SG, signal 9");
	pd_result_free(&r);
	ok(pd_sandbox_state(s) == PD_READY, "a program's own failure leaves the sandbox READY");
	x = xo(ARGV("/no/such/program"));
	pd_sandbox_exec(s, &x, &r, &e);
	ok(r.status == PD_RE && r.exit_code == 127 && r.error[0], "a missing program: RE 127 with an error (%s)", r.error);
	pd_result_free(&r);

	/* invalid requests are refused, and the sandbox stays usable */
	x = xo(ARGV(NULL));
	memset(&e, 0, sizeof e);
	ok(pd_sandbox_exec(s, &x, &r, &e) == -1 && e.code == EINVAL, "an empty argv is refused: EINVAL (%s)", e.msg);
	x = xo(ARGV("true"));
	ok(run(s, &x, &r) == 0 && r.status == PD_OK, "the sandbox still runs programs");
	pd_result_free(&r);

	char res[128] = "";
	ok(pd_sandbox_destroy(s, res, sizeof res) == 0, "destroy returns 0");
	is_str(res, "clean", "residue clean");
}

static void test_timed_out(void)
{
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	if (!s) {
		ok(0, "create: %s", e.msg);
		for (int i = 0; i < 5; i++)
			ok(0, "no sandbox");
		return;
	}
	pd_result r;
	pd_exec_opts x = xo(ARGV("sleep", "10"));
	x.wall_ms = 200;
	pd_sandbox_exec(s, &x, &r, &e);
	ok(r.status == PD_TO, "sleep 10 with a 200 ms wall limit: TO (%s)", pd_status_name(r.status));
	pd_result_free(&r);
	is_str(pd_state_name(pd_sandbox_state(s)), "TIMED_OUT", "the sandbox is TIMED_OUT");
	x = xo(ARGV("true"));
	memset(&e, 0, sizeof e);
	int rc = pd_sandbox_exec(s, &x, &r, &e);
	ok(rc == -1 && e.code == EINVAL, "an exec on a TIMED_OUT sandbox is refused (EINVAL)");
	ok(strstr(e.msg, "TIMED_OUT") != NULL, "... saying why (%s)", e.msg);
	char res[128] = "";
	ok(pd_sandbox_destroy(s, res, sizeof res) == 0, "destroy of a TIMED_OUT sandbox returns 0");
	is_str(res, "clean", "... and its residue is clean");
}

static void test_errors(void)
{
	pd_err e = {0};
	int fds0 = (int)pd_open_fds();
	pd_sandbox_opts so = {.limits = pd_limits_default(), .image = "/nonexistent/paddock-image"};
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	ok(s == NULL, "a bad image path: no sandbox");
	is_int(e.code, ENOENT, "... e.code ENOENT");
	ok(strstr(e.msg, "/nonexistent/paddock-image") != NULL, "... the message names the path (%s)", e.msg);

	pd_result r;
	pd_exec_opts x = xo(ARGV("true"));
	memset(&e, 0, sizeof e);
	int rc = pd_run(ctx, &so, &x, &r, &e);
	ok(rc == -1 && r.status == PD_XX && e.code == ENOENT, "pd_run with a bad image: -1, XX, ENOENT");
	is_str(r.residue, "not-created", "... residue not-created");
	pd_result_free(&r);

	pd_bind b = {.src = "/tmp", .dst = "tmp/x"};
	pd_sandbox_opts sb = {.limits = pd_limits_default(), .binds = &b, .nbinds = 1};
	memset(&e, 0, sizeof e);
	ok(pd_sandbox_create(ctx, &sb, &e) == NULL && e.code == EINVAL, "a bind with a relative target: EINVAL (%s)", e.msg);
	b = (pd_bind){.src = "/tmp", .dst = "/x/../etc"};
	memset(&e, 0, sizeof e);
	ok(pd_sandbox_create(ctx, &sb, &e) == NULL && e.code == EINVAL, "a bind target with '..': EINVAL");
	b = (pd_bind){.src = "/nonexistent/paddock-src", .dst = "/mnt/x"};
	memset(&e, 0, sizeof e);
	ok(pd_sandbox_create(ctx, &sb, &e) == NULL && e.code == ENOENT && strstr(e.msg, "/nonexistent/paddock-src"),
	   "a bind of a missing source: ENOENT naming it (%s)", e.msg);
	pd_sandbox_opts sh = {.limits = pd_limits_default(), .hostname = ""};
	memset(&e, 0, sizeof e);
	ok(pd_sandbox_create(ctx, &sh, &e) == NULL && e.code == EINVAL, "an empty hostname: EINVAL");
	is_int((int)pd_open_fds(), fds0, "failed creates leave no fd behind");
}

/* output between 3/4 and all of the kept bytes is whole in the result: the live callback must see
 * all of it too, or a passthrough (paddock exec without --json) silently loses the end */
static size_t cb_bytes;

static void count_cb(void *arg, int stream, const char *buf, size_t len)
{
	(void)arg;
	(void)buf;
	if (stream == 1)
		cb_bytes += len;
}

static void test_live_output(void)
{
	pd_limits l = pd_limits_default();
	l.output_bytes = 100;
	pd_sandbox_opts so = {.limits = l};
	pd_result r;
	pd_exec_opts x = xo(ARGV("sh", "-c", "printf '%090d' 0"));
	x.on_output = count_cb;
	pd_err e = {0};
	cb_bytes = 0;
	int rc = pd_run(ctx, &so, &x, &r, &e);
	ok(rc == 0 && r.status == PD_OK && r.out.total == 90 && !r.out.truncated,
	   "90 bytes with 100 kept: OK, not truncated (%s)", pd_status_name(r.status));
	if (!ok(cb_bytes == 90, "the live callback saw all 90 bytes"))
		printf("#   it saw %zu: only the head (3/4 of the kept bytes) is passed live\n", cb_bytes);
	pd_result_free(&r);
}

/* A spill holds its stream whole or says it does not: a cap (spill_max) stops it, and the
 * result reports the loss; without a cap, or under it, it holds every byte. */
static void test_spill(void)
{
	char tmpl[3][32] = {"/tmp/pd-spill-XXXXXX", "/tmp/pd-spill-XXXXXX", "/tmp/pd-spill-XXXXXX"};
	int fds[3];
	for (int i = 0; i < 3; i++) {
		fds[i] = mkstemp(tmpl[i]);
		unlink(tmpl[i]);
	}
	static const uint64_t caps[3] = {0, 300000, 100000};
	int good = 0;
	for (int i = 0; i < 3; i++) {
		pd_sandbox_opts so = {.limits = pd_limits_default()};
		pd_result r;
		pd_exec_opts x = xo(ARGV("sh", "-c", "head -c 200000 /dev/zero"));
		x.spill = true;
		x.spill_fd[0] = fds[i];
		x.spill_fd[1] = -1;
		x.spill_max = caps[i];
		pd_err e = {0};
		if (pd_run(ctx, &so, &x, &r, &e) < 0) {
			printf("#   %s\n", e.msg);
			continue;
		}
		off_t size = lseek(fds[i], 0, SEEK_END);
		bool whole = size == 200000 && r.out.total == 200000;
		good += i < 2 ? whole && !r.spill_lost[0] : !whole && size <= 100000 && r.spill_lost[0];
		pd_result_free(&r);
	}
	is_int(good, 3,
	       "200,000 bytes spilled: whole with no cap and under a 300,000 cap; cut and reported lost "
	       "with a 100,000 cap");
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}

/* a program that stops reading its stdin_data must not get the caller killed by SIGPIPE */
static volatile sig_atomic_t sigpipes;
static int slow_calls;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static void slow_cb(void *arg, int stream, const char *buf, size_t len)
{
	(void)arg;
	(void)stream;
	(void)buf;
	(void)len;
	/* the host is busy elsewhere while the program reads what is in the pipe and ends */
	if (!slow_calls++) {
		struct timespec ts = {0, 400 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static void test_sigpipe(void)
{
	struct sigaction sa = {0}, old;
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, &old);
	size_t len = 1 << 20;
	char *data = malloc(len);
	memset(data, 'i', len);
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	pd_result r;
	pd_exec_opts x = xo(ARGV("sh", "-c", "echo x; sleep 0.1; head -c 65536 >/dev/null"));
	x.stdin_data = data;
	x.stdin_len = len;
	x.on_output = slow_cb;
	pd_err e = {0};
	sigpipes = 0;
	slow_calls = 0;
	int rc = pd_run(ctx, &so, &x, &r, &e);
	ok(rc == 0 && r.status == PD_OK, "a program that reads 64 KiB of 1 MiB of stdin_data: OK (%s)",
	   pd_status_name(r.status));
	if (!ok(sigpipes == 0, "no SIGPIPE was raised in the caller"))
		printf("#   %d SIGPIPE: with the default action this kills the embedding process\n", (int)sigpipes);
	pd_result_free(&r);
	free(data);
	sigaction(SIGPIPE, &old, NULL);
}

typedef struct worker {
	int id, good, bad_status, bad_output, bad_residue;
} worker;

static void *work(void *arg)
{
	worker *w = arg;
	for (int i = 0; i < 20; i++) {
		char tag[32], want[40];
		snprintf(tag, sizeof tag, "thread-%d-run-%d", w->id, i);
		snprintf(want, sizeof want, "%s\n", tag);
		pd_sandbox_opts so = {.limits = pd_limits_default()};
		pd_exec_opts x = xo(ARGV("echo", tag));
		pd_result r;
		pd_err e = {0};
		if (pd_run(ctx, &so, &x, &r, &e) < 0 || r.status != PD_OK) {
			w->bad_status++;
			printf("#   %s: %s %s\n", tag, pd_status_name(r.status), e.msg);
		} else if (r.out.total != strlen(want) || r.out.head_len != strlen(want) ||
			   memcmp(r.out.head, want, strlen(want))) {
			w->bad_output++;
		} else if (strcmp(r.residue, "clean")) {
			w->bad_residue++;
		} else {
			w->good++;
		}
		pd_result_free(&r);
	}
	return NULL;
}

static void test_threads(void)
{
	worker w[2] = {{.id = 0}, {.id = 1}};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, work, &w[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	ok(w[0].bad_status + w[1].bad_status == 0, "2 threads x 20 pd_run: all OK");
	ok(w[0].bad_output + w[1].bad_output == 0, "each output is its own thread's and run's");
	ok(w[0].bad_residue + w[1].bad_residue == 0, "each residue clean");
	is_int(w[0].good + w[1].good, 40, "40 good runs");
}

static void test_fd_leak(void)
{
	int before = (int)pd_open_fds();
	int good = 0;
	for (int i = 0; i < 50; i++) {
		pd_sandbox_opts so = {.limits = pd_limits_default()};
		pd_exec_opts x = xo(ARGV("sh", "-c", "echo out; echo err >&2"));
		if (i % 2)
			x.stdin_data = "in", x.stdin_len = 2;
		pd_result r;
		pd_err e = {0};
		good += pd_run(ctx, &so, &x, &r, &e) == 0 && r.status == PD_OK;
		pd_result_free(&r);
	}
	is_int(good, 50, "50 pd_run");
	is_int((int)pd_open_fds(), before, "no fd leaked in the calling process across 50 pd_run");
}

/* init must not be what the OOM killer takes, nor something a program can tamper with */
static void test_init_guarded(void)
{
	pd_err e = {0};
	pd_sandbox *s = pd_sandbox_create(ctx, NULL, &e);
	if (!ok(s != NULL, "sandbox for init's guards (%s)", e.msg))
		return;
	char p[64], b[32] = "";
	snprintf(p, sizeof p, "/proc/%d/oom_score_adj", (int)pd_sandbox_pid(s));
	FILE *f = fopen(p, "r");
	if (f) {
		if (!fgets(b, sizeof b, f))
			b[0] = 0;
		fclose(f);
	}
	/* -1000 where the host holds CAP_SYS_RESOURCE, else 0; programs run at 1000 */
	ok(b[0] && atoi(b) <= 0, "init's oom_score_adj is %d, below every program's 1000", atoi(b));
	static char shp[] = "/bin/sh", c[] = "-c",
		    cmd[] = "prlimit --pid 1 --nofile=3:3 2>/dev/null && echo lowered; "
			    "kill -STOP 1 2>/dev/null && echo signalled; ls -d /proc/1 2>/dev/null; true";
	char *argv[] = {shp, c, cmd, NULL};
	pd_exec_opts x = {.argv = argv, .stdin_fd = -1};
	pd_result r;
	if (pd_sandbox_exec(s, &x, &r, &e) == 0) {
		ok(r.status == PD_OK && r.out.head_len == 0,
		   "a program (uid 0) can neither lower init's rlimits, nor signal it, nor see it (%.*s)",
		   (int)r.out.head_len, r.out.head ? r.out.head : "");
		pd_result_free(&r);
	} else {
		ok(0, "exec: %s", e.msg);
	}
	x.uid = PD_INIT_UID;
	ok(pd_sandbox_exec(s, &x, &r, &e) < 0 && e.code == EINVAL, "init's uid is refused for programs: %s",
	   e.msg);
	pd_sandbox_destroy(s, NULL, 0);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("1..0 # SKIP the runtime needs root\n");
		return 0;
	}
	plan(59);
	pd_err e = {0};
	ctx = pd_ctx_new(NULL, &e);
	ok(ctx != NULL, "pd_ctx_new (%s)", e.msg);
	if (!ctx)
		return done();
	const char *be = pd_ctx_cgroup_backend(ctx);
	ok(!strcmp(be, "v1") || !strcmp(be, "v2"), "cgroup backend %s", be);
	test_session();
	test_timed_out();
	test_errors();
	test_live_output();
	test_spill();
	test_sigpipe();
	test_init_guarded();
	/* warm up: the threads' uid slots stay held (and their lock fds open) by the context */
	test_threads();
	test_fd_leak();
	pd_ctx_free(ctx);
	return done();
}
