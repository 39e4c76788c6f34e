/* The service-time estimate of the scheduler: per-template service times in two parts, bounded by
 * each job's own limits, the share of jobs that ran to their limit, and the correction learnt
 * from the estimate's own errors (estimate.h says why). */
#include "estimate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHT 0.2    /* of the newest job in a template's means */
#define MIN_ERRORS 8  /* prediction errors before the correction counts */
#define FLOOR_US 50000.0 /* shorter times are compared as this: a 5 ms job taking 20 ms says
			  * nothing about a queue of 0.5 s ones */

void pd_est_init(pd_est *e, unsigned cpus)
{
	memset(e, 0, sizeof *e);
	e->cpus = cpus ? cpus : 1;
	e->factor = 1.0;
}

/* How much longer the CPU part takes when conc jobs share the CPUs. */
static double stretch(const pd_est *e, double conc)
{
	double k = conc / e->cpus;
	return k > 1 ? k : 1;
}

static const pd_est_tmpl *find(const pd_est *e, const char *key)
{
	for (size_t i = 0; i < e->nt; i++)
		if (!strcmp(e->t[i].name, key))
			return &e->t[i];
	/* past the table: the shared entry, if there is one */
	return e->nt > PD_EST_TEMPLATES ? &e->t[PD_EST_TEMPLATES] : NULL;
}

static pd_est_tmpl *get(pd_est *e, const char *key)
{
	pd_est_tmpl *t = (pd_est_tmpl *)find(e, key);
	if (t)
		return t;
	size_t i = e->nt < PD_EST_TEMPLATES ? e->nt : PD_EST_TEMPLATES;
	t = &e->t[i];
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", i == PD_EST_TEMPLATES ? "" : key);
	e->nt = i + 1;
	return t;
}

uint64_t pd_est_bound(const pd_est *e, const char *key, uint64_t limit_us)
{
	if (limit_us == PD_EST_UNBOUNDED)
		return PD_EST_UNBOUNDED;
	const pd_est_tmpl *t = find(e, key);
	return limit_us + (t && t->nlimit ? (uint64_t)t->over_us : PD_EST_OVER_PRIOR_US);
}

uint64_t pd_est_normal(const pd_est *e, const char *key, double conc)
{
	const pd_est_tmpl *t = find(e, key);
	/* unknown: as if all CPU */
	return (uint64_t)(t && t->n ? t->io_us + t->cpu_us * stretch(e, conc) : PD_EST_PRIOR_US * stretch(e, conc));
}

uint64_t pd_est_service(const pd_est *e, const char *key, double conc, uint64_t limit_us)
{
	const pd_est_tmpl *t = find(e, key);
	double normal = (double)pd_est_normal(e, key, conc) * e->factor;
	uint64_t bound_us = pd_est_bound(e, key, limit_us);
	if (bound_us == PD_EST_UNBOUNDED)
		return (uint64_t)normal;
	double bound = (double)bound_us;
	if (normal > bound)
		normal = bound;
	double share = t ? t->limit_share : 0;
	double svc = share * bound + (1 - share) * normal;
	return (uint64_t)(svc < bound ? svc : bound);
}

bool pd_est_known(const pd_est *e, const char *key)
{
	const pd_est_tmpl *t = find(e, key);
	return t && (t->n || t->nlimit);
}

void pd_est_learn(pd_est *e, const char *key, uint64_t took_us, uint64_t cpu_us, double conc, bool at_limit,
		  uint64_t limit_us)
{
	pd_est_tmpl *t = get(e, key);
	/* the share moves towards 1 for a job that ran to its limit, towards 0 for one that did not:
	 * five normal jobs after a burst of time-outs bring it from 1 to a third */
	t->limit_share += WEIGHT * ((at_limit ? 1.0 : 0.0) - t->limit_share);
	if (at_limit) {
		if (limit_us != PD_EST_UNBOUNDED) {
			/* the allowance follows the largest overrun quickly and forgets it slowly: a bound
			 * too tight makes every wait behind it look shorter than it is */
			double over = took_us > limit_us ? (double)(took_us - limit_us) : 0;
			if (!t->nlimit || over > t->over_us)
				t->over_us = t->nlimit ? t->over_us + 0.5 * (over - t->over_us) : over;
			else
				t->over_us += 0.05 * (over - t->over_us);
		}
		t->nlimit++;
		return; /* its time is its limit's: nothing about the template's own */
	}
	double k = stretch(e, conc < 1 ? 1 : conc), took = (double)took_us;
	/* the wall time its CPU work took while shared (at most all of it: a job of many threads
	 * can use more CPU time than wall time), and that work on a CPU of its own */
	double cpu_wall = cpu_us == PD_EST_CPU_UNKNOWN ? took : (double)cpu_us * k;
	if (cpu_wall > took)
		cpu_wall = took;
	double io = took - cpu_wall, cpu = cpu_wall / k;
	if (!t->n) {
		t->io_us = io;
		t->cpu_us = cpu;
	} else {
		t->io_us += WEIGHT * (io - t->io_us);
		t->cpu_us += WEIGHT * (cpu - t->cpu_us);
	}
	t->n++;
}

void pd_est_outcome(pd_est *e, uint64_t predicted_us, uint64_t actual_us, uint64_t now)
{
	double p = predicted_us > FLOOR_US ? (double)predicted_us : FLOOR_US;
	double a = actual_us > FLOOR_US ? (double)actual_us : FLOOR_US;
	e->ratio[e->ratio_at] = a / p;
	e->ratio_t[e->ratio_at] = now;
	e->ratio_at = (e->ratio_at + 1) % PD_EST_WINDOW;
	if (e->nratio < PD_EST_WINDOW)
		e->nratio++;
	e->factor_at = 0; /* pd_est_refresh looks again */
}

void pd_est_refresh(pd_est *e, uint64_t now)
{
	if (e->factor_at && now - e->factor_at < 1000000)
		return;
	e->factor = pd_est_factor(e, now);
	e->factor_at = now ? now : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double pd_est_factor(const pd_est *e, uint64_t now)
{
	double s[PD_EST_WINDOW];
	size_t n = 0;
	for (size_t i = 0; i < e->nratio; i++)
		if (now - e->ratio_t[i] <= PD_EST_WINDOW_US || e->ratio_t[i] > now)
			s[n++] = e->ratio[i];
	if (n < MIN_ERRORS)
		return 1.0;
	/* the 99th percentile, nearest rank: of 128, the second largest */
	qsort(s, n, sizeof *s, cmp_double);
	size_t rank = (n * 99 + 99) / 100;
	double f = s[rank - 1];
	/* never below 1: an estimate that was pessimistic lately is kept as it is (a queue of jobs that
	 * finished early says little about the next flood), and never absurdly high */
	return f < 1 ? 1 : f > PD_EST_MAX_FACTOR ? PD_EST_MAX_FACTOR : f;
}
