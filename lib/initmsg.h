/* Host side of the sandbox init's messages (lib/proto.h): what init sends is untrusted (init runs
 * inside the sandbox, next to the program), so each message is checked before its fields are used.
 * Pure functions, fuzzed by fuzz/fuzz_init_msg.c. */
#ifndef PADDOCK_INITMSG_H
#define PADDOCK_INITMSG_H

#include "proto.h"

/* The reply of init to a file operation op: n bytes at buf as received (n < 0: the receive failed)
 * and the nfds fds that came with it. Returns 0 with *fd_out the opened fd (FILEOP_OPEN; fd_out
 * may be NULL for the other operations), or -1 with e set (path names the file in the message).
 * Every fd received is either handed out or closed. */
int pd_fileop_reply(uint32_t op, const void *buf, ssize_t n, int *fds, int nfds, int *fd_out,
		    const char *path, pd_err *e);

#endif
