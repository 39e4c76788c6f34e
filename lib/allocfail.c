/* The memory fast path's evidence. Under a data-segment limit (pd_exec_opts.data_headroom_bytes)
 * an oversize allocation is refused at once and nothing is charged to the cgroup, so the cgroup
 * has no evidence of it (no OOM kill, no failcnt): what the program did with the refusal is all
 * there is. A runtime that cannot allocate says so on stderr when it dies of it, in words of its
 * own that a program does not print by accident: Python's MemoryError, the C++ runtime's
 * std::bad_alloc (terminate's message), libc's strerror(ENOMEM) (perror after a failed malloc,
 * a shell's "cannot allocate memory"). A program that catches the failure and exits quietly
 * leaves no mark, and is judged by its exit status; that is why the fast path is per template
 * (docs/config.md) and the cgroup's evidence stays the first rule. */
#define _GNU_SOURCE
#include "internal/internal.h"

#include <string.h>

static const char *const marks[] = {"MemoryError", "std::bad_alloc", "Cannot allocate memory",
				    "cannot allocate memory", "Out of memory", "out of memory", NULL};

static bool has_mark(const char *hay, size_t n)
{
	for (size_t i = 0; hay && marks[i]; i++)
		if (memmem(hay, n, marks[i], strlen(marks[i])))
			return true;
	return false;
}

/* True when the captured stderr names an allocation failure (its head or its tail: a traceback
 * ends a long output). */
bool pd_alloc_failure_seen(const pd_output *err)
{
	return has_mark(err->head, err->head_len) || has_mark(err->tail, err->tail_len);
}
