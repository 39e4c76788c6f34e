/* The request lines of paddock batch and paddock run: reading them, and what each command takes
 * from one. The fuzzer (fuzz/fuzz_cli_jsonl.c) drives these functions as the commands do. */
#define _GNU_SOURCE
#include "jsonl.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_jsonl_next(FILE *in, char **line, size_t *cap, int *lineno, json_t **out, json_error_t *je)
{
	ssize_t len;
	*out = NULL;
	while ((len = getline(line, cap, in)) >= 0) {
		(*lineno)++;
		if (strspn(*line, " \t\r\n") == (size_t)len)
			continue;
		json_t *o = json_loadb(*line, (size_t)len, 0, je);
		if (!o)
			return CLI_LINE_NOT_JSON;
		if (!json_is_object(o)) {
			json_decref(o);
			return CLI_LINE_NOT_OBJECT;
		}
		*out = o;
		return CLI_LINE_OK;
	}
	return CLI_LINE_EOF;
}

/* ---- paddock batch ------------------------------------------------------------------------- */

static int batch_refuse(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int batch_refuse(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int cli_batch_parse(json_t *j, cli_batch_req *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->x.argv = r->argv;
	r->x.stdin_fd = -1;
	r->id = json_string_value(json_object_get(j, "id"));
	json_t *tj = json_object_get(j, "template");
	r->template_name = tj ? json_string_value(tj) : "bash";
	if (!r->template_name)
		return batch_refuse(err, errlen, "template: must be a string");
	static char sh[] = "/bin/sh", dash_c[] = "-c";
	json_t *cmd = json_object_get(j, "cmd"), *shell = json_object_get(j, "shell");
	if (cmd && json_is_array(cmd) && json_array_size(cmd) > 0 && json_array_size(cmd) <= CLI_BATCH_MAX_ARGV) {
		size_t i;
		json_t *a;
		json_array_foreach(cmd, i, a) {
			if (!json_is_string(a))
				return batch_refuse(err, errlen, "cmd: every element must be a string");
			r->argv[i] = (char *)json_string_value(a);
		}
	} else if (shell && json_is_string(shell) && !cmd) {
		r->argv[0] = sh;
		r->argv[1] = dash_c;
		r->argv[2] = (char *)json_string_value(shell);
	} else {
		return batch_refuse(err, errlen, "give \"cmd\" (a list of 1 to %d strings) or \"shell\" (a string)",
				    CLI_BATCH_MAX_ARGV);
	}
	json_t *in = json_object_get(j, "stdin");
	if (in && json_is_string(in)) {
		r->x.stdin_data = json_string_value(in);
		r->x.stdin_len = json_string_length(in);
	}
	json_t *v;
	if ((v = json_object_get(j, "wall_time")) && json_is_number(v) && json_number_value(v) > 0)
		r->x.wall_ms = (uint64_t)(json_number_value(v) * 1000);
	if ((v = json_object_get(j, "cpu_time")) && json_is_number(v) && json_number_value(v) > 0)
		r->x.cpu_ms = (uint64_t)(json_number_value(v) * 1000);
	if ((v = json_object_get(j, "cwd")) && json_is_string(v))
		r->x.cwd = json_string_value(v);
	r->files = json_object_get(j, "files");
	return 0;
}

char *cli_batch_error_line(int line, const char *id, const char *msg)
{
	json_t *o = json_object();
	json_object_set_new(o, "line", json_integer(line));
	if (id)
		json_object_set_new(o, "id", json_string(id));
	json_object_set_new(o, "status", json_string("XX"));
	json_object_set_new(o, "error", json_string(msg));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* ---- paddock run --------------------------------------------------------------------------- */

static bool is_run_code(json_t *o)
{
	json_t *sch = json_object_get(o, "schema");
	if (sch)
		return json_is_string(sch) && !strcmp(json_string_value(sch), "run_code");
	return json_object_get(o, "compile_timeout") || json_object_get(o, "run_timeout") ||
	       json_object_get(o, "memory_limit_MB");
}

pd_job *cli_run_job(json_t *o, bool *run_code, pd_err *e)
{
	*run_code = is_run_code(o);
	json_object_del(o, "schema");
	return *run_code ? pd_job_from_run_code(o, e) : pd_job_from_native(o, e);
}

char *cli_run_refusal(int line, const char *msg)
{
	pd_err e = {0};
	snprintf(e.msg, sizeof e.msg, "%s", msg);
	const char *m = pd_refusal_text(&e);
	json_t *o = json_pack("{s:i,s:s,s:s,s:s}", "line", line, "status", "XX", "failure_class", "internal_error",
			      "error", m);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}
