/* Cheat-detection metrics (issue 22): per (template, problem), the attempts whose process level was
 * decided by an audit and, by kind, those it failed:
 *
 *   paddock_audited_attempts_total{template,problem}
 *   paddock_audit_detections_total{kind,template,problem}
 *
 * so that the detection rate of a kind is one division in PromQL. Runs and judged submissions both
 * count (a judged job's process level is its candidate runs'); a job with no problem_id counts
 * under problem="none".
 *
 * Problems are many and their ids are request fields (an inline problem names its own), so the
 * labels are bounded: the first DETECT_PROBLEMS distinct problem ids get their own label, every
 * later one counts under problem="other", and templates past DETECT_TEMPLATES under the last
 * template's slot. A series never changes its label once made, so the counters stay monotonic. */
#define _GNU_SOURCE
#include "server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DETECT_PROBLEMS 256
#define DETECT_TEMPLATES 64
#define DETECT_PAIRS 1024 /* (template, problem) pairs kept; later pairs fold into (template, other) */

typedef struct pair {
	unsigned tpl, prob; /* indices into names */
	uint64_t audited, kinds[PD_AK_N];
} pair;

struct pd_detect {
	pthread_mutex_t mu;
	char tpls[DETECT_TEMPLATES][64];
	size_t ntpls;
	char probs[DETECT_PROBLEMS + 2][128]; /* + "none" and "other" */
	size_t nprobs;
	pair *pairs;
	size_t npairs;
};

enum { PROB_NONE = 0, PROB_OTHER = 1 };

pd_detect *pd_detect_new(void)
{
	pd_detect *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->pairs = calloc(DETECT_PAIRS, sizeof *d->pairs);
	if (!d->pairs) {
		free(d);
		return NULL;
	}
	pthread_mutex_init(&d->mu, NULL);
	snprintf(d->probs[PROB_NONE], sizeof d->probs[0], "none");
	snprintf(d->probs[PROB_OTHER], sizeof d->probs[0], "other");
	d->nprobs = 2;
	return d;
}

void pd_detect_free(pd_detect *d)
{
	if (!d)
		return;
	pthread_mutex_destroy(&d->mu);
	free(d->pairs);
	free(d);
}

/* Lock held. */
static unsigned tpl_index(pd_detect *d, const char *name)
{
	for (size_t i = 0; i < d->ntpls; i++)
		if (!strcmp(d->tpls[i], name))
			return (unsigned)i;
	if (d->ntpls < DETECT_TEMPLATES)
		snprintf(d->tpls[d->ntpls++], sizeof d->tpls[0], "%s", name);
	return (unsigned)(d->ntpls - 1);
}

/* Lock held. A linear search: at most a few hundred names, once per finished job. */
static unsigned prob_index(pd_detect *d, const char *id)
{
	if (!id[0])
		return PROB_NONE;
	for (size_t i = 2; i < d->nprobs; i++)
		if (!strcmp(d->probs[i], id))
			return (unsigned)i;
	/* "none" and "other" named by a client would merge with ours: they are label values here */
	if (d->nprobs >= DETECT_PROBLEMS + 2 || !strcmp(id, "none") || !strcmp(id, "other"))
		return PROB_OTHER;
	snprintf(d->probs[d->nprobs++], sizeof d->probs[0], "%s", id);
	return (unsigned)(d->nprobs - 1);
}

/* Lock held. The last DETECT_TEMPLATES slots are kept for the templates' "other" pairs, so that
 * a full table still has one for every template. */
static pair *pair_get(pd_detect *d, unsigned tpl, unsigned prob)
{
	for (size_t i = 0; i < d->npairs; i++)
		if (d->pairs[i].tpl == tpl && d->pairs[i].prob == prob)
			return &d->pairs[i];
	if (prob != PROB_OTHER && d->npairs >= DETECT_PAIRS - DETECT_TEMPLATES)
		return pair_get(d, tpl, PROB_OTHER);
	pair *p = &d->pairs[d->npairs++];
	p->tpl = tpl;
	p->prob = prob;
	return p;
}

void pd_detect_job(pd_detect *d, const pd_job *j)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	pair *p = pair_get(d, tpl_index(d, j->template_name[0] ? j->template_name : "none"), prob_index(d, j->problem_id));
	if (j->verdict.status != PD_PROCESS_NOT_AUDITED) {
		p->audited++;
		for (int k = 0; j->verdict.status == PD_PROCESS_FAIL && k < PD_AK_N; k++)
			if (j->verdict.failed_kinds & (1u << k))
				p->kinds[k]++;
	}
	pthread_mutex_unlock(&d->mu);
}

/* Label values are ids (A-Z a-z 0-9 and a few marks) in practice; a quote, a backslash or a line
 * break would break the exposition format, so they are escaped as it says. */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

void pd_detect_render(pd_detect *d, FILE *f)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	fputs("# HELP paddock_audited_attempts_total Attempts whose process level an audit decided, by template and problem.\n"
	      "# TYPE paddock_audited_attempts_total counter\n",
	      f);
	for (size_t i = 0; i < d->npairs; i++) {
		fputs("paddock_audited_attempts_total{template=\"", f);
		put_label(f, d->tpls[d->pairs[i].tpl]);
		fputs("\",problem=\"", f);
		put_label(f, d->probs[d->pairs[i].prob]);
		fprintf(f, "\"} %llu\n", (unsigned long long)d->pairs[i].audited);
	}
	fputs("# HELP paddock_audit_detections_total Audited attempts whose process level failed, by the kind that failed it, template and problem.\n"
	      "# TYPE paddock_audit_detections_total counter\n",
	      f);
	for (size_t i = 0; i < d->npairs; i++)
		for (int k = 0; k < PD_AK_N; k++) {
			fprintf(f, "paddock_audit_detections_total{kind=\"%s\",template=\"", pd_audit_kind_name((pd_audit_kind)k));
			put_label(f, d->tpls[d->pairs[i].tpl]);
			fputs("\",problem=\"", f);
			put_label(f, d->probs[d->pairs[i].prob]);
			fprintf(f, "\"} %llu\n", (unsigned long long)d->pairs[i].kinds[k]);
		}
	pthread_mutex_unlock(&d->mu);
}
