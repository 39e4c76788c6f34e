/* The file APIs' path resolution inside a sandbox (safepath.c). Internal; runs in init. */
#ifndef PADDOCK_SAFEPATH_H
#define PADDOCK_SAFEPATH_H

#include <stddef.h>
#include <sys/types.h>

/* open(2) of path (flags, mode as open's) resolved inside root (the sandbox's "/"): never
 * through a magic link, never to a file of a kernel pseudo-filesystem (proc, sys, devpts,
 * cgroup...), a device or a socket (EACCES). Returns an fd (O_CLOEXEC) or -1 with errno. */
int pd_safe_open(int root, const char *path, int flags, mode_t mode);
/* The directory holding path's last component, as an O_PATH fd checked as above, and that
 * component in base. -1 with errno (EINVAL for "/", "." or ".." as the last component). */
int pd_safe_parent(int root, const char *path, char *base, size_t size);

#endif
