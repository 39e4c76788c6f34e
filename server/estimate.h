/* The scheduler's estimate of when a job would finish (server/estimate.c): a model of service
 * times per template that knows the workers share the CPUs, and a correction learnt from its own
 * errors. Plain data, no lock: the scheduler calls it with its lock held; tests/unit/estimate.c
 * drives it with made-up times.
 *
 * Why a model and not just the mean of recent service times: the daemon runs more workers than
 * there are CPUs (2 x CPUs by default), so a CPU-bound job that takes 0.3 s alone takes about
 * 0.6 s when four run on two CPUs. A mean learnt while the daemon was quiet admits twice what a
 * flood can finish; a mean learnt under the flood refuses what a quiet daemon would finish. So a
 * template's service time is kept as two parts: the CPU part (scaled by how many jobs share the
 * CPUs while it runs) and the rest (waits, I/O, the sandbox's setup and the answer's recording).
 *
 * And why a correction: a queue admitted up to its deadline holds jobs that all finish at about
 * their deadline; an estimate right on average then misses half of them. The correction is a high
 * quantile of (what a job took from admission to answer) / (what the model predicted), over the
 * recent jobs: admitting at that quantile leaves the margin the model's error needs, whatever its
 * cause (other load on a shared machine, a pool miss, the store's writes). */
#ifndef PADDOCK_SERVER_ESTIMATE_H
#define PADDOCK_SERVER_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PD_EST_TEMPLATES 64 /* templates learnt apart; later ones share one more entry */
#define PD_EST_CLASSES 3    /* priority classes (PD_PRIO_COUNT) */
#define PD_EST_WINDOW 128   /* recent prediction errors the correction is taken from */
#define PD_EST_PRIOR_US 500000u /* service time of a template not seen yet */

typedef struct pd_est_tmpl {
	char name[80];
	double io_us;  /* the part of its service time CPU sharing does not stretch */
	double cpu_us; /* the CPU part, as if it had a CPU to itself */
	uint64_t n;    /* jobs learnt from */
	size_t queued[PD_EST_CLASSES];
} pd_est_tmpl;

typedef struct pd_est {
	unsigned cpus;
	pd_est_tmpl t[PD_EST_TEMPLATES + 1];
	size_t nt;
	double ratio[PD_EST_WINDOW]; /* actual / predicted, newest at ratio_at - 1 */
	size_t nratio, ratio_at;
	double factor; /* the correction: the 99th percentile of ratio, within [1, PD_EST_MAX_FACTOR] */
} pd_est;

#define PD_EST_MAX_FACTOR 8.0
#define PD_EST_CPU_UNKNOWN UINT64_MAX

void pd_est_init(pd_est *e, unsigned cpus);
/* A job of template key, run while `conc` jobs (its own included) run at once: its service time. */
uint64_t pd_est_service(const pd_est *e, const char *key, double conc);
/* Whether a job of key has been learnt from (else its service time is the prior). */
bool pd_est_known(const pd_est *e, const char *key);
/* Learns from a job that took took_us from start to answer, cpu_us of CPU time
 * (PD_EST_CPU_UNKNOWN: count it all as CPU), while conc jobs ran on average. */
void pd_est_learn(pd_est *e, const char *key, uint64_t took_us, uint64_t cpu_us, double conc);
/* A job of key joins (delta 1) or leaves (-1) the queue of class prio. */
void pd_est_queue(pd_est *e, const char *key, int prio, int delta);
/* The service time of every job queued in classes 0..prio, each run at concurrency conc. */
uint64_t pd_est_queued_work(const pd_est *e, int prio, double conc);
/* A job predicted (uncorrected) to take predicted_us from admission to answer took actual_us. */
void pd_est_outcome(pd_est *e, uint64_t predicted_us, uint64_t actual_us);

#endif
