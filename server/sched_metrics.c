/* The scheduler's /metrics text (pd_sched_metrics): queues and workers by class, the memory
 * budget, the breakers, refusals, cancellations, and the estimate's figures. */
#define _GNU_SOURCE
#include "sched_internal.h"

#include <stdio.h>

static const char *const cls_names[CLS_N] = {"cpu", "wall"};

char *pd_sched_metrics(pd_sched *s)
{
	static const char *const prio[] = {"high", "normal", "low"};
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	pthread_mutex_lock(&s->mu);
	uint64_t now = pd_now_us(), trips = 0;
	bool open = false;
	for (size_t i = 0; i < s->nbrk; i++) {
		open |= pd_breaker_refusing(&s->brk[i].b, now);
		trips += s->brk[i].b.trips;
	}
	fprintf(f, "# HELP paddock_queue_length Jobs waiting, by priority class.\n"
		   "# TYPE paddock_queue_length gauge\n");
	for (int p = 0; p < PD_PRIO_COUNT; p++)
		fprintf(f, "paddock_queue_length{priority=\"%s\"} %zu\n", prio[p],
			s->q[CLS_CPU][p].len + s->q[CLS_WALL][p].len);
	fprintf(f, "# HELP paddock_workers_busy Workers running a job.\n# TYPE paddock_workers_busy gauge\n"
		   "paddock_workers_busy %u\n# HELP paddock_workers Workers the scheduler has (--workers plus "
		   "--wall-workers).\n# TYPE paddock_workers gauge\npaddock_workers %u\n", s->busy, s->nworkers);
	fprintf(f, "# HELP paddock_class_workers_busy Workers running a job, by class (cpu: --workers; wall: "
		   "--wall-workers, SandboxFusion and Piston runs).\n# TYPE paddock_class_workers_busy gauge\n");
	for (int c = 0; c < CLS_N; c++)
		fprintf(f, "paddock_class_workers_busy{class=\"%s\"} %u\n", cls_names[c], s->busy_cls[c]);
	fprintf(f, "# HELP paddock_class_workers Workers of a class (cpu: --workers; wall: --wall-workers).\n"
		   "# TYPE paddock_class_workers gauge\n");
	for (int c = 0; c < CLS_N; c++)
		fprintf(f, "paddock_class_workers{class=\"%s\"} %u\n", cls_names[c], s->cap[c]);
	fprintf(f, "# HELP paddock_class_queue_length Jobs waiting, by class.\n# TYPE paddock_class_queue_length gauge\n");
	for (int c = 0; c < CLS_N; c++)
		fprintf(f, "paddock_class_queue_length{class=\"%s\"} %zu\n", cls_names[c], sched_queued(s, c, PD_PRIO_COUNT - 1));
	fprintf(f, "# HELP paddock_memory_budget_bytes The memory running jobs' limits may add up to (--memory-budget).\n"
		   "# TYPE paddock_memory_budget_bytes gauge\npaddock_memory_budget_bytes %llu\n"
		   "# HELP paddock_memory_held_bytes The memory limits of the jobs running now, added up.\n"
		   "# TYPE paddock_memory_held_bytes gauge\npaddock_memory_held_bytes %llu\n",
		(unsigned long long)s->mem_budget, (unsigned long long)s->mem_held);
	fprintf(f, "# HELP paddock_breaker_open 1 while a template's circuit breaker refuses its new work.\n"
		   "# TYPE paddock_breaker_open gauge\npaddock_breaker_open %d\n", open);
	fprintf(f, "# HELP paddock_breaker_trips_total Times a template's breaker opened.\n"
		   "# TYPE paddock_breaker_trips_total counter\npaddock_breaker_trips_total %llu\n",
		(unsigned long long)trips);
	fprintf(f, "# HELP paddock_template_breaker_open 1 while the template's breaker refuses its jobs.\n"
		   "# TYPE paddock_template_breaker_open gauge\n");
	for (size_t i = 0; i < s->nbrk; i++)
		if (s->brk[i].name[0])
			fprintf(f, "paddock_template_breaker_open{template=\"%s\"} %d\n", s->brk[i].name,
				pd_breaker_refusing(&s->brk[i].b, now));
	fprintf(f, "# HELP paddock_refused_total Jobs refused at admission, by reason.\n"
		   "# TYPE paddock_refused_total counter\n"
		   "paddock_refused_total{reason=\"queue_full\"} %llu\n"
		   "paddock_refused_total{reason=\"breaker\"} %llu\n"
		   "paddock_refused_total{reason=\"stopping\"} %llu\n"
		   "paddock_refused_total{reason=\"disk_full\"} %llu\n"
		   "paddock_refused_total{reason=\"deadline\"} %llu\n"
		   "paddock_refused_total{reason=\"memory\"} %llu\n",
		(unsigned long long)s->refused_total[PD_ADMIT_FULL],
		(unsigned long long)s->refused_total[PD_ADMIT_BREAKER],
		(unsigned long long)s->refused_total[PD_ADMIT_STOPPING],
		(unsigned long long)s->refused_total[PD_ADMIT_DISK_FULL],
		(unsigned long long)s->refused_total[PD_ADMIT_DEADLINE],
		(unsigned long long)s->refused_total[PD_ADMIT_MEMORY]);
	fprintf(f, "# HELP paddock_cancelled_total Jobs whose client disconnected, by where they were.\n"
		   "# TYPE paddock_cancelled_total counter\n"
		   "paddock_cancelled_total{stage=\"queued\"} %llu\n"
		   "paddock_cancelled_total{stage=\"running\"} %llu\n",
		(unsigned long long)s->cancelled_queued, (unsigned long long)s->cancelled_running);
	fprintf(f, "# HELP paddock_service_seconds Recent service time of a template (weighted mean).\n"
		   "# TYPE paddock_service_seconds gauge\n");
	/* as a job of the template would take alone (one busy worker) */
	for (size_t i = 0; i < s->est.nt; i++)
		if (s->est.t[i].name[0] && s->est.t[i].n)
			fprintf(f, "paddock_service_seconds{template=\"%s\"} %.3f\n", s->est.t[i].name,
				(double)pd_est_service(&s->est, s->est.t[i].name, 1, PD_EST_UNBOUNDED) / 1e6);
	fprintf(f, "# HELP paddock_limit_share Of a template's recent jobs, the (weighted) share that ran to "
		   "their time limit.\n# TYPE paddock_limit_share gauge\n");
	for (size_t i = 0; i < s->est.nt; i++)
		if (s->est.t[i].name[0] && (s->est.t[i].n || s->est.t[i].nlimit))
			fprintf(f, "paddock_limit_share{template=\"%s\"} %.3f\n", s->est.t[i].name,
				s->est.t[i].limit_share);
	fprintf(f, "# HELP paddock_admission_margin The factor admission applies to the service "
		   "times of jobs that end on their own (the 99th percentile of their errors of the last minute, at least 1).\n"
		   "# TYPE paddock_admission_margin gauge\npaddock_admission_margin %.3f\n",
		pd_est_factor(&s->est, now));
	pthread_mutex_unlock(&s->mu);
	fclose(f);
	return out;
}
