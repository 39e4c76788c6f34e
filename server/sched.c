/* The scheduler: three priority classes, each a set of per-client FIFO queues served round robin
 * (one client's flood cannot starve another), bounded in size; worker threads take the highest
 * class with work. A job whose deadline passes while queued ends as queue_timeout without running,
 * and is answered at its deadline: a reaper thread sleeps until the earliest queued deadline
 * (a timed wait on a monotonic condition variable, no polling), so a client is not kept waiting
 * for a worker to free up only to hear that its deadline passed long ago.
 *
 * Admission: a full class refuses at once; a circuit breaker refuses everything while recent queue
 * waits, sandbox-creation failures or free memory cross their thresholds, and closes by itself
 * after a cooldown once the figures recover — so overload degrades into fast refusals (clients
 * retry) instead of a growing queue and an OOM-killed daemon. */
#define _GNU_SOURCE
#include "server.h"

#include <limits.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 1024
#define RECENT 64

typedef struct client_q {
	char name[64];
	pd_job *head, *tail;
	size_t len;
} client_q;

typedef struct prio_q {
	client_q clients[MAX_CLIENTS];
	size_t nclients, rr, len;
} prio_q;

struct pd_sched {
	pd_pools *pools;
	pd_store *store;
	pd_metrics *metrics;
	pd_sched_opts o;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	prio_q q[PD_PRIO_COUNT];
	pthread_t *workers;
	unsigned nworkers, busy;
	bool stopping;
	/* the reaper: wakes at next_deadline (monotonic us, UINT64_MAX = no queued deadline) */
	pthread_t reaper;
	bool reaper_started;
	pthread_cond_t reaper_cv;
	uint64_t next_deadline;
	/* breaker inputs: recent queue waits and create outcomes */
	uint64_t waits[RECENT];
	unsigned nwaits;
	bool creates_failed[RECENT];
	unsigned ncreates;
	bool open;
	uint64_t open_until;
	uint64_t memavail, memavail_at; /* mem_available's last reading, and when */
	uint64_t opened_total, refused_total[PD_ADMIT_COUNT];
};

static uint64_t wall_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* MemAvailable, read at most every 20 ms (with the lock held): /proc/meminfo costs ~30 us to
 * generate, every submission asked, and a breaker that trips 20 ms late is still far ahead of
 * the OOM killer. */
static uint64_t mem_available(pd_sched *s)
{
	uint64_t now = pd_now_us();
	if (s->memavail_at && now - s->memavail_at < 20000)
		return s->memavail;
	s->memavail_at = now;
	char buf[4096];
	char *p = pd_read_file("/proc/meminfo", buf, sizeof buf) > 0 ? strstr(buf, "MemAvailable:") : NULL;
	s->memavail = p ? strtoull(p + 13, NULL, 10) * 1024 : UINT64_MAX;
	return s->memavail;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Decides, with the lock held, whether the breaker is open now. */
static bool breaker_check(pd_sched *s)
{
	uint64_t now = pd_now_us();
	if (s->open && now < s->open_until)
		return true;
	unsigned n = s->nwaits < RECENT ? s->nwaits : RECENT;
	uint64_t sorted[RECENT];
	memcpy(sorted, s->waits, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, cmp_u64);
	uint64_t p90 = n >= 8 ? sorted[n * 9 / 10] : 0;
	unsigned nc = s->ncreates < RECENT ? s->ncreates : RECENT, failed = 0;
	for (unsigned i = 0; i < nc; i++)
		failed += s->creates_failed[i];
	bool trip = p90 > s->o.breaker_wait_ms * 1000 ||
		    (nc >= 8 && (double)failed / nc > s->o.breaker_fail_ratio) ||
		    mem_available(s) < s->o.breaker_min_free;
	if (trip) {
		if (!s->open)
			s->opened_total++;
		s->open = true;
		s->open_until = now + s->o.breaker_cooldown_ms * 1000;
		/* forget the figures that tripped it: after the cooldown, fresh ones decide */
		s->nwaits = 0;
		s->ncreates = 0;
		return true;
	}
	s->open = false;
	return false;
}

bool pd_sched_breaker_open(pd_sched *s)
{
	pthread_mutex_lock(&s->mu);
	bool open = s->open && pd_now_us() < s->open_until;
	pthread_mutex_unlock(&s->mu);
	return open;
}

unsigned pd_sched_retry_after(pd_sched *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t now = pd_now_us();
	unsigned secs = s->open && s->open_until > now ? (unsigned)((s->open_until - now) / 1000000 + 1) : 1;
	pthread_mutex_unlock(&s->mu);
	return secs;
}

static client_q *client_of(prio_q *q, const char *name)
{
	for (size_t i = 0; i < q->nclients; i++)
		if (!strcmp(q->clients[i].name, name))
			return &q->clients[i];
	if (q->nclients == MAX_CLIENTS) {
		/* reuse an empty slot; if all are busy, share the last one */
		for (size_t i = 0; i < q->nclients; i++)
			if (!q->clients[i].len) {
				snprintf(q->clients[i].name, sizeof q->clients[i].name, "%s", name);
				return &q->clients[i];
			}
		return &q->clients[MAX_CLIENTS - 1];
	}
	client_q *c = &q->clients[q->nclients++];
	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "%s", name);
	return c;
}

pd_admit pd_sched_submit(pd_sched *s, pd_job *j)
{
	pthread_mutex_lock(&s->mu);
	pd_admit a = PD_ADMIT_OK;
	int pr = j->priority >= 0 && j->priority < PD_PRIO_COUNT ? j->priority : PD_PRIO_NORMAL;
	if (s->stopping)
		a = PD_ADMIT_STOPPING;
	else if (s->store && pd_store_full(s->store, NULL, 0))
		a = PD_ADMIT_DISK_FULL;
	else if (breaker_check(s))
		a = PD_ADMIT_BREAKER;
	else if (s->q[pr].len >= s->o.queue_max)
		a = PD_ADMIT_FULL;
	if (a != PD_ADMIT_OK) {
		s->refused_total[a]++;
		pthread_mutex_unlock(&s->mu);
		return a;
	}
	j->queued_us = wall_us();
	j->next = NULL;
	client_q *c = client_of(&s->q[pr], j->client[0] ? j->client : "anonymous");
	if (c->tail)
		c->tail->next = j;
	else
		c->head = j;
	c->tail = j;
	c->len++;
	s->q[pr].len++;
	pthread_cond_signal(&s->cv);
	if (j->deadline_us && j->deadline_us < s->next_deadline) {
		/* earlier than what the reaper sleeps towards: it must re-arm */
		s->next_deadline = j->deadline_us;
		pthread_cond_signal(&s->reaper_cv);
	}
	pthread_mutex_unlock(&s->mu);
	return PD_ADMIT_OK;
}

/* Next job by priority, then round robin over clients; lock held. */
static pd_job *take(pd_sched *s)
{
	for (int p = 0; p < PD_PRIO_COUNT; p++) {
		prio_q *q = &s->q[p];
		if (!q->len)
			continue;
		for (size_t k = 0; k < q->nclients; k++) {
			client_q *c = &q->clients[(q->rr + k) % q->nclients];
			if (!c->head)
				continue;
			pd_job *j = c->head;
			c->head = j->next;
			if (!c->head)
				c->tail = NULL;
			c->len--;
			q->len--;
			q->rr = (q->rr + k + 1) % q->nclients;
			return j;
		}
	}
	return NULL;
}

static void finish(pd_sched *s, pd_job *j)
{
	if (s->store) {
		pd_err e = {0};
		char host[64] = "";
		gethostname(host, sizeof host - 1);
		/* the result is on disk before the caller hears of it: a crash after this loses nothing,
		 * and a result that could not be recorded is not reported as one (store_errno) */
		if (pd_store_put(s->store, j, host, &e) < 0) {
			j->store_errno = e.code ? e.code : EIO;
			snprintf(j->store_error, sizeof j->store_error, "%s", e.msg);
			pd_log("error", "store", PD_LS("task_id", j->task_id), PD_LS("error", e.msg));
		}
	}
	if (s->metrics)
		pd_metrics_job(s->metrics, j);
	char problem[sizeof j->problem_id + sizeof j->problem_version + 1];
	snprintf(problem, sizeof problem, "%s@%s", j->problem_id, j->problem_version);
	pd_log("info", "attempt finished", PD_LS("task_id", j->task_id), PD_LS("sandbox_id", j->sandbox_id),
	       PD_LU("attempt", j->attempts), PD_LS("problem", problem), PD_LS("template", j->template_name),
	       PD_LS("status", j->ran ? pd_status_name(j->run_r.status)
			       : j->compiled ? pd_status_name(j->compile_r.status) : "XX"),
	       PD_LS("failure_class", pd_failure_name(j->failure)));
	j->done(j, j->done_arg);
}

/* Ends a job that was never run because its deadline passed in the queue. */
static void expire(pd_job *j, uint64_t waited_us, uint64_t now_wall)
{
	j->failure = PD_F_QUEUE;
	snprintf(j->error, sizeof j->error, "the deadline passed after %llu ms in the queue",
		 (unsigned long long)(waited_us / 1000));
	j->started_us = j->finished_us = now_wall;
}

/* Takes every queued job whose deadline is at or before now out of the queues (into *out, linked
 * by next) and returns the earliest deadline still queued (UINT64_MAX if none); lock held. */
static uint64_t take_expired(pd_sched *s, uint64_t now, pd_job **out)
{
	uint64_t next = UINT64_MAX;
	pd_job *expired = NULL, **tail = &expired;
	for (int p = 0; p < PD_PRIO_COUNT; p++) {
		prio_q *q = &s->q[p];
		for (size_t k = 0; q->len && k < q->nclients; k++) {
			client_q *c = &q->clients[k];
			pd_job *prev = NULL;
			for (pd_job *j = c->head, *nx; j; j = nx) {
				nx = j->next;
				if (!j->deadline_us || j->deadline_us > now) {
					if (j->deadline_us && j->deadline_us < next)
						next = j->deadline_us;
					prev = j;
					continue;
				}
				if (prev)
					prev->next = nx;
				else
					c->head = nx;
				if (c->tail == j)
					c->tail = prev;
				c->len--;
				q->len--;
				j->next = NULL;
				*tail = j;
				tail = &j->next;
			}
		}
	}
	*out = expired;
	return next;
}

static void *reaper_main(void *arg)
{
	pd_sched *s = arg;
	pthread_mutex_lock(&s->mu);
	while (!s->stopping) {
		uint64_t now = pd_now_us();
		pd_job *expired = NULL;
		s->next_deadline = take_expired(s, now, &expired);
		if (expired) {
			/* answered outside the lock: finishing writes to the store */
			uint64_t now_wall = wall_us();
			for (pd_job *j = expired; j; j = j->next) {
				uint64_t waited = now_wall > j->queued_us ? now_wall - j->queued_us : 0;
				s->waits[s->nwaits++ % RECENT] = waited;
			}
			pthread_mutex_unlock(&s->mu);
			for (pd_job *j = expired, *nx; j; j = nx) {
				nx = j->next;
				j->next = NULL;
				expire(j, now_wall > j->queued_us ? now_wall - j->queued_us : 0, now_wall);
				finish(s, j);
			}
			pthread_mutex_lock(&s->mu);
			continue; /* the queues may have changed meanwhile: scan again */
		}
		if (s->next_deadline == UINT64_MAX) {
			pthread_cond_wait(&s->reaper_cv, &s->mu);
		} else {
			struct timespec ts = {.tv_sec = (time_t)(s->next_deadline / 1000000),
					      .tv_nsec = (long)(s->next_deadline % 1000000) * 1000};
			pthread_cond_timedwait(&s->reaper_cv, &s->mu, &ts);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void *worker_main(void *arg)
{
	pd_sched *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		pd_job *j = take(s);
		if (!j) {
			if (s->stopping)
				break;
			pthread_cond_wait(&s->cv, &s->mu);
			continue;
		}
		s->busy++;
		pthread_mutex_unlock(&s->mu);
		uint64_t now_wall = wall_us();
		uint64_t waited = now_wall > j->queued_us ? now_wall - j->queued_us : 0;
		/* the reaper may not have reached it yet */
		if (j->deadline_us && pd_now_us() >= j->deadline_us) {
			expire(j, waited, now_wall);
		} else {
			pd_job_execute(s->pools, j, s->o.retries);
		}
		pthread_mutex_lock(&s->mu);
		s->waits[s->nwaits++ % RECENT] = waited;
		if (j->failure != PD_F_QUEUE)
			s->creates_failed[s->ncreates++ % RECENT] = j->failure == PD_F_STARTUP;
		s->busy--;
		pthread_mutex_unlock(&s->mu);
		finish(s, j);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

pd_sched *pd_sched_new(pd_pools *pools, pd_store *store, pd_metrics *m, const pd_sched_opts *o, pd_err *e)
{
	pd_sched *s = calloc(1, sizeof *s);
	if (!s) {
		pd_fail(e, ENOMEM, "scheduler");
		return NULL;
	}
	s->pools = pools;
	s->store = store;
	s->metrics = m;
	if (o)
		s->o = *o;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (!s->o.workers)
		s->o.workers = (unsigned)(cpus > 0 ? cpus * 2 : 2);
	if (!s->o.queue_max)
		s->o.queue_max = 4096;
	if (!s->o.retries)
		s->o.retries = 2;
	if (!s->o.breaker_wait_ms)
		s->o.breaker_wait_ms = 30000;
	if (s->o.breaker_fail_ratio <= 0)
		s->o.breaker_fail_ratio = 0.5;
	if (!s->o.breaker_min_free)
		s->o.breaker_min_free = 256ull << 20;
	if (!s->o.breaker_cooldown_ms)
		s->o.breaker_cooldown_ms = 5000;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	/* deadlines are pd_now_us() values: the reaper's timed wait must use the same clock */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->reaper_cv, &ca);
	pthread_condattr_destroy(&ca);
	s->next_deadline = UINT64_MAX;
	s->workers = calloc(s->o.workers, sizeof *s->workers);
	if (!s->workers) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		pthread_cond_destroy(&s->reaper_cv);
		free(s);
		pd_fail(e, ENOMEM, "workers");
		return NULL;
	}
	if (pthread_create(&s->reaper, NULL, reaper_main, s) != 0) {
		pd_fail(e, EAGAIN, "start the deadline reaper");
		pd_sched_free(s);
		return NULL;
	}
	s->reaper_started = true;
	for (unsigned i = 0; i < s->o.workers; i++) {
		if (pthread_create(&s->workers[i], NULL, worker_main, s) != 0) {
			pd_fail(e, EAGAIN, "start worker %u", i);
			pd_sched_drain(s);
			pd_sched_free(s);
			return NULL;
		}
		s->nworkers++;
	}
	return s;
}

void pd_sched_drain(pd_sched *s)
{
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	pthread_cond_broadcast(&s->cv);
	pthread_cond_signal(&s->reaper_cv);
	pthread_mutex_unlock(&s->mu);
	/* the reaper stops first; whatever expires during the drain, the workers expire */
	if (s->reaper_started)
		pthread_join(s->reaper, NULL);
	s->reaper_started = false;
	for (unsigned i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	s->nworkers = 0;
}

void pd_sched_free(pd_sched *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->reaper_cv);
	free(s->workers);
	free(s);
}

char *pd_sched_metrics(pd_sched *s)
{
	static const char *const prio[] = {"high", "normal", "low"};
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	pthread_mutex_lock(&s->mu);
	bool open = s->open && pd_now_us() < s->open_until;
	fprintf(f, "# HELP paddock_queue_length Jobs waiting, by priority class.\n"
		   "# TYPE paddock_queue_length gauge\n");
	for (int p = 0; p < PD_PRIO_COUNT; p++)
		fprintf(f, "paddock_queue_length{priority=\"%s\"} %zu\n", prio[p], s->q[p].len);
	fprintf(f, "# HELP paddock_workers_busy Workers running a job.\n# TYPE paddock_workers_busy gauge\n"
		   "paddock_workers_busy %u\npaddock_workers %u\n", s->busy, s->nworkers);
	fprintf(f, "# HELP paddock_breaker_open 1 while the circuit breaker refuses new work.\n"
		   "# TYPE paddock_breaker_open gauge\npaddock_breaker_open %d\n", open);
	fprintf(f, "# HELP paddock_breaker_trips_total Times the breaker opened.\n"
		   "# TYPE paddock_breaker_trips_total counter\npaddock_breaker_trips_total %llu\n",
		(unsigned long long)s->opened_total);
	fprintf(f, "# HELP paddock_refused_total Jobs refused at admission, by reason.\n"
		   "# TYPE paddock_refused_total counter\n"
		   "paddock_refused_total{reason=\"queue_full\"} %llu\n"
		   "paddock_refused_total{reason=\"breaker\"} %llu\n"
		   "paddock_refused_total{reason=\"stopping\"} %llu\n"
		   "paddock_refused_total{reason=\"disk_full\"} %llu\n",
		(unsigned long long)s->refused_total[PD_ADMIT_FULL],
		(unsigned long long)s->refused_total[PD_ADMIT_BREAKER],
		(unsigned long long)s->refused_total[PD_ADMIT_STOPPING],
		(unsigned long long)s->refused_total[PD_ADMIT_DISK_FULL]);
	pthread_mutex_unlock(&s->mu);
	fclose(f);
	return out;
}
