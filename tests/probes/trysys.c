/* trysys: calls syscalls with harmless (mostly invalid) arguments and prints "name=RESULT" per line,
 * RESULT being OK or the errno name. Arguments are chosen so that, without the sandbox's seccomp
 * filter, most denied calls would fail with something other than EPERM (EFAULT, EBADF, EINVAL...)
 * or succeed harmlessly; an EPERM then proves the filter answered, not a capability check.
 *   trysys            every call in the table
 *   trysys NAME...    only those */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static int g_pipe[2];

/* clone() with flags, fork-like (no new stack): the child exits at once */
static long try_clone(unsigned long flags)
{
	long r = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	return r;
}

static long run(const char *n)
{
#define IS(s) (!strcmp(n, s))
	if (IS("keyctl")) return syscall(SYS_keyctl, 0x7fff, 0, 0, 0, 0);
	if (IS("add_key")) return syscall(SYS_add_key, NULL, NULL, NULL, 0, 0);
	if (IS("request_key")) return syscall(SYS_request_key, NULL, NULL, NULL, 0);
	if (IS("bpf")) return syscall(SYS_bpf, 0x7fff, NULL, 0);
	if (IS("perf_event_open")) return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
	if (IS("userfaultfd")) return syscall(SYS_userfaultfd, 1 | 2); /* user-mode-only + a bad bit */
	if (IS("io_uring_setup")) return syscall(SYS_io_uring_setup, 1, NULL);
	if (IS("io_uring_enter")) return syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0);
	if (IS("io_uring_register")) return syscall(SYS_io_uring_register, -1, 0, NULL, 0);
	if (IS("kexec_load")) return syscall(SYS_kexec_load, 0, 0, NULL, 0xdead0000UL);
	if (IS("kexec_file_load")) return syscall(SYS_kexec_file_load, -1, -1, 0, NULL, 0xdead0000UL);
	if (IS("init_module")) return syscall(SYS_init_module, NULL, 0, NULL);
	if (IS("finit_module")) return syscall(SYS_finit_module, -1, NULL, 0);
	if (IS("delete_module")) return syscall(SYS_delete_module, NULL, 0);
	if (IS("reboot")) return syscall(SYS_reboot, 0, 0, 0, NULL); /* bad magic */
	if (IS("swapon")) return syscall(SYS_swapon, NULL, 0);
	if (IS("swapoff")) return syscall(SYS_swapoff, NULL);
	if (IS("acct")) return syscall(SYS_acct, NULL);
	if (IS("syslog")) return syscall(SYS_syslog, 9999, NULL, 0);
	if (IS("settimeofday")) return syscall(SYS_settimeofday, NULL, NULL); /* a no-op if allowed */
	if (IS("clock_settime")) return syscall(SYS_clock_settime, CLOCK_REALTIME, NULL);
	if (IS("clock_adjtime")) return syscall(SYS_clock_adjtime, CLOCK_REALTIME, NULL);
	if (IS("adjtimex")) return syscall(SYS_adjtimex, NULL);
	if (IS("quotactl")) return syscall(SYS_quotactl, 0, NULL, 0, NULL);
	if (IS("sysfs")) return syscall(SYS_sysfs, 9999, 0, 0);
	if (IS("ustat")) return syscall(SYS_ustat, 0, NULL);
	if (IS("iopl")) return syscall(SYS_iopl, 9);             /* level > 3: EINVAL if allowed */
	if (IS("ioperm")) return syscall(SYS_ioperm, 0x10000, 1, 1); /* past the bitmap: EINVAL */
	if (IS("modify_ldt")) return syscall(SYS_modify_ldt, 9999, NULL, 0);
	if (IS("mount")) return syscall(SYS_mount, NULL, NULL, NULL, 0, NULL);
	if (IS("umount2")) return syscall(SYS_umount2, NULL, 0);
	if (IS("pivot_root")) return syscall(SYS_pivot_root, NULL, NULL);
	if (IS("chroot")) return syscall(SYS_chroot, NULL);
	if (IS("fsopen")) return syscall(SYS_fsopen, NULL, 0);
	if (IS("fsconfig")) return syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0);
	if (IS("fsmount")) return syscall(SYS_fsmount, -1, 0, 0);
	if (IS("fspick")) return syscall(SYS_fspick, -1, NULL, 0);
	if (IS("open_tree")) return syscall(SYS_open_tree, AT_FDCWD, NULL, 0);
	if (IS("move_mount")) return syscall(SYS_move_mount, -1, NULL, -1, NULL, 0);
	if (IS("mount_setattr")) return syscall(SYS_mount_setattr, -1, NULL, 0, NULL, 0);
	if (IS("open_by_handle_at")) return syscall(SYS_open_by_handle_at, -1, NULL, 0);
	if (IS("name_to_handle_at")) return syscall(SYS_name_to_handle_at, AT_FDCWD, NULL, NULL, NULL, 0);
	if (IS("fanotify_init")) return syscall(SYS_fanotify_init, 0xffffffffu, 0);
	if (IS("unshare")) return syscall(SYS_unshare, 0); /* a no-op if allowed */
	if (IS("setns")) return syscall(SYS_setns, -1, 0);
	if (IS("ptrace")) return syscall(SYS_ptrace, PTRACE_ATTACH, 0x3ffffff0, NULL, NULL);
	if (IS("process_vm_readv")) return syscall(SYS_process_vm_readv, getpid(), NULL, 0, NULL, 0, 0);
	if (IS("process_vm_writev")) return syscall(SYS_process_vm_writev, getpid(), NULL, 0, NULL, 0, 0);
	if (IS("kcmp")) return syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, 1, 1);
	if (IS("pidfd_getfd")) return syscall(SYS_pidfd_getfd, -1, 0, 0);
	if (IS("mbind")) return syscall(SYS_mbind, NULL, 0, 0, NULL, 0, 0);
	if (IS("migrate_pages")) return syscall(SYS_migrate_pages, 0, 0, NULL, NULL);
	if (IS("move_pages")) return syscall(SYS_move_pages, 0, 0, NULL, NULL, NULL, 0);
	if (IS("set_mempolicy")) return syscall(SYS_set_mempolicy, 0, NULL, 0);
	if (IS("vhangup")) return syscall(SYS_vhangup);
	/* allowed calls: their ordinary answers */
	if (IS("read")) return syscall(SYS_read, -1, NULL, 0);
	if (IS("write")) return syscall(SYS_write, -1, NULL, 0);
	if (IS("open")) return syscall(SYS_open, NULL, O_RDONLY);
	if (IS("openat")) return syscall(SYS_openat, AT_FDCWD, NULL, O_RDONLY);
	if (IS("close")) return syscall(SYS_close, -1);
	if (IS("getpid")) return syscall(SYS_getpid) > 0 ? 0 : -1;
	if (IS("kill")) return syscall(SYS_kill, 0x3ffffff0, 0);
	if (IS("mmap")) return syscall(SYS_mmap, NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == (long)MAP_FAILED ? -1 : 0;
	if (IS("socket_inet")) {
		long fd = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
		if (fd >= 0)
			close((int)fd);
		return fd < 0 ? fd : 0;
	}
	if (IS("socket_unix")) {
		long fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0)
			close((int)fd);
		return fd < 0 ? fd : 0;
	}
	if (IS("fork")) return try_clone(0) > 0 ? 0 : -1;
	if (IS("uname")) return syscall(SYS_uname, NULL);
	if (IS("nanosleep")) return syscall(SYS_nanosleep, NULL, NULL);
	if (IS("personality")) return syscall(SYS_personality, 0xffffffffUL) < 0 ? -1 : 0; /* query */
	if (IS("prctl_bad")) return syscall(SYS_prctl, 0x7fffffff, 0, 0, 0, 0);
	if (IS("clone3")) return syscall(SYS_clone3, NULL, 0);
	if (IS("clone_newuser")) return try_clone(CLONE_NEWUSER);
	if (IS("clone_newns")) return try_clone(CLONE_NEWNS);
	if (IS("clone_newpid")) return try_clone(CLONE_NEWPID);
	if (IS("clone_newnet")) return try_clone(CLONE_NEWNET);
	if (IS("clone_newipc")) return try_clone(CLONE_NEWIPC);
	if (IS("clone_newuts")) return try_clone(CLONE_NEWUTS);
	if (IS("clone_newcgroup")) return try_clone(CLONE_NEWCGROUP);
	if (IS("unshare_newuser")) return syscall(SYS_unshare, CLONE_NEWUSER);
	if (IS("unshare_newns")) return syscall(SYS_unshare, CLONE_NEWNS);
	if (IS("setns_net")) {
		int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		long r = syscall(SYS_setns, fd, CLONE_NEWNET);
		int e = errno;
		close(fd);
		errno = e;
		return r;
	}
	/* ioctls on a pipe: the driver would answer ENOTTY, the filter answers EPERM first */
	if (IS("ioctl_tiocsti")) {
		char c = 'x';
		return ioctl(g_pipe[0], TIOCSTI, &c);
	}
	if (IS("ioctl_tiocsti_hibits")) {
		char c = 'x';
		return syscall(SYS_ioctl, g_pipe[0], (1UL << 32) | TIOCSTI, &c);
	}
	if (IS("ioctl_tioclinux")) {
		char c = 0;
		return ioctl(g_pipe[0], TIOCLINUX, &c);
	}
	if (IS("ioctl_tcgets")) {
		struct termios t;
		return ioctl(g_pipe[0], TCGETS, &t);
	}
	errno = ENOENT;
	return -2;
#undef IS
}

static const char *const all[] = {
	"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
	"io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load", "init_module",
	"finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "syslog",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "quotactl", "sysfs", "ustat",
	"iopl", "ioperm", "modify_ldt", "mount", "umount2", "pivot_root", "chroot", "fsopen",
	"fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr",
	"open_by_handle_at", "name_to_handle_at", "fanotify_init", "unshare", "setns", "ptrace",
	"process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "mbind", "migrate_pages",
	"move_pages", "set_mempolicy", "vhangup", "read", "write", "open", "openat", "close",
	"getpid", "kill", "mmap", "socket_inet", "socket_unix", "fork", "uname", "nanosleep",
	"personality", "prctl_bad", "clone3", "clone_newuser", "clone_newns", "clone_newpid",
	"clone_newnet", "clone_newipc", "clone_newuts", "clone_newcgroup", "unshare_newuser",
	"unshare_newns", "setns_net", "ioctl_tiocsti", "ioctl_tiocsti_hibits", "ioctl_tioclinux",
	"ioctl_tcgets", NULL,
};

static void one(const char *name)
{
	errno = 0;
	long r = run(name);
	if (r == -2 && errno == ENOENT) {
		printf("%s=UNKNOWN\n", name);
	} else if (r < 0) {
		const char *en = strerrorname_np(errno);
		printf("%s=%s\n", name, en ? en : "E?");
	} else {
		printf("%s=OK\n", name);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (pipe(g_pipe) < 0)
		return 2;
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			one(argv[i]);
	else
		for (int i = 0; all[i]; i++)
			one(all[i]);
	return 0;
}
