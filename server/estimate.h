/* The scheduler's estimate of how long a job takes (server/estimate.c): a model of service times
 * per template that knows the workers share the CPUs, bounded by each job's own limits, and a
 * correction learnt from the estimate's own recent errors. Plain data, no lock: the scheduler
 * calls it with its lock held; tests/unit/estimate.c drives it with made-up times.
 *
 * Why a model and not just the mean of recent service times: the daemon runs more jobs than there
 * are CPUs, so a CPU-bound job that takes 0.3 s alone takes about 0.6 s when four run on two CPUs.
 * So a template's service time is kept as two parts: the CPU part (scaled by how many jobs share
 * the CPUs while it runs) and the rest (waits, I/O, the sandbox's setup and the answer's
 * recording).
 *
 * Why bounded: a job cannot take longer than its time limits (plus a setup allowance), whatever
 * the template's history says. And a job that ended at its limit says nothing about how long the
 * next job of the template runs on its own (a burst of infinite loops says nothing about the next
 * print(1)): it is learnt apart, as the share of recent jobs that ran to their limit, and the
 * service time of a job is that share of its own bound plus the rest of the normal time. The
 * share decays as soon as jobs end on their own again.
 *
 * And why a correction: a model right on average still errs, and on a shared machine it errs late
 * (other load, a pool miss, the store's writes). The correction is the 99th percentile of (actual
 * / predicted) service time over the recent jobs that ended on their own, never below 1, and only
 * over the last PD_EST_WINDOW_US; it scales the normal part of every service time, never a bound.
 * A job that ran to its limit teaches nothing to it (its time was its limit's), so a burst of
 * time-outs cannot make the correction refuse the next print(1); and one old enough is
 * forgotten: a correction that refused everything could never learn it was wrong.
 */
#ifndef PADDOCK_SERVER_ESTIMATE_H
#define PADDOCK_SERVER_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PD_EST_TEMPLATES 64 /* templates learnt apart; later ones share one more entry */
#define PD_EST_WINDOW 128   /* recent prediction errors the correction is taken from */
#define PD_EST_WINDOW_US 60000000ull /* ... and no older than this */
#define PD_EST_PRIOR_US 500000u /* service time of a template not seen yet */
#define PD_EST_UNBOUNDED UINT64_MAX
#define PD_EST_OVER_PRIOR_US 1000000u /* the allowance past a job's limits before one is learnt */

typedef struct pd_est_tmpl {
	char name[80];
	double io_us;  /* the part of its service time CPU sharing does not stretch */
	double cpu_us; /* the CPU part, as if it had a CPU to itself */
	double limit_share; /* of its recent jobs, the (weighted) share that ran to their time limit */
	double over_us; /* how long past its time limits a job that ran to them took (setup, kill,
			 * teardown, the answer's recording): the bound's allowance */
	uint64_t n;    /* jobs that ended on their own, learnt from */
	uint64_t nlimit; /* jobs that ran to their limit */
} pd_est_tmpl;

typedef struct pd_est {
	unsigned cpus;
	pd_est_tmpl t[PD_EST_TEMPLATES + 1];
	size_t nt;
	double ratio[PD_EST_WINDOW]; /* actual / predicted wait, newest at ratio_at - 1 */
	uint64_t ratio_t[PD_EST_WINDOW]; /* when each was learnt (monotonic us) */
	size_t nratio, ratio_at;
	double factor;      /* the correction, as pd_est_refresh last found it */
	uint64_t factor_at; /* when */
} pd_est;

#define PD_EST_MAX_FACTOR 8.0
#define PD_EST_CPU_UNKNOWN UINT64_MAX

void pd_est_init(pd_est *e, unsigned cpus);
/* A job of template key whose time limits add up to limit_us (PD_EST_UNBOUNDED: none known), run
 * while `conc` jobs (its own included) run at once: its expected service time, never above its
 * bound (pd_est_bound), with the correction. */
uint64_t pd_est_service(const pd_est *e, const char *key, double conc, uint64_t limit_us);
/* The same without the correction nor the share of jobs that run to their limits: how long a job
 * that ends on its own takes (what pd_est_outcome compares with). */
uint64_t pd_est_normal(const pd_est *e, const char *key, double conc);
/* The longest a job of key with limits limit_us takes: the limits and the learnt allowance past
 * them (PD_EST_UNBOUNDED for an unbounded job). */
uint64_t pd_est_bound(const pd_est *e, const char *key, uint64_t limit_us);
/* Whether a job of key has been learnt from (else its service time is the prior). */
bool pd_est_known(const pd_est *e, const char *key);
/* Learns from a job that took took_us from start to answer, cpu_us of CPU time
 * (PD_EST_CPU_UNKNOWN: count it all as CPU), while conc jobs ran on average; at_limit: it ended
 * at its time limits, limit_us (its time is its limit's, not the template's: only how far past
 * them it took is learnt). */
void pd_est_learn(pd_est *e, const char *key, uint64_t took_us, uint64_t cpu_us, double conc, bool at_limit,
		  uint64_t limit_us);
/* A job that ended on its own, predicted (pd_est_normal) to take predicted_us, took actual_us;
 * now is the monotonic time (us). */
void pd_est_outcome(pd_est *e, uint64_t predicted_us, uint64_t actual_us, uint64_t now);
/* The correction at now: the 99th percentile of the errors of the last PD_EST_WINDOW_US, within
 * [1, PD_EST_MAX_FACTOR]; 1 with fewer than 8 of them. */
double pd_est_factor(const pd_est *e, uint64_t now);
/* Sets e->factor to pd_est_factor(now), at most once a second unless an outcome came since. */
void pd_est_refresh(pd_est *e, uint64_t now);

#endif
