/* estimate.c: the scheduler's finish-time model (server/estimate.c) with made-up times, no clock.
 * What over-admitted a flood by half again: a service time learnt while one job ran alone was
 * used for jobs that would run four to a pair of CPUs, and an estimate right on average was used
 * as if it were a bound. Here: the CPU part stretches with the jobs sharing the CPUs, learnt under
 * contention or alone it predicts the same, waits and I/O do not stretch, queued work is priced
 * at today's service times, and the correction is the 99th percentile of recent errors, never
 * below 1. */
#include "estimate.h"
#include "tap.h"

#define MS 1000u

int main(void)
{
	plan(16);
	pd_est e;
	pd_est_init(&e, 2);

	is_int(pd_est_service(&e, "python", 1), PD_EST_PRIOR_US, "a template not seen yet: the prior");
	is_int(pd_est_service(&e, "python", 4), 2 * PD_EST_PRIOR_US,
	       "... as CPU work: 4 jobs on 2 CPUs take twice as long");

	/* a CPU-bound job learnt alone */
	pd_est_learn(&e, "python", 300 * MS, 300 * MS, 1);
	is_int(pd_est_service(&e, "python", 1), 300 * MS, "learnt alone: 0.3 s alone");
	is_int(pd_est_service(&e, "python", 2), 300 * MS, "2 jobs on 2 CPUs: no slower");
	is_int(pd_est_service(&e, "python", 4), 600 * MS, "4 jobs on 2 CPUs: twice as long");

	/* the same job learnt under a flood: four at once, each took 0.6 s for 0.3 s of CPU */
	pd_est f;
	pd_est_init(&f, 2);
	pd_est_learn(&f, "python", 600 * MS, 300 * MS, 4);
	is_int(pd_est_service(&f, "python", 1), 300 * MS, "learnt under contention: 0.3 s alone");
	is_int(pd_est_service(&f, "python", 4), 600 * MS, "... and 0.6 s under it");

	/* a job that mostly waits (sleep, I/O) is not stretched */
	pd_est_learn(&e, "sleep", 500 * MS, 10 * MS, 1);
	is_int(pd_est_service(&e, "sleep", 4), 510 * MS, "a waiting job: only its 10 ms of CPU stretch");

	/* a judge job (CPU unknown) counts as all CPU */
	pd_est_learn(&e, "judge:python", 400 * MS, PD_EST_CPU_UNKNOWN, 1);
	is_int(pd_est_service(&e, "judge:python", 4), 800 * MS, "CPU unknown: all of it stretches");

	/* queued work, priced at the service times of now and by class */
	pd_est_queue(&e, "python", 1, 1);
	pd_est_queue(&e, "python", 1, 1);
	pd_est_queue(&e, "python", 2, 1);
	pd_est_queue(&e, "sleep", 0, 1);
	is_int(pd_est_queued_work(&e, 1, 4), 2 * 600 * MS + 510 * MS,
	       "classes 0-1 at 4 jobs at once: two python, one sleep (not the low class's)");
	pd_est_learn(&e, "python", 800 * MS, 800 * MS, 1); /* the mean moves a fifth of the way */
	is_int(pd_est_queued_work(&e, 1, 1), 2 * 400 * MS + 500 * MS,
	       "the queue is priced at the newest service time, not at the one of its admission");
	pd_est_queue(&e, "python", 1, -1);
	pd_est_queue(&e, "python", 1, -1);
	pd_est_queue(&e, "python", 1, -1); /* one too many: stays at 0 */
	is_int(pd_est_queued_work(&e, 1, 1), 500 * MS, "jobs that left the queue are no longer counted");

	/* the correction */
	for (int i = 0; i < 7; i++)
		pd_est_outcome(&e, 1000 * MS, 3000 * MS);
	ok(e.factor == 1.0, "fewer than 8 errors: no correction yet");
	for (int i = 0; i < PD_EST_WINDOW; i++)
		pd_est_outcome(&e, 1000 * MS, i == 5 ? 1500 * MS : 1000 * MS);
	ok(e.factor == 1.0, "one job of 128 half again late: the 99th percentile does not move");
	pd_est_outcome(&e, 1000 * MS, 1400 * MS);
	ok(e.factor > 1.39 && e.factor < 1.41, "a second one: the correction is the second largest (%.2f)",
	   e.factor);
	for (int i = 0; i < PD_EST_WINDOW; i++)
		pd_est_outcome(&e, 1000 * MS, 200 * MS);
	ok(e.factor == 1.0, "jobs that finished early: the correction stays at 1, never below");
	return done();
}
