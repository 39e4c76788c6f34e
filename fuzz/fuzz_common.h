/* Shared helpers of the fuzz harnesses: property checks that abort() (so libFuzzer records the
 * input as a crash), an independent UTF-8 validator and sanitizer to check paddock's against, and
 * the checks every request parser (native, SandboxFusion, Piston) must pass. */
#ifndef PADDOCK_FUZZ_COMMON_H
#define PADDOCK_FUZZ_COMMON_H

#define _GNU_SOURCE
#include "paddock.h"
#include "pool.h"
#include "server.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A property failure: says which, then abort() so libFuzzer saves the input. */
#define FUZZ_CHECK(cond, ...)                                                                  \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "PROPERTY FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                          \
			fputc('\n', stderr);                                                   \
			abort();                                                               \
		}                                                                              \
	} while (0)

/* Length of the well-formed UTF-8 sequence at s[0..n) (Unicode 15, table 3-7), 0 if none. Written
 * from the table, not from paddock's code, so that the two can be compared. */
static inline size_t fz_utf8_seq(const unsigned char *s, size_t n)
{
	if (!n)
		return 0;
	unsigned char c = s[0];
	if (c <= 0x7f)
		return 1;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c == 0xe0)
		len = 3, lo = 0xa0;
	else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
		len = 3;
	else if (c == 0xed)
		len = 3, hi = 0x9f;
	else if (c == 0xf0)
		len = 4, lo = 0x90;
	else if (c >= 0xf1 && c <= 0xf3)
		len = 4;
	else if (c == 0xf4)
		len = 4, hi = 0x8f;
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return len;
}

static inline int fz_utf8_valid(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	for (size_t i = 0; i < n;) {
		size_t l = fz_utf8_seq(s + i, n - i);
		if (!l)
			return 0;
		i += l;
	}
	return 1;
}

/* paddock's documented rule for output that is not UTF-8: every byte that does not start a
 * well-formed sequence becomes U+FFFD. Returns a malloc'd buffer of *outlen bytes. */
static inline char *fz_utf8_sanitize(const char *p, size_t n, size_t *outlen)
{
	const unsigned char *s = (const unsigned char *)p;
	char *o = malloc(n * 3 + 1);
	size_t k = 0;
	for (size_t i = 0; i < n;) {
		size_t l = fz_utf8_seq(s + i, n - i);
		if (l) {
			memcpy(o + k, s + i, l);
			k += l;
			i += l;
		} else {
			memcpy(o + k, "\xef\xbf\xbd", 3);
			k += 3;
			i++;
		}
	}
	o[k] = 0;
	*outlen = k;
	return o;
}

/* The input up to its first NUL, as a C string (what a caller holding a C string would pass). */
static inline char *fz_cstr(const uint8_t *data, size_t size)
{
	const uint8_t *z = memchr(data, 0, size);
	size_t n = z ? (size_t)(z - data) : size;
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, data, n);
		s[n] = 0;
	}
	return s;
}

/* ---- request parsers ------------------------------------------------------------------------- */

/* A refused request: the server answers 400 with its message as it is (pd_refuse files no cause,
 * so pd_err_text adds no strerror text) as a JSON string (server/http/http.c, http_set_error), paddock run writes it in a result
 * line. The message must say
 * something, and be UTF-8: a renderer using json_string() would drop it (the client got "{}" with
 * no reason), and pd_json_text() shows the half character as U+FFFD. */
static inline void fz_check_refusal(const pd_err *e)
{
	FUZZ_CHECK(e->msg[0], "a refused request must have an error message");
	FUZZ_CHECK(e->code == EINVAL || e->code == ENOMEM, "a refusal is EINVAL (or out of memory): %d", e->code);
	/* a refusal's text is paddock's own words: no system cause is rendered after it */
	FUZZ_CHECK(e->code != EINVAL || (e->cause == 0 && e->kind == PD_EK_REFUSED),
		   "a refusal with a cause (%d) or not of the refused kind (%d): [%s]", e->cause, (int)e->kind, e->msg);
	size_t n = strnlen(e->msg, sizeof e->msg);
	FUZZ_CHECK(n < sizeof e->msg, "error message not NUL-terminated");
	FUZZ_CHECK(fz_utf8_valid(e->msg, n), "error message is not UTF-8 (the 400 response would have no "
					      "error field): [%s]", e->msg);
	json_t *s = json_string(e->msg);
	FUZZ_CHECK(s != NULL, "jansson refuses the error message");
	json_decref(s);
}

static inline void fz_check_vec(char **v, const char *what)
{
	FUZZ_CHECK(v != NULL, "%s: NULL vector", what);
	for (size_t i = 0; v[i]; i++)
		FUZZ_CHECK(i < 100000, "%s: not NULL-terminated", what);
}

/* An accepted request: the job must be runnable as it stands. */
static inline void fz_check_job(const pd_job *j, json_t *req, uint64_t parsed_at_us, int has_deadline)
{
	FUZZ_CHECK(j->template_name[0], "no template");
	FUZZ_CHECK(strnlen(j->template_name, sizeof j->template_name) < sizeof j->template_name, "template");
	FUZZ_CHECK(j->run.argv && j->run.argv[0], "an accepted job must have a run command");
	fz_check_vec(j->run.argv, "run.argv");
	if (j->compile.argv)
		fz_check_vec(j->compile.argv, "compile.argv");
	if (j->env)
		fz_check_vec(j->env, "env");
	for (size_t i = 0; j->env && j->env[i]; i++)
		FUZZ_CHECK(strchr(j->env[i], '=') && j->env[i][0] != '=', "env[%zu] '%s' is not K=V", i,
			   j->env[i]);
	FUZZ_CHECK(!j->cwd || j->cwd[0] == '/', "cwd '%s' is not absolute", j->cwd);
	FUZZ_CHECK(!j->nfiles || j->files, "files");
	for (size_t i = 0; i < j->nfiles; i++) {
		FUZZ_CHECK(j->files[i].path && j->files[i].path[0] == '/', "files[%zu] path not absolute", i);
		FUZZ_CHECK(j->files[i].data && j->files[i].data[j->files[i].len] == 0,
			   "files[%zu] data not NUL-terminated", i);
	}
	for (size_t i = 0; i < j->nfetch; i++)
		FUZZ_CHECK(j->fetch && j->fetch[i], "fetch[%zu]", i);
	FUZZ_CHECK(!j->run.stdin_len || (j->run.stdin_data && j->run.stdin_data[j->run.stdin_len] == 0),
		   "stdin");
	FUZZ_CHECK(j->priority >= PD_PRIO_HIGH && j->priority < PD_PRIO_COUNT, "priority %d", j->priority);
	FUZZ_CHECK(j->memory_bytes == 0 || j->memory_bytes >= (4u << 20),
		   "memory limit %llu below the 4 MiB floor", (unsigned long long)j->memory_bytes);
	/* a deadline the client gave is at least deadline_ms away: a large one must not wrap around
	 * 2^64 microseconds into one that is (nearly) past, and fail queue_timeout without running */
	json_t *d = json_object_get(req, "deadline_ms");
	if (has_deadline && json_is_integer(d) && json_integer_value(d) > 0)
		FUZZ_CHECK((unsigned __int128)j->deadline_us >=
				   (unsigned __int128)parsed_at_us + (unsigned __int128)json_integer_value(d) * 1000,
			   "deadline_ms %lld gave a deadline %lld us from now",
			   (long long)json_integer_value(d), (long long)(j->deadline_us - parsed_at_us));
	FUZZ_CHECK(!j->failure && !j->error[0] && !j->ran && !j->compiled, "a new job has no result");
}

static inline json_t *fz_reparse(json_t *o, const char *what)
{
	FUZZ_CHECK(o != NULL, "%s: NULL", what);
	char *s = json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY);
	FUZZ_CHECK(s != NULL, "%s: json_dumps failed", what);
	json_error_t je;
	json_t *back = json_loads(s, JSON_ALLOW_NUL, &je);
	FUZZ_CHECK(back != NULL, "%s: its own JSON does not parse: %s", what, je.text);
	free(s);
	return back;
}

/* Each key must be there: json_object_set_new() drops a NULL value (json_string() of a non-UTF-8
 * text) silently, so a missing key is a field that failed to render. */
static inline void fz_need_keys(json_t *o, const char *what, const char *const *keys)
{
	FUZZ_CHECK(json_is_object(o), "%s: not an object", what);
	for (int i = 0; keys[i]; i++)
		FUZZ_CHECK(json_object_get(o, keys[i]) != NULL, "%s: field '%s' missing", what, keys[i]);
}

static const char *const fz_record_keys[] = {
	"task_id", "problem_id", "problem_version", "attempt", "sandbox_id", "template", "language",
	"node", "queued_at", "started_at", "finished_at", "queue_ms", "exec_ms", "setup_ms", "teardown",
	"status", "failure_class", "error", "verdict", "compile", "run", "files", NULL};
static const char *const fz_run_code_keys[] = {
	"status", "message", "compile_result", "run_result", "executor_pod_name", "files",
	"failure_class", "sandbox_id", NULL};
static const char *const fz_piston_keys[] = {"language", "version", "run", NULL};
static const char *const fz_piston_stage_keys[] = {"stdout", "stderr", "output", "code", "signal",
						   "status", "message", "cpu_time", "wall_time",
						   "memory", NULL};

/* Renders a job in the three response formats and checks each is complete JSON. Returns the three
 * re-parsed documents through the pointers (caller decrefs) when they are not NULL. */
static inline void fz_render_job(const pd_job *j, json_t **rec_out, json_t **rc_out, json_t **pis_out)
{
	json_t *o = pd_job_to_json(j), *back = fz_reparse(o, "pd_job_to_json");
	json_decref(o);
	fz_need_keys(back, "record", fz_record_keys);
	if (rec_out)
		*rec_out = back;
	else
		json_decref(back);

	o = pd_job_to_run_code(j);
	back = fz_reparse(o, "pd_job_to_run_code");
	json_decref(o);
	fz_need_keys(back, "run_code response", fz_run_code_keys);
	if (rc_out)
		*rc_out = back;
	else
		json_decref(back);

	o = pd_job_to_piston(j);
	back = fz_reparse(o, "pd_job_to_piston");
	json_decref(o);
	fz_need_keys(back, "piston response", fz_piston_keys);
	fz_need_keys(json_object_get(back, "run"), "piston run", fz_piston_stage_keys);
	if (json_object_get(back, "compile"))
		fz_need_keys(json_object_get(back, "compile"), "piston compile", fz_piston_stage_keys);
	if (pis_out)
		*pis_out = back;
	else
		json_decref(back);
}

/* The whole path of a request body: bytes -> JSON (as http.c and paddock run load them: flags 0)
 * -> parser -> checks -> the three renderings of the not-yet-run job -> free. */
/* has_deadline: the schema takes "deadline_ms" (native and SandboxFusion; Piston has none). */
static inline int fz_request(const uint8_t *data, size_t size, pd_job *(*parse)(json_t *, pd_err *),
			     int has_deadline)
{
	json_error_t je;
	json_t *req = json_loadb((const char *)data, size, 0, &je);
	if (!req)
		return 0; /* (jansson's error text may quote half a UTF-8 character: http.c's concern) */
	pd_err e = {0};
	uint64_t t0 = pd_now_us();
	pd_job *j = parse(req, &e);
	if (!j) {
		fz_check_refusal(&e);
	} else {
		fz_check_job(j, req, t0, has_deadline);
		fz_render_job(j, NULL, NULL, NULL);
		pd_job_free(j);
	}
	json_decref(req);
	return 0;
}

/* libFuzzer's entry points, which every harness defines (Initialize: only those that need it) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#endif
