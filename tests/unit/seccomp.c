/* seccomp.c: the compiled policies. They are deterministic, and the base policy, loaded in a
 * forked child after no_new_privs, refuses what it must and lets the rest through. Every probe is
 * chosen to be harmless should the filter not apply (bad arguments, missing paths), and to give a
 * different answer without the filter than with it, so each check can fail. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif

typedef struct probe {
	const char *what;
	long ret;
	int err;
} probe;

enum { NPROBES = 32 };
static probe res[NPROBES];
static int nres;

static void rec(const char *what, long ret)
{
	if (nres < NPROBES)
		res[nres++] = (probe){what, ret, ret < 0 ? errno : 0};
}

static void *thread_fn(void *arg)
{
	return arg;
}

static int load(const pd_bpf *b, unsigned flags)
{
	struct sock_fprog prog = {.len = b->len, .filter = b->insns};
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

/* In a grandchild: runs f and reports how it ended (exit code, or 128 + signal). */
static int ends(void (*f)(void))
{
	pid_t p = fork();
	if (p == 0) {
		f();
		_exit(0);
	}
	int ws;
	if (p < 0 || waitpid(p, &ws, 0) != p)
		return -1;
	return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
}

static void x32_getpid(void)
{
	syscall(__X32_SYSCALL_BIT | SYS_getpid);
}

static void int80_getpid(void)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
	_exit(r > 0 ? 0 : 3);
}

/* The probes, run in a child with the base filter loaded; results go to the parent over a pipe. */
static void run_probes(const pd_bpf *base, int out)
{
	pid_t me = getpid();
	int pp[2];
	if (pipe(pp) < 0)
		_exit(2);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || load(base, 0) < 0) {
		rec("load", -1);
		goto send;
	}
	rec("load", 0);
	rec("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
	rec("add_key", syscall(SYS_add_key, "paddock-no-such-type", "d", "x", 1, KEY_SPEC_SESSION_KEYRING));
	rec("setns", setns(-1, 0));
	rec("clone3", syscall(SYS_clone3, NULL, 0));
	long c = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (c == 0)
		_exit(0);
	rec("clone(CLONE_NEWUSER)", c);
	c = syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
	if (c == 0)
		_exit(0);
	rec("clone(CLONE_NEWNET)", c);
	pid_t f = fork();
	if (f == 0)
		_exit(7);
	int ws = 0;
	rec("fork", f > 0 && waitpid(f, &ws, 0) == f && WIFEXITED(ws) && WEXITSTATUS(ws) == 7 ? 0 : -1);
	pthread_t th;
	int tr = pthread_create(&th, NULL, thread_fn, NULL);
	if (tr == 0)
		pthread_join(th, NULL);
	errno = tr;
	rec("pthread_create", tr ? -1 : 0);
	rec("getpid", syscall(SYS_getpid) == me ? 0 : -1);
	char b;
	rec("read(-1)", read(-1, &b, 1));
	char ch = 'x';
	rec("ioctl(TIOCSTI)", ioctl(pp[0], TIOCSTI, &ch));
	rec("ioctl(TIOCSTI | 1<<32)", syscall(SYS_ioctl, pp[0], (unsigned long)TIOCSTI | (1ul << 32), &ch));
	rec("ioctl(TIOCLINUX)", ioctl(pp[0], TIOCLINUX, &ch));
	struct termios t;
	rec("ioctl(TCGETS)", ioctl(pp[0], TCGETS, &t));
	rec("mount", syscall(SYS_mount, NULL, "/nonexistent-paddock", NULL, 0x1000 /* MS_BIND */, NULL));
	rec("chroot", chroot("/nonexistent-paddock"));
	rec("pivot_root", syscall(SYS_pivot_root, "/nonexistent-paddock", "/nonexistent-paddock"));
	rec("ptrace", ptrace(PTRACE_GETREGS, 0, NULL, NULL));
	rec("bpf", syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, NULL, 0));
	rec("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
	rec("io_uring_setup", syscall(SYS_io_uring_setup, 0, NULL));
	rec("reboot", syscall(SYS_reboot, 0, 0, 0, NULL));
	rec("init_module", syscall(SYS_init_module, NULL, 0, ""));
	/* last: without the filter these would succeed and change what the probes above see */
	rec("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER));
	rec("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS));
	rec("x32 getpid ends with SIGSYS", ends(x32_getpid) == 128 + SIGSYS ? 0 : -1);
send:;
	ssize_t w = write(out, res, sizeof res[0] * (size_t)nres);
	(void)w;
	_exit(0);
}

static const probe *find(const char *what)
{
	for (int i = 0; i < nres; i++)
		if (!strcmp(res[i].what, what))
			return &res[i];
	return NULL;
}

static void expect(const char *what, int err)
{
	const probe *p = find(what);
	if (!p) {
		ok(0, "%s: no result", what);
		return;
	}
	bool good = err ? p->ret == -1 && p->err == err : p->ret >= 0;
	if (!ok(good, "%s -> %s", what, err ? strerror(err) : "allowed"))
		printf("#   got ret %ld, errno %d (%s)\n", p->ret, p->err, p->err ? strerror(p->err) : "-");
}

int main(void)
{
	plan(48);
	pd_err e = {0};
	pd_bpf b1, b2, a1, a2;
	ok(pd_seccomp_compile_base(&b1, &e) == 0 && b1.insns && b1.len > 0, "base policy compiles (%u insns)", b1.len);
	ok(pd_seccomp_compile_base(&b2, &e) == 0, "base policy compiles again");
	ok(b1.len == b2.len && !memcmp(b1.insns, b2.insns, b1.len * sizeof *b1.insns), "base policy: identical bytes");
	ok(pd_seccomp_compile_audit(&a1, &e) == 0 && a1.insns && a1.len > 0, "audit policy compiles (%u insns)", a1.len);
	ok(pd_seccomp_compile_audit(&a2, &e) == 0, "audit policy compiles again");
	ok(a1.len == a2.len && !memcmp(a1.insns, a2.insns, a1.len * sizeof *a1.insns), "audit policy: identical bytes");
	ok(a1.len != b1.len || memcmp(a1.insns, b1.insns, a1.len * sizeof *a1.insns), "the two policies differ");
	ok(b1.len <= BPF_MAXINSNS && a1.len <= BPF_MAXINSNS, "both fit the kernel's program size limit");
	/* the first thing a policy does is look at the architecture */
	ok(b1.insns[0].code == (BPF_LD | BPF_W | BPF_ABS) && b1.insns[0].k == offsetof(struct seccomp_data, arch),
	   "base policy checks the architecture first");
	/* the run directory's copy: the same bytes as a compile, and only ever a file this build
	 * would have written itself */
	{
		char dir[] = "/tmp/paddock-bpfcache-XXXXXX", path[128];
		pd_bpf c1 = {0}, c2 = {0}, c3 = {0}, c4 = {0};
		ok(mkdtemp(dir) != NULL, "a cache directory");
		snprintf(path, sizeof path, "%s/seccomp-base.bpf", dir);
		ok(pd_seccomp_policy(PD_SECCOMP_BASE, dir, &c1, &e) == 0 && access(path, F_OK) == 0,
		   "base policy compiled and left in the cache directory");
		ok(pd_seccomp_policy(PD_SECCOMP_BASE, dir, &c2, &e) == 0 && c2.len == b1.len &&
			   !memcmp(c2.insns, b1.insns, b1.len * sizeof *b1.insns),
		   "taken from the cache: identical to a compile");
		/* a program that is not the policy's, under the policy's recording: the last instruction
		 * changed in place (a corrupted or planted file) is still taken, so the file's mode and
		 * owner are what guard it; a different recording is not */
		struct stat st;
		int fd = open(path, O_RDWR);
		uint32_t h[3] = {0};
		ok(fd >= 0 && pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h && h[1] > 8, "the cache file's header");
		char byte = 0;
		ssize_t r1 = pread(fd, &byte, 1, (off_t)sizeof h + h[1] - 2);
		byte ^= 0x55;
		ssize_t w1 = pwrite(fd, &byte, 1, (off_t)sizeof h + h[1] - 2);
		close(fd);
		ok(r1 == 1 && w1 == 1 && pd_seccomp_policy(PD_SECCOMP_BASE, dir, &c3, &e) == 0 && c3.len == b1.len &&
			   !memcmp(c3.insns, b1.insns, b1.len * sizeof *b1.insns),
		   "a cache file recorded for other inputs is not used: compiled again, identical");
		ok(chmod(path, 0666) == 0 && stat(path, &st) == 0, "the cache file made writable by others");
		/* make its program wrong, then check it is refused for its mode alone */
		fd = open(path, O_RDWR);
		struct sock_filter bad = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		ssize_t w2 = fd >= 0 ? pwrite(fd, &bad, sizeof bad, st.st_size - (off_t)sizeof bad) : -1;
		close(fd);
		ok(w2 == (ssize_t)sizeof bad && pd_seccomp_policy(PD_SECCOMP_BASE, dir, &c4, &e) == 0 &&
			   c4.len == b1.len && !memcmp(c4.insns, b1.insns, b1.len * sizeof *b1.insns),
		   "a cache file others may write is not used: compiled again, identical");
		ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "and replaced by one of mode 0600");
		pd_bpf_free(&c1);
		pd_bpf_free(&c2);
		pd_bpf_free(&c3);
		pd_bpf_free(&c4);
		unlink(path);
		snprintf(path, sizeof path, "%s/seccomp-audit.bpf", dir);
		unlink(path);
		rmdir(dir);
	}
	pd_bpf_free(&b2);
	pd_bpf_free(&a2);
	ok(b2.insns == NULL && b2.len == 0, "pd_bpf_free clears");
	pd_bpf_free(&b2);

	/* the base policy in a child */
	int pp[2];
	if (pipe(pp) < 0)
		return 1;
	fflush(stdout);
	pid_t kid = fork();
	if (kid == 0) {
		close(pp[0]);
		run_probes(&b1, pp[1]);
	}
	close(pp[1]);
	ssize_t n = read(pp[0], res, sizeof res);
	close(pp[0]);
	int ws = 0;
	waitpid(kid, &ws, 0);
	nres = n > 0 ? (int)(n / (ssize_t)sizeof res[0]) : 0;
	/* the strings point into the child's copy of this binary: same addresses here */
	ok(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the probing child finished (status 0x%x)", ws);
	expect("load", 0);
	expect("keyctl", EPERM);
	expect("add_key", EPERM);
	expect("unshare(CLONE_NEWUSER)", EPERM);
	expect("unshare(CLONE_NEWNS)", EPERM);
	expect("setns", EPERM);
	expect("clone3", ENOSYS);
	expect("clone(CLONE_NEWUSER)", EPERM);
	expect("clone(CLONE_NEWNET)", EPERM);
	expect("fork", 0);
	expect("pthread_create", 0);
	expect("getpid", 0);
	expect("read(-1)", EBADF);
	expect("ioctl(TIOCSTI)", EPERM);
	expect("ioctl(TIOCSTI | 1<<32)", EPERM);
	expect("ioctl(TIOCLINUX)", EPERM);
	expect("ioctl(TCGETS)", ENOTTY);
	expect("mount", EPERM);
	expect("chroot", EPERM);
	expect("pivot_root", EPERM);
	expect("ptrace", EPERM);
	expect("bpf", EPERM);
	expect("perf_event_open", EPERM);
	expect("io_uring_setup", EPERM);
	expect("reboot", EPERM);
	expect("init_module", EPERM);
	expect("x32 getpid ends with SIGSYS", 0);

	/* i386 syscalls through int 0x80: killed, where the kernel runs them at all */
	if (ends(int80_getpid) != 0) {
		ok(1, "i386 syscall ends with SIGSYS # SKIP this kernel has no i386 syscalls");
	} else {
		kid = fork();
		if (kid == 0) {
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || load(&b1, 0) < 0)
				_exit(2);
			int80_getpid();
		}
		waitpid(kid, &ws, 0);
		ok(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGSYS, "i386 syscall ends with SIGSYS (status 0x%x)", ws);
	}

	/* the audit policy sends opens to a listener: with the listener gone, they fail */
	kid = fork();
	if (kid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(2);
		int l = load(&a1, SECCOMP_FILTER_FLAG_NEW_LISTENER);
		if (l < 0)
			_exit(3);
		if (syscall(SYS_getpid) <= 0)
			_exit(4);
		close(l);
		int fd = open("/dev/null", O_RDONLY);
		_exit(fd < 0 && errno == ENOSYS ? 0 : 5);
	}
	waitpid(kid, &ws, 0);
	ok(WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
	   "audit policy: a listener fd, getpid untouched, open routed to the (closed) listener (status 0x%x)", ws);

	pd_bpf_free(&b1);
	pd_bpf_free(&a1);
	return done();
}
