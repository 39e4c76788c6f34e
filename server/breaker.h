/* The circuit breaker of the scheduler (server/sched.c): a state machine fed with the outcomes of
 * finished jobs, asked at each admission. It trips on the rate of infrastructure failures only
 * (a sandbox that could not be started, an internal error), never on load (queue waits, refusals)
 * nor on what the model's programs did (time-outs, memory, output): load is the admission
 * estimate's business, and a model's slow program says nothing about paddock's health.
 *
 * closed    admits; after each outcome, trips to open when at least min_samples of the last
 *           BREAKER_WINDOW outcomes are known and more than fail_ratio of them are failures.
 * open      refuses until the cooldown passed, then lets one probe through (half-open). It also
 *           lets a probe through at once when the daemon is idle (a free slot, nothing queued):
 *           an idle daemon that refuses can never learn that it recovered.
 * half-open one probe runs; its success closes the breaker (and forgets the failures), its failure
 *           opens it for another cooldown. Others are refused while it runs.
 * The caller holds its own lock around every call: no locking here. Times are monotonic us. */
#ifndef PADDOCK_SERVER_BREAKER_H
#define PADDOCK_SERVER_BREAKER_H

#include <stdbool.h>
#include <stdint.h>

#define BREAKER_WINDOW 64

typedef enum { BREAKER_CLOSED, BREAKER_OPEN, BREAKER_HALF_OPEN } pd_breaker_state;

typedef struct pd_breaker {
	double fail_ratio;    /* > this share of failures trips it */
	unsigned min_samples; /* outcomes needed before the ratio counts */
	uint64_t cooldown_us;
	pd_breaker_state state;
	bool failed[BREAKER_WINDOW];
	unsigned n;           /* outcomes recorded since the last close (the window holds the last) */
	uint64_t open_until;
	bool probe_out;       /* half-open: the probe is running */
	uint64_t trips;
} pd_breaker;

void pd_breaker_init(pd_breaker *b, double fail_ratio, unsigned min_samples, uint64_t cooldown_us);
/* May a job be admitted now? idle: a worker is free and nothing is queued. *probe is set when the
 * job is admitted as the half-open probe: its outcome must be reported with probe = true. */
bool pd_breaker_admit(pd_breaker *b, uint64_t now, bool idle, bool *probe);
/* A job that ran finished: infra_failure when it ended as startup_failure or internal_error. */
void pd_breaker_outcome(pd_breaker *b, uint64_t now, bool infra_failure, bool probe);
/* A probe that ended without running (cancelled, expired): the next admission may probe again. */
void pd_breaker_probe_dropped(pd_breaker *b);
/* True while it refuses (open, or half-open with its probe out). */
bool pd_breaker_refusing(const pd_breaker *b, uint64_t now);
/* Whole seconds until it may admit again (at least 1). */
unsigned pd_breaker_retry_after(const pd_breaker *b, uint64_t now);

#endif
