/* Where the file APIs may reach inside a sandbox: its files, never init's own /proc entries,
 * sysfs or a device.
 *
 * The host's file operations are resolved by the sandbox's init (files.c asks, child.c answers).
 * Init is a copy of the daemon, so a path that reaches procfs reaches *init*: /proc/self/maps is
 * the daemon's memory layout (its ASLR gone), /proc/self/timerslack_ns is init's timer slack,
 * which every later program of that sandbox inherits, across resets and users. A link planted by
 * a program (/work/x -> /proc/self/...) led there too, and a device file would have been opened
 * with init's capabilities.
 *
 * So each operation first resolves its path to an O_PATH descriptor, as if the sandbox's root
 * were "/" (RESOLVE_IN_ROOT: symlinks and ".." cannot leave it) and without magic links
 * (RESOLVE_NO_MAGICLINKS: /proc/<pid>/root, fd/N, cwd and the like). Then it looks at what was
 * reached. A file on a kernel pseudo-filesystem (procfs, sysfs, devpts, cgroupfs, ...), a device
 * or a socket is refused with EACCES before anything is opened for I/O. What passes is reopened
 * through that very descriptor, so nothing can be swapped in between the check and the open.
 * A file that does not exist yet is created (O_EXCL, no link followed) in a directory checked
 * the same way. Runs in init; no allocation. */
#define _GNU_SOURCE
#include "safepath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

/* Filesystems that show kernel or process state rather than files: none holds a user's file. */
static bool pseudo_fs(long type)
{
	static const unsigned long kinds[] = {
		PROC_SUPER_MAGIC, SYSFS_MAGIC,	  DEVPTS_SUPER_MAGIC, CGROUP_SUPER_MAGIC,
		CGROUP2_SUPER_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC,	SECURITYFS_MAGIC,
		BPF_FS_MAGIC,	  NSFS_MAGIC,	  PSTOREFS_MAGIC,	SELINUX_MAGIC,
		SMACK_MAGIC,	  EFIVARFS_MAGIC, ANON_INODE_FS_MAGIC, SOCKFS_MAGIC,
		PIPEFS_MAGIC,	  0x19800202 /* mqueue */, 0x62656570 /* configfs */,
		0x65735543 /* fusectl */, 0x42494e4d /* binfmt_misc */,
	};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if ((unsigned long)type == kinds[i])
			return true;
	return false;
}

static int resolve(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t how)
{
	struct open_how h;
	memset(&h, 0, sizeof h);
	h.flags = flags | O_CLOEXEC;
	h.mode = mode;
	h.resolve = how;
	return (int)syscall(SYS_openat2, dirfd, path, &h, sizeof h);
}

/* 0 if what fd (any kind, O_PATH too) reached may be handed to the host, else -1 with errno. */
static int allowed(int fd, bool link_ok)
{
	struct statfs fs;
	struct stat st;
	if (fstatfs(fd, &fs) < 0 || fstat(fd, &st) < 0)
		return -1;
	if (pseudo_fs((long)fs.f_type))
		return errno = EACCES, -1;
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
		return errno = EACCES, -1;
	if (S_ISLNK(st.st_mode) && !link_ok)
		return errno = ELOOP, -1;
	return 0;
}

/* The descriptor's own file, opened anew with flags (its /proc/self/fd entry: the one magic link
 * init follows, to a file already checked). */
static int reopen(int pfd, int flags, mode_t mode)
{
	char p[48];
	snprintf(p, sizeof p, "/proc/self/fd/%d", pfd);
	return open(p, (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_PATH)) | O_CLOEXEC, mode);
}

int pd_safe_parent(int root, const char *path, char *base, size_t size)
{
	char dir[4096];
	size_t n = strlen(path);
	if (n >= sizeof dir)
		return errno = ENAMETOOLONG, -1;
	memcpy(dir, path, n + 1);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = 0;
	char *slash = strrchr(dir, '/');
	const char *b = slash ? slash + 1 : dir;
	if (!*b || !strcmp(b, ".") || !strcmp(b, "..") || strlen(b) >= size)
		return errno = EINVAL, -1;
	memcpy(base, b, strlen(b) + 1);
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		memcpy(dir, "/", 2);
	int d = resolve(root, dir, O_PATH | O_DIRECTORY, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	if (d < 0)
		return -1;
	if (allowed(d, false) < 0) {
		int err = errno;
		close(d);
		return errno = err, -1;
	}
	return d;
}

int pd_safe_open(int root, const char *path, int flags, mode_t mode)
{
	uint64_t how = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	int p = resolve(root, path, O_PATH | (flags & (O_NOFOLLOW | O_DIRECTORY)), 0, how);
	if (p < 0 && errno == ENOENT && (flags & O_CREAT)) {
		/* a new file: in a checked directory, one component, no link followed, and O_EXCL so
		 * that it is the file made here and nothing a program put there meanwhile */
		char base[256];
		int d = pd_safe_parent(root, path, base, sizeof base);
		if (d < 0)
			return -1;
		int fd = resolve(d, base, (uint64_t)(flags | O_EXCL | O_NOFOLLOW), mode,
				 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
		int err = errno;
		close(d);
		return errno = err, fd;
	}
	if (p < 0)
		return -1;
	int fd = -1;
	if ((flags & O_CREAT) && (flags & O_EXCL))
		errno = EEXIST;
	else if (allowed(p, (flags & O_PATH) && (flags & O_NOFOLLOW)) == 0)
		fd = (flags & O_PATH) ? p : reopen(p, flags, mode);
	int err = errno;
	if (fd != p)
		close(p);
	return errno = err, fd;
}
