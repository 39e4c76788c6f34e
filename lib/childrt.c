/* What the code that runs inside a sandbox shares: init (child.c) and a reset's helper
 * (rootfs.c). Both run in a copy of one thread of a possibly multi-threaded host, so they use no
 * malloc and no stdio (see child.c): raw system calls, string helpers without libc formatting,
 * and one way to fail (pd_ch_die), which reports to the host and ends the process. */
#define _GNU_SOURCE
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/securebits.h>
#ifdef __SANITIZE_THREAD__
#include <dlfcn.h>
#endif
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

/* openat2's arguments (linux/openat2.h, which glibc's headers may lack) */
#ifndef RESOLVE_IN_ROOT
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#define RESOLVE_IN_ROOT 0x10
#endif

struct open_how_ {
	uint64_t flags, mode, resolve;
};

int pd_ch_sock = -1;
int pd_ch_upper = -1;
/* Set while this code runs as a sandbox reset's helper (pd_reset_root): a thread of the host
 * suspended in vfork lends the helper its memory and its thread-local storage, so a failure is
 * written here instead of into a socket. */
static __thread pd_reset_report *t_rep;
/* What a reset's helper has open at the moment (the staging or upper tmpfs, the new root, an
 * image directory, a bind target: a few at a time). The helper shares the host's descriptor
 * table (pd_reset_root), where a descriptor it left open would stay, so pd_ch_die() closes these, and
 * every path that opens one goes through pd_ch_hold() and pd_ch_drop(). */
#define HELD_MAX 8
static __thread int t_held[HELD_MAX];
static __thread int t_nheld;
/* init's handle on /proc/sys/kernel/ns_last_pid, opened before /proc/sys turns read-only: a
 * reset winds the pid counter back so the next user's programs get the pids a fresh one would */
int pd_ch_lastpid = -1;

/* glibc's set*id and setgroups broadcast to every thread the process has, and its fork takes the
 * allocator's locks; this process is a copy of one thread of a possibly multi-threaded host, so
 * those would wait forever on threads and locks that do not exist here. Raw system calls only. */
int pd_ch_setresuid(uid_t u)
{
	return (int)syscall(SYS_setresuid, u, u, u);
}

int pd_ch_setresgid(gid_t g)
{
	return (int)syscall(SYS_setresgid, g, g, g);
}

int pd_ch_setgroups_none(void)
{
	return (int)syscall(SYS_setgroups, 0, NULL);
}

/* ---- tiny string helpers (no libc formatting in the child) ---------------------------------- */

size_t pd_ch_cat(char *dst, size_t size, const char *a, const char *b, const char *c)
{
	size_t n = 0;
	const char *parts[3] = {a, b, c};
	for (int i = 0; i < 3; i++)
		for (const char *p = parts[i]; p && *p; p++)
			if (n + 1 < size)
				dst[n++] = *p;
	dst[n] = 0;
	return n;
}

void pd_ch_utoa(unsigned long v, char *out)
{
	char t[24];
	int n = 0;
	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	for (int i = 0; i < n; i++)
		out[i] = t[n - 1 - i];
	out[n] = 0;
}

__attribute__((noreturn)) void pd_ch_die(const char *what, int err)
{
	struct msg_error m;
	memset(&m, 0, sizeof m);
	m.type = MSG_ERROR;
	m.err = err;
	pd_ch_cat(m.what, sizeof m.what, what, NULL, NULL);
	if (t_rep) {
		t_rep->err = err;
		pd_ch_cat(t_rep->what, sizeof t_rep->what, what, NULL, NULL);
		while (t_nheld > 0)
			close(t_held[--t_nheld]);
		_exit(1);
	}
	if (pd_ch_sock >= 0)
		send(pd_ch_sock, &m, sizeof m, MSG_NOSIGNAL);
	_exit(1);
}

void pd_ch_check(int rc, const char *what)
{
	if (rc < 0)
		pd_ch_die(what, errno);
}

/* fd, noted for pd_ch_die() when this is a reset's helper; -1 passes through (errno kept). */
int pd_ch_hold(int fd)
{
	if (fd >= 0 && t_rep) {
		if (t_nheld == HELD_MAX) {
			close(fd);
			errno = EMFILE;
			return -1;
		}
		t_held[t_nheld++] = fd;
	}
	return fd;
}

/* Closes a descriptor from pd_ch_hold(). */
void pd_ch_drop(int fd)
{
	for (int i = 0; i < t_nheld; i++)
		if (t_held[i] == fd) {
			t_held[i] = t_held[--t_nheld];
			break;
		}
	close(fd);
}


/* openat2 with every component, symlinks included, resolved as if "/" were the root (it is ours
 * anyway, but a sandbox program may plant links to /proc magic links: those are refused) */
int pd_ch_open_inside(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how_ how = {(uint64_t)(flags | O_CLOEXEC), mode,
				RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

/* Splits path into its parent (opened inside the root) and last component. */

void pd_ch_helper(pd_reset_report *rep)
{
	t_rep = rep;
	t_nheld = 0;
}

#ifdef __SANITIZE_THREAD__
typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);
static clone_fn libc_clone;

/* resolved at load, in the host: never in a child, where dlopen's locks may be another thread's */
__attribute__((constructor)) static void find_libc_clone(void)
{
	void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	libc_clone = h ? (clone_fn)dlsym(h, "clone") : NULL;
}

int pd_ch_clone(int (*fn)(void *), void *stack, int flags, void *arg)
{
	return libc_clone ? libc_clone(fn, stack, flags, arg) : clone(fn, stack, flags, arg);
}
#else
int pd_ch_clone(int (*fn)(void *), void *stack, int flags, void *arg)
{
	return clone(fn, stack, flags, arg);
}
#endif
