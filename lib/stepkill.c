/* The step kill: a limit (time, output) that ends one exec's program and every process of its
 * session, and leaves the sandbox, its init and whatever earlier execs left running alone.
 *
 * Each program is a session leader inside the sandbox (init's spawn calls setsid), so "the step's
 * process tree" is the set of processes whose session id is the program's host pid: children,
 * grandchildren and orphans reparented to init alike, as long as they did not call setsid
 * themselves (those are treated like a background daemon an earlier step started: they stay).
 * A session id is never reused while a process still belongs to that session, so a scan of
 * /proc by session id cannot hit a stranger. */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The session id, state and start time of a host process, from /proc/<pid>/stat (the command
 * name, field 2, may hold spaces and parentheses: the fields after the last ')' are parsed). */
static int stat_of(pid_t pid, pid_t *sid, char *state, unsigned long long *start)
{
	char p[64], buf[1024];
	snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
	if (pd_read_file(p, buf, sizeof buf) <= 0)
		return -1;
	char *rp = strrchr(buf, ')');
	int ppid, pgrp, session;
	/* fields 3 to 22: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
	 * utime stime cutime cstime priority nice num_threads itrealvalue starttime */
	if (!rp || sscanf(rp + 1, " %c %d %d %d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			  state, &ppid, &pgrp, &session, start) != 5)
		return -1;
	*sid = session;
	return 0;
}

static int stat_sid(pid_t pid, pid_t *sid, char *state)
{
	unsigned long long start;
	return stat_of(pid, sid, state, &start);
}

size_t pd_init_leaders(pid_t init, pd_proc_id *out, size_t max)
{
	char p[96], buf[8192];
	snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)init, (int)init);
	if (pd_read_file(p, buf, sizeof buf) <= 0)
		return 0;
	size_t n = 0;
	for (char *q = buf; *q && n < max;) {
		char *end;
		long pid = strtol(q, &end, 10);
		if (end == q)
			break;
		q = end;
		pid_t sid;
		char st;
		unsigned long long start;
		if (pid > 0 && stat_of((pid_t)pid, &sid, &st, &start) == 0 && sid == pid)
			out[n++] = (pd_proc_id){(pid_t)pid, start};
	}
	return n;
}

int pd_kill_session(pid_t leader)
{
	if (leader <= 0)
		return -1;
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	int alive = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (pid <= 0 || *end)
			continue;
		/* through a pidfd: the process read is the one signalled, even if it ends and its pid
		 * is reused between the read and the kill */
		int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
		if (pfd < 0)
			continue;
		pid_t sid;
		char st;
		if (stat_sid((pid_t)pid, &sid, &st) == 0 && sid == leader && st != 'Z' && st != 'X') {
			syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
			alive++;
		}
		close(pfd);
	}
	closedir(d);
	return alive;
}
