/* The bundled problems and submissions (examples/make-problems.py): every problem loads and
 * prepares (its checker or interactor builds), and every submission in examples/submissions.jsonl
 * gets the output status and failure class it expects: correct, wrong, partial, slow, memory-hungry,
 * crashing, non-compiling submissions and the reward hacks (those the audit catches: policy_violation).
 * Judged on two threads, as a daemon would, under the default audit as paddock run judges them. */
#define _GNU_SOURCE
#include "judge/judge.h"
#include "tap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pd_judge *judge;
static pd_problem_set set;
static json_t *lines[256];
static size_t nlines;
static char verdicts[256][400];
static bool good[256];
static size_t next_line;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pd_audit_policy *dflt_audit; /* the default audit ("audit": true) */

static void judge_line(size_t i)
{
	json_t *s = lines[i];
	const char *pid = json_string_value(json_object_get(s, "problem_id"));
	const char *lang = json_string_value(json_object_get(s, "language"));
	json_t *code = json_object_get(s, "code"), *expect = json_object_get(s, "expect");
	const char *want_out = json_string_value(json_object_get(expect, "output"));
	const char *want_fc = json_string_value(json_object_get(expect, "failure_class"));
	pd_problem *p = pd_problems_find(&set, pid, NULL);
	pd_judged d;
	memset(&d, 0, sizeof d);
	snprintf(d.sample_id, sizeof d.sample_id, "%s", json_string_value(json_object_get(s, "sample_id")));
	pd_err e = {0};
	pd_judge_opts o;
	pd_judge_opts_default(&o);
	/* as paddock run and POST /v1/judge judge a line that says nothing of the audit */
	o.audit = dflt_audit;
	o.audit_default = true;
	if (!p || pd_judge_submit(judge, p, lang, json_string_value(code), json_string_length(code), &o, &d, &e) < 0) {
		snprintf(verdicts[i], sizeof verdicts[i], "%s: not judged: %s", d.sample_id, p ? e.msg : "no problem");
		return;
	}
	const char *got_out = pd_level_name(d.v.output), *got_fc = pd_failure_name(d.v.failure);
	good[i] = !strcmp(got_out, want_out) && !strcmp(got_fc, want_fc);
	char tests[120] = "";
	size_t k = 0;
	for (size_t t = 0; t < d.ntests && k + 4 < sizeof tests; t++)
		k += (size_t)snprintf(tests + k, sizeof tests - k, "%s ", pd_tstatus_name(d.tests[t].status));
	snprintf(verdicts[i], sizeof verdicts[i], "%s (%s, %s): %s %.2f %s [%s] reward %s%.2f (want %s %s)%s%s",
		 d.sample_id, lang, json_string_value(json_object_get(s, "note")), got_out, d.v.score, got_fc, tests,
		 d.v.has_reward ? "" : "null ", d.v.reward, want_out, want_fc, d.error[0] ? " error: " : "", d.error);
	pd_judged_free(&d);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		size_t i = next_line++;
		pthread_mutex_unlock(&mu);
		if (i >= nlines)
			return NULL;
		judge_line(i);
	}
}

int main(void)
{
	const char *root = getenv("PADDOCK_ROOT") ? getenv("PADDOCK_ROOT") : ".";
	char path[1024];
	snprintf(path, sizeof path, "%s/examples/submissions.jsonl", root);
	FILE *f = fopen(path, "r");
	if (!f) {
		printf("1..1\nnot ok 1 - %s\n", path);
		return 1;
	}
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0 && nlines < 256) {
		json_error_t je;
		lines[nlines] = json_loads(line, 0, &je);
		if (lines[nlines])
			nlines++;
	}
	free(line);
	fclose(f);
	plan((int)nlines + 5);
	ok(nlines >= 60, "%zu submissions", nlines);
	pd_err e = {0};
	snprintf(path, sizeof path, "%s/examples/problems", root);
	ok(pd_problems_load_dir(path, &set, &e) == 0 && set.n >= 30, "%zu problems load: %s", set.n, e.msg);
	dflt_audit = pd_audit_policy_parse("true", 4, "audit", "/work", &e);
	pd_ctx *ctx = pd_ctx_new(NULL, &e);
	pd_template *t;
	size_t n;
	pd_templates_default(&t, &n, &e);
	for (size_t i = 0; i < n; i++)
		pd_template_check(ctx, &t[i]);
	pd_pools *pools = ctx ? pd_pools_new(ctx, t, n, NULL, &e) : NULL;
	pd_templates_free(t, n);
	judge = pools ? pd_judge_new(pools, NULL, &e) : NULL;
	if (!ok(judge != NULL, "a judge over pools: %s", judge ? "ok" : e.msg))
		return 1;
	bool prepared = true;
	for (size_t i = 0; i < set.n; i++)
		if (pd_judge_prepare(judge, set.p[i], &e) < 0) {
			printf("# %s\n", e.msg);
			prepared = false;
		}
	ok(prepared, "every checker and interactor builds");
	uint64_t t0 = pd_now_us();
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (size_t i = 0; i < nlines; i++)
		ok(good[i], "%s", verdicts[i]);
	pd_judge_stats st;
	pd_judge_stats_get(judge, &st);
	printf("# judged %llu in %.1f s, %llu judge errors, checker CPU %llu ms\n", (unsigned long long)st.judged,
	       (pd_now_us() - t0) / 1e6, (unsigned long long)st.judge_errors, (unsigned long long)st.checker_ms);
	is_int(st.judge_errors, 0, "no judge errors on the bundled problems");
	for (size_t i = 0; i < nlines; i++)
		json_decref(lines[i]);
	pd_judge_free(judge);
	pd_audit_policy_free(dflt_audit);
	pd_pools_free(pools);
	pd_problems_free(&set);
	pd_ctx_free(ctx);
	return done();
}
