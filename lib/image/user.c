/* A user spec ("1000", "1000:100", "app", "app:staff", an image config's User) resolved to ids
 * inside a sandbox, names looked up in the image's own /etc/passwd and /etc/group: the files
 * its layers stack to (top first, as overlayfs reads them), never the host's. A link there is not
 * followed (it could point anywhere on the host, outside any sandbox's root). */
#define _GNU_SOURCE
#include "imgstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define ID_FILE_MAX (4u << 20)

/* The whole file (closed here) as a NUL-terminated text, at most ID_FILE_MAX bytes. */
static int read_text(int fd, const char *name, char **out, pd_err *e)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > ID_FILE_MAX) {
		close(fd);
		return pd_fail(e, EFBIG, "the image's /etc/%s: not a regular file of at most %u bytes", name,
			       ID_FILE_MAX);
	}
	char *b = malloc((size_t)st.st_size + 1);
	size_t len = 0;
	ssize_t n = 0;
	while (b && len < (size_t)st.st_size && (n = read(fd, b + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;
	int err = !b ? ENOMEM : n < 0 ? errno : 0;
	close(fd);
	if (err) {
		free(b);
		return pd_fail(e, err, "the image's /etc/%s", name);
	}
	b[len] = 0;
	*out = b;
	return 0;
}

static bool opaque_dir(int dfd)
{
	char v[4];
	ssize_t n = fgetxattr(dfd, "user.overlay.opaque", v, sizeof v);
	return n == 1 && v[0] == 'y';
}

/* The text of etc/NAME as the layers stack it, or NULL in *out when no layer has it (or the
 * top one that names it deleted it). -1 on an unreadable or non-regular file. */
static int stacked_file(const char *const *layers, const char *name, char **out, pd_err *e)
{
	*out = NULL;
	for (int i = 0; layers && layers[i]; i++) {
		int lfd = open(layers[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (lfd < 0)
			return pd_fail(e, errno, "image layer %s", layers[i]);
		struct stat st;
		if (fstatat(lfd, "etc", &st, AT_SYMLINK_NOFOLLOW) < 0) {
			close(lfd);
			if (errno == ENOENT)
				continue;
			return pd_fail(e, errno, "the image's /etc");
		}
		if (!S_ISDIR(st.st_mode)) { /* a whiteout, or a link: no /etc of the image's below */
			close(lfd);
			if (S_ISLNK(st.st_mode))
				return pd_fail(e, ELOOP, "the image's /etc is a symbolic link (not followed)");
			return 0;
		}
		int dfd = openat(lfd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(lfd);
		if (dfd < 0)
			return pd_fail(e, errno, "the image's /etc");
		bool opq = opaque_dir(dfd);
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			int err = errno;
			close(dfd);
			if (err != ENOENT)
				return pd_fail(e, err, "the image's /etc/%s", name);
			if (opq)
				return 0; /* the layers below are hidden */
			continue;
		}
		if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
			close(dfd);
			return 0; /* deleted in this layer */
		}
		if (!S_ISREG(st.st_mode)) {
			close(dfd);
			return pd_fail(e, S_ISLNK(st.st_mode) ? ELOOP : EINVAL,
				       "the image's /etc/%s is not a regular file (links are not followed)", name);
		}
		int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		close(dfd);
		if (fd < 0)
			return pd_fail(e, errno, "the image's /etc/%s", name);
		return read_text(fd, name, out, e);
	}
	return 0;
}

static bool numeric(const char *s, uint32_t *out)
{
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9)
		return false;
	*out = (uint32_t)strtoul(s, NULL, 10);
	return true;
}

/* The line of text (passwd or group format) whose field key (0: the name) equals want, split into
 * its fields; fields[2] and [3] of passwd are the uid and gid, fields[2] of group the gid. */
static bool find_entry(const char *text, int key, const char *want, uint32_t *id2, uint32_t *id3)
{
	for (const char *l = text; l && *l;) {
		const char *end = strchr(l, '\n');
		size_t n = end ? (size_t)(end - l) : strlen(l);
		char line[1024];
		if (n < sizeof line && *l != '#') {
			memcpy(line, l, n);
			line[n] = 0;
			char *f[4] = {0};
			char *p = line;
			for (int k = 0; k < 4 && p; k++) {
				f[k] = p;
				p = strchr(p, ':');
				if (p)
					*p++ = 0;
			}
			uint32_t a = 0, b = 0;
			if (f[2] && numeric(f[2], &a) && (!id3 || (f[3] && numeric(f[3], &b))) && !strcmp(f[key], want)) {
				*id2 = a;
				if (id3)
					*id3 = b;
				return true;
			}
		}
		l = end ? end + 1 : NULL;
	}
	return false;
}

int pd_user_resolve(const char *const *layers, const char *spec, uint32_t *uid, uint32_t *gid, pd_err *e)
{
	char u[256];
	if (!spec || strlen(spec) >= sizeof u)
		return pd_fail(e, EINVAL, "user '%s': too long", spec ? spec : "");
	snprintf(u, sizeof u, "%s", spec);
	char *g = strchr(u, ':');
	if (g)
		*g++ = 0;
	char *passwd = NULL, *group = NULL;
	int rc = 0;
	uint32_t pu = 0, pg = 0, x;
	bool have_gid = false;
	if (!*u) {
		rc = pd_fail(e, EINVAL, "user '%s': no user", spec);
		goto out;
	}
	bool need_passwd = !numeric(u, &pu) || !g;
	bool need_group = g && !numeric(g, &x);
	if ((need_passwd && stacked_file(layers, "passwd", &passwd, e) < 0) ||
	    (need_group && stacked_file(layers, "group", &group, e) < 0)) {
		rc = -1;
		goto out;
	}
	if (!numeric(u, &pu)) {
		if (!passwd || !find_entry(passwd, 0, u, &pu, &pg)) {
			rc = pd_fail(e, ENOENT, "user '%s' is not in the image's /etc/passwd", u);
			goto out;
		}
		have_gid = true;
	} else if (!g) {
		/* a bare uid: its passwd entry's group, else the group of the same number */
		char num[16];
		snprintf(num, sizeof num, "%u", pu);
		uint32_t same;
		have_gid = passwd && find_entry(passwd, 2, num, &same, &pg);
	}
	if (g) {
		if (!numeric(g, &pg)) {
			if (!group || !find_entry(group, 0, g, &pg, NULL)) {
				rc = pd_fail(e, ENOENT, "group '%s' is not in the image's /etc/group", g);
				goto out;
			}
		}
	} else if (!have_gid) {
		pg = pu;
	}
	if (pu >= 65536 || pg >= 65536 || pu == 65533 || pg == 65533) {
		rc = pd_fail(e, ERANGE, "user '%s' is %u:%u: ids must be below 65536 and not 65533 (init's)", spec,
			     pu, pg);
		goto out;
	}
	*uid = pu;
	*gid = pg;
out:
	free(passwd);
	free(group);
	return rc;
}

int pd_image_user(const pd_image *im, const char *spec, uint32_t *uid, uint32_t *gid, pd_err *e)
{
	return pd_user_resolve((const char *const *)im->layers, spec, uid, gid, e);
}
