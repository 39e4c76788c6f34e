/* Metrics in Prometheus text format: jobs by status (a judge job under "judge": it has no one
 * program status) and by failure class (each class its own series, always present), histograms of
 * queue, setup and exec time, HTTP responses by code. */
#define _GNU_SOURCE
#include "server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double buckets_ms[] = {1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000};
#define NB (sizeof buckets_ms / sizeof buckets_ms[0])

typedef struct hist {
	uint64_t b[NB + 1];
	double sum;
	uint64_t count;
} hist;

struct pd_metrics {
	pthread_mutex_t mu;
	uint64_t status[7];
	uint64_t judge_jobs; /* a judge job has no one program status (pd_job_status_name) */
	uint64_t failure[PD_F_COUNT];
	uint64_t attempts, retried;
	hist queue, setup, exec;
	uint64_t http[6]; /* 1xx..5xx by hundreds */
	uint64_t audit_events[PD_AK_N]; /* audited jobs' events by kind (kept or dropped) */
	uint64_t process[3];            /* jobs by process verdict: not_audited, pass, fail */
	pd_ops *ops;      /* the operator metrics (opsmetrics.c): costs by template and usable */
	pd_detect *detect; /* cheat detections by template and problem (detections.c) */
};

pd_metrics *pd_metrics_new(void)
{
	pd_metrics *m = calloc(1, sizeof *m);
	if (m) {
		pthread_mutex_init(&m->mu, NULL);
		m->ops = pd_ops_new();
		m->detect = pd_detect_new();
	}
	return m;
}

void pd_metrics_free(pd_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	pd_ops_free(m->ops);
	pd_detect_free(m->detect);
	free(m);
}

static void observe(hist *h, double ms)
{
	size_t i = 0;
	while (i < NB && ms > buckets_ms[i])
		i++;
	h->b[i]++;
	h->sum += ms;
	h->count++;
}

void pd_metrics_job(pd_metrics *m, const pd_job *j)
{
	const pd_result *r = j->ran ? &j->run_r : j->compiled ? &j->compile_r : NULL;
	pthread_mutex_lock(&m->mu);
	if (j->execute)
		m->judge_jobs++;
	else
		m->status[r ? r->status : PD_XX]++;
	m->failure[j->failure]++;
	m->attempts += j->attempts;
	for (int k = 0; j->audit && k < PD_AK_N; k++)
		m->audit_events[k] += (j->compiled ? j->compile_r.audit_kinds[k] : 0) + (j->ran ? j->run_r.audit_kinds[k] : 0);
	/* a judged job runs no steps of its own: its candidate runs' events */
	for (int k = 0; k < PD_AK_N; k++)
		m->audit_events[k] += j->work_audit_kinds[k];
	m->process[(unsigned)j->verdict.status < 3 ? j->verdict.status : 0]++;
	m->retried += j->attempts > 1 ? j->attempts - 1 : 0;
	double q = j->started_us > j->queued_us && j->queued_us ? (j->started_us - j->queued_us) / 1000.0 : 0;
	observe(&m->queue, q);
	double exec = ((j->compiled ? j->compile_r.exec_us : 0) + (j->ran ? j->run_r.exec_us : 0)) / 1000.0;
	double total = j->finished_us > j->started_us ? (j->finished_us - j->started_us) / 1000.0 : 0;
	observe(&m->exec, exec);
	observe(&m->setup, total > exec ? total - exec : 0);
	pthread_mutex_unlock(&m->mu);
	pd_ops_job(m->ops, j);
	pd_detect_job(m->detect, j);
}

pd_ops *pd_metrics_ops(pd_metrics *m)
{
	return m->ops;
}

void pd_metrics_http(pd_metrics *m, int status)
{
	pthread_mutex_lock(&m->mu);
	m->http[status / 100 < 6 ? status / 100 : 5]++;
	pthread_mutex_unlock(&m->mu);
}

static void put_hist(FILE *f, const char *name, const char *help, const hist *h)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	uint64_t cum = 0;
	for (size_t i = 0; i < NB; i++) {
		cum += h->b[i];
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, buckets_ms[i] / 1000.0, (unsigned long long)cum);
	}
	cum += h->b[NB];
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
		(unsigned long long)cum, name, h->sum / 1000.0, name, (unsigned long long)h->count);
}

char *pd_metrics_render(pd_metrics *m, const char *extra)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	pthread_mutex_lock(&m->mu);
	fprintf(f, "# HELP paddock_jobs_total Finished jobs by the program's status; judge: judge jobs, whose "
		   "outcome is their verdict (paddock_judged_total).\n"
		   "# TYPE paddock_jobs_total counter\n");
	for (int s = 0; s < 7; s++)
		fprintf(f, "paddock_jobs_total{status=\"%s\"} %llu\n", pd_status_name((pd_status)s),
			(unsigned long long)m->status[s]);
	fprintf(f, "paddock_jobs_total{status=\"judge\"} %llu\n", (unsigned long long)m->judge_jobs);
	fprintf(f, "# HELP paddock_failures_total Finished jobs by failure class.\n"
		   "# TYPE paddock_failures_total counter\n");
	for (int c = 0; c < PD_F_COUNT; c++)
		fprintf(f, "paddock_failures_total{class=\"%s\"} %llu\n", pd_failure_name((pd_failure)c),
			(unsigned long long)m->failure[c]);
	fprintf(f, "# HELP paddock_attempts_total Attempts, retries included.\n"
		   "# TYPE paddock_attempts_total counter\npaddock_attempts_total %llu\n"
		   "# HELP paddock_retries_total Attempts that were retries of infrastructure failures.\n"
		   "# TYPE paddock_retries_total counter\npaddock_retries_total %llu\n",
		(unsigned long long)m->attempts, (unsigned long long)m->retried);
	fprintf(f, "# HELP paddock_audit_events_total Audit events of audited jobs by kind.\n"
		   "# TYPE paddock_audit_events_total counter\n");
	for (int k = 0; k < PD_AK_N; k++)
		fprintf(f, "paddock_audit_events_total{kind=\"%s\"} %llu\n", pd_audit_kind_name((pd_audit_kind)k),
			(unsigned long long)m->audit_events[k]);
	fprintf(f, "# HELP paddock_process_verdicts_total Finished jobs by the process level of the verdict.\n"
		   "# TYPE paddock_process_verdicts_total counter\n");
	for (int v = 0; v < 3; v++)
		fprintf(f, "paddock_process_verdicts_total{process=\"%s\"} %llu\n",
			pd_process_status_name((pd_process_status)v), (unsigned long long)m->process[v]);
	pd_detect_render(m->detect, f);
	put_hist(f, "paddock_queue_seconds", "Time a job waited for a worker.", &m->queue);
	put_hist(f, "paddock_setup_seconds", "Time to get a sandbox ready and place files.", &m->setup);
	put_hist(f, "paddock_exec_seconds", "Time the program (and its compile) ran.", &m->exec);
	fprintf(f, "# HELP paddock_http_responses_total HTTP responses by class.\n"
		   "# TYPE paddock_http_responses_total counter\n");
	for (int c = 1; c < 6; c++)
		fprintf(f, "paddock_http_responses_total{code=\"%dxx\"} %llu\n", c, (unsigned long long)m->http[c]);
	pthread_mutex_unlock(&m->mu);
	if (extra)
		fputs(extra, f);
	fclose(f);
	return out;
}
