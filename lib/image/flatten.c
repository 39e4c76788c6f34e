/* Flattening: an image with more layers than a sandbox stacks gets its lowest layers merged into
 * one directory, what overlayfs would show of them: a whiteout removes the entry below it, an
 * opaque directory hides what the layers below had in it, an upper entry replaces a lower one.
 * Every file of the merged directory is a hard link to the stored layer's file (same filesystem,
 * all read-only), so flattening costs directories and inodes' link counts, not data. */
#define _GNU_SOURCE
#include "imgstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static int remove_at(int dfd, const char *name)
{
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc |= remove_at(dirfd(d), de->d_name);
	closedir(d);
	return rc < 0 ? -1 : unlinkat(dfd, name, AT_REMOVEDIR);
}

static bool is_opaque(int fd)
{
	char v[4];
	ssize_t n = fgetxattr(fd, "user.overlay.opaque", v, sizeof v);
	return n == 1 && v[0] == 'y';
}

/* A directory's owner, mode and user xattrs as the upper layer has them (overlay shows those). */
static int copy_meta(int src, int dst)
{
	struct stat st;
	if (fstat(src, &st) < 0 || fchown(dst, st.st_uid, st.st_gid) < 0 || fchmod(dst, st.st_mode & 07777) < 0)
		return -1;
	char names[4096];
	ssize_t n = flistxattr(src, names, sizeof names);
	for (ssize_t off = 0; n > 0 && off < n; off += (ssize_t)strlen(names + off) + 1) {
		const char *k = names + off;
		if (strncmp(k, "user.", 5) || !strncmp(k, "user.overlay.", 13))
			continue;
		char v[4096];
		ssize_t vl = fgetxattr(src, k, v, sizeof v);
		if (vl >= 0 && fsetxattr(dst, k, v, (size_t)vl, 0) < 0)
			return -1;
	}
	return 0;
}

static int apply_dir(int src, int dst, int depth)
{
	if (depth > 256)
		return errno = ELOOP, -1;
	int sfd = dup(src);
	DIR *d = sfd < 0 ? NULL : fdopendir(sfd);
	if (!d) {
		if (sfd >= 0)
			close(sfd);
		return -1;
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		const char *n = de->d_name;
		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		struct stat st, cur;
		if (fstatat(src, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -1;
			break;
		}
		bool have = fstatat(dst, n, &cur, AT_SYMLINK_NOFOLLOW) == 0;
		if (S_ISCHR(st.st_mode) && st.st_rdev == 0) { /* a whiteout */
			rc = have ? remove_at(dst, n) : 0;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (have && remove_at(dst, n) < 0)
				rc = -1;
			else if (linkat(src, n, dst, n, 0) < 0)
				rc = -1;
			continue;
		}
		int s2 = openat(src, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s2 < 0) {
			rc = -1;
			break;
		}
		if (have && (!S_ISDIR(cur.st_mode) || is_opaque(s2)) && remove_at(dst, n) < 0)
			rc = -1;
		else if ((!have || !S_ISDIR(cur.st_mode) || is_opaque(s2)) && mkdirat(dst, n, 0700) < 0)
			rc = -1;
		int d2 = rc < 0 ? -1 : openat(dst, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (d2 < 0 || copy_meta(s2, d2) < 0 || apply_dir(s2, d2, depth + 1) < 0)
			rc = -1;
		if (d2 >= 0)
			close(d2);
		close(s2);
	}
	closedir(d);
	return rc;
}

int imgs_flatten(const char *const *layers, int n, const char *dest, pd_err *e)
{
	if (mkdir(dest, 0755) < 0)
		return pd_fail(e, errno, "mkdir %s", dest);
	int dst = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dst < 0)
		return pd_fail(e, errno, "open %s", dest);
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		int src = open(layers[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (src < 0 || copy_meta(src, dst) < 0 || apply_dir(src, dst, 0) < 0)
			rc = pd_fail(e, errno, "flatten layer %s into %s", layers[i], dest);
		if (src >= 0)
			close(src);
	}
	close(dst);
	return rc;
}
