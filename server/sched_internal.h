/* The scheduler's state, shared by its two files: sched.c (queues, admission, workers, the
 * reaper) and sched_metrics.c (its /metrics text). Private to server/: nothing outside them
 * includes it. */
#ifndef PADDOCK_SERVER_SCHED_INTERNAL_H
#define PADDOCK_SERVER_SCHED_INTERNAL_H

#include "server.h"
#include "breaker.h"
#include "estimate.h"

#include <pthread.h>

#define MAX_CLIENTS 1024
#define MAX_TEMPLATES 64
#define BREAKER_MIN_SAMPLES 8
#define SIM_MAX 4096 /* queued jobs ahead simulated one by one; the rest by their mean */

enum { CLS_CPU = 0, CLS_WALL, CLS_N };

typedef struct client_q {
	char name[64];
	pd_job *head, *tail;
	size_t len;
} client_q;

typedef struct prio_q {
	client_q clients[MAX_CLIENTS];
	size_t nclients, rr, len;
} prio_q;

typedef struct worker {
	struct pd_sched *s;
	unsigned i;
	int cls;
	bool busy;
	uint64_t started; /* monotonic us */
	char key[80];	  /* the service-time key of the job it runs (svc_key) */
	uint64_t svc_us, bound_us; /* that job's estimate and bound (pd_job) */
	uint64_t mem;     /* the memory it holds against the budget */
	const pd_job *job; /* the job (its cancel flag is read atomically; nothing else) */
	/* idle: waits on its own cv, on its class's idle stack (next_idle), until a job for it is
	 * queued (woken) */
	pthread_cond_t cv;
	bool woken;
	struct worker *next_idle;
} worker;

struct pd_sched {
	pd_pools *pools;
	pd_store *store;
	pd_metrics *metrics;
	pd_sched_opts o;
	pthread_mutex_t mu;
	/* Each class's idle workers, the last to become idle on top: a queued job wakes that one.
	 * A condition variable shared by the class woke its longest-idle worker instead, so 128
	 * wall-class workers took turns, each job on a thread whose stack, allocator cache and
	 * arena had gone cold (issue 42). */
	worker *idle[CLS_N];
	prio_q q[CLS_N][PD_PRIO_COUNT];
	pthread_t *workers;
	worker *slots;
	unsigned nworkers, busy;
	unsigned cap[CLS_N], busy_cls[CLS_N];
	/* the memory budget (bytes) and what running jobs hold of it */
	uint64_t mem_budget, mem_held;
	uint64_t *heap; /* the start simulation's scratch (cap of the larger class) */
	bool stopping;
	/* the reaper: wakes at next_deadline (monotonic us, UINT64_MAX = no queued deadline) */
	pthread_t reaper;
	bool reaper_started;
	pthread_cond_t reaper_cv;
	uint64_t next_deadline;
	bool cancel_pending; /* pd_sched_cancel asked the reaper to look at the queues */
	/* one breaker per template: a template whose sandboxes fail to start (a memory limit too
	 * small, a missing toolchain) is refused alone; the others' jobs are admitted. "" keeps the
	 * jobs of templates past MAX_TEMPLATES. */
	struct {
		char name[64];
		pd_breaker b;
	} brk[MAX_TEMPLATES + 1];
	size_t nbrk;
	uint64_t memtotal;
	/* service times (acquire, files, compile, run, fetch, record and answer: what a worker
	 * spends on a job) and the finish-time estimate's correction */
	pd_est est;
	/* the integral of busy workers over time (worker-us), to the last change at busy_at: a job's
	 * mean concurrency is its growth over the job's run divided by the run's length */
	double busy_area;
	uint64_t busy_at;
	uint64_t memavail, memavail_at; /* mem_available's last reading, and when */
	uint64_t refused_total[PD_ADMIT_COUNT];
	uint64_t cancelled_queued, cancelled_running;
};

/* the number of jobs of class cls queued in priorities 0..upto_prio; lock held */
size_t sched_queued(const pd_sched *s, int cls, int upto_prio);

#endif
