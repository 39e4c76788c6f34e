/* The default (host) image's id: the digest records carry for it, as an imported image's manifest
 * digest (issue 39: every record names its image by {name, digest}, the host image included).
 *
 * The host image is the generated root layer (images/host: the top-level directories and the
 * curated /etc) over the host's own /usr. Its id is "sha256:" + the SHA-256 of the layer's format
 * stamp, of every entry of the generated layer in name order (path, type and mode, size, the
 * content's digest or a link's target) and of what identifies the host's /usr: Debian's package
 * database (/var/lib/dpkg/status, whose text names every installed package and version), else
 * /usr's own inode and times. Two hosts with the same packages and the same curated /etc share the
 * id; an upgrade changes it.
 *
 * Computing it reads the layer (about 2 MB) and the package database (about 1 MB): a few
 * milliseconds, too many for every `paddock exec`. So it is kept in images/host.id (beside the
 * layer, not in it: the layer is every sandbox's root) with the key it was made under (the stamp, the database's size and mtime, /usr's inode and
 * mtime) and made again only when the key changes. */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#define DPKG_STATUS "/var/lib/dpkg/status"

static void add_file(pd_sha256 *h, int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	pd_sha256 c;
	char buf[65536], hex[65] = "-";
	ssize_t n;
	if (pd_sha256_init(&c) == 0) {
		while ((n = read(fd, buf, sizeof buf)) > 0)
			pd_sha256_add(&c, buf, (size_t)n);
		if (pd_sha256_end_hex(&c, hex) < 0)
			snprintf(hex, sizeof hex, "-");
	}
	close(fd);
	pd_sha256_add(h, hex, strlen(hex));
}

/* The entries of the directory dfd (taken), which is path in the layer, in name order. */
static void add_dir(pd_sha256 *h, int dfd, const char *path, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *nn);
			if (!nn)
				break;
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	if (n)
		qsort(names, n, sizeof *names, cmp_name);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		char line[PD_PATH + 64];
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		int l = snprintf(line, sizeof line, "%s/%s %o %lld ", path, names[i], (unsigned)st.st_mode,
				 S_ISREG(st.st_mode) ? (long long)st.st_size : 0LL);
		pd_sha256_add(h, line, (size_t)l < sizeof line ? (size_t)l : sizeof line - 1);
		if (S_ISREG(st.st_mode)) {
			add_file(h, dirfd(d), names[i]);
		} else if (S_ISLNK(st.st_mode)) {
			char t[PD_PATH];
			ssize_t tl = readlinkat(dirfd(d), names[i], t, sizeof t);
			if (tl > 0)
				pd_sha256_add(h, t, (size_t)tl);
		} else if (S_ISDIR(st.st_mode) && depth < 32) {
			int sub = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			char p[PD_PATH];
			if (sub >= 0 && snprintf(p, sizeof p, "%s/%s", path, names[i]) < (int)sizeof p)
				add_dir(h, sub, p, depth + 1);
			else if (sub >= 0)
				close(sub);
		}
		pd_sha256_add(h, "\n", 1);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
}

/* What says whether a kept id still holds: the layer's stamp, the package database's and /usr's
 * identity. */
static void id_key(const char *dir, char *key, size_t len)
{
	char stamp[PD_PATH], have[64] = "";
	snprintf(stamp, sizeof stamp, "%s/.paddock-image", dir);
	if (pd_read_file(stamp, have, sizeof have) <= 0)
		have[0] = 0;
	have[strcspn(have, "\n")] = 0;
	struct stat db = {0}, usr = {0};
	if (stat(DPKG_STATUS, &db) < 0)
		memset(&db, 0, sizeof db);
	if (stat("/usr", &usr) < 0)
		memset(&usr, 0, sizeof usr);
	snprintf(key, len, "%s|db %lld %lld.%09ld|usr %llu %lld.%09ld", have, (long long)db.st_size,
		 (long long)db.st_mtim.tv_sec, db.st_mtim.tv_nsec, (unsigned long long)usr.st_ino,
		 (long long)usr.st_mtim.tv_sec, usr.st_mtim.tv_nsec);
}

static int compute(const char *dir, const char *key, char out[PD_DIGEST_LEN])
{
	pd_sha256 h;
	if (pd_sha256_init(&h) < 0)
		return -1;
	pd_sha256_add(&h, "paddock host image\n", 19);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		pd_sha256_free(&h);
		return -1;
	}
	add_dir(&h, dfd, "", 0);
	pd_sha256_add(&h, "usr\n", 4);
	int fd = open(DPKG_STATUS, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char buf[65536];
		ssize_t n;
		while ((n = read(fd, buf, sizeof buf)) > 0)
			pd_sha256_add(&h, buf, (size_t)n);
		close(fd);
	} else {
		pd_sha256_add(&h, key, strlen(key)); /* no package database: /usr's own identity */
	}
	char hex[65];
	if (pd_sha256_end_hex(&h, hex) < 0)
		return -1;
	snprintf(out, PD_DIGEST_LEN, "sha256:%s", hex);
	return 0;
}

int pd_image_default_id(const char *dir, char out[PD_DIGEST_LEN])
{
	out[0] = 0;
	char key[512], path[PD_PATH], kept[1024];
	id_key(dir, key, sizeof key);
	snprintf(path, sizeof path, "%s.id", dir);
	/* "KEY\nsha256:HEX\n" */
	if (pd_read_file(path, kept, sizeof kept) > 0) {
		char *nl = strchr(kept, '\n');
		if (nl && (size_t)(nl - kept) == strlen(key) && !memcmp(kept, key, strlen(key)) &&
		    !strncmp(nl + 1, "sha256:", 7) && strlen(nl + 1) >= 7 + 64) {
			snprintf(out, PD_DIGEST_LEN, "%.71s", nl + 1);
			out[7 + 64] = 0;
			return 0;
		}
	}
	if (compute(dir, key, out) < 0)
		return -1;
	/* kept for the next process; a state dir that cannot be written only costs the next one the
	 * computation again */
	char tmp[PD_PATH], text[PD_DIGEST_LEN + 600];
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
	int l = snprintf(text, sizeof text, "%s\n%s\n", key, out);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		bool good = write(fd, text, (size_t)l) == l;
		close(fd);
		if (!good || rename(tmp, path) < 0)
			unlink(tmp);
	}
	return 0;
}
