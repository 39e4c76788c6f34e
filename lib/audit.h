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
/* Whether path is under one of the NULL-terminated prefixes ("/usr" covers "/usr/bin"). */
bool pd_path_under(const char *path, const char *const *prefixes);

#endif
