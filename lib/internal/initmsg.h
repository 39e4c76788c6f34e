/* Host side of the sandbox init's messages (proto.h): what init sends is untrusted (init runs
 * inside the sandbox, next to the program), so each message is checked before its fields are used.
 * Pure functions, fuzzed by fuzz/fuzz_init_msg.c. */
#ifndef PADDOCK_INITMSG_H
#define PADDOCK_INITMSG_H

#include "proto.h"

/* A message from init, decoded. */
typedef struct pd_init_msg {
	uint32_t type;       /* MSG_READY, MSG_ERROR, MSG_STARTED, MSG_EXITED, MSG_EXEC_FAILED,
				MSG_FILEOP_DONE or MSG_RESET_DONE */
	int32_t err;         /* ERROR, EXEC_FAILED, FILEOP_DONE, RESET_DONE: an errno, 0 to 4095 */
	char what[240];      /* ERROR, EXEC_FAILED: NUL-terminated (bytes, not necessarily UTF-8) */
	int32_t pid;         /* STARTED: > 0; EXITED: > 0, or -1 when the program could not be forked */
	int32_t wstatus;     /* EXITED: an exit (0-255) or a death by a signal, nothing else */
	int32_t listener_fd; /* STARTED: the audit listener's fd in the program, or -1 */
	uint32_t scratch;    /* RESET_DONE: 1 when init found the scratch directories as expected */
} pd_init_msg;

/* Decodes a message init sent: n bytes at buf, as received. Returns its type when it is one init
 * sends, of exactly its struct's size, with its fields in range; else -1 (a protocol error: the
 * host must not use any of it), with *m zeroed. */
int pd_init_msg_decode(const void *buf, ssize_t n, pd_init_msg *m);

/* The reply of init to a file operation op: n bytes at buf as received (n < 0: the receive failed)
 * and the nfds fds that came with it. Returns 0 with *fd_out the opened fd (FILEOP_OPEN; fd_out
 * may be NULL for the other operations), or -1 with e set (path names the file in the message):
 * the errno init reported, or EPROTO for a reply that is not a FILEOP_DONE (pd_init_msg_decode)
 * or an open that succeeded without an fd. Every fd received is either handed out or closed. */
int pd_fileop_reply(uint32_t op, const void *buf, ssize_t n, int *fds, int nfds, int *fd_out,
		    const char *path, pd_err *e);

#endif
