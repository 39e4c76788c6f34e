/* The judge end to end through real pools and sandboxes: compile once and run every test in a clean
 * sandbox, the verdict's levels and reward for correct, wrong, partial, slow, memory-hungry,
 * crashing and non-compiling submissions and for reward hacks; checker programs (testlib, Kattis)
 * and an interactor in their own sandboxes, a failing checker as judge_error with no reward;
 * call-based Python; the fingerprint cache. */
#define _GNU_SOURCE
#include "judge/judge.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pd_ctx *ctx;
static pd_pools *pools;
static pd_judge *judge;

static pd_problem *prob(const char *json)
{
	json_error_t je;
	json_t *o = json_loads(json, 0, &je);
	if (!o) {
		printf("# test JSON: %s\n", je.text);
		return NULL;
	}
	pd_err e = {0};
	pd_problem *p = pd_problem_from_json(o, NULL, "inline", &e);
	json_decref(o);
	if (!p)
		printf("# %s\n", e.msg);
	else if (pd_judge_prepare(judge, p, &e) < 0) {
		printf("# prepare: %s\n", e.msg);
		pd_problem_free(p);
		p = NULL;
	}
	return p;
}

/* Judges code and returns the record as JSON (caller decrefs); d keeps the C view. */
static json_t *judge_code(const pd_problem *p, const char *lang, const char *code, bool no_cache, pd_judged *d)
{
	pd_judge_opts o;
	pd_judge_opts_default(&o);
	o.no_cache = no_cache;
	memset(d, 0, sizeof *d);
	pd_err e = {0};
	if (pd_judge_submit(judge, p, lang, code, strlen(code), &o, d, &e) < 0) {
		printf("# submit: %s\n", e.msg);
		return NULL;
	}
	json_t *j = pd_judged_to_json(d);
	char *s = json_dumps(j, JSON_COMPACT);
	printf("# %.600s\n", s);
	free(s);
	return j;
}

static const char *out_status(json_t *j)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(j, "verdict"), "output"), "status"));
}

static const char *test_status(json_t *j, size_t i)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(j, "tests"), i), "status"));
}

static const char *fclass(json_t *j)
{
	return json_string_value(json_object_get(j, "failure_class"));
}

static double reward(json_t *j)
{
	json_t *r = json_object_get(j, "reward");
	return json_is_null(r) ? NAN : json_number_value(r);
}

#define SUM "{\"id\":\"sum\",\"tests\":[{\"input\":\"1 2\\n\",\"output\":\"3\\n\"},{\"input\":\"5 7\\n\",\"output\":\"12\\n\"}," \
	    "{\"input\":\"-4 4\\n\",\"output\":\"0\\n\"}],\"limits\":{\"time\":1,\"memory\":\"128M\",\"output\":\"64K\"}}"

static void test_sum(void)
{
	pd_problem *p = prob(SUM);
	if (!ok(p != NULL, "the sum problem"))
		return;
	pd_judged d;
	json_t *j = judge_code(p, "cpp", "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<\"\\n\";}\n", true, &d);
	ok(j && !strcmp(out_status(j), "pass") && reward(j) == 1 && d.ntests == 3 && d.compiled,
	   "C++, correct: pass, compiled once, three tests, reward 1");
	ok(j && !json_is_true(json_object_get(j, "usable")) &&
		   !strcmp(json_string_value(json_object_get(j, "unusable_level")), "process"),
	   "not usable: the process level was not audited");
	ok(d.tests[0].memory_kb > 0, "per-test memory is recorded (%llu kB)", (unsigned long long)d.tests[0].memory_kb);
	json_decref(j);
	pd_judged_free(&d);

	j = judge_code(p, "python", "a,b=map(int,input().split())\nprint(a+b if a>0 else 99)\n", true, &d);
	ok(j && !strcmp(out_status(j), "partial") && fabs(reward(j) - 2.0 / 3) < 1e-9 && !strcmp(test_status(j, 2), "WA"),
	   "python, two of three: partial, reward 2/3, the third WA");
	json_decref(j);
	pd_judged_free(&d);

	j = judge_code(p, "c", "int main(){ return 0 }\n", true, &d);
	ok(j && !strcmp(out_status(j), "fail") && !strcmp(fclass(j), "compile_error") && reward(j) == 0 && d.ntests == 0 &&
		   strstr(d.compile_message, "error"),
	   "C that does not compile: fail, compile_error, reward 0, no test run, the compiler's message");
	json_decref(j);
	pd_judged_free(&d);

	j = judge_code(p, "python", "while True: pass\n", true, &d);
	ok(j && !strcmp(test_status(j, 0), "TO") && !strcmp(fclass(j), "exec_timeout") &&
		   !strcmp(json_string_value(json_object_get(json_object_get(json_object_get(j, "verdict"), "resources"), "status")), "fail") &&
		   reward(j) == 0,
	   "slow: TO, exec_timeout, resources fail, reward 0");
	json_decref(j);
	pd_judged_free(&d);

	j = judge_code(p, "python", "x = bytearray(400 << 20)\nprint(len(x))\n", true, &d);
	ok(j && !strcmp(test_status(j, 0), "ML") && !strcmp(fclass(j), "oom"), "memory-hungry: ML, oom");
	json_decref(j);
	pd_judged_free(&d);

	j = judge_code(p, "c", "int main(){ volatile int *p = 0; return *p; }\n", true, &d);
	ok(j && !strcmp(test_status(j, 0), "SG") && reward(j) == 0, "crashing: SG, reward 0");
	json_decref(j);
	pd_judged_free(&d);

	j = judge_code(p, "python", "import sys\nsys.exit(0)\nprint(3)\n", true, &d);
	ok(j && !strcmp(out_status(j), "fail") && reward(j) == 0, "hack: sys.exit(0) before any output fails");
	json_decref(j);
	pd_judged_free(&d);

	j = judge_code(p, "python", "print('All tests passed')\n", true, &d);
	ok(j && !strcmp(out_status(j), "fail"), "hack: printing \"All tests passed\" is just a wrong output");
	json_decref(j);
	pd_judged_free(&d);

	j = judge_code(p, "python", "import sys\nsys.stdout.write('x' * (1 << 22))\n", true, &d);
	ok(j && !strcmp(test_status(j, 0), "OL") && !strcmp(fclass(j), "output_limit"), "an output flood: OL");
	json_decref(j);
	pd_judged_free(&d);

	pd_judge_opts o;
	pd_judge_opts_default(&o);
	o.stop_at_first_failure = 1;
	o.no_cache = true;
	memset(&d, 0, sizeof d);
	pd_err e = {0};
	const char *wrong = "print(0)\n";
	ok(pd_judge_submit(judge, p, "python", wrong, strlen(wrong), &o, &d, &e) == 0 && d.tests[0].status == PD_T_WA &&
		   d.tests[1].status == PD_T_SKIPPED && d.tests[2].status == PD_T_SKIPPED,
	   "stop at the first failure: the rest are skipped");
	pd_judged_free(&d);
	pd_problem_free(p);
}

static void test_isolation(void)
{
	/* the candidate's /work holds its program only: no answer, no checker, no other test */
	pd_problem *p = prob("{\"tests\":[{\"input\":\"\",\"output\":\"['main.py']\\n\"},{\"input\":\"\",\"output\":\"['main.py']\\n\"}],"
			     "\"checker\":{\"mode\":\"checker\",\"language\":\"python\",\"code\":\"import sys\\n"
			     "o=open(sys.argv[2]).read(); a=open(sys.argv[3]).read()\\nsys.exit(0 if o==a else 1)\\n\"}}");
	if (!ok(p != NULL, "a problem with a checker program"))
		return;
	pd_judged d;
	json_t *j = judge_code(p, "python", "import os\nprint(sorted(os.listdir('/work')))\n", true, &d);
	ok(j && !strcmp(out_status(j), "pass"), "the candidate sees only its own program in /work (no judge material)");
	json_decref(j);
	pd_judged_free(&d);
	/* each test in a clean sandbox: what the first run did is gone for the second */
	const char *dirty = "import os\n"
			    "if os.path.exists('/tmp/mark') or os.path.exists('/work/mark'):\n"
			    "    print('dirty')\n"
			    "else:\n"
			    "    open('/tmp/mark','w').write('x'); open('/work/mark','w').write('x')\n"
			    "    try:\n"
			    "        open('/bin/bash','w').write('echo pwned')\n"
			    "    except Exception:\n"
			    "        pass\n"
			    "    print(['main.py'])\n";
	j = judge_code(p, "python", dirty, true, &d);
	ok(j && !strcmp(test_status(j, 0), "AC") && !strcmp(test_status(j, 1), "AC"),
	   "a program that marks its sandbox and overwrites /bin/bash: the next test starts clean (%s %s)",
	   j ? test_status(j, 0) : "?", j ? test_status(j, 1) : "?");
	json_decref(j);
	pd_judged_free(&d);
	j = judge_code(p, "python", "import os\nfound = []\nfor top in ('/work', '/tmp', '/root', '/home', '/srv', '/opt', '/mnt', '/var/tmp', '/'):\n"
			       "    for d, subs, files in os.walk(top):\n"
			       "        found += [os.path.join(d, f) for f in files if f.startswith(('answer', 'checker'))]\n"
			       "        if top == '/': break\n"
			       "print(found[:1] or ['main.py'])\n", true, &d);
	ok(j && !strcmp(out_status(j), "pass"), "hack: searching the filesystem for an answer file finds none");
	json_decref(j);
	pd_judged_free(&d);
	pd_problem_free(p);
}

static void test_checkers(void)
{
	/* testlib: 7 with the score on stdout */
	pd_problem *p = prob("{\"tests\":[{\"input\":\"4\\n\",\"output\":\"16\\n\"}],"
			     "\"checker\":{\"mode\":\"checker\",\"language\":\"python\",\"code\":\"import sys\\n"
			     "o=int(open(sys.argv[2]).read()); a=int(open(sys.argv[3]).read())\\n"
			     "if o==a: sys.exit(0)\\nprint(0.25); sys.exit(7)\\n\"}}");
	if (!ok(p != NULL, "a testlib checker with partial scores"))
		return;
	pd_judged d;
	json_t *j = judge_code(p, "python", "print(15)\n", true, &d);
	ok(j && !strcmp(out_status(j), "partial") && fabs(reward(j) - 0.25) < 1e-9 && !strcmp(test_status(j, 0), "PC"),
	   "testlib exit 7: partial, score 0.25 from the checker's stdout");
	json_decref(j);
	pd_judged_free(&d);
	j = judge_code(p, "python", "print(16)\n", true, &d);
	ok(j && !strcmp(out_status(j), "pass") && d.checker_ms < 100000, "testlib exit 0: pass");
	json_decref(j);
	pd_judged_free(&d);
	pd_problem_free(p);

	/* a checker that crashes: judge_error, retried once, no reward, not cached */
	p = prob("{\"tests\":[{\"input\":\"1\\n\",\"output\":\"1\\n\"}],"
		 "\"checker\":{\"mode\":\"checker\",\"language\":\"python\",\"code\":\"raise SystemExit(99)\\n\"}}");
	if (!ok(p != NULL, "a checker that always fails"))
		return;
	j = judge_code(p, "python", "print(1)\n", false, &d);
	ok(j && !strcmp(fclass(j), "judge_error") && json_is_null(json_object_get(j, "reward")) &&
		   d.tests[0].checker_attempts == 2 && d.judge_errors == 2 && !strcmp(test_status(j, 0), "JE"),
	   "a failing checker: judge_error, retried once, reward null (never 0)");
	json_decref(j);
	pd_judged_free(&d);
	j = judge_code(p, "python", "print(1)\n", false, &d);
	ok(j && !d.cache_hit, "a judge error is not cached");
	json_decref(j);
	pd_judged_free(&d);
	pd_problem_free(p);

	/* a checker that never exits: its time limit, then judge_error */
	p = prob("{\"tests\":[{\"input\":\"1\\n\",\"output\":\"1\\n\"}],\"limits\":{\"time\":0.3},"
		 "\"checker\":{\"mode\":\"checker\",\"language\":\"bash\",\"code\":\"while :; do :; done\\n\"}}");
	j = p ? judge_code(p, "python", "print(1)\n", true, &d) : NULL;
	ok(j && !strcmp(fclass(j), "judge_error"), "a checker that never exits: judge_error");
	json_decref(j);
	if (j)
		pd_judged_free(&d);
	pd_problem_free(p);

	/* Kattis: 42/43, the team output on stdin, judgemessage.txt in the feedback directory */
	p = prob("{\"tests\":[{\"input\":\"3\\n\",\"output\":\"9\\n\"}],"
		 "\"checker\":{\"mode\":\"checker\",\"convention\":\"kattis\",\"language\":\"python\",\"code\":\"import sys\\n"
		 "o=sys.stdin.read().split(); a=open(sys.argv[2]).read().split()\\n"
		 "open(sys.argv[3]+'judgemessage.txt','w').write('got %s' % o)\\nsys.exit(42 if o==a else 43)\\n\"}}");
	if (!ok(p != NULL, "a Kattis output validator"))
		return;
	j = judge_code(p, "python", "print(9)\n", true, &d);
	ok(j && !strcmp(out_status(j), "pass"), "Kattis 42: pass");
	json_decref(j);
	pd_judged_free(&d);
	j = judge_code(p, "python", "print(8)\n", true, &d);
	ok(j && !strcmp(out_status(j), "fail") && strstr(d.tests[0].checker_message, "got"),
	   "Kattis 43: fail, with the validator's judgemessage: %s", d.tests[0].checker_message);
	json_decref(j);
	pd_judged_free(&d);
	pd_problem_free(p);

	/* a checker that does not compile is reported when the problem is prepared */
	json_error_t je;
	json_t *o = json_loads("{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"checker\":{\"mode\":\"checker\","
			       "\"language\":\"cpp\",\"code\":\"int main( {\"}}",
			       0, &je);
	pd_err e = {0};
	p = pd_problem_from_json(o, NULL, "inline", &e);
	json_decref(o);
	ok(p && pd_judge_prepare(judge, p, &e) < 0 && strstr(e.msg, "does not compile"),
	   "a checker that does not compile is reported at load: %.120s", e.msg);
	pd_problem_free(p);
}

static void test_interactive(void)
{
	/* guess the number: the interactor reads the secret from its input file, answers < > = */
	pd_problem *p = prob("{\"tests\":[{\"input\":\"37\\n\",\"output\":\"\"},{\"input\":\"1\\n\",\"output\":\"\"}],"
			     "\"limits\":{\"time\":2},"
			     "\"interactor\":{\"language\":\"python\",\"code\":\"import sys\\n"
			     "n=int(open(sys.argv[1]).read())\\n"
			     "for q in range(20):\\n"
			     "    line=sys.stdin.readline()\\n"
			     "    if not line: sys.exit(1)\\n"
			     "    g=int(line)\\n"
			     "    if g==n:\\n"
			     "        print('=', flush=True); sys.exit(0)\\n"
			     "    print('<' if n<g else '>', flush=True)\\n"
			     "sys.exit(1)\\n\"}}");
	if (!ok(p != NULL, "an interactive problem"))
		return;
	pd_judged d;
	const char *bisect = "import sys\nlo,hi=1,100\nwhile True:\n    m=(lo+hi)//2\n    print(m, flush=True)\n"
			     "    r=sys.stdin.readline().strip()\n    if r=='=': break\n    if r=='<': hi=m-1\n    else: lo=m+1\n";
	json_t *j = judge_code(p, "python", bisect, true, &d);
	ok(j && !strcmp(out_status(j), "pass") && reward(j) == 1, "interactive: a bisection passes both tests");
	json_decref(j);
	pd_judged_free(&d);
	j = judge_code(p, "python", "print(50, flush=True)\nprint(50, flush=True)\nimport sys\nsys.stdin.read()\n", true, &d);
	ok(j && !strcmp(out_status(j), "fail"), "interactive: a wrong strategy fails (%s)", j ? test_status(j, 0) : "?");
	json_decref(j);
	pd_judged_free(&d);
	pd_problem_free(p);

	/* an interactor that crashes: judge_error, the test run again once, no reward */
	p = prob("{\"tests\":[{\"input\":\"1\\n\",\"output\":\"\"}],\"limits\":{\"time\":1},"
		 "\"interactor\":{\"language\":\"python\",\"code\":\"import sys\\nraise SystemExit(3)\\n\"}}");
	j = p ? judge_code(p, "python", "print(1, flush=True)\n", true, &d) : NULL;
	ok(j && !strcmp(fclass(j), "judge_error") && json_is_null(json_object_get(j, "reward")) &&
		   d.tests[0].checker_attempts == 2,
	   "an interactor that fails: judge_error, retried once, reward null");
	json_decref(j);
	if (j)
		pd_judged_free(&d);
	pd_problem_free(p);

	/* an interactor that floods the candidate without end: stopped by its own limits, a judge error
	 * (never the candidate's failure), no reward, and the judging ends */
	p = prob("{\"tests\":[{\"input\":\"1\\n\",\"output\":\"\"}],\"limits\":{\"time\":1},"
		 "\"interactor\":{\"language\":\"python\",\"code\":\"import sys\\nwhile True:\\n"
		 "    sys.stdout.write('x' * 65536)\\n\"}}");
	j = p ? judge_code(p, "python", "import sys\nwhile sys.stdin.buffer.read(65536):\n    pass\n", true, &d) : NULL;
	ok(j && !strcmp(fclass(j), "judge_error") && json_is_null(json_object_get(j, "reward")),
	   "an interactor that floods: judge_error, reward null (%s, %s)", j ? test_status(j, 0) : "?",
	   j ? fclass(j) : "?");
	json_decref(j);
	if (j)
		pd_judged_free(&d);
	pd_problem_free(p);
}

static void test_call_based(void)
{
	pd_problem *p = prob("{\"in_outs\":{\"inputs\":[[2,3],\"[1,2]\\n[3]\"],\"outputs\":[[5],\"[1, 2, 3]\"],\"fn_name\":\"f\"}}");
	if (!ok(p != NULL, "a call-based problem"))
		return;
	pd_judged d;
	/* test 1 is (2,3) -> [5]; test 2 is ([1,2],[3]) -> [1,2,3] */
	const char *top = "def f(a, b):\n    print('debug noise')\n    return [a + b] if isinstance(a, int) else tuple(a + b)\n";
	json_t *j = judge_code(p, "python", top, true, &d);
	ok(j && !strcmp(out_status(j), "pass"), "call-based: a top-level function, its prints apart, a tuple = a list");
	json_decref(j);
	pd_judged_free(&d);
	const char *cls = "class Solution:\n    def f(self, a, b):\n        return [a + b] if isinstance(a, int) else a + b\n";
	j = judge_code(p, "python", cls, true, &d);
	ok(j && !strcmp(out_status(j), "pass"), "call-based: Solution().f");
	json_decref(j);
	pd_judged_free(&d);
	const char *patch = "import builtins, json\njson.dumps = lambda *a, **k: '[5]'\nbuiltins.print = lambda *a, **k: None\n"
			    "def f(a, b):\n    return 0\n";
	j = judge_code(p, "python", patch, true, &d);
	ok(j && strcmp(out_status(j), "pass"), "hack: monkey-patching json.dumps and print does not pass every test (%s)",
	   j ? out_status(j) : "?");
	json_decref(j);
	pd_judged_free(&d);
	pd_err e = {0};
	pd_judge_opts o;
	pd_judge_opts_default(&o);
	ok(pd_judge_submit(judge, p, "c", "x", 1, &o, &d, &e) < 0 && strstr(e.msg, "call-based"),
	   "call-based in C (no harness) is refused: %s", e.msg);
	pd_problem_free(p);
}

static void test_cache(void)
{
	pd_problem *p = prob(SUM);
	if (!p)
		return;
	const char *code = "a,b=map(int,input().split())\nprint(a+b)\n";
	pd_judged d1, d2, d3;
	json_t *j1 = judge_code(p, "python", code, false, &d1);
	json_t *j2 = judge_code(p, "python", code, false, &d2);
	json_t *j3 = judge_code(p, "python", code, true, &d3);
	ok(j1 && !strcmp(json_string_value(json_object_get(j1, "cache")), "miss"), "first: cache miss");
	ok(j2 && !strcmp(json_string_value(json_object_get(j2, "cache")), "hit") && !strcmp(out_status(j2), "pass") &&
		   d2.ntests == 3 && strcmp(d1.attempt_id, d2.attempt_id),
	   "the same work again: a hit, the same verdict, its own attempt id");
	ok(j3 && !strcmp(json_string_value(json_object_get(j3, "cache")), "off"), "opted out: off");
	pd_judge_stats st;
	pd_judge_stats_get(judge, &st);
	ok(st.cache_hits >= 1 && st.cpu_ms_saved > 0, "counters: %llu hits, %llu ms of CPU saved",
	   (unsigned long long)st.cache_hits, (unsigned long long)st.cpu_ms_saved);
	json_decref(j1);
	json_decref(j2);
	json_decref(j3);
	pd_judged_free(&d1);
	pd_judged_free(&d2);
	pd_judged_free(&d3);
	pd_problem_free(p);
}

int main(void)
{
	plan(44);
	pd_err e = {0};
	ctx = pd_ctx_new(NULL, &e);
	if (!ok(ctx != NULL, "context: %s", ctx ? "ok" : e.msg))
		return 1;
	pd_template *t;
	size_t n;
	pd_templates_default(&t, &n, &e);
	for (size_t i = 0; i < n; i++)
		pd_template_check(ctx, &t[i]);
	pools = pd_pools_new(ctx, t, n, NULL, &e);
	pd_templates_free(t, n);
	judge = pools ? pd_judge_new(pools, NULL, &e) : NULL;
	if (!ok(judge != NULL, "pools and a judge: %s", judge ? "ok" : e.msg))
		return 1;
	test_sum();
	test_isolation();
	test_checkers();
	test_interactive();
	test_call_based();
	test_cache();
	pd_judge_free(judge);
	pd_pools_free(pools);
	pd_ctx_free(ctx);
	return done();
}
