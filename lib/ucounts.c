/* Kernel objects counted per user: a sandbox's are its own, never the host root's.
 *
 * The kernel counts inotify instances and watches, fanotify groups and marks, namespaces, pending
 * signals, POSIX message queue bytes, locked shared memory and processes per (user namespace,
 * uid), and charges each count up the chain of user namespaces: at every level to the uid that
 * *owns* the namespace below, against that level's limit. A sandbox's user namespace made by the
 * daemon (euid 0) is owned by host root, so everything every sandbox creates used to be charged to
 * host root too, against host root's own limits: one sandbox with 125 inotify instances left the
 * host's root (and the daemon) with EMFILE.
 *
 * So the thread that clones a sandbox takes the slot's uid as its effective uid for the clone
 * (pd_ucounts_owner_enter/leave): the new user namespace is owned by a host uid no other
 * sandbox and no host process has, and the host charges the sandbox's objects to that uid, each
 * sandbox against the host's per-user limits on its own. Inside, init lowers the namespace's own
 * limits (/proc/sys/user/max_*, which only a process with CAP_SYS_RESOURCE there may write and
 * programs have none) before any program runs (pd_ucounts_limit_ns), and each program gets low
 * rlimits for the counts the kernel limits by rlimit (pd_ucounts_program_rlimits). docs/security.md
 * has the whole catalogue, host-wide counts (AIO) included. */
#define _GNU_SOURCE
#include "ucounts.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The user namespace's own limits, per uid inside it (programs of one sandbox usually share one
 * uid). Namespaces: a program may create none (the seccomp policy refuses them too); init makes
 * a new IPC namespace at each reset. The kernel frees old IPC namespaces in batches, after an RCU
 * grace period (milliseconds), and a creation at the limit waits for that batch (flush_work in
 * create_ipc_ns) instead of failing: with a limit of 16, back-to-back resets (~0.3 ms each) sat
 * at the limit and each waited ~0.6 ms. So room for the namespaces one grace period of resets
 * leaves pending; still bounded per sandbox. Every
 * detached mount (fsmount, open_tree: a build's and a reset's) is an anonymous mount namespace,
 * and those count too. */
static const struct {
	const char *name;
	const char *value;
} ns_limits[] = {
	{"max_inotify_instances", "32"},
	{"max_inotify_watches", "8192"},
	{"max_fanotify_groups", "0"},
	{"max_fanotify_marks", "0"},
	{"max_user_namespaces", "0"},
	{"max_pid_namespaces", "0"},
	{"max_net_namespaces", "0"},
	{"max_uts_namespaces", "0"},
	{"max_time_namespaces", "0"},
	{"max_mnt_namespaces", "256"},
	{"max_cgroup_namespaces", "1"},
	{"max_ipc_namespaces", "256"},
};

/* Runs in init, in the sandbox's user namespace with every capability there. The files are the
 * host's /proc's, but the kernel shows each process its own user namespace's table. Returns 0
 * or an errno; *what names the file. Async-signal-safe (no allocation). */
int pd_ucounts_limit_ns(const char **what)
{
	/* the directory walked once, each file opened in it: twelve walks of /proc/sys/user/ were a
	 * tenth of a sandbox's setup */
	*what = "/proc/sys/user";
	int dfd = open("/proc/sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno;
	for (size_t i = 0; i < sizeof ns_limits / sizeof ns_limits[0]; i++) {
		*what = ns_limits[i].name;
		int fd = openat(dfd, ns_limits[i].name, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue; /* an older kernel without that count */
			int err = errno;
			close(dfd);
			return err;
		}
		size_t vl = strlen(ns_limits[i].value);
		ssize_t n = write(fd, ns_limits[i].value, vl);
		int err = n == (ssize_t)vl ? 0 : n < 0 ? errno : EIO;
		close(fd);
		if (err) {
			close(dfd);
			return err;
		}
	}
	close(dfd);
	return 0;
}

/* In the program's process before its execve. The kernel checks these per (namespace, uid) against
 * the rlimit of the process that creates the object; above the sandbox they are charged to the
 * slot's uid. Returns 0 or an errno. Async-signal-safe (a vfork child calls it). */
int pd_ucounts_program_rlimits(void)
{
	static const struct {
		int res;
		rlim_t v;
	} rl[] = {
		{RLIMIT_SIGPENDING, PD_RL_SIGPENDING},
		{RLIMIT_MSGQUEUE, PD_RL_MSGQUEUE},
		{RLIMIT_MEMLOCK, PD_RL_MEMLOCK},
	};
	for (size_t i = 0; i < sizeof rl / sizeof rl[0]; i++) {
		struct rlimit r = {rl[i].v, rl[i].v};
		if (setrlimit(rl[i].res, &r) < 0)
			return errno;
	}
	return 0;
}

/* ---- the owner of a sandbox's user namespace --------------------------------------------------- */

static pthread_once_t dump_once = PTHREAD_ONCE_INIT;
static int dump_initial = -1;

static void read_dumpable(void)
{
	dump_initial = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}

static int caps(bool set, struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	return (int)syscall(set ? SYS_capset : SYS_capget, &h, d);
}

int pd_ucounts_owner_enter(uint32_t uid, pd_ucounts_owner *o, pd_err *e)
{
	memset(o, 0, sizeof o[0]);
	/* only root can make a namespace for another uid; an unprivileged embedding keeps its own */
	if (geteuid() != 0)
		return 0;
	pthread_once(&dump_once, read_dumpable);
	struct __user_cap_data_struct d[2];
	if (caps(false, d) < 0)
		return pd_fail(e, errno, "capget");
	/* this thread only (the raw call, not libc's, which changes every thread): effective uid
	 * the slot's, real and saved uid stay 0, so the way back needs no capability */
	if (syscall(SYS_setresuid, -1, (uid_t)uid, -1) < 0)
		return pd_fail(e, errno, "take the sandbox's uid for its user namespace");
	o->switched = true;
	/* leaving uid 0 cleared the effective capabilities; the permitted set is whole (real uid 0):
	 * the clone needs them (into the sandbox's cgroup, whose files are root's) */
	if (caps(true, d) < 0) {
		int err = errno;
		pd_ucounts_owner_leave(o);
		return pd_fail(e, err, "capset");
	}
	return 0;
}

void pd_ucounts_owner_leave(pd_ucounts_owner *o)
{
	if (!o->switched)
		return;
	/* back to effective uid 0: the kernel gives the permitted capabilities back as effective */
	syscall(SYS_setresuid, -1, 0, -1);
	o->switched = false;
	/* any change of the effective uid made the whole process non-dumpable (the kernel's
	 * suid_dumpable rule): give the embedding application back what it had */
	if (dump_initial == 1)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}
