/* The sandbox's root filesystem, built inside the sandbox: the staging tmpfs with the scratch
 * directories, the image layers under overlays with an upper tmpfs, the binds, /proc, /dev, /sys
 * and devpts, then pivot_root into it (pd_ch_build_root, by init at creation); and the same in a
 * live sandbox by a reset's short-lived helper (pd_reset_root), which can keep the root and
 * replace only the scratch. Runs without malloc or stdio (see child.c). */
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
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

/* ---- root filesystem ------------------------------------------------------------------------- */

static void mkdirs(const char *path, mode_t mode)
{
	char t[PD_PATH];
	pd_ch_cat(t, sizeof t, path, NULL, NULL);
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
	pd_ch_check(mount(src, dst, NULL, MS_BIND, NULL), dst);
	if (extra)
		pd_ch_check(mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | extra, NULL), dst);
}

#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif


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
		int fd = pd_ch_open_inside(rootfd, prefix, O_PATH, 0);
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
		int pfd = pd_ch_open_inside(rootfd, *prefix ? prefix : "/", O_PATH | O_DIRECTORY, 0);
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
			return pd_ch_open_inside(rootfd, prefix, O_PATH, 0);
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
		pd_ch_cat(f, sizeof f, p, "/", empty[i]);
		if (access(f, F_OK) != 0)
			continue;
		if (first[0]) {
			/* a bind of a read-only mount is read-only */
			pd_ch_check(mount(first, f, NULL, MS_BIND, NULL), f);
			continue;
		}
		char e[PD_PATH];
		pd_ch_cat(e, sizeof e, skel, "/empty", NULL);
		pd_ch_check(mkdir(e, 0555), "mkdir empty");
		pd_ch_check(mount(e, f, NULL, MS_BIND, NULL), f);
		pd_ch_check(mount(NULL, f, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
				   MS_NOEXEC, NULL), f);
		pd_ch_cat(first, sizeof first, f, NULL, NULL);
	}
}

static void mount_proc(const char *root, const char *skel)
{
	char p[PD_PATH];
	pd_ch_cat(p, sizeof p, root, "/proc", NULL);
	mkdir(p, 0555);
	/* hidepid=invisible: a program sees only the processes it could ptrace-read, never init
	 * (not dumpable, and more capable): none of init's counters, which every program the last
	 * user of a reset sandbox started has moved, nor its limits, fds or command line */
	pd_ch_check(mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible"), "mount /proc");
	/* files that leak host state or poke the kernel: hidden behind /dev/null */
	static const char *const masked[] = {"kcore", "keys", "timer_list", "sched_debug",
					     "kallsyms", "kmsg", "latency_stats", "sysrq-trigger",
					     "kpagecount", "kpageflags", "kpagecgroup", "pagetypeinfo",
					     "config.gz", NULL};
	for (int i = 0; masked[i]; i++) {
		char f[PD_PATH];
		pd_ch_cat(f, sizeof f, p, "/", masked[i]);
		if (access(f, F_OK) == 0)
			pd_ch_check(mount("/dev/null", f, NULL, MS_BIND, NULL), f);
	}
	hide_proc_dirs(p, skel);
	/* before /proc/sys turns read-only; the kernel checks CAP_SYS_ADMIN over the pid namespace
	 * at each write, which no program has */
	char f[PD_PATH];
	pd_ch_cat(f, sizeof f, p, "/sys/kernel/ns_last_pid", NULL);
	pd_ch_lastpid = open(f, O_WRONLY | O_CLOEXEC);
	static const char *const ro[] = {"sys", "irq", "bus", "fs", NULL};
	for (int i = 0; ro[i]; i++) {
		pd_ch_cat(f, sizeof f, p, "/", ro[i]);
		if (access(f, F_OK) != 0)
			continue;
		pd_ch_check(mount(f, f, NULL, MS_BIND | MS_REC, NULL), f);
		pd_ch_check(mount(NULL, f, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
				   MS_NOEXEC, NULL), f);
	}
}

/* MOUNT_ORDER: /proc/self/mountinfo lists a namespace's mounts in the order they were made (a
 * moved mount keeps its place), and a reset keeps /sys, /proc and /dev (moved over) while it
 * makes the root anew, or keeps the root too and makes only the scratch mounts and devpts. So
 * every build makes them in the one order all of those leave: /sys (the host's, before the
 * clone), /proc and /dev with what is mounted in them, the root's overlays, /tmp, /work and the
 * binds, devpts, /dev/shm. The mount table then reads the same whatever the last user did. */

/* A new devpts instance on pts: a pty's number and the directory's times are a fresh one's. */
static void mount_pts(const char *pts)
{
	pd_ch_check(mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC,
		    "newinstance,ptmxmode=0666,mode=0620,gid=5"), "mount /dev/pts");
}

/* The scratch directories of the staging tmpfs, bound at /tmp, /work and /dev/shm: what a user
 * writes there shares the disk budget, and a reset replaces them whole. Made first in every
 * staging tmpfs, so they are numbered alike whatever else a build puts there. */
const pd_ch_scratch_dir pd_ch_scratch[PD_NSCRATCH] = {
	{"tmp", "/tmp", 01777}, {"work", "/work", 0755}, {"shm", "/dev/shm", 01777}};

static void make_scratch(int dfd)
{
	for (size_t i = 0; i < PD_NSCRATCH; i++) {
		pd_ch_check(mkdirat(dfd, pd_ch_scratch[i].name, pd_ch_scratch[i].mode), "mkdir scratch");
		pd_ch_check(fchmodat(dfd, pd_ch_scratch[i].name, pd_ch_scratch[i].mode, 0), "chmod scratch");
	}
}

/* Whether the root's directory name (checked to be one) is empty, and its mode and owner. */
static pd_scratch_attr image_dir(int rootfd, const char *name)
{
	pd_scratch_attr a = {true, 0, 0, 0};
	int fd = pd_ch_hold(openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	pd_ch_check(fd, name);
	struct stat st;
	pd_ch_check(fstat(fd, &st), name);
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
	pd_ch_drop(fd);
	return a;
}

static void set_attr(int dfd, const char *name, const pd_scratch_attr *a)
{
	/* owner first: a chown may clear the mode's set-id bits */
	pd_ch_check(fchownat(dfd, name, a->uid, a->gid, AT_SYMLINK_NOFOLLOW), "chown scratch");
	pd_ch_check(fchmodat(dfd, name, a->mode, 0), "chmod scratch");
}

/* A bind of the staging tmpfs's directory src at dst, nosuid and nodev as that tmpfs is, and
 * noatime: a read there changes nothing, so a reset may keep what its last user only read
 * without that user having set an access time the next one reads (a channel between them). */
static void bind_scratch(const char *src, const char *dst)
{
	pd_ch_check(mount(src, dst, NULL, MS_BIND, NULL), dst);
	pd_ch_check(mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOATIME, NULL), dst);
}

static void mount_dev(const char *root, const char *skel)
{
	char d[PD_PATH], p[PD_PATH];
	pd_ch_cat(d, sizeof d, root, "/dev", NULL);
	mkdir(d, 0755);
	pd_ch_cat(p, sizeof p, skel, "/dev", NULL);
	pd_ch_check(mkdir(p, 0755), "mkdir dev");
	pd_ch_check(mount(p, d, NULL, MS_BIND, NULL), "mount /dev");
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty", NULL};
	for (int i = 0; nodes[i]; i++) {
		char src[64];
		pd_ch_cat(src, sizeof src, "/dev/", nodes[i], NULL);
		pd_ch_cat(p, sizeof p, d, "/", nodes[i]);
		/* no per-node remount: nosuid and noexec mean nothing for a character device */
		bind_file(src, p, 0);
	}
	/* devpts is mounted later, after the root (pd_ch_build_root): see MOUNT_ORDER */
	pd_ch_cat(p, sizeof p, d, "/pts", NULL);
	mkdir(p, 0755);
	pd_ch_cat(p, sizeof p, d, "/ptmx", NULL);
	pd_ch_check(symlink("pts/ptmx", p), "/dev/ptmx");
	pd_ch_cat(p, sizeof p, d, "/shm", NULL);
	pd_ch_check(mkdir(p, 01777), "mkdir /dev/shm");
	static const char *const links[][2] = {{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
					       {"/proc/self/fd/1", "stdout"},
					       {"/proc/self/fd/2", "stderr"}};
	for (int i = 0; i < 4; i++) {
		pd_ch_cat(p, sizeof p, d, "/", links[i][1]);
		pd_ch_check(symlink(links[i][0], p), p);
	}
	pd_ch_check(mount(NULL, d, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		    NULL),
	      "remount /dev read-only");
}

/* A new staging tmpfs, detached (the caller attaches it and drops it), as creation and reset
 * both make it: the same options, so it reads the same in /proc/self/mountinfo. */
static int new_stage(uint64_t disk_bytes)
{
	int fs = pd_ch_hold((int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
	pd_ch_check(fs, "fsopen tmpfs");
	char sz[32];
	pd_ch_utoa(disk_bytes, sz);
	pd_ch_check((int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", "tmpfs", 0), "staging source");
	pd_ch_check((int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0755", 0), "staging mode");
	pd_ch_check((int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", sz, 0), "staging size");
	/* overlay's xino (build_tree) needs an upper's inode numbers to leave it high bits;
	 * a kernel built with TMPFS_INODE64 would give 64-bit ones */
	pd_ch_check((int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "inode32", NULL, 0), "staging inode32");
	pd_ch_check((int)syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0), "create staging tmpfs");
	int m = pd_ch_hold((int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
				  MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
	pd_ch_check(m, "mount staging tmpfs");
	pd_ch_drop(fs);
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
		pd_ch_utoa((unsigned long)i, n);
		pd_ch_cat(p, sizeof p, "l", n, NULL);
		pd_ch_check(mkdir(p, 0755), "mkdir layer");
		pd_ch_check((int)syscall(SYS_move_mount, layer_fds[i], "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH),
		      "attach image layer");
	}
	pd_ch_check(mkdir(ROOT, 0755), "mkdir root");
	pd_ch_check(mkdir(UPPER, 0755), "mkdir upper");
	int ut = new_stage(c->disk_bytes);
	pd_ch_check((int)syscall(SYS_move_mount, ut, "", AT_FDCWD, UPPER, MOVE_MOUNT_F_EMPTY_PATH),
	      "attach upper tmpfs");
	pd_ch_drop(ut);
	/* for the audit: what differs from the image is there (creation: sent with READY; reset:
	 * left in the host's table, which the helper shares) */
	if (rep)
		rep->upper_fd = open(UPPER, O_PATH | O_DIRECTORY | O_CLOEXEC);
	else
		pd_ch_upper = open(UPPER, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* the root overlay stacks every layer whose destination is "/", first on top */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < c->nlayers; i++) {
			bool is_root = !strcmp(c->layer_dst[i], "/");
			if ((pass == 0) != is_root)
				continue;
			char n[8];
			pd_ch_utoa((unsigned long)i, n);
			char up[16], wk[16], lower[PD_MAX_LAYERS * 8];
			pd_ch_cat(up, sizeof up, UPPER "/", "u", n);
			pd_ch_cat(wk, sizeof wk, UPPER "/", "w", n);
			lower[0] = 0;
			size_t ln = 0;
			for (int j = 0; j < c->nlayers; j++) {
				if (strcmp(c->layer_dst[j], c->layer_dst[i]))
					continue;
				if (j < i)
					break; /* this destination was mounted with layer j */
				char m[8];
				pd_ch_utoa((unsigned long)j, m);
				ln = pd_ch_cat(lower + ln, sizeof lower - ln, ln ? ":" : "", "l", m) + ln;
			}
			if (!lower[0])
				continue;
			if (is_root) {
				pd_ch_cat(q, sizeof q, ROOT, NULL, NULL);
			} else {
				pd_ch_cat(q, sizeof q, ROOT, c->layer_dst[i], NULL);
				mkdirs(q, 0755);
			}
			pd_ch_check(mkdir(up, 0755), "mkdir upper");
			pd_ch_check(mkdir(wk, 0755), "mkdir work");
			pd_ch_cat(opts, sizeof opts, "lowerdir=", lower, ",upperdir=");
			pd_ch_cat(opts + strlen(opts), sizeof opts - strlen(opts), up, ",workdir=", wk);
			pd_ch_cat(opts + strlen(opts), sizeof opts - strlen(opts), ",userxattr,xino=on", NULL, NULL);
			pd_ch_check(mount("overlay", q, "overlay", MS_NOSUID | MS_NODEV, opts), "mount overlay");
			/* overlay's own checks at mount time write in the work directory: after them */
			pd_ch_cat(watch[nwatch++], sizeof watch[0], up, NULL, NULL);
			pd_ch_cat(watch[nwatch++], sizeof watch[0], wk, "/work", NULL);
		}
	}
	int rootfd = pd_ch_hold(open(ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC));
	pd_ch_check(rootfd, "open new root");
	/* the points we mount on must be plain directories of the root, not an image's links */
	static const char *const points[] = {"proc", "dev", "sys", "tmp", "work", NULL};
	for (int i = 0; points[i]; i++) {
		struct stat pst;
		if (fstatat(rootfd, points[i], &pst, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(pst.st_mode))
			pd_ch_check(unlinkat(rootfd, points[i], 0), points[i]);
		if (mkdirat(rootfd, points[i], !strcmp(points[i], "tmp") ? 01777 : 0755) < 0 &&
		    errno != EEXIST)
			pd_ch_die(points[i], errno);
	}
	/* /tmp and /work are scratch mounts like the image's directories, unless the image has files
	 * there (a checkout in /work, say): those stay, in the root overlay */
	for (size_t i = 0; i < PD_SCRATCH_IMG; i++) {
		pd_scratch_attr a = image_dir(rootfd, pd_ch_scratch[i].dst + 1);
		if (rep)
			rep->scr[i] = a;
		if (!a.on)
			continue;
		/* /work is the user's: the program and the host's files go there. /tmp keeps the
		 * image's (sticky 1777 root), which every user can use */
		if (!strcmp(pd_ch_scratch[i].dst, "/work") && (c->uid || c->gid)) {
			a.uid = c->uid;
			a.gid = c->gid;
			if (rep)
				rep->scr[i] = a;
		}
		set_attr(AT_FDCWD, pd_ch_scratch[i].name, &a);
		pd_ch_cat(q, sizeof q, ROOT, pd_ch_scratch[i].dst, NULL);
		bind_scratch(pd_ch_scratch[i].name, q);
	}
	/* an image may hold symlinks anywhere (even absolute ones to host paths): every bind target is
	 * resolved inside the new root and its missing parts created there, never on the host; after
	 * the scratch binds, so that one under /tmp or /work is not covered by them */
	for (int i = 0; i < c->nbinds; i++) {
		int tfd = pd_ch_hold(make_inside(rootfd, c->bind_dst[i], c->bind_is_dir[i]));
		pd_ch_check(tfd, c->bind_dst[i]);
		pd_ch_check((int)syscall(SYS_move_mount, bind_fds[i], "", tfd, "",
				   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH),
		      "attach bind mount");
		pd_ch_drop(tfd);
	}
	pd_ch_drop(rootfd);
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
	pd_ch_check(chdir(ROOT), "chdir new root");
	pd_ch_check((int)syscall(SYS_pivot_root, ".", "."), "pivot_root");
	for (int i = 0; i < stacked; i++)
		pd_ch_check(umount2(".", MNT_DETACH), "detach old root");
	pd_ch_check(chdir("/"), "chdir /");
}

void pd_ch_build_root(const child_cfg *c, const int *layer_fds, const int *bind_fds, int sysfs_fd)
{
	const char *skel = c->stage;
	char p[PD_PATH];
	pd_ch_check(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "make / private");
	pd_ch_check(mount("tmpfs", skel, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, SKELETON_OPTS),
	      "mount skeleton tmpfs");
	pd_ch_cat(p, sizeof p, skel, "/stage", NULL);
	pd_ch_check(mkdir(p, 0755), "mkdir stage");
	int st = new_stage(c->disk_bytes);
	pd_ch_check((int)syscall(SYS_move_mount, st, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH),
	      "attach staging tmpfs");
	pd_ch_check(fchdir(st), "enter staging tmpfs");
	pd_ch_drop(st);
	make_scratch(AT_FDCWD);
	/* MOUNT_ORDER: /proc and /dev before the root, parked in the skeleton and moved in after */
	pd_ch_cat(p, sizeof p, skel, "/park", NULL);
	pd_ch_check(mkdir(p, 0755), "mkdir park");
	mount_proc(p, skel);
	mount_dev(p, skel);
	build_tree(c, layer_fds, bind_fds, NULL);
	pd_ch_cat(p, sizeof p, skel, "/park/proc", NULL);
	pd_ch_check(mount(p, ROOT "/proc", NULL, MS_MOVE, NULL), "move /proc");
	pd_ch_cat(p, sizeof p, skel, "/park/dev", NULL);
	pd_ch_check(mount(p, ROOT "/dev", NULL, MS_MOVE, NULL), "move /dev");
	mount_pts(ROOT "/dev/pts");
	bind_scratch("shm", ROOT "/dev/shm");
	pd_ch_cat(p, sizeof p, ROOT, "/sys", NULL);
	mkdir(p, 0555);
	/* sysfs shows the network devices of the namespace it was made in, and only the owner of
	 * that namespace may make it: the host did, read-only (netns.c). With the host's network
	 * there is no /sys. */
	if (sysfs_fd >= 0)
		pd_ch_check((int)syscall(SYS_move_mount, sysfs_fd, "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH),
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
	for (size_t i = 0; i <= PD_NSCRATCH; i++) {
		int wd = -1;
		if (i == PD_NSCRATCH || i >= PD_SCRATCH_IMG || scr[i].on) {
			wd = inotify_add_watch(c->uwatch_fd, i < PD_NSCRATCH ? pd_ch_scratch[i].name : pts,
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
	rep->nswd = PD_NSCRATCH + 1;
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
			set_attr(AT_FDCWD, pd_ch_scratch[i].name, &c->scr[i]);
	for (int i = 0; i < c->nlayers; i++) {
		char n[8], p[16];
		pd_ch_utoa((unsigned long)i, n);
		pd_ch_cat(p, sizeof p, "l", n, NULL);
		pd_ch_check(mkdir(p, 0755), "mkdir layer");
	}
	pd_ch_check(mkdir(ROOT, 0755), "mkdir root");
	pd_ch_check(mkdir(UPPER, 0755), "mkdir upper");
	for (size_t i = 0; i < PD_NSCRATCH; i++) {
		if (i < PD_SCRATCH_IMG && !c->scr[i].on)
			continue;
		pd_ch_check(mount(pd_ch_scratch[i].dst, ROOT, NULL, MS_MOVE, NULL), "park the old scratch");
	}
	pd_ch_check(mount("/dev/pts", ROOT, NULL, MS_MOVE, NULL), "park the old /dev/pts");
	/* MOUNT_ORDER: /tmp, /work, then devpts, then /dev/shm, as a build mounts them */
	for (size_t i = 0; i < PD_SCRATCH_IMG; i++)
		if (c->scr[i].on)
			bind_scratch(pd_ch_scratch[i].name, pd_ch_scratch[i].dst);
	mount_pts("/dev/pts");
	bind_scratch(pd_ch_scratch[PD_SCRATCH_IMG].name, pd_ch_scratch[PD_SCRATCH_IMG].dst);
	watch_scratch(c, c->scr, "/dev/pts", rep);
	pd_ch_check(umount2(".", MNT_DETACH), "detach the staging tmpfs");
	pd_ch_check(chdir("/"), "chdir /");
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
	pd_ch_check(setns(ra->pidfd, CLONE_NEWUSER | CLONE_NEWNS), "enter the sandbox's namespaces");
	pd_ch_check(pd_ch_setresgid(0), "setresgid 0");
	pd_ch_check(pd_ch_setresuid(0), "setresuid 0");
	/* The new staging tmpfs goes over the old root's own root directory: the one mount point no
	 * user could have replaced with a link. Absolute paths still start at the old root (path
	 * lookup does not cross mounts stacked on the starting directory); what is new is made
	 * from the working directory. */
	int st = new_stage(c->disk_bytes);
	pd_ch_check((int)syscall(SYS_move_mount, st, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH),
	      "attach staging tmpfs");
	pd_ch_check(fchdir(st), "enter staging tmpfs");
	pd_ch_drop(st);
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
	pd_ch_check(mount("/proc", ROOT "/proc", NULL, MS_MOVE, NULL), "move /proc");
	pd_ch_check(mount("/dev", ROOT "/dev", NULL, MS_MOVE, NULL), "move /dev");
	if (c->has_sysfs)
		pd_ch_check(mount("/sys", ROOT "/sys", NULL, MS_MOVE, NULL), "move /sys");
	pd_ch_check(mount(ROOT "/dev/pts", "/proc", NULL, MS_MOVE, NULL), "park the old /dev/pts");
	pd_ch_check(mount(ROOT "/dev/shm", "/dev", NULL, MS_MOVE, NULL), "park the old /dev/shm");
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
	rep->upper_fd = -1;
	const size_t size = 256 * 1024;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			   -1, 0);
	if (stack == MAP_FAILED) {
		rep->err = errno;
		pd_ch_cat(rep->what, sizeof rep->what, "stack for the reset helper", NULL, NULL);
		return -1;
	}
	struct reset_arg ra = {c, pidfd, fds, rep};
	int saved_errno = errno;
	/* CLONE_VM | CLONE_VFORK: no copy of the host's memory; this thread waits until the helper
	 * ends. No CLONE_FS: setns needs its own root and cwd. CLONE_FILES: the host's descriptor
	 * table, not a copy, which cost a dup and a close of every descriptor the daemon holds (one
	 * per connection and several per sandbox) at every reset; what the helper opens it closes,
	 * on failure too (pd_ch_hold, pd_ch_drop, pd_ch_die). */
	pd_ch_helper(rep);
	/* The helper starts on this CPU, where this thread is about to sleep until it ends: the
	 * kernel places a new task on the least loaded CPU, which costs an IPI to wake it there
	 * and, under load, a wait behind the program running there, while this CPU goes idle. It
	 * inherits the one-CPU mask; this thread gets its own back. */
	cpu_set_t was, here;
	int cpu = sched_getcpu();
	bool pinned = false;
	if (cpu >= 0 && sched_getaffinity(0, sizeof was, &was) == 0) {
		CPU_ZERO(&here);
		CPU_SET(cpu, &here);
		pinned = sched_setaffinity(0, sizeof here, &here) == 0;
	}
	pid_t pid = pd_ch_clone(reset_entry, stack + size, CLONE_VM | CLONE_VFORK | CLONE_FILES, &ra);
	int cerr = errno;
	if (pinned && sched_setaffinity(0, sizeof was, &was) < 0) {
		/* the allowed CPUs changed meanwhile (a cpuset): any of them, not one for good */
		cpu_set_t any;
		memset(&any, 0xff, sizeof any);
		sched_setaffinity(0, sizeof any, &any);
	}
	pd_ch_helper(NULL);
	int ws = 0;
	pid_t w = -1;
	if (pid > 0)
		do
			w = waitpid(pid, &ws, __WALL);
		while (w < 0 && errno == EINTR);
#ifdef __SANITIZE_ADDRESS__
	/* A helper that failed ended in _exit from deep in its frames, whose redzones no epilogue
	 * cleared; ASan, which takes the helper for this thread (same TLS), does not know this stack
	 * and refuses to clear it at the noreturn call ("ignoring requested
	 * __asan_handle_no_return"). The kernel hands the same addresses to the next reset's mmap,
	 * whose helper then tripped over the stale shadow ("stack-buffer-overflow"), and that report,
	 * made in a child sharing this memory, left ASan's locks held here (LeakSanitizer's exit
	 * check waited forever). */
	ASAN_UNPOISON_MEMORY_REGION(stack, size);
#endif
	munmap(stack, size);
	errno = saved_errno;
	if (pid < 0) {
		rep->err = cerr;
		pd_ch_cat(rep->what, sizeof rep->what, "start the reset helper", NULL, NULL);
		return -1;
	}
	if (w == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
		return 0;
	if (!rep->err) {
		rep->err = EIO;
		pd_ch_cat(rep->what, sizeof rep->what, "the reset helper died", NULL, NULL);
	}
	return -1;
}

