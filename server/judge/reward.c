/* The verdict's three levels and the reward rule (docs/judge.md, "The verdict and the reward").
 *
 * usable means "a clean, decided sample": all three levels decided and none failed. A wrong answer
 * is a decided output (fail) and still carries a reward (the rule's fail value): the trainer learns
 * from it. What carries no reward (null, never 0) is an attempt where the infrastructure failed:
 * a broken sandbox must not look like a wrong answer. The process level is not_audited until an
 * audit ran (issue 22); it is never "pass" without that evidence, and so an unaudited attempt is
 * never usable. Whether it still gets its reward is the rule's requires_audit (default: it does,
 * see docs/judge.md for why). */
#include "judge/judge.h"

#include <errno.h>
#include <string.h>

static const char *const level_names[] = {"not_judged", "pass", "fail", "partial", "not_audited"};

const char *pd_level_name(pd_level l)
{
	return (unsigned)l < sizeof level_names / sizeof level_names[0] ? level_names[l] : "not_judged";
}

pd_reward_rule pd_reward_rule_default(void)
{
	pd_reward_rule r = {.mode = PD_REWARD_SCORE, .fail_value = 0, .penalty = -1, .requires_audit = false};
	return r;
}

int pd_reward_rule_parse(json_t *o, pd_reward_rule *r, pd_err *e)
{
	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return pd_refuse(e, "reward: must be an object {\"mode\", \"fail\", \"penalty\", \"requires_audit\"}");
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		if (!strcmp(k, "mode")) {
			const char *m = json_string_value(v);
			if (m && !strcmp(m, "score"))
				r->mode = PD_REWARD_SCORE;
			else if (m && !strcmp(m, "binary"))
				r->mode = PD_REWARD_BINARY;
			else
				return pd_refuse(e, "reward.mode: must be score or binary");
		} else if (!strcmp(k, "fail") || !strcmp(k, "penalty") || !strcmp(k, "budget_exceeded")) {
			if (!json_is_number(v) || json_number_value(v) < -1e6 || json_number_value(v) > 1e6)
				return pd_refuse(e, "reward.%s: must be a number from -1e6 to 1e6", k);
			*(!strcmp(k, "fail") ? &r->fail_value : !strcmp(k, "penalty") ? &r->penalty : &r->budget_exceeded) =
				json_number_value(v);
		} else if (!strcmp(k, "requires_audit")) {
			if (!json_is_boolean(v))
				return pd_refuse(e, "reward.requires_audit: must be true or false");
			r->requires_audit = json_is_true(v);
		} else {
			return pd_refuse(e, "reward.%s: unknown field (mode, fail, penalty, requires_audit, budget_exceeded)",
					 k);
		}
	}
	return 0;
}

bool pd_failure_is_infra(pd_failure f)
{
	return f == PD_F_STARTUP || f == PD_F_INTERNAL || f == PD_F_JUDGE || f == PD_F_QUEUE || f == PD_F_CANCELLED ||
	       f == PD_F_DEPENDENCY;
}

void pd_verdict_decide(pd_verdict *v, const pd_reward_rule *rule)
{
	/* usable: the first level that is undecided or failed names the reason */
	v->usable = false;
	v->unusable = NULL;
	if (v->output != PD_LV_PASS)
		v->unusable = "output";
	else if (v->process != PD_LV_PASS)
		v->unusable = "process";
	else if (v->resources != PD_LV_PASS)
		v->unusable = "resources";
	else
		v->usable = !pd_failure_is_infra(v->failure);
	if (!v->usable && !v->unusable)
		v->unusable = "output";

	v->has_reward = false;
	v->reward = 0;
	if (pd_failure_is_infra(v->failure) || v->output == PD_LV_NOT_JUDGED)
		return; /* no evidence about the model: no reward, never 0 */
	if (v->process == PD_LV_FAIL) {
		v->has_reward = true;
		v->reward = rule->penalty;
		return;
	}
	/* an audit asked for and left incomplete (a task outside it, a tree too big to walk: what
	 * the attempt may have done on purpose) earns nothing, as under requires_audit */
	if ((rule->requires_audit || v->audit_asked) && v->process != PD_LV_PASS)
		return;
	v->has_reward = true;
	if (rule->mode == PD_REWARD_BINARY)
		v->reward = v->output == PD_LV_PASS ? 1.0 : rule->fail_value;
	else
		v->reward = v->output == PD_LV_FAIL ? rule->fail_value : v->score;
}
