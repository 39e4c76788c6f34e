/* The sandbox side: runs in the process clone3() made, which is root of a fresh user namespace and
 * pid 1 of a fresh pid namespace. It builds the root filesystem, pivots into it, and then serves as
 * the sandbox's init: it starts programs on request, reaps every zombie, and reports the exit of
 * each program's main process. When the host side goes away (its socket closes) init exits, and the
 * kernel kills everything left in the pid namespace.
 *
 * The parent may be multi-threaded, so this code runs in a copy of a process whose other threads'
 * locks may be held: it uses no malloc and no stdio, only syscalls and stack or static buffers. */
#define _GNU_SOURCE
#include "proto.h"

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

#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

static int g_sock = -1;
/* Set while this code runs as a sandbox reset's helper (pd_reset_root): a thread of the host
 * suspended in vfork lends the helper its memory and its thread-local storage, so a failure is
 * written here instead of into a socket. */
static __thread pd_reset_report *t_rep;
/* What a reset's helper has open at the moment (the staging or upper tmpfs, the new root, an
 * image directory, a bind target: a few at a time). The helper shares the host's descriptor
 * table (pd_reset_root), where a descriptor it left open would stay, so die() closes these, and
 * every path that opens one goes through hold() and drop(). */
#define HELD_MAX 8
static __thread int t_held[HELD_MAX];
static __thread int t_nheld;
/* init's handle on /proc/sys/kernel/ns_last_pid, opened before /proc/sys turns read-only: a
 * reset winds the pid counter back so the next user's programs get the pids a fresh one would */
static int g_lastpid = -1;

/* glibc's set*id and setgroups broadcast to every thread the process has, and its fork takes the
 * allocator's locks; this process is a copy of one thread of a possibly multi-threaded host, so
 * those would wait forever on threads and locks that do not exist here. Raw system calls only. */
static int raw_setresuid(uid_t u)
{
	return (int)syscall(SYS_setresuid, u, u, u);
}

static int raw_setresgid(gid_t g)
{
	return (int)syscall(SYS_setresgid, g, g, g);
}

static int raw_setgroups_none(void)
{
	return (int)syscall(SYS_setgroups, 0, NULL);
}

static pid_t raw_fork(void)
{
	return (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
}

/* ---- tiny string helpers (no libc formatting in the child) ---------------------------------- */

static size_t cat(char *dst, size_t size, const char *a, const char *b, const char *c)
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

static void utoa(unsigned long v, char *out)
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

/* A report to init through the program's report pipe; nothing to do if it fails. */
static void report(int fd, const void *m, size_t len)
{
	ssize_t n = write(fd, m, len);
	(void)n;
}

static __attribute__((noreturn)) void die(const char *what, int err)
{
	struct msg_error m;
	memset(&m, 0, sizeof m);
	m.type = MSG_ERROR;
	m.err = err;
	cat(m.what, sizeof m.what, what, NULL, NULL);
	if (t_rep) {
		t_rep->err = err;
		cat(t_rep->what, sizeof t_rep->what, what, NULL, NULL);
		while (t_nheld > 0)
			close(t_held[--t_nheld]);
		_exit(1);
	}
	if (g_sock >= 0)
		send(g_sock, &m, sizeof m, MSG_NOSIGNAL);
	_exit(1);
}

static void check(int rc, const char *what)
{
	if (rc < 0)
		die(what, errno);
}

/* fd, noted for die() when this is a reset's helper; -1 passes through (errno kept). */
static int hold(int fd)
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

/* Closes a descriptor from hold(). */
static void drop(int fd)
{
	for (int i = 0; i < t_nheld; i++)
		if (t_held[i] == fd) {
			t_held[i] = t_held[--t_nheld];
			break;
		}
	close(fd);
}

/* ---- root filesystem ------------------------------------------------------------------------- */

static void mkdirs(const char *path, mode_t mode)
{
	char t[PD_PATH];
	cat(t, sizeof t, path, NULL, NULL);
	for (char *p = t + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(t, mode);
			*p = '/';
		}
	mkdir(t, mode);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

static void bind_file(const char *src, const char *dst, unsigned long extra)
{
	touch(dst);
	check(mount(src, dst, NULL, MS_BIND, NULL), dst);
	if (extra)
		check(mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | extra, NULL), dst);
}

#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif

static int open_inside(int dirfd, const char *path, int flags, mode_t mode);

/* Resolves path inside the root at rootfd, creating missing directories (and, if !is_dir, the
 * final file) there; returns an O_PATH fd to mount on. */
static int make_inside(int rootfd, const char *path, bool is_dir)
{
	char prefix[PD_PATH];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof prefix)
		return errno = ENAMETOOLONG, -1;
	for (size_t i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != 0)
			continue;
		memcpy(prefix, path, i);
		prefix[i] = 0;
		bool last = path[i] == 0;
		int fd = open_inside(rootfd, prefix, O_PATH, 0);
		if (fd >= 0) {
			if (last)
				return fd;
			close(fd);
			continue;
		}
		if (errno != ENOENT)
			return -1;
		/* create this component in its parent, itself resolved inside the root */
		char *slash = strrchr(prefix, '/');
		*slash = 0;
		int pfd = open_inside(rootfd, *prefix ? prefix : "/", O_PATH | O_DIRECTORY, 0);
		if (pfd < 0)
			return -1;
		const char *name = slash + 1;
		int rc;
		if (last && !is_dir) {
			int ffd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			rc = ffd < 0 ? -1 : close(ffd);
		} else {
			rc = mkdirat(pfd, name, 0755);
		}
		close(pfd);
		if (rc < 0 && errno != EEXIST)
			return -1;
		*slash = '/';
		if (last)
			return open_inside(rootfd, prefix, O_PATH, 0);
	}
	return errno = EINVAL, -1;
}

/* Four tmpfs hold what the root is built from. The skeleton, mounted once per sandbox, holds what
 * no user can change and every reset keeps: /dev (read-only once populated) and the empty
 * directory /proc's hardware directories are hidden behind. The upper tmpfs holds the overlays'
 * upper and work directories (what a user writes to "/" and /usr); the staging tmpfs, new at
 * creation and at every reset, holds /tmp, /work and /dev/shm (binds of its directories), and
 * while a root is built, the image layers and the root are attached in it. Each is the size of
 * the sandbox's disk. Most programs write only to the scratch directories, so a reset keeps the
 * root, its overlays and their upper tmpfs when they provably saw nothing (upperwatch.c), and
 * makes only a new staging tmpfs and devpts; otherwise it builds the upper tmpfs and overlays
 * anew and moves /proc, /dev and /sys over whole: each mount made costs, and each one taken
 * off costs the kernel's teardown. */
#define SKELETON_OPTS "mode=0755,size=64k,nr_inodes=64"
#define ROOT "r" /* the new root, in the staging tmpfs (the working directory while building) */

/* Directories of /proc that show host hardware, hidden behind one empty read-only directory of the
 * skeleton: binds, not a tmpfs each, since every superblock costs kernel memory and makes each
 * memory cgroup on the host costlier to create and remove (the shrinker maps grow with
 * superblocks). */
static void hide_proc_dirs(const char *p, const char *skel)
{
	static const char *const empty[] = {"acpi", "scsi", "asound", "firmware", "driver", NULL};
	char first[PD_PATH] = "";
	for (int i = 0; empty[i]; i++) {
		char f[PD_PATH];
		cat(f, sizeof f, p, "/", empty[i]);
		if (access(f, F_OK) != 0)
			continue;
		if (first[0]) {
			/* a bind of a read-only mount is read-only */
			check(mount(first, f, NULL, MS_BIND, NULL), f);
			continue;
		}
		char e[PD_PATH];
		cat(e, sizeof e, skel, "/empty", NULL);
		check(mkdir(e, 0555), "mkdir empty");
		check(mount(e, f, NULL, MS_BIND, NULL), f);
		check(mount(NULL, f, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
				   MS_NOEXEC, NULL), f);
		cat(first, sizeof first, f, NULL, NULL);
	}
}

static void mount_proc(const char *root, const char *skel)
{
	char p[PD_PATH];
	cat(p, sizeof p, root, "/proc", NULL);
	mkdir(p, 0555);
	/* hidepid=invisible: a program sees only the processes it could ptrace-read, never init
	 * (not dumpable, and more capable): none of init's counters, which every program the last
	 * user of a reset sandbox started has moved, nor its limits, fds or command line */
	check(mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible"), "mount /proc");
	/* files that leak host state or poke the kernel: hidden behind /dev/null */
	static const char *const masked[] = {"kcore", "keys", "timer_list", "sched_debug",
					     "kallsyms", "kmsg", "latency_stats", "sysrq-trigger",
					     "kpagecount", "kpageflags", "kpagecgroup", "pagetypeinfo",
					     "config.gz", NULL};
	for (int i = 0; masked[i]; i++) {
		char f[PD_PATH];
		cat(f, sizeof f, p, "/", masked[i]);
		if (access(f, F_OK) == 0)
			check(mount("/dev/null", f, NULL, MS_BIND, NULL), f);
	}
	hide_proc_dirs(p, skel);
	/* before /proc/sys turns read-only; the kernel checks CAP_SYS_ADMIN over the pid namespace
	 * at each write, which no program has */
	char f[PD_PATH];
	cat(f, sizeof f, p, "/sys/kernel/ns_last_pid", NULL);
	g_lastpid = open(f, O_WRONLY | O_CLOEXEC);
	static const char *const ro[] = {"sys", "irq", "bus", "fs", NULL};
	for (int i = 0; ro[i]; i++) {
		cat(f, sizeof f, p, "/", ro[i]);
		if (access(f, F_OK) != 0)
			continue;
		check(mount(f, f, NULL, MS_BIND | MS_REC, NULL), f);
		check(mount(NULL, f, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
				   MS_NOEXEC, NULL), f);
	}
}

/* A new devpts instance on pts: a pty's number and the directory's times are a fresh one's. */
static void mount_pts(const char *pts)
{
	check(mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC,
		    "newinstance,ptmxmode=0666,mode=0620,gid=5"), "mount /dev/pts");
}

/* The scratch directories of the staging tmpfs, bound at /tmp, /work and /dev/shm: what a user
 * writes there shares the disk budget, and a reset replaces them whole. Made first in every
 * staging tmpfs, so they are numbered alike whatever else a build puts there. */
static const struct {
	const char *name, *dst;
	mode_t mode;
} scratch[] = {{"tmp", "/tmp", 01777}, {"work", "/work", 0755}, {"shm", "/dev/shm", 01777}};
#define NSCRATCH (sizeof scratch / sizeof scratch[0])
_Static_assert(NSCRATCH == PD_NSCRATCH, "proto.h numbers the scratch directories as scratch[]");

static void make_scratch(int dfd)
{
	for (size_t i = 0; i < NSCRATCH; i++) {
		check(mkdirat(dfd, scratch[i].name, scratch[i].mode), "mkdir scratch");
		check(fchmodat(dfd, scratch[i].name, scratch[i].mode, 0), "chmod scratch");
	}
}

/* Whether the root's directory name (checked to be one) is empty, and its mode and owner. */
static pd_scratch_attr image_dir(int rootfd, const char *name)
{
	pd_scratch_attr a = {true, 0, 0, 0};
	int fd = hold(openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	check(fd, name);
	struct stat st;
	check(fstat(fd, &st), name);
	a.mode = st.st_mode & 07777;
	a.uid = st.st_uid;
	a.gid = st.st_gid;
	char buf[1024] __attribute__((aligned(8)));
	long n;
	while (a.on && (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: ino, off, reclen, type, name */
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof reclen);
			const char *d = buf + off + 19;
			if (strcmp(d, ".") && strcmp(d, ".."))
				a.on = false;
			off += reclen;
		}
	drop(fd);
	return a;
}

static void set_attr(int dfd, const char *name, const pd_scratch_attr *a)
{
	/* owner first: a chown may clear the mode's set-id bits */
	check(fchownat(dfd, name, a->uid, a->gid, AT_SYMLINK_NOFOLLOW), "chown scratch");
	check(fchmodat(dfd, name, a->mode, 0), "chmod scratch");
}

/* A bind of the staging tmpfs's directory src at dst, nosuid and nodev as that tmpfs is, and
 * noatime: a read there changes nothing, so a reset may keep what its last user only read
 * without that user having set an access time the next one reads (a channel between them). */
static void bind_scratch(const char *src, const char *dst)
{
	check(mount(src, dst, NULL, MS_BIND, NULL), dst);
	check(mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOATIME, NULL), dst);
}

static void mount_dev(const char *root, const char *skel)
{
	char d[PD_PATH], p[PD_PATH];
	cat(d, sizeof d, root, "/dev", NULL);
	mkdir(d, 0755);
	cat(p, sizeof p, skel, "/dev", NULL);
	check(mkdir(p, 0755), "mkdir dev");
	check(mount(p, d, NULL, MS_BIND, NULL), "mount /dev");
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty", NULL};
	for (int i = 0; nodes[i]; i++) {
		char src[64];
		cat(src, sizeof src, "/dev/", nodes[i], NULL);
		cat(p, sizeof p, d, "/", nodes[i]);
		/* no per-node remount: nosuid and noexec mean nothing for a character device */
		bind_file(src, p, 0);
	}
	cat(p, sizeof p, d, "/pts", NULL);
	mkdir(p, 0755);
	mount_pts(p);
	cat(p, sizeof p, d, "/ptmx", NULL);
	check(symlink("pts/ptmx", p), "/dev/ptmx");
	cat(p, sizeof p, d, "/shm", NULL);
	check(mkdir(p, 01777), "mkdir /dev/shm");
	static const char *const links[][2] = {{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
					       {"/proc/self/fd/1", "stdout"},
					       {"/proc/self/fd/2", "stderr"}};
	for (int i = 0; i < 4; i++) {
		cat(p, sizeof p, d, "/", links[i][1]);
		check(symlink(links[i][0], p), p);
	}
	check(mount(NULL, d, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		    NULL),
	      "remount /dev read-only");
}

/* A new staging tmpfs, detached (the caller attaches it and drops it), as creation and reset
 * both make it: the same options, so it reads the same in /proc/self/mountinfo. */
static int new_stage(uint64_t disk_bytes)
{
	int fs = hold((int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
	check(fs, "fsopen tmpfs");
	char sz[32];
	utoa(disk_bytes, sz);
	check((int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", "tmpfs", 0), "staging source");
	check((int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0755", 0), "staging mode");
	check((int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", sz, 0), "staging size");
	/* overlay's xino (child.c build_tree) needs an upper's inode numbers to leave it high bits;
	 * a kernel built with TMPFS_INODE64 would give 64-bit ones */
	check((int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "inode32", NULL, 0), "staging inode32");
	check((int)syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0), "create staging tmpfs");
	int m = hold((int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
				  MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
	check(m, "mount staging tmpfs");
	drop(fs);
	return m;
}

#define UPPER "us" /* mount point, in the staging tmpfs, of the upper tmpfs */
/* everything that happens in a watched directory, opens and reads included (upperwatch.c) */
#define UPPER_EVENTS (IN_ALL_EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW)

/* In the staging tmpfs (the working directory, its scratch directories made): the image layers
 * attached, the overlays stacked at ROOT with their uppers in a new upper tmpfs, the scratch
 * directories and the binds attached inside that root, and the directories the rest is mounted
 * on. Every path is relative, so overlay shows its layers as l0, us/u0... in
 * /proc/self/mountinfo: the same in a fresh sandbox and a reset one, and no host path. With
 * c->uwatch_fd, every overlay's upper directory and work directory is watched from when the
 * build no longer writes there, and rep gets the watches. Directories are made in the same order
 * in every build, so the tmpfs number their inodes alike. */
static void build_tree(const child_cfg *c, const int *layer_fds, const int *bind_fds,
		       pd_reset_report *rep)
{
	char opts[4096], q[PD_PATH];
	char watch[2 * PD_MAX_LAYERS][24];
	int nwatch = 0;
	/* layers: the detached, id-mapped mounts the host made for us */
	for (int i = 0; i < c->nlayers; i++) {
		char n[8], p[16];
		utoa((unsigned long)i, n);
		cat(p, sizeof p, "l", n, NULL);
		check(mkdir(p, 0755), "mkdir layer");
		check((int)syscall(SYS_move_mount, layer_fds[i], "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH),
		      "attach image layer");
	}
	check(mkdir(ROOT, 0755), "mkdir root");
	check(mkdir(UPPER, 0755), "mkdir upper");
	int ut = new_stage(c->disk_bytes);
	check((int)syscall(SYS_move_mount, ut, "", AT_FDCWD, UPPER, MOVE_MOUNT_F_EMPTY_PATH),
	      "attach upper tmpfs");
	drop(ut);
	/* the root overlay stacks every layer whose destination is "/", first on top */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < c->nlayers; i++) {
			bool is_root = !strcmp(c->layer_dst[i], "/");
			if ((pass == 0) != is_root)
				continue;
			char n[8];
			utoa((unsigned long)i, n);
			char up[16], wk[16], lower[PD_MAX_LAYERS * 8];
			cat(up, sizeof up, UPPER "/", "u", n);
			cat(wk, sizeof wk, UPPER "/", "w", n);
			lower[0] = 0;
			size_t ln = 0;
			for (int j = 0; j < c->nlayers; j++) {
				if (strcmp(c->layer_dst[j], c->layer_dst[i]))
					continue;
				if (j < i)
					break; /* this destination was mounted with layer j */
				char m[8];
				utoa((unsigned long)j, m);
				ln = cat(lower + ln, sizeof lower - ln, ln ? ":" : "", "l", m) + ln;
			}
			if (!lower[0])
				continue;
			if (is_root) {
				cat(q, sizeof q, ROOT, NULL, NULL);
			} else {
				cat(q, sizeof q, ROOT, c->layer_dst[i], NULL);
				mkdirs(q, 0755);
			}
			check(mkdir(up, 0755), "mkdir upper");
			check(mkdir(wk, 0755), "mkdir work");
			cat(opts, sizeof opts, "lowerdir=", lower, ",upperdir=");
			cat(opts + strlen(opts), sizeof opts - strlen(opts), up, ",workdir=", wk);
			cat(opts + strlen(opts), sizeof opts - strlen(opts), ",userxattr,xino=on", NULL, NULL);
			check(mount("overlay", q, "overlay", MS_NOSUID | MS_NODEV, opts), "mount overlay");
			/* overlay's own checks at mount time write in the work directory: after them */
			cat(watch[nwatch++], sizeof watch[0], up, NULL, NULL);
			cat(watch[nwatch++], sizeof watch[0], wk, "/work", NULL);
		}
	}
	int rootfd = hold(open(ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC));
	check(rootfd, "open new root");
	/* the points we mount on must be plain directories of the root, not an image's links */
	static const char *const points[] = {"proc", "dev", "sys", "tmp", "work", NULL};
	for (int i = 0; points[i]; i++) {
		struct stat pst;
		if (fstatat(rootfd, points[i], &pst, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(pst.st_mode))
			check(unlinkat(rootfd, points[i], 0), points[i]);
		if (mkdirat(rootfd, points[i], !strcmp(points[i], "tmp") ? 01777 : 0755) < 0 &&
		    errno != EEXIST)
			die(points[i], errno);
	}
	/* /tmp and /work are scratch mounts like the image's directories, unless the image has files
	 * there (a checkout in /work, say): those stay, in the root overlay */
	for (size_t i = 0; i < PD_SCRATCH_IMG; i++) {
		pd_scratch_attr a = image_dir(rootfd, scratch[i].dst + 1);
		if (rep)
			rep->scr[i] = a;
		if (!a.on)
			continue;
		set_attr(AT_FDCWD, scratch[i].name, &a);
		cat(q, sizeof q, ROOT, scratch[i].dst, NULL);
		bind_scratch(scratch[i].name, q);
	}
	/* an image may hold symlinks anywhere (even absolute ones to host paths): every bind target is
	 * resolved inside the new root and its missing parts created there, never on the host; after
	 * the scratch binds, so that one under /tmp or /work is not covered by them */
	for (int i = 0; i < c->nbinds; i++) {
		int tfd = hold(make_inside(rootfd, c->bind_dst[i], c->bind_is_dir[i]));
		check(tfd, c->bind_dst[i]);
		check((int)syscall(SYS_move_mount, bind_fds[i], "", tfd, "",
				   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH),
		      "attach bind mount");
		drop(tfd);
	}
	drop(rootfd);
	/* the build writes in the uppers no more: from here on, any event is a user's */
	if (c->uwatch_fd >= 0 && rep)
		for (int i = 0; i < nwatch && rep->nwd >= 0; i++) {
			int wd = inotify_add_watch(c->uwatch_fd, watch[i], UPPER_EVENTS);
			if (wd < 0)
				rep->nwd = -1; /* unwatched: the next reset rebuilds it */
			else
				rep->wd[rep->nwd++] = wd;
		}
}

/* Makes ROOT the root of this mount namespace, for every process in it whose root was the old
 * one (pivot_root moves them all), and detaches what is stacked over it (the old root; in a
 * reset, the new staging tmpfs over that first), leaving no way back. */
static void enter_root(int stacked)
{
	check(chdir(ROOT), "chdir new root");
	check((int)syscall(SYS_pivot_root, ".", "."), "pivot_root");
	for (int i = 0; i < stacked; i++)
		check(umount2(".", MNT_DETACH), "detach old root");
	check(chdir("/"), "chdir /");
}

static void build_root(const child_cfg *c, const int *layer_fds, const int *bind_fds, int sysfs_fd)
{
	const char *skel = c->stage;
	char p[PD_PATH];
	check(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "make / private");
	check(mount("tmpfs", skel, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, SKELETON_OPTS),
	      "mount skeleton tmpfs");
	cat(p, sizeof p, skel, "/stage", NULL);
	check(mkdir(p, 0755), "mkdir stage");
	int st = new_stage(c->disk_bytes);
	check((int)syscall(SYS_move_mount, st, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH),
	      "attach staging tmpfs");
	check(fchdir(st), "enter staging tmpfs");
	drop(st);
	make_scratch(AT_FDCWD);
	build_tree(c, layer_fds, bind_fds, NULL);
	mount_proc(ROOT, skel);
	mount_dev(ROOT, skel);
	bind_scratch("shm", ROOT "/dev/shm");
	cat(p, sizeof p, ROOT, "/sys", NULL);
	mkdir(p, 0555);
	/* sysfs shows the network devices of the namespace it was made in, and only the owner of
	 * that namespace may make it: the host did, read-only (netns.c). With the host's network
	 * there is no /sys. */
	if (sysfs_fd >= 0)
		check((int)syscall(SYS_move_mount, sysfs_fd, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH),
		      "mount /sys");
	enter_root(1);
}

/* ---- reset: a fresh root in a live sandbox ----------------------------------------------------- */

struct reset_arg {
	const child_cfg *c;
	int pidfd;
	const int *fds;
	pd_reset_report *rep;
};

/* Watches on the new scratch directories (relative to the working directory, the new staging
 * tmpfs) and the new devpts at pts, for upperwatch.c: from their events the host tells whether
 * the next reset may keep them (the next user then gets them as this build left them, plus what
 * the host writes). Added last, once the build writes there no more. */
static void watch_scratch(const child_cfg *c, const pd_scratch_attr *scr, const char *pts,
			  pd_reset_report *rep)
{
	if (c->uwatch_fd < 0 || !rep)
		return;
	for (size_t i = 0; i <= NSCRATCH; i++) {
		int wd = -1;
		if (i == NSCRATCH || i >= PD_SCRATCH_IMG || scr[i].on) {
			wd = inotify_add_watch(c->uwatch_fd, i < NSCRATCH ? scratch[i].name : pts,
					       PD_SCRATCH_EVENTS);
			if (wd < 0) {
				/* unwatched, so the next reset replaces them */
				for (size_t j = 0; j < i; j++)
					if (rep->swd[j] >= 0)
						inotify_rm_watch(c->uwatch_fd, rep->swd[j]);
				return;
			}
		}
		rep->swd[i] = wd;
	}
	rep->nswd = NSCRATCH + 1;
}

/* A reset that keeps the root (c->keep_root): the last user wrote nowhere but in the scratch
 * directories and perhaps a pty, so only those are replaced. Runs in the new staging tmpfs (the
 * working directory, its scratch directories made), which gets the other directories a build
 * makes there, so that it numbers its inodes alike; the old scratch mounts and devpts are moved
 * onto one of them, and all go with the staging tmpfs in one detach: each unmount call waits for
 * a grace period of RCU, which costs CPU time on every CPU. */
static void keep_root(const child_cfg *c, pd_reset_report *rep)
{
	for (size_t i = 0; i < PD_SCRATCH_IMG; i++)
		if (c->scr[i].on)
			set_attr(AT_FDCWD, scratch[i].name, &c->scr[i]);
	for (int i = 0; i < c->nlayers; i++) {
		char n[8], p[16];
		utoa((unsigned long)i, n);
		cat(p, sizeof p, "l", n, NULL);
		check(mkdir(p, 0755), "mkdir layer");
	}
	check(mkdir(ROOT, 0755), "mkdir root");
	check(mkdir(UPPER, 0755), "mkdir upper");
	for (size_t i = 0; i < NSCRATCH; i++) {
		if (i < PD_SCRATCH_IMG && !c->scr[i].on)
			continue;
		check(mount(scratch[i].dst, ROOT, NULL, MS_MOVE, NULL), "park the old scratch");
		bind_scratch(scratch[i].name, scratch[i].dst);
	}
	check(mount("/dev/pts", ROOT, NULL, MS_MOVE, NULL), "park the old /dev/pts");
	mount_pts("/dev/pts");
	watch_scratch(c, c->scr, "/dev/pts", rep);
	check(umount2(".", MNT_DETACH), "detach the staging tmpfs");
	check(chdir("/"), "chdir /");
}

/* Runs in the helper pd_reset_root starts: a vfork-style child of a host thread, sharing its
 * memory, so the same rules hold as for init (no malloc, no stdio, raw set*id). Every process of
 * the sandbox is gone (init killed them), so nothing in the old root moves while this runs. */
static int reset_entry(void *arg)
{
	const struct reset_arg *ra = arg;
	const child_cfg *c = ra->c;
	/* user namespace first (the kernel orders them): capabilities there, and over the mount
	 * namespace the sandbox owns; uid 0 inside, so what we create is owned as at creation */
	check(setns(ra->pidfd, CLONE_NEWUSER | CLONE_NEWNS), "enter the sandbox's namespaces");
	check(raw_setresgid(0), "setresgid 0");
	check(raw_setresuid(0), "setresuid 0");
	/* The new staging tmpfs goes over the old root's own root directory: the one mount point no
	 * user could have replaced with a link. Absolute paths still start at the old root (path
	 * lookup does not cross mounts stacked on the starting directory); what is new is made
	 * from the working directory. */
	int st = new_stage(c->disk_bytes);
	check((int)syscall(SYS_move_mount, st, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH),
	      "attach staging tmpfs");
	check(fchdir(st), "enter staging tmpfs");
	drop(st);
	make_scratch(AT_FDCWD);
	if (c->keep_root) {
		keep_root(c, ra->rep);
		return 0;
	}
	build_tree(c, ra->fds, ra->fds + c->nlayers, ra->rep);
	/* procfs must be mounted from inside the pid namespace, which this helper is not in: the
	 * sandbox's own /proc moves over, with its masks; /dev and /sys too. They are read-only
	 * mounts, so nothing of the last user is in them but its ptys (if it left them open) and
	 * /dev/shm, the old staging tmpfs's: both are parked on the old root's vacated /dev and
	 * /proc, to be detached with it, and replaced. */
	check(mount("/proc", ROOT "/proc", NULL, MS_MOVE, NULL), "move /proc");
	check(mount("/dev", ROOT "/dev", NULL, MS_MOVE, NULL), "move /dev");
	if (c->has_sysfs)
		check(mount("/sys", ROOT "/sys", NULL, MS_MOVE, NULL), "move /sys");
	check(mount(ROOT "/dev/pts", "/proc", NULL, MS_MOVE, NULL), "park the old /dev/pts");
	check(mount(ROOT "/dev/shm", "/dev", NULL, MS_MOVE, NULL), "park the old /dev/shm");
	mount_pts(ROOT "/dev/pts");
	bind_scratch("shm", ROOT "/dev/shm");
	watch_scratch(c, ra->rep->scr, ROOT "/dev/pts", ra->rep);
	/* over the new root: the old root, and over that the new staging tmpfs */
	enter_root(2);
	return 0;
}

int pd_reset_root(const child_cfg *c, int pidfd, const int *fds, pd_reset_report *rep)
{
	memset(rep, 0, sizeof *rep);
	const size_t size = 256 * 1024;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			   -1, 0);
	if (stack == MAP_FAILED) {
		rep->err = errno;
		cat(rep->what, sizeof rep->what, "stack for the reset helper", NULL, NULL);
		return -1;
	}
	struct reset_arg ra = {c, pidfd, fds, rep};
	int saved_errno = errno;
	t_rep = rep;
	/* CLONE_VM | CLONE_VFORK: no copy of the host's memory; this thread waits until the helper
	 * ends. No CLONE_FS: setns needs its own root and cwd. CLONE_FILES: the host's descriptor
	 * table, not a copy, which cost a dup and a close of every descriptor the daemon holds, one
	 * per connection and several per sandbox (with a thousand more open, 0.1-0.2 ms more CPU a
	 * reset); what the helper opens it closes, on failure too (hold, drop, die). */
	t_nheld = 0;
	/* The helper starts on this CPU, where this thread is about to sleep until it ends: the
	 * kernel places a new task on the least loaded CPU, which costs an IPI to wake it there
	 * and, under load, a wait behind the program running there, while this CPU goes idle. It
	 * inherits the one-CPU mask; this thread gets its own back. (A sandbox reset 300 times:
	 * 550-598 -> 529-547 us of CPU each; with both CPUs busy elsewhere, 1.0-3.8 -> 0.7-1.7 ms
	 * each.) */
	cpu_set_t was, here;
	int cpu = sched_getcpu();
	bool pinned = false;
	if (cpu >= 0 && sched_getaffinity(0, sizeof was, &was) == 0) {
		CPU_ZERO(&here);
		CPU_SET(cpu, &here);
		pinned = sched_setaffinity(0, sizeof here, &here) == 0;
	}
	pid_t pid = clone(reset_entry, stack + size, CLONE_VM | CLONE_VFORK | CLONE_FILES, &ra);
	int cerr = errno;
	if (pinned && sched_setaffinity(0, sizeof was, &was) < 0) {
		/* the allowed CPUs changed meanwhile (a cpuset): any of them, not one for good */
		cpu_set_t any;
		memset(&any, 0xff, sizeof any);
		sched_setaffinity(0, sizeof any, &any);
	}
	t_rep = NULL;
	int ws = 0;
	pid_t w = -1;
	if (pid > 0)
		do
			w = waitpid(pid, &ws, __WALL);
		while (w < 0 && errno == EINTR);
	munmap(stack, size);
	errno = saved_errno;
	if (pid < 0) {
		rep->err = cerr;
		cat(rep->what, sizeof rep->what, "start the reset helper", NULL, NULL);
		return -1;
	}
	if (w == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
		return 0;
	if (!rep->err) {
		rep->err = EIO;
		cat(rep->what, sizeof rep->what, "the reset helper died", NULL, NULL);
	}
	return -1;
}

/* ---- running a program ------------------------------------------------------------------------ */

static char g_buf[PD_EXEC_MSG_MAX + sizeof(struct msg_exec) + 64];
static char *g_argv[PD_MAX_ARGS + 1], *g_envp[PD_MAX_ARGS + 1];

/* Once, in init before READY, what every program needs and init itself does not: an empty
 * capability bounding set (init keeps its effective capabilities: it never executes anything)
 * and default signal dispositions (clone3 copied the host process's handlers). Programs inherit
 * both, so their per-exec path skips ~130 system calls. */
static void prepare_spawning(void)
{
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			die("drop bounding capability", errno);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
}

static void drop_privileges(uint32_t uid, uint32_t gid)
{
	/* secure bits first: a later execve by uid 0 must not regain capabilities */
	check(prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
					       SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
					       SECBIT_NO_CAP_AMBIENT_RAISE |
					       SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED),
	      "securebits");
	/* the bounding set is already empty: init dropped it once (prepare_spawning) */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	check(raw_setgroups_none(), "setgroups");
	check(raw_setresgid(gid), "setresgid");
	check(raw_setresuid(uid), "setresuid");
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	check((int)syscall(SYS_capset, &h, d), "capset");
	check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");
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
	check(setrlimit(res, &r), "setrlimit");
}

/* execvp with the PATH of the program's environment, not init's (libc's execvpe reads the
 * caller's own PATH). Returns only on failure, with errno as execvp would leave it. */
static void exec_in_path(void)
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
			cat(full + n, sizeof full - n, name, NULL, NULL);
			execve(full, g_argv, g_envp);
			if (errno == EACCES)
				err = EACCES; /* found but not executable: report that over ENOENT */
			else if (errno != ENOENT && errno != ENOTDIR)
				return;
		}
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
	(void)nfds;
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
	set_rlimit(RLIMIT_NPROC, x->rl_nproc);
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
	/* only 0, 1, 2 (and the CLOEXEC report pipe) cross into the program */
	if (errfd > 3)
		syscall(SYS_close_range, 3, errfd - 1, 0);
	syscall(SYS_close_range, errfd + 1, ~0U, 0);
	drop_privileges(x->uid, x->gid);
	if (x->audit) {
		int l = load_filter(c->bpf_audit, SECCOMP_FILTER_FLAG_NEW_LISTENER);
		if (l < 0)
			goto fail_errno;
		/* tell init which fd the host should take; the fd is CLOEXEC, so the program
		 * never holds it: its own execve waits in the kernel until the host answers */
		struct msg_started m = {MSG_STARTED, 0, l};
		report(errfd, &m, sizeof m);
	}
	/* the base filter is already ours: init loaded it once, and filters are inherited */
	exec_in_path();
fail_errno:;
	struct msg_error m = {MSG_EXEC_FAILED, errno, ""};
	cat(m.what, sizeof m.what, "execute ", g_argv[0] ? g_argv[0] : "(null)", NULL);
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
	cat(m.what, sizeof m.what, what, NULL, NULL);
	send(g_sock, &m, sizeof m, MSG_NOSIGNAL);
	struct msg_exited x = {MSG_EXITED, -1, 127 << 8};
	send(g_sock, &x, sizeof x, MSG_NOSIGNAL);
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

static pid_t start_program(const child_cfg *c, ssize_t len, int *fds, int nfds)
{
	struct msg_exec *x = (struct msg_exec *)g_buf;
	char *p = g_buf + sizeof *x, *end = g_buf + len;
	int need = (x->has_stdin ? 3 : 2);
	if ((size_t)len < sizeof *x || x->argc == 0 || x->argc > PD_MAX_ARGS || x->envc > PD_MAX_ARGS ||
	    nfds != need || end[-1] != 0)
		return refuse(EINVAL, "malformed exec request");
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
	pid_t pid;
	if (!x->audit) {
		/* the fast path: the child borrows init's memory until it execs (posix_spawn's way),
		 * so no page table is copied and init resumes only once the program runs or failed */
		struct spawn sp = {c, x, cwd, fds, nfds, rep[1]};
#ifdef __SANITIZE_ADDRESS__
		/* the previous program's frames never returned (it execed): their redzones are still
		 * poisoned in the shadow of this shared stack */
		ASAN_UNPOISON_MEMORY_REGION(g_stack, sizeof g_stack);
#endif
		pid = clone(spawn_entry, g_stack + sizeof g_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &sp);
	} else {
		/* audited: init must keep running to pass the listener on while the program's own
		 * execve waits for the host, so the child gets a copy of init instead */
		pid = raw_fork();
		if (pid == 0) {
			close(rep[0]);
			become_program(c, x, cwd, fds, nfds, rep[1]);
		}
	}
	int forkerr = errno;
	close(rep[1]);
	if (pid < 0) {
		close(rep[0]);
		return refuse(forkerr, "fork");
	}
	/* the program's reports: its audit listener (if any), then EOF on a successful execve or
	 * an error record; without audit the child has already execed or exited here */
	union {
		struct msg_started s;
		struct msg_error e;
	} r;
	ssize_t n;
	for (;;) {
		do
			n = read(rep[0], &r, sizeof r);
		while (n < 0 && errno == EINTR);
		if (n >= (ssize_t)sizeof r.s && r.s.type == MSG_STARTED) {
			struct msg_started st = {MSG_STARTED, pid, r.s.listener_fd};
			send(g_sock, &st, sizeof st, MSG_NOSIGNAL);
			continue;
		}
		break;
	}
	close(rep[0]);
	if (n >= (ssize_t)sizeof r.e && r.e.type == MSG_EXEC_FAILED)
		send(g_sock, &r.e, sizeof r.e, MSG_NOSIGNAL);

	return pid; /* reaped and reported as exited (127 if it failed) */
bad:
	return refuse(EINVAL, "malformed exec request");
}

/* ---- file operations for the host, resolved strictly inside the sandbox's root ----------------- */

/* openat2 with every component, symlinks included, resolved as if "/" were the root (it is ours
 * anyway, but a sandbox program may plant links to /proc magic links: those are refused) */
static int open_inside(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how_ how = {(uint64_t)(flags | O_CLOEXEC), mode,
				RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

/* Splits path into its parent (opened inside the root) and last component. */
static int open_parent(const char *path, char *base, size_t size)
{
	char dir[4096];
	cat(dir, sizeof dir, path, NULL, NULL);
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = 0;
	char *slash = strrchr(dir, '/');
	const char *b = slash ? slash + 1 : dir;
	if (!*b || !strcmp(b, ".") || !strcmp(b, ".."))
		return errno = EINVAL, -1;
	cat(base, size, b, NULL, NULL);
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		cat(dir, sizeof dir, "/", NULL, NULL);
	return open_inside(AT_FDCWD, dir, O_PATH | O_DIRECTORY, 0);
}

static void do_fileop(const struct msg_fileop *f)
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
		fd = open_inside(AT_FDCWD, f->path, fl, (fl & (O_CREAT | O_TMPFILE)) ? f->mode : 0);
		if (fd < 0)
			r.err = errno;
	} else {
		int dfd = open_parent(f->path, base, sizeof base);
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
	pd_send_fds(g_sock, &r, sizeof r, &fd, fd >= 0 ? 1 : 0);
	if (fd >= 0)
		close(fd);
}

/* The next process gets pid 2, as the first program of a fresh sandbox does. Returns 0, or -1
 * with *err and what set. */
static int rewind_pids(char *what, size_t size, int32_t *err)
{
	if (g_lastpid < 0 || pwrite(g_lastpid, "1", 1, 0) != 1) {
		*err = g_lastpid < 0 ? ENOENT : errno;
		cat(what, size, "rewind the pid counter", NULL, NULL);
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
	for (size_t i = 0; i < NSCRATCH; i++) {
		if (!m->dir[i].on)
			continue;
		int d = open(scratch[i].dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
				     fs.st_nlink == 1 && fs.st_uid == geteuid() && fs.st_gid == getegid() &&
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
	if (unshare(CLONE_NEWIPC) < 0) {
		r.err = errno;
		cat(r.what, sizeof r.what, "new IPC namespace", NULL, NULL);
	} else if (rewind_pids(r.what, sizeof r.what, &r.err) == 0 && m->verify) {
		r.scratch = scratch_as_left(m);
	}
	send(g_sock, &r, sizeof r, MSG_NOSIGNAL);
}

static __attribute__((noreturn)) void init_loop(const child_cfg *c)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	check(sfd, "signalfd");
	/* nothing in the sandbox may read or write init's memory, nor dump it */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* the base policy once, here, for init and everything it will start: a program inherits it
	 * instead of each exec compiling it into the kernel again (~0.16 ms an exec). Setup is done:
	 * init needs nothing the policy denies from here on. */
	if (load_filter(c->bpf_base, 0) < 0)
		die("load the seccomp policy", errno);
	struct msg_hdr ready = {MSG_READY};
	if (send(g_sock, &ready, sizeof ready, MSG_NOSIGNAL) < 0)
		_exit(1);
	pid_t mains[64];
	int nmains = 0;
	for (;;) {
		struct pollfd pf[2] = {{g_sock, POLLIN, 0}, {sfd, POLLIN, 0}};
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
					send(g_sock, &m, sizeof m, MSG_NOSIGNAL);
					mains[i] = mains[--nmains];
					break;
				}
			}
		}
		if (pf[0].revents & (POLLHUP | POLLERR))
			_exit(0); /* the host is gone: pid 1 exits and the kernel kills the rest */
		if (pf[0].revents & POLLIN) {
			int fds[4], nfds = 0;
			ssize_t n = pd_recv_fds(g_sock, g_buf, sizeof g_buf - 1, fds, &nfds, 4);
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
				nmains = 0;
			} else if ((size_t)n == sizeof(struct msg_hdr) &&
				   ((struct msg_hdr *)g_buf)->type == MSG_REWIND) {
				struct msg_reset_done r;
				memset(&r, 0, sizeof r);
				r.type = MSG_RESET_DONE;
				rewind_pids(r.what, sizeof r.what, &r.err);
				send(g_sock, &r, sizeof r, MSG_NOSIGNAL);
			} else if ((size_t)n >= sizeof(struct msg_exec) &&
			    ((struct msg_hdr *)g_buf)->type == MSG_EXEC) {
				if (nmains == 64) {
					refuse(EBUSY, "too many execs at once");
				} else {
					pid_t pid = start_program(c, n, fds, nfds);
					if (pid > 0)
						mains[nmains++] = pid;
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
	g_sock = c->sock;
	if (g_sock != 3) {
		if (dup2(g_sock, 3) < 0)
			_exit(1);
		g_sock = 3;
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
	ssize_t n = pd_recv_fds(g_sock, &go, sizeof go, fds, &nfds, PD_MAX_PASS_FDS);
	if (n != sizeof go || go.type != MSG_GO || nfds != c->nlayers + c->nbinds + c->has_sysfs)
		_exit(1);
	check(raw_setresgid(0), "setresgid 0");
	/* effective uid 0 (the owner of what init creates for the host's file operations), real
	 * and saved uid PD_INIT_UID, which no program has: a program of the sandbox, even as uid
	 * 0, then cannot lower init's rlimits (which the next user of a reset sandbox would
	 * inherit) nor signal it */
	check((int)syscall(SYS_setresuid, PD_INIT_UID, 0, PD_INIT_UID), "setresuid");
	check(unshare(CLONE_NEWCGROUP), "cgroup namespace");
	build_root(c, fds, fds + c->nlayers, c->has_sysfs ? fds[c->nlayers + c->nbinds] : -1);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	check(sethostname(c->hostname, strlen(c->hostname)), "sethostname");
	check(setdomainname("", 0), "setdomainname");
	prepare_spawning();
	init_loop(c);
}
