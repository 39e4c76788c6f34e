/* Fuzzes the request files of `paddock batch` and `paddock run` (cli/jsonl.c): the input is a
 * whole JSONL file. It is read with cli_jsonl_next as both commands read it; each request line
 * goes through cli_batch_parse (batch) and, on a copy, cli_run_job (run, which reuses server/api/
 * native and run_code parsers); every line that cannot run gets the result line the command writes.
 *
 * Beyond "no crash, no leak, no undefined behaviour" (float-cast-overflow included):
 *  - reading: every line is counted (the line numbers in the results are right), blank lines are
 *    skipped, a request is a JSON object;
 *  - batch: the argv is "cmd", each string whole (a NUL byte would cut it where the kernel reads
 *    it), or /bin/sh -c "shell", never both at once (one would be dropped), 1 to 256 arguments; the
 *    template is the string given, whole, or bash; stdin, cwd, wall_time and cpu_time are taken as
 *    given or refused, not ignored (a number of seconds from 0 to 86400, made ms within 1 ms, no
 *    undefined conversion); "files" is an object of path (1 to 1023 bytes, no NUL) to string,
 *    checked before a sandbox is taken; the id is echoed as given;
 *  - run: the schema is chosen as documented and the job passes the same checks as the server's
 *    (fuzz_common.h: runnable, renders in the three formats);
 *  - every result line of a line that could not run is one JSON object with "line", "status" XX
 *    and the error text (UTF-8-sanitized, never dropped), and the id when batch had one. */
#include "fuzz_common.h"

#include "jsonl.h"

#include <errno.h>
#include <math.h>

static int whole(json_t *v, const char *got)
{
	return json_is_string(v) && got && strlen(got) == json_string_length(v) &&
	       !memcmp(got, json_string_value(v), json_string_length(v));
}

static int given(json_t *v)
{
	return v && !json_is_null(v);
}

static void check_seconds(json_t *v, uint64_t ms, const char *what)
{
	if (!given(v)) {
		FUZZ_CHECK(ms == 0, "%s absent but %llu ms", what, (unsigned long long)ms);
		return;
	}
	FUZZ_CHECK(json_is_number(v), "%s: a non-number was accepted (and ignored)", what);
	double s = json_number_value(v);
	FUZZ_CHECK(s >= 0 && s <= 86400, "%s: %g seconds accepted", what, s);
	FUZZ_CHECK(fabs((double)ms - s * 1000) <= 1.0, "%s: %g s gave %llu ms", what, s, (unsigned long long)ms);
}

/* A result line of a request that could not run: one JSON object, its error the sanitized msg. */
static void check_error_line(char *text, int line, json_t *id, const char *msg, const char *what)
{
	FUZZ_CHECK(text != NULL, "%s: no line", what);
	FUZZ_CHECK(!strchr(text, '\n'), "%s: more than one line", what);
	json_error_t je;
	json_t *o = json_loads(text, 0, &je);
	FUZZ_CHECK(json_is_object(o), "%s: not a JSON object: %s", what, je.text);
	FUZZ_CHECK(json_integer_value(json_object_get(o, "line")) == line, "%s: line", what);
	FUZZ_CHECK(!strcmp(json_string_value(json_object_get(o, "status")) ?: "", "XX"), "%s: status", what);
	json_t *err = json_object_get(o, "error");
	FUZZ_CHECK(json_is_string(err), "%s: the error is missing", what);
	size_t el;
	char *exp = fz_utf8_sanitize(msg, strlen(msg), &el);
	FUZZ_CHECK(json_string_length(err) >= 1, "%s: empty error", what);
	FUZZ_CHECK(json_string_length(err) == el && !memcmp(json_string_value(err), exp, el),
		   "%s: error [%s] for [%s]", what, json_string_value(err), exp);
	free(exp);
	if (id)
		FUZZ_CHECK(json_equal(json_object_get(o, "id"), id), "%s: the id given is not echoed", what);
	json_decref(o);
	free(text);
}

static void check_files(json_t *files)
{
	if (!files)
		return;
	FUZZ_CHECK(json_is_object(files), "files: a non-object was accepted (and ignored)");
	for (void *it = json_object_iter(files); it; it = json_object_iter_next(files, it)) {
		const char *k = json_object_iter_key(it);
		size_t kl = json_object_iter_key_len(it);
		FUZZ_CHECK(kl >= 1 && kl <= 1023 && strlen(k) == kl, "files: path '%.60s' (%zu bytes) accepted", k, kl);
		FUZZ_CHECK(json_is_string(json_object_iter_value(it)), "files.%s: a non-string accepted", k);
	}
}

static void batch(json_t *j, int line)
{
	cli_batch_req q;
	char err[256];
	err[0] = 0;
	json_t *id = json_object_get(j, "id");
	if (cli_batch_parse(j, &q, err, sizeof err) < 0) {
		FUZZ_CHECK(err[0] && fz_utf8_valid(err, strlen(err)), "batch refusal message [%s]", err);
		check_error_line(cli_batch_error_line(line, q.id, err), line, id, err, "batch refusal");
		return;
	}
	FUZZ_CHECK(q.x.argv == q.argv, "argv");
	size_t n = 0;
	while (q.argv[n])
		n++;
	FUZZ_CHECK(n >= 1 && n <= CLI_BATCH_MAX_ARGV, "%zu arguments", n);
	json_t *cmd = json_object_get(j, "cmd"), *shell = json_object_get(j, "shell");
	FUZZ_CHECK(!(cmd && shell), "batch: both cmd and shell accepted: one of them is ignored");
	if (cmd) {
		FUZZ_CHECK(json_array_size(cmd) == n, "cmd size");
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(whole(json_array_get(cmd, i), q.argv[i]), "cmd[%zu] became '%s'", i, q.argv[i]);
	} else {
		FUZZ_CHECK(n == 3 && !strcmp(q.argv[0], "/bin/sh") && !strcmp(q.argv[1], "-c") &&
				   whole(shell, q.argv[2]),
			   "shell became '%s'", n == 3 ? q.argv[2] : "?");
	}
	json_t *t = json_object_get(j, "template");
	if (t)
		FUZZ_CHECK(whole(t, q.template_name), "template became '%s'", q.template_name);
	else
		FUZZ_CHECK(!strcmp(q.template_name, "bash"), "default template");
	json_t *in = json_object_get(j, "stdin");
	if (given(in)) {
		FUZZ_CHECK(json_is_string(in), "batch: a non-string stdin was accepted (and ignored)");
		FUZZ_CHECK(q.x.stdin_len == json_string_length(in) &&
				   !memcmp(q.x.stdin_data, json_string_value(in), q.x.stdin_len),
			   "stdin bytes");
	} else {
		FUZZ_CHECK(!q.x.stdin_data && !q.x.stdin_len, "stdin invented");
	}
	FUZZ_CHECK(!q.x.stdin_from_fd && !q.x.envp && !q.x.uid && !q.x.gid && !q.x.spill, "fields not set by a request");
	check_seconds(json_object_get(j, "wall_time"), q.x.wall_ms, "wall_time");
	check_seconds(json_object_get(j, "cpu_time"), q.x.cpu_ms, "cpu_time");
	json_t *cwd = json_object_get(j, "cwd");
	if (given(cwd))
		FUZZ_CHECK(whole(cwd, q.x.cwd), "cwd: the client's %s became '%s'",
			   json_is_string(cwd) ? "string" : "non-string", q.x.cwd ? q.x.cwd : "(none)");
	else
		FUZZ_CHECK(!q.x.cwd, "cwd invented");
	check_files(q.files);
	/* what run_one says when a file cannot be written: the client's path twice, cut the way
	 * run_one and pd_fail cut it */
	const char *path = q.files && json_object_iter(q.files) ? json_object_iter_key(json_object_iter(q.files))
								: q.argv[0];
	pd_err we = {0};
	pd_fail(&we, ENOSPC, "write %s", path);
	char msg[600];
	snprintf(msg, sizeof msg, "files.%s: %s", path, we.msg);
	check_error_line(cli_batch_error_line(line, q.id, msg), line, id, msg, "batch run error");
}

static void run(json_t *j, int line)
{
	json_t *c = json_deep_copy(j);
	FUZZ_CHECK(c != NULL, "copy");
	json_t *sch = json_object_get(j, "schema");
	bool want = sch ? json_is_string(sch) && !strcmp(json_string_value(sch), "run_code")
			: json_object_get(j, "compile_timeout") || json_object_get(j, "run_timeout") ||
				  json_object_get(j, "memory_limit_MB");
	bool rc = !want;
	pd_err e = {0};
	uint64_t t0 = pd_now_us();
	pd_job *job = cli_run_job(c, &rc, &e);
	FUZZ_CHECK(rc == want, "schema");
	FUZZ_CHECK(!json_object_get(c, "schema"), "schema left in the request");
	if (!job) {
		fz_check_refusal(&e);
		check_error_line(cli_run_refusal(line, e.msg), line, NULL, e.msg, "run refusal");
	} else {
		fz_check_job(job, c, t0, 1);
		fz_render_job(job, NULL, NULL, NULL);
		pd_job_free(job);
	}
	json_decref(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	FILE *in = fmemopen((void *)data, size, "r");
	FUZZ_CHECK(in != NULL, "fmemopen");
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0, st, prev = 0;
	json_t *j;
	json_error_t je;
	while ((st = cli_jsonl_next(in, &line, &cap, &lineno, &j, &je)) != CLI_LINE_EOF) {
		FUZZ_CHECK(lineno > prev, "line numbers");
		prev = lineno;
		if (st == CLI_LINE_OK) {
			FUZZ_CHECK(json_is_object(j), "a request that is not an object");
			batch(j, lineno);
			run(j, lineno);
			json_decref(j);
			continue;
		}
		FUZZ_CHECK(!j && (st == CLI_LINE_NOT_JSON || st == CLI_LINE_NOT_OBJECT), "status %d", st);
		/* batch's message for it (cmd_batch: r->error[256]) */
		char msg[256];
		if (st == CLI_LINE_NOT_JSON)
			snprintf(msg, sizeof msg, "line %d: not JSON: %s", lineno, je.text);
		else
			snprintf(msg, sizeof msg, "line %d: a request must be a JSON object", lineno);
		check_error_line(cli_batch_error_line(lineno, NULL, msg), lineno, NULL, msg, "batch bad line");
	}
	size_t nl = 0;
	for (size_t i = 0; i < size; i++)
		nl += data[i] == '\n';
	int want = (int)nl + (data[size - 1] != '\n');
	FUZZ_CHECK(lineno == want, "%d lines counted, %d in the file", lineno, want);
	free(line);
	fclose(in);
	return 0;
}
