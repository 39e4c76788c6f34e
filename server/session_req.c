/* Session requests: the client's bytes of the session API (URL, query parameters, the create and
 * exec bodies), parsed apart from the HTTP plumbing, so that http.c and the fuzzer
 * (fuzz/fuzz_session_*.c) run the same code. */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGV 4096 /* the runtime's PD_MAX_ARGS */

/* A refusal: code EINVAL and the message alone (the client needs the field and the reason, not
 * strerror's "Invalid argument"). The messages quote no client bytes, so they are ASCII. */
static int refuse(pd_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(pd_err *e, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
		e->code = EINVAL;
	}
	errno = EINVAL;
	return -1;
}

/* ---- URL and query ------------------------------------------------------------------------- */

int pd_session_url(const char *url, char *id, size_t id_size, char *op, size_t op_size)
{
	(void)id_size;
	(void)op_size;
	id[0] = op[0] = 0;
	sscanf(url, "/v1/sessions/%47[^/]/%31s", id, op);
	return 0;
}

void pd_session_query_set(pd_session_query *q, const char *key, const char *v, size_t len)
{
	(void)len;
	if (!key || !v)
		return;
	if (!strcmp(key, "path"))
		snprintf(q->path, sizeof q->path, "%s", v);
	else if (!strcmp(key, "dir"))
		snprintf(q->dir, sizeof q->dir, "%s", v);
	else if (!strcmp(key, "request_id"))
		snprintf(q->request_id, sizeof q->request_id, "%s", v);
	else if (!strcmp(key, "stream"))
		q->stderr_stream = !strcmp(v, "stderr");
	else if (!strcmp(key, "list"))
		q->list = !strcmp(v, "1") || !strcmp(v, "true");
}

/* ---- bodies -------------------------------------------------------------------------------- */

int pd_session_create_parse(const char *body, size_t len, pd_session_create_req *q, pd_err *e)
{
	memset(q, 0, sizeof *q);
	json_error_t je;
	json_t *b = len ? json_loadb(body, len, 0, &je) : json_object();
	if (!b || !json_is_object(b)) {
		json_decref(b);
		return refuse(e, "request body must be a JSON object");
	}
	json_t *t = json_object_get(b, "template");
	snprintf(q->template_name, sizeof q->template_name, "%s",
		 t && json_is_string(t) ? json_string_value(t) : "bash");
	json_t *ttl = json_object_get(b, "ttl"), *life = json_object_get(b, "max_lifetime"),
	       *meta = json_object_get(b, "metadata");
	if (ttl && json_is_number(ttl) && json_number_value(ttl) > 0)
		q->o.idle_ttl_ms = (uint64_t)(json_number_value(ttl) * 1000);
	if (life && json_is_number(life) && json_number_value(life) > 0)
		q->o.max_lifetime_ms = (uint64_t)(json_number_value(life) * 1000);
	q->o.metadata = meta ? json_dumps(meta, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(b);
	return 0;
}

void pd_session_create_req_free(pd_session_create_req *q)
{
	free((char *)q->o.metadata);
	q->o.metadata = NULL;
}

int pd_session_exec_parse(const char *body, size_t len, pd_session_exec_req *q, pd_err *e)
{
	memset(q, 0, sizeof *q);
	json_error_t je;
	json_t *b = q->body = json_loadb(body ? body : "", len, 0, &je);
	if (!b || !json_is_object(b)) {
		refuse(e, "request body must be a JSON object");
		goto fail;
	}
	json_t *cmd = json_object_get(b, "cmd"), *shell = json_object_get(b, "shell");
	char **argv = NULL;
	if (cmd && json_is_array(cmd) && json_array_size(cmd) > 0 && json_array_size(cmd) <= MAX_ARGV) {
		q->x.argv = argv = calloc(json_array_size(cmd) + 1, sizeof *argv);
		if (!argv) {
			refuse(e, "cmd: out of memory");
			goto fail;
		}
		size_t i;
		json_t *a;
		json_array_foreach(cmd, i, a) {
			if (!json_is_string(a)) {
				refuse(e, "cmd[%zu]: must be a string", i);
				goto fail;
			}
			argv[i] = (char *)json_string_value(a);
		}
	} else if (shell && json_is_string(shell) && !cmd) {
		q->x.argv = argv = calloc(4, sizeof *argv);
		if (!argv) {
			refuse(e, "shell: out of memory");
			goto fail;
		}
		static char sh[] = "/bin/sh", dash_c[] = "-c";
		argv[0] = sh;
		argv[1] = dash_c;
		argv[2] = (char *)json_string_value(shell);
	} else {
		refuse(e, "cmd: give cmd (a list of strings) or shell (a string)");
		goto fail;
	}
	json_t *in = json_object_get(b, "stdin");
	if (in && json_is_string(in)) {
		q->x.stdin_data = json_string_value(in);
		q->x.stdin_len = json_string_length(in);
	}
	json_t *cwd = json_object_get(b, "cwd");
	if (cwd && json_is_string(cwd))
		q->x.cwd = json_string_value(cwd);
	json_t *t = json_object_get(b, "timeout");
	if (t && json_is_number(t) && json_number_value(t) > 0)
		q->x.wall_ms = (uint64_t)(json_number_value(t) * 1000);
	json_t *rid = json_object_get(b, "request_id");
	if (rid && !json_is_string(rid)) {
		refuse(e, "request_id: must be a string");
		goto fail;
	}
	q->request_id = rid ? json_string_value(rid) : NULL;
	return 0;
fail:
	pd_session_exec_req_free(q);
	return -1;
}

void pd_session_exec_req_free(pd_session_exec_req *q)
{
	free((void *)q->x.argv);
	q->x.argv = NULL;
	json_decref(q->body);
	q->body = NULL;
}
