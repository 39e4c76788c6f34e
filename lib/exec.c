/* A program's run in a container sandbox (the container tier's exec: tier.c's pd_sandbox_exec
 * routes here): the request to init, the audit's setup and after-look, the program's stdin,
 * stdout and stderr, the time, CPU and output limits, and the cgroup's figures, into a pd_result;
 * the verdict from how it ended is execstatus.c's. */
#define _GNU_SOURCE
#include "audit.h"
#include "capture.h"
#include "sandbox.h"
#include "tamper.h"
#include "tier.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- exec ------------------------------------------------------------------------------------ */

/* Host pid of the sandbox process whose pid in the sandbox is nspid (a child of init). */
static pid_t host_pid_of(pid_t init, pid_t nspid)
{
	char p[96], buf[4096];
	snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)init, (int)init);
	if (pd_read_file(p, buf, sizeof buf) <= 0)
		return -1;
	for (char *q = buf; *q;) {
		long hp = strtol(q, &q, 10);
		if (hp <= 0)
			break;
		char st[2048];
		snprintf(p, sizeof p, "/proc/%ld/status", hp);
		if (pd_read_file(p, st, sizeof st) > 0) {
			char *ns = strstr(st, "NSpid:");
			if (ns) {
				char *eol = strchr(ns, '\n');
				if (eol)
					*eol = 0;
				char *last = strrchr(ns, '\t');
				if (last && atol(last + 1) == nspid)
					return (pid_t)hp;
			}
		}
		while (*q == ' ')
			q++;
	}
	return -1;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

typedef struct exec_run {
	pd_capture cap[2];
	int out[2];     /* read ends of stdout, stderr */
	int in_w;       /* write end of stdin (stdin_data), or -1 */
	size_t in_off;
	bool started, exited, killed_to, killed_ol, killed_idle, killed_cancel, init_died;
	uint64_t last_out_us; /* when the program last wrote (or started): the no-output timeout */
	int wstatus;
	/* step_kill: the session leaders among init's children when the exec began, and those
	 * it started (the program; a child that called setsid and was orphaned) */
	pd_proc_id before[32], mine[16];
	size_t nbefore, nmine;
	bool step_killing;   /* a limit hit under step_kill: its sessions are being killed */
	uint64_t step_until; /* when a step kill gives up and kills the sandbox */
	pd_auditor aud;
	bool aud_on;
	pd_tamper_base upper0; /* the writable layers before the exec (tamper.c) */
	const pd_audit_opts *ao; /* the exec's audit (pd_exec_opts.audit, else the sandbox's) */
	bool upper_clean;        /* the uppers were untouched when it started (upperwatch.c) */
	/* protected trees no writable layer holds, walked before and after (tampertree.c) */
	char trees[PD_TAMPER_TREES][PD_PATH];
	int ntrees, tree_fd; /* tree_fd: the sandbox's root, -1 when it could not be opened */
	pd_tamper_base tree0;
	bool spill_failed[2];
	uint64_t spilled[2];
	uint64_t kill_at; /* the output kill: bytes of both streams; 0 = none */
	uint64_t deadline;   /* the wall limit's (UINT64_MAX once it was acted on, or none) */
	uint64_t next_check; /* the next look at the CPU (and at a step kill under way) */
	uint64_t cpu0_us;    /* the cgroup's CPU time when the exec began */
	/* pd_exec_opts.concurrent: init's messages about this exec come on sock, its own socket
	 * (else sock is the sandbox's); its slot in the sandbox's exec_pids */
	bool conc;
	int sock, slot;
} exec_run;

/* an exec's state changes are atomic: a session's info (pd_sandbox_state) is read on another
 * thread while the exec runs (make tsan, stream.t) */
static void set_state(pd_sandbox *s, pd_state st)
{
	__atomic_store_n(&s->state, st, __ATOMIC_RELAXED);
}

/* ---- execs at once (pd_exec_opts.concurrent) ---------------------------------------------------- */

/* Several execs of one sandbox may run at once (pd_exec_opts.concurrent: a session's agents).
 * What they share on the sandbox (how many run, their programs' pids, the cgroup's files that
 * stats keeps open, the state) changes under this lock, one for every sandbox: held for the
 * short start and end of such an exec and a CPU sample, never while it waits for its program.
 * Execs without concurrent never take it (they run alone: the state must be READY). */
static pthread_mutex_t conc_mu = PTHREAD_MUTEX_INITIALIZER;

static bool conc_audited(const pd_sandbox *s, const pd_exec_opts *o)
{
	const pd_audit_opts *ao = o->audit ? o->audit : s->opts.audit;
	return ao && ao->enabled && !ao->faults_only;
}

/* A concurrent exec's start: 0 with conc_mu held and a slot taken, or -1 (EBUSY when the
 * sandbox runs execs this one may not join: an audited one runs alone, its evidence being the
 * whole sandbox's). */
static int conc_enter(pd_sandbox *s, const pd_exec_opts *o, exec_run *x, pd_err *e)
{
	pthread_mutex_lock(&conc_mu);
	pd_state st = __atomic_load_n(&s->state, __ATOMIC_RELAXED);
	bool running = st == PD_RUNNING && s->execs;
	int slot = -1;
	for (int i = 0; i < PD_SB_EXECS && slot < 0; i++)
		if (!s->exec_pids[i])
			slot = i;
	const char *why = !running && st != PD_READY ? "not READY"
			  : running && (s->exec_alone || conc_audited(s, o)) ? "running an audited exec, which runs alone"
			  : slot < 0 ? "running as many execs at once as it may"
				     : NULL;
	if (why) {
		pthread_mutex_unlock(&conc_mu);
		return pd_fail(e, running ? EBUSY : EINVAL, "sandbox %s is %s (%s)", s->id, pd_state_name(st), why);
	}
	s->execs++;
	s->exec_pids[slot] = -1; /* taken; its program's pid once init reports it */
	s->exec_alone = conc_audited(s, o);
	set_state(s, PD_RUNNING);
	x->conc = true;
	x->slot = slot;
	return 0;
}

/* Its end (conc_mu held): the slot freed; the state the last one leaves, unless an exec's kill
 * ended the sandbox (then that stays). */
static void conc_leave(pd_sandbox *s, exec_run *x, pd_state mine)
{
	s->exec_pids[x->slot] = 0;
	s->execs--;
	s->exec_alone = false;
	if (s->state == PD_TIMED_OUT || s->state == PD_FAILED)
		return; /* an exec's kill ended it */
	set_state(s, mine != PD_READY ? mine : s->execs ? PD_RUNNING : PD_READY);
}

/* A concurrent exec that failed before its request went (conc_mu held): its socket closed, its
 * slot given back, the lock let go. */
static void conc_abort(pd_sandbox *s, exec_run *x, int rs[2])
{
	if (!x->conc)
		return;
	for (int i = 0; i < 2; i++)
		if (rs[i] >= 0)
			close(rs[i]);
	conc_leave(s, x, PD_READY);
	pthread_mutex_unlock(&conc_mu);
}

/* Its request sent: init's end of its socket closed here, ours kept for init's reports (closed by
 * collect), and the lock let go for the run. */
static void conc_sent(exec_run *x, int rs[2])
{
	if (!x->conc)
		return;
	close(rs[1]);
	x->sock = rs[0];
	rs[0] = rs[1] = -1;
	pthread_mutex_unlock(&conc_mu);
}

/* Its end after the run: the cgroup's files close with the last one out. */
static void conc_finish(pd_sandbox *s, exec_run *x, pd_state end)
{
	pthread_mutex_lock(&conc_mu);
	if (s->execs == 1 && !pd_sb_keep_fds(s))
		s->ctx->cg.ops->rest(s->cg);
	conc_leave(s, x, end);
	pthread_mutex_unlock(&conc_mu);
}

/* The cgroup's CPU now, or all its figures (stats, when after is given): a concurrent exec reads
 * them under conc_mu, another may be reading the same files. */
static uint64_t cg_read(pd_sandbox *s, const exec_run *x, pd_cg_stats *after)
{
	uint64_t cpu = 0;
	if (x->conc)
		pthread_mutex_lock(&conc_mu);
	if (after)
		s->ctx->cg.ops->stats(s->cg, after);
	else
		cpu = s->ctx->cg.ops->sample(s->cg);
	if (x->conc)
		pthread_mutex_unlock(&conc_mu);
	return cpu;
}

/* ---- one exec -------------------------------------------------------------------------------- */

/* The sessions this exec started: init's session-leading children that were not there when it
 * began (same pid and start time). */
static void find_mine(pd_sandbox *s, exec_run *x)
{
	pd_proc_id now[48];
	size_t n = pd_init_leaders(s->pid, now, 48);
	if (x->conc)
		pthread_mutex_lock(&conc_mu);
	for (size_t i = 0; i < n; i++) {
		bool old = false, known = false;
		/* another exec's program, running beside this one */
		for (int j = 0; x->conc && j < PD_SB_EXECS && !old; j++)
			old = j != x->slot && s->exec_pids[j] == now[i].pid;
		for (size_t j = 0; j < x->nbefore && !old; j++)
			old = x->before[j].pid == now[i].pid && x->before[j].start == now[i].start;
		for (size_t j = 0; j < x->nmine && !known; j++)
			known = x->mine[j].pid == now[i].pid && x->mine[j].start == now[i].start;
		if (!old && !known && x->nmine < sizeof x->mine / sizeof x->mine[0])
			x->mine[x->nmine++] = now[i];
	}
	if (x->conc)
		pthread_mutex_unlock(&conc_mu);
}

/* SIGKILL to every process of the exec's sessions; how many were alive, -1 on an error */
static int kill_mine(exec_run *x)
{
	int alive = 0;
	for (size_t i = 0; i < x->nmine; i++) {
		int k = pd_kill_session(x->mine[i].pid);
		if (k < 0)
			return -1;
		alive += k;
	}
	return alive;
}

/* write() that cannot end the embedding process with SIGPIPE: the program may stop reading its
 * stdin at any moment, and a spill fd may be a pipe */
static ssize_t write_nosig(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	ssize_t n = write(fd, buf, len);
	int err = errno;
	if (n < 0 && err == EPIPE && !was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return n;
}

static void drain(exec_run *x, int i, const pd_exec_opts *o)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(x->out[i], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(x->out[i]);
				x->out[i] = -1;
			}
			return;
		}
		x->last_out_us = pd_now_us();
		if (o->on_data)
			o->on_data(o->data_arg, i + 1, buf, (size_t)n);
		size_t live = pd_capture_add(&x->cap[i], buf, (size_t)n);
		if (o->on_output && live)
			o->on_output(o->cb_arg, i + 1, buf, live);
		if (o->spill && o->spill_fd[i] >= 0 && !x->spill_failed[i] && o->spill_max &&
		    x->spilled[i] + (uint64_t)n > o->spill_max)
			x->spill_failed[i] = true; /* a spill that cannot be whole is not written on */
		if (o->spill && o->spill_fd[i] >= 0 && !x->spill_failed[i]) {
			x->spilled[i] += (uint64_t)n;
			/* a full spill file must not stop the run: keep the capture, note the loss */
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write_nosig(o->spill_fd[i], buf + off, (size_t)(n - off));
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0) {
					x->spill_failed[i] = true;
					break;
				}
				off += w;
			}
		}
		/* past the output kill, the limit is acted on before more is read (one read a call,
		 * so a full pipe never spins the loop): a writer as fast as this reader would
		 * otherwise be read to its end and be gone before it could be killed */
		if (x->kill_at && x->cap[0].total + x->cap[1].total > x->kill_at)
			return;
	}
}

static void on_init_msg(pd_sandbox *s, exec_run *x, pd_result *r)
{
	union {
		struct msg_hdr h;
		struct msg_error err;
		struct msg_started st;
		struct msg_exited ex;
	} m;
	ssize_t n = pd_recv_fds(x->sock, &m, sizeof m, NULL, NULL, 0);
	if (n <= 0) {
		x->init_died = true;
		return;
	}
	switch (m.h.type) {
	case MSG_STARTED:
		x->started = true;
		if (x->conc && m.st.listener_fd < 0) {
			/* its program's pid, on its own socket: the others' step kills spare it */
			pid_t hp = host_pid_of(s->pid, m.st.pid);
			pthread_mutex_lock(&conc_mu);
			s->exec_pids[x->slot] = hp > 0 ? hp : -1;
			pthread_mutex_unlock(&conc_mu);
		}
		if (m.st.listener_fd >= 0 && x->ao && !x->aud_on) {
			pid_t hp = host_pid_of(s->pid, m.st.pid);
			int pfd = hp > 0 ? (int)syscall(SYS_pidfd_open, hp, 0) : -1;
			/* the program's process already gone: it ended before any call the audit stops
			 * (a program found on no PATH directory is refused without an execve), so nothing
			 * ran unaudited, and its exec failure is on its way */
			bool gone = hp <= 0 || (pfd < 0 && errno == ESRCH);
			int l = pfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pfd, m.st.listener_fd, 0) : -1;
			if (l < 0 && pfd >= 0) {
				/* readable once the process has exited; an exiting one drops its files
				 * before that, so its getfd fails a moment before its pidfd tells why:
				 * wait for that moment (a live process always has its listener) */
				struct pollfd pp = {pfd, POLLIN, 0};
				gone = poll(&pp, 1, 2000) == 1;
			}
			if (pfd >= 0)
				close(pfd);
			if (l < 0 && gone)
				break;
			if (l >= 0 && pd_auditor_init(&x->aud, l, x->ao, pd_now_us(), NULL) == 0) {
				x->aud_on = true;
				x->aud.net = (int)s->opts.net;
				pd_auditor_share(&x->aud, s->names, !x->ao->faults_only);
				/* a listener for injected faults alone records nothing */
				r->audited = !x->ao->faults_only;
			} else {
				if (l >= 0)
					close(l);
				/* unaudited is not acceptable when an audit was asked for */
				snprintf(r->error, sizeof r->error, "could not take the audit listener");
				pd_sb_kill_init(s);
			}
		}
		break;
	case MSG_EXEC_FAILED:
		m.err.what[sizeof m.err.what - 1] = 0;
		snprintf(r->error, sizeof r->error, "%s: %s", m.err.what, strerror(m.err.err));
		break;
	case MSG_EXITED:
		x->exited = true;
		x->wstatus = m.ex.wstatus;
		break;
	default:
		break;
	}
}

/* What a build makes in the root's upper: the mount points it needs (proc, dev, sys, tmp, work
 * where the image lacks them) and the binds' destinations with their parents. */
static void upper_made(const pd_sandbox *s, pd_tamper_base *b)
{
	static const char *const points[] = {"/proc", "/dev", "/sys", "/tmp", "/work"};
	for (size_t i = 0; i < sizeof points / sizeof points[0]; i++)
		pd_tamper_base_made(b, points[i]);
	for (size_t i = 0; i < s->opts.nbinds; i++)
		if (s->opts.binds[i].dst)
			pd_tamper_base_made(b, s->opts.binds[i].dst);
}

/* The audit's evidence from after the run: what the writable layers show changed, and processes
 * the program left running (they could change files once the audit has stopped). */
static void audit_after(pd_sandbox *s, exec_run *x, const pd_cg_stats *after, pd_result *r, uint64_t t_us)
{
	/* a scan asked for and not made leaves the run unaudited: its changes are unknown; uppers
	 * still untouched (their watches saw nothing) have no change to find */
	if (!x->ao->no_upper_scan &&
	    !(x->upper_clean && pd_uwatch_clean(s->ctx->uwatch, &s->upper_dirty)) &&
	    (s->upper_fd < 0 || pd_tamper_scan(s->upper_fd, s->pid, x->ao, &x->upper0, r, t_us) < 0))
		r->audited = false;
	pd_tamper_base_free(&x->upper0);
	if (x->ntrees && x->tree_fd < 0)
		r->audited = false;
	else if (x->ntrees && pd_tamper_tree_scan(x->tree_fd, x->trees, x->ntrees, x->ao, &x->tree0, r, t_us))
		r->audited = false; /* a protected tree too big or deep to walk whole */
	/* a change the syscall audit missed, or a run not audited after all: the kept resolutions go */
	if (!r->audited || r->audit_kinds[PD_AK_TAMPER])
		pd_audit_names_off(s->names);
	if (!x->exited || after->pids_current <= 1)
		return;
	pd_audit_names_off(s->names);
	/* those an earlier exec left are not this program's doing (the verdict says they ran
	 * outside the audit); more than they were is (a count: one of them ending while the program
	 * leaves one behind goes unseen here, but such an exec cannot pass anyway) */
	if (after->pids_current <= 1 + r->audit_outside)
		return;
	char what[64];
	snprintf(what, sizeof what, "%" PRIu64 " tasks outlived the program", after->pids_current - 1 - r->audit_outside);
	pd_audit_record(r, x->ao, PD_AK_TAMPER, "outlive", "-", what, false, 0, t_us);
}

static uint64_t delta(uint64_t after, uint64_t before)
{
	return after > before ? after - before : 0;
}

/* A limit was hit: with step_kill the exec's sessions are killed (looked for again while none
 * is found) and the loop waits for init's report of the program's end (true: go on polling);
 * else, or past the teardown timeout, the sandbox is killed (false: stop). */
static bool limit_kill(pd_sandbox *s, exec_run *x, const pd_exec_opts *o)
{
	if (o->step_kill)
		find_mine(s, x);
	/* No session of the exec's found is no reason to kill the sandbox: the program may have
	 * ended (and been reaped by init, its exit report on its way: a program whose output fits
	 * in the pipe writes past the output kill and exits before the host reads a byte), or not
	 * yet have become a session leader (a time limit reached while a loaded host starts it).
	 * Either way init reports its end; until then it is looked for again, up to the deadline. */
	if (o->step_kill) {
		if (!x->step_killing) {
			uint64_t td = s->opts.teardown_timeout_ms ? s->opts.teardown_timeout_ms : 10000;
			x->step_killing = true;
			x->step_until = pd_now_us() + td * 1000;
		}
		if ((x->nmine == 0 || kill_mine(x) >= 0) && pd_now_us() < x->step_until)
			return true;
	}
	x->step_killing = false;
	pd_sb_kill_init(s);
	return false;
}

/* After the program of a step kill ended: what is left of its sessions goes too, or the sandbox
 * does. Returns whether the sandbox may stay READY. */
static bool step_kill_finish(pd_sandbox *s, exec_run *x, pd_result *r)
{
	int left;
	while ((left = kill_mine(x)) > 0 && pd_now_us() < x->step_until) {
		struct timespec ts = {0, 2000000}; /* SIGKILLed processes end within a few ms */
		nanosleep(&ts, NULL);
	}
	if (left == 0)
		return true;
	snprintf(r->error, sizeof r->error,
		 "the step's processes outlived SIGKILL past the teardown timeout: the sandbox was killed");
	pd_sb_kill_init(s);
	return false;
}

/* The audit's setup before the exec: its options (the exec's, else the sandbox's), and the
 * baselines its after-look compares with (the writable layers, the protected trees). */
static void audit_before(pd_sandbox *s, const pd_exec_opts *o, exec_run *x)
{
	x->ao = o->audit ? o->audit : s->opts.audit;
	if (x->ao && !x->ao->enabled)
		x->ao = NULL;
	/* a program the audit does not watch in full can change names unseen (audit.h) */
	if (!x->ao || x->ao->faults_only)
		pd_audit_names_off(s->names);
	bool scan_upper = x->ao && !x->ao->faults_only && !x->ao->no_upper_scan && s->upper_fd >= 0;
	/* Uppers nothing touched since they were built hold only what the build made: not walked
	 * now (a walk is an event to their watches, and the next reset could not keep them) */
	x->upper_clean = scan_upper && pd_uwatch_clean(s->ctx->uwatch, &s->upper_dirty);
	if (x->upper_clean)
		upper_made(s, &x->upper0);
	else if (scan_upper)
		pd_tamper_snapshot(s->upper_fd, s->pid, &x->upper0);
	x->ntrees = x->ao && !x->ao->faults_only
			    ? pd_tamper_tree_roots(x->ao, s->opts.binds, s->opts.nbinds, x->trees, PD_TAMPER_TREES)
			    : 0;
	if (x->ntrees) {
		char root[64];
		snprintf(root, sizeof root, "/proc/%d/root", (int)s->pid);
		x->tree_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (x->tree_fd >= 0)
			pd_tamper_tree_snapshot(x->tree_fd, x->trees, x->ntrees, &x->tree0);
	}
}

/* The audit listener had something: a call to answer, or its end (the program's calls go on
 * unseen then, if any of it is left). */
static void on_audit(pd_sandbox *s, exec_run *x, pd_result *r, short revents)
{
	if (!(revents & (POLLHUP | POLLERR)) && pd_auditor_handle(&x->aud, r) == 0)
		return;
	if (!(revents & POLLHUP))
		pd_audit_names_off(s->names);
	pd_auditor_close(&x->aud);
	x->aud_on = false;
}

static void feed_stdin(exec_run *x, const pd_exec_opts *o, short revents)
{
	ssize_t n = revents & POLLOUT ? write_nosig(x->in_w, o->stdin_data + x->in_off, o->stdin_len - x->in_off) : -1;
	if (n > 0)
		x->in_off += (size_t)n;
	if (n < 0 || x->in_off >= o->stdin_len) {
		close(x->in_w);
		x->in_w = -1;
	}
}

/* The limits' look after each wake: a step kill under way, the cancel, the output kill, the wall
 * and no-output deadlines, and (every 20 ms) the CPU. false: the sandbox was killed, stop. */
static bool check_limits(pd_sandbox *s, exec_run *x, const pd_exec_opts *o, uint64_t cpu_ms)
{
	uint64_t now = pd_now_us();
	if (x->step_killing) {
		/* the sessions are being killed: again (they may have forked meanwhile), until init
		 * reports the program's end */
		if (now < x->next_check)
			return true;
		x->next_check = now + 20000;
		return limit_kill(s, x, o);
	}
	if (o->cancel && *o->cancel && !x->killed_cancel) {
		x->killed_cancel = true;
		return limit_kill(s, x, o);
	}
	if (x->kill_at && x->cap[0].total + x->cap[1].total > x->kill_at) {
		x->killed_ol = true;
		return limit_kill(s, x, o);
	}
	bool idle = o->idle_ms && !x->killed_to && now >= x->last_out_us + o->idle_ms * 1000;
	if (now >= x->deadline || idle) {
		x->killed_idle = idle && now < x->deadline;
		x->killed_to = true;
		x->deadline = UINT64_MAX;
		return limit_kill(s, x, o);
	}
	if (now >= x->next_check) {
		x->next_check = now + 20000;
		/* the CPU limit's look, and a sample of the tasks for the peak: not every figure
		 * stats reads (its six files cost every request a fifth of the daemon's exec
		 * work on a machine slow enough to stretch a program's wall time) */
		uint64_t cpu_now = cg_read(s, x, NULL);
		if (cpu_ms && delta(cpu_now, x->cpu0_us) > cpu_ms * 1000) {
			x->killed_to = true;
			return limit_kill(s, x, o);
		}
	}
	return true;
}

/* The program's run, watched: its output, stdin, init's reports and the audit's calls, until
 * init reports its end, init dies, or a limit's kill ends the sandbox. */
static void watch(pd_sandbox *s, exec_run *x, const pd_exec_opts *o, pd_result *r, uint64_t cpu_ms)
{
	while (!x->exited && !x->init_died) {
		/* the no-output deadline moves with every byte the program writes */
		uint64_t idle_at = o->idle_ms && !x->killed_to ? x->last_out_us + o->idle_ms * 1000 : UINT64_MAX;
		struct pollfd pf[5];
		int np = 0, i_sock, i_out[2] = {-1, -1}, i_in = -1, i_aud = -1;
		pf[i_sock = np++] = (struct pollfd){x->sock, POLLIN, 0};
		for (int i = 0; i < 2; i++)
			if (x->out[i] >= 0)
				pf[i_out[i] = np++] = (struct pollfd){x->out[i], POLLIN, 0};
		if (x->in_w >= 0)
			pf[i_in = np++] = (struct pollfd){x->in_w, POLLOUT, 0};
		if (x->aud_on)
			pf[i_aud = np++] = (struct pollfd){x->aud.listener, POLLIN, 0};
		uint64_t now = pd_now_us();
		uint64_t until = x->next_check < x->deadline ? x->next_check : x->deadline;
		if (idle_at < until)
			until = idle_at;
		int timeout = until > now ? (int)((until - now + 999) / 1000) : 0;
		int pr = poll(pf, (nfds_t)np, timeout);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr > 0) {
			if (i_aud >= 0 && pf[i_aud].revents)
				on_audit(s, x, r, pf[i_aud].revents);
			for (int i = 0; i < 2; i++)
				if (i_out[i] >= 0 && pf[i_out[i]].revents)
					drain(x, i, o);
			if (i_in >= 0 && pf[i_in].revents)
				feed_stdin(x, o, pf[i_in].revents);
			if (pf[i_sock].revents)
				on_init_msg(s, x, r);
		}
		if (!check_limits(s, x, o, cpu_ms))
			break;
	}
}

/* After the program: the rest of its output (what it wrote before it ended is in the pipes; no
 * wait for writers it left behind), the audit's after-look, the cgroup's figures into r. */
static void collect(pd_sandbox *s, exec_run *x, const pd_exec_opts *o, pd_result *r, const pd_cg_stats *before,
		    pd_cg_stats *after, uint64_t t0, uint64_t t1)
{
	for (int i = 0; i < 2; i++)
		if (x->out[i] >= 0) {
			drain(x, i, o);
			if (x->out[i] >= 0)
				close(x->out[i]);
		}
	if (x->in_w >= 0)
		close(x->in_w);
	if (x->aud_on)
		pd_auditor_close(&x->aud);
	/* the relay's connections (a program's, or one an earlier step left running) */
	pd_sb_relay_collect(s, r, x->ao, t0);
	cg_read(s, x, after);
	if (r->audited)
		audit_after(s, x, after, r, t1 - t0);
	pd_tamper_base_free(&x->upper0);
	pd_tamper_base_free(&x->tree0);
	if (x->tree_fd >= 0)
		close(x->tree_fd);
	if (x->conc)
		close(x->sock); /* the cgroup's files: the last one's (conc_finish) */
	else if (!pd_sb_keep_fds(s))
		s->ctx->cg.ops->rest(s->cg);
	else if (s->netns && s->net_fds[0] == -1)
		pd_netns_views_open(s->pid, s->net_fds); /* for the resets (an exec's table may grow) */

	r->wall_ms = (t1 - t0) / 1000;
	r->exec_us = t1 - t0;
	r->cpu_ms = delta(after->cpu_us, before->cpu_us) / 1000;
	r->cpu_counter_us[0] = before->cpu_us;
	r->cpu_counter_us[1] = after->cpu_us;
	r->cpu_user_ms = delta(after->cpu_user_us, before->cpu_user_us) / 1000;
	r->cpu_sys_ms = delta(after->cpu_sys_us, before->cpu_sys_us) / 1000;
	r->memory_peak_bytes = after->mem_peak;
	r->pids_peak = (uint32_t)(after->pids_peak > after->pids_current ? after->pids_peak : after->pids_current);
	r->oom_killed = after->oom_kills > before->oom_kills;
	pd_capture_finish(&x->cap[0], &r->out);
	pd_capture_finish(&x->cap[1], &r->err);
	r->spill_lost[0] = o->spill && x->spill_failed[0];
	r->spill_lost[1] = o->spill && x->spill_failed[1];
	/* the live callback saw the heads; a tail that joins its head (nothing dropped) is the rest */
	if (o->on_output && r->out.tail_len && !r->out.truncated)
		o->on_output(o->cb_arg, 1, r->out.tail, r->out.tail_len);
	if (o->on_output && r->err.tail_len && !r->err.truncated)
		o->on_output(o->cb_arg, 2, r->err.tail, r->err.tail_len);
}

/* The exec's pipes: the output's two, stdin's when the caller gives its bytes. */
static int open_pipes(exec_run *x, const pd_exec_opts *o, const pd_sandbox *s, int pout[2], int perr[2], int pin[2],
		      pd_err *e)
{
	uint64_t keep = s->lim.output_bytes ? s->lim.output_bytes : (1ull << 20);
	if (pd_capture_init(&x->cap[0], keep) < 0 || pd_capture_init(&x->cap[1], keep) < 0 ||
	    pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0 ||
	    (o->stdin_data && pipe2(pin, O_CLOEXEC) < 0))
		return pd_fail(e, errno, "exec pipes");
	return 0;
}

/* What goes with the exec request: stdin's read end (or the caller's descriptor), the output's
 * write ends, a concurrent exec's own socket (rep; -1 for none), the IPC namespace's mqueue root;
 * the request says which. */
static int request_fds(pd_sandbox *s, const pd_exec_opts *o, struct msg_exec *m, const int pout[2],
		       const int perr[2], const int pin[2], int rep, int fds[5])
{
	int nfds = 0;
	int stdin_fd = o->stdin_data ? pin[0] : o->stdin_from_fd ? o->stdin_fd : -1;
	if (stdin_fd >= 0) {
		fds[nfds++] = stdin_fd;
		m->has_stdin = 1;
	}
	fds[nfds++] = pout[1];
	fds[nfds++] = perr[1];
	if (rep >= 0) {
		fds[nfds++] = rep;
		m->has_report = 1;
	}
	/* made at creation and by each reset (a new IPC namespace); here only if that failed:
	 * without it the program's POSIX message queues are refused (EACCES), nothing else */
	if (s->mq_fd < 0 || s->mq_stale)
		pd_sb_mq_refresh(s, true);
	if (s->mq_fd >= 0) {
		fds[nfds++] = s->mq_fd;
		m->has_mq = 1;
	}
	m->no_landlock = o->no_landlock;
	return nfds;
}

/* Once init has the request: the sandbox's ends closed here, ours kept, non-blocking. */
static void take_pipes(exec_run *x, const int pout[2], const int perr[2], const int pin[2])
{
	close(pout[1]);
	close(perr[1]);
	if (pin[0] >= 0)
		close(pin[0]);
	x->out[0] = pout[0];
	x->out[1] = perr[0];
	x->in_w = pin[1];
	set_nonblock(x->out[0]);
	set_nonblock(x->out[1]);
	if (x->in_w >= 0)
		set_nonblock(x->in_w);
}

/* The exec's request made (and a concurrent exec's socket with init), its run record set up:
 * 0, or -1 with what a concurrent exec took given back. */
static int prepare(pd_sandbox *s, const pd_exec_opts *o, exec_run *x, char **msg, size_t *len, int rs[2], pd_err *e)
{
	if (pd_scratch_end_setup(s, e) < 0 || pd_ct_exec_msg(s, o, msg, len, e) < 0 ||
	    (x->conc && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rs) < 0 &&
	     pd_fail(e, errno, "exec socket") < 0)) {
		conc_abort(s, x, rs);
		free(*msg);
		*msg = NULL;
		return -1;
	}
	if (o->step_kill)
		x->nbefore = pd_init_leaders(s->pid, x->before, sizeof x->before / sizeof x->before[0]);
	x->out[0] = x->out[1] = x->in_w = -1;
	x->aud.listener = -1;
	x->tree_fd = -1;
	x->kill_at = o->output_kill_bytes ? o->output_kill_bytes : s->lim.output_kill_bytes;
	return 0;
}

/* s READY, or o->concurrent (conc_enter looks: other execs may be running) */
int pd_ct_exec(pd_sandbox *s, const pd_exec_opts *o, pd_result *r, pd_err *e)
{
	exec_run x;
	memset(&x, 0, sizeof x);
	x.sock = s->sock;
	/* a concurrent exec holds conc_mu from here to its request's send */
	if (o->concurrent && conc_enter(s, o, &x, e) < 0)
		return -1;
	r->landlock = o->no_landlock ? 0 : s->ctx->landlock_abi;
	char *msg = NULL;
	size_t msglen = 0;
	int rs[2] = {-1, -1}; /* a concurrent exec's own socket with init */
	if (prepare(s, o, &x, &msg, &msglen, rs, e) < 0)
		return -1;
	int pout[2] = {-1, -1}, perr[2] = {-1, -1}, pin[2] = {-1, -1};
	if (open_pipes(&x, o, s, pout, perr, pin, e) < 0)
		goto fail_early;
	int fds[5];
	int nfds = request_fds(s, o, (struct msg_exec *)msg, pout, perr, pin, rs[1], fds);
	audit_before(s, o, &x);
	pd_cg_stats before, after;
	/* beside other execs, the peaks stay the first one's: the cgroup is theirs together */
	if (!x.conc || s->execs == 1)
		s->ctx->cg.ops->reset_peaks(s->cg);
	s->ctx->cg.ops->stats(s->cg, &before);
	/* init is the one task a fresh exec finds; any other is an earlier exec's (a session's
	 * background job), outside this exec's filter: the evidence cannot be whole (auditverdict.c) */
	if (x.ao && !x.ao->faults_only && before.pids_current > 1)
		r->audit_outside = before.pids_current - 1;
	uint64_t t0 = pd_now_us();
	set_state(s, PD_RUNNING);
	if (pd_send_fds(s->sock, msg, msglen, fds, nfds) < 0) {
		pd_fail(e, errno, "send exec request to sandbox %s", s->id);
		if (!x.conc)
			set_state(s, PD_READY); /* concurrent: conc_abort's */
		goto fail_early;
	}
	free(msg);
	msg = NULL;
	conc_sent(&x, rs);
	if (o->on_data)
		o->on_data(o->data_arg, 0, NULL, 0);
	take_pipes(&x, pout, perr, pin);

	uint64_t wall_ms = o->wall_ms ? o->wall_ms : s->lim.wall_ms;
	x.deadline = wall_ms ? t0 + wall_ms * 1000 : UINT64_MAX;
	x.next_check = t0 + 20000;
	x.last_out_us = t0;
	x.cpu0_us = before.cpu_us;
	watch(s, &x, o, r, o->cpu_ms ? o->cpu_ms : s->lim.cpu_ms);
	uint64_t t1 = pd_now_us();
	bool step_killed = x.step_killing && x.exited && !x.init_died && step_kill_finish(s, &x, r);
	if (!x.conc)
		set_state(s, PD_COLLECTING); /* concurrent: RUNNING while any runs (conc_leave) */
	collect(s, &x, o, r, &before, &after, t0, t1);

	pd_exec_end end = {.exited = x.exited,
			   .wstatus = x.wstatus,
			   .init_died = x.init_died,
			   .killed_to = x.killed_to,
			   .killed_idle = x.killed_idle,
			   .killed_ol = x.killed_ol,
			   .killed_cancel = x.killed_cancel,
			   .mem_pressed = after.mem_limit_hits > before.mem_limit_hits,
			   .mem_limited = s->lim.memory_bytes != 0,
			   .fast_path = o->data_headroom_bytes != 0};
	bool killed_by_us = pd_exec_classify(&end, r);
	/* a limit kill ends the sandbox (unless only the step's sessions were killed); so does an
	 * init that died under us */
	pd_state st = step_killed && !x.init_died ? PD_READY
		      : killed_by_us || x.init_died ? (killed_by_us ? PD_TIMED_OUT : PD_FAILED)
						    : PD_READY;
	if (x.conc)
		conc_finish(s, &x, st);
	else
		set_state(s, st);
	return 0;
fail_early:
	pd_tamper_base_free(&x.upper0);
	pd_tamper_base_free(&x.tree0);
	if (x.tree_fd >= 0)
		close(x.tree_fd);
	free(msg);
	for (int i = 0; i < 2; i++) {
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
		if (pin[i] >= 0)
			close(pin[i]);
	}
	pd_capture_free(&x.cap[0]);
	pd_capture_free(&x.cap[1]);
	conc_abort(s, &x, rs);
	return -1;
}

int pd_sandbox_ctl(pd_sandbox *s, pd_err *e)
{
	if (s->state != PD_READY)
		return pd_fail(e, EINVAL, "sandbox %s is %s, not READY", s->id, pd_state_name(s->state));
	return s->sock;
}
