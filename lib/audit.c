/* Audit of file access and network egress through seccomp user notifications.
 *
 * The sandboxed process stops in the kernel at each open/exec/connect/send; the host reads the
 * path or address from its memory, records an event when it falls outside the allowed set, and
 * lets the call continue unchanged (SECCOMP_USER_NOTIF_FLAG_CONTINUE) or refuses it with EACCES
 * when a deny rule matches. Why seccomp and not fanotify: one mechanism covers files and sockets,
 * works inside user namespaces, and sees the path as the program wrote it.
 *
 * A caveat the kernel documents: a path read here can be changed by another thread of the program
 * after we read it and before a CONTINUEd call reads it again. So the audit record of an allowed call
 * is evidence, not proof, and a deny rule is a tripwire, not a wall: material the program must not
 * read should not be mounted into its sandbox at all. */
#define _GNU_SOURCE
#include "audit.h"
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

/* always allowed: the image's read-only toolchain and the process's own view of itself */
static const char *const builtin_allow[] = {
	"/usr", "/etc", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/dev/null", "/dev/zero",
	"/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/pts", "/dev/ptmx",
	"/proc/self", "/proc/thread-self", "/proc/filesystems", "/proc/meminfo", "/proc/cpuinfo",
	"/proc/stat", "/proc/loadavg", "/proc/uptime", "/sys/devices/system/cpu",
	"/sys/devices/system/node", "/sys/fs/cgroup", NULL,
};

/* "/a//b/./c/../d" -> "/a/b/d", as the kernel walks it (".." at the root stays there). Lexical:
 * a symlink in the path is not followed. Returns 0 when the result does not fit. */
static size_t normalize(const char *in, char *out, size_t size)
{
	size_t n = 0;
	out[n++] = '/';
	for (const char *p = in; *p;) {
		while (*p == '/')
			p++;
		const char *q = p;
		while (*q && *q != '/')
			q++;
		size_t len = (size_t)(q - p);
		if (!len)
			break;
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 1 && out[n - 1] != '/')
				n--;
			if (n > 1)
				n--;
		} else if (!(len == 1 && p[0] == '.')) {
			if (n + (n > 1) + len + 1 > size) /* separator, component, NUL */
				return 0;
			if (n > 1)
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p = q;
	}
	out[n] = 0;
	return n;
}

bool pd_path_under(const char *path, const char *const *prefixes)
{
	char norm[2 * PD_AUDIT_READ + 2]; /* any path pd_audit_judge_path makes: a cwd, '/', a path */
	if (!path || path[0] != '/' || !normalize(path, norm, sizeof norm))
		return false;
	for (int i = 0; prefixes && prefixes[i]; i++) {
		const char *pre = prefixes[i];
		size_t n = strlen(pre);
		if (!n || pre[0] != '/') /* no path at all: covers nothing */
			continue;
		while (n > 1 && pre[n - 1] == '/')
			n--;
		if (n == 1 || (!strncmp(norm, pre, n) && (norm[n] == 0 || norm[n] == '/')))
			return true;
	}
	return false;
}

int pd_auditor_init(pd_auditor *a, int listener, const pd_audit_opts *opts, uint64_t t0_us, pd_err *e)
{
	memset(a, 0, sizeof *a);
	a->listener = listener;
	a->opts = opts;
	a->t0_us = t0_us;
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
		return pd_fail(e, errno, "seccomp notification sizes");
	a->req_size = sz.seccomp_notif > sizeof(struct seccomp_notif) ? sz.seccomp_notif
								    : sizeof(struct seccomp_notif);
	a->resp_size = sz.seccomp_notif_resp > sizeof(struct seccomp_notif_resp)
			       ? sz.seccomp_notif_resp
			       : sizeof(struct seccomp_notif_resp);
	a->req = calloc(1, a->req_size);
	a->resp = calloc(1, a->resp_size);
	if (!a->req || !a->resp) {
		pd_auditor_close(a);
		return pd_fail(e, ENOMEM, "audit buffers");
	}
	return 0;
}

void pd_auditor_close(pd_auditor *a)
{
	if (a->listener >= 0)
		close(a->listener);
	a->listener = -1;
	free(a->req);
	free(a->resp);
	a->req = a->resp = NULL;
}

/* Reads up to len bytes at addr in pid; stops early at an unmapped page. */
static ssize_t peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		size_t page_left = 4096 - ((addr + got) & 4095);
		size_t want = len - got < page_left ? len - got : page_left;
		struct iovec l = {(char *)buf + got, want}, r = {(void *)(uintptr_t)(addr + got), want};
		ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got ? (ssize_t)got : -1;
}

void pd_audit_judge_path(const char *raw, size_t len, const char *base, ssize_t blen, const pd_audit_opts *o,
			 char *target, size_t size, bool *deny, bool *report)
{
	/* Judged whole or not at all: a path cut to a buffer, or joined with a cut cwd, is another
	 * path. "/" x 600 + "etc/passwd" read as 511 slashes was "/", and so not under a deny prefix,
	 * while the kernel opened /etc/passwd. The kernel takes a path up to its NUL within PATH_MAX
	 * bytes (PD_AUDIT_READ): without a NUL in what was read, the call fails there too. */
	const char *nul = memchr(raw, 0, len);
	size_t pl = nul ? (size_t)(nul - raw) : len;
	bool rel = !pl || raw[0] != '/';
	/* readlink fills its buffer when the directory's path is longer (or fails: a process can make
	 * its cwd deeper than a page): then where a relative path leads is unknown */
	bool base_ok = blen > 0 && blen < PD_AUDIT_READ && base[0] == '/';
	char full[2 * PD_AUDIT_READ + 2];
	if (rel && base_ok)
		snprintf(full, sizeof full, "%.*s%s%.*s", (int)blen, base, base[blen - 1] == '/' ? "" : "/", (int)pl,
			 raw);
	else
		snprintf(full, sizeof full, "%.*s", (int)pl, raw);
	snprintf(target, size, "%s", full); /* for the record: it keeps the head */
	if (!nul || (rel && !base_ok)) {
		/* cannot tell what the kernel opens: refused where a deny list is set, and reported */
		bool any_deny = false;
		for (int i = 0; o->deny && o->deny[i]; i++)
			any_deny |= o->deny[i][0] == '/';
		*deny = any_deny;
		*report = true;
		return;
	}
	*deny = pd_path_under(full, o->deny);
	*report = *deny || !(pd_path_under(full, builtin_allow) || pd_path_under(full, o->allow));
}

static void format_addr(const struct sockaddr_storage *ss, socklen_t len, char *out, size_t size)
{
	char ip[INET6_ADDRSTRLEN];
	if (ss->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s = (const void *)ss;
		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof ip);
		snprintf(out, size, "%s:%u", ip, ntohs(s->sin_port));
	} else if (ss->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s = (const void *)ss;
		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof ip);
		snprintf(out, size, "[%s]:%u", ip, ntohs(s->sin6_port));
	} else if (ss->ss_family == AF_UNIX) {
		const struct sockaddr_un *s = (const void *)ss;
		size_t n = len > offsetof(struct sockaddr_un, sun_path)
				   ? len - offsetof(struct sockaddr_un, sun_path)
				   : 0;
		if (n > sizeof s->sun_path)
			n = sizeof s->sun_path;
		if (n && s->sun_path[0] == 0)
			snprintf(out, size, "unix:@%.*s", (int)(n - 1), s->sun_path + 1);
		else
			snprintf(out, size, "unix:%.*s", (int)strnlen(s->sun_path, n), s->sun_path);
	} else {
		snprintf(out, size, "family %u", ss->ss_family);
	}
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr);
	return ss->ss_family == AF_UNIX;
}

static void record(pd_auditor *a, pd_result *r, const char *kind, const char *target, bool denied,
		   pid_t pid)
{
	size_t cap = a->opts->max_events ? a->opts->max_events : 1024;
	if (r->audit_len >= cap)
		return;
	if (r->audit_len == r->audit_cap) {
		size_t n = r->audit_cap ? r->audit_cap * 2 : 16;
		if (n > cap)
			n = cap;
		pd_audit_event *p = realloc(r->audit, n * sizeof *p);
		if (!p)
			return;
		r->audit = p;
		r->audit_cap = n;
	}
	pd_audit_event *ev = &r->audit[r->audit_len++];
	memset(ev, 0, sizeof *ev);
	ev->t_us = pd_now_us() - a->t0_us;
	snprintf(ev->kind, sizeof ev->kind, "%s", kind);
	snprintf(ev->target, sizeof ev->target, "%s", target);
	ev->denied = denied;
	ev->pid = pid;
}

int pd_auditor_handle(pd_auditor *a, pd_result *r)
{
	struct seccomp_notif *req = a->req;
	struct seccomp_notif_resp *resp = a->resp;
	memset(req, 0, a->req_size);
	if (ioctl(a->listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
		return errno == EINTR || errno == ENOENT ? 0 : -1;
	memset(resp, 0, a->resp_size);
	resp->id = req->id;
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;

	pid_t pid = (pid_t)req->pid;
	long nr = req->data.nr;
	const __u64 *arg = req->data.args;
	char target[PD_PATH] = "";
	const char *kind = NULL;
	bool file = false, deny = false, report = false;
	int path_arg = -1, dirfd = AT_FDCWD;
	switch (nr) {
	case SYS_open: case SYS_creat: path_arg = 0; kind = "open"; break;
	case SYS_openat: case SYS_openat2: path_arg = 1; dirfd = (int)arg[0]; kind = "open"; break;
	case SYS_execve: path_arg = 0; kind = "exec"; break;
	case SYS_execveat: path_arg = 1; dirfd = (int)arg[0]; kind = "exec"; break;
	default: break;
	}
	if (path_arg >= 0) {
		file = true;
		char raw[PD_AUDIT_READ];
		ssize_t n = arg[path_arg] ? peek(pid, arg[path_arg], raw, sizeof raw) : -1;
		if (n > 0) {
			char base[PD_AUDIT_READ], link[64];
			ssize_t bl = -1;
			if (raw[0] != '/') {
				if (dirfd == AT_FDCWD)
					snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
				else
					snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)pid, dirfd);
				bl = readlink(link, base, sizeof base);
			}
			pd_audit_judge_path(raw, (size_t)n, base, bl, a->opts, target, sizeof target, &deny, &report);
		} else {
			snprintf(target, sizeof target, "(unreadable path)");
			report = true;
		}
	} else {
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof ss);
		uint64_t addr = 0, len = 0;
		if (nr == SYS_connect) {
			kind = "connect", addr = arg[1], len = arg[2];
		} else if (nr == SYS_sendto) {
			kind = "sendto", addr = arg[4], len = arg[5];
		} else if (nr == SYS_sendmsg || nr == SYS_sendmmsg) {
			kind = nr == SYS_sendmsg ? "sendmsg" : "sendmmsg";
			struct msghdr mh;
			if (arg[1] && peek(pid, arg[1], &mh, sizeof mh) == (ssize_t)sizeof mh)
				addr = (uint64_t)(uintptr_t)mh.msg_name, len = mh.msg_namelen;
		}
		if (kind && addr && len) {
			if (len > sizeof ss)
				len = sizeof ss;
			if (peek(pid, addr, &ss, (size_t)len) > 0) {
				format_addr(&ss, (socklen_t)len, target, sizeof target);
				report = true;
				deny = a->opts->deny_net && !is_loopback(&ss);
			}
		}
	}
	/* the process may have died or been killed meanwhile: then nothing to answer */
	if (ioctl(a->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
		return 0;
	if (kind && report) {
		if (file)
			r->audit_files++;
		else
			r->audit_net++;
		if (deny)
			r->audit_denied++;
		record(a, r, kind, target, deny, pid);
	}
	if (deny) {
		resp->flags = 0;
		resp->error = -EACCES;
	}
	if (ioctl(a->listener, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 && errno != ENOENT)
		return errno == EINTR ? 0 : -1;
	return 0;
}
