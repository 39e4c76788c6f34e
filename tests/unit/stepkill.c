/* stepkill.c: the step kill (pd_exec_opts.step_kill) on the real runtime (root). A time or output
 * limit ends the exec's program and its session and leaves the sandbox READY, with what earlier
 * execs left running; and so when the program has already ended by the time the limit is acted
 * on: a program that writes past the output kill and exits at once (its output fits in the pipe)
 * is often gone, and reaped by init, before the host reads its output. That case once killed the
 * whole sandbox (no session of the program was left to kill), which under load ended about one
 * agent session in ten at its first OL. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ARGV(...) ((char *const *)(const char *const[]){__VA_ARGS__, NULL})
#define ROUNDS 60

static pd_ctx *ctx;

static pd_exec_opts step(char *const *argv)
{
	pd_exec_opts x = {.argv = argv, .stdin_fd = -1, .step_kill = true};
	return x;
}

/* runs argv; returns its status, or -1 when no result was produced */
static int run(pd_sandbox *s, pd_exec_opts *x, char *out, size_t len)
{
	pd_err e = {0};
	pd_result r;
	if (pd_sandbox_exec(s, x, &r, &e) < 0) {
		printf("#   exec refused: %s\n", e.msg);
		return -1;
	}
	if (out) {
		size_t n = r.out.head_len < len - 1 ? r.out.head_len : len - 1;
		memcpy(out, r.out.head ? r.out.head : "", n);
		out[n] = 0;
	}
	int st = (int)r.status;
	pd_result_free(&r);
	return st;
}

static void test_limits_keep_sandbox(pd_sandbox *s)
{
	char out[256];
	pd_exec_opts x = step(ARGV("sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!"));
	char bg[64];
	is_int(run(s, &x, bg, sizeof bg), PD_OK, "an earlier exec leaves a process running");
	bg[strcspn(bg, "\n")] = 0;

	x = step(ARGV("sh", "-c", "sleep 77 & sleep 78"));
	x.wall_ms = 300;
	is_int(run(s, &x, NULL, 0), PD_TO, "a step past its wall limit: TO");
	is_str(pd_state_name(pd_sandbox_state(s)), "READY", "the sandbox is READY after it");

	x = step(ARGV("sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x"));
	x.output_kill_bytes = 1 << 20;
	is_int(run(s, &x, NULL, 0), PD_OL, "a step past the output kill, still writing: OL");
	is_str(pd_state_name(pd_sandbox_state(s)), "READY", "the sandbox is READY after it");

	char probe[128];
	snprintf(probe, sizeof probe, "kill -0 %s && echo alive; ps -e -o args | grep -c '^sleep 7[78]' || true", bg);
	x = step(ARGV("sh", "-c", probe));
	run(s, &x, out, sizeof out);
	is_str(out, "alive\n0\n", "the earlier exec's process lives on; the timed-out step's are gone");
}

/* output that fits in the pipe: the program can end (and init reap it) before the host reads a
 * byte, so the limit is seen after its end; the verdict is OL and the sandbox stays READY */
static void test_ended_before_the_kill(pd_sandbox *s)
{
	int ol = 0, ready = 0;
	for (int i = 0; i < ROUNDS; i++) {
		pd_exec_opts x = step(ARGV("head", "-c", "3000", "/dev/zero"));
		x.output_kill_bytes = 1000;
		ol += run(s, &x, NULL, 0) == PD_OL;
		ready += pd_sandbox_state(s) == PD_READY;
		if (pd_sandbox_state(s) != PD_READY)
			break;
	}
	is_int(ol, ROUNDS, "3000 bytes at an output kill of 1000, then exit: OL every time");
	is_int(ready, ROUNDS, "and the sandbox READY after every one");
	char out[64];
	pd_exec_opts x = step(ARGV("echo", "still-here"));
	is_int(run(s, &x, out, sizeof out), PD_OK, "the sandbox runs the next exec");
}

static void *cancel_later(void *arg)
{
	usleep(300 * 1000);
	atomic_store((_Atomic bool *)arg, true);
	return NULL;
}

/* pd_exec_opts.cancel, set by another thread while the step runs (a client that left) */
static void test_cancel(pd_sandbox *s)
{
	_Atomic bool cancel = false;
	pd_exec_opts x = step(ARGV("sh", "-c", "sleep 91 & sleep 92"));
	x.wall_ms = 120000;
	x.cancel = &cancel;
	pthread_t t;
	pthread_create(&t, NULL, cancel_later, &cancel);
	pd_err e = {0};
	pd_result r;
	uint64_t t0 = pd_now_us();
	int rc = pd_sandbox_exec(s, &x, &r, &e);
	uint64_t took_ms = (pd_now_us() - t0) / 1000;
	pthread_join(t, NULL);
	ok(rc == 0 && r.cancelled && r.status == PD_SG && r.signal == SIGKILL,
	   "a step cancelled while it runs: killed, the result says cancelled (%s, after %llu ms of a 120 s limit)",
	   rc == 0 ? pd_status_name(r.status) : e.msg, (unsigned long long)took_ms);
	if (rc == 0)
		pd_result_free(&r);
	is_str(pd_state_name(pd_sandbox_state(s)), "READY", "the sandbox is READY after it");
	char out[64];
	pd_exec_opts y = step(ARGV("sh", "-c", "ps -e -o args | grep -c '^sleep 9[12]' || true"));
	run(s, &y, out, sizeof out);
	is_str(out, "0\n", "none of the cancelled step's processes is left");
	_Atomic bool never = false;
	pd_exec_opts z = step(ARGV("echo", "ok"));
	z.cancel = &never;
	is_int(run(s, &z, NULL, 0), PD_OK, "a cancel flag never set changes nothing");
}

int main(void)
{
	if (geteuid() != 0) {
		printf("1..0 # SKIP the runtime needs root\n");
		return 0;
	}
	plan(16);
	pd_err e = {0};
	ctx = pd_ctx_new(NULL, &e);
	ok(ctx != NULL, "pd_ctx_new (%s)", e.msg);
	if (!ctx)
		return done();
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	ok(s != NULL, "create a sandbox (%s)", e.msg);
	if (!s)
		return done();
	test_limits_keep_sandbox(s);
	test_ended_before_the_kill(s);
	test_cancel(s);
	char res[128] = "";
	ok(pd_sandbox_destroy(s, res, sizeof res) == 0 && !strcmp(res, "clean"), "destroyed, residue %s", res);
	pd_ctx_free(ctx);
	return done();
}
