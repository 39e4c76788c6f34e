/* Audit: seccomp user notifications for opens, execs and network sends, answered by the host. */
#ifndef PADDOCK_AUDIT_H
#define PADDOCK_AUDIT_H

#include "paddock.h"

typedef struct pd_auditor {
	int listener;
	const pd_audit_opts *opts;
	uint64_t t0_us;
	void *req, *resp; /* kernel-sized notification buffers */
	size_t req_size, resp_size;
} pd_auditor;

int pd_auditor_init(pd_auditor *a, int listener, const pd_audit_opts *opts, uint64_t t0_us, pd_err *e);
/* Answers one pending notification, recording it in r. Returns 0, or -1 when the listener is dead. */
int pd_auditor_handle(pd_auditor *a, pd_result *r);
void pd_auditor_close(pd_auditor *a);
/* The size of the buffers pd_auditor_handle reads a path (from the program's memory) and a
 * directory (readlink of its cwd or dirfd) into: PATH_MAX, the longest path the kernel takes, its
 * NUL included. */
#define PD_AUDIT_READ 4096

/* The audit's verdict on a file path a program passed to open or exec: raw is what was read at the
 * path argument (len bytes, at most PD_AUDIT_READ, not necessarily NUL-ended), base what readlink
 * gave into a PD_AUDIT_READ-byte buffer for the directory a relative path starts from (its cwd or
 * dirfd; blen bytes: <= 0 when it failed, PD_AUDIT_READ when cut). Fills target (size bytes) with
 * the path to record; *deny: refuse the call (a deny prefix covers it); *report: record it (denied,
 * or outside the image and the allow list). A path it cannot judge whole (no NUL, or relative to a
 * directory it cannot name) is reported, and refused when a deny list is set. */
void pd_audit_judge_path(const char *raw, size_t len, const char *base, ssize_t blen, const pd_audit_opts *o,
			 char *target, size_t size, bool *deny, bool *report);
/* Whether path is under one of the NULL-terminated prefixes ("/usr" covers "/usr/bin"). */
bool pd_path_under(const char *path, const char *const *prefixes);

#endif
