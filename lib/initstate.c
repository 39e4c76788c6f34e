/* Init's own process attributes: none may carry from one user of a sandbox to the next.
 *
 * Every program is cloned from the sandbox's init and inherits init's timer slack, nice value,
 * scheduling policy, CPU affinity, I/O priority, umask, personality, rlimits it does not set
 * itself, signal mask and dispositions. Whatever a user manages to change in init therefore
 * reaches every later user of that sandbox. A program whose euid is init's (0) may renice init
 * or change its policy or affinity (the kernel asks only for a matching euid). Before this change,
 * the file APIs also wrote init's own /proc files (safepath.c now refuses that). So init notes
 * each attribute once, before its first program (pd_initstate_save). Each reset, once every
 * process of the last user is gone, puts back what init may put back and fails on what it may
 * not (pd_initstate_restore): a nice value or a scheduling policy raised again needs a privilege
 * init lacks. The host then destroys the sandbox instead of reusing it. Runs in init; no allocation. */
#define _GNU_SOURCE
#include "initstate.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

#define NSIGS 65

static struct {
	bool saved;
	long slack;
	mode_t umask;
	int personality;
	int nice;
	int policy;
	struct sched_param param;
	cpu_set_t cpus;
	int ioprio;
	struct rlimit rl[RLIM_NLIMITS];
	sigset_t mask;
	void *handler[NSIGS];
} g;

static void *handler_of(int sig)
{
	struct sigaction sa;
	if (sigaction(sig, NULL, &sa) < 0)
		return NULL;
	return (void *)sa.sa_handler;
}

static int ioprio(void)
{
	return (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
}

void pd_initstate_save(void)
{
	g.slack = (long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	g.umask = umask(022);
	umask(g.umask);
	g.personality = personality(0xffffffff);
	errno = 0;
	g.nice = getpriority(PRIO_PROCESS, 0);
	g.policy = sched_getscheduler(0);
	sched_getparam(0, &g.param);
	CPU_ZERO(&g.cpus);
	sched_getaffinity(0, sizeof g.cpus, &g.cpus);
	g.ioprio = ioprio();
	for (int r = 0; r < RLIM_NLIMITS; r++)
		getrlimit(r, &g.rl[r]);
	sigprocmask(SIG_SETMASK, NULL, &g.mask);
	for (int sig = 1; sig < NSIGS; sig++)
		g.handler[sig] = handler_of(sig);
	g.saved = true;
}

static int fail(int err, const char *attr, int32_t *errp, char *what, size_t size)
{
	*errp = err ? err : EPERM;
	static const char pre[] = "init's ";
	size_t n = 0;
	for (const char *p = pre; *p && n + 1 < size; p++)
		what[n++] = *p;
	for (const char *p = attr; *p && n + 1 < size; p++)
		what[n++] = *p;
	what[n < size ? n : size - 1] = 0;
	return -1;
}

int pd_initstate_restore(int32_t *err, char *what, size_t size)
{
	if (!g.saved)
		return 0;
	if ((long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) != g.slack &&
	    prctl(PR_SET_TIMERSLACK, (unsigned long)g.slack, 0, 0, 0) < 0)
		return fail(errno, "timer slack", err, what, size);
	umask(g.umask);
	if (personality(0xffffffff) != g.personality && personality((unsigned long)g.personality) < 0)
		return fail(errno, "personality", err, what, size);
	/* every user's program starts from init's working directory; "/" moves with the root */
	if (chdir("/") < 0)
		return fail(errno, "working directory", err, what, size);
	if (environ && environ[0])
		return fail(EPERM, "environment", err, what, size);
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, 0);
	if (nice != g.nice && setpriority(PRIO_PROCESS, 0, g.nice) < 0)
		return fail(errno, "nice value (changed by a program)", err, what, size);
	struct sched_param sp;
	if (sched_getscheduler(0) != g.policy || sched_getparam(0, &sp) < 0 ||
	    sp.sched_priority != g.param.sched_priority) {
		if (sched_setscheduler(0, g.policy, &g.param) < 0)
			return fail(errno, "scheduling policy (changed by a program)", err, what, size);
	}
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	if (sched_getaffinity(0, sizeof cpus, &cpus) < 0 || !CPU_EQUAL(&cpus, &g.cpus)) {
		if (sched_setaffinity(0, sizeof g.cpus, &g.cpus) < 0)
			return fail(errno, "CPU affinity", err, what, size);
	}
	if (ioprio() != g.ioprio &&
	    syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, g.ioprio) < 0)
		return fail(errno, "I/O priority", err, what, size);
	for (int r = 0; r < RLIM_NLIMITS; r++) {
		struct rlimit now;
		if (getrlimit(r, &now) < 0)
			continue;
		if ((now.rlim_cur != g.rl[r].rlim_cur || now.rlim_max != g.rl[r].rlim_max) &&
		    setrlimit(r, &g.rl[r]) < 0)
			return fail(errno, "rlimits", err, what, size);
	}
	sigprocmask(SIG_SETMASK, &g.mask, NULL);
	for (int sig = 1; sig < NSIGS; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || handler_of(sig) == g.handler[sig])
			continue;
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = (void (*)(int))g.handler[sig];
		if (sigaction(sig, &sa, NULL) < 0)
			return fail(errno, "signal dispositions", err, what, size);
	}
	return 0;
}
