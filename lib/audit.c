/* Audit of file access and network egress through seccomp user notifications.
 *
 * The sandboxed process stops in the kernel at each open/exec/connect/send and at each call that
 * changes a file's name, content or metadata (unlink, rename, link, symlink, mkdir, mknod, chmod,
 * chown, truncate, xattrs); the host reads the path or address from its memory, resolves it as the
 * kernel will (auditpath.c), classifies the access by its mode (open flags: a read is not a
 * write) into the audit's categories, and lets the call continue unchanged
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE) or refuses it with EACCES when a deny rule matches. Why seccomp and not fanotify: one mechanism covers files and sockets,
 * works inside user namespaces, and sees the path as the program wrote it.
 *
 * A caveat the kernel documents: a path read here can be changed by another thread of the program
 * after we read it and before a CONTINUEd call reads it again. So the audit record of an allowed call
 * is evidence, not proof, and a deny rule is a tripwire, not a wall: material the program must not
 * read should not be mounted into its sandbox at all. */
#define _GNU_SOURCE
#include "audit.h"
#include "internal.h"

#include <arpa/inet.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif

/* Linux 6.6: the notifying thread hands its CPU to the supervisor and back (a synchronous
 * wake-up), instead of two ordinary wake-ups that each wait for the scheduler to pick the other
 * side on whichever CPU is free. On a loaded machine that wait is most of a notification's cost. */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

int pd_auditor_init(pd_auditor *a, int listener, const pd_audit_opts *opts, uint64_t t0_us, pd_err *e)
{
	memset(a, 0, sizeof *a);
	a->listener = listener;
	a->opts = opts;
	a->t0_us = t0_us;
	a->rootfd = -1;
	a->last_pid = -1;
	/* an older kernel answers EINVAL: the notifications work the same, only slower */
	a->sync_wake = ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == 0;
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
		return pd_fail(e, errno, "seccomp notification sizes");
	a->req_size = sz.seccomp_notif > sizeof(struct seccomp_notif) ? sz.seccomp_notif
								    : sizeof(struct seccomp_notif);
	a->resp_size = sz.seccomp_notif_resp > sizeof(struct seccomp_notif_resp)
			       ? sz.seccomp_notif_resp
			       : sizeof(struct seccomp_notif_resp);
	a->req = calloc(1, a->req_size);
	a->resp = calloc(1, a->resp_size);
	a->own = calloc(1, sizeof *a->own);
	a->names = a->own;
	if (!a->req || !a->resp || !a->own) {
		pd_auditor_close(a);
		return pd_fail(e, ENOMEM, "audit buffers");
	}
	return 0;
}

void pd_auditor_close(pd_auditor *a)
{
	if (a->listener >= 0)
		close(a->listener);
	a->listener = -1;
	if (a->rootfd >= 0)
		close(a->rootfd);
	a->rootfd = -1;
	free(a->req);
	free(a->resp);
	pd_audit_names_clear(a->own);
	if (a->own)
		a->own->binds = NULL; /* the sandbox's (pd_auditor_share) */
	free(a->own);
	a->own = a->names = NULL;
	a->req = a->resp = NULL;
}

void pd_auditor_share(pd_auditor *a, pd_audit_names *names, bool share)
{
	if (!names)
		return;
	/* the run's own table keeps no more than the sandbox's: nothing under its bind mounts, which
	 * the host or another sandbox binding the same directory can change during this run too
	 * (borrowed: the sandbox outlives its runs; pd_auditor_close does not free them) */
	a->own->binds = names->binds;
	/* one already off stays so to its sandbox's reset: this run keeps its own meanwhile */
	if (share && !atomic_load_explicit(&names->off, memory_order_acquire))
		a->names = names;
}

/* Reads a NUL-terminated string of up to len bytes at addr in pid, a page at a time, stopping at
 * the page that holds its NUL (a path is one read, not the two a full PATH_MAX read across a page
 * boundary takes) or at an unmapped page. Returns the bytes read (the NUL among them when found). */
static ssize_t peek_str(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		size_t page_left = 4096 - ((addr + got) & 4095);
		size_t want = len - got < page_left ? len - got : page_left;
		struct iovec l = {buf + got, want}, r = {(void *)(uintptr_t)(addr + got), want};
		ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0)
			break;
		bool nul = memchr(buf + got, 0, (size_t)n) != NULL;
		got += (size_t)n;
		if (nul)
			break;
	}
	return got ? (ssize_t)got : -1;
}

/* Reads up to len bytes at addr in pid; stops early at an unmapped page. */
static ssize_t peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		size_t page_left = 4096 - ((addr + got) & 4095);
		size_t want = len - got < page_left ? len - got : page_left;
		struct iovec l = {(char *)buf + got, want}, r = {(void *)(uintptr_t)(addr + got), want};
		ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got ? (ssize_t)got : -1;
}

static void format_addr(const struct sockaddr_storage *ss, socklen_t len, char *out, size_t size)
{
	char ip[INET6_ADDRSTRLEN];
	if (ss->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s = (const void *)ss;
		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof ip);
		snprintf(out, size, "%s:%u", ip, ntohs(s->sin_port));
	} else if (ss->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s = (const void *)ss;
		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof ip);
		snprintf(out, size, "[%s]:%u", ip, ntohs(s->sin6_port));
	} else if (ss->ss_family == AF_UNIX) {
		const struct sockaddr_un *s = (const void *)ss;
		size_t n = len > offsetof(struct sockaddr_un, sun_path)
				   ? len - offsetof(struct sockaddr_un, sun_path)
				   : 0;
		if (n > sizeof s->sun_path)
			n = sizeof s->sun_path;
		if (n && s->sun_path[0] == 0)
			snprintf(out, size, "unix:@%.*s", (int)(n - 1), s->sun_path + 1);
		else
			snprintf(out, size, "unix:%.*s", (int)strnlen(s->sun_path, n), s->sun_path);
	} else {
		snprintf(out, size, "family %u", ss->ss_family);
	}
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr);
	return ss->ss_family == AF_UNIX;
}


void pd_audit_record(pd_result *r, const pd_audit_opts *o, pd_audit_kind kind, const char *op, const char *mode,
		     const char *target, bool denied, pid_t pid, uint64_t t_us)
{
	if ((unsigned)kind < PD_AK_N)
		r->audit_kinds[kind]++;
	size_t cap = o && o->max_events ? o->max_events : 1024;
	if (r->audit_len >= cap) {
		r->audit_dropped++;
		return;
	}
	if (r->audit_len == r->audit_cap) {
		size_t n = r->audit_cap ? r->audit_cap * 2 : 16;
		if (n > cap)
			n = cap;
		pd_audit_event *p = realloc(r->audit, n * sizeof *p);
		if (!p) {
			r->audit_dropped++;
			return;
		}
		r->audit = p;
		r->audit_cap = n;
	}
	pd_audit_event *ev = &r->audit[r->audit_len++];
	memset(ev, 0, sizeof *ev);
	ev->t_us = t_us;
	snprintf(ev->kind, sizeof ev->kind, "%s", pd_audit_kind_name(kind));
	snprintf(ev->op, sizeof ev->op, "%s", op);
	snprintf(ev->mode, sizeof ev->mode, "%s", mode);
	snprintf(ev->target, sizeof ev->target, "%s", target);
	ev->denied = denied;
	ev->pid = pid;
}

/* ---- file calls ---- */

/* One path a call acts on: which arguments hold it and its dirfd (-1: AT_FDCWD implied; a path
 * argument of -1: the object is the fd itself), whether a final symlink is followed, and how
 * the object is used. */
typedef struct path_arg {
	int arg, dirfd_arg;
	bool follow;
	pd_audit_mode mode;
} path_arg;

typedef struct call {
	const char *op;
	int n;
	path_arg p[2];
	/* openat2's resolve: in_root, RESOLVE_IN_ROOT (the dirfd is the root of the lookup);
	 * unknown, how it resolves cannot be told (an open_how not read, or flags newer than ours) */
	bool in_root, unknown;
} call;

#define P(a, d, f, m) {a, d, f, m}
/* Decodes a file call: its operation and up to two paths. Returns false for a call that is not. */
static bool decode(long nr, const __u64 *arg, pid_t pid, call *c)
{
	memset(c, 0, sizeof *c);
	c->n = 1;
	switch (nr) {
	case SYS_open: case SYS_openat: case SYS_openat2: {
		int pa = nr == SYS_open ? 0 : 1;
		uint64_t flags = arg[pa + 1];
		if (nr == SYS_openat2) {
			/* struct open_how {flags, mode, resolve}: what the path reaches depends on
			 * resolve; the flags that only make the lookup fail more often change nothing */
			uint64_t how[3] = {0, 0, 0};
			if (!arg[2] || arg[3] < sizeof how || peek(pid, arg[2], how, sizeof how) != (ssize_t)sizeof how)
				c->unknown = true;
			flags = how[0];
			c->in_root = how[2] & RESOLVE_IN_ROOT;
			if (how[2] & ~(uint64_t)(RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS |
						 RESOLVE_BENEATH | RESOLVE_IN_ROOT | RESOLVE_CACHED))
				c->unknown = true;
		}
		pd_audit_mode m = (flags & O_ACCMODE) == O_WRONLY ? PD_AM_WRITE
				  : (flags & O_ACCMODE) == O_RDWR ? PD_AM_RW
								   : PD_AM_READ;
		if (m == PD_AM_READ && (flags & O_TRUNC))
			m = PD_AM_WRITE;
		if (flags & O_CREAT)
			m = PD_AM_CREATE; /* a write when the file exists: refined once the path is known */
		c->op = "open";
		c->p[0] = (path_arg)P(pa, nr == SYS_open ? -1 : 0, !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL)), m);
		return true;
	}
	case SYS_creat: c->op = "open"; c->p[0] = (path_arg)P(0, -1, true, PD_AM_WRITE); return true;
	case SYS_execve: c->op = "exec"; c->p[0] = (path_arg)P(0, -1, true, PD_AM_EXEC); return true;
	case SYS_execveat:
		c->op = "exec";
		c->p[0] = (path_arg)P(1, 0, !(arg[4] & AT_SYMLINK_NOFOLLOW), PD_AM_EXEC);
		return true;
	case SYS_unlink: case SYS_rmdir: c->op = "unlink"; c->p[0] = (path_arg)P(0, -1, false, PD_AM_DELETE); return true;
	case SYS_unlinkat: c->op = "unlink"; c->p[0] = (path_arg)P(1, 0, false, PD_AM_DELETE); return true;
	case SYS_rename:
		c->op = "rename", c->n = 2;
		c->p[0] = (path_arg)P(0, -1, false, PD_AM_DELETE);
		c->p[1] = (path_arg)P(1, -1, false, PD_AM_WRITE);
		return true;
	case SYS_renameat: case SYS_renameat2:
		c->op = "rename", c->n = 2;
		c->p[0] = (path_arg)P(1, 0, false, PD_AM_DELETE);
		c->p[1] = (path_arg)P(3, 2, false, PD_AM_WRITE);
		return true;
	case SYS_link:
		c->op = "link", c->n = 2;
		c->p[0] = (path_arg)P(0, -1, false, PD_AM_META);
		c->p[1] = (path_arg)P(1, -1, false, PD_AM_CREATE);
		return true;
	case SYS_linkat:
		c->op = "link", c->n = 2;
		c->p[0] = (path_arg)P(1, 0, arg[4] & AT_SYMLINK_FOLLOW, PD_AM_META);
		c->p[1] = (path_arg)P(3, 2, false, PD_AM_CREATE);
		return true;
	/* a link is made, and where it leads is reached for: judged as a read, from the cwd (the
	 * kernel resolves a relative target from the link's directory when it is used; the cwd is
	 * that directory for the usual "ln -s target name") */
	case SYS_symlink:
		c->op = "symlink", c->n = 2;
		c->p[0] = (path_arg)P(1, -1, false, PD_AM_CREATE);
		c->p[1] = (path_arg)P(0, -1, false, PD_AM_META);
		return true;
	case SYS_symlinkat:
		c->op = "symlink", c->n = 2;
		c->p[0] = (path_arg)P(2, 1, false, PD_AM_CREATE);
		c->p[1] = (path_arg)P(0, -1, false, PD_AM_META);
		return true;
	case SYS_mkdir: c->op = "mkdir"; c->p[0] = (path_arg)P(0, -1, false, PD_AM_CREATE); return true;
	case SYS_mkdirat: c->op = "mkdir"; c->p[0] = (path_arg)P(1, 0, false, PD_AM_CREATE); return true;
	case SYS_mknod: c->op = "mknod"; c->p[0] = (path_arg)P(0, -1, false, PD_AM_CREATE); return true;
	case SYS_mknodat: c->op = "mknod"; c->p[0] = (path_arg)P(1, 0, false, PD_AM_CREATE); return true;
	case SYS_chmod: c->op = "chmod"; c->p[0] = (path_arg)P(0, -1, true, PD_AM_META); return true;
	case SYS_fchmodat: c->op = "chmod"; c->p[0] = (path_arg)P(1, 0, true, PD_AM_META); return true;
	case __NR_fchmodat2:
		c->op = "chmod";
		c->p[0] = (path_arg)P(1, 0, !(arg[3] & AT_SYMLINK_NOFOLLOW), PD_AM_META);
		return true;
	case SYS_fchmod: c->op = "chmod"; c->p[0] = (path_arg)P(-1, 0, true, PD_AM_META); return true;
	case SYS_chown: c->op = "chown"; c->p[0] = (path_arg)P(0, -1, true, PD_AM_META); return true;
	case SYS_lchown: c->op = "chown"; c->p[0] = (path_arg)P(0, -1, false, PD_AM_META); return true;
	case SYS_fchownat:
		c->op = "chown";
		c->p[0] = (path_arg)P(1, 0, !(arg[4] & AT_SYMLINK_NOFOLLOW), PD_AM_META);
		return true;
	case SYS_fchown: c->op = "chown"; c->p[0] = (path_arg)P(-1, 0, true, PD_AM_META); return true;
	case SYS_truncate: c->op = "truncate"; c->p[0] = (path_arg)P(0, -1, true, PD_AM_WRITE); return true;
	case SYS_ftruncate: c->op = "truncate"; c->p[0] = (path_arg)P(-1, 0, true, PD_AM_WRITE); return true;
	case SYS_setxattr: case SYS_removexattr:
		c->op = "xattr"; c->p[0] = (path_arg)P(0, -1, true, PD_AM_META); return true;
	case SYS_lsetxattr: case SYS_lremovexattr:
		c->op = "xattr"; c->p[0] = (path_arg)P(0, -1, false, PD_AM_META); return true;
	case SYS_fsetxattr: case SYS_fremovexattr:
		c->op = "xattr"; c->p[0] = (path_arg)P(-1, 0, true, PD_AM_META); return true;
	case __NR_setxattrat: case __NR_removexattrat:
		c->op = "xattr";
		c->p[0] = (path_arg)P(1, 0, !(arg[2] & AT_SYMLINK_NOFOLLOW), PD_AM_META);
		return true;
	default: return false;
	}
}
#undef P

/* The caller's tgid and tid in the sandbox's pid namespace (the last of NStgid and NSpid). */
static void ns_ids(pd_auditor *a, pid_t pid)
{
	if (a->last_pid == pid)
		return;
	a->last_pid = pid;
	a->last_tgid[0] = a->last_tid[0] = 0;
	char path[64], buf[2048];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (pd_read_file(path, buf, sizeof buf) < 0)
		return;
	static const char *const keys[2] = {"\nNStgid:", "\nNSpid:"};
	char *out[2] = {a->last_tgid, a->last_tid};
	for (int i = 0; i < 2; i++) {
		char *p = strstr(buf, keys[i]);
		if (!p)
			continue;
		p += strlen(keys[i]);
		char *eol = strchr(p, '\n');
		if (eol)
			*eol = 0;
		char *last = strrchr(p, '\t');
		last = last ? last + 1 : p;
		while (*last == ' ')
			last++;
		snprintf(out[i], 16, "%s", last);
		if (eol)
			*eol = '\n';
	}
}

/* The directory a path starts from, as the sandbox names it: the caller's cwd or its dirfd. */
static bool base_dir(pid_t pid, int dirfd, char *base, size_t size)
{
	char link[64];
	if (dirfd == AT_FDCWD)
		snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
	else
		snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)pid, dirfd);
	ssize_t n = readlink(link, base, size - 1);
	if (n <= 0 || (size_t)n >= size - 1)
		return false;
	base[n] = 0;
	if (n > 10 && !strcmp(base + n - 10, " (deleted)"))
		base[n - 10] = 0;
	return true;
}

/* The errno of the first injected fault that covers this call, or 0. */
static int fault_for(const pd_audit_opts *o, const char *op, const char *target, bool is_path)
{
	for (size_t i = 0; i < o->nfaults; i++) {
		const pd_fault *f = &o->faults[i];
		if (f->op && strcmp(f->op, op))
			continue;
		if (f->path) {
			const char *const one[] = {f->path, NULL};
			if (is_path ? !pd_path_under(target, one) : strncmp(target, f->path, strlen(f->path)))
				continue;
		}
		if (f->hits)
			(*f->hits)++;
		return f->err;
	}
	return 0;
}

/* The interpreter the kernel opens by itself when path (resolved, absolute in the sandbox) is
 * exec'd: a script's "#!" one (its first word, within the 256 bytes the kernel reads), or an ELF's
 * PT_INTERP (ELF32 too: i386 and x32 programs load one as well). No call of the program's names
 * it, so the exec stop must. via (may be NULL or ""): the /proc magic link the exec reached its
 * file through, rootfd-relative (pd_audit_view.via): that file is read, not its name, which may be
 * no file (a memfd's) or another one (a file unlinked, its name taken since). Returns 1 with it in
 * out, 0 when there is none or the file cannot be read (then the kernel's exec fails too, or runs
 * what this saw). */
static int exec_interp(int rootfd, const char *path, const char *via, char *out, size_t size)
{
	int fd;
	if (via && via[0]) {
		/* a walk that follows the magic link: the host may (the caller is its sandbox's) */
		fd = openat(rootfd, via, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	} else {
		struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
				       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
		fd = (int)syscall(SYS_openat2, rootfd, path[1] ? path + 1 : ".", &how, sizeof how);
	}
	if (fd < 0)
		return 0;
	int found = pd_audit_interp_fd(fd, out, size);
	close(fd);
	return found;
}

/* An exec judged on its own may still run judge material as its interpreter: each one the kernel
 * would open is judged as an exec of its own, and refuses the whole exec when refused. The kernel
 * hands a file to its loaders up to 6 times (fs/exec.c, exec_binprm: depths 0-5), so a chain of 5
 * scripts ends in a file whose own interpreter (an ELF's PT_INTERP) is loaded too: 6 levels.
 * via: as for exec_interp, for the exec'd file itself. */
static int exec_chain(pd_auditor *a, pd_result *r, pd_audit_view *v, pd_audit_mode m, int got, const char *target,
		      const char *via, pid_t pid)
{
	if (m != PD_AM_EXEC || got <= 0 || a->rootfd < 0)
		return 0;
	char cur[PD_AUDIT_MAX], interp[PD_AUDIT_READ], cwd[PD_AUDIT_READ], cur_via[PD_AUDIT_VIA];
	snprintf(cur, sizeof cur, "%s", target);
	snprintf(cur_via, sizeof cur_via, "%s", via ? via : "");
	bool have_cwd = base_dir(pid, AT_FDCWD, cwd, sizeof cwd);
	for (int level = 0; level < 6 && exec_interp(a->rootfd, cur, cur_via, interp, sizeof interp) > 0; level++) {
		char next[PD_AUDIT_MAX];
		/* an interpreter named through a magic link ("#!/dev/fd/3"): read through it too */
		v->via = cur_via;
		int ig = interp[0] == '/' || have_cwd ? pd_audit_resolve(v, have_cwd ? cwd : "/", interp, true, next, sizeof next)
						      : -1;
		bool deny = false;
		int kind;
		if (ig <= 0) {
			snprintf(next, sizeof next, "%s", interp);
			kind = PD_AK_READ_OUTSIDE;
			deny = (a->opts->deny && a->opts->deny[0]) || (a->opts->judge && a->opts->judge[0]);
		} else {
			kind = pd_audit_classify(a->opts, next, PD_AM_EXEC, v->self, &deny);
		}
		if (kind >= 0) {
			r->audit_files++;
			if (deny)
				r->audit_denied++;
			pd_audit_record(r, a->opts, (pd_audit_kind)kind, "exec", pd_audit_mode_name(PD_AM_EXEC), next, deny,
					pid, pd_now_us() - a->t0_us);
		}
		if (deny)
			return EACCES;
		if (ig <= 0)
			return 0;
		snprintf(cur, sizeof cur, "%s", next);
	}
	return 0;
}

/* Judges one path of a file call. Returns the errno the call is to fail with (EACCES when it is
 * refused, an injected fault's), or 0 to let it run. */
static int judge_file(pd_auditor *a, pd_result *r, const call *c, const path_arg *pa, const __u64 *arg,
		       pid_t pid)
{
	const pd_audit_opts *o = a->opts;
	/* a name removed, renamed or linked may come back as a link (even while this call is judged:
	 * another thread's may be answered before the kernel makes this one): from here on what
	 * resolutions found is neither used nor kept, in this run, and in the sandbox's to its reset */
	if (!strcmp(c->op, "unlink") || !strcmp(c->op, "rename") || !strcmp(c->op, "link") ||
	    !strcmp(c->op, "symlink")) {
		pd_audit_names_off(a->names);
		pd_audit_names_off(a->own);
	}
	char via[PD_AUDIT_VIA] = "";
	pd_audit_view v = {.rootfd = a->rootfd, .names = a->names, .via = pa->mode == PD_AM_EXEC ? via : NULL};
	ns_ids(a, pid);
	snprintf(v.self, sizeof v.self, "%s", a->last_tgid);
	snprintf(v.tid, sizeof v.tid, "%s", a->last_tid);
	char target[PD_AUDIT_MAX] = "", base[PD_AUDIT_READ];
	int dirfd = pa->dirfd_arg < 0 ? AT_FDCWD : (int)arg[pa->dirfd_arg];
	int got;
	bool any_deny = (o->deny && o->deny[0]) || (o->judge && o->judge[0]);
	if (pa->arg < 0) {
		/* the fd itself */
		got = base_dir(pid, dirfd, base, sizeof base) ? 1 : -1;
		if (got > 0)
			got = pd_audit_resolve(&v, "/", base, true, target, sizeof target);
	} else {
		char raw[PD_AUDIT_READ];
		ssize_t n = arg[pa->arg] ? peek_str(pid, arg[pa->arg], raw, sizeof raw) : -1;
		const char *nul = n > 0 ? memchr(raw, 0, (size_t)n) : NULL;
		if (!nul) {
			/* unreadable, or no NUL within PATH_MAX (then the call fails too) */
			pd_audit_record(r, o, PD_AK_READ_OUTSIDE, c->op, pd_audit_mode_name(pa->mode),
					"(unreadable path)", any_deny, pid, pd_now_us() - a->t0_us);
			if (o->faults_only)
				return 0;
			r->audit_files++;
			return any_deny ? EACCES : 0;
		}
		bool have_base = (raw[0] == '/' && !c->in_root) || base_dir(pid, dirfd, base, sizeof base);
		if (c->unknown)
			got = -1;
		else if (c->in_root) /* the dirfd (or cwd) is the root: absolute paths start there */
			got = have_base ? pd_audit_resolve_in(&v, base, base, raw, pa->follow, target, sizeof target) : -1;
		else if (!raw[0] && pa->dirfd_arg >= 0 && have_base) { /* AT_EMPTY_PATH: the dirfd's object */
			got = pd_audit_resolve(&v, "/", base, pa->follow, target, sizeof target);
			if (v.via && v.self[0]) /* that object is read through the fd, not its name */
				snprintf(via, sizeof via, "proc/%s/task/%s/fd/%d", v.self, v.tid[0] ? v.tid : v.self, dirfd);
		}
		else
			got = have_base ? pd_audit_resolve(&v, base, raw, pa->follow, target, sizeof target) : -1;
		if (got < 0)
			snprintf(target, sizeof target, "%s", raw);
	}
	if (got == 0)
		return 0; /* a pipe, a socket: no path rule concerns it */
	if (got > 0 && o->nfaults) {
		int ferr = fault_for(o, c->op, target, true);
		if (ferr)
			return ferr;
	}
	if (o->faults_only)
		return 0;
	bool deny = false;
	pd_audit_mode m = pa->mode;
	if (got > 0 && m == PD_AM_CREATE && a->rootfd >= 0) {
		struct stat st;
		bool exists = fstatat(a->rootfd, target[1] ? target + 1 : ".", &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (exists && !strcmp(c->op, "open"))
			m = PD_AM_WRITE; /* O_CREAT on a file that exists: opened for writing */
		else if (exists)
			return 0;     /* mkdir, mknod, symlink, link over a name taken: EEXIST, no change */
	}
	int kind;
	if (got < 0) {
		/* cannot tell what the kernel acts on: refused where a deny list is set, and recorded */
		kind = PD_AK_READ_OUTSIDE;
		deny = any_deny;
	} else {
		kind = !strcmp(c->op, "rename") ? pd_audit_classify_move(o, target, &deny) : -1;
		if (kind < 0)
			kind = pd_audit_classify(o, target, m, v.self, &deny);
	}
	if (kind < 0) /* nothing to say of the file itself; its interpreter may be another matter */
		return exec_chain(a, r, &v, m, got, target, via, pid);
	r->audit_files++;
	if (deny)
		r->audit_denied++;
	pd_audit_record(r, o, (pd_audit_kind)kind, c->op, pd_audit_mode_name(m), target, deny, pid,
			pd_now_us() - a->t0_us);
	return deny ? EACCES : exec_chain(a, r, &v, m, got, target, via, pid);
}

/* ---- sockets ---- */

/* Whether the caller's socket fd is a datagram one: a UDP connect sends nothing (the C library's
 * address sorting connects one to each address it returns). Read from a copy of the fd. */
static bool sock_is_dgram(pid_t pid, int fd)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		pfd = (int)syscall(SYS_pidfd_open, pid, O_EXCL /* PIDFD_THREAD: pid is a thread's */);
	if (pfd < 0)
		return false;
	int s = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
	close(pfd);
	if (s < 0)
		return false;
	int type = 0;
	socklen_t len = sizeof type;
	bool dgram = getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_DGRAM;
	close(s);
	return dgram;
}

/* Whether the caller's network namespace has a socket bound to port (TCP listening, or UDP). */
static bool has_listener(pid_t pid, unsigned port)
{
	static const char *const tables[] = {"tcp", "tcp6", "udp", "udp6"};
	char path[64], line[512];
	for (int t = 0; t < 4; t++) {
		snprintf(path, sizeof path, "/proc/%d/net/%s", (int)pid, tables[t]);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		bool found = false;
		while (!found && fgets(line, sizeof line, f)) {
			char local[64];
			unsigned st;
			if (sscanf(line, " %*u: %63s %*s %x", local, &st) != 2)
				continue;
			char *colon = strrchr(local, ':');
			if (colon && strtoul(colon + 1, NULL, 16) == port && (t >= 2 || st == 0x0A))
				found = true;
		}
		fclose(f);
		if (found)
			return true;
	}
	return false;
}

static bool egress_allowed(const pd_audit_opts *o, const char *addr)
{
	const char *colon = strrchr(addr, ':');
	size_t alen = colon ? (size_t)(colon - addr) : strlen(addr);
	for (int i = 0; o->egress_allow && o->egress_allow[i]; i++) {
		const char *e = o->egress_allow[i];
		const char *ec = strrchr(e, ':');
		if (ec && ec[1] && (ec == e || (e[0] == '[' ? ec[-1] == ']' : !strchr(e, ']')))) {
			/* ADDR:PORT or :PORT */
			if (!colon || strcmp(ec + 1, colon + 1))
				continue;
			if (ec == e || ((size_t)(ec - e) == alen && !strncmp(e, addr, alen)))
				return true;
		} else if (strlen(e) == alen && !strncmp(e, addr, alen)) {
			return true;
		}
	}
	return false;
}

/* unix socket paths the C library tries by itself (user and host lookups through nscd) */
static const char *const libc_sockets[] = {"/var/run/nscd/socket", "/run/nscd/socket", NULL};

/* Judges a connect or a datagram's destination. Returns the errno the call is to fail with (EACCES
 * when it is refused, an injected fault's), or 0 to let it run. */
static int judge_net(pd_auditor *a, pd_result *r, const char *op, const struct sockaddr_storage *ss,
		     socklen_t len, pid_t pid, int sockfd)
{
	const pd_audit_opts *o = a->opts;
	char target[PD_PATH];
	format_addr(ss, len, target, sizeof target);
	if (o->nfaults) {
		int ferr = fault_for(o, op, target, false);
		if (ferr)
			return ferr;
	}
	if (o->faults_only)
		return 0;
	int kind = -1;
	bool deny = false;
	const char *mode = "out";
	if (ss->ss_family == AF_UNIX) {
		const struct sockaddr_un *s = (const void *)ss;
		bool abstract = len > offsetof(struct sockaddr_un, sun_path) && s->sun_path[0] == 0;
		if (abstract) {
			/* abstract names are per network namespace: the sandbox's own, unless it has the
			 * host's */
			if (a->net == PD_NET_HOST)
				kind = PD_AK_HARNESS_PROBE;
		} else {
			char raw[sizeof s->sun_path + 1], base[PD_AUDIT_READ], res[PD_AUDIT_MAX];
			size_t n = len > offsetof(struct sockaddr_un, sun_path)
					   ? len - offsetof(struct sockaddr_un, sun_path)
					   : 0;
			if (n > sizeof s->sun_path)
				n = sizeof s->sun_path;
			memcpy(raw, s->sun_path, n);
			raw[n] = 0;
			pd_audit_view v = {.rootfd = a->rootfd};
			ns_ids(a, pid);
			snprintf(v.self, sizeof v.self, "%s", a->last_tgid);
			bool hb = raw[0] == '/' || base_dir(pid, AT_FDCWD, base, sizeof base);
			if (hb && pd_audit_resolve(&v, base, raw, true, res, sizeof res) > 0) {
				snprintf(target, sizeof target, "unix:%s", res);
				if (pd_audit_protected(o, res) && !pd_path_under(res, libc_sockets))
					kind = PD_AK_HARNESS_PROBE;
			} else {
				kind = PD_AK_HARNESS_PROBE;
			}
		}
	} else if (ss->ss_family == AF_INET || ss->ss_family == AF_INET6) {
		unsigned port = ss->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)(const void *)ss)->sin_port)
							 : ntohs(((const struct sockaddr_in6 *)(const void *)ss)->sin6_port);
		if (is_loopback(ss)) {
			/* loopback is the sandbox's own: a port nobody in it bound is a scan; with the
			 * host's network, every loopback port is someone else's */
			if (egress_allowed(o, target) || (a->net != PD_NET_HOST && sockfd >= 0 && sock_is_dgram(pid, sockfd)))
				kind = -1;
			else if (a->net == PD_NET_HOST || !has_listener(pid, port))
				kind = PD_AK_HARNESS_PROBE;
		} else {
			kind = PD_AK_EGRESS;
			bool allowed = o->egress == PD_EGRESS_LOG ? !o->deny_net
				       : o->egress == PD_EGRESS_ALLOWLIST ? egress_allowed(o, target)
									  : false;
			mode = allowed ? "allowed" : "out";
			if (allowed)
				r->audit_egress_allowed++;
			deny = !allowed && (o->egress != PD_EGRESS_LOG || o->deny_net);
		}
	}
	if (kind < 0)
		return 0;
	r->audit_net++;
	if (deny)
		r->audit_denied++;
	pd_audit_record(r, o, (pd_audit_kind)kind, op, mode, target, deny, pid, pd_now_us() - a->t0_us);
	return deny ? EACCES : 0;
}

int pd_auditor_handle(pd_auditor *a, pd_result *r)
{
	struct seccomp_notif *req = a->req;
	struct seccomp_notif_resp *resp = a->resp;
	memset(req, 0, a->req_size);
	if (ioctl(a->listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
		return errno == EINTR || errno == ENOENT ? 0 : -1;
	memset(resp, 0, a->resp_size);
	resp->id = req->id;
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;

	pid_t pid = (pid_t)req->pid;
	long nr = req->data.nr;
	r->audit_notified++;
	const __u64 *arg = req->data.args;
	if (a->rootfd < 0) {
		/* every process of the sandbox has its root (chroot and pivot_root are denied) */
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/root", (int)pid);
		a->rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	/* recorded even when the caller dies before the answer: the attempt is the evidence */
	int err = 0;
	call c;
	if (decode(nr, arg, pid, &c)) {
		/* every path is judged (and recorded); the first refusal's errno answers */
		for (int i = 0; i < c.n; i++) {
			int e1 = judge_file(a, r, &c, &c.p[i], arg, pid);
			if (!err)
				err = e1;
		}
	} else {
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof ss);
		uint64_t addr = 0, len = 0;
		const char *op = NULL;
		if (nr == SYS_connect) {
			op = "connect", addr = arg[1], len = arg[2];
		} else if (nr == SYS_sendto) {
			op = "sendto", addr = arg[4], len = arg[5];
		} else if (nr == SYS_sendmsg || nr == SYS_sendmmsg) {
			op = nr == SYS_sendmsg ? "sendmsg" : "sendmmsg";
			struct msghdr mh;
			if (arg[1] && peek(pid, arg[1], &mh, sizeof mh) == (ssize_t)sizeof mh)
				addr = (uint64_t)(uintptr_t)mh.msg_name, len = mh.msg_namelen;
		}
		if (op && addr && len) {
			if (len > sizeof ss)
				len = sizeof ss;
			if (peek(pid, addr, &ss, (size_t)len) > 0)
				err = judge_net(a, r, op, &ss, (socklen_t)len, pid,
						nr == SYS_connect ? (int)arg[0] : -1);
		}
	}
	if (err) {
		resp->flags = 0;
		resp->error = -err;
	}
	if (ioctl(a->listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 && errno != ENOENT)
		return errno == EINTR ? 0 : -1;
	return 0;
}
