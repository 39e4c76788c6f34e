/* One runsc process supervised as a container exec is: its stdin fed, its stdout and stderr
 * captured (head + tail, live passthrough, streamed data, spill), the wall, CPU, no-output and
 * output limits watched here, the cgroup's stats read around it, and its exit mapped onto the
 * verdicts. Both the one-shot run (runsc run) and an exec in a kept sandbox (runsc exec) are this. */
#define _GNU_SOURCE
#include "capture.h"
#include "gvisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int stdin_of(const pd_exec_opts *x)
{
	if (x->stdin_data) {
		int in = memfd_create("paddock-stdin", MFD_CLOEXEC);
		if (in >= 0 && (write(in, x->stdin_data, x->stdin_len) != (ssize_t)x->stdin_len ||
				lseek(in, 0, SEEK_SET) < 0)) {
			close(in);
			return -1;
		}
		return in;
	}
	if (x->stdin_from_fd)
		return fcntl(x->stdin_fd, F_DUPFD_CLOEXEC, 3);
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* runsc reports its own failures with exit 128 and a line naming what it was doing */
static bool runsc_own_failure(int code, const pd_output *err)
{
	if (code != 128 || !err->head)
		return false;
	return memmem(err->head, err->head_len, "running container:", 18) ||
	       memmem(err->head, err->head_len, "executing processes for container:", 35);
}

/* runsc (p->argv) started with x's stdin and two output pipes, whose read ends go to out; its pid,
 * or -1 with errno. */
static pid_t start_runsc(pd_ctx *c, const pd_gv_proc *p, const pd_exec_opts *x, int out[2])
{
	int in = stdin_of(x), outp[2] = {-1, -1}, errp[2] = {-1, -1};
	pid_t pid = -1, parent = -1;
	if (in >= 0 && pipe2(outp, O_CLOEXEC) == 0 && pipe2(errp, O_CLOEXEC) == 0) {
		c->cg.ops->reset_peaks(p->cg);
		parent = getpid();
		pid = fork();
	}
	if (pid == 0) {
		/* runsc dies with this thread (which waits for it below), and its sandbox and gofer with
		 * runsc ("attached"): a killed paddock leaves no sandbox running, as a container
		 * sandbox's init exits when its host is gone (tests/isolation/process.t); the next
		 * paddock sweeps the cgroups (pd_gvisor_sweep) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(in, 0), dup2(outp[1], 1), dup2(errp[1], 2);
		setpgid(0, 0);
		execv(p->argv[0], (char *const *)p->argv);
		_exit(127);
	}
	int saved = errno;
	if (in >= 0)
		close(in);
	if (outp[1] >= 0)
		close(outp[1]);
	if (errp[1] >= 0)
		close(errp[1]);
	if (pid < 0) {
		if (outp[0] >= 0)
			close(outp[0]);
		if (errp[0] >= 0)
			close(errp[0]);
		errno = saved;
		return -1;
	}
	out[0] = outp[0];
	out[1] = errp[0];
	return pid;
}

/* The run watched to its end: its output captured (and spilled, and given to the callbacks), and
 * the output, wall, no-output and CPU limits, whose first passed is acted on once (p->kill).
 * Returns which; *idle: the no-output one. */
static pd_gv_kill watch(pd_ctx *c, const pd_gv_proc *p, const pd_exec_opts *x, pd_result *r, struct pollfd pf[2],
			pd_capture cap[2], const pd_cg_stats *before, uint64_t t1, bool *idle)
{
	pd_cg_stats st = {0};
	pd_gv_kill killed = PD_GV_KILL_NONE;
	uint64_t deadline = p->wall_ms ? t1 + p->wall_ms * 1000 : 0, last_out = t1;
	char *buf = malloc(65536);
	while (buf && (pf[0].fd >= 0 || pf[1].fd >= 0)) {
		/* CPU time is polled: the cgroup has no limit for it */
		if (poll(pf, 2, 50) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(pf[i].fd, buf, 65536);
			if (n <= 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
				continue;
			}
			last_out = pd_now_us();
			size_t head = pd_capture_add(&cap[i], buf, (size_t)n);
			if (x->on_output && head)
				x->on_output(x->cb_arg, i + 1, buf, head);
			if (x->on_data)
				x->on_data(x->data_arg, i + 1, buf, (size_t)n);
			if (x->spill && x->spill_fd[i] >= 0 && !r->spill_lost[i] &&
			    (x->spill_max && cap[i].total > x->spill_max ? (r->spill_lost[i] = true, false)
									 : write(x->spill_fd[i], buf, (size_t)n) != n))
				r->spill_lost[i] = true;
		}
		if (killed)
			continue;
		uint64_t now = pd_now_us();
		if (p->kill_bytes && cap[0].total + cap[1].total > p->kill_bytes)
			killed = PD_GV_KILL_OUTPUT;
		else if (deadline && now >= deadline)
			killed = PD_GV_KILL_TIME;
		else if (x->idle_ms && now >= last_out + x->idle_ms * 1000)
			killed = PD_GV_KILL_TIME, *idle = true;
		else if (p->cpu_ms && c->cg.ops->stats(p->cg, &st) == 0 && (st.cpu_us - before->cpu_us) / 1000 >= p->cpu_ms)
			killed = PD_GV_KILL_TIME;
		if (killed)
			p->kill(p->kill_arg);
	}
	free(buf);
	return killed;
}

/* The verdict from runsc's exit status (the program's, or 128 + the signal that killed it; its
 * own failures, the program not found or a bad bundle, are 128 with a line saying what failed)
 * and the limit that killed it. */
static void verdict(const pd_exec_opts *x, pd_result *r, int code, bool own, pd_gv_kill killed, bool idle)
{
	if (killed == PD_GV_KILL_TIME)
		r->status = PD_TO, r->signal = SIGKILL, r->idle_timeout = idle;
	else if (killed == PD_GV_KILL_OUTPUT)
		r->status = PD_OL, r->signal = SIGKILL;
	else if (r->oom_killed)
		r->status = PD_ML, r->signal = SIGKILL;
	else if (own && memmem(r->err.head, r->err.head_len, "failed to load", 14)) {
		r->status = PD_RE, r->exit_code = 127;
		snprintf(r->error, sizeof r->error, "cannot execute %s", x->argv[0]);
	} else if (own || code < 0) {
		r->status = PD_XX;
		snprintf(r->error, sizeof r->error, "runsc failed (%s)", code < 0 ? "killed" : "exit 128");
	} else if (code > 128 && code < 128 + 65)
		r->status = PD_SG, r->signal = code - 128;
	else
		r->status = code ? PD_RE : PD_OK, r->exit_code = code;
}

int pd_gv_supervise(pd_ctx *c, const pd_gv_proc *p, const pd_exec_opts *x, pd_result *r, pd_err *e)
{
	int out[2];
	pid_t pid = start_runsc(c, p, x, out);
	if (pid < 0) {
		int saved = errno;
		snprintf(r->error, sizeof r->error, "start runsc: %s", strerror(saved));
		return pd_fail(e, saved, "start runsc");
	}
	pd_cg_stats before = {0}, st = {0};
	c->cg.ops->stats(p->cg, &before);
	uint64_t t1 = pd_now_us();
	if (x->on_data)
		x->on_data(x->data_arg, 0, NULL, 0);
	pd_capture cap[2];
	pd_capture_init(&cap[0], p->keep);
	pd_capture_init(&cap[1], p->keep);
	struct pollfd pf[2] = {{out[0], POLLIN, 0}, {out[1], POLLIN, 0}};
	bool idle = false;
	pd_gv_kill killed = watch(c, p, x, r, pf, cap, &before, t1, &idle);
	for (int i = 0; i < 2; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	uint64_t t2 = pd_now_us();
	r->exec_us = t2 - t1;
	r->wall_ms = (t2 - t1) / 1000;
	c->cg.ops->stats(p->cg, &st);
	c->cg.ops->rest(p->cg);
	r->cpu_ms = (st.cpu_us - before.cpu_us) / 1000;
	r->cpu_user_ms = (st.cpu_user_us - before.cpu_user_us) / 1000;
	r->cpu_sys_ms = (st.cpu_sys_us - before.cpu_sys_us) / 1000;
	r->memory_peak_bytes = st.mem_peak;
	r->pids_peak = (uint32_t)st.pids_peak;
	r->oom_killed = st.oom_kills > before.oom_kills;
	pd_capture_finish(&cap[0], &r->out);
	pd_capture_finish(&cap[1], &r->err);

	int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	bool own = runsc_own_failure(code, &r->err);
	p->result->code = code;
	p->result->runsc_failed = own;
	p->result->killed = killed;
	verdict(x, r, code, own, killed, idle);
	return 0;
}

int pd_gv_runsc_quiet(const char *root, const char *const *args)
{
	const char *argv[24] = {PD_RUNSC, "--root", root};
	int n = 3;
	for (int i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
		execv(PD_RUNSC, (char *const *)argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
