/* Problems: the on-disk package (problem.json + tests/NNN.in/.ans + optional checker/interactor
 * source), the inline form of a request, and the RL pipelines' "in_outs". Everything a verdict
 * depends on is validated here, at load, with the file and the field in the error: a judge must not
 * find out at the first submission that a problem has no tests. docs/judge.md documents the
 * format. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOURCE_MAX (1u << 20)        /* a checker or interactor source */

static const char *lang_of_ext(const char *file)
{
	const char *dot = strrchr(file, '.');
	if (!dot)
		return NULL;
	static const char *const map[][2] = {{".c", "c"},    {".cpp", "cpp"},     {".cc", "cpp"}, {".py", "python"},
					     {".sh", "bash"}, {".js", "nodejs"}, {NULL, NULL}};
	for (int i = 0; map[i][0]; i++)
		if (!strcmp(dot, map[i][0]))
			return map[i][1];
	return NULL;
}

static int get_secs(json_t *o, const char *key, const char *where, uint64_t *ms, pd_err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 3600)
		return pd_jfail_at(e, where, "%s: must be a number of seconds above 0, at most 3600", key);
	*ms = (uint64_t)(json_number_value(v) * 1000.0 + 0.5);
	if (!*ms)
		*ms = 1;
	return 0;
}

static int get_size(json_t *o, const char *key, const char *where, uint64_t min, uint64_t *out, pd_err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	uint64_t b = 0;
	if (json_is_integer(v) && json_integer_value(v) > 0)
		b = (uint64_t)json_integer_value(v);
	else if (!json_is_string(v) || pd_parse_size(json_string_value(v), &b) < 0)
		return pd_jfail_at(e, where, "%s: must be bytes or a size like \"256M\"", key);
	if (b < min || b > (64ull << 30))
		return pd_jfail_at(e, where, "%s: must be from %llu bytes to 64G", key, (unsigned long long)min);
	*out = b;
	return 0;
}

static int get_str(json_t *o, const char *key, const char *where, char *out, size_t size, pd_err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v) && !strcmp(key, "version")) { /* "version": 3 reads as "3" */
		snprintf(out, size, "%lld", (long long)json_integer_value(v));
		return 0;
	}
	if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) >= size ||
	    memchr(json_string_value(v), 0, json_string_length(v)))
		return pd_jfail_at(e, where, "%s: must be a string of 1 to %zu characters", key, size - 1);
	snprintf(out, size, "%s", json_string_value(v));
	return 0;
}

static int get_bool(json_t *o, const char *key, const char *where, bool *out, pd_err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return pd_jfail_at(e, where, "%s: must be true or false", key);
	*out = json_is_true(v);
	return 0;
}

static int get_tol(json_t *o, const char *key, const char *where, double *out, pd_err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) <= 1e9))
		return pd_jfail_at(e, where, "%s: must be a number from 0 to 1e9", key);
	*out = json_number_value(v);
	return 0;
}

/* A program the problem brings: "source" (a file in dir) or "code" (inline), and "language"
 * (else the file's extension). Without either, dir's <base>.* is looked for. */
static int get_program(json_t *o, const char *dir, const char *where, const char *base, pd_jsource *js, pd_err *e)
{
	json_t *src = json_object_get(o, "source"), *code = json_object_get(o, "code"),
	       *lang = json_object_get(o, "language");
	if (src && code)
		return pd_jfail_at(e, where, "give source or code, not both");
	char path[1024] = "";
	if (src) {
		if (!json_is_string(src) || !dir)
			return pd_jfail_at(e, where, "source: %s", dir ? "must be a file name" : "an inline problem gives code, not source");
		const char *s = json_string_value(src);
		if (!*s || s[0] == '/' || strstr(s, ".."))
			return pd_jfail_at(e, where, "source: must be a relative file name inside the problem");
		snprintf(path, sizeof path, "%s/%s", dir, s);
	} else if (!code && dir) {
		static const char *const exts[] = {".cpp", ".cc", ".c", ".py", ".sh", ".js", NULL};
		for (int i = 0; exts[i] && !path[0]; i++) {
			char p[1024];
			snprintf(p, sizeof p, "%s/%s%s", dir, base, exts[i]);
			if (access(p, R_OK) == 0)
				snprintf(path, sizeof path, "%s", p);
		}
		if (!path[0])
			return pd_jfail_at(e, where, "source: no %s.{cpp,c,py,sh,js} in %s and no source given", base, dir);
	} else if (!code) {
		return pd_jfail_at(e, where, "code: required (the program's source)");
	}
	if (path[0]) {
		if (pd_jslurp(path, SOURCE_MAX, &js->source, &js->source_len, e) < 0)
			return pd_jfail_at(e, where, "source: %s", PD_ERR_STR(e));
		snprintf(js->file, sizeof js->file, "%s", path);
	} else {
		if (!json_is_string(code) || !json_string_length(code))
			return pd_jfail_at(e, where, "code: must be a non-empty string");
		js->source_len = json_string_length(code);
		js->source = malloc(js->source_len + 1);
		if (!js->source)
			return pd_fail(e, ENOMEM, "%s", where);
		memcpy(js->source, json_string_value(code), js->source_len + 1);
		snprintf(js->file, sizeof js->file, "%s.code", where);
	}
	const char *l = lang ? json_string_value(lang) : lang_of_ext(path[0] ? path : "");
	if (!l)
		return pd_jfail_at(e, where, "language: required (c, cpp, python, bash, nodejs)");
	if (!pd_language_find(l)) {
		char names[256];
		pd_language_names(names, sizeof names);
		return pd_jfail_at(e, where, "language: '%s' is not a language paddock knows (%s)", l, names);
	}
	snprintf(js->language, sizeof js->language, "%s", l);
	return 0;
}

static int parse_checker(pd_problem *p, json_t *c, const char *dir, const char *where, pd_err *e)
{
	char w[600];
	snprintf(w, sizeof w, "%s: checker", where);
	if (json_is_string(c)) { /* "checker": "tokens" */
		int m = pd_check_mode_parse(json_string_value(c));
		if (m < 0 || m == PD_CHK_PROGRAM || m == PD_CHK_INTERACTIVE)
			return pd_jfail_at(e, w, "'%s' is not a built-in mode (use an object for a program)", json_string_value(c));
		p->checker = pd_checker_default((pd_check_mode)m);
		return 0;
	}
	if (!json_is_object(c))
		return pd_jfail_at(e, w, "must be a mode name or an object");
	static const char *const known[] = {"mode", "case_insensitive", "tolerance", "abs_tol", "rel_tol", "epsilon",
					    "source", "code", "language", "convention", NULL};
	if (pd_junknown_fields(c, w, known, e) < 0)
		return -1;
	json_t *m = json_object_get(c, "mode");
	int mode = m && json_is_string(m) ? pd_check_mode_parse(json_string_value(m)) : m ? -1 : PD_CHK_LINES;
	if (mode < 0 || mode == PD_CHK_INTERACTIVE)
		return pd_jfail_at(e, w, "mode: must be one of exact, lines, tokens, numeric, yesno, unordered_lines, "
				     "multiset_tokens, json_value, checker (interactive problems have an interactor)");
	p->checker = pd_checker_default((pd_check_mode)mode);
	if (get_bool(c, "case_insensitive", w, &p->checker.case_insensitive, e) < 0 ||
	    get_tol(c, "abs_tol", w, &p->checker.abs_tol, e) < 0 || get_tol(c, "rel_tol", w, &p->checker.rel_tol, e) < 0)
		return -1;
	json_t *eps = json_object_get(c, "epsilon");
	if (eps) {
		if (get_tol(c, "epsilon", w, &p->checker.abs_tol, e) < 0)
			return -1;
		p->checker.rel_tol = p->checker.abs_tol;
	}
	json_t *t = json_object_get(c, "tolerance");
	if (t) {
		const char *ts = json_string_value(t);
		if (ts && !strcmp(ts, "abs"))
			p->checker.tolerance = PD_TOL_ABS;
		else if (ts && !strcmp(ts, "rel"))
			p->checker.tolerance = PD_TOL_REL;
		else if (ts && !strcmp(ts, "abs_or_rel"))
			p->checker.tolerance = PD_TOL_ABS_OR_REL;
		else
			return pd_jfail_at(e, w, "tolerance: must be abs, rel or abs_or_rel");
	}
	json_t *cv = json_object_get(c, "convention");
	if (cv) {
		const char *cs = json_string_value(cv);
		if (cs && !strcmp(cs, "testlib"))
			p->checker.convention = PD_CONV_TESTLIB;
		else if (cs && !strcmp(cs, "kattis"))
			p->checker.convention = PD_CONV_KATTIS;
		else
			return pd_jfail_at(e, w, "convention: must be testlib or kattis");
	}
	bool has_prog = json_object_get(c, "source") || json_object_get(c, "code");
	if (mode == PD_CHK_PROGRAM)
		return get_program(c, dir, w, "checker", &p->checker_prog, e);
	if (has_prog)
		return pd_jfail_at(e, w, "source/code: only mode \"checker\" runs a program");
	return 0;
}

static int digest(pd_problem *p)
{
	pd_sha256 c;
	pd_sha256_init(&c);
	pd_sha256_str(&c, "paddock-problem-1");
	pd_sha256_str(&c, p->id);
	pd_sha256_str(&c, p->version);
	pd_sha256_str(&c, p->template_name);
	pd_sha256_str(&c, p->judge_template);
	pd_sha256_str(&c, p->image);
	if (p->isolation[0]) /* only when named: the digests of problems without it stay as they were */
		pd_sha256_str(&c, p->isolation);
	pd_sha256_u64(&c, p->time_ms);
	pd_sha256_u64(&c, p->memory_bytes);
	pd_sha256_u64(&c, p->output_bytes);
	pd_sha256_u64(&c, p->total_ms);
	pd_sha256_u64(&c, p->compile_ms);
	pd_sha256_u64(&c, p->interactor_time_ms);
	char cfg[256];
	snprintf(cfg, sizeof cfg, "%d %d %d %.17g %.17g %d", p->checker.mode, p->checker.case_insensitive,
		 p->checker.tolerance, p->checker.abs_tol, p->checker.rel_tol, p->checker.convention);
	pd_sha256_str(&c, cfg);
	pd_sha256_field(&c, p->checker_prog.source ? p->checker_prog.source : "", p->checker_prog.source_len);
	pd_sha256_str(&c, p->checker_prog.language);
	pd_sha256_field(&c, p->interactor.source ? p->interactor.source : "", p->interactor.source_len);
	pd_sha256_str(&c, p->interactor.language);
	pd_sha256_u64(&c, p->call_based);
	pd_sha256_str(&c, p->fn_name);
	pd_sha256_u64(&c, p->stop_at_first_failure);
	if (p->one_sandbox) /* only when set: the digests of problems without it stay as they were */
		pd_sha256_str(&c, "one_sandbox");
	pd_sha256_u64(&c, p->ntests);
	for (size_t i = 0; i < p->ntests; i++) {
		pd_sha256_str(&c, p->tests[i].name);
		pd_sha256_field(&c, p->tests[i].input, p->tests[i].input_len);
		pd_sha256_field(&c, p->tests[i].answer, p->tests[i].answer_len);
		char wt[40];
		snprintf(wt, sizeof wt, "%.17g", p->tests[i].weight);
		pd_sha256_str(&c, wt);
	}
	if (pd_sha256_end(&c, p->digest) < 0)
		return -1;
	pd_sha256_hex(p->digest, p->digest_hex);
	return 0;
}

/* A new problem with the defaults, when o's fields are those of its kind (*episode: an episode
 * problem, episode.c's). */
static pd_problem *problem_new(json_t *o, const char *dir, const char *where, bool *episode, pd_err *e)
{
	if (!json_is_object(o)) {
		pd_jfail_at(e, where, "a problem must be a JSON object");
		return NULL;
	}
	static const char *const known[] = {"id", "version", "template", "judge_template", "image", "isolation", "limits", "checker",
					    "interactor", "tests", "in_outs", "weights", "stop_at_first_failure", "one_sandbox",
					    "title", "tags", "metadata", "audit", "kind", NULL};
	/* an episode problem (episode.c) shares the id, version, template, image and audit fields */
	static const char *const episode_known[] = {"id", "version", "kind", "template", "image", "files", "command",
						    "report", "fail_to_pass", "pass_to_pass", "limits", "audit", "reward",
						    "rules", "title", "tags", "metadata", NULL};
	json_t *kind = json_object_get(o, "kind");
	*episode = json_is_string(kind) && !strcmp(json_string_value(kind), "episode");
	if (kind && !*episode) {
		pd_jfail_at(e, where, "kind: must be \"episode\" (or absent: a submission's problem)");
		return NULL;
	}
	if (pd_junknown_fields(o, where, *episode ? episode_known : known, e) < 0)
		return NULL;
	pd_problem *p = calloc(1, sizeof *p);
	if (!p) {
		pd_fail(e, ENOMEM, "%s", where);
		return NULL;
	}
	snprintf(p->origin, sizeof p->origin, "%s", dir ? dir : "inline");
	snprintf(p->id, sizeof p->id, "inline");
	snprintf(p->version, sizeof p->version, "1");
	p->time_ms = 2000;
	p->memory_bytes = 256u << 20;
	p->output_bytes = 16u << 20;
	p->compile_ms = 30000;
	p->interactor_time_ms = 0;
	p->checker = pd_checker_default(PD_CHK_LINES);
	return p;
}

/* The fields every kind of problem has: its names, where it runs, and its audit policy. */
static int parse_head(pd_problem *p, json_t *o, const char *dir, const char *where, pd_err *e)
{
	if (dir && !json_object_get(o, "id"))
		return pd_jfail_at(e, where, "id: required");
	if (get_str(o, "id", where, p->id, sizeof p->id, e) < 0 ||
	    get_str(o, "version", where, p->version, sizeof p->version, e) < 0 ||
	    get_str(o, "template", where, p->template_name, sizeof p->template_name, e) < 0 ||
	    get_str(o, "judge_template", where, p->judge_template, sizeof p->judge_template, e) < 0 ||
	    get_str(o, "image", where, p->image, sizeof p->image, e) < 0 ||
	    get_str(o, "isolation", where, p->isolation, sizeof p->isolation, e) < 0 ||
	    get_bool(o, "stop_at_first_failure", where, &p->stop_at_first_failure, e) < 0 ||
	    get_bool(o, "one_sandbox", where, &p->one_sandbox, e) < 0)
		return -1;
	if (p->isolation[0] && pd_isolation_parse(p->isolation) < 0)
		return pd_jfail_at(e, where, "isolation: must be container or gvisor");
	for (const char *q = p->id; *q; q++)
		if (*q == '/' || *q == '@' || (unsigned char)*q < 0x20)
			return pd_jfail_at(e, where, "id: '/', '@' and control characters are not allowed");
	json_t *au = json_object_get(o, "audit");
	if (!au || json_is_null(au) || json_is_false(au))
		return 0;
	/* the problem's policy: its judge material, decoys, honey variables, what it protects, and
	 * whether every submission must be audited ("mandatory") */
	char w[600];
	snprintf(w, sizeof w, "%s: audit", where);
	if (!json_is_true(au) && !json_is_object(au))
		return pd_jfail_at(e, where, "audit: must be true, false or a policy object (docs/audit.md)");
	char *text = json_dumps(au, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return pd_fail(e, ENOMEM, "%s", w);
	p->audit = pd_audit_policy_parse(text, strlen(text), w, "/work", e);
	free(text);
	return p->audit ? 0 : pd_jrefusal(e);
}

static int parse_limits(pd_problem *p, json_t *lim, const char *where, pd_err *e)
{
	char w[600];
	snprintf(w, sizeof w, "%s: limits", where);
	static const char *const lk[] = {"time", "memory", "output", "total_time", "compile_time", NULL};
	if (!json_is_object(lim))
		return pd_jfail_at(e, w, "must be an object");
	if (pd_junknown_fields(lim, w, lk, e) < 0 || get_secs(lim, "time", w, &p->time_ms, e) < 0 ||
	    get_size(lim, "memory", w, 4u << 20, &p->memory_bytes, e) < 0 ||
	    get_size(lim, "output", w, 1, &p->output_bytes, e) < 0 ||
	    get_secs(lim, "total_time", w, &p->total_ms, e) < 0 ||
	    get_secs(lim, "compile_time", w, &p->compile_ms, e) < 0)
		return -1;
	return 0;
}

/* An interactive problem's interactor (chk: a checker was given too, which it may not be). */
static int parse_interactor(pd_problem *p, json_t *inter, bool chk, const char *dir, const char *where, pd_err *e)
{
	char w[600];
	snprintf(w, sizeof w, "%s: interactor", where);
	if (chk)
		return pd_jfail_at(e, w, "an interactive problem has an interactor and no checker");
	static const char *const ik[] = {"source", "code", "language", "time", "convention", NULL};
	if (!json_is_object(inter))
		return pd_jfail_at(e, w, "must be an object {\"source\" or \"code\", \"language\", \"time\"}");
	if (pd_junknown_fields(inter, w, ik, e) < 0 || get_secs(inter, "time", w, &p->interactor_time_ms, e) < 0 ||
	    get_program(inter, dir, w, "interactor", &p->interactor, e) < 0)
		return -1;
	p->checker = pd_checker_default(PD_CHK_INTERACTIVE);
	json_t *cv = json_object_get(inter, "convention");
	if (cv && json_is_string(cv) && !strcmp(json_string_value(cv), "kattis"))
		p->checker.convention = PD_CONV_KATTIS;
	else if (cv && !(json_is_string(cv) && !strcmp(json_string_value(cv), "testlib")))
		return pd_jfail_at(e, w, "convention: must be testlib or kattis");
	return 0;
}

/* The tests: inline ("tests"), RL "in_outs", or the package's tests/ directory (with "weights"). */
static int parse_tests_of(pd_problem *p, json_t *o, bool chk, const char *dir, const char *where, pd_err *e)
{
	uint64_t total = 0;
	json_t *tests = json_object_get(o, "tests"), *io = json_object_get(o, "in_outs"),
	       *weights = json_object_get(o, "weights");
	if (tests && io)
		return pd_jfail_at(e, where, "tests: give tests or in_outs, not both");
	if (weights && (!json_is_object(weights) || !dir || tests || io))
		return pd_jfail_at(e, where, "weights: an object of test name: weight, for the tests/ directory only");
	int rc = 0;
	if (tests)
		rc = pd_jparse_tests(p, tests, where, &total, e);
	else if (io)
		rc = pd_jparse_in_outs(p, io, chk, where, &total, e);
	else if (dir)
		rc = pd_jload_test_dir(p, dir, weights, &total, e);
	if (rc < 0)
		return -1;
	if (!p->ntests)
		return pd_jfail_at(e, where, "tests: the problem has no tests");
	if (p->call_based && p->checker.mode == PD_CHK_INTERACTIVE)
		return pd_jfail_at(e, where, "in_outs.fn_name: a call-based problem cannot be interactive");
	return 0;
}

pd_problem *pd_problem_from_json(json_t *o, const char *dir, const char *where, pd_err *e)
{
	bool episode = false;
	pd_problem *p = problem_new(o, dir, where, &episode, e);
	if (!p)
		return NULL;
	if (parse_head(p, o, dir, where, e) < 0)
		goto fail;
	if (episode) {
		if (pd_episode_parse(p, o, dir, where, e) < 0)
			goto fail;
		return p;
	}
	json_t *lim = json_object_get(o, "limits"), *chk = json_object_get(o, "checker"),
	       *inter = json_object_get(o, "interactor");
	if ((lim && parse_limits(p, lim, where, e) < 0) || (chk && parse_checker(p, chk, dir, where, e) < 0) ||
	    (inter && parse_interactor(p, inter, chk != NULL, dir, where, e) < 0) ||
	    parse_tests_of(p, o, chk != NULL, dir, where, e) < 0 || pd_judge_check_decoys(p, p->audit, where, e) < 0)
		goto fail;
	if (!p->interactor_time_ms)
		p->interactor_time_ms = p->time_ms * 2 + 1000;
	if (digest(p) < 0) {
		pd_jfail_at(e, where, "the problem's digest: out of memory");
		goto fail;
	}
	return p;
fail:
	pd_problem_free(p);
	return NULL;
}

pd_problem *pd_problem_load(const char *dir, pd_err *e)
{
	char path[1100];
	snprintf(path, sizeof path, "%s/problem.json", dir);
	char *text;
	size_t len;
	if (pd_jslurp(path, SOURCE_MAX, &text, &len, e) < 0)
		return NULL;
	json_error_t je;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!o) {
		pd_refuse(e, "%s: line %d column %d: %s", path, je.line, je.column, je.text);
		return NULL;
	}
	pd_problem *p = pd_problem_from_json(o, dir, path, e);
	json_decref(o);
	return p;
}

static void free_source(pd_jsource *s)
{
	free(s->source);
	free(s->built);
}

void pd_problem_free(pd_problem *p)
{
	if (!p)
		return;
	pd_audit_policy_free(p->audit);
	pd_episode_free(p->episode);
	for (size_t i = 0; i < p->ntests; i++) {
		free(p->tests[i].input);
		free(p->tests[i].answer);
	}
	free(p->tests);
	free_source(&p->checker_prog);
	free_source(&p->interactor);
	free(p);
}

int pd_problems_load_dir(const char *dir, pd_problem_set *out, pd_err *e)
{
	memset(out, 0, sizeof *out);
	DIR *d = opendir(dir);
	if (!d)
		return pd_fail(e, errno, "problems directory %s", dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char pj[1400];
		snprintf(pj, sizeof pj, "%s/%s/problem.json", dir, de->d_name);
		if (access(pj, F_OK) != 0)
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 32) * sizeof *nn);
			if (!nn)
				break;
			names = nn;
		}
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, pd_jname_cmp);
	int rc = 0;
	out->p = calloc(n ? n : 1, sizeof *out->p);
	for (size_t i = 0; i < n && rc == 0; i++) {
		char pd[1400];
		snprintf(pd, sizeof pd, "%s/%s", dir, names[i]);
		pd_problem *p = pd_problem_load(pd, e);
		if (!p) {
			rc = -1;
			break;
		}
		for (size_t k = 0; k < out->n; k++)
			if (!strcmp(out->p[k]->id, p->id) && !strcmp(out->p[k]->version, p->version)) {
				pd_fail(e, EEXIST, "%s/problem.json: id: %s@%s is also %s", pd, p->id, p->version,
					out->p[k]->origin);
				pd_problem_free(p);
				p = NULL;
				rc = -1;
				break;
			}
		if (p)
			out->p[out->n++] = p;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (rc < 0)
		pd_problems_free(out);
	else if (!out->n)
		return pd_fail(e, ENOENT, "problems directory %s: no problem (a subdirectory with problem.json)", dir);
	return rc;
}

/* Versions compare as numbers where both are, else as text. */
static int version_cmp(const char *a, const char *b)
{
	char *ea, *eb;
	long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);
	if (!*ea && !*eb && *a && *b)
		return x < y ? -1 : x > y;
	return strcmp(a, b);
}

pd_problem *pd_problems_find(const pd_problem_set *s, const char *id, const char *version)
{
	pd_problem *best = NULL;
	for (size_t i = 0; i < s->n; i++) {
		pd_problem *p = s->p[i];
		if (strcmp(p->id, id))
			continue;
		if (version && *version) {
			if (!strcmp(p->version, version))
				return p;
		} else if (!best || version_cmp(p->version, best->version) > 0) {
			best = p;
		}
	}
	return best;
}

void pd_problems_free(pd_problem_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		pd_problem_free(s->p[i]);
	free(s->p);
	s->p = NULL;
	s->n = 0;
}

json_t *pd_problems_images(const char *dir, pd_err *e)
{
	pd_problem_set set;
	if (pd_problems_load_dir(dir, &set, e) < 0)
		return NULL;
	json_t *a = json_array();
	for (size_t i = 0; a && i < set.n; i++) {
		const pd_problem *p = set.p[i];
		if (!p->image[0])
			continue;
		char id[sizeof p->id + sizeof p->version + 1];
		snprintf(id, sizeof id, "%s@%s", p->id, p->version);
		json_array_append_new(a, json_pack("{s:s, s:s}", "problem", id, "image", p->image));
	}
	pd_problems_free(&set);
	if (!a)
		pd_fail(e, ENOMEM, "problems of %s", dir);
	return a;
}
