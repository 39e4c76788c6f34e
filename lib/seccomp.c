/* seccomp-bpf policies. libseccomp compiles each policy once, per context, into a BPF program kept
 * in memory; the per-sandbox path only hands that program to the kernel (no libseccomp, no malloc
 * in the child). Compiling both costs ~0.7 ms, a tenth of a `paddock exec` that makes one sandbox:
 * so each program is also kept in the run directory (root's, 0700) beside the exact inputs that
 * made it, and taken from there only when this build would give libseccomp the same inputs (the
 * policy below, recorded call by call, libseccomp's version and the architecture). Denied calls return EPERM, so a program sees an ordinary error; foreign ABIs (i386,
 * x32) kill the process, because a filter written for x86_64 numbers means nothing to them. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
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

/* One policy's build: every input given to libseccomp is also appended to rec, so that the same
 * function, run with no ctx, says what a compile would be given. */
typedef struct build {
	scmp_filter_ctx ctx; /* NULL: record only */
	char *rec;
	size_t len, cap;
	bool oom;
} build;

static void note(build *b, const void *data, size_t len)
{
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + len)
			cap *= 2;
		char *n = realloc(b->rec, cap);
		if (!n) {
			b->oom = true;
			return;
		}
		b->rec = n;
		b->cap = cap;
	}
	/* a rule without arguments notes (NULL, 0): memcpy from NULL is undefined even for 0 bytes
	 * (make asan's UBSan stopped every daemon here) */
	if (len)
		memcpy(b->rec + b->len, data, len);
	b->len += len;
}

static int attr(build *b, enum scmp_filter_attr a, uint32_t v)
{
	uint32_t r[3] = {0xa77, (uint32_t)a, v};
	note(b, r, sizeof r);
	return b->ctx ? seccomp_attr_set(b->ctx, a, v) : 0;
}

/* A rule by call number; exist_ok: a number the library already has a rule for is not an error */
static int rule_nr(build *b, uint32_t action, int nr, unsigned n, const struct scmp_arg_cmp *cmp, bool exist_ok,
		   pd_err *e)
{
	uint32_t r[4] = {0x2b1, action, (uint32_t)nr, n};
	note(b, r, sizeof r);
	note(b, cmp, n * sizeof *cmp);
	if (!b->ctx)
		return 0;
	int rc = seccomp_rule_add_array(b->ctx, action, nr, n, cmp);
	if (rc < 0 && !(exist_ok && rc == -EEXIST))
		return pd_fail(e, -rc, "seccomp rule for call %d", nr);
	return 0;
}

static int rule(build *b, uint32_t action, const char *name, unsigned n, const struct scmp_arg_cmp *cmp, pd_err *e)
{
	uint32_t r[3] = {0x2a1, action, n};
	note(b, r, sizeof r);
	note(b, name, strlen(name) + 1);
	note(b, cmp, n * sizeof *cmp);
	if (!b->ctx)
		return 0;
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* unknown on this architecture: nothing to deny */
	int rc = seccomp_rule_add_array(b->ctx, action, nr, n, cmp);
	if (rc < 0)
		return pd_fail(e, -rc, "seccomp rule for %s", name);
	return 0;
}

static int policy_base(build *b, pd_err *e)
{
	int rc = attr(b, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* the filter is loaded by the child itself, after no_new_privs */
	if (!rc)
		rc = attr(b, SCMP_FLTATR_CTL_NNP, 0);
	/* a binary tree of the call numbers, not a chain: the kernel runs the filter over every call
	 * number when it is loaded (to cache the ones it always allows), so a chain of ~80 compares
	 * cost 115-200 us at each sandbox's creation, the tree 60-85 us; the calls it still runs the
	 * filter for take a few compares instead of up to a chain's length */
	if (!rc)
		rc = attr(b, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0)
		return pd_fail(e, -rc, "seccomp attributes");
	uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	for (int i = 0; denied[i]; i++)
		if (rule(b, eperm, denied[i], 0, NULL, e) < 0)
			return -1;
	/* unshare, but for exactly CLONE_NEWIPC: a reset has init (which keeps its capabilities in
	 * the sandbox's user namespace) start a fresh IPC namespace. A program has no capability
	 * there, so the kernel answers it EPERM too. */
	{
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_NE, CLONE_NEWIPC);
		if (rule(b, eperm, "unshare", 1, &c, e) < 0)
			return -1;
	}
	/* clone() with any namespace flag; clone3 hides its flags in memory BPF cannot read, so it
	 * answers ENOSYS and libc falls back to clone() */
	static const unsigned long ns_flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
						 CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};
	for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]);
		if (rule(b, eperm, "clone", 1, &c, e) < 0)
			return -1;
	}
	if (rule(b, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, e) < 0)
		return -1;
	/* AIO contexts count against fs.aio-max-nr, one count for the whole host: one program's
	 * io_setup(65536) left every other process on the host with EAGAIN. ENOSYS, as from a
	 * kernel without AIO, which libaio users and glibc's POSIX AIO (threads) handle. */
	if (rule(b, SCMP_ACT_ERRNO(ENOSYS), "io_setup", 0, NULL, e) < 0)
		return -1;
	/* socket families: unix, inet, inet6 and netlink only. Others are either not namespaced
	 * (vsock reaches the hypervisor and the VM's agents) or rarely used attack surface. */
	for (unsigned fam = 0; fam < 64; fam++) {
		if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 || fam == AF_NETLINK)
			continue;
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, fam);
		if (rule(b, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &c, e) < 0 ||
		    rule(b, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socketpair", 1, &c, e) < 0)
			return -1;
	}
	{
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_GE, 64);
		if (rule(b, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &c, e) < 0)
			return -1;
	}
	/* faking terminal input into another process's tty */
	static const unsigned long ioctls[] = {TIOCSTI, TIOCLINUX};
	for (size_t i = 0; i < 2; i++) {
		struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, ioctls[i]);
		if (rule(b, eperm, "ioctl", 1, &c, e) < 0)
			return -1;
	}
	return 0;
}

static int policy_audit(build *b, pd_err *e)
{
	int rc = attr(b, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (!rc)
		rc = attr(b, SCMP_FLTATR_CTL_NNP, 0);
	/* a binary tree (see policy_base): loaded at every audited exec, 52-78 us as a
	 * chain, 26-35 us as a tree */
	if (!rc)
		rc = attr(b, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc < 0)
		return pd_fail(e, -rc, "seccomp attributes");
	for (int i = 0; audited[i]; i++)
		if (rule(b, SCMP_ACT_NOTIFY, audited[i], 0, NULL, e) < 0)
			return -1;
#ifdef __x86_64__
	for (size_t i = 0; i < sizeof audited_nr / sizeof audited_nr[0]; i++)
		if (rule_nr(b, SCMP_ACT_NOTIFY, audited_nr[i], 0, NULL, true, e) < 0)
			return -1;
#endif
	return 0;
}

/* ---- compile, or take what an identical compile left in the run directory ---- */

typedef int (*policy_fn)(build *b, pd_err *e);

/* The cache file: magic, the recording's length, the program's length, the recording, the program. */
#define CACHE_MAGIC 0x70646266u /* "pdbf" */

static void header(build *b, const char *name)
{
	const struct scmp_version *v = seccomp_version();
	uint32_t h[5] = {CACHE_MAGIC, v ? v->major : 0, v ? v->minor : 0, v ? v->micro : 0, seccomp_arch_native()};
	note(b, h, sizeof h);
	note(b, name, strlen(name) + 1);
	uint32_t def = SCMP_ACT_ALLOW;
	note(b, &def, sizeof def);
}

/* The program cached at path for exactly this recording, or -1. Only a regular file of ours that
 * nobody else may write is read: the program it holds becomes every sandbox's filter. */
static int cache_read(const char *path, const build *rec, pd_bpf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	struct stat st;
	uint32_t h[3];
	int rc = -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
	    pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || h[0] != CACHE_MAGIC || h[1] != rec->len || !h[2] ||
	    h[2] > BPF_MAXINSNS ||
	    (off_t)(sizeof h + h[1] + (size_t)h[2] * sizeof(struct sock_filter)) != st.st_size)
		goto out;
	char *buf = malloc(h[1]);
	struct sock_filter *insns = malloc((size_t)h[2] * sizeof *insns);
	if (buf && insns && pread(fd, buf, h[1], sizeof h) == (ssize_t)h[1] && !memcmp(buf, rec->rec, h[1]) &&
	    pread(fd, insns, (size_t)h[2] * sizeof *insns, (off_t)(sizeof h + h[1])) ==
		    (ssize_t)((size_t)h[2] * sizeof *insns)) {
		out->insns = insns;
		out->len = (unsigned short)h[2];
		insns = NULL;
		rc = 0;
	}
	free(buf);
	free(insns);
out:
	close(fd);
	return rc;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Written whole under a temporary name, then renamed: a reader sees the old file or the new one. */
static void cache_write(const char *path, const build *rec, const pd_bpf *b)
{
	char tmp[PD_PATH + 32];
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	uint32_t h[3] = {CACHE_MAGIC, (uint32_t)rec->len, b->len};
	size_t n = (size_t)b->len * sizeof *b->insns;
	bool ok = write_all(fd, h, sizeof h) == 0 && write_all(fd, rec->rec, rec->len) == 0 &&
		  write_all(fd, b->insns, n) == 0;
	if (close(fd) < 0 || !ok || rename(tmp, path) < 0)
		unlink(tmp);
}

int pd_seccomp_policy(pd_seccomp_which which, const char *cache_dir, pd_bpf *out, pd_err *e)
{
	memset(out, 0, sizeof *out);
	policy_fn f = which == PD_SECCOMP_AUDIT ? policy_audit : policy_base;
	const char *name = which == PD_SECCOMP_AUDIT ? "audit" : "base";
	build rec = {0};
	header(&rec, name);
	int rc = f(&rec, e);
	if (rc == 0 && rec.oom)
		rc = pd_fail(e, ENOMEM, "seccomp policy");
	char path[PD_PATH];
	snprintf(path, sizeof path, "%s/seccomp-%s.bpf", cache_dir ? cache_dir : "", name);
	if (rc == 0 && cache_dir && cache_read(path, &rec, out) == 0) {
		free(rec.rec);
		return 0;
	}
	build b = {0};
	if (rc == 0 && !(b.ctx = seccomp_init(SCMP_ACT_ALLOW)))
		rc = pd_fail(e, ENOMEM, "seccomp_init");
	if (rc == 0)
		rc = f(&b, e);
	if (rc == 0)
		rc = export_bpf(b.ctx, out, e);
	if (b.ctx)
		seccomp_release(b.ctx);
	free(b.rec);
	if (rc == 0 && cache_dir)
		cache_write(path, &rec, out);
	free(rec.rec);
	return rc;
}

int pd_seccomp_compile_base(pd_bpf *out, pd_err *e)
{
	return pd_seccomp_policy(PD_SECCOMP_BASE, NULL, out, e);
}

int pd_seccomp_compile_audit(pd_bpf *out, pd_err *e)
{
	return pd_seccomp_policy(PD_SECCOMP_AUDIT, NULL, out, e);
}

void pd_bpf_free(pd_bpf *b)
{
	free(b->insns);
	b->insns = NULL;
	b->len = 0;
}
