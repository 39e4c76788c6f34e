/* A job's three-level verdict (DESIGN §4) as the record states it, and whether the attempt is
 * usable for training: one definition, read by the record (server/api/native.c) and by the
 * operator metrics (server/opsmetrics.c), so that paddock_usable_samples_total counts exactly the
 * records that say "usable": true.
 *
 * Without a judge the output level is never decided ("not_judged"), so no run is usable: the
 * cost per usable sample is then honestly undefined rather than flattered by unjudged runs. */
#include "server.h"

const char *pd_resources_level(pd_failure f, bool ran)
{
	return f == PD_F_TIMEOUT || f == PD_F_OOM || f == PD_F_OUTPUT ? "fail" : ran ? "pass" : "not_judged";
}

void pd_job_verdict(const pd_job *j, pd_job_verdict_t *v)
{
	bool ran = j->ran || j->compiled;
	v->output = "not_judged";
	/* the audit's level (pd_audit_verdict): never "pass" for a run nobody watched */
	v->process = pd_process_status_name(j->verdict.status);
	v->resources = pd_resources_level(j->failure, ran);
	v->usable = !strcmp(v->output, "pass") && !strcmp(v->process, "pass") && !strcmp(v->resources, "pass");
}
