/* audit_notify.c: the auditor's notification path (lib/audit.c) against a real seccomp listener,
 * outside any sandbox: a child loads a filter that notifies openat and hands its listener to this
 * process, which answers with pd_auditor_handle.
 *
 * - the listener takes the synchronous wake-up (Linux 6.6+): without it every notification waits
 *   for two ordinary wake-ups, most of an audited open's cost on a loaded machine (issue 22's
 *   overhead target);
 * - a path the program passes is judged whole when it straddles a page boundary, and when it ends
 *   at the last byte of a mapped page with nothing mapped after it (the reader stops at the page
 *   that holds the NUL, and never needs the next one);
 * - the deny rule answers EACCES to the program, other opens run unchanged. */
#define _GNU_SOURCE
#include "audit.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define DENIED "/nonexistent-s29-judge"

static void send_fd(int sock, int fd)
{
	char c = 'f';
	struct iovec iov = {&c, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	if (sendmsg(sock, &m, 0) != 1)
		_exit(90);
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = {&c, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof fd);
	return fd;
}

/* The child: openat notified, its listener sent over sock; then the opens, each result (errno or
 * 0) written to out as an int. */
static void child(int sock, int out)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
	/* two pages, the second unmapped after the strings are placed */
	char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(91);
	int lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd < 0)
		_exit(92);
	send_fd(sock, lfd);
	close(lfd);
	const char denied[] = DENIED "/answer.txt", allowed[] = "/dev/null";
	/* 1: the denied path straddling the page boundary */
	char *straddle = pages + 4096 - 8;
	memcpy(straddle, denied, sizeof denied);
	/* 2: the denied path ending with the first page, nothing mapped after it */
	char *at_end = pages + 4096 - sizeof denied;
	int r[3];
	int fd = openat(AT_FDCWD, straddle, O_RDONLY);
	r[0] = fd < 0 ? errno : 0;
	memcpy(at_end, denied, sizeof denied);
	munmap(pages + 4096, 4096);
	fd = openat(AT_FDCWD, at_end, O_RDONLY);
	r[1] = fd < 0 ? errno : 0;
	fd = openat(AT_FDCWD, allowed, O_RDONLY);
	r[2] = fd < 0 ? errno : 0;
	if (write(out, r, sizeof r) != (ssize_t)sizeof r)
		_exit(93);
	_exit(0);
}

static bool kernel_at_least(int maj, int min)
{
	struct utsname u;
	int a = 0, b = 0;
	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &a, &b) != 2)
		return false;
	return a > maj || (a == maj && b >= min);
}

int main(void)
{
	plan(7);
	int sp[2], pp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || pipe(pp) < 0)
		return ok(0, "socketpair, pipe"), done();
	pid_t pid = fork();
	if (pid == 0) {
		close(sp[0]);
		close(pp[0]);
		child(sp[1], pp[1]);
	}
	close(sp[1]);
	close(pp[1]);
	int lfd = recv_fd(sp[0]);
	ok(lfd >= 0, "the child's listener arrives");

	static const char *const judge[] = {DENIED, NULL};
	pd_audit_opts o = {.enabled = true, .judge = judge};
	pd_auditor a;
	pd_result r;
	memset(&r, 0, sizeof r);
	pd_err e = {0};
	int rc = lfd >= 0 ? pd_auditor_init(&a, lfd, &o, pd_now_us(), &e) : -1;
	ok(rc == 0, "auditor ready%s%s", rc ? ": " : "", rc ? e.msg : "");
	if (kernel_at_least(6, 6))
		ok(rc == 0 && a.sync_wake, "the listener hands the CPU over (synchronous wake-up)");
	else
		ok(1, "# SKIP synchronous wake-up needs Linux 6.6");

	/* answer until the child has made its three opens */
	int res[3] = {-1, -1, -1};
	size_t got = 0;
	while (rc == 0 && got < sizeof res) {
		struct pollfd pf[2] = {{a.listener, POLLIN, 0}, {pp[0], POLLIN, 0}};
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN)
			if (pd_auditor_handle(&a, &r) < 0)
				break;
		if (pf[1].revents) {
			ssize_t n = read(pp[0], (char *)res + got, sizeof res - got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
	}
	is_int(res[0], EACCES, "a denied path straddling a page boundary is refused");
	is_int(res[1], EACCES, "a denied path ending with the last mapped page is refused");
	is_int(res[2], 0, "an open of another path runs");
	size_t judged = 0;
	for (size_t i = 0; i < r.audit_len; i++)
		judged += !strcmp(r.audit[i].kind, "judge_material") && !strcmp(r.audit[i].target, DENIED "/answer.txt");
	is_int((int)judged, 2, "both refusals recorded as judge_material with the whole path");
	if (rc == 0)
		pd_auditor_close(&a);
	free(r.audit);
	int ws;
	waitpid(pid, &ws, 0);
	return done();
}
