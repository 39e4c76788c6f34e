/* Fuzzes the host's handling of what a sandbox's init sends back (lib/initmsg.h): init runs inside
 * the sandbox, so its messages are untrusted bytes. The input is one message as the host receives
 * it on the SOCK_SEQPACKET control socket (cut to the receive buffer, as the kernel cuts a longer
 * datagram), with an fd attached or not:
 *   [0] the file operation asked (FILEOP_OPEN, UNLINK, RMDIR, MKDIR)
 *   [1] bit0: an fd came with the reply; bit1: the receive failed (n = -1)
 *   [2..] the message
 * It goes through pd_fileop_reply, which lib/files.c calls for every file operation of the session
 * API (PUT/GET/DELETE .../files, stat, mkdir of a PUT's parents), and through pd_init_msg_decode,
 * the check of every message init sends (READY, ERROR, STARTED, EXITED, EXEC_FAILED, FILEOP_DONE,
 * RESET_DONE with its scratch verdict, 0 or 1).
 *
 * Beyond "no crash, no leak, no undefined behaviour":
 *  - success only for a whole FILEOP_DONE message with err 0; an open that succeeds hands out an
 *    fd that came with the reply (never -1: the caller would use it, and report an empty error);
 *  - a failure has an errno the callers can map to an HTTP status (1 to 4095) and a message;
 *  - every fd that came is handed out or closed, never leaked;
 *  - pd_init_msg_decode takes a message only when it is exactly its type's struct (a short one
 *    would leave fields the host then reads uninitialized), with an errno of 0 to 4095, a NUL-ended
 *    text, a pid > 0 (or -1 for a program that could not be forked), an audit listener fd >= -1,
 *    and an exit status that is an exit or a death by a signal (a "stopped" status would read as
 *    exit 0: OK); refused, it leaves nothing; pd_fileop_reply agrees with it. */
#include "fuzz_common.h"

#include "initmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t type_size(uint32_t t)
{
	switch (t) {
	case MSG_READY: return sizeof(struct msg_hdr);
	case MSG_ERROR: case MSG_EXEC_FAILED: case MSG_FILEOP_DONE:
		return sizeof(struct msg_error);
	case MSG_RESET_DONE: return sizeof(struct msg_reset_done);
	case MSG_STARTED: return sizeof(struct msg_started);
	case MSG_EXITED: return sizeof(struct msg_exited);
	default: return 0;
	}
}

/* every message init sends, as the host receives it into a buffer of the largest one */
static void decode(const uint8_t *p, size_t len)
{
	union {
		struct msg_hdr h;
		struct msg_error err;
		struct msg_reset_done rd;
		struct msg_started st;
		struct msg_exited ex;
	} u;
	memset(&u, 0xa5, sizeof u);
	size_t n = len < sizeof u ? len : sizeof u;
	memcpy(&u, p, n);
	pd_init_msg m;
	memset(&m, 0x5a, sizeof m);
	int t = pd_init_msg_decode(&u, (ssize_t)n, &m);
	if (t < 0) {
		pd_init_msg zero;
		memset(&zero, 0, sizeof zero);
		FUZZ_CHECK(!memcmp(&m, &zero, sizeof m), "a refused message left fields behind");
		return;
	}
	FUZZ_CHECK((uint32_t)t == u.h.type && m.type == u.h.type, "type");
	FUZZ_CHECK(type_size(m.type) && n == type_size(m.type), "type %u taken from %zu bytes (its struct has %zu)",
		   m.type, n, type_size(m.type));
	FUZZ_CHECK(m.err >= 0 && m.err < 4096, "errno %d", m.err);
	FUZZ_CHECK(memchr(m.what, 0, sizeof m.what), "text not NUL-terminated");
	if (m.type == MSG_ERROR || m.type == MSG_EXEC_FAILED || m.type == MSG_FILEOP_DONE)
		FUZZ_CHECK(m.err == u.err.err && !strncmp(m.what, u.err.what, sizeof m.what - 1), "error fields");
	if (m.type == MSG_RESET_DONE)
		FUZZ_CHECK(m.err == u.rd.err && m.scratch == u.rd.scratch && m.scratch <= 1 &&
				   !strncmp(m.what, u.rd.what, sizeof m.what - 1),
			   "reset fields");
	else
		FUZZ_CHECK(m.scratch == 0, "a scratch verdict on type %u", m.type);
	if (m.type == MSG_STARTED)
		FUZZ_CHECK(m.pid > 0 && m.pid == u.st.pid && m.listener_fd >= -1 && m.listener_fd == u.st.listener_fd,
			   "started: pid %d listener %d", m.pid, m.listener_fd);
	if (m.type == MSG_EXITED) {
		int ws = m.wstatus;
		FUZZ_CHECK(m.pid == u.ex.pid && (m.pid > 0 || m.pid == -1), "exited: pid %d", m.pid);
		FUZZ_CHECK(ws == u.ex.wstatus && (WIFEXITED(ws) || WIFSIGNALED(ws)) && !WIFSTOPPED(ws) && !WIFCONTINUED(ws),
			   "exited: wstatus %#x is neither an exit nor a signal", ws);
		FUZZ_CHECK(WIFEXITED(ws) ? WEXITSTATUS(ws) <= 255 && (ws & ~0xff00) == 0
					 : WTERMSIG(ws) >= 1 && WTERMSIG(ws) < 128 && (ws & ~0xff) == 0,
			   "exited: wstatus %#x", ws);
	}
}

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0 || errno != EBADF;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	static const uint32_t ops[] = {FILEOP_OPEN, FILEOP_UNLINK, FILEOP_RMDIR, FILEOP_MKDIR};
	uint32_t op = ops[data[0] % 4];
	bool with_fd = data[1] & 1, failed = data[1] & 2;
	struct msg_error buf;
	memset(&buf, 0xa5, sizeof buf); /* what a short datagram leaves: whatever was there */
	size_t len = size - 2 < sizeof buf ? size - 2 : sizeof buf;
	memcpy(&buf, data + 2, len);
	ssize_t n = failed ? -1 : (ssize_t)len;
	int fds[1], nfds = 0;
	if (with_fd && !failed) {
		fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		FUZZ_CHECK(fds[0] >= 0, "open /dev/null");
		nfds = 1;
	}
	int sent = nfds ? fds[0] : -1;
	int out = -2;
	pd_err e = {0};
	int rc = pd_fileop_reply(op, &buf, n, fds, nfds, op == FILEOP_OPEN ? &out : NULL, "/work/f", &e);
	struct msg_error m;
	memcpy(&m, data + 2, len < sizeof m ? len : sizeof m);
	if (rc == 0) {
		FUZZ_CHECK(n == (ssize_t)sizeof m && m.type == MSG_FILEOP_DONE && m.err == 0,
			   "accepted: %zd bytes, type %u, err %d", n, n >= 4 ? m.type : 0, n >= 8 ? m.err : 0);
		if (op == FILEOP_OPEN) {
			FUZZ_CHECK(out >= 0, "an open succeeded without an fd (fd %d): the caller would use it", out);
			FUZZ_CHECK(out == sent, "the fd handed out (%d) is not the one that came (%d)", out, sent);
		}
	} else {
		FUZZ_CHECK(rc == -1, "rc %d", rc);
		FUZZ_CHECK(e.code > 0 && e.code < 4096, "errno %d from init reaches the caller", e.code);
		FUZZ_CHECK(e.msg[0] && fz_utf8_valid(e.msg, strnlen(e.msg, sizeof e.msg)), "message [%s]", e.msg);
		FUZZ_CHECK(op != FILEOP_OPEN || out == -2, "a failed open handed out fd %d", out);
	}
	pd_init_msg dm;
	int dt = pd_init_msg_decode(failed ? NULL : &buf, n, &dm);
	FUZZ_CHECK(rc != 0 || (dt == MSG_FILEOP_DONE && !dm.err), "pd_fileop_reply took what pd_init_msg_decode refuses");
	decode(data + 2, size - 2);
	if (sent >= 0) {
		bool handed = rc == 0 && op == FILEOP_OPEN && out == sent;
		FUZZ_CHECK(is_open(sent) == handed, "the fd that came is %s", handed ? "closed, yet handed out" : "leaked");
		if (handed)
			close(sent);
	}
	return 0;
}
