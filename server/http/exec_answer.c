/* An exec's answer, shared by the plain exec (session_ops.c) and the streamed one (exec_stream.c):
 * the result record with its process verdict, ids and noise; the recorded answer of a resumed
 * trajectory's step; the status of a step that did not run. Calls no other session file. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *session_exec_fast_forward(sess_entry *se, const char *rid)
{
	json_t *ff = rid ? pd_session_fast_forward(se->s, "exec", rid) : NULL;
	if (ff) {
		/* recorded by the trajectory this session resumes: answered from it, not run */
		json_object_set_new(ff, "session_id", json_string(se->id));
		json_object_set_new(ff, "request_id", json_string(rid));
		json_object_set_new(ff, "fast_forward", json_true());
	}
	return ff;
}

int session_exec_status(const pd_err *e)
{
	return e->code == EBUSY || e->code == EDQUOT ? 409 : e->code == ESRCH ? 410 : 400;
}

json_t *session_exec_answer(sess_entry *se, const pd_session_exec_req *q, const pd_session_step *st,
			    pd_result *res)
{
	/* the process level of this exec, first: its output is evidence too */
	pd_audit_verdict v = q->verdict;
	if (q->audit && !q->evaluated)
		pd_audit_evaluate(q->audit, res, NULL, &v);
	if (se->image_name[0]) /* the session's pool is per digest: the name is the one it was opened by */
		snprintf(res->image_name, sizeof res->image_name, "%s", se->image_name);
	json_t *o = pd_result_json(res, true);
	if (!o)
		return NULL;
	if (q->audit) {
		json_t *vo = pd_audit_verdict_json(&v);
		json_object_set_new(o, "process", vo ? vo : json_null());
	}
	json_object_set_new(o, "session_id", json_string(se->id));
	json_object_set_new(o, "template_version", se->template_version[0] ? json_string(se->template_version) : json_null());
	/* without a client id, the exec is recorded as "#<n>": say which, for /output */
	json_object_set_new(o, "request_id", json_string(st->output_request_id));
	if (st->ran_by[0]) /* several agents in the session: whose step it was */
		json_object_set_new(o, "agent", json_string(st->ran_by));
	char *noise = pd_session_noise_of(se->s, st->output_request_id);
	if (noise)
		json_object_set_new(o, "noise", json_loads(noise, 0, NULL));
	free(noise);
	return o;
}
