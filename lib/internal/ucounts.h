/* Per-user kernel object limits of a sandbox (ucounts.c). Internal. */
#ifndef PADDOCK_UCOUNTS_H
#define PADDOCK_UCOUNTS_H

#include "paddock.h"

#include <stdbool.h>
#include <stdint.h>

/* a program's rlimits for objects the kernel counts per user (docs/security.md) */
#define PD_RL_SIGPENDING 4096
#define PD_RL_MSGQUEUE (800u << 10)
#define PD_RL_MEMLOCK (8u << 20)

typedef struct pd_ucounts_owner {
	bool switched;
} pd_ucounts_owner;

/* Around the clone of a sandbox, in the cloning thread: the thread's effective uid becomes uid
 * (the slot's host uid of the sandbox's root) so that the new user namespace is owned by it and
 * the host charges the sandbox's objects to it, not to root. No-op when not root. */
int pd_ucounts_owner_enter(uint32_t uid, pd_ucounts_owner *o, pd_err *e);
void pd_ucounts_owner_leave(pd_ucounts_owner *o);

/* In init, before any program: the sandbox's user namespace's own limits. 0 or an errno. */
int pd_ucounts_limit_ns(const char **what);
/* In a program's process before execve. 0 or an errno. */
int pd_ucounts_program_rlimits(void);

#endif
