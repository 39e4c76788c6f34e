/* The finish-time estimate of the scheduler: per-template service times in two parts, and the
 * correction learnt from the estimate's own errors (estimate.h says why). */
#include "estimate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHT 0.2    /* of the newest job in a template's means */
#define MIN_ERRORS 8  /* prediction errors before the correction counts */
#define FLOOR_US 100000.0 /* shorter times are compared as this: a 5 ms job taking 20 ms says
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

static double service(const pd_est *e, const pd_est_tmpl *t, double conc)
{
	if (!t || !t->n)
		return PD_EST_PRIOR_US * stretch(e, conc); /* unknown: as if all CPU */
	return t->io_us + t->cpu_us * stretch(e, conc);
}

uint64_t pd_est_service(const pd_est *e, const char *key, double conc)
{
	return (uint64_t)service(e, find(e, key), conc);
}

bool pd_est_known(const pd_est *e, const char *key)
{
	const pd_est_tmpl *t = find(e, key);
	return t && t->n;
}

void pd_est_learn(pd_est *e, const char *key, uint64_t took_us, uint64_t cpu_us, double conc)
{
	pd_est_tmpl *t = get(e, key);
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

void pd_est_queue(pd_est *e, const char *key, int prio, int delta)
{
	if (prio < 0 || prio >= PD_EST_CLASSES)
		return;
	pd_est_tmpl *t = get(e, key);
	if (delta > 0)
		t->queued[prio]++;
	else if (t->queued[prio])
		t->queued[prio]--;
}

uint64_t pd_est_queued_work(const pd_est *e, int prio, double conc)
{
	double w = 0;
	for (size_t i = 0; i < e->nt; i++) {
		size_t n = 0;
		for (int p = 0; p <= prio && p < PD_EST_CLASSES; p++)
			n += e->t[i].queued[p];
		if (n)
			w += (double)n * service(e, &e->t[i], conc);
	}
	return (uint64_t)w;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void pd_est_outcome(pd_est *e, uint64_t predicted_us, uint64_t actual_us)
{
	double p = predicted_us > FLOOR_US ? (double)predicted_us : FLOOR_US;
	double a = actual_us > FLOOR_US ? (double)actual_us : FLOOR_US;
	e->ratio[e->ratio_at] = a / p;
	e->ratio_at = (e->ratio_at + 1) % PD_EST_WINDOW;
	if (e->nratio < PD_EST_WINDOW)
		e->nratio++;
	if (e->nratio < MIN_ERRORS) {
		e->factor = 1.0;
		return;
	}
	/* the 99th percentile, nearest rank: of the 128 newest, the second largest */
	double s[PD_EST_WINDOW];
	memcpy(s, e->ratio, e->nratio * sizeof *s);
	qsort(s, e->nratio, sizeof *s, cmp_double);
	size_t rank = (e->nratio * 99 + 99) / 100;
	double f = s[rank - 1];
	/* never below 1: an estimate that was pessimistic lately is kept as it is (a queue of
	 * jobs that finished early says little about the next flood), and never absurdly high */
	e->factor = f < 1 ? 1 : f > PD_EST_MAX_FACTOR ? PD_EST_MAX_FACTOR : f;
}
