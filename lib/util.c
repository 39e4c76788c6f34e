/* Small helpers: errors as values, file I/O on kernel interface files, fd passing, parsing. */
#define _GNU_SOURCE
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

size_t pd_utf8_cut(const char *s, size_t n)
{
	/* back over the continuation bytes at the end (a character has at most three) to its lead */
	size_t i = n;
	while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0)
		return n;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
	return lead >= 0xc0 && n - (i - 1) < need ? i - 1 : n;
}

/* A message cut at the end of its buffer must not end inside a UTF-8 sequence: messages quote
 * clients' strings and go into JSON, where jansson refuses a text that is not UTF-8. */
static void trim_cut_utf8(char *s)
{
	s[pd_utf8_cut(s, strlen(s))] = 0;
}

static char env_path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	    env_home[] = "HOME=/root", env_lang[] = "LANG=C.UTF-8", env_term[] = "TERM=dumb";
static char *const default_env[] = {env_path, env_home, env_lang, env_term, NULL};

char *const *pd_default_env(void)
{
	return default_env;
}

/* The length of a variable's name and its '=' (all of it without one). */
static size_t env_key_len(const char *v)
{
	const char *eq = strchr(v, '=');
	return eq ? (size_t)(eq - v) + 1 : strlen(v);
}

static bool env_named_in(char *const *v, const char *var)
{
	size_t kl = env_key_len(var);
	for (; v && *v; v++)
		if (env_key_len(*v) == kl && !strncmp(*v, var, kl))
			return true;
	return false;
}

char **pd_env_merge(char *const *base, char *const *over)
{
	if (!base)
		base = default_env;
	size_t nb = 0, no = 0;
	while (base[nb])
		nb++;
	while (over && over[no])
		no++;
	char **env = calloc(nb + no + 1, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < nb; i++)
		if (!env_named_in(over, base[i]))
			env[k++] = base[i];
	for (size_t i = 0; i < no; i++)
		if (!env_named_in(over + i + 1, over[i])) /* a later one of the same name wins */
			env[k++] = over[i];
	return env;
}

long pd_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	long n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/* The message formatted and cut at a character boundary; the class is code (EIO if none), the
 * cause the errno behind it (0: none). Returns -1 with errno set to the class. */
static int vfail(pd_err *e, int code, int cause, const char *fmt, va_list ap)
{
	if (e) {
		int len = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		if (len >= (int)sizeof e->msg)
			trim_cut_utf8(e->msg);
		e->code = code ? code : EIO;
		e->cause = cause;
		e->kind = PD_EK_NONE;
	}
	errno = code ? code : EIO;
	return -1;
}

int pd_fail(pd_err *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(e, code, code, fmt, ap);
	va_end(ap);
	return -1;
}

int pd_fail_as(pd_err *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(e, code, 0, fmt, ap);
	va_end(ap);
	return -1;
}

int pd_err_prefix(pd_err *e, const char *fmt, ...)
{
	if (!e)
		return -1;
	char head[sizeof e->msg], whole[2 * sizeof e->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	snprintf(whole, sizeof whole, "%s%s", head, e->msg);
	snprintf(e->msg, sizeof e->msg, "%s", whole);
	if (strlen(whole) >= sizeof e->msg)
		trim_cut_utf8(e->msg);
	return -1;
}

const char *pd_err_text(const pd_err *e, char *buf, size_t size)
{
	if (!size)
		return buf;
	if (!e) {
		buf[0] = 0;
		return buf;
	}
	int len = e->cause ? snprintf(buf, size, "%s%s%s", e->msg, e->msg[0] ? ": " : "", strerror(e->cause))
			   : snprintf(buf, size, "%s", e->msg);
	if (len >= (int)size)
		trim_cut_utf8(buf);
	return buf;
}

uint64_t pd_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t pd_wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void pd_new_id(char *buf, size_t len, uint32_t run_id, const char *prefix_fmt, ...)
{
	static uint64_t seq; /* the process's one id counter */
	uint64_t n = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
	va_list ap;
	va_start(ap, prefix_fmt);
	int k = vsnprintf(buf, len, prefix_fmt, ap);
	va_end(ap);
	if (k >= 0 && (size_t)k < len)
		snprintf(buf + k, len - (size_t)k, "-%08" PRIx32 "-%" PRIu64, run_id, n);
}

int pd_write_file(const char *path, const char *data, pd_err *e)
{
	int fd;
	do
		fd = open(path, O_WRONLY | O_CLOEXEC | O_TRUNC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return pd_fail(e, errno, "open %s", path);
	size_t len = strlen(data);
	/* a cgroup write that makes the kernel reclaim (a memory limit under the usage) answers
	 * EINTR when a signal comes meanwhile: written again, as the kernel expects */
	ssize_t n;
	int tries = 0;
	do
		n = write(fd, data, len);
	while (n < 0 && errno == EINTR && ++tries < 1000);
	int saved = errno;
	close(fd);
	if (n != (ssize_t)len)
		return pd_fail(e, n < 0 ? saved : EIO, "write '%s' to %s", data, path);
	return 0;
}

int pd_write_u64(const char *path, uint64_t v, pd_err *e)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%" PRIu64, v);
	return pd_write_file(path, buf, e);
}

ssize_t pd_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off + 1 < size) {
		ssize_t n = read(fd, buf + off, size - 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = 0;
	return (ssize_t)off;
}

int pd_mkdir_p(const char *path, mode_t mode)
{
	char tmp[PD_PATH];
	if (strlen(path) >= sizeof tmp)
		return errno = ENAMETOOLONG, -1;
	strcpy(tmp, path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0) {
		struct stat st;
		if (errno != EEXIST || stat(tmp, &st) < 0)
			return -1;
		if (!S_ISDIR(st.st_mode))
			return errno = ENOTDIR, -1;
	}
	return 0;
}

int pd_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	union {
		char buf[CMSG_SPACE(sizeof(int) * PD_MAX_PASS_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds > PD_MAX_PASS_FDS)
		return errno = EINVAL, -1;
	if (nfds > 0) {
		memset(&u, 0, sizeof u);
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

ssize_t pd_recv_fds(int sock, void *buf, size_t len, int *fds, int *nfds, int maxfds)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	union {
		char buf[CMSG_SPACE(sizeof(int) * PD_MAX_PASS_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			   .msg_controllen = sizeof u.buf};
	ssize_t n;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (nfds)
		*nfds = 0;
	if (n < 0)
		return -1;
	bool lost = m.msg_flags & MSG_CTRUNC; /* fds the kernel could not hand over: refuse it all */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *in = (int *)CMSG_DATA(c);
		for (int i = 0; i < k; i++) {
			if (fds && nfds && *nfds < maxfds)
				fds[(*nfds)++] = in[i];
			else
				close(in[i]); /* never leak an fd we did not ask for */
		}
	}
	if (lost) {
		for (int i = 0; fds && nfds && i < *nfds; i++)
			close(fds[i]);
		if (nfds)
			*nfds = 0;
		return errno = EPROTO, -1;
	}
	return n;
}

uint64_t pd_keyed_u64(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; p && *p;) {
		if (strncmp(p, key, kl) == 0 && (p[kl] == ' ' || p[kl] == '\t'))
			return strtoull(p + kl + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

int pd_parse_size(const char *s, uint64_t *out)
{
	/* digits first: no sign, space, "nan", "inf" or hex that strtod would take */
	if (!s || !(isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))))
		return -1;
	char *end;
	errno = 0;
	unsigned long long whole = strtoull(s, &end, 10); /* exact: a double loses bytes past 2^53 */
	if (errno)
		return -1;
	double frac = 0;
	if (*end == '.') {
		/* digits only: strtod would also take an exponent, and "1.5e3" would be 1 + 1500 */
		size_t nd = strspn(end + 1, "0123456789");
		char digits[32] = "0.";
		if (!nd)
			return -1;
		memcpy(digits + 2, end + 1, nd < sizeof digits - 3 ? nd : sizeof digits - 3);
		frac = strtod(digits, NULL);
		end += 1 + nd;
	}
	uint64_t mul = 1;
	switch (tolower((unsigned char)*end)) {
	case 0: break;
	case 'k': mul = 1ull << 10; end++; break;
	case 'm': mul = 1ull << 20; end++; break;
	case 'g': mul = 1ull << 30; end++; break;
	case 't': mul = 1ull << 40; end++; break;
	case 'b': break;
	default: return -1;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -1;
	if (whole > UINT64_MAX / mul)
		return -1;
	uint64_t r = (uint64_t)whole * mul;
	double fr = frac * (double)mul;
	if (fr >= 1 && fr >= (double)(UINT64_MAX - r)) /* (below 1, it adds nothing: UINT64_MAX fits) */
		return -1;
	*out = r + (uint64_t)fr;
	return 0;
}

int pd_parse_duration_ms(const char *s, uint64_t *out)
{
	if (!s || !(isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))))
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	/* decimal only: strtod also reads hex ("0x10" would be 16 s) */
	for (const char *p = s; p < end; p++)
		if (!strchr("0123456789.eE+-", *p))
			return -1;
	double ms;
	if (!*end || !strcmp(end, "s"))
		ms = v * 1000.0;
	else if (!strcmp(end, "ms"))
		ms = v;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		ms = v * 60000.0;
	else
		return -1;
	if (ms > 1e15)
		return -1;
	*out = (uint64_t)(ms + 0.5);
	return 0;
}

/* Base64: standard alphabet out; standard or URL-safe in, padding optional. */

char *pd_b64_encode(const char *data, size_t len)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	const unsigned char *u = (const unsigned char *)data;
	size_t o = 0, i = 0;
	for (; i + 2 < len; i += 3) {
		unsigned v = (unsigned)u[i] << 16 | (unsigned)u[i + 1] << 8 | u[i + 2];
		out[o++] = t[v >> 18];
		out[o++] = t[(v >> 12) & 63];
		out[o++] = t[(v >> 6) & 63];
		out[o++] = t[v & 63];
	}
	if (i < len) {
		unsigned v = (unsigned)u[i] << 16 | (i + 1 < len ? (unsigned)u[i + 1] << 8 : 0);
		out[o++] = t[v >> 18];
		out[o++] = t[(v >> 12) & 63];
		out[o++] = i + 1 < len ? t[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = 0;
	return out;
}

int pd_b64_decode(const char *in, char **out, size_t *len)
{
	size_t n = strlen(in);
	char *buf = malloc(n / 4 * 3 + 4);
	if (!buf)
		return -1;
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)in[i];
		int v = ch >= 'A' && ch <= 'Z'   ? ch - 'A'
			: ch >= 'a' && ch <= 'z' ? ch - 'a' + 26
			: ch >= '0' && ch <= '9' ? ch - '0' + 52
			: ch == '+' || ch == '-' ? 62
			: ch == '/' || ch == '_' ? 63
						 : -1;
		if (ch == '=' || ch == '\n' || ch == '\r')
			continue;
		if (v < 0) {
			free(buf);
			return -1;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	buf[o] = 0;
	*out = buf;
	*len = o;
	return 0;
}

