/* Piston's API (POST /api/v2/execute): its request parser and its response, derived from the job
 * (Piston's stage statuses and signal names, stdout/stderr from the result record). Its runtime
 * names and version matching are runtimes.c's. */
#define _GNU_SOURCE
#include "api.h"
#include "intake.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>

#define PISTON_OUTPUT_MAX (1u << 20)

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A file's content, decoded by its "encoding" (utf8, base64, hex: Node's Buffer.from) into *data
 * (malloc'd, NUL-terminated). */
static int piston_content(json_t *f, size_t i, char **data, size_t *len, pd_err *e)
{
	json_t *content = json_object_get(f, "content"), *enc = json_object_get(f, "encoding");
	if (!json_is_object(f) || !content || !json_is_string(content))
		return pd_refuse(e, "files[%zu].content: required, a string", i);
	const char *encs = enc && json_is_string(enc) ? json_string_value(enc) : "utf8";
	*data = NULL;
	*len = 0;
	if (!strcmp(encs, "base64")) {
		if (pd_b64_decode(json_string_value(content), data, len) < 0)
			return pd_refuse(e, "files[%zu].content: not base64", i);
		return 0;
	}
	if (!strcmp(encs, "hex")) {
		const char *hx = json_string_value(content);
		size_t hl = json_string_length(content);
		if (hl % 2 || !(*data = malloc(hl / 2 + 1)))
			return pd_refuse(e, "files[%zu].content: not hex", i);
		for (size_t h = 0; h < hl; h += 2) {
			int hi = hexval(hx[h]), lo = hexval(hx[h + 1]);
			if (hi < 0 || lo < 0) {
				free(*data);
				*data = NULL;
				return pd_refuse(e, "files[%zu].content: not hex", i);
			}
			(*data)[(*len)++] = (char)(hi << 4 | lo);
		}
		(*data)[*len] = 0;
		return 0;
	}
	if (!strcmp(encs, "utf8")) {
		*len = json_string_length(content);
		if (!(*data = malloc(*len + 1)))
			return pd_fail(e, ENOMEM, "files[%zu]", i);
		memcpy(*data, json_string_value(content), *len + 1);
		return 0;
	}
	return pd_refuse(e, "files[%zu].encoding: must be utf8, base64 or hex", i);
}

/* "files": the first is the program (in the runtime's language), the rest beside it. */
static int piston_files(pd_job *j, const pd_runtime *rt, json_t *files, json_t *args, pd_err *e)
{
	size_t i;
	json_t *f;
	json_array_foreach(files, i, f) {
		char *data;
		size_t len;
		if (piston_content(f, i, &data, &len, e) < 0)
			return -1;
		if (i == 0) {
			int rc = api_set_language(j, rt->paddock, data, len, args, e);
			free(data);
			if (rc < 0)
				return -1;
			continue;
		}
		json_t *name = json_object_get(f, "name");
		const char *nm = name && json_is_string(name) ? json_string_value(name) : NULL;
		char fallback[32];
		if (!nm || !*nm) {
			snprintf(fallback, sizeof fallback, "file%zu", i);
			nm = fallback;
		}
		if (strstr(nm, "..") || nm[0] == '/') {
			free(data);
			return pd_refuse(e, "files[%zu].name: must be a relative path without '..'", i);
		}
		int rc = api_add_file(j, nm, data, len);
		free(data);
		if (rc < 0)
			return pd_fail(e, ENOMEM, "files");
	}
	return 0;
}

/* The times (milliseconds; -1 means Piston's default), run_memory_limit and stdin. */
static int piston_limits(pd_job *j, json_t *req, pd_err *e)
{
	static const struct {
		const char *key;
		size_t off;
	} t[] = {{"compile_timeout", offsetof(pd_job, compile.wall_ms)},
		 {"run_timeout", offsetof(pd_job, run.wall_ms)},
		 {"compile_cpu_time", offsetof(pd_job, compile.cpu_ms)},
		 {"run_cpu_time", offsetof(pd_job, run.cpu_ms)}};
	j->compile.wall_ms = 10000;
	j->run.wall_ms = 3000;
	for (size_t k = 0; k < 4; k++) {
		json_t *v = json_object_get(req, t[k].key);
		if (!v || json_is_null(v))
			continue;
		/* a double outside 0..2^64 does not convert to uint64_t (undefined): bound it first */
		if (!json_is_number(v) || json_number_value(v) > 86400000)
			return pd_refuse(e, "%s: must be milliseconds, at most 86400000", t[k].key);
		if (json_number_value(v) < 0)
			continue; /* -1 (any negative): Piston's default */
		*(uint64_t *)((char *)j + t[k].off) = (uint64_t)json_number_value(v);
	}
	json_t *mem = json_object_get(req, "run_memory_limit");
	if (mem && json_is_integer(mem) && json_integer_value(mem) > 0) {
		if (json_integer_value(mem) < (4 << 20))
			return pd_refuse(e, "run_memory_limit: at least 4194304 bytes");
		j->memory_bytes = (uint64_t)json_integer_value(mem);
	}
	json_t *in = json_object_get(req, "stdin");
	if (in && json_is_string(in)) {
		/* Piston ends stdin with a newline when it lacks one: a last line read with input() or
		 * getline is then whole */
		size_t n = json_string_length(in);
		bool nl = n && json_string_value(in)[n - 1] != '\n';
		j->run.stdin_len = n + nl;
		j->run.stdin_data = malloc(n + 2);
		if (!j->run.stdin_data)
			return pd_fail(e, ENOMEM, "stdin");
		memcpy(j->run.stdin_data, json_string_value(in), n);
		if (nl)
			j->run.stdin_data[n] = '\n';
		j->run.stdin_data[j->run.stdin_len] = 0;
	}
	return 0;
}

pd_job *pd_job_from_piston(json_t *req, pd_err *e)
{
	if (!json_is_object(req)) {
		pd_refuse(e, "request: must be a JSON object");
		return NULL;
	}
	json_t *lang = json_object_get(req, "language"), *files = json_object_get(req, "files"),
	       *ver = json_object_get(req, "version");
	if (!lang || !json_is_string(lang)) {
		pd_refuse(e, "language: required, a string");
		return NULL;
	}
	/* Piston requires the version: a node-semver range ("*", "3.11", "^3", ">=3.10 <4") */
	if (!ver || !json_is_string(ver) || !json_string_length(ver)) {
		pd_refuse(e, "version: required, a string (a version range such as \"*\" or \"3.11\")");
		return NULL;
	}
	const pd_runtime *rt = pd_piston_match(json_string_value(lang), json_string_value(ver));
	if (!rt) {
		/* Piston's own words, which clients may show as they are */
		pd_refuse(e, "%s-%s runtime is unknown", json_string_value(lang), json_string_value(ver));
		return NULL;
	}
	if (!files || !json_is_array(files) || json_array_size(files) == 0) {
		pd_refuse(e, "files: required, a list of at least one file");
		return NULL;
	}
	json_t *args = json_object_get(req, "args");
	if (args && !json_is_array(args)) {
		pd_refuse(e, "args: must be a list of strings");
		return NULL;
	}
	pd_job *j = pd_job_new();
	if (!j) {
		pd_fail(e, ENOMEM, "job");
		return NULL;
	}
	/* Piston's run_timeout is wall-clock (its CPU limit, run_cpu_time, stays exact): the
	 * scheduler's wall class, as Piston runs many jobs at once (server.h) */
	j->wall_shared = true;
	/* Piston kills a stage whose output passes its limit (OL) rather than letting it run into
	 * the time limit: here the bytes a record keeps of a stream */
	j->compile.output_kill_bytes = j->run.output_kill_bytes = PISTON_OUTPUT_MAX;
	if (piston_files(j, rt, files, args, e) < 0 || piston_limits(j, req, e) < 0 || api_parse_image(j, req, e) < 0) {
		pd_job_free(j);
		return NULL;
	}
	return j;
}


/* "SIGKILL" for 9, in the caller's buffer (answers are made on many worker threads at once: a
 * static buffer would be a data race); NULL for a number without a name. */
static const char *signame(int sig, char *buf, size_t len)
{
	const char *n = sigabbrev_np(sig);
	if (!n)
		return NULL;
	snprintf(buf, len, "SIG%s", n);
	return buf;
}

static json_t *piston_stage(const pd_result *r)
{
	json_t *o = json_object();
	json_t *rec = pd_result_json(r, true);
	json_t *out = api_record_text(rec, "stdout"), *err = api_record_text(rec, "stderr");
	json_decref(rec);
	size_t lo = json_string_length(out), le = json_string_length(err);
	char *both = malloc(lo + le + 1);
	if (both) {
		memcpy(both, json_string_value(out), lo);
		memcpy(both + lo, json_string_value(err), le);
	}
	json_object_set_new(o, "stdout", out);
	json_object_set_new(o, "stderr", err);
	json_object_set_new(o, "output", both ? json_stringn(both, lo + le) : json_string(""));
	free(both);
	bool sig = r->signal && r->status != PD_OK && r->status != PD_RE;
	/* as Piston: the exit code of a program that exited, null for one a signal ended (or that
	 * never ran: XX) */
	json_object_set_new(o, "code", pd_result_exited(r) ? json_integer(r->exit_code) : json_null());
	char sb[16];
	const char *sn = sig ? signame(r->signal, sb, sizeof sb) : NULL;
	json_object_set_new(o, "signal", sn ? json_string(sn) : json_null());
	const char *st = r->status == PD_RE ? "RE"
			 : r->status == PD_SG ? "SG"
			 : r->status == PD_TO ? "TO"
			 : r->status == PD_OL ? "OL"
			 : r->status == PD_ML ? "SG"
			 : r->status == PD_XX ? "XX"
					      : NULL;
	json_object_set_new(o, "status", st ? json_string(st) : json_null());
	/* Piston's words for an output limit name the stream that passed it */
	const char *ol = r->out.total >= r->err.total ? "stdout length exceeded" : "stderr length exceeded";
	json_object_set_new(o, "message", r->status == PD_ML ? json_string("memory limit exceeded")
					  : r->status == PD_OL ? json_string(ol)
					  : r->error[0]     ? pd_json_text(r->error)
							    : json_null());
	json_object_set_new(o, "cpu_time", json_integer((json_int_t)r->cpu_ms));
	json_object_set_new(o, "wall_time", json_integer((json_int_t)r->wall_ms));
	json_object_set_new(o, "memory", json_integer((json_int_t)r->memory_peak_bytes));
	return o;
}

json_t *pd_job_to_piston(const pd_job *j)
{
	json_t *o = json_object();
	const pd_language *l = pd_language_find(j->language);
	const pd_runtime *rt = pd_piston_runtime_of(j->language);
	/* Piston answers with the runtime's own name (c++ for "cpp", javascript for "node") */
	json_object_set_new(o, "language", json_string(rt ? rt->language : j->language));
	json_object_set_new(o, "version", json_string(l ? pd_language_version(l) : ""));
	if (j->compiled)
		json_object_set_new(o, "compile", piston_stage(&j->compile_r));
	if (j->ran) {
		json_object_set_new(o, "run", piston_stage(&j->run_r));
	} else if (j->compiled) {
		/* Piston skips the run when the compile fails and, for its older clients, answers with
		 * the compile stage in run's place (api/v2 execute: result.run = result.compile) */
		json_object_set_new(o, "run", piston_stage(&j->compile_r));
	} else {
		/* paddock itself failed before anything ran: Piston would answer 500 with no body;
		 * a run stage with status XX and the reason tells the client more */
		pd_result none;
		memset(&none, 0, sizeof none);
		none.status = PD_XX;
		snprintf(none.error, sizeof none.error, "%s", j->error);
		json_object_set_new(o, "run", piston_stage(&none));
	}
	/* paddock's own, which Piston clients ignore */
	json_object_set_new(o, "isolation", json_string(api_isolation_of(j)));
	return o;
}

/* ---- its row (server/intake.h) ---- */

static pd_job *parse(const pd_intake *in, json_t *body, int *status, pd_err *e)
{
	(void)in;
	*status = 400;
	return pd_job_from_piston(body, e);
}

static json_t *render(const pd_job *j, int *status)
{
	/* Piston answers a runtime it lacks with 400 and its message */
	if (j->failure == PD_F_DEPENDENCY) {
		*status = 400;
		return json_pack("{s:o}", "message", pd_json_text(j->error));
	}
	*status = 200;
	return pd_job_to_piston(j);
}

static json_t *error_body(const char *msg)
{
	/* Piston's clients read "message" */
	return json_pack("{s:o,s:o}", "error", pd_json_text(msg), "message", pd_json_text(msg));
}

const pd_api pd_api_piston = {.name = "piston", .route = "/api/v2/execute", .parse = parse, .render = render,
			      .error_body = error_body, .overload_status = 503, .mem_fast_off = true};
