/* The small tools the problem parsers share (problem.c, tests.c, episode.c, request.c), below
 * all of them and calling none: a refusal that names where, a file read whole within a size, a
 * JSON object's unknown fields refused, the order of file names. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pd_jfail_at(pd_err *e, const char *where, const char *fmt, ...)
{
	char m[sizeof e->msg]; /* as long as the message: pd_refuse cuts the whole at a character boundary */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	return pd_refuse(e, "%s: %s", where, m);
}

int pd_jrefusal(pd_err *e)
{
	if (e->code != EINVAL)
		return -1;
	/* the library's parser gives EINVAL as its cause: a client's 400 carries the field and the
	 * reason only, as every other refusal does */
	char m[sizeof e->msg];
	snprintf(m, sizeof m, "%s", e->msg);
	return pd_refuse(e, "%s", m);
}

/* Reads a regular file of at most max bytes (NUL-terminated copy). */
int pd_jslurp(const char *path, size_t max, char **out, size_t *len, pd_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return pd_fail(e, errno, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return pd_refuse(e, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return pd_fail(e, EFBIG, "%s: %lld bytes, over the %zu allowed", path, (long long)st.st_size, max);
	}
	char *b = malloc((size_t)st.st_size + 1);
	size_t n = 0;
	while (b && n < (size_t)st.st_size) {
		ssize_t r = read(fd, b + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (!b || n != (size_t)st.st_size) { /* changed while read: refuse rather than judge half */
		free(b);
		return pd_fail(e, EIO, "%s: could not read it whole (changed while loaded?)", path);
	}
	b[n] = 0;
	*out = b;
	*len = n;
	return 0;
}

int pd_jname_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int pd_junknown_fields(json_t *o, const char *where, const char *const *known, pd_err *e)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool ok = false;
		for (int i = 0; known[i] && !ok; i++)
			ok = !strcmp(k, known[i]);
		if (!ok)
			return pd_jfail_at(e, where, "%s: unknown field", k);
	}
	return 0;
}
