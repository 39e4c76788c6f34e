/* intake.c: the APIs' rows and the intake's rules that need no pool, scheduler or store
 * (server/intake.c): each API found by its name, its own output and memory rules applied by the
 * intake (never by a way in), a network refused where the way in has none, the default deadline
 * and its margin, a deadline counted from the request's arrival (its time in a cluster's broker),
 * the refusal bodies and Piston's answer to a runtime it lacks. tests/api/intake.t runs the same
 * rules through a daemon, a cluster and paddock run. */
#define _GNU_SOURCE
#include "intake.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>

static pd_job *check(const pd_intake *in, const pd_api *api, const char *body, uint64_t waited_us, int *status,
		     pd_err *e)
{
	json_t *req = json_loads(body, 0, NULL);
	unsigned ra = 0;
	memset(e, 0, sizeof *e);
	pd_job *j = req ? pd_intake_check(in, api, req, PD_INTAKE_CLIENT, waited_us, status, &ra, e) : NULL;
	json_decref(req);
	return j;
}

/* seconds from now to j's deadline, rounded */
static long deadline_in_s(const pd_job *j)
{
	uint64_t now = pd_now_us();
	return j->deadline_us > now ? (long)((j->deadline_us - now + 500000) / 1000000) : 0;
}

int main(void)
{
	plan(21);
	const char *names[] = {"native", "run_code", "piston", "judge"};
	const pd_api *rows[] = {&pd_api_native, &pd_api_run_code, &pd_api_piston, &pd_api_judge};
	bool found = true;
	for (int i = 0; i < 4; i++)
		found &= pd_api_find(names[i]) == rows[i] && !strcmp(rows[i]->name, names[i]);
	ok(found, "each API's row is found by its name (the cluster's task kind)");
	ok(!pd_api_find("judge0") && !pd_api_find(NULL), "no row for an API there is none of");
	ok(pd_api_run_code.overload_status == 504 && pd_api_native.overload_status == 503 &&
	   pd_api_piston.overload_status == 503 && pd_api_judge.overload_status == 503,
	   "overload: 504 for /run_code (verl retries on 504 only), 503 for the rest");

	pd_intake in = {.self = "run", .no_network = "network: none here"};
	int status = 0;
	pd_err e;
	pd_job *j = check(&in, &pd_api_run_code, "{\"language\":\"python\",\"code\":\"print(1)\"}", 0, &status, &e);
	ok(j && j->run.keep_whole == 16u << 20 && j->compile.keep_whole == 16u << 20,
	   "/run_code: the whole output kept (16 MiB by default), whichever way in");
	ok(j && !j->mem_fast_off, "... and the memory fast path left on");
	pd_job_free(j);
	in.run_code_output_max = 2u << 20;
	j = check(&in, &pd_api_run_code, "{\"language\":\"python\",\"code\":\"print(1)\"}", 0, &status, &e);
	ok(j && j->run.keep_whole == 2u << 20, "... up to --run-code-output-max");
	pd_job_free(j);
	j = check(&in, &pd_api_piston, "{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"print(1)\"}]}", 0,
		  &status, &e);
	ok(j && j->mem_fast_off && !j->run.keep_whole, "Piston: no memory fast path (its clients read the OOM kill)");
	pd_job_free(j);
	j = check(&in, &pd_api_native, "{\"shell\":\"true\"}", 0, &status, &e);
	ok(j && !j->mem_fast_off && !j->run.keep_whole, "native: neither rule");
	ok(j && !j->deadline_us, "no margin (paddock run): no default deadline");
	pd_job_free(j);

	j = check(&in, &pd_api_native, "{\"shell\":\"true\",\"network\":\"host\"}", 0, &status, &e);
	ok(!j && status == 400 && e.code == EINVAL && e.kind == PD_EK_REFUSED, "a network where the way in has none: 400");
	is_str(e.msg, "network: none here", "... in the way in's words");
	j = check(&in, &pd_api_native, "{\"shell\":\"true\",\"limits\":{\"wall_time\":-1}}", 0, &status, &e);
	ok(!j && status == 400 && strstr(e.msg, "limits.wall_time"), "a parser's refusal: 400 naming the field (%s)", e.msg);

	in.deadline_margin_s = 10;
	j = check(&in, &pd_api_native, "{\"shell\":\"true\",\"limits\":{\"wall_time\":2}}", 0, &status, &e);
	ok(j && deadline_in_s(j) == 12, "native without deadline_ms: its wall time + the margin (%ld s)", j ? deadline_in_s(j) : -1);
	pd_job_free(j);
	j = check(&in, &pd_api_run_code, "{\"language\":\"python\",\"code\":\"1\",\"run_timeout\":3,\"compile_timeout\":1}", 0,
		  &status, &e);
	ok(j && deadline_in_s(j) == 14, "/run_code: compile + run timeouts + the margin (%ld s)", j ? deadline_in_s(j) : -1);
	pd_job_free(j);
	j = check(&in, &pd_api_native, "{\"shell\":\"true\",\"limits\":{\"wall_time\":2}}", 5000000, &status, &e);
	ok(j && deadline_in_s(j) == 7, "5 s in a broker: the default counts from the arrival (%ld s left)",
	   j ? deadline_in_s(j) : -1);
	pd_job_free(j);
	j = check(&in, &pd_api_native, "{\"shell\":\"true\",\"deadline_ms\":10000}", 4000000, &status, &e);
	ok(j && deadline_in_s(j) == 6, "deadline_ms too (%ld s left of 10 after 4 in a broker)", j ? deadline_in_s(j) : -1);
	pd_job_free(j);
	j = check(&in, &pd_api_native, "{\"shell\":\"true\",\"deadline_ms\":1000}", 4000000, &status, &e);
	ok(j && j->deadline_us && j->deadline_us <= pd_now_us(), "a deadline passed in the broker stays passed (queue_timeout)");
	pd_job_free(j);
	j = check(&in, &pd_api_judge, "{\"problem_id\":\"hello\",\"language\":\"python\",\"code\":\"1\"}", 0, &status, &e);
	ok(!j && status == 400 && !strcmp(e.msg, "this node judges nothing"), "the judge's row without a judge: refused");

	json_t *plain = pd_api_native.error_body("x: bad"), *piston = pd_api_piston.error_body("x: bad");
	ok(json_object_size(plain) == 1 && !strcmp(json_string_value(json_object_get(plain, "error")), "x: bad"),
	   "a refusal's body: {\"error\"}");
	ok(!strcmp(json_string_value(json_object_get(piston, "message")), "x: bad") && json_object_get(piston, "error"),
	   "Piston's: \"message\" too, which its clients read");
	json_decref(plain);
	json_decref(piston);
	j = pd_job_new();
	j->failure = PD_F_DEPENDENCY;
	snprintf(j->error, sizeof j->error, "no python");
	json_t *out = pd_api_piston.render(j, &status);
	ok(status == 400 && !strcmp(json_string_value(json_object_get(out, "message")), "no python"),
	   "Piston's answer to a runtime the daemon lacks: 400 with its message");
	json_decref(out);
	pd_job_free(j);
	return done();
}
