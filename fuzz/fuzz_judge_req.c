/* Fuzzes pd_judge_req_parse: the input is the body of POST /v1/judge.
 *
 *  - a refused request has an error message that is valid UTF-8 (the 400 carries it);
 *  - an accepted request names a problem (an inline one, or problem_id), a language paddock knows,
 *    and code; its priority is a class; the reward rule's numbers are finite;
 *  - pd_judge_req_free releases everything (LSan). */
#include "fuzz_common.h"
#include "judge/judge.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t je;
	json_t *o = json_loadb((const char *)data, size, 0, &je);
	if (!o)
		return 0;
	pd_judge_req q;
	pd_err e = {0};
	if (pd_judge_req_parse(o, &q, &e) < 0) {
		fz_check_refusal(&e);
	} else {
		FUZZ_CHECK(q.problem || q.problem_id[0], "no problem");
		FUZZ_CHECK(pd_language_find(q.language), "language '%s'", q.language);
		FUZZ_CHECK(q.code && q.code[q.code_len] == 0, "code");
		FUZZ_CHECK(q.priority >= PD_PRIO_HIGH && q.priority < PD_PRIO_COUNT, "priority");
		FUZZ_CHECK(isfinite(q.opts.rule.fail_value) && isfinite(q.opts.rule.penalty), "reward rule");
		FUZZ_CHECK(q.deadline_ms <= 31536000000ull, "deadline");
		pd_judge_req_free(&q);
	}
	json_decref(o);
	return 0;
}
