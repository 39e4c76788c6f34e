/* The host's checks of what a sandbox's init sends (lib/initmsg.h). Init is paddock's own code,
 * but it runs inside the sandbox, next to the program: a message is used only when it is exactly
 * one of the messages init sends, with its fields in range. */
#define _GNU_SOURCE
#include "initmsg.h"

#include <string.h>
#include <sys/wait.h>

/* what waitpid can give for a process that ended: an exit status, or a signal (with or without a
 * core); not a stop or a continue, and no bits above the low 16 */
static bool ended_status(int32_t ws)
{
	if (ws < 0 || ws > 0xffff)
		return false;
	if (WIFEXITED(ws))
		return (ws & 0xff) == 0;
	return WIFSIGNALED(ws) && (ws >> 8) == 0;
}

int pd_init_msg_decode(const void *buf, ssize_t n, pd_init_msg *m)
{
	memset(m, 0, sizeof *m);
	if (!buf || n < (ssize_t)sizeof(struct msg_hdr))
		return -1;
	struct msg_hdr h;
	memcpy(&h, buf, sizeof h);
	switch (h.type) {
	case MSG_READY:
		if (n != (ssize_t)sizeof h)
			return -1;
		break;
	case MSG_RESET_DONE: {
		struct msg_reset_done x;
		if (n != (ssize_t)sizeof x)
			return -1;
		memcpy(&x, buf, sizeof x);
		if (x.err < 0 || x.err >= 4096 || x.scratch > 1)
			return -1;
		m->err = x.err;
		m->scratch = x.scratch;
		memcpy(m->what, x.what, sizeof m->what);
		m->what[sizeof m->what - 1] = 0;
		break;
	}
	case MSG_ERROR:
	case MSG_EXEC_FAILED:
	case MSG_FILEOP_DONE: {
		struct msg_error x;
		if (n != (ssize_t)sizeof x)
			return -1;
		memcpy(&x, buf, sizeof x);
		if (x.err < 0 || x.err >= 4096)
			return -1;
		m->err = x.err;
		memcpy(m->what, x.what, sizeof m->what);
		m->what[sizeof m->what - 1] = 0;
		break;
	}
	case MSG_STARTED: {
		struct msg_started x;
		if (n != (ssize_t)sizeof x)
			return -1;
		memcpy(&x, buf, sizeof x);
		if (x.pid <= 0 || x.listener_fd < -1)
			return -1;
		m->pid = x.pid;
		m->listener_fd = x.listener_fd;
		break;
	}
	case MSG_EXITED: {
		struct msg_exited x;
		if (n != (ssize_t)sizeof x)
			return -1;
		memcpy(&x, buf, sizeof x);
		if ((x.pid <= 0 && x.pid != -1) || !ended_status(x.wstatus))
			return -1;
		m->pid = x.pid;
		m->wstatus = x.wstatus;
		break;
	}
	default:
		return -1;
	}
	m->type = h.type;
	return (int)h.type;
}
