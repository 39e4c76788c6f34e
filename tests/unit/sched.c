/* sched.c: admission by deadline in the scheduler (server/sched.c), with jobs that do their own
 * work (pd_job.execute): a job of known cost sleeps that long, a blocker waits on a gate the test
 * holds. Only lower bounds on time are relied on (a job sleeps at least its cost; a loaded machine
 * makes everything slower, which makes a refusal only more certain), so no timing is asserted:
 * a job whose deadline cannot be met behind the work ahead is refused at once, one that can is
 * admitted, and an idle scheduler admits anything; with more
 * workers than CPUs, the jobs queued behind a full daemon are priced at the CPU share they will
 * get (the over-admission the goodput figures showed), not at the time one took alone; a queue
 * of N refuses only when N wait behind busy workers, not a burst an idle class is taking. A job
 * queued on an idle scheduler runs on the worker that became idle last (issue 42: the class's
 * workers took turns, every job on a cold thread). */
#define _GNU_SOURCE
#include "server.h"
#include "log.h"
#include "tap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MS 1000u

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int finished, started_blockers;
static bool gate_open;

/* a job of known cost: it sleeps its cost (work points at it) */
static void sleep_job(pd_job *j, pd_pools *pools)
{
	(void)pools;
	uint64_t us = *(const uint64_t *)j->work;
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* a job that runs until the test opens the gate */
static void blocker_job(pd_job *j, pd_pools *pools)
{
	(void)j;
	(void)pools;
	pthread_mutex_lock(&mu);
	started_blockers++;
	pthread_cond_broadcast(&cv);
	while (!gate_open)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void job_done(pd_job *j, void *arg)
{
	(void)arg;
	pd_job_free(j);
	pthread_mutex_lock(&mu);
	finished++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static uint64_t cost_200ms = 200 * MS;

/* a job that notes the thread it ran on (work points at where) */
static void thread_job(pd_job *j, pd_pools *pools)
{
	(void)pools;
	*(pthread_t *)j->work = pthread_self();
}

/* the scheduler's busy workers, from its metrics */
static unsigned workers_busy(pd_sched *s)
{
	char *m = pd_sched_metrics(s);
	const char *p = m ? strstr(m, "\npaddock_workers_busy ") : NULL;
	unsigned n = p ? (unsigned)strtoul(p + 22, NULL, 10) : 99;
	free(m);
	return n;
}

static pd_job *job(void (*execute)(pd_job *, pd_pools *), uint64_t deadline_in_us)
{
	pd_job *j = pd_job_new();
	snprintf(j->template_name, sizeof j->template_name, "python");
	j->execute = execute;
	j->work = &cost_200ms;
	j->done = job_done;
	j->deadline_us = deadline_in_us ? pd_now_us() + deadline_in_us : 0;
	return j;
}

/* submits; a refused job is freed here (the caller's part, pd_sched_submit says) */
static pd_admit submit(pd_sched *s, pd_job *j, unsigned *retry_after)
{
	pd_admit a = pd_sched_submit(s, j);
	if (retry_after)
		*retry_after = j->retry_after_s;
	if (a != PD_ADMIT_OK)
		pd_job_free(j);
	return a;
}

static void wait_finished(int n)
{
	pthread_mutex_lock(&mu);
	while (finished < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void wait_blockers(int n)
{
	pthread_mutex_lock(&mu);
	while (started_blockers < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void open_gate(bool open)
{
	pthread_mutex_lock(&mu);
	gate_open = open;
	started_blockers = 0;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* n jobs of 200 ms one after the other (the scheduler learns their cost alone); returns the
 * count of finished jobs after */
static int teach(pd_sched *s, int n, int base)
{
	for (int i = 0; i < n; i++) {
		submit(s, job(sleep_job, 0), NULL);
		wait_finished(base + i + 1);
	}
	return base + n;
}

int main(void)
{
	plan(15);
	pd_log_enable(false);
	pd_err e = {0};

	/* one worker, one CPU */
	pd_sched_opts o = {.workers = 1, .cpus = 1};
	pd_sched *s = pd_sched_new(NULL, NULL, NULL, &o, &e);
	ok(s != NULL, "a scheduler with one worker: %s", e.msg);
	int fin = teach(s, 3, 0);
	unsigned ra = 0;
	/* an idle scheduler always admits (issue 37): a free worker and nothing queued, no estimate
	 * may refuse, even one that says the job cannot finish in time */
	is_int(submit(s, job(sleep_job, 100 * MS), &ra), PD_ADMIT_OK,
	       "idle: a 200 ms job with 100 ms to its deadline is admitted all the same");
	fin++;
	wait_finished(fin);
	is_int(submit(s, job(sleep_job, 600000 * MS), NULL), PD_ADMIT_OK, "... with 10 minutes: admitted");
	fin++;
	wait_finished(fin);
	/* the worker busy until the gate opens, four 200 ms jobs queued behind it */
	open_gate(false);
	submit(s, job(blocker_job, 0), NULL);
	wait_blockers(1);
	for (int i = 0; i < 4; i++)
		submit(s, job(sleep_job, 0), NULL);
	is_int(submit(s, job(sleep_job, 700 * MS), &ra), PD_ADMIT_DEADLINE,
	       "0.8 s of work queued ahead on the one worker, 0.7 s to the deadline: refused at once");
	ok(ra >= 1, "... with a Retry-After (%u s)", ra);
	is_int(submit(s, job(sleep_job, 600000 * MS), NULL), PD_ADMIT_OK,
	       "the same queue, 10 minutes to the deadline: admitted");
	open_gate(true);
	fin += 6;
	wait_finished(fin);
	pd_sched_drain(s);
	pd_sched_free(s);

	/* four workers sharing one CPU: a CPU-bound job learnt alone takes four times as long when
	 * all four run */
	o = (pd_sched_opts){.workers = 4, .cpus = 1};
	s = pd_sched_new(NULL, NULL, NULL, &o, &e);
	ok(s != NULL, "a scheduler with four workers on one CPU: %s", e.msg);
	fin = teach(s, 3, fin);
	open_gate(false);
	for (int i = 0; i < 4; i++)
		submit(s, job(blocker_job, 0), NULL);
	wait_blockers(4);
	for (int i = 0; i < 4; i++)
		submit(s, job(sleep_job, 0), NULL);
	/* alone: 4 queued x 0.2 s + 4 running x 0.2 s, over 4 workers, + its own 0.2 s = 0.6 s;
	 * at a quarter of a CPU each, all of that four times: 2.4 s */
	is_int(submit(s, job(sleep_job, 1500 * MS), NULL), PD_ADMIT_DEADLINE,
	       "four workers busy on one CPU, four queued, 1.5 s to the deadline: refused (the work "
	       "ahead runs at a quarter of a CPU)");
	is_int(submit(s, job(sleep_job, 600000 * MS), NULL), PD_ADMIT_OK,
	       "... with 10 minutes: admitted");
	open_gate(true);
	fin += 9;
	wait_finished(fin);
	pd_sched_drain(s);
	pd_sched_free(s);

	/* two idle workers and --queue-max 1: three jobs sent at once are all taken (two run, one
	 * waits), whether or not the workers woke before the next arrived; the fourth is refused */
	o = (pd_sched_opts){.workers = 2, .cpus = 2, .queue_max = 1};
	s = pd_sched_new(NULL, NULL, NULL, &o, &e);
	ok(s != NULL, "a scheduler with two workers and a queue of one: %s", e.msg);
	open_gate(false);
	int admitted = 0;
	for (int i = 0; i < 3; i++)
		admitted += submit(s, job(blocker_job, 0), NULL) == PD_ADMIT_OK;
	is_int(admitted, 3, "three jobs at once on two idle workers and a queue of one: all admitted");
	is_int(submit(s, job(blocker_job, 0), NULL), PD_ADMIT_FULL,
	       "a fourth, two running and one waiting: refused, queue full");
	wait_blockers(2);
	is_int(submit(s, job(blocker_job, 0), NULL), PD_ADMIT_FULL, "... and once both run, still refused");
	open_gate(true);
	fin += 3;
	wait_finished(fin);
	pd_sched_drain(s);
	pd_sched_free(s);

	/* eight idle workers, jobs one at a time, each after the last one's worker is idle again:
	 * every one runs on that same worker */
	o = (pd_sched_opts){.workers = 8, .cpus = 1};
	s = pd_sched_new(NULL, NULL, NULL, &o, &e);
	ok(s != NULL, "a scheduler with eight workers: %s", e.msg);
	pthread_t ran[12];
	int same = 0;
	for (int i = 0; i < 12; i++) {
		pd_job *j = job(thread_job, 0);
		j->work = &ran[i];
		submit(s, j, NULL);
		wait_finished(++fin);
		for (int k = 0; k < 10000 && workers_busy(s); k++)
			usleep(1000);
		same += i && pthread_equal(ran[i], ran[0]);
	}
	is_int(same, 11, "12 jobs one after the other, each on the worker that became idle last: all on one thread");
	pd_sched_drain(s);
	pd_sched_free(s);
	return done();
}
