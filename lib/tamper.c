/* tamper.c: what a program changed in the image, read from the writable layer itself.
 *
 * The sandbox's root (and each image layer mounted elsewhere) is an overlay whose upper
 * directory holds exactly what differs from the image: files written or created (copied up
 * whole: no metacopy), whiteouts for deletions (a 0:0 character device, or a file with the
 * user.overlay.whiteout xattr), opaque directories (user.overlay.opaque) for a directory replaced
 * whole. So after the program ends, a walk of the upper directories (never of the image: most
 * programs write nothing there, so the walk is of a near-empty tree) gives every change, including
 * those made by calls the syscall audit did not see (an io path it does not decode, a racing
 * thread). What is not in the upper did not change.
 *
 * The uppers live in a tmpfs of their own that no path in the sandbox reaches; init hands the
 * host a descriptor of it (child.c). Which directory of it is the upper of which mount point is
 * read from the sandbox's mountinfo ("upperdir=us/u0" on the overlay at "/").
 *
 * A session runs several programs in one root: the state before an exec is noted (each entry's
 * path, inode and ctime) so that only what that exec changed is reported. */
#define _GNU_SOURCE
#include "audit.h"
#include "internal.h"
#include "tamper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_ENTRIES 200000 /* a walk stops there: the disk limit bounds the upper anyway */
#define MAX_DEPTH 64

int pd_upper_dirs(pid_t init_pid, pd_upper_dir *out, int max)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mountinfo", (int)init_pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int n = 0;
	char *line = NULL;
	size_t cap = 0;
	while (n < max && getline(&line, &cap, f) > 0) {
		/* id parent maj:min root mountpoint options [optional...] - fstype source superopts */
		char *sep = strstr(line, " - overlay ");
		char *up = sep ? strstr(sep, "upperdir=") : NULL;
		if (!up)
			continue;
		char mp[PD_PATH];
		if (sscanf(line, "%*s %*s %*s %*s %511s", mp) != 1)
			continue;
		up += strlen("upperdir=");
		const char *slash = strchr(up, '/');
		if (!slash)
			continue;
		size_t len = strcspn(slash + 1, ",\n ");
		if (!len || len >= sizeof out[n].name)
			continue;
		memcpy(out[n].name, slash + 1, len);
		out[n].name[len] = 0;
		snprintf(out[n].dst, sizeof out[n].dst, "%s", mp);
		n++;
	}
	free(line);
	fclose(f);
	return n;
}

static uint64_t fnv(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t entry_key(const char *path, const struct stat *st)
{
	uint64_t h = fnv(path, 0xcbf29ce484222325ull);
	h ^= (uint64_t)st->st_ino * 0x9e3779b97f4a7c15ull;
	h ^= ((uint64_t)st->st_ctim.tv_sec * 1000000000ull + (uint64_t)st->st_ctim.tv_nsec) * 0xff51afd7ed558ccdull;
	return h;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

typedef struct walk {
	const pd_audit_opts *o;
	pd_result *r;
	uint64_t t_us;
	pd_tamper_base *snap; /* taking a snapshot: keys go here */
	const pd_tamper_base *base; /* scanning: keys to skip */
	size_t seen;
} walk;

static bool in_base(const pd_tamper_base *b, uint64_t k)
{
	return b && b->n && bsearch(&k, b->keys, b->n, sizeof k, cmp_u64);
}

static bool made(const pd_tamper_base *b, const char *path)
{
	for (size_t i = 0; b && i < b->nmade; i++)
		if (!strcmp(b->made[i], path))
			return true;
	return false;
}

int pd_tamper_base_made(pd_tamper_base *b, const char *path)
{
	char p[PD_PATH];
	if (path[0] != '/' || !pd_audit_normalize(path, p, sizeof p))
		return 0;
	/* the path and each parent: "/a/b/c", "/a/b", "/a" */
	while (strcmp(p, "/")) {
		if (!made(b, p)) {
			char **n = realloc(b->made, (b->nmade + 1) * sizeof *n);
			if (!n)
				return -1;
			b->made = n;
			if (!(n[b->nmade] = strdup(p)))
				return -1;
			b->nmade++;
		}
		char *cut = strrchr(p, '/');
		if (cut == p)
			break;
		*cut = 0;
	}
	return 0;
}

static void note(walk *w, const char *path, const struct stat *st, const char *mode)
{
	uint64_t k = entry_key(path, st);
	if (w->snap) {
		if (w->snap->n == w->snap->cap) {
			size_t nc = w->snap->cap ? w->snap->cap * 2 : 64;
			uint64_t *p = realloc(w->snap->keys, nc * sizeof *p);
			if (!p)
				return;
			w->snap->keys = p;
			w->snap->cap = nc;
		}
		w->snap->keys[w->snap->n++] = k;
		return;
	}
	if (in_base(w->base, k) || made(w->base, path) || !pd_audit_protected(w->o, path))
		return;
	pd_audit_record(w->r, w->o, PD_AK_TAMPER, "upper", mode, path, false, 0, w->t_us);
}

static bool has_xattr(int dfd, const char *name, const char *attr)
{
	char p[64], v[8];
	snprintf(p, sizeof p, "/proc/self/fd/%d/%s", dfd, name);
	return lgetxattr(p, attr, v, sizeof v) >= 0;
}

/* Walks the directory dfd (the sandbox's path for it: path), noting each entry. */
static void walk_dir(walk *w, int dfd, char *path, size_t plen, size_t size, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)) && w->seen < MAX_ENTRIES) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		w->seen++;
		size_t nl = strlen(de->d_name);
		if (plen + 1 + nl + 1 > size)
			continue;
		size_t at = plen;
		if (plen > 1)
			path[at++] = '/';
		else
			at = 1;
		memcpy(path + at, de->d_name, nl + 1);
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			path[plen] = 0;
			continue;
		}
		if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 0 && minor(st.st_rdev) == 0) {
			note(w, path, &st, "delete");
		} else if (S_ISDIR(st.st_mode)) {
			/* a directory copied up for what is below it is no change by itself; an opaque
			 * one was made there, or replaced what the image had */
			if (has_xattr(dirfd(d), de->d_name, "user.overlay.opaque") ||
			    has_xattr(dirfd(d), de->d_name, "trusted.overlay.opaque"))
				note(w, path, &st, "w"); /* made, or replaced */
			if (depth < MAX_DEPTH) {
				int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0)
					walk_dir(w, sub, path, at + nl, size, depth + 1);
			}
		} else if (S_ISREG(st.st_mode) && st.st_size == 0 &&
			   has_xattr(dirfd(d), de->d_name, "user.overlay.whiteout")) {
			note(w, path, &st, "delete");
		} else {
			note(w, path, &st, "w");
		}
		path[plen] = 0;
	}
	closedir(d);
}

static int run(int upper_fd, pid_t init_pid, walk *w)
{
	pd_upper_dir ud[PD_MAX_LAYERS];
	int n = pd_upper_dirs(init_pid, ud, PD_MAX_LAYERS);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		int fd = openat(upper_fd, ud[i].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		char path[PD_AUDIT_MAX];
		snprintf(path, sizeof path, "%s", ud[i].dst);
		walk_dir(w, fd, path, strlen(path), sizeof path, 0);
	}
	return 0;
}

int pd_tamper_snapshot(int upper_fd, pid_t init_pid, pd_tamper_base *b)
{
	memset(b, 0, sizeof *b);
	walk w = {.snap = b};
	int rc = run(upper_fd, init_pid, &w);
	if (b->n)
		qsort(b->keys, b->n, sizeof *b->keys, cmp_u64);
	return rc;
}

int pd_tamper_scan(int upper_fd, pid_t init_pid, const pd_audit_opts *o, const pd_tamper_base *base, pd_result *r,
		   uint64_t t_us)
{
	walk w = {.o = o, .r = r, .t_us = t_us, .base = base};
	return run(upper_fd, init_pid, &w);
}

void pd_tamper_base_free(pd_tamper_base *b)
{
	for (size_t i = 0; i < b->nmade; i++)
		free(b->made[i]);
	free(b->made);
	free(b->keys);
	free(b->names);
	memset(b, 0, sizeof *b);
}
