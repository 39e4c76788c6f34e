/* Files inside a sandbox: the host asks the sandbox's init to resolve a path within the sandbox's
 * root and gets an fd back, then does the I/O itself. Resolving inside the sandbox (not through
 * /proc/<pid>/root from the host) means the sandbox's own mounts, owners and permissions apply,
 * and a link planted by the program can never lead to a host file. */
#define _GNU_SOURCE
#include "audit.h"
#include "initmsg.h"
#include "sandbox.h"
#include "tier.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fileop_once(pd_sandbox *s, int sock, uint32_t op, const char *path, int flags, mode_t mode,
		       int *fd_out, pd_err *e);

/* through the sandbox's tier (tier.h): the container's is below */
static int fileop(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode, pd_fop_use use,
		  int *fd_out, pd_err *e)
{
	return s->tier->sb_fileop(s, op, path, flags, mode, use, fd_out, e);
}

int pd_ct_fileop(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode, pd_fop_use use, int *fd_out,
		 pd_err *e)
{
	/* every message of a file operation names its path (the callers print it as it is) */
	int sock = pd_sandbox_ctl(s, e);
	if (sock < 0)
		return pd_err_prefix(e, "%s: ", path ? path : "");
	if (!path || !*path)
		return pd_fail(e, EINVAL, "empty path");
	/* a name removed (it may come back as a link), or a descriptor handed out (its holder may do
	 * anything with it): the audit's kept resolutions go, to the next reset (audit.h) */
	if (op == FILEOP_UNLINK || op == FILEOP_RMDIR || use == PD_FOP_HANDED)
		pd_audit_names_off(s->names);
	bool reuse;
	if (pd_scratch_fileop_begin(s, op, path, flags, mode, use, &reuse, e) < 0)
		return pd_err_prefix(e, "%s: ", path);
	/* the last user's file, as it left it (init checked), overwritten in place: O_TRUNC */
	int rc = fileop_once(s, sock, op, path, reuse ? flags & ~O_CREAT : flags, mode, fd_out, e);
	if (rc < 0 && reuse) {
		/* not there as left after all: new scratch directories, and the open as asked */
		if (e)
			memset(e, 0, sizeof *e);
		rc = pd_scratch_fileop_unreuse(s, e);
		if (rc < 0)
			pd_err_prefix(e, "%s: ", path);
		if (rc == 0)
			rc = fileop_once(s, sock, op, path, flags, mode, fd_out, e);
	}
	if (rc == 0)
		pd_scratch_fileop_done(s, op, flags, use);
	return rc;
}

static int fileop_once(pd_sandbox *s, int sock, uint32_t op, const char *path, int flags, mode_t mode,
		       int *fd_out, pd_err *e)
{
	(void)s;
	size_t len = strlen(path);
	/* on the stack: a 4 KiB calloc per file operation was the allocation that made the worker's
	 * arena consolidate every chunk the previous request's record had freed (issue 42) */
	struct msg_fileop m;
	if (len >= sizeof m.path)
		return pd_fail(e, ENAMETOOLONG, "%s: path", path);
	memset(&m, 0, sizeof m);
	m.type = MSG_FILEOP;
	m.op = op;
	m.flags = flags;
	m.mode = mode;
	memcpy(m.path, path, len);
	int rc = pd_send_fds(sock, &m, sizeof m, NULL, 0);
	if (rc < 0)
		return pd_fail(e, errno, "%s: send file operation", path);
	struct pollfd pf = {sock, POLLIN, 0};
	int pr;
	do
		pr = poll(&pf, 1, 10000);
	while (pr < 0 && errno == EINTR);
	if (pr <= 0)
		return pd_fail(e, pr == 0 ? ETIMEDOUT : errno, "file operation on %s", path);
	struct msg_error r;
	int fds[1], nfds = 0;
	ssize_t n = pd_recv_fds(sock, &r, sizeof r, fds, &nfds, 1);
	return pd_fileop_reply(op, &r, n, fds, nfds, fd_out, path, e);
}

int pd_fileop_reply(uint32_t op, const void *buf, ssize_t n, int *fds, int nfds, int *fd_out,
		    const char *path, pd_err *e)
{
	pd_init_msg r;
	/* an open that "succeeded" without an fd would hand -1 to the caller, which then reported an
	 * empty error; an errno out of range (negative, say) is no errno */
	bool ok = pd_init_msg_decode(buf, n, &r) == MSG_FILEOP_DONE && (r.err || op != FILEOP_OPEN || nfds > 0);
	if (!ok || r.err) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		return ok ? pd_fail(e, r.err, "%s", path) : pd_fail(e, EPROTO, "file operation on %s: bad reply", path);
	}
	int first = 0;
	if (fd_out)
		*fd_out = nfds ? fds[first++] : -1;
	for (int i = first; i < nfds; i++)
		close(fds[i]);
	return 0;
}

static int open_in(pd_sandbox *s, const char *path, int flags, mode_t mode, pd_fop_use use, pd_err *e)
{
	int fd = -1;
	if (fileop(s, FILEOP_OPEN, path, flags, mode, use, &fd, e) < 0)
		return -1;
	/* opened non-blocking inside (fifos); the host wants ordinary blocking I/O */
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && !(flags & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int pd_sandbox_open(pd_sandbox *s, const char *path, int flags, mode_t mode, pd_err *e)
{
	return open_in(s, path, flags, mode, PD_FOP_HANDED, e);
}

static int regular_or_fail(int fd, const char *path, pd_err *e)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return pd_fail(e, errno, "stat %s", path);
	if (!S_ISREG(st.st_mode))
		return pd_fail(e, S_ISDIR(st.st_mode) ? EISDIR : EINVAL, "%s is not a regular file", path);
	return 0;
}

int pd_sandbox_write_file(pd_sandbox *s, const char *path, const void *data, size_t len, mode_t mode,
			  pd_err *e)
{
	int fd = open_in(s, path, O_WRONLY | O_CREAT | O_TRUNC, mode, PD_FOP_WRITE, e);
	if (fd < 0)
		return -1;
	if (regular_or_fail(fd, path, e) < 0) {
		pd_scratch_fileop_done(s, FILEOP_OPEN, O_CREAT, PD_FOP_INTERNAL); /* spoils it */
		close(fd);
		return -1;
	}
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : ENOSPC;
			close(fd);
			return pd_fail(e, err, "write %s", path);
		}
		p += n;
		left -= (size_t)n;
	}
	struct stat st;
	if (fstat(fd, &st) == 0)
		pd_scratch_host_wrote(s, path, mode, &st);
	else
		pd_scratch_fileop_done(s, FILEOP_OPEN, O_CREAT, PD_FOP_INTERNAL);
	if (close(fd) < 0)
		return pd_fail(e, errno, "close %s", path);
	return 0;
}

static int open_regular(pd_sandbox *s, const char *path, uint64_t max, uint64_t *size, pd_fop_use use,
			pd_err *e)
{
	int fd = open_in(s, path, O_RDONLY, 0, use, e);
	if (fd < 0)
		return -1;
	struct stat st;
	if (regular_or_fail(fd, path, e) < 0 || fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return pd_fail(e, EFBIG, "%s has %lld bytes, more than %llu", path, (long long)st.st_size,
			       (unsigned long long)max);
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

int pd_sandbox_open_regular(pd_sandbox *s, const char *path, uint64_t max, uint64_t *size, pd_err *e)
{
	return open_regular(s, path, max, size, PD_FOP_HANDED, e);
}

int pd_sandbox_read_file(pd_sandbox *s, const char *path, size_t max, char **out, size_t *len, pd_err *e)
{
	*out = NULL;
	*len = 0;
	uint64_t size;
	int fd = open_regular(s, path, max, &size, PD_FOP_INTERNAL, e);
	if (fd < 0)
		return -1;
	size_t cap = (size_t)size + 1, got = 0;
	char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		return pd_fail(e, ENOMEM, "read %s", path);
	}
	for (;;) {
		if (got + 1 >= cap) {
			/* the file grew while we read it */
			if (cap > max) {
				free(buf);
				close(fd);
				return pd_fail(e, EFBIG, "%s grew past %zu bytes", path, max);
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				close(fd);
				return pd_fail(e, ENOMEM, "read %s", path);
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			free(buf);
			close(fd);
			return pd_fail(e, err, "read %s", path);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got > max) { /* it grew past max in the last doubling */
		free(buf);
		return pd_fail(e, EFBIG, "%s grew past %zu bytes", path, max);
	}
	buf[got] = 0;
	*out = buf;
	*len = got;
	return 0;
}

int pd_sandbox_stat(pd_sandbox *s, const char *path, struct stat *st, pd_err *e)
{
	int fd = open_in(s, path, O_PATH | O_NOFOLLOW, 0, PD_FOP_INTERNAL, e);
	if (fd < 0)
		return -1;
	int rc = fstat(fd, st);
	int err = errno;
	close(fd);
	if (rc < 0)
		return pd_fail(e, err, "stat %s", path);
	/* the owner as the sandbox sees it (the host's ids are the sandbox's slot, which a client
	 * has no use for); unmapped ids read as the overflow id, as in the sandbox */
	uint32_t base = pd_sandbox_uid_base(s);
	st->st_uid = st->st_uid >= base && st->st_uid - base < PD_UID_RANGE ? st->st_uid - base : 65534;
	st->st_gid = st->st_gid >= base && st->st_gid - base < PD_UID_RANGE ? st->st_gid - base : 65534;
	return 0;
}

int pd_sandbox_list(pd_sandbox *s, const char *path, pd_dirent **out, size_t *n, pd_err *e)
{
	*out = NULL;
	*n = 0;
	int fd = open_in(s, path, O_RDONLY | O_DIRECTORY, 0, PD_FOP_INTERNAL, e);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		int err = errno;
		close(fd);
		return pd_fail(e, err, "list %s", path);
	}
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			pd_dirent *p = realloc(*out, cap * sizeof *p);
			if (!p) {
				closedir(d);
				free(*out);
				*out = NULL;
				*n = 0;
				return pd_fail(e, ENOMEM, "list %s", path);
			}
			*out = p;
		}
		pd_dirent *ent = &(*out)[(*n)++];
		memset(ent, 0, sizeof *ent);
		snprintf(ent->name, sizeof ent->name, "%s", de->d_name);
		struct stat st;
		/* one component relative to the listed directory: nothing to traverse */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			ent->mode = st.st_mode;
			ent->size = (uint64_t)st.st_size;
			ent->mtime = st.st_mtim.tv_sec;
			ent->ctime = st.st_ctim.tv_sec;
		}
	}
	closedir(d);
	return 0;
}

int pd_sandbox_remove(pd_sandbox *s, const char *path, pd_err *e)
{
	pd_err tmp;
	if (fileop(s, FILEOP_UNLINK, path, 0, 0, PD_FOP_INTERNAL, NULL, &tmp) == 0)
		return 0;
	if (tmp.code == EISDIR)
		return fileop(s, FILEOP_RMDIR, path, 0, 0, PD_FOP_INTERNAL, NULL, e);
	if (e)
		*e = tmp;
	return -1;
}

int pd_sandbox_mkdir(pd_sandbox *s, const char *path, mode_t mode, pd_err *e)
{
	char p[4096];
	size_t len = strlen(path);
	if (len >= sizeof p)
		return pd_fail(e, ENAMETOOLONG, "%s: path", path);
	memcpy(p, path, len + 1);
	for (char *q = p + 1;; q++) {
		if (*q == '/' || *q == 0) {
			char saved = *q;
			*q = 0;
			pd_err tmp;
			if (fileop(s, FILEOP_MKDIR, p, 0, mode, PD_FOP_INTERNAL, NULL, &tmp) < 0 && tmp.code != EEXIST) {
				if (e)
					*e = tmp;
				return -1;
			}
			*q = saved;
			if (!saved)
				break;
		}
	}
	return 0;
}
