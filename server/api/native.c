/* The native API (POST /v1/runs, and `paddock run`'s lines): its request parser. Its answer is the
 * job's observation record, pd_job_to_json (server/job.c), which the store keeps too. */
#define _GNU_SOURCE
#include "api.h"
#include "intake.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NATIVE_OUTPUT_MAX (256ull << 20) /* limits.output: a run's spill is at most this */

/* The request's shape before any of it is read: an object of known fields only, "idempotent" a
 * boolean that names a task_id. -1 (refused) otherwise. */
static int check_shape(json_t *req, pd_err *e)
{
	static const char *const known[] = {
		"template", "language", "code",   "files",       "files_base64", "cmd",
		"shell",    "compile",  "stdin",  "args",        "limits",       "env",
		"cwd",      "fetch_files", "priority", "deadline_ms", "task_id", "problem_id",
		"problem_version", "audit", "request_id", "image", "isolation", "network", "idempotent", NULL};
	if (!json_is_object(req)) {
		pd_refuse(e, "request: must be a JSON object");
		return -1;
	}
	const char *k;
	json_t *v;
	json_object_foreach(req, k, v) {
		bool ok = false;
		for (int i = 0; known[i]; i++)
			ok |= !strcmp(k, known[i]);
		if (!ok) {
			pd_refuse(e, "%s: unknown field", k);
			return -1;
		}
	}
	json_t *idem = json_object_get(req, "idempotent");
	if (idem && !json_is_boolean(idem)) {
		pd_refuse(e, "idempotent: must be true or false");
		return -1;
	}
	if (json_is_true(idem) && !json_is_string(json_object_get(req, "task_id"))) {
		pd_refuse(e, "idempotent: needs a task_id (the run it names)");
		return -1;
	}
	return 0;
}

/* "language" with "code", "template", "cmd" or "shell" with "args", "compile": the steps. */
static int parse_language(pd_job *j, json_t *req, json_t *args, pd_err *e)
{
	json_t *lang = json_object_get(req, "language"), *code = json_object_get(req, "code");
	if (args && !json_is_array(args))
		return pd_refuse(e, "args: must be a list of strings");
	if (code && !json_is_string(code))
		return pd_refuse(e, "code: must be a string");
	if (!lang)
		return code ? pd_refuse(e, "code: needs a language") : 0;
	if (!json_is_string(lang))
		return pd_refuse(e, "language: must be a string");
	if (api_set_language(j, json_string_value(lang), code ? json_string_value(code) : NULL,
			     code ? json_string_length(code) : 0, args, e) < 0)
		return -1;
	/* without it the language's program runs on a source file nobody wrote (python3 main.py:
	 * exit 2) and the record looks like the client's program failed */
	if (!code)
		return pd_refuse(e, "code: required with language");
	return 0;
}

static int parse_command(pd_job *j, json_t *req, json_t *args, pd_err *e)
{
	json_t *cmd = json_object_get(req, "cmd"), *shell = json_object_get(req, "shell");
	if (cmd && shell)
		return pd_refuse(e, "cmd: give cmd or shell, not both");
	if (!cmd && !shell)
		return 0;
	api_free_vec(j->run.argv);
	j->run.argv = NULL;
	if (shell) {
		if (!json_is_string(shell))
			return pd_refuse(e, "shell: must be a string");
		j->run.argv = api_sh_argv(json_string_value(shell), args);
		return 0;
	}
	char **base = api_str_array(cmd, "cmd", 4096, e);
	if (!base)
		return -1;
	for (size_t i = 0; args && i < json_array_size(args); i++)
		if (!json_is_string(json_array_get(args, i))) {
			api_free_vec(base);
			return pd_refuse(e, "args[%zu]: must be a string", i);
		}
	/* args follow the command, as they follow a language's program */
	j->run.argv = api_run_argv((const char *const *)base, args);
	api_free_vec(base);
	return j->run.argv ? 0 : pd_fail(e, ENOMEM, "args");
}

static int parse_program(pd_job *j, json_t *req, pd_err *e)
{
	json_t *args = json_object_get(req, "args");
	if (parse_language(j, req, args, e) < 0)
		return -1;
	json_t *tpl = json_object_get(req, "template");
	if (tpl) {
		if (!json_is_string(tpl) || json_string_length(tpl) >= sizeof j->template_name)
			return pd_refuse(e, "template: must be a template name");
		snprintf(j->template_name, sizeof j->template_name, "%s", json_string_value(tpl));
	}
	if (!j->template_name[0])
		snprintf(j->template_name, sizeof j->template_name, "bash");
	if (parse_command(j, req, args, e) < 0)
		return -1;
	json_t *comp = json_object_get(req, "compile");
	if (comp) {
		api_free_vec(j->compile.argv);
		j->compile.argv = NULL;
		if (!json_is_null(comp) && !(j->compile.argv = api_str_array(comp, "compile", 4096, e)))
			return -1;
	}
	if (!j->run.argv)
		return pd_refuse(e, "cmd: give cmd, shell, or a language with code");
	return 0;
}

/* "files": path: text. */
static int parse_text_files(pd_job *j, json_t *files, pd_err *e)
{
	if (!files)
		return 0;
	if (!json_is_object(files))
		return pd_refuse(e, "files: must be an object of path: text");
	const char *k;
	json_t *v;
	json_object_foreach(files, k, v) {
		char field[300];
		api_field_name(field, sizeof field, "files", k);
		if (api_check_path(field, k, e) < 0)
			return -1;
		if (!json_is_string(v))
			return pd_refuse(e, "%s: must be a string", field);
		if (api_add_file(j, k, json_string_value(v), json_string_length(v)) < 0)
			return pd_fail(e, ENOMEM, "%s", field);
	}
	return 0;
}

/* A size as bytes (a positive integer) or text ("256M"): 0 when it is neither. */
static uint64_t size_of(json_t *v)
{
	uint64_t b = 0;
	if (json_is_integer(v) && json_integer_value(v) > 0)
		return (uint64_t)json_integer_value(v);
	if (json_is_string(v) && pd_parse_size(json_string_value(v), &b) == 0)
		return b;
	return 0;
}

/* "limits": wall_time, cpu_time, memory, compile_wall_time, output. */
static int parse_limits(pd_job *j, json_t *lim, pd_err *e)
{
	if (!lim)
		return 0;
	if (!json_is_object(lim))
		return pd_refuse(e, "limits: must be an object");
	const char *k;
	json_t *v;
	json_object_foreach(lim, k, v) {
		if (strcmp(k, "wall_time") && strcmp(k, "cpu_time") && strcmp(k, "memory") &&
		    strcmp(k, "compile_wall_time") && strcmp(k, "output"))
			return pd_refuse(e, "limits.%s: unknown field (wall_time, cpu_time, memory, "
					    "compile_wall_time, output)", k);
	}
	/* the run's output (stdout and stderr together) past which it is stopped as OL: all of it up
	 * to there can be fetched (GET /v1/runs/{task_id}/output) */
	json_t *out = json_object_get(lim, "output");
	if (out) {
		uint64_t b = size_of(out);
		if (b < 1024 || b > NATIVE_OUTPUT_MAX)
			return pd_refuse(e, "limits.output: must be bytes or a size like \"16M\", from 1k to 256M");
		j->run.output_kill_bytes = b;
	}
	if (api_get_seconds(lim, "wall_time", "limits.wall_time", &j->run.wall_ms, e) < 0 ||
	    api_get_seconds(lim, "cpu_time", "limits.cpu_time", &j->run.cpu_ms, e) < 0 ||
	    api_get_seconds(lim, "compile_wall_time", "limits.compile_wall_time", &j->compile.wall_ms, e) < 0)
		return -1;
	json_t *mem = json_object_get(lim, "memory");
	if (mem) {
		uint64_t b = size_of(mem);
		if (!b)
			return pd_refuse(e, "limits.memory: must be bytes or a size like \"256M\"");
		if (b < (4u << 20))
			return pd_refuse(e, "limits.memory: at least 4M");
		j->memory_bytes = b;
	}
	return 0;
}

/* "env": name: value; "cwd": an absolute path. */
static int parse_env(pd_job *j, json_t *req, pd_err *e)
{
	json_t *env = json_object_get(req, "env");
	if (env) {
		if (!json_is_object(env) || json_object_size(env) > 256)
			return pd_refuse(e, "env: must be an object of at most 256 strings");
		j->env = calloc(json_object_size(env) + 5, sizeof *j->env);
		if (!j->env)
			return pd_fail(e, ENOMEM, "env");
		size_t i = 0;
		const char *k;
		json_t *v;
		json_object_foreach(env, k, v) {
			if (!json_is_string(v) || !*k || strchr(k, '='))
				return pd_refuse(e, "env.%s: must be a string, the name without '='", k);
			if (asprintf(&j->env[i++], "%s=%s", k, json_string_value(v)) < 0)
				return pd_fail(e, ENOMEM, "env");
		}
	}
	json_t *cwd = json_object_get(req, "cwd");
	if (cwd) {
		if (!json_is_string(cwd) || json_string_value(cwd)[0] != '/')
			return pd_refuse(e, "cwd: must be an absolute path");
		free(j->cwd);
		j->cwd = strdup(json_string_value(cwd));
	}
	return 0;
}

pd_job *pd_job_from_native(json_t *req, pd_err *e)
{
	if (check_shape(req, e) < 0)
		return NULL;
	pd_job *j = pd_job_new();
	if (!j) {
		pd_fail(e, ENOMEM, "job");
		return NULL;
	}
	if (parse_program(j, req, e) < 0 || parse_text_files(j, json_object_get(req, "files"), e) < 0 ||
	    api_parse_b64_files(j, json_object_get(req, "files_base64"), "files_base64", false, e) < 0 ||
	    api_parse_stdin(j, json_object_get(req, "stdin"), e) < 0 ||
	    parse_limits(j, json_object_get(req, "limits"), e) < 0 || parse_env(j, req, e) < 0 ||
	    api_parse_fetch(j, json_object_get(req, "fetch_files"), e) < 0 || api_parse_network(j, req, e) < 0 ||
	    api_common_ids(j, req, e) < 0) {
		pd_job_free(j);
		return NULL;
	}
	return j;
}

/* ---- its row (server/intake.h) ---- */

static pd_job *parse(const pd_intake *in, json_t *body, int *status, pd_err *e)
{
	(void)in;
	*status = 400;
	return pd_job_from_native(body, e);
}

static json_t *render(const pd_job *j, int *status)
{
	*status = 200;
	return pd_job_to_json(j);
}

const pd_api pd_api_native = {.name = "native", .route = "/v1/runs", .parse = parse, .render = render,
			      .error_body = pd_api_error_plain, .overload_status = 503, .output_dir = true};
