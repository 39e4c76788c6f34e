/* The judged record (docs/judge.md, "The record"). Field names are the interface of issue 21:
 * attempt_id, task_id, group_id, sample_id, problem_id, problem_version, verdict.{output,process,
 * resources}, usable, unusable_level, reward (null for infrastructure failures), failure_class, cache,
 * compile, tests. Texts from programs (compiler and checker messages) go through pd_json_text: they
 * may be any bytes. The record's memory is freed here too (pd_judged_free), below the judge and
 * its cache, which both free records. */
#include "judge/judge.h"

#include <stdlib.h>
#include <string.h>

json_t *pd_judged_to_json(const pd_judged *d)
{
	json_t *o = json_object();
	json_object_set_new(o, "attempt_id", pd_json_text(d->attempt_id));
	/* the image: the host image is "host" with the default image's id */
	pd_record_head h = {.task_id = d->task_id, .problem_id = d->problem_id, .problem_version = d->problem_version,
			    .language = d->language, .template_name = d->template_name,
			    .template_version = d->template_version,
			    .isolation = d->isolation[0] ? d->isolation : "container",
			    .image_name = d->image_name, .image_digest = d->image_digest};
	pd_record_head_json(o, &h);
	json_object_set_new(o, "group_id", pd_json_text(d->group_id));
	json_object_set_new(o, "sample_id", pd_json_text(d->sample_id));
	json_t *v = json_object(), *out = json_object(), *proc = json_object(), *res = json_object();
	json_object_set_new(out, "status", json_string(pd_level_name(d->v.output)));
	json_object_set_new(out, "score", json_real(d->v.score));
	json_object_set_new(proc, "status", json_string(pd_level_name(d->v.process)));
	if (d->audited) { /* why the process level is what it is: the rules broken, by kind */
		json_t *why = json_array(), *kinds = json_array();
		for (size_t i = 0; i < d->audit_verdict.nreasons; i++)
			json_array_append_new(why, pd_json_text(d->audit_verdict.reasons[i]));
		for (int k = 0; k < PD_AK_N; k++)
			if (d->audit_verdict.failed_kinds & (1u << k))
				json_array_append_new(kinds, json_string(pd_audit_kind_name((pd_audit_kind)k)));
		json_object_set_new(proc, "reasons", why);
		json_object_set_new(proc, "failed", kinds);
	}
	json_object_set_new(res, "status", json_string(pd_level_name(d->v.resources)));
	json_object_set_new(v, "output", out);
	json_object_set_new(v, "process", proc);
	json_object_set_new(v, "resources", res);
	json_object_set_new(o, "verdict", v);
	json_object_set_new(o, "usable", json_boolean(d->v.usable));
	json_object_set_new(o, "unusable_level", d->v.unusable ? json_string(d->v.unusable) : json_null());
	json_object_set_new(o, "reward", d->v.has_reward ? json_real(d->v.reward) : json_null());
	json_object_set_new(o, "failure_class", json_string(pd_failure_name(d->v.failure)));
	json_object_set_new(o, "error", pd_json_text(d->error));
	json_object_set_new(o, "cache", json_string(d->cache_hit ? "hit" : d->cache_used ? "miss" : "off"));
	json_t *c = json_object();
	json_object_set_new(c, "ran", json_boolean(d->compiled));
	json_object_set_new(c, "status", json_string(d->compile_error ? "fail" : d->compiled ? "pass" : "none"));
	json_object_set_new(c, "message", pd_json_text(d->compile_message));
	json_object_set_new(o, "compile", c);
	json_t *tests = json_array();
	for (size_t i = 0; i < d->ntests; i++) {
		const pd_jtest_result *t = &d->tests[i];
		json_t *x = json_object();
		json_object_set_new(x, "status", json_string(pd_tstatus_name(t->status)));
		json_object_set_new(x, "score", json_real(t->score));
		json_object_set_new(x, "time_ms", json_integer((json_int_t)t->time_ms));
		json_object_set_new(x, "wall_ms", json_integer((json_int_t)t->wall_ms));
		json_object_set_new(x, "memory_kb", json_integer((json_int_t)t->memory_kb));
		json_object_set_new(x, "message", pd_json_text(t->message));
		json_object_set_new(x, "checker", pd_json_text(t->checker_message));
		json_object_set_new(x, "stderr", pd_json_text(t->stderr_tail ? t->stderr_tail : ""));
		json_object_set_new(x, "stderr_bytes", json_integer((json_int_t)t->stderr_bytes));
		json_object_set_new(x, "harness", t->harness ? pd_json_text(t->harness) : json_null());
		json_object_set_new(x, "use_id", t->use_id[0] ? json_string(t->use_id) : json_null());
		json_array_append_new(tests, x);
	}
	json_object_set_new(o, "tests", tests);
	json_object_set_new(o, "cpu_ms", json_integer((json_int_t)d->cpu_ms));
	json_object_set_new(o, "wall_ms", json_integer((json_int_t)d->wall_ms));
	json_object_set_new(o, "checker_ms", json_integer((json_int_t)d->checker_ms));
	json_object_set_new(o, "judge_errors", json_integer(d->judge_errors));
	json_object_set_new(o, "audit", pd_judged_audit_json(d));
	json_object_set_new(o, "risk_list", json_boolean(d->risk_list));
	return o;
}

void pd_jtest_result_clear(pd_jtest_result *t)
{
	free(t->stderr_tail);
	free(t->harness);
	memset(t, 0, sizeof *t);
}

void pd_judged_free(pd_judged *d)
{
	for (size_t i = 0; d->tests && i < d->ntests; i++)
		pd_jtest_result_clear(&d->tests[i]);
	free(d->tests);
	d->tests = NULL;
	d->ntests = 0;
	free(d->audit);
	d->audit = NULL;
	d->audit_len = 0;
}
