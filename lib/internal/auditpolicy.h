/* The audit policy's inside, shared by auditpolicy.c (parse, merge) and auditverdict.c. */
#ifndef PADDOCK_AUDITPOLICY_H
#define PADDOCK_AUDITPOLICY_H

#include "audit.h"

typedef struct strvec {
	char **s; /* NULL-terminated when n > 0 */
	size_t n, cap;
} strvec;

typedef struct pd_trap {
	char *path;
	char *content; /* planted by pd_audit_policy_plant, or NULL: the decoy is already there */
	char *answer;  /* the wrong answer an output must not match (default: content) */
} pd_trap;

struct pd_audit_policy {
	strvec allow, protect, writable, judge, trap_paths, env, egress_allow;
	bool set_allow, set_writable, set_egress; /* named by the policy, not defaults */
	pd_trap *traps;
	size_t ntraps;
	pd_egress egress;
	uint32_t fail; /* bit per pd_audit_kind */
	bool mandatory;
	size_t max_events;
	pd_audit_opts opts; /* compiled: points into the vectors */
};

#endif
