/* estimate.c: the scheduler's service-time model (server/estimate.c) with made-up times, no clock.
 * What over-admitted a flood by half again: a service time learnt while one job ran alone was
 * used for jobs that would run four to a pair of CPUs. What refused an idle daemon's print(1) for
 * minutes: a burst of time-outs taught the template a 10 s service time and an 8x correction.
 * Here: the CPU part stretches with the jobs sharing the CPUs, waits and I/O do not stretch, a
 * job's estimate never passes its own limits' bound, jobs that ran to their limit are learnt as a
 * share that decays, the correction is the 99th percentile of recent errors of jobs that ended on
 * their own, never below 1, and forgotten after a minute. */
#include "estimate.h"
#include "tap.h"

#define MS 1000u
#define S 1000000u
#define UNB PD_EST_UNBOUNDED

int main(void)
{
	plan(22);
	pd_est e;
	pd_est_init(&e, 2);

	is_int(pd_est_service(&e, "python", 1, UNB), PD_EST_PRIOR_US, "a template not seen yet: the prior");
	is_int(pd_est_service(&e, "python", 4, UNB), 2 * PD_EST_PRIOR_US,
	       "... as CPU work: 4 jobs on 2 CPUs take twice as long");
	is_int(pd_est_service(&e, "python", 400, 10 * S), 10 * S + PD_EST_OVER_PRIOR_US,
	       "... but never past its own limits and the allowance");

	/* a CPU-bound job learnt alone */
	pd_est_learn(&e, "python", 300 * MS, 300 * MS, 1, false, 10 * S);
	is_int(pd_est_service(&e, "python", 1, UNB), 300 * MS, "learnt alone: 0.3 s alone");
	is_int(pd_est_service(&e, "python", 2, UNB), 300 * MS, "2 jobs on 2 CPUs: no slower");
	is_int(pd_est_service(&e, "python", 4, UNB), 600 * MS, "4 jobs on 2 CPUs: twice as long");

	/* the same job learnt under a flood: four at once, each took 0.6 s for 0.3 s of CPU */
	pd_est f;
	pd_est_init(&f, 2);
	pd_est_learn(&f, "python", 600 * MS, 300 * MS, 4, false, 10 * S);
	is_int(pd_est_service(&f, "python", 1, UNB), 300 * MS, "learnt under contention: 0.3 s alone");
	is_int(pd_est_service(&f, "python", 4, UNB), 600 * MS, "... and 0.6 s under it");

	/* a job that mostly waits (sleep, I/O) is not stretched */
	pd_est_learn(&e, "sleep", 500 * MS, 10 * MS, 1, false, 10 * S);
	is_int(pd_est_service(&e, "sleep", 4, UNB), 510 * MS, "a waiting job: only its 10 ms of CPU stretch");

	/* a judge job (CPU unknown) counts as all CPU */
	pd_est_learn(&e, "judge:python", 400 * MS, PD_EST_CPU_UNKNOWN, 1, false, UNB);
	is_int(pd_est_service(&e, "judge:python", 4, UNB), 800 * MS, "CPU unknown: all of it stretches");

	/* a burst of time-outs: ten jobs ran to their 10 s limit, each 10.4 s from start to answer */
	pd_est g;
	pd_est_init(&g, 2);
	for (int i = 0; i < 20; i++)
		pd_est_learn(&g, "python", 30 * MS, 20 * MS, 1, false, 10 * S);
	for (int i = 0; i < 10; i++)
		pd_est_learn(&g, "python", 10400 * MS, 10000 * MS, 1, true, 10 * S);
	is_int(pd_est_bound(&g, "python", 10 * S), 10400 * MS, "the allowance past the limits is learnt (0.4 s)");
	ok(pd_est_service(&g, "python", 1, 10 * S) > 9 * S, "after the burst a job of the template is expected to run near its limit");
	is_int(pd_est_normal(&g, "python", 1), 30 * MS, "... but what a job that ends on its own takes is untouched");
	ok(pd_est_service(&g, "python", 1, 2 * S) <= 2400 * MS, "and a job with a 2 s limit is never expected past 2 s + the allowance");
	for (int i = 0; i < 10; i++)
		pd_est_learn(&g, "python", 30 * MS, 20 * MS, 1, false, 10 * S);
	ok(pd_est_service(&g, "python", 1, 10 * S) < 1200 * MS,
	   "ten normal jobs later the share of time-outs has decayed (%llu us)",
	   (unsigned long long)pd_est_service(&g, "python", 1, 10 * S));

	/* the correction */
	for (int i = 0; i < 7; i++)
		pd_est_outcome(&e, 1000 * MS, 3000 * MS, 1 * S);
	pd_est_refresh(&e, 1 * S);
	ok(e.factor == 1.0, "fewer than 8 errors: no correction yet");
	for (int i = 0; i < PD_EST_WINDOW; i++)
		pd_est_outcome(&e, 1000 * MS, i == 5 ? 1500 * MS : 1000 * MS, 2 * S);
	ok(pd_est_factor(&e, 2 * S) == 1.0, "one job of 128 half again late: the 99th percentile does not move");
	pd_est_outcome(&e, 1000 * MS, 1400 * MS, 2 * S);
	double fct = pd_est_factor(&e, 2 * S);
	ok(fct > 1.39 && fct < 1.41, "a second one: the correction is the second largest (%.2f)", fct);
	pd_est_refresh(&e, 2 * S);
	is_int(pd_est_service(&e, "sleep", 1, UNB), 700 * MS, "the correction scales a normal service time");
	pd_est_learn(&e, "slow", 3 * S, 10 * MS, 1, false, UNB);
	is_int(pd_est_service(&e, "slow", 1, 1 * S), 1 * S + PD_EST_OVER_PRIOR_US, "... never past the bound");
	ok(pd_est_factor(&e, 2 * S + PD_EST_WINDOW_US + 1) == 1.0,
	   "a minute without a new error: the correction is forgotten (it cannot lock itself)");
	for (int i = 0; i < PD_EST_WINDOW; i++)
		pd_est_outcome(&e, 1000 * MS, 200 * MS, 3 * S);
	ok(pd_est_factor(&e, 3 * S) == 1.0, "jobs that finished early: the correction stays at 1, never below");
	return done();
}
