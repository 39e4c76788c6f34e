/* Files changed by a session's step: the writable directories (/work, /tmp and the template's
 * working directory) are listed after every step through the sandbox's root as the host sees it
 * (/proc/<init>/root, without following any link), and so is the image's writable layer (what
 * differs from the image anywhere else: /usr, /etc, /opt; pd_sandbox_upper_list); both are
 * compared with the previous listing; what was added, modified (size, mtime, ctime, inode or mode
 * differ) or deleted is reported, with a digest of the content read now through the root. */
#define _GNU_SOURCE
#include "trajectory.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DIGEST_MAX (16u << 20)

static int add(pd_fsmap *m, const char *path, const struct stat *st)
{
	if (m->n >= PD_FSMAP_MAX) {
		m->truncated = true;
		return -1;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		pd_fsent *e = realloc(m->e, cap * sizeof *e);
		if (!e)
			return -1;
		m->e = e;
		m->cap = cap;
	}
	pd_fsent *e = &m->e[m->n];
	e->path = strdup(path);
	if (!e->path)
		return -1;
	e->size = S_ISDIR(st->st_mode) ? 0 : (uint64_t)st->st_size;
	e->ino = st->st_ino;
	e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	e->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	e->mode = st->st_mode;
	e->upper = e->deleted = e->in_image = false;
	m->n++;
	return 0;
}

/* dfd is the directory at path (taken, closed here) */
static void walk(pd_fsmap *m, int dfd, const char *path, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)) && !m->truncated) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char p[4096];
		if (snprintf(p, sizeof p, "%s/%s", strcmp(path, "/") ? path : "", de->d_name) >= (int)sizeof p)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (add(m, p, &st) < 0)
			break;
		if (S_ISDIR(st.st_mode) && depth < 64) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				walk(m, sub, p, depth + 1);
		}
	}
	closedir(d);
}

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const pd_fsent *)a)->path, ((const pd_fsent *)b)->path);
}

/* path (absolute, inside the sandbox) opened with the sandbox's root as "/" and no link followed */
static int open_in(int root, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	return (int)syscall(SYS_openat2, root, path, &how, sizeof how);
}

static int open_root(pid_t init)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/root", (int)init);
	return open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int pd_fsmap_scan(pid_t init, const char *const *dirs, pd_fsmap *m)
{
	memset(m, 0, sizeof *m);
	int root = open_root(init);
	if (root < 0)
		return -1;
	for (size_t i = 0; dirs[i]; i++) {
		bool dup = false; /* the template's cwd may be /work itself, or under it */
		for (size_t j = 0; j < i; j++) {
			size_t l = strlen(dirs[j]);
			if (!strncmp(dirs[i], dirs[j], l) && (dirs[i][l] == 0 || dirs[i][l] == '/'))
				dup = true;
		}
		if (dup)
			continue;
		int d = open_in(root, dirs[i], O_RDONLY | O_DIRECTORY);
		if (d >= 0)
			walk(m, d, dirs[i], 0);
	}
	close(root);
	if (m->n)
		qsort(m->e, m->n, sizeof *m->e, cmp_ent);
	return 0;
}

int pd_fsmap_add_upper(pd_sandbox *sb, const char *const *skip, pd_fsmap *m)
{
	pd_upper_ent *u;
	size_t n;
	int rc = pd_sandbox_upper_list(sb, skip, &u, &n, NULL);
	if (rc < 0)
		return -1;
	if (rc > 0)
		m->truncated = true;
	for (size_t i = 0; i < n; i++) {
		if (m->n >= PD_FSMAP_MAX) {
			m->truncated = true;
			break;
		}
		struct stat st = {0};
		st.st_mode = u[i].mode;
		st.st_size = (off_t)u[i].size;
		st.st_ino = u[i].ino;
		st.st_mtim.tv_sec = u[i].mtime_ns / 1000000000;
		st.st_mtim.tv_nsec = u[i].mtime_ns % 1000000000;
		st.st_ctim.tv_sec = u[i].ctime_ns / 1000000000;
		st.st_ctim.tv_nsec = u[i].ctime_ns % 1000000000;
		if (add(m, u[i].path, &st) < 0)
			break;
		pd_fsent *e = &m->e[m->n - 1];
		e->upper = true;
		e->deleted = u[i].deleted;
		e->in_image = u[i].in_image;
	}
	pd_upper_list_free(u, n);
	if (m->n)
		qsort(m->e, m->n, sizeof *m->e, cmp_ent);
	return 0;
}

void pd_fsmap_free(pd_fsmap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].path);
	free(m->e);
	memset(m, 0, sizeof *m);
}

static const char *type_of(uint32_t mode)
{
	return S_ISREG(mode) ? "file" : S_ISDIR(mode) ? "dir" : S_ISLNK(mode) ? "symlink" : "other";
}

static json_t *digest_of(int root, const pd_fsent *e)
{
	char hex[65];
	if (S_ISLNK(e->mode)) {
		/* the link's own text: readlinkat on its parent, the link itself never followed */
		char dir[4096], target[4096];
		snprintf(dir, sizeof dir, "%s", e->path);
		char *slash = strrchr(dir, '/');
		if (!slash)
			return json_null();
		*slash = 0;
		int d = open_in(root, *dir ? dir : "/", O_RDONLY | O_DIRECTORY);
		ssize_t n = d >= 0 ? readlinkat(d, slash + 1, target, sizeof target) : -1;
		if (d >= 0)
			close(d);
		if (n < 0)
			return json_null();
		return pd_sha256_of(target, (size_t)n, hex) == 0 ? json_string(hex) : json_null();
	}
	if (!S_ISREG(e->mode) || e->size > DIGEST_MAX)
		return json_null();
	/* O_NONBLOCK: a fifo swapped in meanwhile must not hang the scan */
	int fd = open_in(root, e->path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return json_null();
	}
	pd_sha256 d;
	pd_sha256_init(&d);
	char buf[65536];
	ssize_t n;
	uint64_t total = 0;
	while ((n = read(fd, buf, sizeof buf)) > 0 && total <= DIGEST_MAX) {
		pd_sha256_add(&d, buf, (size_t)n);
		total += (uint64_t)n;
	}
	close(fd);
	if (n < 0 || total > DIGEST_MAX) {
		pd_sha256_free(&d);
		return json_null();
	}
	return pd_sha256_end_hex(&d, hex) == 0 ? json_string(hex) : json_null();
}

static json_t *change(int root, const pd_fsent *e, const char *what)
{
	json_t *o = json_pack("{s:o,s:s,s:s}", "path", pd_json_text(e->path), "change", what, "type", type_of(e->mode));
	if (strcmp(what, "deleted")) {
		json_object_set_new(o, "size", json_integer((json_int_t)e->size));
		if (!S_ISDIR(e->mode))
			json_object_set_new(o, "sha256", digest_of(root, e));
	}
	return o;
}

/* An entry as the sandbox's root shows it now (its writable layer's entry is gone, or was a
 * deletion): for a report of what is there again. */
static pd_fsent now_at(int root, const pd_fsent *e)
{
	pd_fsent x = *e;
	x.mode = 0;
	x.size = 0;
	int fd = open_in(root, e->path, O_PATH);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		x.mode = st.st_mode;
		x.size = S_ISDIR(st.st_mode) ? 0 : (uint64_t)st.st_size;
	}
	if (fd >= 0)
		close(fd);
	return x;
}

json_t *pd_fsmap_diff(pid_t init, const pd_fsmap *a, const pd_fsmap *b)
{
	json_t *arr = json_array();
	int root = open_root(init);
	if (root < 0)
		return arr;
	size_t i = 0, j = 0;
	while (i < a->n || j < b->n) {
		int c = i >= a->n ? 1 : j >= b->n ? -1 : strcmp(a->e[i].path, b->e[j].path);
		if (c < 0) {
			const pd_fsent *x = &a->e[i];
			if (!x->upper || (!x->deleted && !x->in_image)) {
				json_array_append_new(arr, change(root, x, "deleted"));
			} else {
				/* the layer no longer differs there (a reset): the image's entry is back */
				pd_fsent back = now_at(root, x);
				json_array_append_new(arr, change(root, &back, x->deleted ? "added" : "modified"));
			}
			i++;
		} else if (c > 0) {
			const pd_fsent *y = &b->e[j];
			json_array_append_new(arr, change(root, y, y->deleted ? "deleted" : y->upper && y->in_image ? "modified" : "added"));
			j++;
		} else {
			const pd_fsent *x = &a->e[i], *y = &b->e[j];
			/* a directory's times move with its entries, which are listed themselves */
			bool dirs = S_ISDIR(x->mode) && S_ISDIR(y->mode);
			if (x->deleted != y->deleted)
				json_array_append_new(arr, change(root, y, y->deleted ? "deleted" : "added"));
			else if (!y->deleted &&
				 (x->mode != y->mode || (!dirs && (x->size != y->size || x->ino != y->ino ||
								  x->mtime_ns != y->mtime_ns || x->ctime_ns != y->ctime_ns))))
				json_array_append_new(arr, change(root, y, "modified"));
			i++;
			j++;
		}
	}
	close(root);
	return arr;
}
