/* upperlist.c: the sandbox's writable layers listed for a session's trajectory (the files a step
 * changed outside /work, /tmp and the working directory: /usr, /etc, /opt...).
 *
 * Those changes live in the overlays' upper directories, in a tmpfs that no path in the sandbox
 * reaches and of which the host holds a descriptor (upper_fd, tamper.c): what is there is exactly
 * what differs from the image. An entry is a file written or created (copied up whole), a
 * whiteout (a deletion: a 0:0 character device, or a file with the user.overlay.whiteout xattr),
 * or a directory: one copied up only for what is below it is no change and is left out, one made
 * there (not in the image), opaque (replaced whole) or whose mode differs from the image's is
 * listed. Whether the image has a path is looked up in its layers on the host, never following a
 * link (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS).
 *
 * The uppers are watched (upperwatch.c) so that a reset may keep an overlay nothing touched; a walk
 * is an event to those watches. So layers whose watches saw nothing are not walked: they hold only
 * what the build made, which is left out anyway. */
#define _GNU_SOURCE
#include "sandbox.h"
#include "tamper.h"
#include "tier.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_ENTRIES 50000
#define MAX_DEPTH 64

typedef struct list {
	pd_sandbox *s;
	const char *const *skip;
	pd_layer layers[PD_MAX_LAYERS];
	int nlayers;
	pd_upper_ent *e;
	size_t n, cap;
	bool full;
	int err;
} list;

/* The image's layers as the sandbox was made with them (pd_sb_resolve_layout's order: the
 * session snapshot's top layer first). */
static void image_layers(list *l)
{
	const pd_sandbox_opts *o = &l->s->opts;
	int n = 0;
	if (o->top_layer) {
		snprintf(l->layers[n].src, PD_PATH, "%s", o->top_layer);
		snprintf(l->layers[n++].dst, PD_PATH, "/");
	}
	if (o->layers && o->layers[0]) {
		for (int i = 0; o->layers[i] && n < PD_MAX_LAYERS; i++) {
			snprintf(l->layers[n].src, PD_PATH, "%s", o->layers[i]);
			snprintf(l->layers[n++].dst, PD_PATH, "/");
		}
	} else {
		int m = 0;
		pd_layer img[PD_MAX_LAYERS];
		bool def = !o->image;
		if (pd_image_layers(def ? l->s->ctx->default_image : o->image, def, img, &m, NULL) == 0)
			for (int i = 0; i < m && n < PD_MAX_LAYERS; i++)
				l->layers[n++] = img[i];
	}
	l->nlayers = n;
}

/* The image's entry at path (in the sandbox), by lstat of it in the layer that serves it: the
 * first that has it among the layers mounted at the deepest mount point above path. */
static bool in_image(const list *l, const char *path, struct stat *st)
{
	size_t best = 0;
	for (int i = 0; i < l->nlayers; i++) {
		size_t dl = strcmp(l->layers[i].dst, "/") ? strlen(l->layers[i].dst) : 0;
		if ((!dl || (!strncmp(path, l->layers[i].dst, dl) && (path[dl] == '/' || !path[dl]))) && dl >= best)
			best = dl;
	}
	for (int i = 0; i < l->nlayers; i++) {
		size_t dl = strcmp(l->layers[i].dst, "/") ? strlen(l->layers[i].dst) : 0;
		if (dl != best || (dl && strncmp(path, l->layers[i].dst, dl)))
			continue;
		int root = open(l->layers[i].src, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			continue;
		const char *rel = path[dl] ? path + dl : "/";
		struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		int fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof how);
		close(root);
		if (fd < 0)
			continue;
		int rc = fstat(fd, st);
		close(fd);
		if (rc == 0)
			return true;
	}
	return false;
}

static bool skipped(const list *l, const char *path)
{
	for (size_t i = 0; l->skip && l->skip[i]; i++) {
		size_t n = strlen(l->skip[i]);
		if (!strncmp(path, l->skip[i], n) && (path[n] == '/' || !path[n] || n == 1))
			return true;
	}
	return false;
}

/* the mount points a build makes where the image lacks them (exec.c upper_made), and the binds' */
static bool made(const list *l, const char *path)
{
	static const char *const points[] = {"/proc", "/dev", "/sys", "/tmp", "/work"};
	for (size_t i = 0; i < sizeof points / sizeof points[0]; i++)
		if (!strcmp(path, points[i]))
			return true;
	for (size_t i = 0; i < l->s->opts.nbinds; i++) {
		const char *d = l->s->opts.binds[i].dst;
		size_t n = strlen(path);
		if (d && !strncmp(d, path, n) && (d[n] == '/' || !d[n]))
			return true; /* the destination or one of its parents */
	}
	return false;
}

static void add(list *l, const char *path, const struct stat *st, bool deleted, bool img)
{
	if (l->n >= MAX_ENTRIES) {
		l->full = true;
		return;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		pd_upper_ent *e = realloc(l->e, cap * sizeof *e);
		if (!e) {
			l->err = ENOMEM;
			return;
		}
		l->e = e;
		l->cap = cap;
	}
	pd_upper_ent *e = &l->e[l->n];
	memset(e, 0, sizeof *e);
	if (!(e->path = strdup(path))) {
		l->err = ENOMEM;
		return;
	}
	e->deleted = deleted;
	e->in_image = img;
	e->mode = st->st_mode & S_IFMT;
	if (!deleted) {
		e->mode = st->st_mode;
		e->size = S_ISDIR(st->st_mode) ? 0 : (uint64_t)st->st_size;
		e->ino = st->st_ino;
		e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
		e->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	}
	l->n++;
}

static bool has_xattr(int dfd, const char *name, const char *attr)
{
	char p[64], v[8];
	snprintf(p, sizeof p, "/proc/self/fd/%d/%s", dfd, name);
	return lgetxattr(p, attr, v, sizeof v) >= 0;
}

/* Walks the upper directory dfd, which the sandbox sees at path. */
static void walk(list *l, int dfd, const char *path, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)) && !l->full && !l->err) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char p[PD_PATH];
		if (snprintf(p, sizeof p, "%s/%s", strcmp(path, "/") ? path : "", de->d_name) >= (int)sizeof p)
			continue;
		struct stat st, img;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || skipped(l, p))
			continue;
		bool whiteout = (S_ISCHR(st.st_mode) && major(st.st_rdev) == 0 && minor(st.st_rdev) == 0) ||
				(S_ISREG(st.st_mode) && st.st_size == 0 && has_xattr(dirfd(d), de->d_name, "user.overlay.whiteout"));
		bool have = in_image(l, p, &img);
		if (whiteout) {
			add(l, p, have ? &img : &st, true, have); /* the type of what was removed */
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			bool opaque = has_xattr(dirfd(d), de->d_name, "user.overlay.opaque") ||
				      has_xattr(dirfd(d), de->d_name, "trusted.overlay.opaque");
			/* opaque means something only over the image's directory: overlayfs marks a
			 * directory it makes where no layer has one opaque too (the build's /proc, /dev
			 * and /sys on an image without them), which hides nothing */
			if ((!have && !made(l, p)) ||
			    (have && (opaque || (img.st_mode & 07777) != (st.st_mode & 07777))))
				add(l, p, &st, false, have);
			if (depth < MAX_DEPTH) {
				int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0)
					walk(l, sub, p, depth + 1);
			}
			continue;
		}
		add(l, p, &st, false, have);
	}
	closedir(d);
}

static int cmp_ent(const void *a, const void *b)
{
	return strcmp(((const pd_upper_ent *)a)->path, ((const pd_upper_ent *)b)->path);
}

int pd_ct_upper_list(pd_sandbox *s, const char *const *skip, pd_upper_ent **out, size_t *n, pd_err *e)
{
	if (s->upper_fd < 0 || pd_uwatch_clean(s->ctx->uwatch, &s->upper_dirty))
		return 0; /* no layer to walk, or nothing touched them since they were built */
	pd_upper_dir ud[PD_MAX_LAYERS];
	int nd = pd_upper_dirs(s->pid, ud, PD_MAX_LAYERS);
	if (nd < 0)
		return pd_fail(e, errno ? errno : EIO, "the overlays of sandbox %s", s->id);
	list l = {.s = s, .skip = skip};
	image_layers(&l);
	for (int i = 0; i < nd && !l.err; i++) {
		int fd = openat(s->upper_fd, ud[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			walk(&l, fd, ud[i].dst, 0);
	}
	if (l.err) {
		pd_upper_list_free(l.e, l.n);
		return pd_fail(e, l.err, "list the writable layers of sandbox %s", s->id);
	}
	if (l.n)
		qsort(l.e, l.n, sizeof *l.e, cmp_ent);
	*out = l.e;
	*n = l.n;
	return l.full ? 1 : 0;
}

void pd_upper_list_free(pd_upper_ent *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i].path);
	free(l);
}
