/* Landlock: a second filesystem boundary behind the mount namespace, applied to every program of a
 * container-tier sandbox (docs/isolation.md#landlock). The ruleset is built per program, in the
 * program's process after its chdir and before it drops its privileges (become_program, child.c),
 * from the mounts the sandbox has at that moment: a reset replaces the root and the scratch
 * mounts, and Landlock's rules are bound to inodes, so a ruleset kept in init would name the old
 * ones. Init itself is never restricted (it answers the host's file operations, and Landlock
 * forbids mount changes to a restricted process).
 *
 * What it grants (rules add up along a path; nothing else is reachable):
 *   /            read, list, execute (every file of the image and of the mounts below)
 *   /X           everything but device nodes, for each directory X directly in / other than
 *                proc, sys and dev: the writable image (/usr, /etc, /root...), /tmp, /work
 *   /dev         read, write and ioctl of the existing nodes (null, tty, pts...); /dev/shm as /X
 *   binds        read-only ones read and execute only (a bind directly in / gets nothing more);
 *                writable ones as /X
 * So: no write anywhere under /proc (/proc/sys, /proc/self/...) or /sys, no new entry directly in
 * /, and no access at all to a host path the sandbox's mounts do not show (a descriptor or a path
 * that leads out of the sandbox's tree reaches no rule). The child side runs in the program's
 * process, which shares init's memory until its execve: no malloc, no stdio (child.c); the host
 * side (pd_landlock_abi, pd_landlock_mqueue_root, pd_landlock_top) runs in paddock. */
#define _GNU_SOURCE
#include "child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

#define LL_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_RX	(LL_READ | LANDLOCK_ACCESS_FS_EXECUTE)

int pd_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return v < 0 ? -errno : (int)v;
}

/* mq_open opens a queue on the IPC namespace's own kernel mount of the mqueue filesystem, whose
 * root Landlock's walk takes for a real root no rule covers: every queue would be refused. Rules
 * are bound to inodes, and a mount of mqueue made in that namespace has the same superblock, so a
 * rule on its root is found from the kernel's mount too. The mount API is denied inside the
 * sandbox (seccomp), so the host makes it, on this thread only (setns of an IPC namespace is
 * per thread), and goes back to its own namespace. Host side: runs in the daemon, not the child. */
int pd_landlock_mqueue_root(int pidfd)
{
	int self = open("/proc/thread-self/ns/ipc", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	int rc = -EINVAL, fs = -1;
	if (setns(pidfd, CLONE_NEWIPC) < 0) {
		rc = -errno;
		close(self);
		return rc;
	}
	fs = (int)syscall(SYS_fsopen, "mqueue", FSOPEN_CLOEXEC);
	if (fs < 0 || syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		rc = -errno;
	else {
		int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
				     MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
		rc = m < 0 ? -errno : m;
	}
	if (fs >= 0)
		close(fs);
	/* back to the daemon's namespace: a thread left in the sandbox's would be a leak of it */
	if (setns(self, CLONE_NEWIPC) < 0)
		abort();
	close(self);
	return rc;
}

/* Every filesystem right the kernel's ABI abi knows: all of them are handled (denied unless a
 * rule grants them), so a right this code does not grant is refused, not left unchecked. */
static uint64_t handled(int abi)
{
	uint64_t a = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: execute .. make_sym */
	if (abi >= 2)
		a |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		a |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		a |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return a;
}

/* A writable directory's rights: all but making device nodes and ioctls on them. */
static uint64_t writable(uint64_t all)
{
	return all & ~(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		       LANDLOCK_ACCESS_FS_IOCTL_DEV);
}

/* Grants access beneath path (absolute, in the sandbox's root); a path missing is no error (a
 * bind's parent the program removed, say). Returns 0 or -errno. */
static int grant(int rs, const char *path, uint64_t access, uint64_t all)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	/* a file's rule may hold only the rights that act on files */
	if (!S_ISDIR(st.st_mode))
		access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
			  LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
			  LANDLOCK_ACCESS_FS_IOCTL_DEV;
	struct landlock_path_beneath_attr pb = {.allowed_access = access & all, .parent_fd = fd};
	long rc = syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	int e = errno;
	close(fd);
	return rc < 0 ? -e : 0;
}

/* ---- host side: what the child's ruleset names ---------------------------------------------- */

static void add_top(child_cfg *c, const char *name, size_t len)
{
	if (!len || len >= sizeof c->ll_top[0] || c->nll_top >= PD_LL_TOP)
		return;
	static const char *const skip[] = {".", "..", "proc", "sys", "dev"};
	for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
		if (strlen(skip[i]) == len && !memcmp(skip[i], name, len))
			return;
	for (int i = 0; i < c->nll_top; i++)
		if (strlen(c->ll_top[i]) == len && !memcmp(c->ll_top[i], name, len))
			return;
	memcpy(c->ll_top[c->nll_top], name, len);
	c->ll_top[c->nll_top++][len] = 0;
}

/* the first component of an absolute path */
static void add_first(child_cfg *c, const char *path)
{
	while (*path == '/')
		path++;
	add_top(c, path, strcspn(path, "/"));
}

void pd_landlock_top(child_cfg *c, const pd_layer *layers, int nlayers)
{
	c->nll_top = 0;
	add_top(c, "tmp", 3);
	add_top(c, "work", 4);
	for (int i = 0; i < nlayers; i++) {
		if (strcmp(layers[i].dst, "/")) {
			add_first(c, layers[i].dst);
			continue;
		}
		DIR *d = opendir(layers[i].src);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			struct stat st;
			/* directories only: a link leads into one that has its own rule, a whiteout
			 * (a character device) names nothing */
			if (de->d_type == DT_DIR ||
			    (de->d_type == DT_UNKNOWN &&
			     fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			     S_ISDIR(st.st_mode)))
				add_top(c, de->d_name, strlen(de->d_name));
		}
		if (d)
			closedir(d);
	}
	for (int i = 0; i < c->nbinds; i++)
		add_first(c, c->bind_dst[i]);
}

/* ---- child side ------------------------------------------------------------------------------ */

static bool is_bind(const child_cfg *c, const char *path, bool *rw)
{
	for (int i = 0; i < c->nbinds; i++)
		if (!strcmp(c->bind_dst[i], path)) {
			*rw = c->bind_rw[i];
			return true;
		}
	return false;
}

/* Each directory directly in / the host listed, but proc, sys and dev, writable (a read-only
 * bind there only readable, by its own rule). */
static int grant_top(const child_cfg *c, int rs, uint64_t all)
{
	char path[PD_PATH];
	int rc = 0;
	for (int i = 0; !rc && i < c->nll_top; i++) {
		pd_ch_cat(path, sizeof path, "/", c->ll_top[i], NULL);
		bool rw = true;
		if (is_bind(c, path, &rw) && !rw)
			continue;
		rc = grant(rs, path, writable(all), all);
	}
	return rc;
}

int pd_ch_landlock(const child_cfg *c, int mq_fd)
{
	if (c->landlock_abi <= 0)
		return 0;
	uint64_t all = handled(c->landlock_abi);
	struct landlock_ruleset_attr ra = {.handled_access_fs = all};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
	if (rs < 0)
		return -errno;
	int rc = grant(rs, "/", LL_RX, all);
	if (!rc)
		rc = grant_top(c, rs, all);
	if (!rc)
		rc = grant(rs, "/dev",
			   LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
			       LANDLOCK_ACCESS_FS_IOCTL_DEV,
			   all);
	if (!rc)
		rc = grant(rs, "/dev/shm", writable(all), all);
	if (!rc)
		rc = grant(rs, "/proc", LL_READ, all);
	if (!rc)
		rc = grant(rs, "/sys", LL_READ, all);
	for (int i = 0; !rc && i < c->nbinds; i++)
		rc = grant(rs, c->bind_dst[i], c->bind_rw[i] ? writable(all) : LL_RX, all);
	if (!rc && mq_fd >= 0) {
		struct landlock_path_beneath_attr pb = {
		    .allowed_access =
			(LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
			 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE) &
			all,
		    .parent_fd = mq_fd};
		if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			rc = -errno;
	}
	if (!rc && syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		rc = -errno;
	close(rs);
	return rc;
}
