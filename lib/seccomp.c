/* seccomp-bpf policies. libseccomp compiles each policy once, per context, into a BPF program kept
 * in memory; the per-sandbox path only hands that program to the kernel (no libseccomp, no malloc
 * in the child). Denied calls return EPERM, so a program sees an ordinary error; foreign ABIs (i386,
 * x32) kill the process, because a filter written for x86_64 numbers means nothing to them. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Not namespaced, or a common kernel attack surface, or a way out of the sandbox. */
static const char *const denied[] = {
	/* keyrings are not namespaced */
	"keyctl", "add_key", "request_key",
	/* large attack surfaces */
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
	"io_uring_register",
	/* kernel and machine state */
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"create_module", "reboot", "swapon", "swapoff", "acct", "syslog", "settimeofday",
	"clock_settime", "clock_adjtime", "adjtimex", "quotactl", "quotactl_fd", "lookup_dcookie",
	"vhangup", "uselib", "ustat", "sysfs", "_sysctl", "nfsservctl", "iopl", "ioperm",
	"modify_ldt", "get_kernel_syms", "query_module",
	/* the filesystem view */
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
	"move_mount", "open_tree", "mount_setattr", "open_by_handle_at", "name_to_handle_at",
	"fanotify_init",
	/* namespaces (and unshare, below) */
	"setns",
	/* other processes */
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	/* NUMA policy can pin memory on other nodes */
	"mbind", "migrate_pages", "move_pages", "set_mempolicy", "set_mempolicy_home_node",
	NULL,
};

/* Opens, execs and sends; and every call that changes a file's name, content or metadata, so that
 * a write to a protected path is seen whatever call makes it (a write() goes through an fd whose
 * open was seen with its mode). audit.c decodes each. */
static const char *const audited[] = {
	"open", "openat", "openat2", "creat", "execve", "execveat", "connect", "sendto", "sendmsg",
	"sendmmsg", "unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2", "link",
	"linkat", "symlink", "symlinkat", "mkdir", "mkdirat", "mknod", "mknodat", "chmod",
	"fchmod", "fchmodat", "chown", "lchown", "fchown", "fchownat", "truncate", "ftruncate",
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", NULL};
/* calls newer than the libseccomp this builds with may know: by their x86_64 numbers */
static const int audited_nr[] = {452 /* fchmodat2 */, 463 /* setxattrat */, 466 /* removexattrat */};

static int export_bpf(scmp_filter_ctx ctx, pd_bpf *out, pd_err *e)
{
	int fd = memfd_create("paddock-bpf", MFD_CLOEXEC);
	if (fd < 0)
		return pd_fail(e, errno, "memfd_create");
	int rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0) {
		close(fd);
		return pd_fail(e, -rc, "seccomp_export_bpf");
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) ||
	    st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		close(fd);
		return pd_fail(e, EINVAL, "seccomp program has a bad size");
	}
	out->insns = malloc((size_t)st.st_size);
	if (!out->insns) {
		close(fd);
		return pd_fail(e, ENOMEM, "seccomp program");
	}
	if (pread(fd, out->insns, (size_t)st.st_size, 0) != st.st_size) {
		free(out->insns);
		out->insns = NULL;
		close(fd);
		return pd_fail(e, EIO, "read seccomp program");
	}
	out->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
	close(fd);
	return 0;
}

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
		const struct scmp_arg_cmp *cmp, pd_err *e)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* unknown on this architecture: nothing to deny */
	int rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
	if (rc < 0)
		return pd_fail(e, -rc, "seccomp rule for %s", name);
	return 0;
}

int pd_seccomp_compile_base(pd_bpf *out, pd_err *e)
{
	memset(out, 0, sizeof *out);
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return pd_fail(e, ENOMEM, "seccomp_init");
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* the filter is loaded by the child itself, after no_new_privs */
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	/* a binary tree of the call numbers, not a chain: the kernel runs the filter over every call
	 * number when it is loaded (to cache the ones it always allows), so a chain of ~80 compares
	 * cost 115-200 us at each sandbox's creation, the tree 60-85 us; the calls it still runs the
	 * filter for take a few compares instead of up to a chain's length */
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0) {
		seccomp_release(ctx);
		return pd_fail(e, -rc, "seccomp attributes");
	}
	uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	for (int i = 0; denied[i]; i++)
		if (rule(ctx, eperm, denied[i], 0, NULL, e) < 0)
			goto fail;
	/* unshare, but for exactly CLONE_NEWIPC: a reset has init (which keeps its capabilities in
	 * the sandbox's user namespace) start a fresh IPC namespace. A program has no capability
	 * there, so the kernel answers it EPERM too. */
	{
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_NE, CLONE_NEWIPC);
		if (rule(ctx, eperm, "unshare", 1, &c, e) < 0)
			goto fail;
	}
	/* clone() with any namespace flag; clone3 hides its flags in memory BPF cannot read, so it
	 * answers ENOSYS and libc falls back to clone() */
	static const unsigned long ns_flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
						 CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};
	for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]);
		if (rule(ctx, eperm, "clone", 1, &c, e) < 0)
			goto fail;
	}
	if (rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, e) < 0)
		goto fail;
	/* AIO contexts count against fs.aio-max-nr, one count for the whole host: one program's
	 * io_setup(65536) left every other process on the host with EAGAIN. ENOSYS, as from a
	 * kernel without AIO, which libaio users and glibc's POSIX AIO (threads) handle. */
	if (rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "io_setup", 0, NULL, e) < 0)
		goto fail;
	/* socket families: unix, inet, inet6 and netlink only. Others are either not namespaced
	 * (vsock reaches the hypervisor and the VM's agents) or rarely used attack surface. */
	for (unsigned fam = 0; fam < 64; fam++) {
		if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 || fam == AF_NETLINK)
			continue;
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, fam);
		if (rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &c, e) < 0 ||
		    rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socketpair", 1, &c, e) < 0)
			goto fail;
	}
	{
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_GE, 64);
		if (rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &c, e) < 0)
			goto fail;
	}
	/* faking terminal input into another process's tty */
	static const unsigned long ioctls[] = {TIOCSTI, TIOCLINUX};
	for (size_t i = 0; i < 2; i++) {
		struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, ioctls[i]);
		if (rule(ctx, eperm, "ioctl", 1, &c, e) < 0)
			goto fail;
	}
	rc = export_bpf(ctx, out, e);
	seccomp_release(ctx);
	return rc;
fail:
	seccomp_release(ctx);
	return -1;
}

int pd_seccomp_compile_audit(pd_bpf *out, pd_err *e)
{
	memset(out, 0, sizeof *out);
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return pd_fail(e, ENOMEM, "seccomp_init");
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	/* a binary tree (see pd_seccomp_compile_base): loaded at every audited exec, 52-78 us as a
	 * chain, 26-35 us as a tree */
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0) {
		seccomp_release(ctx);
		return pd_fail(e, -rc, "seccomp attributes");
	}
	for (int i = 0; audited[i]; i++)
		if (rule(ctx, SCMP_ACT_NOTIFY, audited[i], 0, NULL, e) < 0) {
			seccomp_release(ctx);
			return -1;
		}
#ifdef __x86_64__
	for (size_t i = 0; i < sizeof audited_nr / sizeof audited_nr[0]; i++) {
		rc = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, audited_nr[i], 0, NULL);
		if (rc < 0 && rc != -EEXIST) {
			seccomp_release(ctx);
			return pd_fail(e, -rc, "seccomp rule for call %d", audited_nr[i]);
		}
	}
#endif
	rc = export_bpf(ctx, out, e);
	seccomp_release(ctx);
	return rc;
}

void pd_bpf_free(pd_bpf *b)
{
	free(b->insns);
	b->insns = NULL;
	b->len = 0;
}
