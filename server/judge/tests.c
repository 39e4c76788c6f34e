/* A problem's tests, in the three forms problem.c accepts: the inline list ("tests"), the RL
 * pipelines' "in_outs" (stdin-style, or call-based arguments), and a package's tests/ directory
 * (NNN.in + NNN.ans, in name order). Each is checked here with the field or file in the error; the
 * totals are bounded so that a problem cannot fill the judge's memory. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEST_FILE_MAX (64u << 20)    /* one input or answer */
#define PROBLEM_MAX (256u << 20)     /* all of a problem's tests */
#define MAX_TESTS 10000

static int add_test(pd_problem *p, const char *name, const char *in, size_t inl, const char *ans, size_t ansl,
		    double weight, uint64_t *total, const char *where, pd_err *e)
{
	if (p->ntests >= MAX_TESTS)
		return pd_jfail_at(e, where, "tests: more than %d", MAX_TESTS);
	*total += inl + ansl;
	if (*total > PROBLEM_MAX)
		return pd_jfail_at(e, where, "tests: over %u MiB in all", PROBLEM_MAX >> 20);
	if (!(p->ntests & (p->ntests + 1)) || !p->tests) { /* grows at 0, 1, 3, 7...: capacity 2^k */
		size_t cap = p->ntests ? (p->ntests + 1) * 2 : 1;
		pd_jtest *nt = realloc(p->tests, cap * sizeof *nt);
		if (!nt)
			return pd_fail(e, ENOMEM, "%s: tests", where);
		p->tests = nt;
	}
	pd_jtest *t = &p->tests[p->ntests];
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->input = malloc(inl + 1);
	t->answer = malloc(ansl + 1);
	if (!t->input || !t->answer) {
		free(t->input);
		free(t->answer);
		return pd_fail(e, ENOMEM, "%s: tests", where);
	}
	memcpy(t->input, in, inl);
	t->input[inl] = 0;
	t->input_len = inl;
	memcpy(t->answer, ans, ansl);
	t->answer[ansl] = 0;
	t->answer_len = ansl;
	t->weight = weight;
	p->ntests++;
	return 0;
}

static int parse_weight(json_t *w, const char *where, double *out, pd_err *e)
{
	if (!w || json_is_null(w))
		return 0;
	if (!json_is_number(w) || !(json_number_value(w) > 0 && json_number_value(w) <= 1e6))
		return pd_jfail_at(e, where, "weight: must be a number above 0, at most 1e6");
	*out = json_number_value(w);
	return 0;
}

/* {"tests": [{"input", "output", "weight", "name"}]} */
int pd_jparse_tests(pd_problem *p, json_t *tests, const char *where, uint64_t *total, pd_err *e)
{
	if (!json_is_array(tests))
		return pd_jfail_at(e, where, "tests: must be a list of {\"input\", \"output\"}");
	size_t i;
	json_t *t;
	json_array_foreach(tests, i, t) {
		char w[600];
		snprintf(w, sizeof w, "%s: tests[%zu]", where, i);
		if (!json_is_object(t))
			return pd_jfail_at(e, w, "must be an object {\"input\", \"output\"}");
		static const char *const known[] = {"input", "output", "weight", "name", NULL};
		if (pd_junknown_fields(t, w, known, e) < 0)
			return -1;
		json_t *in = json_object_get(t, "input"), *out = json_object_get(t, "output");
		if (!in || !json_is_string(in))
			return pd_jfail_at(e, w, "input: required, a string");
		if (!out || !json_is_string(out))
			return pd_jfail_at(e, w, "output: required, a string (the expected answer)");
		double weight = 1;
		if (parse_weight(json_object_get(t, "weight"), w, &weight, e) < 0)
			return -1;
		char name[32];
		json_t *nm = json_object_get(t, "name");
		if (nm && (!json_is_string(nm) || json_string_length(nm) >= sizeof name || !json_string_length(nm)))
			return pd_jfail_at(e, w, "name: must be a string of 1 to %zu characters", sizeof name - 1);
		snprintf(name, sizeof name, "%s", nm ? json_string_value(nm) : "");
		if (!nm)
			snprintf(name, sizeof name, "%zu", i + 1);
		if (add_test(p, name, json_string_value(in), json_string_length(in), json_string_value(out),
			     json_string_length(out), weight, total, w, e) < 0)
			return -1;
	}
	return 0;
}

/* A call-based test's arguments: a JSON list, or (LiveCodeBench) a text of one JSON value per
 * line. Returns the compact JSON list as text (malloc'd). */
static char *call_args(json_t *in, const char *w, pd_err *e)
{
	json_t *args = NULL;
	if (json_is_array(in)) {
		args = json_incref(in);
	} else if (json_is_string(in)) {
		args = json_array();
		const char *s = json_string_value(in), *end = s + json_string_length(in);
		while (s < end) {
			const char *nl = memchr(s, '\n', (size_t)(end - s));
			size_t l = nl ? (size_t)(nl - s) : (size_t)(end - s);
			json_error_t je;
			bool blank = true;
			for (size_t k = 0; k < l && blank; k++)
				blank = s[k] == ' ' || s[k] == '\t' || s[k] == '\r';
			if (!blank) {
				json_t *v = json_loadb(s, l, JSON_DECODE_ANY, &je);
				if (!v) {
					json_decref(args);
					pd_jfail_at(e, w, "a call-based input line is not JSON: %s", je.text);
					return NULL;
				}
				json_array_append_new(args, v);
			}
			s += l + (nl ? 1 : 0);
		}
	} else {
		pd_jfail_at(e, w, "a call-based input must be a list of arguments or lines of JSON");
		return NULL;
	}
	char *txt = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(args);
	if (!txt)
		pd_fail(e, ENOMEM, "%s", w);
	return txt;
}

/* {"inputs": [...], "outputs": [...], "fn_name": "..."} (a JSON text of it is accepted too: verl
 * carries it as a string). */
int pd_jparse_in_outs(pd_problem *p, json_t *io, bool checker_given, const char *where, uint64_t *total,
			 pd_err *e)
{
	char w[600];
	snprintf(w, sizeof w, "%s: in_outs", where);
	json_t *parsed = NULL;
	if (json_is_string(io)) {
		json_error_t je;
		parsed = json_loadb(json_string_value(io), json_string_length(io), 0, &je);
		if (!parsed)
			return pd_jfail_at(e, w, "a string, but not JSON: %s", je.text);
		io = parsed;
	}
	int rc = -1;
	if (!json_is_object(io)) {
		pd_jfail_at(e, w, "must be an object {\"inputs\", \"outputs\", \"fn_name\"}");
		goto out;
	}
	static const char *const known[] = {"inputs", "outputs", "fn_name", NULL};
	if (pd_junknown_fields(io, w, known, e) < 0)
		goto out;
	json_t *ins = json_object_get(io, "inputs"), *outs = json_object_get(io, "outputs"),
	       *fn = json_object_get(io, "fn_name");
	if (!json_is_array(ins) || !json_is_array(outs) || json_array_size(ins) != json_array_size(outs)) {
		pd_jfail_at(e, w, "inputs and outputs: required, two lists of the same length");
		goto out;
	}
	if (fn && !json_is_null(fn)) {
		const char *f = json_string_value(fn);
		bool ident = f && *f && strlen(f) < sizeof p->fn_name && !(f[0] >= '0' && f[0] <= '9');
		for (const char *q = f; ident && *q; q++)
			ident = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_';
		if (!ident) {
			pd_jfail_at(e, w, "fn_name: must be a Python identifier");
			goto out;
		}
		p->call_based = true;
		snprintf(p->fn_name, sizeof p->fn_name, "%s", f);
		if (!checker_given) /* call-based answers are values: compared as JSON */
			p->checker = pd_checker_default(PD_CHK_JSON_VALUE);
	}
	for (size_t i = 0; i < json_array_size(ins); i++) {
		char tw[640], name[32];
		snprintf(tw, sizeof tw, "%s[%zu]", w, i);
		snprintf(name, sizeof name, "%zu", i + 1);
		json_t *in = json_array_get(ins, i), *out = json_array_get(outs, i);
		if (p->call_based) {
			char *args = call_args(in, tw, e);
			if (!args)
				goto out;
			/* an expected value given as a JSON text (LiveCodeBench) is that value */
			json_t *val = NULL;
			if (json_is_string(out)) {
				json_error_t je;
				val = json_loadb(json_string_value(out), json_string_length(out), JSON_DECODE_ANY, &je);
			}
			char *ans = json_dumps(val ? val : out, JSON_COMPACT | JSON_ENCODE_ANY);
			json_decref(val);
			int r = ans ? add_test(p, name, args, strlen(args), ans, strlen(ans), 1, total, tw, e)
				    : pd_fail(e, ENOMEM, "%s", tw);
			free(args);
			free(ans);
			if (r < 0)
				goto out;
		} else {
			if (!json_is_string(in) || !json_is_string(out)) {
				pd_jfail_at(e, tw, "stdin-style inputs and outputs must be strings (give fn_name for call-based)");
				goto out;
			}
			if (add_test(p, name, json_string_value(in), json_string_length(in), json_string_value(out),
				     json_string_length(out), 1, total, tw, e) < 0)
				goto out;
		}
	}
	rc = 0;
out:
	json_decref(parsed);
	return rc;
}

/* tests/NNN.in with NNN.ans (or NNN.out), in name order. */
int pd_jload_test_dir(pd_problem *p, const char *dir, json_t *weights, uint64_t *total, pd_err *e)
{
	char td[1024];
	snprintf(td, sizeof td, "%s/tests", dir);
	DIR *d = opendir(td);
	if (!d)
		return pd_fail(e, errno, "%s", td);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int rc = -1;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 4 || strcmp(de->d_name + l - 3, ".in") || l - 3 >= sizeof p->tests[0].name)
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 32) * sizeof *nn);
			if (!nn)
				goto out;
			names = nn;
		}
		names[n++] = strndup(de->d_name, l - 3);
	}
	if (!n) {
		pd_fail(e, ENOENT, "%s: no tests (NNN.in with NNN.ans)", td);
		goto out;
	}
	if (n)
		qsort(names, n, sizeof *names, pd_jname_cmp);
	for (size_t i = 0; i < n; i++) {
		char pin[1400], pans[1400];
		snprintf(pin, sizeof pin, "%s/%s.in", td, names[i]);
		snprintf(pans, sizeof pans, "%s/%s.ans", td, names[i]);
		if (access(pans, F_OK) != 0)
			snprintf(pans, sizeof pans, "%s/%s.out", td, names[i]);
		char *in = NULL, *ans = NULL;
		size_t inl, ansl;
		if (pd_jslurp(pin, TEST_FILE_MAX, &in, &inl, e) < 0)
			goto out;
		if (pd_jslurp(pans, TEST_FILE_MAX, &ans, &ansl, e) < 0) {
			if (e->code == ENOENT)
				pd_fail(e, ENOENT, "%s/%s.in has no answer (%s.ans)", td, names[i], names[i]);
			free(in);
			goto out;
		}
		double weight = 1;
		char w[1400];
		snprintf(w, sizeof w, "%s/problem.json: weights.%s", dir, names[i]);
		int r = parse_weight(weights ? json_object_get(weights, names[i]) : NULL, w, &weight, e);
		if (r == 0)
			r = add_test(p, names[i], in, inl, ans, ansl, weight, total, td, e);
		free(in);
		free(ans);
		if (r < 0)
			goto out;
	}
	/* a weight for a test that does not exist is a typo that would silently count for nothing */
	const char *k;
	json_t *v;
	json_object_foreach(weights, k, v) {
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = !strcmp(names[i], k);
		if (!found) {
			pd_refuse(e, "%s/problem.json: weights.%s: no test %s/%s.in", dir, k, td, k);
			goto out;
		}
	}
	rc = 0;
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}
