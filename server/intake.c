/* The intake: one table of the APIs a request may come in (their rows), and every rule that turns
 * a request into an admitted job, in one order (intake.h lists it). HTTP runs and judge
 * (server/http/runs.c, judge.c, judge_batch.c), a cluster node taking work off the broker
 * (server/cluster/executor.c) and paddock run (cli/run.c) each call it; none checks anything of
 * its own past its transport, so a request is refused for the same reason, with the same status
 * and words, whichever way it came. */
#define _GNU_SOURCE
#include "intake.h"
#include "judge/judge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the APIs' rows (the run APIs' are in their files, server/api/) ---------------------------------------------------------------------------- */

static pd_job *parse_judge(const pd_intake *in, json_t *body, int *status, pd_err *e)
{
	if (!in->judge) {
		*status = 400;
		pd_refuse(e, "this node judges nothing");
		return NULL;
	}
	return pd_judge_job(in->judge, in->problems, body, in->ctx ? pd_ctx_run_id(in->ctx) : 0, status, e);
}

static json_t *render_judge(const pd_job *j, int *status)
{
	*status = 200;
	/* the verdict; one that never ran on a cluster node (exhausted) names the node and the
	 * request too */
	json_t *rec = pd_judge_job_record(j);
	if (rec && j->node[0] && !json_object_get(rec, "node"))
		json_object_set_new(rec, "node", json_string(j->node));
	if (rec && j->node[0] && !json_object_get(rec, "request_id"))
		json_object_set_new(rec, "request_id", json_string(j->request_id));
	return rec;
}

json_t *pd_api_error_plain(const char *msg)
{
	/* pd_json_text: msg may quote a client's bytes */
	return json_pack("{s:o}", "error", pd_json_text(msg));
}

const pd_api pd_api_judge = {.name = "judge", .parse = parse_judge, .render = render_judge,
			     .error_body = pd_api_error_plain, .overload_status = 503, .judged = true};

/* Every API: a new one is its file under server/api/ (its parser, answer and row) and a line here. */
static const pd_api *const apis[] = {&pd_api_native, &pd_api_run_code, &pd_api_piston, &pd_api_judge};

const pd_api *pd_api_route(const char *path)
{
	for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++)
		if (apis[i]->route && !strcmp(apis[i]->route, path))
			return apis[i];
	return NULL;
}

const pd_api *pd_api_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof apis / sizeof *apis; i++)
		if (!strcmp(apis[i]->name, name))
			return apis[i];
	return NULL;
}

/* ---- the rules --------------------------------------------------------------------------------- */

int pd_intake_template(const pd_intake *in, const char *name, pd_err *e)
{
	if (!in->pools || pd_pools_template(in->pools, name))
		return 0;
	/* the network twins ("<name>.net-<mode>") are picked by "network", so not listed */
	char names[512] = "";
	size_t used = 0;
	for (size_t i = 0; i < in->ntpl && used < sizeof names; i++)
		if (!strstr(in->tpl[i].name, ".net-"))
			used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
						 in->tpl[i].name);
	return pd_refuse(e, "template: '%s' is not a template of this %s (%s)", name, in->self ? in->self : "daemon",
			 names);
}

/* Rule 2: the template a native request names (a language's is the daemon's, and its absence
 * from a templates file stays a dependency_missing record), the image, the tier. */
static int check_where(const pd_intake *in, const pd_api *api, json_t *body, int from, pd_job *j, int *status,
		       pd_err *e)
{
	*status = 400;
	if (api == &pd_api_native && json_object_get(body, "template") &&
	    pd_intake_template(in, j->template_name, e) < 0)
		return -1;
	char digest[PD_DIGEST_LEN];
	if (j->image[0] && in->image_check && (*status = in->image_check(in->arg, j->image, digest, e)) != 0)
		return -1;
	*status = 400;
	/* a cluster keeps a run's output its own way (cluster/objects.c): the node's directory would
	 * name output its GET .../output cannot serve */
	if (api->output_dir && from == PD_INTAKE_CLIENT)
		j->output_dir = in->output_dir;
	if (j->isolation[0] && in->pools &&
	    pd_pools_tier_allowed(in->pools, j->template_name, pd_isolation_parse(j->isolation), e) < 0) {
		*status = e->code == ENOENT ? 404 : 400;
		return -1;
	}
	return 0;
}

/* Rule 4 for a run: the risk list. A job naming a problem on it is audited in full with egress
 * denied, whatever it asked (j->risk_list); one asking for a network with egress is refused. */
static int run_controls(const pd_intake *in, pd_job *j, int *status, pd_err *e)
{
	const char *key = pd_job_problem_key(j);
	if (!in->store || !key[0] || !pd_store_risky(in->store, key))
		return 0;
	/* no egress: refused rather than quietly changed (a run without it may not be what the
	 * caller meant) */
	const pd_template *t = in->pools ? pd_pools_template(in->pools, j->template_name) : NULL;
	const char *net = j->network[0] ? j->network : t ? pd_net_name(t->net) : "";
	if (!strcmp(net, "allowlist") || !strcmp(net, "host")) {
		*status = 403;
		return pd_refuse(e, "network: problem_id %s is on the risk list (confirmed hacks): no egress, not '%s'",
				 key, net);
	}
	/* "audit": true when the request asked for none (the template's policy is merged over it
	 * when the job starts), with egress denied over whatever it asked */
	if (!j->audit) {
		pd_err pe = {0};
		j->audit = pd_audit_policy_parse("true", 4, "audit", j->cwd ? j->cwd : "/work", &pe);
		if (!j->audit) {
			*status = 500;
			return pd_fail(e, ENOMEM, "audit");
		}
	}
	if (pd_judge_policy_risky(&j->audit, e) < 0) {
		*status = e->code == ENOMEM ? 500 : 400;
		return -1;
	}
	j->risk_list = true;
	return 0;
}

/* Rule 4 for a judged submission: its problem's cap (counted where its client sent it, so not
 * again off the broker), and the risk list. */
static int judge_controls(const pd_intake *in, pd_job *j, int from, int *status, unsigned *retry_after,
			  pd_err *e)
{
	const char *key = pd_job_problem_key(j);
	if (from == PD_INTAKE_CLIENT && in->caps && !pd_caps_take(in->caps, key, 1, retry_after)) {
		*status = 429;
		return pd_refuse(e,
				 "problem_id: %s has had its %u submissions in %u s (--problem-submit-max): retry in %u s",
				 key, pd_caps_max(in->caps), pd_caps_window_s(in->caps), *retry_after);
	}
	if (in->store && pd_store_risky(in->store, key))
		pd_judge_job_risky(j);
	return 0;
}

/* Rule 6's default: the deadline its client most likely has. SandboxFusion's clients (verl's)
 * read for compile + run timeout + 10 s, Piston's wait for its run and compile timeouts; the
 * native API's steps have their limits (or the template's). Plus the margin: the sandbox's setup,
 * the answer's way back. */
static void default_deadline(const pd_intake *in, pd_job *j, uint64_t arrived)
{
	if (j->deadline_us || !in->deadline_margin_s)
		return;
	const pd_template *t = in->pools ? pd_pools_template(in->pools, j->template_name) : NULL;
	uint64_t tw = t ? t->limits.wall_ms : 0;
	uint64_t run = j->run.wall_ms ? j->run.wall_ms : tw;
	uint64_t comp = j->compile.wall_ms ? j->compile.wall_ms : j->compile.argv ? tw : 0;
	if (!run)
		return; /* no limit on the run: no deadline can be derived */
	j->deadline_us = arrived + (run + comp + (uint64_t)in->deadline_margin_s * 1000) * 1000;
}

pd_job *pd_intake_check(const pd_intake *in, const pd_api *api, json_t *body, int from, uint64_t waited_us,
			int *status, unsigned *retry_after, pd_err *e)
{
	*retry_after = 0;
	pd_job *j = api->parse(in, body, status, e); /* 1 */
	if (!j)
		return NULL;
	/* a deadline counts from the request's arrival, not from the moment a node took it off the
	 * broker (a deadline already past stays one: queue_timeout, never a run without one) */
	uint64_t arrived = pd_now_us();
	arrived = arrived > waited_us ? arrived - waited_us : 1;
	if (j->deadline_us)
		j->deadline_us = j->deadline_us > waited_us + 1 ? j->deadline_us - waited_us : 1;
	if (check_where(in, api, body, from, j, status, e) < 0) /* 2 */
		goto refused;
	*status = 400;
	/* 3: a policy that would widen the template's is the client's error, said now; the judge
	 * checked its own (the problem's too) as it parsed */
	if (!api->judged && in->pools && pd_job_audit_policy(j, pd_pools_template(in->pools, j->template_name), e) < 0)
		goto refused;
	if (api->judged ? judge_controls(in, j, from, status, retry_after, e) < 0 /* 4 */
			: run_controls(in, j, status, e) < 0)
		goto refused;
	*status = 400;
	if (j->network[0]) { /* 5 */
		char why[300];
		if (!in->network_pick) {
			pd_refuse(e, "%s", in->no_network ? in->no_network : "network: not one this daemon allows");
			goto refused_counted;
		}
		if (in->network_pick(in->arg, j, why, sizeof why) < 0) {
			pd_refuse(e, "%s", why);
			goto refused_counted;
		}
	}
	if (!api->judged) /* 6: a judged submission's time is its tests', not one run's */
		default_deadline(in, j, arrived);
	j->mem_fast_off = api->mem_fast_off; /* 7 */
	if (api->keep_whole)
		j->run.keep_whole = j->compile.keep_whole = in->run_code_output_max ? in->run_code_output_max : 16u << 20;
	return j;
refused_counted:
	pd_intake_drop(in, j, from == PD_INTAKE_CLIENT && api->judged);
	return NULL;
refused:
	pd_job_free(j);
	return NULL;
}

void pd_intake_drop(const pd_intake *in, pd_job *j, bool give_back)
{
	if (j && give_back && in->caps)
		pd_caps_give_back(in->caps, pd_job_problem_key(j), 1);
	pd_job_free(j);
}

pd_admit pd_intake_admit(const pd_intake *in, const pd_api *api, pd_job *j, int *status, unsigned *retry_after,
			 char *why, size_t len)
{
	pd_admit a = pd_sched_submit(in->sched, j);
	if (a == PD_ADMIT_OK)
		return a;
	*status = api->overload_status;
	*retry_after = j->retry_after_s ? j->retry_after_s : 1;
	if (a == PD_ADMIT_DISK_FULL) {
		/* not an overload to retry at once: the operator must free space */
		*status = 507;
		*retry_after = 30;
		if (in->store && pd_store_full(in->store, why, len))
			return a;
	}
	snprintf(why, len, "%s", pd_admit_text(a));
	return a;
}
