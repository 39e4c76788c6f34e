/* Judge benchmark (issue 21, "Speed"): a C++ submission against 20 stdin tests, judged once (compile
 * once, 20 runs in clean pooled sandboxes, checked) against the same 20 tests sent the way verl's
 * SandboxFusion path sends them (one /run_code job per test, compiling each time), side by side in
 * one process over the same pools, alternating, ROUNDS rounds. No HTTP: the difference measured is
 * the judge's own. Not a test (timings are never asserted).
 *
 *   make && cc -std=gnu11 -O2 -Ilib -Ipool -Iserver -o build/judge-bench tests/bench/judge.c \
 *      build/libpaddock-server.a build/libpaddock-pool.a build/libpaddock.a -lsqlite3 -lseccomp -ljansson -lpthread
 *   build/judge-bench [ROUNDS]
 */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char code[] = "#include <iostream>\nint main(){long x;std::cin>>x;std::cout<<x*x<<'\\n';}\n";

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	pd_err e = {0};
	pd_ctx *ctx = pd_ctx_new(NULL, &e);
	pd_template *t;
	size_t n;
	pd_templates_default(&t, &n, &e);
	for (size_t i = 0; i < n; i++)
		pd_template_check(ctx, &t[i]);
	pd_pools *pools = pd_pools_new(ctx, t, n, NULL, &e);
	pd_templates_free(t, n);
	pd_judge *judge = pd_judge_new(pools, NULL, &e);
	json_t *tests = json_array();
	for (int i = 1; i <= 20; i++) {
		char in[32], out[32];
		snprintf(in, sizeof in, "%d\n", i);
		snprintf(out, sizeof out, "%d\n", i * i);
		json_array_append_new(tests, json_pack("{s:s,s:s}", "input", in, "output", out));
	}
	json_t *pj = json_pack("{s:s,s:o}", "id", "square20", "tests", tests);
	pd_problem *p = pd_problem_from_json(pj, NULL, "bench", &e);
	json_decref(pj);
	if (!ctx || !pools || !judge || !p) {
		fprintf(stderr, "setup: %s\n", e.msg);
		return 1;
	}
	double *tj = calloc((size_t)rounds, sizeof *tj), *ts = calloc((size_t)rounds, sizeof *ts);
	pd_judge_opts o;
	pd_judge_opts_default(&o);
	o.no_cache = true;
	int bad = 0;
	for (int r = -1; r < rounds; r++) { /* round -1 warms the pools and the page cache */
		uint64_t t0 = pd_now_us();
		pd_judged d;
		memset(&d, 0, sizeof d);
		if (pd_judge_submit(judge, p, "cpp", code, sizeof code - 1, &o, &d, &e) < 0 || d.v.output != PD_LV_PASS)
			bad++;
		pd_judged_free(&d);
		uint64_t t1 = pd_now_us();
		for (int i = 0; i < 20; i++) {
			/* what verl sends: code, language, stdin, one request per test; it compares stdout itself */
			char in[32];
			snprintf(in, sizeof in, "%d\n", i + 1);
			json_t *req = json_pack("{s:s,s:s,s:s}", "code", code, "language", "cpp", "stdin", in);
			pd_job *j = pd_job_from_run_code(req, &e);
			json_decref(req);
			pd_job_execute(pools, j, 2);
			char want[32];
			snprintf(want, sizeof want, "%d\n", (i + 1) * (i + 1));
			if (!j->ran || j->run_r.out.head_len != strlen(want) || memcmp(j->run_r.out.head, want, strlen(want)))
				bad++;
			pd_job_free(j);
		}
		uint64_t t2 = pd_now_us();
		if (r >= 0) {
			tj[r] = (t1 - t0) / 1e3;
			ts[r] = (t2 - t1) / 1e3;
			printf("round %d: judge %.0f ms, 20 x compile+run %.0f ms, ratio %.2fx\n", r + 1, tj[r], ts[r], ts[r] / tj[r]);
		}
	}
	qsort(tj, (size_t)rounds, sizeof *tj, cmp);
	qsort(ts, (size_t)rounds, sizeof *ts, cmp);
	printf("median over %d rounds: judge %.0f ms, 20 x compile+run %.0f ms: the judge is %.1fx faster (%d wrong results)\n",
	       rounds, tj[rounds / 2], ts[rounds / 2], ts[rounds / 2] / tj[rounds / 2], bad);
	free(tj);
	free(ts);
	pd_problem_free(p);
	pd_judge_free(judge);
	pd_pools_free(pools);
	pd_ctx_free(ctx);
	return bad ? 1 : 0;
}
