/* Episode problems (issue 40; docs/judge.md, "Episode problems"): an agent's session is graded, not
 * a submission. The problem brings hidden files (tests, fixtures), the command that runs them and
 * how it reports: its exit code, a JUnit XML file it writes, or pytest's -rA summary lines; and,
 * as SWE-bench names them, the tests that must go from failing to passing (fail_to_pass) and those
 * that must keep passing (pass_to_pass). Validated here at load; the grade of a command's result is
 * pd_episode_grade, a pure function (the fork it ran in is pool/session_grade.c's). */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EP_FILES_MAX (64ull << 20) /* the hidden files together */
#define EP_NFILES_MAX 4096
#define EP_TESTS_MAX 4096          /* tests a grade lists (a report's others are counted, not listed) */

static int ep_str_list(json_t *v, const char *where, const char *key, char ***out, size_t *n, pd_err *e)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > EP_TESTS_MAX)
		return pd_jfail_at(e, where, "%s: must be a list of at most %d test ids (strings)", key, EP_TESTS_MAX);
	*out = calloc(json_array_size(v) + 1, sizeof **out);
	if (!*out)
		return pd_fail(e, ENOMEM, "%s: %s", where, key);
	size_t i;
	json_t *x;
	json_array_foreach(v, i, x) {
		if (!json_is_string(x) || !json_string_length(x) || json_string_length(x) >= 384)
			return pd_jfail_at(e, where, "%s[%zu]: must be a test id of 1 to 383 characters", key, i);
		(*out)[(*n)++] = strdup(json_string_value(x));
	}
	return 0;
}

/* a hidden file's path: no empty, "." or ".." component (it names one place, inside the tree the
 * fork's root resolves it in, whatever the agent did to the directories) */
static bool good_path(const char *p)
{
	size_t l = strlen(p);
	if (!l || l >= sizeof ((pd_ep_file *)0)->path)
		return false;
	const char *c = p[0] == '/' ? p + 1 : p;
	while (*c) {
		const char *end = strchr(c, '/');
		size_t n = end ? (size_t)(end - c) : strlen(c);
		if (!n || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n + (end != NULL);
		if (end && !*c)
			return false; /* a trailing slash: not a file */
	}
	return true;
}

static int add_file(pd_episode *ep, const char *path, char *data, size_t len, uint64_t *total, const char *where,
		    pd_err *e)
{
	if (!good_path(path)) {
		free(data);
		return pd_jfail_at(e, where, "files: %s: a path of 1 to 511 characters without empty, '.' or '..' parts",
				   path);
	}
	if (ep->nfiles >= EP_NFILES_MAX || (*total += len) > EP_FILES_MAX) {
		free(data);
		return pd_jfail_at(e, where, "files: more than %d files or %llu MiB", EP_NFILES_MAX,
				   (unsigned long long)(EP_FILES_MAX >> 20));
	}
	pd_ep_file *nf = realloc(ep->files, (ep->nfiles + 1) * sizeof *nf);
	if (!nf) {
		free(data);
		return pd_fail(e, ENOMEM, "%s: files", where);
	}
	ep->files = nf;
	pd_ep_file *f = &ep->files[ep->nfiles++];
	snprintf(f->path, sizeof f->path, "%s", path);
	f->data = data;
	f->len = len;
	return 0;
}

/* dir/files/ read whole, recursively: rel is the path under it ("" at the top) */
static int load_files_dir(pd_episode *ep, const char *top, const char *rel, uint64_t *total, const char *where,
			  int depth, pd_err *e)
{
	char dir[2048];
	snprintf(dir, sizeof dir, "%s%s%s", top, rel[0] ? "/" : "", rel);
	DIR *d = opendir(dir);
	if (!d)
		return pd_fail(e, errno, "%s: files/: %s", where, dir);
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char **nn = realloc(names, (n + 1) * sizeof *nn);
		if (!nn)
			break;
		names = nn;
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, pd_jname_cmp);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char sub[1024], full[3072];
		snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
		snprintf(full, sizeof full, "%s/%s", top, sub);
		struct stat st;
		if (lstat(full, &st) < 0)
			rc = pd_fail(e, errno, "%s: files/%s", where, sub);
		else if (S_ISDIR(st.st_mode) && depth < 32)
			rc = load_files_dir(ep, top, sub, total, where, depth + 1, e);
		else if (!S_ISREG(st.st_mode))
			rc = pd_jfail_at(e, where, "files/%s: not a regular file or a directory", sub);
		else {
			char *data;
			size_t len;
			rc = pd_jslurp(full, EP_FILES_MAX, &data, &len, e);
			if (rc == 0)
				rc = add_file(ep, sub, data, len, total, where, e);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

static int parse_files(pd_episode *ep, json_t *o, const char *dir, const char *where, pd_err *e)
{
	json_t *fs = json_object_get(o, "files");
	uint64_t total = 0;
	if (fs && !json_is_null(fs)) {
		if (!json_is_object(fs))
			return pd_jfail_at(e, where, "files: must be an object of path: content");
		const char *k;
		json_t *v;
		json_object_foreach(fs, k, v) {
			if (!json_is_string(v))
				return pd_jfail_at(e, where, "files: %s: the content must be a string", k);
			char *data = malloc(json_string_length(v) + 1);
			if (!data)
				return pd_fail(e, ENOMEM, "%s: files", where);
			memcpy(data, json_string_value(v), json_string_length(v) + 1);
			if (add_file(ep, k, data, json_string_length(v), &total, where, e) < 0)
				return -1;
		}
		return 0;
	}
	char fd[1400];
	struct stat st;
	snprintf(fd, sizeof fd, "%s/files", dir ? dir : "");
	if (dir && stat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		return load_files_dir(ep, fd, "", &total, where, 0, e);
	return 0;
}

static int parse_command(pd_episode *ep, json_t *c, const char *where, pd_err *e)
{
	if (json_is_string(c) && json_string_length(c) && !memchr(json_string_value(c), 0, json_string_length(c))) {
		ep->argv = calloc(4, sizeof *ep->argv);
		if (!ep->argv)
			return pd_fail(e, ENOMEM, "%s: command", where);
		ep->argv[0] = strdup("/bin/sh");
		ep->argv[1] = strdup("-c");
		ep->argv[2] = strdup(json_string_value(c));
		return 0;
	}
	if (!json_is_array(c) || !json_array_size(c) || json_array_size(c) > 256)
		return pd_jfail_at(e, where, "command: required: a string (run with sh -c) or a list of 1 to 256 strings");
	ep->argv = calloc(json_array_size(c) + 1, sizeof *ep->argv);
	if (!ep->argv)
		return pd_fail(e, ENOMEM, "%s: command", where);
	size_t i;
	json_t *x;
	json_array_foreach(c, i, x) {
		if (!json_is_string(x) || memchr(json_string_value(x), 0, json_string_length(x)))
			return pd_jfail_at(e, where, "command[%zu]: must be a string", i);
		ep->argv[i] = strdup(json_string_value(x));
	}
	return 0;
}

static int parse_report(pd_episode *ep, json_t *r, const char *where, pd_err *e)
{
	const char *s = json_string_value(r);
	if (!r || json_is_null(r) || (s && !strcmp(s, "exit_code")))
		ep->report = PD_EP_EXIT_CODE;
	else if (s && !strcmp(s, "pytest"))
		ep->report = PD_EP_PYTEST;
	else if (json_is_object(r) && json_object_size(r) == 1 && json_is_string(json_object_get(r, "junit")) &&
		 good_path(json_string_value(json_object_get(r, "junit")))) {
		ep->report = PD_EP_JUNIT;
		snprintf(ep->junit_path, sizeof ep->junit_path, "%s", json_string_value(json_object_get(r, "junit")));
	} else
		return pd_jfail_at(e, where, "report: must be \"exit_code\", \"pytest\" or {\"junit\": PATH}");
	return 0;
}

static int get_limit(json_t *lim, const char *key, const char *where, bool size, uint64_t *out, pd_err *e)
{
	json_t *v = json_object_get(lim, key);
	if (!v || json_is_null(v))
		return 0;
	if (size) {
		uint64_t b = 0;
		if (json_is_integer(v) && json_integer_value(v) > 0)
			b = (uint64_t)json_integer_value(v);
		else if (!json_is_string(v) || pd_parse_size(json_string_value(v), &b) < 0)
			return pd_jfail_at(e, where, "%s: must be bytes or a size like \"1G\"", key);
		if (b < (4u << 20) || b > (64ull << 30))
			return pd_jfail_at(e, where, "%s: must be from 4M to 64G", key);
		*out = b;
		return 0;
	}
	if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 86400)
		return pd_jfail_at(e, where, "%s: must be a number of seconds above 0, at most 86400", key);
	*out = (uint64_t)(json_number_value(v) * 1000.0 + 0.5);
	return 0;
}

int pd_episode_parse(pd_problem *p, json_t *o, const char *dir, const char *where, pd_err *e)
{
	pd_episode *ep = calloc(1, sizeof *ep);
	if (!ep)
		return pd_fail(e, ENOMEM, "%s", where);
	p->episode = ep;
	ep->wall_ms = 600000;
	ep->memory_bytes = 0;
	ep->output_bytes = 16u << 20;
	if (parse_files(ep, o, dir, where, e) < 0 || parse_command(ep, json_object_get(o, "command"), where, e) < 0 ||
	    parse_report(ep, json_object_get(o, "report"), where, e) < 0 ||
	    ep_str_list(json_object_get(o, "fail_to_pass"), where, "fail_to_pass", &ep->fail_to_pass, &ep->nf2p, e) < 0 ||
	    ep_str_list(json_object_get(o, "pass_to_pass"), where, "pass_to_pass", &ep->pass_to_pass, &ep->np2p, e) < 0)
		return -1;
	if (ep->report == PD_EP_EXIT_CODE && (ep->nf2p || ep->np2p))
		return pd_jfail_at(e, where, "fail_to_pass: test ids need a report that names tests (junit or pytest)");
	json_t *lim = json_object_get(o, "limits");
	if (lim && !json_is_null(lim)) {
		char w[600];
		snprintf(w, sizeof w, "%s: limits", where);
		static const char *const lk[] = {"time", "cpu_time", "memory", "output", NULL};
		if (!json_is_object(lim))
			return pd_jfail_at(e, w, "must be an object {time, cpu_time, memory, output}");
		if (pd_junknown_fields(lim, w, lk, e) < 0 || get_limit(lim, "time", w, false, &ep->wall_ms, e) < 0 ||
		    get_limit(lim, "cpu_time", w, false, &ep->cpu_ms, e) < 0 ||
		    get_limit(lim, "memory", w, true, &ep->memory_bytes, e) < 0)
			return -1;
		json_t *out = json_object_get(lim, "output");
		if (out && !json_is_null(out)) {
			if (!json_is_integer(out) || json_integer_value(out) < 1 || json_integer_value(out) > (1ll << 30))
				return pd_jfail_at(e, w, "output: must be bytes from 1 to 1G");
			ep->output_bytes = (uint64_t)json_integer_value(out);
		}
	}
	json_t *rw = json_object_get(o, "reward");
	if (rw && !json_is_null(rw)) {
		pd_reward_rule r = pd_reward_rule_default();
		if (pd_reward_rule_parse(rw, &r, e) < 0)
			return pd_jfail_at(e, where, "%s", e->msg);
		ep->reward = json_incref(rw);
	}
	json_t *rules = json_object_get(o, "rules");
	if (rules && !json_is_null(rules)) {
		pd_rules check = {0};
		int rc = pd_rules_add(&check, rules, "rules", e);
		pd_rules_free(&check);
		if (rc < 0)
			return pd_jfail_at(e, where, "%s", e->msg);
		ep->rules = json_incref(rules);
	}
	return 0;
}

static void free_list(char **l)
{
	for (size_t i = 0; l && l[i]; i++)
		free(l[i]);
	free(l);
}

void pd_episode_free(pd_episode *ep)
{
	if (!ep)
		return;
	for (size_t i = 0; i < ep->nfiles; i++)
		free(ep->files[i].data);
	free(ep->files);
	free_list(ep->argv);
	free_list(ep->fail_to_pass);
	free_list(ep->pass_to_pass);
	json_decref(ep->reward);
	json_decref(ep->rules);
	free(ep);
}

/* ---- the grade ---------------------------------------------------------------------------------- */

typedef struct reported {
	pd_ep_test *t;
	size_t n, cap;
} reported;

static void report_add(reported *r, const char *id, size_t len, const char *status)
{
	if (!len || len >= sizeof r->t[0].id || r->n >= EP_TESTS_MAX * 4)
		return;
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 64;
		pd_ep_test *nt = realloc(r->t, nc * sizeof *nt);
		if (!nt)
			return;
		r->t = nt;
		r->cap = nc;
	}
	pd_ep_test *t = &r->t[r->n++];
	memcpy(t->id, id, len);
	t->id[len] = 0;
	t->status = status;
	t->group = NULL;
}

/* pytest -rA's short summary: "PASSED id", "FAILED id - message", "ERROR id - message", "XFAIL id",
 * "XPASS id" (SKIPPED lines name a file and line, not a test: not counted). A test reported twice
 * (a teardown error after its pass) keeps the worse status: the later line. */
static void parse_pytest(const char *buf, size_t len, reported *r)
{
	static const struct {
		const char *word, *status;
	} words[] = {{"PASSED ", "pass"}, {"XFAIL ", "pass"}, {"XPASS ", "pass"}, {"FAILED ", "fail"}, {"ERROR ", "error"}};
	const char *p = buf, *end = buf + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
			size_t wl = strlen(words[w].word);
			if ((size_t)(le - p) <= wl || memcmp(p, words[w].word, wl))
				continue;
			const char *id = p + wl, *ie = le;
			/* the id ends at " - " (a message follows), once past a parametrization's brackets */
			const char *br = memchr(id, '[', (size_t)(ie - id));
			const char *from = br ? (memchr(br, ']', (size_t)(ie - br)) ?: br) : id;
			const char *dash = memmem(from, (size_t)(ie - from), " - ", 3);
			if (dash)
				ie = dash;
			while (ie > id && (ie[-1] == ' ' || ie[-1] == '\r'))
				ie--;
			report_add(r, id, (size_t)(ie - id), words[w].status);
			break;
		}
		p = le + 1;
	}
}

/* the value of attribute name in the tag that starts at tag and ends before end */
static size_t xml_attr(const char *tag, const char *end, const char *name, const char **val)
{
	size_t nl = strlen(name);
	for (const char *p = tag; p + nl + 2 < end; p++) {
		if ((p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n') || memcmp(p, name, nl) || p[nl] != '=' ||
		    (p[nl + 1] != '"' && p[nl + 1] != '\''))
			continue;
		const char *v = p + nl + 2, *ve = memchr(v, p[nl + 1], (size_t)(end - v));
		if (!ve)
			return 0;
		*val = v;
		return (size_t)(ve - v);
	}
	return 0;
}

/* JUnit XML: each <testcase classname= name=> is a test "classname.name"; a <failure> or <error>
 * inside it fails it, a <skipped> skips it. Enough of XML for what test runners write (entities in
 * names are left as written). */
static void parse_junit(const char *buf, size_t len, reported *r)
{
	const char *p = buf, *end = buf + len;
	while ((p = memmem(p, (size_t)(end - p), "<testcase", 9))) {
		const char *te = memchr(p, '>', (size_t)(end - p));
		if (!te)
			break;
		const char *cn = NULL, *nm = NULL;
		size_t cl = xml_attr(p + 9, te, "classname", &cn), nl = xml_attr(p + 9, te, "name", &nm);
		const char *body_end = te;
		if (te[-1] != '/') {
			body_end = memmem(te, (size_t)(end - te), "</testcase>", 11);
			if (!body_end)
				body_end = end;
		}
		const char *status = "pass";
		size_t bl = (size_t)(body_end - te);
		if (memmem(te, bl, "<failure", 8))
			status = "fail";
		else if (memmem(te, bl, "<error", 6))
			status = "error";
		else if (memmem(te, bl, "<skipped", 8))
			status = "skipped";
		char id[384];
		int n = snprintf(id, sizeof id, "%.*s%s%.*s", (int)cl, cn ? cn : "", cl ? "." : "", (int)nl, nm ? nm : "");
		if (n > 0 && (size_t)n < sizeof id)
			report_add(r, id, (size_t)n, status);
		p = body_end;
	}
}

/* ids compared as SWE-bench's and JUnit's spellings of one test: "tests/test_a.py::T::t" and
 * "tests.test_a.T.t" are the same */
static void norm_id(const char *in, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = in; *p && o + 1 < len;) {
		if (p[0] == ':' && p[1] == ':') {
			out[o++] = '.';
			p += 2;
		} else if (!strncmp(p, ".py", 3) && (p[3] == ':' || p[3] == 0)) {
			p += 3;
		} else {
			out[o++] = *p == '/' ? '.' : *p;
			p++;
		}
	}
	out[o] = 0;
}

static const pd_ep_test *find_reported(const reported *r, const char *id)
{
	char want[512], got[512];
	norm_id(id, want, sizeof want);
	const pd_ep_test *found = NULL;
	for (size_t i = 0; i < r->n; i++) {
		norm_id(r->t[i].id, got, sizeof got);
		if (!strcmp(want, got))
			found = &r->t[i]; /* the last report of it */
	}
	return found;
}

static void output_text(const pd_result *res, reported *rep, void (*parse)(const char *, size_t, reported *))
{
	if (res->out.head_len)
		parse(res->out.head, res->out.head_len, rep);
	if (res->out.tail_len)
		parse(res->out.tail, res->out.tail_len, rep);
}

void pd_episode_grade(const pd_episode *ep, const pd_result *res, const char *report, size_t report_len,
		      pd_ep_test **tests, size_t *ntests, pd_level *output, double *score, char *why, size_t why_len)
{
	reported rep = {0};
	*tests = NULL;
	*ntests = 0;
	*score = 0;
	*output = PD_LV_FAIL;
	why[0] = 0;
	if (ep->report == PD_EP_EXIT_CODE) {
		bool ok = res->status == PD_OK && res->exit_code == 0;
		report_add(&rep, "command", 7, ok ? "pass" : "fail");
		if (!ok)
			snprintf(why, why_len, "the command ended %s (exit code %d)", pd_status_name(res->status), res->exit_code);
	} else if (ep->report == PD_EP_PYTEST) {
		output_text(res, &rep, parse_pytest);
	} else if (report) {
		parse_junit(report, report_len, &rep);
	}
	if (!ep->nf2p && !ep->np2p) {
		/* every reported test counts (a skipped one neither passes nor fails) */
		size_t counted = 0, passed = 0;
		for (size_t i = 0; i < rep.n; i++) {
			counted += strcmp(rep.t[i].status, "skipped") != 0;
			passed += !strcmp(rep.t[i].status, "pass");
		}
		*tests = rep.t;
		*ntests = rep.n < EP_TESTS_MAX ? rep.n : EP_TESTS_MAX;
		if (!counted) {
			if (!why[0])
				snprintf(why, why_len, "no test was reported (%s)",
					 ep->report == PD_EP_JUNIT && !report ? "the JUnit file could not be read" : "the report is empty");
			return;
		}
		*score = (double)passed / (double)counted;
		*output = passed == counted ? PD_LV_PASS : passed ? PD_LV_PARTIAL : PD_LV_FAIL;
		if (passed < counted && !why[0])
			snprintf(why, why_len, "%zu of %zu tests failed", counted - passed, counted);
		return;
	}
	/* the listed tests, in the problem's order: fail_to_pass then pass_to_pass */
	pd_ep_test *out = calloc(ep->nf2p + ep->np2p + 1, sizeof *out);
	size_t f2p_ok = 0, p2p_bad = 0;
	for (size_t g = 0; out && g < 2; g++) {
		char **ids = g ? ep->pass_to_pass : ep->fail_to_pass;
		size_t n = g ? ep->np2p : ep->nf2p;
		for (size_t i = 0; i < n; i++) {
			pd_ep_test *t = &out[(*ntests)++];
			const pd_ep_test *r = find_reported(&rep, ids[i]);
			snprintf(t->id, sizeof t->id, "%s", ids[i]);
			t->status = r ? r->status : "missing";
			t->group = g ? "pass_to_pass" : "fail_to_pass";
			bool pass = !strcmp(t->status, "pass");
			if (!g)
				f2p_ok += pass;
			else if (!pass && !p2p_bad++)
				snprintf(why, why_len, "pass_to_pass %s: %s", ids[i], t->status);
		}
	}
	free(rep.t);
	*tests = out;
	if (!out)
		return;
	if (p2p_bad)
		return; /* a regression fails the output, whatever was fixed */
	*score = ep->nf2p ? (double)f2p_ok / (double)ep->nf2p : 1.0;
	*output = *score >= 1.0 ? PD_LV_PASS : *score > 0 ? PD_LV_PARTIAL : PD_LV_FAIL;
	if (*output != PD_LV_PASS && !why[0])
		snprintf(why, why_len, "%zu of %zu fail_to_pass tests pass", f2p_ok, ep->nf2p);
}
