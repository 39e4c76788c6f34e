/* The operator metrics: what the work costs and how well the pools are used, per template.
 *
 * - paddock_cpu_seconds_total{template,usable} and paddock_memory_byte_seconds_total{template,usable}:
 *   the CPU time of each finished job's steps (compile and run: user+sys of the sandbox's cgroup
 *   during them) and their memory as peak bytes x wall seconds of each step; usable is the
 *   job's record's "usable" (server/verdict.c). A judge job's are its judged record's: the CPU of
 *   its compile, every test and every checker or interactor run, its candidate runs' memory, and
 *   the verdict's usable (judge/jobs.c fills them in the job).
 * - paddock_samples_total{template} and paddock_usable_samples_total{template}: finished jobs, and
 *   those whose record says usable. The cost per usable sample is then one division:
 *   sum(rate(paddock_cpu_seconds_total[1h])) / sum(rate(paddock_usable_samples_total[1h])).
 * - paddock_sandbox_lifetime_seconds{template}: a histogram of how long each destroyed sandbox
 *   lived (creation to destruction; a reset sandbox lives on across its uses), kept by the pools.
 * - paddock_pool_utilisation{template}: the share of the pool's live sandboxes in use now.
 *
 * Only jobs (the run APIs and `paddock run`) are counted here; session execs are not jobs. */
#define _GNU_SOURCE
#include "server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* templates a daemon serves are few (its templates file); a job naming one past this is counted
 * under the last slot's name rather than growing without bound on clients' input (a job's
 * template is a request field, checked against the pools only when it runs) */
#define OPS_TEMPLATES 64

typedef struct tpl_cost {
	char name[64];
	double cpu_s[2], mem_bs[2]; /* [usable] */
	uint64_t samples, usable;
} tpl_cost;

struct pd_ops {
	pthread_mutex_t mu;
	tpl_cost t[OPS_TEMPLATES];
	size_t n;
};

pd_ops *pd_ops_new(void)
{
	pd_ops *o = calloc(1, sizeof *o);
	if (o)
		pthread_mutex_init(&o->mu, NULL);
	return o;
}

void pd_ops_free(pd_ops *o)
{
	if (!o)
		return;
	pthread_mutex_destroy(&o->mu);
	free(o);
}

/* The slot of a template (made if new); lock held. */
static tpl_cost *slot_locked(pd_ops *o, const char *name)
{
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->t[i].name, name))
			return &o->t[i];
	if (o->n == OPS_TEMPLATES)
		return &o->t[OPS_TEMPLATES - 1];
	tpl_cost *c = &o->t[o->n++];
	snprintf(c->name, sizeof c->name, "%s", name);
	return c;
}

void pd_ops_job(pd_ops *o, const pd_job *j)
{
	if (!o)
		return;
	pd_job_verdict_t v;
	pd_job_verdict(j, &v);
	double cpu = 0, mem = 0;
	const pd_result *steps[2] = {j->compiled ? &j->compile_r : NULL, j->ran ? &j->run_r : NULL};
	for (int i = 0; i < 2; i++)
		if (steps[i]) {
			cpu += (double)steps[i]->cpu_ms / 1000.0;
			mem += (double)steps[i]->memory_peak_bytes * ((double)steps[i]->wall_ms / 1000.0);
		}
	if (j->execute) {
		/* a judge job runs no steps of its own and its job verdict is never judged: its judged
		 * record's usable, and the CPU of its compile, tests and checkers (judge/jobs.c) */
		v.usable = j->work_usable;
		cpu = (double)j->work_cpu_ms / 1000.0;
		mem = j->work_mem_byte_s;
	}
	pthread_mutex_lock(&o->mu);
	tpl_cost *c = slot_locked(o, j->template_name[0] ? j->template_name : "none");
	c->cpu_s[v.usable] += cpu;
	c->mem_bs[v.usable] += mem;
	c->samples++;
	c->usable += v.usable;
	pthread_mutex_unlock(&o->mu);
}

/* A label value as Prometheus text wants it: backslash, quote and newline escaped. */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
}

char *pd_ops_render(pd_ops *o, const pd_pool_stats *st, size_t n)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	if (o) {
		pthread_mutex_lock(&o->mu);
		/* every pool's template has its series from the start (at zero), so that a rate()
		 * over them is defined before the first job */
		for (size_t i = 0; st && i < n; i++)
			slot_locked(o, st[i].template_name);
		static const char *const fam[][3] = {
			{"cpu_seconds_total", "counter", "CPU time of finished jobs' compile and run steps, by template and by whether the record is usable"},
			{"memory_byte_seconds_total", "counter", "Memory of finished jobs' steps as peak bytes times wall seconds, by template and usable"},
			{"samples_total", "counter", "Finished jobs, by template"},
			{"usable_samples_total", "counter", "Finished jobs whose record says usable (every verdict level passed), by template"}};
		for (size_t k = 0; k < 4; k++) {
			fprintf(f, "# HELP paddock_%s %s.\n# TYPE paddock_%s %s\n", fam[k][0], fam[k][2], fam[k][0],
				fam[k][1]);
			for (size_t i = 0; i < o->n; i++) {
				const tpl_cost *c = &o->t[i];
				for (int u = 0; u < (k < 2 ? 2 : 1); u++) {
					fprintf(f, "paddock_%s{template=\"", fam[k][0]);
					put_label(f, c->name);
					if (k < 2)
						fprintf(f, "\",usable=\"%s\"} %.6f\n", u ? "true" : "false",
							k == 0 ? c->cpu_s[u] : c->mem_bs[u]);
					else
						fprintf(f, "\"} %llu\n",
							(unsigned long long)(k == 2 ? c->samples : c->usable));
				}
			}
		}
		pthread_mutex_unlock(&o->mu);
	}
	fprintf(f, "# HELP paddock_sandbox_lifetime_seconds How long destroyed sandboxes lived, per template.\n"
		   "# TYPE paddock_sandbox_lifetime_seconds histogram\n");
	for (size_t i = 0; st && i < n; i++) {
		uint64_t cum = 0;
		for (size_t b = 0; b <= PD_LIFETIME_BUCKETS; b++) {
			cum += st[i].lifetime_bucket[b];
			fputs("paddock_sandbox_lifetime_seconds_bucket{template=\"", f);
			put_label(f, st[i].template_name);
			if (b < PD_LIFETIME_BUCKETS)
				fprintf(f, "\",le=\"%g\"} %llu\n", pd_lifetime_bounds_s[b], (unsigned long long)cum);
			else
				fprintf(f, "\",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
		}
		fputs("paddock_sandbox_lifetime_seconds_sum{template=\"", f);
		put_label(f, st[i].template_name);
		fprintf(f, "\"} %.6f\npaddock_sandbox_lifetime_seconds_count{template=\"", st[i].lifetime_sum_s);
		put_label(f, st[i].template_name);
		fprintf(f, "\"} %llu\n", (unsigned long long)st[i].lifetime_count);
	}
	fprintf(f, "# HELP paddock_pool_utilisation Share of the pool's live sandboxes (ready or in use) in use now, per template.\n"
		   "# TYPE paddock_pool_utilisation gauge\n");
	for (size_t i = 0; st && i < n; i++) {
		uint32_t live = st[i].ready + st[i].in_use;
		fputs("paddock_pool_utilisation{template=\"", f);
		put_label(f, st[i].template_name);
		fprintf(f, "\"} %.4f\n", live ? (double)st[i].in_use / live : 0.0);
	}
	fclose(f);
	return out;
}
