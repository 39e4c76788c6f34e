/* The verdict's levels, usable, the reward rule, and the fingerprint cache's key and rules: pure
 * functions, checked on every combination the rule distinguishes. */
#define _GNU_SOURCE
#include "judge/judge.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static pd_verdict V(pd_level out, double score, pd_level proc, pd_level res, const char *fc)
{
	pd_verdict v = {.output = out, .score = score, .process = proc, .resources = res, .failure = pd_failure_parse(fc)};
	return v;
}

static void test_rule(void)
{
	pd_reward_rule r = pd_reward_rule_default();
	pd_verdict v = V(PD_LV_PASS, 1, PD_LV_NOT_AUDITED, PD_LV_PASS, "none");
	pd_verdict_decide(&v, &r);
	ok(!v.usable && v.unusable && !strcmp(v.unusable, "process"),
	   "a correct but unaudited answer is not usable, and the record says process");
	ok(v.has_reward && v.reward == 1, "... but gets its score as reward by default (requires_audit false)");
	r.requires_audit = true;
	v = V(PD_LV_PASS, 1, PD_LV_NOT_AUDITED, PD_LV_PASS, "none");
	pd_verdict_decide(&v, &r);
	ok(!v.has_reward, "with requires_audit an unaudited answer has no reward (null)");
	r.requires_audit = false;
	v = V(PD_LV_PASS, 1, PD_LV_NOT_AUDITED, PD_LV_PASS, "none");
	v.audit_asked = true;
	pd_verdict_decide(&v, &r);
	ok(!v.has_reward && !v.usable, "an audit asked for and not completed: no reward (null) even without requires_audit");
	v = V(PD_LV_PASS, 1, PD_LV_PASS, PD_LV_PASS, "none");
	v.audit_asked = true;
	pd_verdict_decide(&v, &r);
	ok(v.has_reward && v.reward == 1 && v.usable, "... and completed and passed: reward 1, usable");
	r.requires_audit = true;
	v = V(PD_LV_PASS, 1, PD_LV_PASS, PD_LV_PASS, "none");
	pd_verdict_decide(&v, &r);
	ok(v.usable && !v.unusable && v.has_reward && v.reward == 1, "all three pass: usable, reward 1");
	r = pd_reward_rule_default();
	v = V(PD_LV_PARTIAL, 0.4, PD_LV_PASS, PD_LV_PASS, "none");
	pd_verdict_decide(&v, &r);
	ok(!v.usable && !strcmp(v.unusable, "output") && v.reward == 0.4, "partial: the score, not usable (output)");
	v = V(PD_LV_FAIL, 0, PD_LV_NOT_AUDITED, PD_LV_PASS, "none");
	pd_verdict_decide(&v, &r);
	ok(v.has_reward && v.reward == 0, "a wrong answer: reward 0 (the fail value)");
	v = V(PD_LV_FAIL, 0, PD_LV_NOT_AUDITED, PD_LV_NOT_JUDGED, "compile_error");
	pd_verdict_decide(&v, &r);
	ok(v.has_reward && v.reward == 0, "a compile error is the model's failure: reward 0, not null");
	v = V(PD_LV_PARTIAL, 0.5, PD_LV_NOT_AUDITED, PD_LV_FAIL, "exec_timeout");
	pd_verdict_decide(&v, &r);
	ok(v.has_reward && v.reward == 0.5 && !v.usable, "a time-out on one test: the score of the rest");
	v = V(PD_LV_PASS, 1, PD_LV_FAIL, PD_LV_PASS, "policy_violation");
	pd_verdict_decide(&v, &r);
	ok(v.has_reward && v.reward == -1 && !strcmp(v.unusable, "process"), "a process violation: the penalty, -1");
	r.penalty = -5;
	v = V(PD_LV_PASS, 1, PD_LV_FAIL, PD_LV_PASS, "policy_violation");
	pd_verdict_decide(&v, &r);
	ok(v.reward == -5, "the penalty is configurable");
	r = pd_reward_rule_default();
	static const char *const infra[] = {"startup_failure", "internal_error", "judge_error", "queue_timeout",
					    "cancelled", "dependency_missing", NULL};
	for (int i = 0; infra[i]; i++) {
		v = V(PD_LV_PASS, 1, PD_LV_PASS, PD_LV_PASS, infra[i]);
		pd_verdict_decide(&v, &r);
		ok(!v.has_reward && !v.usable, "%s: no reward (null, never 0), not usable", infra[i]);
	}
	v = V(PD_LV_NOT_JUDGED, 0, PD_LV_NOT_AUDITED, PD_LV_NOT_JUDGED, "none");
	pd_verdict_decide(&v, &r);
	ok(!v.has_reward, "an output not judged: no reward");
	r.mode = PD_REWARD_BINARY;
	v = V(PD_LV_PARTIAL, 0.9, PD_LV_NOT_AUDITED, PD_LV_PASS, "none");
	pd_verdict_decide(&v, &r);
	ok(v.reward == 0, "binary: a partial answer gets the fail value");
	v = V(PD_LV_PASS, 1, PD_LV_NOT_AUDITED, PD_LV_PASS, "none");
	pd_verdict_decide(&v, &r);
	ok(v.reward == 1, "binary: a pass gets 1");

	pd_err e = {0};
	json_error_t je;
	json_t *o = json_loads("{\"mode\":\"binary\",\"fail\":-0.5,\"penalty\":-2,\"requires_audit\":true}", 0, &je);
	r = pd_reward_rule_default();
	ok(pd_reward_rule_parse(o, &r, &e) == 0 && r.mode == PD_REWARD_BINARY && r.fail_value == -0.5 &&
		   r.penalty == -2 && r.requires_audit,
	   "a rule parses");
	json_decref(o);
	o = json_loads("{\"mode\":\"maybe\"}", 0, &je);
	ok(pd_reward_rule_parse(o, &r, &e) < 0 && strstr(e.msg, "reward.mode"), "a bad mode is named: %s", e.msg);
	json_decref(o);
	o = json_loads("{\"bonus\":1}", 0, &je);
	ok(pd_reward_rule_parse(o, &r, &e) < 0 && strstr(e.msg, "reward.bonus"), "an unknown field: %s", e.msg);
	json_decref(o);
}

static pd_problem *prob(const char *json)
{
	json_error_t je;
	json_t *o = json_loads(json, 0, &je);
	pd_err e;
	pd_problem *p = pd_problem_from_json(o, NULL, "inline", &e);
	json_decref(o);
	return p;
}

static void test_cache(void)
{
	pd_problem *p = prob("{\"id\":\"a\",\"tests\":[{\"input\":\"1\",\"output\":\"1\"}]}");
	pd_problem *q = prob("{\"id\":\"a\",\"tests\":[{\"input\":\"1\",\"output\":\"2\"}]}");
	pd_problem *lim = prob("{\"id\":\"a\",\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"limits\":{\"time\":9}}");
	pd_template *t;
	size_t nt;
	pd_err e;
	pd_templates_default(&t, &nt, &e);
	unsigned char k1[32], k2[32];
	pd_jcache_key(p, "python", "print(1)", 8, &t[1], NULL, false, NULL, k1);
	pd_jcache_key(p, "python", "print(1)", 8, &t[1], NULL, false, NULL, k2);
	ok(!memcmp(k1, k2, 32), "the same work, the same key");
	pd_jcache_key(p, "python", "print(2)", 8, &t[1], NULL, false, NULL, k2);
	ok(memcmp(k1, k2, 32), "another submission, another key");
	pd_jcache_key(p, "python3", "print(1)", 8, &t[1], NULL, false, NULL, k2);
	ok(memcmp(k1, k2, 32), "another language, another key");
	pd_jcache_key(q, "python", "print(1)", 8, &t[1], NULL, false, NULL, k2);
	ok(memcmp(k1, k2, 32), "the same problem id with other answers: another key");
	pd_jcache_key(lim, "python", "print(1)", 8, &t[1], NULL, false, NULL, k2);
	ok(memcmp(k1, k2, 32), "other limits: another key");
	pd_jcache_key(p, "python", "print(1)", 8, &t[1], NULL, true, NULL, k2);
	ok(memcmp(k1, k2, 32), "stop at the first failure: another key");
	pd_template t2 = t[1];
	t2.limits.memory_bytes += 1;
	pd_jcache_key(p, "python", "print(1)", 8, &t2, NULL, false, NULL, k2);
	ok(memcmp(k1, k2, 32), "a template change (its limits) invalidates");
	t2 = t[1];
	char other[] = "/some/other/layer";
	t2.layers[0] = other;
	pd_jcache_key(p, "python", "print(1)", 8, &t2, NULL, false, NULL, k2);
	ok(memcmp(k1, k2, 32), "a template change (its image) invalidates");
	pd_jcache_key(p, "python", "print(1)", 8, &t[1], &t[0], false, NULL, k2);
	ok(memcmp(k1, k2, 32), "the judge template is part of the key");
	pd_audit_policy *pa = pd_audit_policy_default("/work"), *pb = pd_audit_policy_default("/work");
	pd_err pe;
	pd_audit_policy *pc = pd_audit_policy_parse("{\"fail\":[\"read_outside\"]}", 25, "audit", "/work", &pe);
	unsigned char kp[32];
	pd_jcache_key(p, "python", "print(1)", 8, &t[1], NULL, false, pa, k2);
	ok(memcmp(k1, k2, 32), "an audited judging has another key than an unaudited one");
	pd_jcache_key(p, "python", "print(1)", 8, &t[1], NULL, false, pb, kp);
	ok(!memcmp(k2, kp, 32), "the same policy, the same key");
	pd_jcache_key(p, "python", "print(1)", 8, &t[1], NULL, false, pc, kp);
	ok(pc && memcmp(k2, kp, 32), "another policy, another key");
	pd_audit_policy_free(pa);
	pd_audit_policy_free(pb);
	pd_audit_policy_free(pc);

	pd_jcache *c = pd_jcache_new(2);
	pd_jtest_result tr[2] = {{.status = PD_T_AC, .score = 1}, {.status = PD_T_WA}};
	pd_judged d;
	memset(&d, 0, sizeof d);
	d.v = V(PD_LV_PARTIAL, 0.5, PD_LV_NOT_AUDITED, PD_LV_PASS, "none");
	d.tests = tr;
	d.ntests = 2;
	d.cpu_ms = 70;
	ok(pd_jcache_cacheable(&d), "a wrong answer is cacheable");
	pd_judged out;
	ok(!pd_jcache_get(c, k1, &out), "a miss");
	pd_jcache_put(c, k1, &d);
	ok(pd_jcache_get(c, k1, &out) && out.ntests == 2 && out.tests != tr && out.tests[1].status == PD_T_WA &&
		   out.v.score == 0.5,
	   "a hit returns a copy of the stored verdict");
	free(out.tests);
	uint64_t hits, misses, entries, saved;
	pd_jcache_stats(c, &hits, &misses, &entries, &saved);
	ok(hits == 1 && misses == 1 && entries == 1 && saved == 70, "counters: 1 hit, 1 miss, 70 ms of CPU saved");
	tr[1].status = PD_T_TO;
	ok(!pd_jcache_cacheable(&d), "a time-out is never cached");
	tr[1].status = PD_T_XX;
	ok(!pd_jcache_cacheable(&d), "a sandbox fault is never cached");
	tr[1].status = PD_T_JE;
	ok(!pd_jcache_cacheable(&d), "a judge error is never cached");
	tr[1].status = PD_T_WA;
	d.v.failure = PD_F_STARTUP;
	ok(!pd_jcache_cacheable(&d), "an infrastructure failure is never cached");
	pd_jcache_put(c, k2, &d);
	ok(!pd_jcache_get(c, k2, &out), "... and put refuses it");
	d.v.failure = PD_F_NONE;
	unsigned char k3[32];
	memcpy(k3, k1, 32);
	k3[0] ^= 1;
	pd_jcache_put(c, k2, &d);
	pd_jcache_put(c, k3, &d); /* a third entry in a cache of two: the least recently used goes */
	pd_jcache_stats(c, &hits, &misses, &entries, &saved);
	ok(entries == 2, "the cache stays at its size");
	ok(!pd_jcache_get(c, k1, &out), "the least recently used entry went first");
	pd_jcache_free(c);
	pd_templates_free(t, nt);
	pd_problem_free(p);
	pd_problem_free(q);
	pd_problem_free(lim);
}

static void test_record(void)
{
	pd_judged d;
	memset(&d, 0, sizeof d);
	snprintf(d.task_id, sizeof d.task_id, "t1");
	snprintf(d.group_id, sizeof d.group_id, "g\xff");
	d.v = V(PD_LV_NOT_JUDGED, 0, PD_LV_NOT_AUDITED, PD_LV_NOT_JUDGED, "judge_error");
	pd_reward_rule r = pd_reward_rule_default();
	pd_verdict_decide(&d.v, &r);
	json_t *o = pd_judged_to_json(&d);
	static const char *const keys[] = {"attempt_id", "task_id", "group_id", "sample_id", "verdict", "usable",
					   "reward", "failure_class", "cache", "tests", "compile", NULL};
	bool all = true;
	for (int i = 0; keys[i]; i++)
		all &= json_object_get(o, keys[i]) != NULL;
	ok(all, "the record has every field of the interface (a non-UTF-8 id included)");
	ok(json_is_null(json_object_get(o, "reward")), "an infrastructure failure's reward is JSON null");
	is_str(json_string_value(json_object_get(json_object_get(json_object_get(o, "verdict"), "process"), "status")),
	       "not_audited", "verdict.process.status is not_audited");
	json_decref(o);
}

/* The verdict carries its failure class as the enum; the name is made once, for the record, and
 * read back only from stored text (pd_failure_parse). */
static void test_failure_names(void)
{
	bool all = true;
	for (int f = 0; f < PD_F_COUNT; f++)
		all &= pd_failure_parse(pd_failure_name((pd_failure)f)) == (pd_failure)f;
	ok(all, "every failure class's name reads back as its class");
	ok(pd_failure_parse("no_such_class") == PD_F_NONE && pd_failure_parse(NULL) == PD_F_NONE,
	   "a name no class has reads as none");
	ok(pd_failure_is_infra(PD_F_STARTUP) && pd_failure_is_infra(PD_F_DEPENDENCY) && !pd_failure_is_infra(PD_F_COMPILE) &&
		   !pd_failure_is_infra(PD_F_POLICY) && !pd_failure_is_infra(PD_F_NONE),
	   "infrastructure classes: startup, dependency...; not compile_error, policy_violation, none");
}

int main(void)
{
	plan(53);
	test_failure_names();
	test_rule();
	test_cache();
	test_record();
	return done();
}
