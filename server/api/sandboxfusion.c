/* SandboxFusion's API (POST /run_code): its request parser and its response, derived from the
 * job (statuses, and stdout/stderr from the result record). */
#define _GNU_SOURCE
#include "api.h"
#include "intake.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pd_job *pd_job_from_run_code(json_t *req, pd_err *e)
{
	if (!json_is_object(req)) {
		pd_refuse(e, "request: must be a JSON object");
		return NULL;
	}
	json_t *code = json_object_get(req, "code"), *lang = json_object_get(req, "language");
	if (!code || !json_is_string(code)) {
		pd_refuse(e, "code: required, a string");
		return NULL;
	}
	if (!lang || !json_is_string(lang)) {
		pd_refuse(e, "language: required, a string");
		return NULL;
	}
	json_t *args = json_object_get(req, "args");
	if (args && !json_is_null(args) && !json_is_array(args)) {
		pd_refuse(e, "args: must be a list of strings");
		return NULL;
	}
	pd_job *j = pd_job_new();
	if (!j) {
		pd_fail(e, ENOMEM, "job");
		return NULL;
	}
	if (api_set_language(j, json_string_value(lang), json_string_value(code), json_string_length(code),
			 args, e) < 0)
		goto fail;
	/* SandboxFusion's run_timeout is wall-clock, and it runs many programs at once: the
	 * scheduler's wall class (server.h) */
	j->wall_shared = true;
	/* SandboxFusion's defaults: 10 s to compile, 10 s to run */
	j->compile.wall_ms = 10000;
	j->run.wall_ms = 10000;
	if (api_get_seconds(req, "compile_timeout", "compile_timeout", &j->compile.wall_ms, e) < 0 ||
	    api_get_seconds(req, "run_timeout", "run_timeout", &j->run.wall_ms, e) < 0)
		goto fail;
	if (api_parse_network(j, req, e) < 0)
		goto fail;
	json_t *mem = json_object_get(req, "memory_limit_MB");
	if (mem && !json_is_null(mem)) {
		if (!json_is_number(mem)) {
			pd_refuse(e, "memory_limit_MB: must be a number");
			goto fail;
		}
		double mb = json_number_value(mem);
		if (mb > 0) {
			if (mb < 4 || mb > 16777216) {
				pd_refuse(e, "memory_limit_MB: from 4 to 16777216 (16 TiB)");
				goto fail;
			}
			j->memory_bytes = (uint64_t)(mb * 1048576.0);
		}
	}
	if (api_parse_stdin(j, json_object_get(req, "stdin"), e) < 0)
		goto fail;
	/* SandboxFusion clients send null for "no files" and for a file they leave out */
	if (api_parse_b64_files(j, json_object_get(req, "files"), "files", true, e) < 0)
		goto fail;
	if (api_parse_fetch(j, json_object_get(req, "fetch_files"), e) < 0)
		goto fail;
	if (api_common_ids(j, req, e) < 0)
		goto fail;
	return j;
fail:
	pd_job_free(j);
	return NULL;
}


/* The step's stdout or stderr: the whole output when the step kept it (keep_whole), else the
 * record's text (head and tail), made alone: rendering the step's whole record for it was a
 * second rendering of the result per answer (issue 42). */
static json_t *stream_text(const pd_result *r, const pd_step *st, int i)
{
	if (st->whole[i])
		return pd_json_bytes(st->whole[i], st->whole_len[i]);
	json_t *t = pd_output_json(i ? &r->err : &r->out);
	return t ? t : json_string("");
}

static json_t *fusion_result(const pd_result *r, const pd_step *st)
{
	json_t *o = json_object();
	const char *st_name = r->status == PD_TO ? "TimeLimitExceeded" : r->status == PD_XX ? "Error" : "Finished";
	json_object_set_new(o, "status", json_string(st_name));
	json_object_set_new(o, "execution_time", json_real(r->exec_us / 1e6));
	/* as SandboxFusion (Python's subprocess) reports it: a process ended by a signal has the
	 * negative signal number; a time-out or a sandbox fault has none */
	json_object_set_new(o, "return_code", r->status == PD_TO || r->status == PD_XX ? json_null()
					      : r->signal ? json_integer(-r->signal)
							  : json_integer(r->exit_code));
	json_object_set_new(o, "stdout", stream_text(r, st, 0));
	json_object_set_new(o, "stderr", stream_text(r, st, 1));
	return o;
}

json_t *pd_job_to_run_code(const pd_job *j)
{
	json_t *o = json_object();
	const char *status, *message = "";
	if (j->failure == PD_F_STARTUP || j->failure == PD_F_INTERNAL || j->failure == PD_F_DEPENDENCY ||
	    j->failure == PD_F_QUEUE || j->failure == PD_F_CANCELLED ||
	    (!j->compiled && !j->ran)) {
		status = "SandboxError";
		message = j->error[0] ? j->error : pd_failure_name(j->failure);
	} else if (j->ran && j->run_r.status == PD_OK) {
		status = "Success";
	} else {
		status = "Failed";
	}
	json_object_set_new(o, "status", json_string(status));
	json_object_set_new(o, "message", pd_json_text(message));
	json_object_set_new(o, "compile_result", j->compiled ? fusion_result(&j->compile_r, &j->compile) : json_null());
	json_object_set_new(o, "run_result", j->ran ? fusion_result(&j->run_r, &j->run) : json_null());
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	json_object_set_new(o, "executor_pod_name", json_string(j->node[0] ? j->node : host));
	json_object_set_new(o, "node", json_string(j->node[0] ? j->node : host));
	/* a file that could not be read is left out, as SandboxFusion does: its response model
	 * (Dict[str, str]) refuses the whole answer for one null */
	json_t *files = api_files_json(j);
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(files, tmp, k, v)
		if (json_is_null(v))
			json_object_del(files, k);
	json_object_set_new(o, "files", files);
	/* paddock's own fields, which SandboxFusion clients ignore */
	json_object_set_new(o, "failure_class", json_string(pd_failure_name(j->failure)));
	json_object_set_new(o, "sandbox_id", json_string(j->sandbox_id));
	json_object_set_new(o, "use_id", j->use_id[0] ? json_string(j->use_id) : json_null());
	json_object_set_new(o, "isolation", json_string(api_isolation_of(j)));
	if (j->audit) {
		json_object_set_new(o, "process", api_process_json(j));
		json_object_set_new(o, "audit", api_audit_json(j));
	}
	if (j->risk_list)
		json_object_set_new(o, "risk_list", json_true());
	return o;
}

/* ---- its row (server/intake.h) ---- */

static pd_job *parse(const pd_intake *in, json_t *body, int *status, pd_err *e)
{
	(void)in;
	*status = 400;
	return pd_job_from_run_code(body, e);
}

static json_t *render(const pd_job *j, int *status)
{
	*status = 200;
	return pd_job_to_run_code(j);
}

/* verl's SandboxFusion client retries on 504 only: overload must say 504 there */
const pd_api pd_api_run_code = {.name = "run_code", .route = "/run_code", .parse = parse, .render = render,
				.error_body = pd_api_error_plain, .overload_status = 504, .keep_whole = true};
