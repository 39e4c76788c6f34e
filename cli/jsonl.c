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

/* A JSON string that is a C string: no NUL inside, which the kernel (argv, paths) would cut at.
 * Defensive: lines are loaded without JSON_ALLOW_NUL, so jansson refuses \u0000 already. */
static bool c_string(json_t *v)
{
	return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
}

/* How many bytes of the UTF-8 text s, at most max, end on a character boundary: a message quoting
 * a client's text stays UTF-8. */
static int utf8_prefix(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);
	return (int)(n <= max ? n : pd_utf8_cut(s, max));
}

/* seconds from 0 to a day, as native limits.wall_time; 1e300 x 1000 would not convert to uint64_t */
static int batch_seconds(json_t *j, const char *key, uint64_t *ms, char *err, size_t errlen)
{
	json_t *v = json_object_get(j, key);
	*ms = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || !(json_number_value(v) >= 0) || json_number_value(v) > 86400)
		return batch_refuse(err, errlen, "%s: must be a number of seconds from 0 to 86400", key);
	*ms = (uint64_t)(json_number_value(v) * 1000);
	return 0;
}

int cli_batch_parse(json_t *j, cli_batch_req *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->x.argv = r->argv;
	r->x.stdin_fd = -1;
	r->id = json_object_get(j, "id"); /* first: a refusal's line carries it */
	json_t *tj = json_object_get(j, "template");
	r->template_name = tj ? json_string_value(tj) : "bash";
	if (!r->template_name || (tj && !c_string(tj)))
		return batch_refuse(err, errlen, "template: must be a string");
	static char sh[] = "/bin/sh", dash_c[] = "-c";
	json_t *cmd = json_object_get(j, "cmd"), *shell = json_object_get(j, "shell");
	if (cmd && shell)
		return batch_refuse(err, errlen, "give \"cmd\" or \"shell\", not both");
	if (cmd && json_is_array(cmd) && json_array_size(cmd) > 0 && json_array_size(cmd) <= CLI_BATCH_MAX_ARGV) {
		size_t i;
		json_t *a;
		json_array_foreach(cmd, i, a) {
			if (!c_string(a))
				return batch_refuse(err, errlen, "cmd: every element must be a string without NUL bytes");
			r->argv[i] = (char *)json_string_value(a);
		}
	} else if (shell && c_string(shell)) {
		r->argv[0] = sh;
		r->argv[1] = dash_c;
		r->argv[2] = (char *)json_string_value(shell);
	} else {
		return batch_refuse(err, errlen,
				    "give \"cmd\" (a list of 1 to %d strings) or \"shell\" (a string), without NUL bytes",
				    CLI_BATCH_MAX_ARGV);
	}
	json_t *in = json_object_get(j, "stdin");
	if (in && !json_is_null(in)) {
		if (!json_is_string(in))
			return batch_refuse(err, errlen, "stdin: must be a string");
		r->x.stdin_data = json_string_value(in);
		r->x.stdin_len = json_string_length(in);
	}
	if (batch_seconds(j, "wall_time", &r->x.wall_ms, err, errlen) < 0 ||
	    batch_seconds(j, "cpu_time", &r->x.cpu_ms, err, errlen) < 0)
		return -1;
	json_t *cwd = json_object_get(j, "cwd");
	if (cwd && !json_is_null(cwd)) {
		if (!c_string(cwd) || json_string_length(cwd) > 1023)
			return batch_refuse(err, errlen, "cwd: must be a path of at most 1023 bytes, without NUL bytes");
		r->x.cwd = json_string_value(cwd);
	}
	/* checked here, before a sandbox is taken for the request */
	json_t *files = json_object_get(j, "files");
	if (files && !json_is_null(files)) {
		if (!json_is_object(files))
			return batch_refuse(err, errlen, "files: must be an object of path: text");
		for (void *it = json_object_iter(files); it; it = json_object_iter_next(files, it)) {
			const char *k = json_object_iter_key(it);
			size_t kl = json_object_iter_key_len(it);
			if (!kl || kl > 1023 || strlen(k) != kl)
				return batch_refuse(err, errlen, "files.%.*s: a path must have 1 to 1023 bytes, without NUL bytes",
						    utf8_prefix(k, 80), k);
			if (!json_is_string(json_object_iter_value(it)))
				return batch_refuse(err, errlen, "files.%.*s: must be a string", utf8_prefix(k, 80), k);
		}
		r->files = files;
	}
	return 0;
}

char *cli_batch_error_line(int line, json_t *id, const char *msg)
{
	json_t *o = json_object();
	json_object_set_new(o, "line", json_integer(line));
	if (id)
		json_object_set(o, "id", id);
	json_object_set_new(o, "status", json_string("XX"));
	/* msg may quote a client's text cut to fit, or jansson's error text: never drop it */
	json_object_set_new(o, "error", pd_json_text(msg));
	char *s = pd_json_dumps(o, JSON_COMPACT);
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

const pd_api *cli_run_api(json_t *o)
{
	bool rc = is_run_code(o);
	json_object_del(o, "schema");
	return rc ? &pd_api_run_code : &pd_api_native;
}

pd_job *cli_run_job(json_t *o, bool *run_code, pd_err *e)
{
	const pd_api *api = cli_run_api(o);
	*run_code = api == &pd_api_run_code;
	int status;
	return api->parse(NULL, o, &status, e);
}

static char *dump(json_t *o)
{
	char *text = pd_json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

char *cli_run_refusal(int line, const char *task_id, const char *msg)
{
	/* not an attempt: no program status, no failure class; pd_json_text as the message may quote
	 * a client's text (a field name) */
	json_t *o = json_pack("{s:i,s:s,s:o}", "line", line, "refused", "bad_request", "error", pd_json_text(msg));
	if (task_id && *task_id)
		json_object_set_new(o, "task_id", pd_json_text(task_id));
	return dump(o);
}

char *cli_run_unrun(int line, const char *task_id, pd_failure f, const char *msg)
{
	json_t *o = json_pack("{s:i,s:s,s:s,s:o}", "line", line, "status", "XX", "failure_class", pd_failure_name(f),
			      "error", pd_json_text(msg));
	if (task_id && *task_id)
		json_object_set_new(o, "task_id", pd_json_text(task_id));
	return dump(o);
}
