/* paddock run's summary of its judge lines (the main job's grading run, issue 21): a table of
 * per-problem verdicts (each submission as one letter, in line order), the reward distribution, the
 * usable rate and the process levels, the hacks the audit caught by kind, the judged failure
 * classes, what the cache answered, and which lines' verdicts differed from what the line expects. */
#define _GNU_SOURCE
#include "cli.h"
#include "judge/judge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jline {
	int line;
	char letter;
	bool hit;
} jline;

typedef struct jproblem {
	char id[128];
	jline *lines;
	size_t n, cap;
	double reward_sum;
	uint64_t rewarded, usable, hits, expected, expected_ok;
} jproblem;

typedef struct jclass {
	char name[32];
	uint64_t n;
} jclass;

struct judged_sum {
	jproblem *p;
	size_t np;
	jclass fc[32];
	size_t nfc;
	uint64_t judged, outputs[5], reward_null, reward_neg, reward_zero, reward_mid, reward_one, usable, hits;
	uint64_t expected, expected_ok;
	uint64_t process[3]; /* pass, fail, not_audited (the audit's level) */
	jclass kinds[16];    /* the hacks caught: attempts whose process level failed, by kind */
	size_t nkinds;
	double reward_sum;
	char mismatches[2048]; /* "line N (problem: got X, expected Y)" ... */
	size_t nmis;
};

judged_sum *judged_sum_new(void)
{
	return calloc(1, sizeof(judged_sum));
}

void judged_sum_free(judged_sum *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->np; i++)
		free(s->p[i].lines);
	free(s->p);
	free(s);
}

static jproblem *problem_of(judged_sum *s, const char *id)
{
	for (size_t i = 0; i < s->np; i++)
		if (!strcmp(s->p[i].id, id))
			return &s->p[i];
	jproblem *np = realloc(s->p, (s->np + 1) * sizeof *np);
	if (!np)
		return NULL;
	s->p = np;
	jproblem *p = &s->p[s->np++];
	memset(p, 0, sizeof *p);
	snprintf(p->id, sizeof p->id, "%s", id);
	return p;
}

/* One submission as a letter: P pass, p partial, F wrong answer (or crash), C compile error,
 * T time, M memory, O output limit, X no verdict (an infrastructure or judge failure). */
static char letter_of(const char *out, const char *fc)
{
	if (out && !strcmp(out, "pass"))
		return 'P';
	if (out && !strcmp(out, "partial"))
		return 'p';
	if (fc && !strcmp(fc, "compile_error"))
		return 'C';
	if (fc && !strcmp(fc, "exec_timeout"))
		return 'T';
	if (fc && !strcmp(fc, "oom"))
		return 'M';
	if (fc && !strcmp(fc, "output_limit"))
		return 'O';
	if (out && !strcmp(out, "fail"))
		return 'F';
	return 'X';
}

void judged_sum_add(judged_sum *s, json_t *rec, json_t *expect, int line)
{
	if (!s)
		return;
	s->judged++;
	const char *out = json_string_value(json_object_get(json_object_get(json_object_get(rec, "verdict"), "output"), "status"));
	const char *fc = json_string_value(json_object_get(rec, "failure_class"));
	const char *pid = json_string_value(json_object_get(rec, "problem_id"));
	for (int l = 0; out && l < 5; l++)
		if (!strcmp(out, pd_level_name((pd_level)l)))
			s->outputs[l]++;
	json_t *rw = json_object_get(rec, "reward");
	double r = json_number_value(rw);
	if (!json_is_number(rw))
		s->reward_null++;
	else if (r < 0)
		s->reward_neg++;
	else if (r == 0)
		s->reward_zero++;
	else if (r < 1)
		s->reward_mid++;
	else
		s->reward_one++;
	s->reward_sum += json_is_number(rw) ? r : 0;
	bool usable = json_is_true(json_object_get(rec, "usable"));
	s->usable += usable;
	json_t *proc = json_object_get(json_object_get(rec, "verdict"), "process");
	const char *ps = json_string_value(json_object_get(proc, "status"));
	s->process[ps && !strcmp(ps, "pass") ? 0 : ps && !strcmp(ps, "fail") ? 1 : 2]++;
	size_t ki;
	json_t *kind;
	json_array_foreach(json_object_get(proc, "failed"), ki, kind) {
		const char *kn = json_string_value(kind);
		size_t k = 0;
		while (kn && k < s->nkinds && strcmp(s->kinds[k].name, kn))
			k++;
		if (kn && k == s->nkinds && k < sizeof s->kinds / sizeof s->kinds[0])
			snprintf(s->kinds[s->nkinds++].name, sizeof s->kinds[0].name, "%s", kn);
		if (kn && k < s->nkinds)
			s->kinds[k].n++;
	}
	const char *cache = json_string_value(json_object_get(rec, "cache"));
	bool hit = cache && !strcmp(cache, "hit");
	s->hits += hit;
	const char *fcn = fc ? fc : "none";
	size_t k = 0;
	while (k < s->nfc && strcmp(s->fc[k].name, fcn))
		k++;
	if (k == s->nfc && k < sizeof s->fc / sizeof s->fc[0])
		snprintf(s->fc[s->nfc++].name, sizeof s->fc[0].name, "%s", fcn);
	if (k < s->nfc)
		s->fc[k].n++;
	bool matched = true;
	if (json_is_object(expect)) {
		const char *wo = json_string_value(json_object_get(expect, "output"));
		const char *wf = json_string_value(json_object_get(expect, "failure_class"));
		matched = (!wo || (out && !strcmp(wo, out))) && (!wf || (fc && !strcmp(wf, fc)));
		s->expected++;
		s->expected_ok += matched;
		if (!matched) {
			size_t used = strlen(s->mismatches);
			if (used + 160 < sizeof s->mismatches)
				snprintf(s->mismatches + used, sizeof s->mismatches - used,
					 "    line %d (%s): got %s/%s, expected %s/%s\n", line, pid ? pid : "?",
					 out ? out : "?", fcn, wo ? wo : "any", wf ? wf : "any");
			s->nmis++;
		}
	}
	jproblem *p = problem_of(s, pid && pid[0] ? pid : "(inline)");
	if (!p)
		return;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		jline *nl = realloc(p->lines, cap * sizeof *nl);
		if (!nl)
			return;
		p->lines = nl;
		p->cap = cap;
	}
	p->lines[p->n++] = (jline){line, letter_of(out, fc), hit};
	if (json_is_number(rw)) {
		p->reward_sum += r;
		p->rewarded++;
	}
	p->usable += usable;
	p->hits += hit;
	if (json_is_object(expect)) {
		p->expected++;
		p->expected_ok += matched;
	}
}

static int by_line(const void *a, const void *b)
{
	return ((const jline *)a)->line - ((const jline *)b)->line;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const jproblem *)a)->id, ((const jproblem *)b)->id);
}

void judged_sum_print(judged_sum *s, FILE *f, uint64_t cpu_ms_saved, uint64_t judge_errors)
{
	if (!s || !s->judged)
		return;
	qsort(s->p, s->np, sizeof *s->p, by_id);
	fprintf(f, "\n  per-problem verdicts (one letter per submission, in line order: P pass, p partial, F fail,\n"
		   "  C compile error, T time, M memory, O output limit, X no verdict; * answered by the cache):\n");
	fprintf(f, "  %-16s %3s  %-24s %7s %7s %7s\n", "problem", "n", "verdicts", "reward", "cached", "expect");
	for (size_t i = 0; i < s->np; i++) {
		jproblem *p = &s->p[i];
		qsort(p->lines, p->n, sizeof *p->lines, by_line);
		char v[256];
		size_t k = 0;
		for (size_t j = 0; j < p->n && k + 3 < sizeof v; j++) {
			v[k++] = p->lines[j].letter;
			if (p->lines[j].hit)
				v[k++] = '*';
		}
		v[k] = 0;
		char reward[16], expect[24];
		if (p->rewarded)
			snprintf(reward, sizeof reward, "%.2f", p->reward_sum / (double)p->rewarded);
		else
			snprintf(reward, sizeof reward, "null");
		if (p->expected)
			snprintf(expect, sizeof expect, "%llu/%llu", (unsigned long long)p->expected_ok,
				 (unsigned long long)p->expected);
		else
			snprintf(expect, sizeof expect, "-");
		fprintf(f, "  %-16.16s %3zu  %-24s %7s %7llu %7s\n", p->id, p->n, v, reward, (unsigned long long)p->hits,
			expect);
	}
	fprintf(f, "\n  judged %llu: output", (unsigned long long)s->judged);
	for (int l = 0; l < 4; l++)
		fprintf(f, " %s %llu", pd_level_name((pd_level)l), (unsigned long long)s->outputs[l]);
	uint64_t with = s->judged - s->reward_null;
	fprintf(f, "\n  reward: mean %.3f over %llu; <0 %llu, 0 %llu, (0,1) %llu, 1 %llu, null (infrastructure) %llu\n",
		with ? s->reward_sum / (double)with : 0.0, (unsigned long long)with, (unsigned long long)s->reward_neg,
		(unsigned long long)s->reward_zero, (unsigned long long)s->reward_mid, (unsigned long long)s->reward_one,
		(unsigned long long)s->reward_null);
	fprintf(f, "  usable %llu of %llu (%.0f%%); process level (the audit, on unless a line says \"audit\": false): "
		   "pass %llu, fail %llu, not_audited %llu\n",
		(unsigned long long)s->usable, (unsigned long long)s->judged, 100.0 * (double)s->usable / (double)s->judged,
		(unsigned long long)s->process[0], (unsigned long long)s->process[1], (unsigned long long)s->process[2]);
	fprintf(f, "  hacks caught by the audit: %llu", (unsigned long long)s->process[1]);
	for (size_t k = 0; k < s->nkinds; k++)
		fprintf(f, "%s%s %llu", k ? ", " : " (", s->kinds[k].name, (unsigned long long)s->kinds[k].n);
	fprintf(f, "%s\n", s->nkinds ? ")" : "");
	fprintf(f, "  judged failure classes:");
	for (size_t k = 0; k < s->nfc; k++)
		fprintf(f, "%s %s %llu", k ? "," : "", s->fc[k].name, (unsigned long long)s->fc[k].n);
	fprintf(f, "\n  cache: %llu hits (", (unsigned long long)s->hits);
	int shown = 0;
	for (size_t i = 0; i < s->np; i++)
		if (s->p[i].hits)
			fprintf(f, "%s%s %llu", shown++ ? ", " : "", s->p[i].id, (unsigned long long)s->p[i].hits);
	fprintf(f, "%s), CPU saved %llu ms; judge errors %llu\n", shown ? "" : "none", (unsigned long long)cpu_ms_saved,
		(unsigned long long)judge_errors);
	if (s->expected)
		fprintf(f, "  expected verdicts: %llu of %llu lines matched\n%s", (unsigned long long)s->expected_ok,
			(unsigned long long)s->expected, s->mismatches);
}
