/* Shared by the files whose code runs inside a sandbox (childrt.c, rootfs.c, child.c): no malloc,
 * no stdio, raw system calls only (child.c says why). */
#ifndef PADDOCK_CHILD_H
#define PADDOCK_CHILD_H

#include "proto.h"

#include <sys/types.h>

/* init's socket to the host (-1 in a reset's helper) */
extern int pd_ch_sock;
/* the upper tmpfs of the root built at creation (rootfs.c), handed to the host with READY for the
 * audit's diff of the writable layer (tamper.c), then closed (child.c) */
extern int pd_ch_upper;
/* From now on this thread's code runs as a sandbox reset's helper that reports into rep (NULL: no
 * longer), with no descriptor held yet (pd_reset_root). */
void pd_ch_helper(pd_reset_report *rep);
/* init's handle on /proc/sys/kernel/ns_last_pid, opened (rootfs.c) before /proc/sys turns
 * read-only: a reset winds the pid counter back so the next user's programs get the pids a fresh
 * one would (child.c) */
extern int pd_ch_lastpid;

/* clone(2) of a CLONE_VM child (a reset's helper, init's start of a program): glibc's clone, always.
 * Under ThreadSanitizer (make tsan) its clone interceptor would run its after-fork reset in the
 * child, which with CLONE_VM is the parent's own memory: the daemon's thread registry and
 * descriptor table as TSan knows them are wiped, every later pthread_join is lost, and TSan reports
 * races that cannot happen (seen: pd_ctx_free after the reclaimers were joined). So in a TSan build
 * this calls libc's clone directly, found once at load; the child then runs as the thread that
 * waits for it (CLONE_VFORK), which is what it is. Elsewhere it is clone itself. */
int pd_ch_clone(int (*fn)(void *), void *stack, int flags, void *arg);

/* set*id and setgroups as raw system calls (glibc's wait on threads this copy lacks) */
int pd_ch_setresuid(uid_t u);
int pd_ch_setresgid(gid_t g);
int pd_ch_setgroups_none(void);

/* dst = a b c (NULL parts skipped), truncated to size; returns the length. */
size_t pd_ch_cat(char *dst, size_t size, const char *a, const char *b, const char *c);
/* v in decimal into out (24 bytes suffice). */
void pd_ch_utoa(unsigned long v, char *out);
/* Reports what failed (to the host, or into pd_ch_rep in a reset's helper) and exits. */
__attribute__((noreturn)) void pd_ch_die(const char *what, int err);
/* pd_ch_die(what, errno) if rc < 0. */
void pd_ch_check(int rc, const char *what);
/* fd, noted for pd_ch_die when this is a reset's helper; -1 passes through (errno kept). */
int pd_ch_hold(int fd);
/* Closes a descriptor from pd_ch_hold. */
void pd_ch_drop(int fd);
/* openat2 resolving path as if dirfd's "/" were the root, refusing /proc magic links. */
int pd_ch_open_inside(int dirfd, const char *path, int flags, mode_t mode);

/* In a program's process, after its chdir and before it drops its privileges: restricts it with
 * a Landlock ruleset made from the sandbox's mounts (landlock.c); mq_fd (or -1) is the IPC
 * namespace's mqueue root (pd_landlock_mqueue_root). 0, or -errno. */
int pd_ch_landlock(const child_cfg *c, int mq_fd);

/* The scratch directories of the staging tmpfs (rootfs.c), in proto.h's order. */
typedef struct pd_ch_scratch_dir {
	const char *name, *dst;
	mode_t mode;
} pd_ch_scratch_dir;
extern const pd_ch_scratch_dir pd_ch_scratch[PD_NSCRATCH];

/* init at creation: builds the root from the layer, bind and sysfs fds the host sent and pivots
 * into it (rootfs.c). */
void pd_ch_build_root(const child_cfg *c, const int *layer_fds, const int *bind_fds, int sysfs_fd);

#endif
