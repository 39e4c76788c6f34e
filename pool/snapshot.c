/* Snapshots of a session's files and forks from them: the copy of a session's files into a tree
 * (a snapshot's, a grading fork's: session_grade.c), the snapshots' store (names, TTLs, the tree a
 * fork stacks); taking one as a session's step is session_snapshot.c's.
 *
 * A snapshot is what the session's writable directories (/work, /tmp and the template's working
 * directory) hold when it is taken, copied once, through the sandbox's root as the host sees it
 * (/proc/<init>/root, no link ever followed), into <state>/snapshots/<name>/tree, each of them
 * opaque (user.overlay.opaque: what the session deleted from the image stays deleted in a fork);
 * processes, their memory and open files are not captured, nor changes to the root outside those
 * directories.
 * Ownership is kept relative to the sandbox (its root's files stay its root's), so are modes and
 * modification times. It is immutable once taken (a new name each time; the tree is only read),
 * has a TTL and a size cap (EFBIG past it), and is deleted once expired and no session uses it.
 *
 * A fork is a new sandbox of the template whose root has the tree as a read-only layer over the
 * image (pd_sandbox_opts.top_layer) under its own writable upper: N forks share one copy on disk
 * and in the page cache, and none sees another's writes. A snapshot of a fork copies the fork's
 * view (the tree and its changes) into a tree of its own, so snapshots of snapshots need no chain. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

typedef struct copy_ctx {
	uint32_t uid_base;
	uint64_t bytes, max, files;
	int err;
} copy_ctx;

static uint32_t rel_id(const copy_ctx *c, uint32_t host)
{
	return host >= c->uid_base && host - c->uid_base < 65536 ? host - c->uid_base : 65534;
}

static void keep_meta(copy_ctx *c, int dfd, const char *name, const struct stat *st)
{
	if (fchownat(dfd, name, rel_id(c, st->st_uid), rel_id(c, st->st_gid), AT_SYMLINK_NOFOLLOW) < 0 && !c->err)
		c->err = errno;
	if (!S_ISLNK(st->st_mode) && fchmodat(dfd, name, st->st_mode & 07777, 0) < 0 && !c->err)
		c->err = errno;
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW);
}

static void copy_loop(copy_ctx *c, int in, int out)
{
	char buf[1 << 16];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0) {
		c->bytes += (uint64_t)n;
		if (c->bytes > c->max) {
			c->err = EFBIG;
			break;
		}
		if (write(out, buf, (size_t)n) != n) {
			c->err = errno ? errno : ENOSPC;
			break;
		}
	}
}

static int copy_file(copy_ctx *c, int sfd, int dfd, const char *name, const struct stat *st)
{
	if (c->bytes + (uint64_t)st->st_size > c->max)
		return c->err = EFBIG, -1;
	int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat ist;
	if (in < 0 || fstat(in, &ist) < 0 || !S_ISREG(ist.st_mode)) {
		if (in >= 0)
			close(in);
		return 0; /* gone or swapped meanwhile: not in the snapshot */
	}
	int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return c->err = errno, -1;
	}
	/* in the kernel (sendfile: any file to a file, from the sandbox's tmpfs to the state
	 * directory's disk), the bytes never through a buffer of ours: a grade copies the whole
	 * session each time (bench --episode). A read/write loop where sendfile cannot. */
	ssize_t n;
	uint64_t sent = 0;
	while ((n = sendfile(out, in, NULL, 1 << 22)) > 0) {
		sent += (uint64_t)n;
		if ((c->bytes += (uint64_t)n) > c->max) {
			c->err = EFBIG;
			break;
		}
	}
	if (n < 0 && !sent && (errno == EINVAL || errno == ENOSYS))
		copy_loop(c, in, out);
	else if (n < 0 && !c->err)
		c->err = errno;
	close(in);
	close(out);
	if (c->err)
		return -1;
	c->files++;
	keep_meta(c, dfd, name, &ist);
	return 0;
}

/* copies the directory sfd into dfd (both taken, closed here) */
static int copy_dir(copy_ctx *c, int sfd, int dfd, int depth)
{
	DIR *d = fdopendir(sfd);
	if (!d) {
		close(sfd);
		close(dfd);
		return c->err = errno, -1;
	}
	struct dirent *de;
	while (!c->err && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 128) {
			if (mkdirat(dfd, de->d_name, 0700) < 0) {
				c->err = errno;
				break;
			}
			int s2 = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int d2 = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 >= 0 && d2 >= 0)
				copy_dir(c, s2, d2, depth + 1);
			else {
				if (s2 >= 0)
					close(s2);
				if (d2 >= 0)
					close(d2);
			}
			keep_meta(c, dfd, de->d_name, &st);
		} else if (S_ISREG(st.st_mode)) {
			copy_file(c, dirfd(d), dfd, de->d_name, &st);
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof target - 1);
			if (n < 0)
				continue;
			target[n] = 0;
			if (symlinkat(target, dfd, de->d_name) < 0)
				c->err = errno;
			else
				keep_meta(c, dfd, de->d_name, &st);
		}
		/* fifos, sockets, devices: not files a snapshot carries */
	}
	closedir(d);
	close(dfd);
	return c->err ? -1 : 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void session_rm_tree(const char *dir)
{
	rm_tree(dir);
}

/* a snapshot's name: the characters of a session id, so it names a directory and nothing else */
bool session_snapshot_name_ok(const char *n)
{
	size_t l = strlen(n);
	if (!l || l > 63 || n[0] == '.')
		return false;
	for (size_t i = 0; i < l; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= '0' && n[i] <= '9') ||
		      n[i] == '-' || n[i] == '_' || n[i] == '.'))
			return false;
	return true;
}

static bool in_use_locked(pd_pools *p, const char *name)
{
	for (pd_session *s = p->sessions; s; s = s->next)
		if (s->snapshot && !strcmp(s->snapshot, name))
			return true;
	return false;
}

/* Deletes the snapshots past their TTL that no session uses. */
void session_snapshots_sweep(pd_pools *p, const char *root)
{
	DIR *d = opendir(root);
	if (!d)
		return;
	struct dirent *de;
	time_t now = time(NULL);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char meta[4096];
		snprintf(meta, sizeof meta, "%s/%s/meta.json", root, de->d_name);
		json_t *m = json_load_file(meta, 0, NULL);
		json_int_t exp = json_integer_value(json_object_get(m, "expires_at"));
		json_decref(m);
		if (!m && !strstr(de->d_name, ".tmp-"))
			continue;
		pthread_mutex_lock(&p->mu);
		bool busy = in_use_locked(p, de->d_name);
		pthread_mutex_unlock(&p->mu);
		if (busy || (m && exp > now))
			continue;
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/%s", root, de->d_name);
		rm_tree(dir);
	}
	closedir(d);
}

/* Copies the session's writable directories (scan_dirs) into tree, through the sandbox's root as
 * the host sees it, no link followed; each directory copied is added to dirs (may be NULL). The
 * caller holds the session. Returns 0 or an errno (EFBIG past max bytes). */
int session_copy_tree(pd_session *s, const char *tree, uint64_t max, uint64_t *bytes, uint64_t *files, json_t *dirs)
{
	copy_ctx c = {pd_sandbox_uid_base(s->sb), 0, max, 0, 0};
	char proot[64];
	snprintf(proot, sizeof proot, "/proc/%d/root", (int)pd_sandbox_pid(s->sb));
	int rfd = open(proot, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; rfd >= 0 && s->scan_dirs[i] && !c.err; i++) {
		const char *dir = s->scan_dirs[i];
		bool dup = false;
		for (size_t j = 0; j < i; j++) {
			size_t l = strlen(s->scan_dirs[j]);
			dup |= !strncmp(dir, s->scan_dirs[j], l) && (dir[l] == 0 || dir[l] == '/');
		}
		if (dup)
			continue;
		struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
				       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		int sfd = (int)syscall(SYS_openat2, rfd, dir, &how, sizeof how);
		if (sfd < 0)
			continue;
		char dst[4096];
		snprintf(dst, sizeof dst, "%s%s", tree, dir);
		struct stat dst_st;
		if (pd_mkdir_p(dst, 0755) < 0 || fstat(sfd, &dst_st) < 0) {
			c.err = errno;
			close(sfd);
			break;
		}
		int dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			c.err = errno;
			close(sfd);
			break;
		}
		copy_dir(&c, sfd, dfd, 0);
		/* the directory itself as the sandbox had it (its mode: /tmp is 1777), and opaque: the
		 * copy is the session's whole view of it, so the image's entries below it (a file the
		 * agent deleted, which the session's upper hid with a whiteout) must not show through
		 * the tree in a fork or a grade. Not "/", which would hide the image itself. */
		chmod(dst, dst_st.st_mode & 07777);
		if (!c.err && strcmp(dir, "/") && setxattr(dst, "user.overlay.opaque", "y", 1, 0) < 0)
			c.err = errno;
		if (dirs)
			json_array_append_new(dirs, json_string(dir));
	}
	if (rfd >= 0)
		close(rfd);
	else
		c.err = errno;
	*bytes = c.bytes;
	*files = c.files;
	return c.err;
}

int pd_snapshot_tree(pd_pools *p, const char *name, char *tree, size_t len, char *tpl, size_t tlen, pd_err *e)
{
	if (!session_snapshot_name_ok(name))
		return pd_fail(e, EINVAL, "from_snapshot: 1 to 63 letters, digits, '-', '_' or '.'");
	const char *state = pd_ctx_state_dir(p->ctx);
	char root[4096], meta[4096];
	snprintf(root, sizeof root, "%s/snapshots", state);
	session_snapshots_sweep(p, root);
	snprintf(meta, sizeof meta, "%s/%s/meta.json", root, name);
	json_t *m = json_load_file(meta, 0, NULL);
	if (!m)
		return pd_fail(e, ENOENT, "no snapshot %s (or it expired)", name);
	snprintf(tpl, tlen, "%s", json_string_value(json_object_get(m, "template")) ?: "");
	json_decref(m);
	snprintf(tree, len, "%s/%s/tree", root, name);
	return 0;
}
