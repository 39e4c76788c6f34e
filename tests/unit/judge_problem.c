/* Problems: the inline form, in_outs (stdin and call-based), the on-disk package, and the errors a
 * bad problem gets at load (naming the file and the field); the digest that keys the cache. */
#define _GNU_SOURCE
#include "judge/judge.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pd_problem *parse(const char *json, char *msg)
{
	json_error_t je;
	json_t *o = json_loads(json, 0, &je);
	if (!o) {
		snprintf(msg, 512, "bad test JSON: %s", je.text);
		return NULL;
	}
	pd_err e = {0};
	pd_problem *p = pd_problem_from_json(o, NULL, "inline", &e);
	snprintf(msg, 512, "%s", e.msg);
	json_decref(o);
	return p;
}

static bool refused(const char *json, const char *needle, char *msg)
{
	pd_problem *p = parse(json, msg);
	pd_problem_free(p);
	return !p && strstr(msg, needle);
}

static void test_inline(void)
{
	char m[512];
	pd_problem *p = parse("{\"tests\":[{\"input\":\"1 2\\n\",\"output\":\"3\\n\"},{\"input\":\"\",\"output\":\"0\","
			      "\"weight\":3}],\"checker\":{\"mode\":\"tokens\",\"case_insensitive\":true},"
			      "\"limits\":{\"time\":0.5,\"memory\":\"64M\",\"output\":1000}}",
			      m);
	if (!ok(p != NULL, "an inline problem: %s", m))
		return;
	is_int(p->ntests, 2, "two tests");
	ok(p->tests[0].input_len == 4 && !strcmp(p->tests[0].answer, "3\n"), "test 1's input and answer");
	ok(p->tests[1].weight == 3 && p->tests[0].weight == 1, "weights (default 1)");
	ok(p->checker.mode == PD_CHK_TOKENS && p->checker.case_insensitive, "the checker's mode and flag");
	ok(p->time_ms == 500 && p->memory_bytes == (64u << 20) && p->output_bytes == 1000, "limits");
	is_str(p->id, "inline", "an inline problem's id");
	is_int(strlen(p->digest_hex), 64, "a digest");
	pd_problem_free(p);

	p = parse("{\"tests\":[{\"input\":\"x\",\"output\":\"y\"}]}", m);
	ok(p && p->checker.mode == PD_CHK_LINES && p->time_ms == 2000, "defaults: lines, 2 s");
	pd_problem_free(p);
	p = parse("{\"tests\":[{\"input\":\"x\",\"output\":\"1.5\"}],\"checker\":{\"mode\":\"numeric\","
		  "\"tolerance\":\"rel\",\"rel_tol\":1e-4}}",
		  m);
	ok(p && p->checker.tolerance == PD_TOL_REL && p->checker.rel_tol == 1e-4, "numeric tolerances: %s", m);
	pd_problem_free(p);
	p = parse("{\"tests\":[{\"input\":\"x\",\"output\":\"y\"}],\"checker\":\"yesno\"}", m);
	ok(p && p->checker.mode == PD_CHK_YESNO, "a checker given by its mode's name");
	pd_problem_free(p);
}

static void test_in_outs(void)
{
	char m[512];
	pd_problem *p = parse("{\"in_outs\":{\"inputs\":[\"1\\n\",\"2\\n\"],\"outputs\":[\"1\\n\",\"4\\n\"]}}", m);
	ok(p && p->ntests == 2 && !p->call_based && p->checker.mode == PD_CHK_LINES,
	   "in_outs without fn_name: stdin-style, lines: %s", m);
	pd_problem_free(p);
	p = parse("{\"in_outs\":{\"inputs\":[[1,2],\"3\\n[4,5]\"],\"outputs\":[3,\"[7, 8]\"],\"fn_name\":\"f\"}}", m);
	if (ok(p && p->call_based && p->checker.mode == PD_CHK_JSON_VALUE, "in_outs with fn_name: call-based, json_value: %s", m)) {
		is_str(p->tests[0].input, "[1,2]", "a list of arguments");
		is_str(p->tests[1].input, "[3,[4,5]]", "LiveCodeBench's one JSON value per line");
		is_str(p->tests[1].answer, "[7,8]", "an expected value given as JSON text is that value");
		is_str(p->fn_name, "f", "fn_name");
	}
	pd_problem_free(p);
	p = parse("{\"in_outs\":\"{\\\"inputs\\\":[\\\"a\\\"],\\\"outputs\\\":[\\\"b\\\"]}\"}", m);
	ok(p && p->ntests == 1, "in_outs carried as a JSON string (verl's ground_truth): %s", m);
	pd_problem_free(p);
	ok(refused("{\"in_outs\":{\"inputs\":[\"1\"],\"outputs\":[]}}", "in_outs", m), "unequal lists: %s", m);
	ok(refused("{\"in_outs\":{\"inputs\":[\"1\"],\"outputs\":[\"1\"],\"fn_name\":\"a b\"}}", "fn_name", m),
	   "fn_name must be an identifier: %s", m);
	ok(refused("{\"in_outs\":{\"inputs\":[1],\"outputs\":[\"1\"]}}", "in_outs[0]", m),
	   "a stdin-style input must be a string: %s", m);
	ok(refused("{\"in_outs\":{\"inputs\":[\"{bad\"],\"outputs\":[1],\"fn_name\":\"f\"}}", "in_outs[0]", m),
	   "a call-based input line that is not JSON: %s", m);
	ok(refused("{\"in_outs\":\"{nope\"}", "in_outs", m), "in_outs as a string that is not JSON: %s", m);
}

static void test_refusals(void)
{
	char m[512];
	ok(refused("{\"tests\":[]}", "no tests", m), "no tests: %s", m);
	ok(refused("{}", "no tests", m), "nothing at all: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\"}]}", "tests[0]", m) && strstr(m, "output"), "a test without output: %s", m);
	ok(refused("{\"tests\":[{\"input\":1,\"output\":\"1\"}]}", "tests[0]", m), "a non-string input: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\",\"weight\":0}]}", "weight", m), "a zero weight: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\",\"colour\":1}]}", "colour", m),
	   "an unknown test field: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"colour\":1}", "colour", m),
	   "an unknown problem field: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"checker\":{\"mode\":\"fuzzy\"}}", "checker", m) &&
		   strstr(m, "mode"),
	   "an unknown checker mode: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"checker\":{\"mode\":\"numeric\",\"abs_tol\":-1}}",
		   "abs_tol", m),
	   "a negative tolerance: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"checker\":{\"mode\":\"numeric\",\"tolerance\":\"x\"}}",
		   "tolerance", m),
	   "an unknown tolerance kind: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"limits\":{\"time\":0}}", "limits: time", m),
	   "a zero time limit: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"limits\":{\"memory\":\"1K\"}}", "memory", m),
	   "a memory limit under 4 MiB: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"limits\":{\"speed\":1}}", "speed", m),
	   "an unknown limit: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"checker\":{\"mode\":\"checker\"}}", "code", m),
	   "an inline checker program without code: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"checker\":{\"mode\":\"checker\",\"code\":\"x\","
		   "\"language\":\"cobol\"}}",
		   "cobol", m),
	   "a checker in an unknown language: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"checker\":{\"mode\":\"tokens\",\"code\":\"x\"}}",
		   "only mode", m),
	   "a program for a built-in mode: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"id\":\"a/b\"}", "id", m), "an id with '/': %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"in_outs\":{\"inputs\":[],\"outputs\":[]}}", "not both", m),
	   "tests and in_outs at once: %s", m);
	ok(refused("[1]", "JSON object", m), "a problem that is not an object: %s", m);
}

static char dir[] = "/tmp/paddock-judge-problem-XXXXXX";

static void put(const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	char d[512];
	snprintf(d, sizeof d, "%s", p);
	*strrchr(d, '/') = 0;
	mkdir(d, 0755);
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
}

static void test_dir(void)
{
	if (!ok(mkdtemp(dir) != NULL, "a temporary directory"))
		return;
	char sub[600];
	put("sum/problem.json", "{\"id\":\"sum\",\"version\":2,\"limits\":{\"time\":1},\"weights\":{\"002\":2}}");
	put("sum/tests/001.in", "1 2\n");
	put("sum/tests/001.ans", "3\n");
	put("sum/tests/002.in", "5 5\n");
	put("sum/tests/002.ans", "10\n");
	snprintf(sub, sizeof sub, "%s/sum", dir);
	pd_err e = {0};
	pd_problem *p = pd_problem_load(sub, &e);
	if (ok(p != NULL, "a problem directory loads: %s", e.msg)) {
		ok(p->ntests == 2 && !strcmp(p->tests[1].name, "002") && p->tests[1].weight == 2,
		   "its tests in name order, with weights");
		is_str(p->version, "2", "a numeric version reads as text");
		unsigned char d1[32];
		memcpy(d1, p->digest, 32);
		pd_problem_free(p);
		put("sum/tests/002.ans", "11\n");
		p = pd_problem_load(sub, &e);
		ok(p && memcmp(d1, p->digest, 32), "an answer changed on disk changes the digest");
		pd_problem_free(p);
	}
	put("chk/problem.json", "{\"id\":\"chk\",\"checker\":{\"mode\":\"checker\"}}");
	put("chk/tests/1.in", "x");
	put("chk/tests/1.ans", "y");
	put("chk/checker.py", "import sys\nsys.exit(0)\n");
	snprintf(sub, sizeof sub, "%s/chk", dir);
	p = pd_problem_load(sub, &e);
	ok(p && p->checker_prog.source && !strcmp(p->checker_prog.language, "python"),
	   "checker.py is found and its language read from the extension: %s", p ? "" : e.msg);
	pd_problem_free(p);

	pd_problem_set set;
	put("zz/problem.json", "{\"id\":\"sum\",\"version\":\"1\"}");
	put("zz/tests/a.in", "1 1");
	put("zz/tests/a.ans", "2");
	ok(pd_problems_load_dir(dir, &set, &e) == 0 && set.n == 3, "a directory of problems: %s", e.msg);
	pd_problem *latest = pd_problems_find(&set, "sum", NULL), *v1 = pd_problems_find(&set, "sum", "1");
	ok(latest && !strcmp(latest->version, "2") && v1 && !strcmp(v1->version, "1"),
	   "find by id takes the highest version; by id@version that one");
	ok(!pd_problems_find(&set, "nope", NULL), "an unknown problem");
	pd_problems_free(&set);

	put("zz/problem.json", "{\"id\":\"sum\",\"version\":\"2\"}");
	ok(pd_problems_load_dir(dir, &set, &e) < 0 && strstr(e.msg, "sum@2"), "a duplicate id@version: %s", e.msg);

	put("bad/problem.json", "{\"id\":\"bad\"}");
	snprintf(sub, sizeof sub, "%s/bad/tests", dir);
	mkdir(sub, 0755);
	put("bad/tests/1.in", "1");
	snprintf(sub, sizeof sub, "%s/bad", dir);
	p = pd_problem_load(sub, &e);
	ok(!p && strstr(e.msg, "1.in has no answer"), "a test without its answer: %s", e.msg);
	put("bad/problem.json", "{\"id\":\"bad\", \"limits\": {\"time\": \"fast\"}}");
	p = pd_problem_load(sub, &e);
	ok(!p && strstr(e.msg, "bad/problem.json") && strstr(e.msg, "limits: time"),
	   "an error names the file and the field: %s", e.msg);
	put("bad/problem.json", "{\"id\": ");
	p = pd_problem_load(sub, &e);
	ok(!p && strstr(e.msg, "problem.json: line 1"), "a JSON syntax error gives the file and position: %s", e.msg);
	put("bad/problem.json", "{\"version\":\"1\"}");
	p = pd_problem_load(sub, &e);
	ok(!p && strstr(e.msg, "id: required"), "a problem on disk needs an id: %s", e.msg);
	put("bad/problem.json", "{\"id\":\"bad\",\"checker\":{\"mode\":\"checker\"}}");
	put("bad/tests/1.ans", "1");
	p = pd_problem_load(sub, &e);
	ok(!p && strstr(e.msg, "checker") && strstr(e.msg, "source"), "a checker mode without a checker file: %s", e.msg);
	put("bad/problem.json", "{\"id\":\"bad\",\"checker\":{\"mode\":\"checker\",\"source\":\"../../etc/passwd\"}}");
	p = pd_problem_load(sub, &e);
	ok(!p && strstr(e.msg, "source"), "a checker source outside the problem: %s", e.msg);
	put("bad/problem.json", "{\"id\":\"bad\",\"weights\":{\"9\":2}}");
	p = pd_problem_load(sub, &e);
	ok(!p && strstr(e.msg, "weights.9"), "a weight for a test that does not exist: %s", e.msg);
	put("bad/problem.json", "{\"id\":\"bad\"}");
	/* an answer of 1 GiB (sparse: no disk used): refused at load, naming the file, not read */
	char big[700];
	snprintf(big, sizeof big, "%s/bad/tests/1.ans", dir);
	ok(truncate(big, 1ll << 30) == 0, "a 1 GiB answer file");
	p = pd_problem_load(sub, &e);
	ok(!p && strstr(e.msg, "1.ans"), "an answer of 1 GiB: refused at load, naming the file: %s", e.msg);
	put("bad/tests/1.ans", "1");
	/* a problem directory changed while loaded: the loaded problem keeps what it read */
	p = pd_problem_load(sub, &e);
	if (ok(p != NULL, "the problem loads again: %s", e.msg)) {
		put("bad/tests/1.ans", "changed");
		put("bad/tests/1.in", "changed");
		ok(p->tests[0].answer_len == 1 && !memcmp(p->tests[0].answer, "1", 1) && p->tests[0].input_len == 1 &&
			   !memcmp(p->tests[0].input, "1", 1),
		   "files changed after the load do not change the loaded problem");
		pd_problem_free(p);
	}
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ok(system(cmd) == 0, "clean up");
}

static void test_digest(void)
{
	char m[512];
	pd_problem *a = parse("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}]}", m);
	pd_problem *b = parse("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"limits\":{\"time\":3}}", m);
	pd_problem *c = parse("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"checker\":\"tokens\"}", m);
	pd_problem *d = parse("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}]}", m);
	pd_problem *f = parse("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"one_sandbox\":true}", m);
	ok(a && b && c && d && f, "five problems");
	if (a && b && c && d && f) {
		ok(f->one_sandbox && !a->one_sandbox, "one_sandbox is read (default false)");
		ok(memcmp(a->digest, f->digest, 32) != 0, "one_sandbox changes the digest (a cached verdict is not shared)");
		ok(memcmp(a->digest, b->digest, 32) != 0, "a limit changes the digest");
		ok(memcmp(a->digest, c->digest, 32) != 0, "the checker changes the digest");
		ok(memcmp(a->digest, d->digest, 32) == 0, "the same problem, the same digest");
	}
	pd_problem_free(a);
	pd_problem_free(b);
	pd_problem_free(c);
	pd_problem_free(d);
	pd_problem_free(f);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"one_sandbox\":1}", "one_sandbox", m),
	   "one_sandbox must be a boolean: %s", m);
	/* found by fuzz_judge_req: the policy parser's EINVAL carried strerror's words into the 400 */
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"audit\":{\"bogus\":1}}", "audit.bogus", m) &&
		   !strstr(m, "Invalid argument"),
	   "a bad audit policy: the field and the reason, no strerror text: %s", m);
	/* a decoy whose wrong answer is a test's expected output would flag every correct submission:
	 * refused at load, naming the decoy and the test (issue 39) */
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"7\"},{\"input\":\"2\",\"output\":\"41\\n\"}],"
		   "\"audit\":{\"traps\":[{\"path\":\"/work/expected.txt\",\"content\":\"x\",\"answer\":\"41\"}]}}",
		   "/work/expected.txt", m) &&
		   strstr(m, "test 2"),
	   "a decoy whose answer is a test's expected output: refused, naming the decoy and the test: %s", m);
	ok(refused("{\"tests\":[{\"input\":\"1\",\"output\":\"41\"}],"
		   "\"audit\":{\"traps\":[{\"path\":\"/work/expected.txt\",\"content\":\"41\\n\"}]}}",
		   "/work/expected.txt", m),
	   "a decoy without an answer: its content is the answer, refused the same: %s", m);
	pd_problem *g = parse("{\"tests\":[{\"input\":\"1\",\"output\":\"7\"}],"
			      "\"audit\":{\"traps\":[{\"path\":\"/work/expected.txt\",\"content\":\"41\"}]}}", m);
	ok(g != NULL, "a decoy with another answer loads: %s", g ? "ok" : m);
	pd_problem_free(g);
	/* a long unknown key of two-byte characters: quoted cut at a character boundary (UTF-8 stays) */
	char big[512] = "{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"audit\":{\"H";
	for (int i = 0; i < 40; i++)
		strcat(big, "\u00e9");
	strcat(big, "\":1}}");
	json_t *js = NULL;
	ok(refused(big, "unknown field", m) && (js = json_string(m)) != NULL,
	   "an unknown policy key cut at 64 bytes stays UTF-8 (a 400's JSON needs it): %s", m);
	json_decref(js);
	/* FIPS 180-4 test vector */
	pd_sha256 h;
	unsigned char out[32];
	char hex[65];
	pd_sha256_init(&h);
	pd_sha256_add(&h, "abc", 3);
	pd_sha256_end(&h, out);
	pd_sha256_hex(out, hex);
	is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256(\"abc\")");
	pd_sha256_init(&h);
	for (int i = 0; i < 1000; i++)
		pd_sha256_add(&h, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			      1000);
	pd_sha256_end(&h, out);
	pd_sha256_hex(out, hex);
	is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "sha256 of a million a's");
}

int main(void)
{
	plan(78);
	test_inline();
	test_in_outs();
	test_refusals();
	test_dir();
	test_digest();
	return done();
}
