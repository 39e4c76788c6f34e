/* The sandbox side: runs in the process clone3() made, which is root of a fresh user namespace and
 * pid 1 of a fresh pid namespace. It builds the root filesystem and pivots into it (rootfs.c),
 * then serves as the sandbox's init: it starts programs on request, reaps every zombie, and
 * reports the exit of each program's main process; it answers the host's file operations
 * (resolved inside the sandbox's root) and does a reset's first half (kill, reap, rewind the pids).
 * When the host side goes away (its socket closes) init exits, and the kernel kills everything
 * left in the pid namespace.
 *
 * The parent may be multi-threaded, so this code runs in a copy of a process whose other threads'
 * locks may be held: it uses no malloc and no stdio, only syscalls and stack or static buffers. */
#define _GNU_SOURCE
#include "child.h"
#include "initstate.h"
#include "safepath.h"
#include "ucounts.h"

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
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

/* A report to init through the program's report pipe; nothing to do if it fails. */
static void report(int fd, const void *m, size_t len)
{
	ssize_t n = write(fd, m, len);
	(void)n;
}

/* ---- running a program ------------------------------------------------------------------------ */

static char g_buf[PD_EXEC_MSG_MAX + sizeof(struct msg_exec) + 64];
/* Where the exec being started reports (msg_exec.has_report): its own socket, so that several
 * execs of the sandbox can run at once, each heard by its host side alone; else init's socket. */
static int g_rep = -1;
static char *g_argv[PD_MAX_ARGS + 1], *g_envp[PD_MAX_ARGS + 1];

/* Once, in init before READY, what every program needs and init itself does not: an empty
 * capability bounding set (init keeps its effective capabilities: it never executes anything)
 * and default signal dispositions (clone3 copied the host process's handlers). Programs inherit
 * both, so their per-exec path skips ~130 system calls. */
static void prepare_spawning(void)
{
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			pd_ch_die("drop bounding capability", errno);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
}

static void drop_privileges(uint32_t uid, uint32_t gid)
{
	/* secure bits first: a later execve by uid 0 must not regain capabilities */
	pd_ch_check(prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
					       SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
					       SECBIT_NO_CAP_AMBIENT_RAISE |
					       SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED),
	      "securebits");
	/* the bounding set is already empty: init dropped it once (prepare_spawning) */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	pd_ch_check(pd_ch_setgroups_none(), "setgroups");
	pd_ch_check(pd_ch_setresgid(gid), "setresgid");
	pd_ch_check(pd_ch_setresuid(uid), "setresuid");
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	pd_ch_check((int)syscall(SYS_capset, &h, d), "capset");
	pd_ch_check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");
}

static int load_filter(const pd_bpf *b, unsigned flags)
{
	struct sock_fprog prog = {.len = b->len, .filter = b->insns};
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

static void set_rlimit(int res, uint64_t v)
{
	if (!v)
		return;
	struct rlimit r = {v, v};
	pd_ch_check(setrlimit(res, &r), "setrlimit");
}

/* execvp with the PATH of the program's environment, not init's (libc's execvpe reads the
 * caller's own PATH). Returns only on failure, with errno as execvp would leave it. */
/* skip: an audited program's execve stops at the audit's listener, a round trip to the host each.
 * A PATH search tries every directory before the one that has the program (python3: four execs,
 * three of them of names that do not exist), so under audit a candidate that stat finds missing is
 * passed over without its execve: the kernel would answer ENOENT or ENOTDIR alike, and the one
 * execve made is the program's, judged as before. This is the sandbox's own code, before the
 * program exists: nothing the program does is hidden by it. */
static void exec_in_path(bool skip_missing)
{
	const char *name = g_argv[0];
	if (!*name) {
		errno = ENOENT;
		return;
	}
	if (strchr(name, '/')) {
		execve(name, g_argv, g_envp);
		return;
	}
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	for (int i = 0; g_envp[i]; i++)
		if (!strncmp(g_envp[i], "PATH=", 5))
			path = g_envp[i] + 5;
	int err = ENOENT;
	for (const char *p = path;; p++) {
		const char *q = p;
		while (*q && *q != ':')
			q++;
		char full[PD_PATH];
		size_t dl = (size_t)(q - p);
		if (dl + strlen(name) + 2 < sizeof full) {
			memcpy(full, p, dl);
			size_t n = dl;
			if (n == 0)
				full[n++] = '.';
			full[n++] = '/';
			pd_ch_cat(full + n, sizeof full - n, name, NULL, NULL);
			struct stat st;
			if (skip_missing && stat(full, &st) < 0 && (errno == ENOENT || errno == ENOTDIR))
				goto next;
			execve(full, g_argv, g_envp);
			if (errno == EACCES)
				err = EACCES; /* found but not executable: report that over ENOENT */
			else if (errno != ENOENT && errno != ENOTDIR)
				return;
		}
	next:
		if (!*q)
			break;
		p = q;
	}
	errno = err;
}

/* In the forked program process: becomes the program. Reports failures through errfd. */
static __attribute__((noreturn)) void become_program(const child_cfg *c, const struct msg_exec *x,
							const char *cwd, int *fds, int nfds, int errfd)
{
	/* dispositions are init's, all default since its setup (prepare_spawning) */
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	setsid();
	int in = x->has_stdin ? fds[0] : open("/dev/null", O_RDONLY | O_CLOEXEC);
	int out = fds[x->has_stdin ? 1 : 0], err = fds[x->has_stdin ? 2 : 1];
	/* move everything above 2 first so the dup2s cannot clobber each other */
	int hi_in = fcntl(in, F_DUPFD_CLOEXEC, 10), hi_out = fcntl(out, F_DUPFD_CLOEXEC, 10),
	    hi_err = fcntl(err, F_DUPFD_CLOEXEC, 10);
	if (hi_in < 0 || hi_out < 0 || hi_err < 0 || dup2(hi_in, 0) < 0 || dup2(hi_out, 1) < 0 ||
	    dup2(hi_err, 2) < 0)
		goto fail_errno;
	set_rlimit(RLIMIT_CORE, 0);
	{
		struct rlimit r0 = {0, 0};
		setrlimit(RLIMIT_CORE, &r0);
	}
	set_rlimit(RLIMIT_CPU, x->rl_cpu_s);
	set_rlimit(RLIMIT_NOFILE, x->rl_nofile);
	set_rlimit(RLIMIT_FSIZE, x->rl_fsize);
	set_rlimit(RLIMIT_STACK, x->rl_stack);
	set_rlimit(RLIMIT_DATA, x->rl_data);
	set_rlimit(RLIMIT_NPROC, x->rl_nproc);
	if ((errno = pd_ucounts_program_rlimits()) != 0)
		goto fail_errno;
	/* The OOM killer takes the highest score: the program, before init (a copy of the host
	 * process, whose shared pages count as its own, so by size alone it could be the one a
	 * program over its memory limit gets killed instead of) and before the daemon in a
	 * host-wide shortage. Raising needs no privilege, but /proc/self is ours only while our
	 * memory is dumpable, and it is init's (vfork) until the execve: dumpable for these three
	 * calls. (Init's own /proc files are then writable by its uid too: the reset checks that
	 * init's score is still what the host set.) */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	ssize_t oomw = oom >= 0 ? write(oom, "1000", 4) : -1;
	int oom_err = errno;
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (oom >= 0)
		close(oom);
	if (oomw != 4) {
		errno = oom_err;
		goto fail_errno;
	}
	if (chdir(cwd) < 0) {
		int e = errno;
		struct msg_error m = {MSG_EXEC_FAILED, e, "chdir to the working directory"};
		report(errfd, &m, sizeof m);
		_exit(127);
	}
	/* while still root in the sandbox's namespace (it may open every directory it names; after
	 * no_new_privs it would need to be), and before any file of the program's is opened */
	int ll = x->no_landlock ? 0 : pd_ch_landlock(c, x->has_mq ? fds[nfds - 1] : -1);
	if (ll < 0) {
		struct msg_error m = {MSG_EXEC_FAILED, -ll, "apply the Landlock ruleset"};
		report(errfd, &m, sizeof m);
		_exit(127);
	}
	drop_privileges(x->uid, x->gid);
	int keep = errfd;
	if (x->audit) {
		int l = load_filter(c->bpf_audit, SECCOMP_FILTER_FLAG_NEW_LISTENER);
		if (l < 0)
			goto fail_errno;
		/* Tell the host which fd to take, on init's socket ourselves: init lent us its
		 * memory (vfork) and waits until our execve, which waits in the kernel until the host
		 * answers it. write, not send: send is a call the filter just loaded stops. The fd is
		 * CLOEXEC, so the program never holds it. */
		struct msg_started m = {MSG_STARTED, getpid(), l};
		if (write(g_rep, &m, sizeof m) != (ssize_t)sizeof m)
			goto fail_errno;
		keep = l;
	}
	/* only 0, 1, 2 (and the CLOEXEC report pipe and listener) cross into the program's execve */
	int lo = errfd < keep ? errfd : keep, hi = errfd < keep ? keep : errfd;
	if (lo > 3)
		syscall(SYS_close_range, 3, lo - 1, 0);
	if (hi > lo + 1)
		syscall(SYS_close_range, lo + 1, hi - 1, 0);
	syscall(SYS_close_range, hi + 1, ~0U, 0);
	/* the base filter is already ours: init loaded it once, and filters are inherited */
	exec_in_path(x->audit);
fail_errno:;
	struct msg_error m = {MSG_EXEC_FAILED, errno, ""};
	pd_ch_cat(m.what, sizeof m.what, "execute ", g_argv[0] ? g_argv[0] : "(null)", NULL);
	report(errfd, &m, sizeof m);
	_exit(127);
}

/* A request that never became a process still gets an exit report, so the host never waits. */
static pid_t refuse(int err, const char *what)
{
	struct msg_error m;
	memset(&m, 0, sizeof m);
	m.type = MSG_EXEC_FAILED;
	m.err = err;
	pd_ch_cat(m.what, sizeof m.what, what, NULL, NULL);
	send(g_rep, &m, sizeof m, MSG_NOSIGNAL);
	struct msg_exited x = {MSG_EXITED, -1, 127 << 8};
	send(g_rep, &x, sizeof x, MSG_NOSIGNAL);
	return -1;
}

struct spawn {
	const child_cfg *c;
	const struct msg_exec *x;
	const char *cwd;
	int *fds;
	int nfds;
	int errfd;
};

static char g_stack[128 * 1024] __attribute__((aligned(16)));

static int spawn_entry(void *arg)
{
	struct spawn *sp = arg;
	become_program(sp->c, sp->x, sp->cwd, sp->fds, sp->nfds, sp->errfd);
}

/* *rep_fd: the exec's report socket, taken from fds (the caller closes it once the program's end is
 * reported), or -1 */
static pid_t start_program(const child_cfg *c, ssize_t len, int *fds, int nfds, int *rep_fd)
{
	struct msg_exec *x = (struct msg_exec *)g_buf;
	char *p = g_buf + sizeof *x, *end = g_buf + len;
	int need = (x->has_stdin ? 3 : 2) + (x->has_report ? 1 : 0) + (x->has_mq ? 1 : 0);
	g_rep = pd_ch_sock;
	*rep_fd = -1;
	if ((size_t)len < sizeof *x || x->argc == 0 || x->argc > PD_MAX_ARGS || x->envc > PD_MAX_ARGS ||
	    nfds != need || end[-1] != 0)
		return refuse(EINVAL, "malformed exec request");
	if (x->has_report) {
		/* after stdin, stdout, stderr; before the mqueue root, which become_program takes last */
		int *f = &fds[x->has_stdin ? 3 : 2];
		g_rep = *rep_fd = *f;
		*f = -1;
	}
	const char *cwd = p;
	p += strlen(p) + 1;
	for (uint32_t i = 0; i < x->argc; i++) {
		if (p >= end)
			goto bad;
		g_argv[i] = p;
		p += strlen(p) + 1;
	}
	g_argv[x->argc] = NULL;
	for (uint32_t i = 0; i < x->envc; i++) {
		if (p >= end)
			goto bad;
		g_envp[i] = p;
		p += strlen(p) + 1;
	}
	g_envp[x->envc] = NULL;

	int rep[2];
	if (pipe2(rep, O_CLOEXEC) < 0)
		return refuse(errno, "pipe");
	/* the child borrows init's memory until it execs (posix_spawn's way), so no page table is
	 * copied (init is a copy of the host process: a fork copied the daemon's tables, about a
	 * millisecond for each audited exec) and init resumes only once the program runs or failed.
	 * An audited child hands its listener to the host itself (become_program). */
	struct spawn sp = {c, x, cwd, fds, nfds, rep[1]};
#ifdef __SANITIZE_ADDRESS__
	/* the previous program's frames never returned (it execed): their redzones are still
	 * poisoned in the shadow of this shared stack */
	ASAN_UNPOISON_MEMORY_REGION(g_stack, sizeof g_stack);
#endif
	pid_t pid = pd_ch_clone(spawn_entry, g_stack + sizeof g_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &sp);
	int forkerr = errno;
	close(rep[1]);
	if (pid < 0) {
		close(rep[0]);
		return refuse(forkerr, "fork");
	}
	/* the program's report: EOF on a successful execve, or an error record; the child has
	 * already execed or exited here (an audited one sent its listener to the host itself) */
	struct msg_error r;
	ssize_t n;
	do
		n = read(rep[0], &r, sizeof r);
	while (n < 0 && errno == EINTR);
	close(rep[0]);
	if (n >= (ssize_t)sizeof r && r.type == MSG_EXEC_FAILED)
		send(g_rep, &r, sizeof r, MSG_NOSIGNAL);
	/* on its own socket, the program's pid: the host's step kill spares the other execs' */
	struct msg_started st = {MSG_STARTED, pid, -1};
	if (*rep_fd >= 0)
		send(*rep_fd, &st, sizeof st, MSG_NOSIGNAL);
	return pid; /* reaped and reported as exited (127 if it failed) */
bad:
	return refuse(EINVAL, "malformed exec request");
}

/* ---- file operations for the host, resolved strictly inside the sandbox's root ----------------- */

static void do_fileop_as_program(const struct msg_fileop *f);

/* The ids the host's file operations act with: the sandbox's user (child_cfg uid/gid). */
static uint32_t fop_uid, fop_gid;

/* Init holds every capability of the sandbox's user namespace (CAP_DAC_OVERRIDE,
 * CAP_DAC_READ_SEARCH, CAP_FOWNER...); a program runs as the sandbox's user without any. A file
 * operation done with init's capabilities read a file its program had made unreadable (mode
 * 000), or wrote where the program cannot. So each operation runs with a program's credentials:
 * file system ids of the sandbox's user (0 by default, a non-root user's otherwise: they also
 * own what it creates) and no effective capability; the permitted set stays, and init's own
 * ids and effective set are restored afterwards, for the resets that need them. Init is
 * single-threaded: nothing else runs meanwhile. */
static int fileop_creds(bool as_program, struct __user_cap_data_struct saved[2])
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	if (as_program) {
		if (syscall(SYS_capget, &h, saved) < 0)
			return -1;
		struct __user_cap_data_struct d[2];
		memcpy(d, saved, sizeof d);
		d[0].effective = d[1].effective = 0;
		syscall(SYS_setfsgid, fop_gid);
		syscall(SYS_setfsuid, fop_uid);
		return (int)syscall(SYS_capset, &h, d);
	}
	/* back to init's effective ids 0 (allowed: they are its effective ids) */
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
	return (int)syscall(SYS_capset, &h, saved);
}

/* safepath.c resolves them: never through a magic link, never to procfs, sysfs or a device */
static void do_fileop(const struct msg_fileop *f)
{
	struct __user_cap_data_struct saved[2];
	if (fileop_creds(true, saved) < 0) {
		struct msg_error r;
		memset(&r, 0, sizeof r);
		r.type = MSG_FILEOP_DONE;
		r.err = errno ? errno : EPERM;
		pd_send_fds(pd_ch_sock, &r, sizeof r, NULL, 0);
		return;
	}
	do_fileop_as_program(f);
	if (fileop_creds(false, saved) < 0)
		pd_ch_die("restore init's capabilities", errno);
}

static void do_fileop_as_program(const struct msg_fileop *f)
{
	struct msg_error r;
	memset(&r, 0, sizeof r);
	r.type = MSG_FILEOP_DONE;
	int fd = -1;
	char base[256];
	if (memchr(f->path, 0, sizeof f->path) == NULL) {
		r.err = ENAMETOOLONG;
	} else if (f->op == FILEOP_OPEN) {
		/* O_NONBLOCK: a fifo planted by the program must not hang init (openat2 refuses
		 * any extra flag with O_PATH, which opens nothing anyway) */
		int fl = f->flags & ~O_CLOEXEC;
		if (!(fl & O_PATH))
			fl |= O_NONBLOCK | O_NOCTTY;
		fd = pd_safe_open(AT_FDCWD, f->path, fl, (fl & (O_CREAT | O_TMPFILE)) ? f->mode : 0);
		if (fd < 0)
			r.err = errno;
	} else {
		int dfd = pd_safe_parent(AT_FDCWD, f->path, base, sizeof base);
		int rc = -1;
		if (dfd >= 0) {
			if (f->op == FILEOP_UNLINK)
				rc = unlinkat(dfd, base, 0);
			else if (f->op == FILEOP_RMDIR)
				rc = unlinkat(dfd, base, AT_REMOVEDIR);
			else if (f->op == FILEOP_MKDIR)
				rc = mkdirat(dfd, base, f->mode);
			else
				errno = EINVAL;
			if (rc < 0)
				r.err = errno;
			close(dfd);
		} else {
			r.err = errno;
		}
	}
	pd_send_fds(pd_ch_sock, &r, sizeof r, &fd, fd >= 0 ? 1 : 0);
	if (fd >= 0)
		close(fd);
}

/* The next process gets pid 2, as the first program of a fresh sandbox does. Returns 0, or -1
 * with *err and what set. */
static int rewind_pids(char *what, size_t size, int32_t *err)
{
	if (pd_ch_lastpid < 0 || pwrite(pd_ch_lastpid, "1", 1, 0) != 1) {
		*err = pd_ch_lastpid < 0 ? ENOENT : errno;
		pd_ch_cat(what, size, "rewind the pid counter", NULL, NULL);
		return -1;
	}
	return 0;
}

/* Whether fd (a scratch directory, or the file the host wrote in one) has no inode flag and no
 * extended attribute, as the build and the host's write leave it. A program could have set the
 * flags with no inotify event at all: FS_IOC_SETFLAGS (chattr) sends none (setxattr sends
 * IN_ATTRIB). */
static bool plain_inode(int fd)
{
	int fl = 0;
	if (ioctl(fd, FS_IOC_GETFLAGS, &fl) < 0 ? errno != ENOTTY && errno != EOPNOTSUPP : fl != 0)
		return false;
	ssize_t x = flistxattr(fd, NULL, 0);
	return x == 0 || (x < 0 && errno == EOPNOTSUPP);
}

/* Whether the scratch directories are exactly as the host expects them (struct msg_reset):
 * their mode, owner and one link each, plain, holding nothing but the host's one file, itself
 * as written (the same inode, mode, owner, single link, size and blocks, plain).
 * The host's inotify watches saw no write, creation, removal or change of attributes by the last
 * user; this looks at what they cannot see, and at the end state itself. Every process of the
 * last user is gone, so nothing changes while this looks. */
static bool scratch_as_left(const struct msg_reset *m)
{
	bool file_seen = false;
	for (size_t i = 0; i < PD_NSCRATCH; i++) {
		if (!m->dir[i].on)
			continue;
		int d = open(pd_ch_scratch[i].dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d < 0)
			return false;
		struct stat st;
		bool ok = fstat(d, &st) == 0 && (st.st_mode & 07777) == m->dir[i].mode &&
			  st.st_uid == m->dir[i].uid && st.st_gid == m->dir[i].gid && st.st_nlink == 2 &&
			  plain_inode(d);
		char buf[1024] __attribute__((aligned(8)));
		long n = 0;
		while (ok && (n = syscall(SYS_getdents64, d, buf, sizeof buf)) > 0)
			for (long off = 0; off < n;) {
				/* struct linux_dirent64: ino, off, reclen, type, name */
				unsigned short reclen;
				memcpy(&reclen, buf + off + 16, sizeof reclen);
				const char *name = buf + off + 19;
				off += reclen;
				if (!strcmp(name, ".") || !strcmp(name, ".."))
					continue;
				if (!m->has_file || m->file_dir != i || strcmp(name, m->file_name)) {
					ok = false;
					break;
				}
				struct stat fs;
				int f = openat(d, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
				ok = f >= 0 && fstat(f, &fs) == 0 && S_ISREG(fs.st_mode) &&
				     fs.st_ino == m->file_ino && (fs.st_mode & 07777) == m->file_mode &&
				     fs.st_nlink == 1 && fs.st_uid == fop_uid && fs.st_gid == fop_gid &&
				     (uint64_t)fs.st_size == m->file_size &&
				     (uint64_t)fs.st_blocks == m->file_blocks && plain_inode(f);
				if (f >= 0)
					close(f);
				file_seen = ok;
				if (!ok)
					break;
			}
		if (n < 0)
			ok = false;
		close(d);
		if (!ok)
			return false;
	}
	return file_seen == (m->has_file != 0);
}

/* The sandbox's half of a reset: nothing of the last user may run on. kill(-1) from pid 1
 * reaches every process of the namespace; orphans are init's children, so when wait reports no
 * child at all, none is left. Then a new IPC namespace (SysV objects, POSIX queues and their id
 * counters as a fresh sandbox has them) and the pid counter back to where a fresh one starts;
 * last, if the host asks, a look at the scratch directories (scratch_as_left). */
static void do_reset(int sfd, const struct msg_reset *m)
{
	struct msg_reset_done r;
	memset(&r, 0, sizeof r);
	r.type = MSG_RESET_DONE;
	kill(-1, SIGKILL);
	for (;;) {
		int ws;
		pid_t pid = waitpid(-1, &ws, __WALL);
		if (pid < 0 && errno != EINTR)
			break;
	}
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof si) > 0)
		;
	if (pd_initstate_restore(&r.err, r.what, sizeof r.what) < 0) {
		/* an attribute of init's the last user changed for good: no reuse */
	} else if (unshare(CLONE_NEWIPC) < 0) {
		r.err = errno;
		pd_ch_cat(r.what, sizeof r.what, "new IPC namespace", NULL, NULL);
	} else if (rewind_pids(r.what, sizeof r.what, &r.err) == 0 && m->verify) {
		r.scratch = scratch_as_left(m);
	}
	send(pd_ch_sock, &r, sizeof r, MSG_NOSIGNAL);
}

static __attribute__((noreturn)) void init_loop(const child_cfg *c)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	pd_ch_check(sfd, "signalfd");
	/* nothing in the sandbox may read or write init's memory, nor dump it */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* the base policy once, here, for init and everything it will start: a program inherits it
	 * instead of each exec compiling it into the kernel again. Setup is done:
	 * init needs nothing the policy denies from here on. */
	if (load_filter(c->bpf_base, 0) < 0)
		pd_ch_die("load the seccomp policy", errno);
	pd_initstate_save(); /* what each reset puts back (initstate.c) */
	struct msg_hdr ready = {MSG_READY};
	if (pd_send_fds(pd_ch_sock, &ready, sizeof ready, &pd_ch_upper, pd_ch_upper >= 0 ? 1 : 0) < 0)
		_exit(1);
	if (pd_ch_upper >= 0)
		close(pd_ch_upper);
	pd_ch_upper = -1;
	pid_t mains[64];
	int reps[64]; /* each main's report socket (start_program), or -1 */
	int nmains = 0;
	for (;;) {
		struct pollfd pf[2] = {{pd_ch_sock, POLLIN, 0}, {sfd, POLLIN, 0}};
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) > 0)
				;
			int ws;
			pid_t pid;
			while ((pid = waitpid(-1, &ws, WNOHANG | __WALL)) > 0) {
				for (int i = 0; i < nmains; i++) {
					if (mains[i] != pid)
						continue;
					struct msg_exited m = {MSG_EXITED, pid, ws};
					send(reps[i] >= 0 ? reps[i] : pd_ch_sock, &m, sizeof m, MSG_NOSIGNAL);
					if (reps[i] >= 0)
						close(reps[i]);
					reps[i] = reps[--nmains];
					mains[i] = mains[nmains];
					break;
				}
			}
		}
		if (pf[0].revents & (POLLHUP | POLLERR))
			_exit(0); /* the host is gone: pid 1 exits and the kernel kills the rest */
		if (pf[0].revents & POLLIN) {
			int fds[5], nfds = 0;
			ssize_t n = pd_recv_fds(pd_ch_sock, g_buf, sizeof g_buf - 1, fds, &nfds, 5);
			if (n <= 0)
				_exit(0);
			g_buf[n] = 0;
			if ((size_t)n == sizeof(struct msg_fileop) &&
			    ((struct msg_hdr *)g_buf)->type == MSG_FILEOP) {
				do_fileop((const struct msg_fileop *)g_buf);
			} else if ((size_t)n == sizeof(struct msg_reset) &&
				   ((struct msg_hdr *)g_buf)->type == MSG_RESET) {
				struct msg_reset *m = (struct msg_reset *)g_buf;
				m->file_name[sizeof m->file_name - 1] = 0;
				do_reset(sfd, m);
				for (int i = 0; i < nmains; i++)
					if (reps[i] >= 0)
						close(reps[i]);
				nmains = 0;
			} else if ((size_t)n == sizeof(struct msg_hdr) &&
				   ((struct msg_hdr *)g_buf)->type == MSG_REWIND) {
				struct msg_reset_done r;
				memset(&r, 0, sizeof r);
				r.type = MSG_RESET_DONE;
				rewind_pids(r.what, sizeof r.what, &r.err);
				send(pd_ch_sock, &r, sizeof r, MSG_NOSIGNAL);
			} else if ((size_t)n >= sizeof(struct msg_exec) &&
			    ((struct msg_hdr *)g_buf)->type == MSG_EXEC) {
				int rep = -1;
				if (nmains == 64) {
					/* to its own socket if it has one: the host reads nothing else for it */
					const struct msg_exec *xm = (const struct msg_exec *)g_buf;
					int ri = xm->has_stdin ? 3 : 2;
					g_rep = xm->has_report && nfds > ri ? fds[ri] : pd_ch_sock;
					refuse(EBUSY, "too many execs at once");
				} else {
					pid_t pid = start_program(c, n, fds, nfds, &rep);
					if (pid > 0) {
						reps[nmains] = rep;
						mains[nmains++] = pid;
					} else if (rep >= 0) {
						close(rep); /* refused: its end was reported there */
					}
				}
			}
			for (int i = 0; i < nfds; i++)
				close(fds[i]);
		}
	}
}

/* init is a copy of the host process, argv and environment strings included, and
 * /proc/1/cmdline shows argv to anyone in the sandbox: zero both in this copy. */
static void wipe_host_args(void)
{
	char st[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, st, sizeof st - 1);
	close(fd);
	if (n <= 0)
		return;
	st[n] = 0;
	/* fields after the command name (which may hold spaces) start past the last ')' */
	char *p = strrchr(st, ')');
	if (!p)
		return;
	unsigned long v[64];
	int k = 2; /* the next field is field 3 */
	for (p++; *p && k < 52; k++) {
		while (*p == ' ')
			p++;
		unsigned long x = 0;
		bool num = *p >= '0' && *p <= '9';
		while (*p && *p != ' ') {
			if (num && *p >= '0' && *p <= '9')
				x = x * 10 + (unsigned long)(*p - '0');
			else
				num = false;
			p++;
		}
		v[k] = num ? x : 0;
	}
	if (k < 52)
		return;
	/* fields 48-51: arg_start arg_end env_start env_end */
	unsigned long as = v[47], ae = v[48], es = v[49], ee = v[50];
	if (as && ae > as && ae - as < (1ul << 24))
		memset((void *)as, 0, ae - as);
	if (es && ee > es && ee - es < (1ul << 24))
		memset((void *)es, 0, ee - es);
}

void pd_child_main(const child_cfg *c)
{
	/* the host's environment stays in this copy of its memory, which nothing in the sandbox can
	 * read (init is not dumpable); drop the reference so no code path hands it on */
	static char *no_env[1];
	environ = no_env;
	wipe_host_args();
	/* first, drop every fd inherited from the host process except our socket: another
	 * sandbox's socket held here would keep that sandbox alive after the host died */
	pd_ch_sock = c->sock;
	fop_uid = c->uid;
	fop_gid = c->gid;
	if (pd_ch_sock != 3) {
		if (dup2(pd_ch_sock, 3) < 0)
			_exit(1);
		pd_ch_sock = 3;
	}
	syscall(SYS_close_range, 4, ~0U, 0);
	syscall(SYS_close_range, 0, 2, 0);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0 && devnull <= 2) {
		/* keep 0..2 valid so nothing later lands on them by accident */
		while (devnull < 2)
			devnull = dup(devnull);
	}

	struct msg_hdr go;
	int fds[PD_MAX_PASS_FDS], nfds = 0;
	ssize_t n = pd_recv_fds(pd_ch_sock, &go, sizeof go, fds, &nfds, PD_MAX_PASS_FDS);
	if (n != sizeof go || go.type != MSG_GO || nfds != c->nlayers + c->nbinds + c->has_sysfs + c->njoin)
		_exit(1);
	/* v1: into the sandbox's cgroups, this thread by itself ("0": the writer), before anything
	 * of the setup is allocated (pd_cg_ops.join_fds says why not the host's move) */
	for (int i = nfds - c->njoin; i < nfds; i++) {
		if (write(fds[i], "0", 1) != 1)
			pd_ch_die("join the sandbox's cgroup", errno);
		close(fds[i]);
	}
	nfds -= c->njoin;
	pd_ch_check(pd_ch_setresgid(0), "setresgid 0");
	/* effective uid 0 (the owner of what init creates for the host's file operations), real
	 * and saved uid PD_INIT_UID, which no program has: a program of the sandbox, even as uid
	 * 0, then cannot lower init's rlimits (which the next user of a reset sandbox would
	 * inherit) nor signal it */
	pd_ch_check((int)syscall(SYS_setresuid, PD_INIT_UID, 0, PD_INIT_UID), "setresuid");
	pd_ch_check(unshare(CLONE_NEWCGROUP), "cgroup namespace");
	{
		const char *what = "";
		int err = pd_ucounts_limit_ns(&what);
		if (err)
			pd_ch_die(what, err);
	}
	pd_ch_build_root(c, fds, fds + c->nlayers, c->has_sysfs ? fds[c->nlayers + c->nbinds] : -1);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	pd_ch_check(sethostname(c->hostname, strlen(c->hostname)), "sethostname");
	pd_ch_check(setdomainname("", 0), "setdomainname");
	prepare_spawning();
	init_loop(c);
}
