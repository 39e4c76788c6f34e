/* Fuzzes pd_problem_from_json: the input is an inline problem (the "problem" of POST /v1/judge, or
 * a problem.json without its directory).
 *
 * Beyond "no crash, no leak, no undefined behaviour":
 *  - a refused problem has an error message, NUL-terminated;
 *  - an accepted problem is judgeable: at least one test, each with NUL-terminated input and answer
 *    and a positive weight; limits within their documented ranges; a call-based problem has a
 *    fn_name and its inputs are JSON lists; the digest is 64 hex digits and the same on a reparse;
 *  - the answers of a json_value problem are JSON (else every submission would be a judge error). */
#include "fuzz_common.h"
#include "judge/judge.h"

static pd_problem *parse(const uint8_t *data, size_t size, pd_err *e)
{
	json_error_t je;
	json_t *o = json_loadb((const char *)data, size, 0, &je);
	if (!o)
		return NULL;
	pd_problem *p = pd_problem_from_json(o, NULL, "problem", e);
	json_decref(o);
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pd_err e = {0};
	json_error_t je;
	json_t *o = json_loadb((const char *)data, size, 0, &je);
	if (!o)
		return 0;
	json_decref(o);
	pd_problem *p = parse(data, size, &e);
	if (!p) {
		FUZZ_CHECK(e.msg[0], "a refused problem must say why");
		FUZZ_CHECK(strnlen(e.msg, sizeof e.msg) < sizeof e.msg, "error not NUL-terminated");
		return 0;
	}
	FUZZ_CHECK(p->ntests > 0, "an accepted problem has tests");
	for (size_t i = 0; i < p->ntests; i++) {
		const pd_jtest *t = &p->tests[i];
		FUZZ_CHECK(t->input && t->input[t->input_len] == 0, "test %zu input", i);
		FUZZ_CHECK(t->answer && t->answer[t->answer_len] == 0, "test %zu answer", i);
		FUZZ_CHECK(t->weight > 0, "test %zu weight %g", i, t->weight);
		if (p->call_based) {
			json_t *a = json_loadb(t->input, t->input_len, 0, &je);
			FUZZ_CHECK(json_is_array(a), "call-based test %zu: arguments are not a JSON list", i);
			json_decref(a);
		}
		if (p->checker.mode == PD_CHK_JSON_VALUE && p->call_based) {
			json_t *a = json_loadb(t->answer, t->answer_len, JSON_DECODE_ANY, &je);
			FUZZ_CHECK(a != NULL, "call-based test %zu: the answer is not JSON", i);
			json_decref(a);
		}
	}
	FUZZ_CHECK(p->time_ms >= 1 && p->time_ms <= 3600000, "time %llu", (unsigned long long)p->time_ms);
	FUZZ_CHECK(p->memory_bytes >= (4u << 20), "memory");
	FUZZ_CHECK(p->output_bytes >= 1, "output");
	FUZZ_CHECK(!p->call_based || p->fn_name[0], "call-based without fn_name");
	FUZZ_CHECK(strlen(p->digest_hex) == 64, "digest");
	FUZZ_CHECK(p->checker.abs_tol >= 0 && p->checker.rel_tol >= 0, "tolerances");
	if (p->checker.mode == PD_CHK_PROGRAM)
		FUZZ_CHECK(p->checker_prog.source && pd_language_find(p->checker_prog.language), "checker program");
	if (p->checker.mode == PD_CHK_INTERACTIVE)
		FUZZ_CHECK(p->interactor.source && pd_language_find(p->interactor.language), "interactor");
	pd_problem *q = parse(data, size, &e);
	FUZZ_CHECK(q && !memcmp(p->digest, q->digest, 32), "the same problem twice, two digests");
	pd_problem_free(q);
	pd_problem_free(p);
	return 0;
}
