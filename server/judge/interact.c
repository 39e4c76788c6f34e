/* Interactive tests: the interactor and the candidate, each in its own sandbox, talk through two
 * host pipes. The library hands a sandbox a host descriptor as stdin (pd_exec_opts.stdin_fd) and
 * copies its stdout to a host descriptor (spill), so the host relays bytes but never reads them.
 *
 *   interactor stdout --spill--> pipe A --stdin_fd--> candidate
 *   candidate stdout --spill--> pipe B --stdin_fd--> interactor
 *
 * Each side runs in its own thread (pd_sandbox_exec blocks). When a side ends, its thread closes
 * the write end it fed and the read end it was given, so the other side sees end of file (or a
 * broken pipe) instead of waiting for its time limit. The interactor receives the test's input
 * and answer as files in its own sandbox; the candidate only ever sees what the interactor writes. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

typedef struct side {
	pd_pools *pools;
	const pd_jprog *prog;
	pd_jrun *x;
	pd_err *e;
	int rc;
	int close_after[2];
} side;

static void *run_side(void *arg)
{
	side *s = arg;
	s->rc = pd_jprog_run(s->pools, s->prog, s->x, s->e);
	for (int i = 0; i < 2; i++)
		if (s->close_after[i] >= 0)
			close(s->close_after[i]);
	return NULL;
}

int pd_jinteract(pd_pools *pools, const pd_jprog *cand, pd_jrun *cx, const pd_jprog *inter, pd_jrun *ix,
		 pd_convention conv, const pd_jtest *t, pd_err *ce, pd_err *ie)
{
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC) < 0)
		return pd_fail(ie, errno, "interactive pipes");
	if (pipe2(b, O_CLOEXEC) < 0) {
		int err = errno;
		close(a[0]);
		close(a[1]);
		return pd_fail(ie, err, "interactive pipes");
	}
	bool kattis = conv == PD_CONV_KATTIS;
	pd_jfile files[] = {{"/work/input", t->input, t->input_len}, {"/work/answer", t->answer, t->answer_len}};
	char *targs[] = {(char *)"input", (char *)"tout", (char *)"answer", NULL};
	char *kargs[] = {(char *)"input", (char *)"answer", (char *)"feedback/", NULL};
	ix->files = files;
	ix->nfiles = 2;
	ix->extra_args = kattis ? kargs : targs;
	ix->want_feedback = kattis;
	ix->stdin_data = NULL;
	ix->stdin_fd = b[0];
	ix->stdout_fd = a[1];
	cx->stdin_data = NULL;
	cx->stdin_fd = a[0];
	cx->stdout_fd = b[1];
	side sc = {pools, cand, cx, ce, -1, {a[0], b[1]}};
	side si = {pools, inter, ix, ie, -1, {b[0], a[1]}};
	pthread_t th;
	if (pthread_create(&th, NULL, run_side, &si) != 0) {
		close(a[0]);
		close(a[1]);
		close(b[0]);
		close(b[1]);
		return pd_fail(ie, EAGAIN, "interactor thread");
	}
	run_side(&sc);
	pthread_join(th, NULL);
	/* the candidate's output went to the interactor, not to a buffer: nothing to check after */
	return sc.rc < si.rc ? sc.rc : si.rc;
}
