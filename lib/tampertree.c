/* tampertree.c: changes to protected paths that no writable layer holds, found by comparing the
 * trees before and after a program.
 *
 * tamper.c's diff of the overlay's upper directories is exact, but only for the image: a protected
 * path under a scratch directory (/work, /tmp, /dev/shm are tmpfs mounts of their own, e.g. a
 * task's tests copied to /work/tests) or on a writable bind mount changes in place, where only the
 * syscall audit sees it — and a racing thread can make the kernel write to another file than the
 * one the audit judged (audit.c's caveat). So each such protected tree is walked before the exec
 * and after it, through the sandbox's root, and every entry is keyed by its path, inode and ctime
 * (which the kernel moves at each write, chmod, chown, link or rename, and a program cannot set:
 * clock_settime is denied). An entry whose key is new was written, made or moved in; a tree with
 * fewer of its old paths lost one. Only the protect entries a policy names are walked (the default
 * "/" is the image's, which the layer diff covers), so a run without them pays nothing. */
#define _GNU_SOURCE
#include "audit.h"
#include "internal.h"
#include "tamper.h"

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

#define TREE_MAX_ENTRIES 100000 /* per walk; a tree larger than that is not a test directory */
#define TREE_MAX_DEPTH 32

static const char *const tmpfs_mounts[] = {"/tmp", "/work", "/dev/shm", NULL};

static uint64_t name_key(const char *path)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *s = path; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t tree_key(const char *path, const struct stat *st)
{
	uint64_t h = name_key(path);
	h ^= (uint64_t)st->st_ino * 0x9e3779b97f4a7c15ull;
	h ^= ((uint64_t)st->st_ctim.tv_sec * 1000000000ull + (uint64_t)st->st_ctim.tv_nsec) * 0xff51afd7ed558ccdull;
	h ^= (uint64_t)st->st_mode << 7;
	return h;
}

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int pd_tamper_tree_roots(const pd_audit_opts *o, const pd_bind *binds, size_t nbinds, char roots[][PD_PATH],
			 int max)
{
	int n = 0;
	for (int i = 0; o && o->protect && o->protect[i] && n < max; i++) {
		const char *p = o->protect[i];
		char norm[PD_AUDIT_MAX];
		if (p[0] != '/' || !pd_audit_normalize(p, norm, sizeof norm) || !strcmp(norm, "/") ||
		    strlen(norm) >= PD_PATH)
			continue;
		bool off = pd_path_under(norm, tmpfs_mounts);
		for (size_t b = 0; !off && b < nbinds; b++) {
			const char *const one[] = {binds[b].dst, NULL};
			off = binds[b].rw && binds[b].dst && pd_path_under(norm, one);
		}
		if (off)
			snprintf(roots[n++], PD_PATH, "%s", norm);
		/* a writable bind inside a protected tree of the image: its own tree */
		for (size_t b = 0; b < nbinds && n < max; b++) {
			const char *const one[] = {norm, NULL};
			char d[PD_AUDIT_MAX];
			if (binds[b].rw && binds[b].dst && pd_audit_normalize(binds[b].dst, d, sizeof d) && strcmp(d, norm) &&
			    strlen(d) < PD_PATH && pd_path_under(d, one))
				snprintf(roots[n++], PD_PATH, "%s", d);
		}
	}
	return n;
}

typedef struct tree_walk {
	pd_tamper_base *snap;       /* taking a snapshot: keys go here */
	const pd_tamper_base *base; /* scanning: keys of before */
	const pd_audit_opts *o;
	pd_result *r;
	uint64_t t_us;
	size_t seen, matched;
	bool cut; /* an entry left unwalked (the caps): what lies there is unknown */
} tree_walk;

static bool push(uint64_t **a, size_t *n, size_t *cap, uint64_t k)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		uint64_t *p = realloc(*a, nc * sizeof *p);
		if (!p)
			return false;
		*a = p;
		*cap = nc;
	}
	(*a)[(*n)++] = k;
	return true;
}

static bool has(const uint64_t *a, size_t n, uint64_t k)
{
	return n && bsearch(&k, a, n, sizeof k, cmp_key);
}

static void tree_note(tree_walk *w, const char *path, const struct stat *st)
{
	uint64_t k = tree_key(path, st), nk = name_key(path);
	if (w->snap) {
		size_t names_cap = w->snap->names_cap;
		if (push(&w->snap->keys, &w->snap->n, &w->snap->cap, k) &&
		    !push(&w->snap->names, &w->snap->nnames, &names_cap, nk))
			w->snap->n--; /* both or neither */
		w->snap->names_cap = names_cap;
		return;
	}
	if (w->base && has(w->base->names, w->base->nnames, nk))
		w->matched++;
	if (w->base && has(w->base->keys, w->base->n, k))
		return;
	if (pd_audit_protected(w->o, path))
		pd_audit_record(w->r, w->o, PD_AK_TAMPER, "tree", "w", path, false, 0, w->t_us);
}

static void tree_dir(tree_walk *w, int dfd, char *path, size_t plen, size_t size, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (w->seen >= TREE_MAX_ENTRIES) {
			w->cut = true;
			break;
		}
		w->seen++;
		size_t nl = strlen(de->d_name);
		if (plen + 1 + nl + 1 > size) {
			w->cut = true;
			continue;
		}
		path[plen] = '/';
		memcpy(path + plen + 1, de->d_name, nl + 1);
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			tree_note(w, path, &st);
			int sub;
			if (S_ISDIR(st.st_mode) && depth >= TREE_MAX_DEPTH)
				w->cut = true;
			else if (S_ISDIR(st.st_mode) &&
				 (sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
				tree_dir(w, sub, path, plen + 1 + nl, size, depth + 1);
		}
		path[plen] = 0;
	}
	closedir(d);
}

/* Walks the tree at root (a path in the sandbox) from rootfd, its links not followed: the root
 * itself is an entry too (made a link or removed, it is a change). */
static void tree_walk_one(tree_walk *w, int rootfd, const char *root)
{
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	char path[PD_AUDIT_MAX];
	snprintf(path, sizeof path, "%s", root);
	int fd = (int)syscall(SYS_openat2, rootfd, root + 1, &how, sizeof how);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return; /* not there (or no longer): the count of keys tells */
	}
	tree_note(w, path, &st);
	if (S_ISDIR(st.st_mode))
		tree_dir(w, fd, path, strlen(path), sizeof path, 0);
	else
		close(fd);
}

int pd_tamper_tree_snapshot(int rootfd, char roots[][PD_PATH], int nroots, pd_tamper_base *b)
{
	memset(b, 0, sizeof *b);
	for (int i = 0; i < nroots && i < PD_TAMPER_TREES; i++) {
		tree_walk w = {.snap = b};
		tree_walk_one(&w, rootfd, roots[i]);
		b->tree_n[i] = b->nnames;
		b->tree_cut |= w.cut;
	}
	if (b->n)
		qsort(b->keys, b->n, sizeof *b->keys, cmp_key);
	if (b->nnames)
		qsort(b->names, b->nnames, sizeof *b->names, cmp_key);
	return 0;
}

int pd_tamper_tree_scan(int rootfd, char roots[][PD_PATH], int nroots, const pd_audit_opts *o,
			const pd_tamper_base *base, pd_result *r, uint64_t t_us)
{
	bool cut = base->tree_cut;
	for (int i = 0; i < nroots && i < PD_TAMPER_TREES; i++) {
		tree_walk w = {.base = base, .o = o, .r = r, .t_us = t_us};
		tree_walk_one(&w, rootfd, roots[i]);
		cut |= w.cut;
		size_t had = base->tree_n[i] - (i ? base->tree_n[i - 1] : 0);
		if (w.matched < had && pd_audit_protected(o, roots[i]))
			pd_audit_record(r, o, PD_AK_TAMPER, "tree", "delete", roots[i], false, 0, t_us);
	}
	return cut ? 1 : 0;
}
