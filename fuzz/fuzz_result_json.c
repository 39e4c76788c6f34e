/* Fuzzes what paddock does with a program's output, which is arbitrary bytes: the capture that keeps
 * its head and tail (lib/capture.c), the result record (pd_result_json and pd_result_write_json,
 * lib/result.c: `paddock exec --json`, `paddock batch`, session execs, a job's compile and run), the
 * server's three responses (pd_job_to_json, pd_job_to_run_code, pd_job_to_piston), with error texts
 * built from client strings
 * the way the runtime and the server build them (snprintf into fixed buffers).
 *
 * Input: 7 control bytes, then a payload split into stdout, stderr and a text.
 *   [0] bit0 with_output, bits1-3 status, bit4 oom_killed, bit5 compiled, bit6 ran, bit7 job error
 *   [1] signal  [2] [3] bytes kept of stdout / stderr (255 = 64 KiB)  [4] capture chunk size
 *   [5] [6] where the payload is cut
 *
 * Properties beyond "no crash, no leak, no undefined behaviour":
 *  - capture: the head is the first bytes written, the tail the last ones, total counts them all,
 *    truncated says whether anything was dropped;
 *  - the record is exactly one line (JSONL), valid JSON (jansson, \u0000 allowed: it is JSON), and
 *    its stdout/stderr/error/audit target strings equal the bytes given, with each byte that does
 *    not start a well-formed UTF-8 sequence replaced by U+FFFD (checked against an independent
 *    implementation), head and tail joined by the "[... N bytes omitted ...]" marker;
 *    stdout_bytes/stdout_truncated match the capture;
 *  - the three server responses re-parse, have every field of their schema (a field whose value
 *    jansson refused would be silently missing), carry the same sanitized stdout and stderr, and
 *    Piston's "output" is stdout followed by stderr. */
#include "fuzz_common.h"

#include "capture.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

/* the record (pd_result_json), whichever surface carries it */
static const char *const result_keys[] = {"sandbox_id", "status", "exit_code", "signal", "error",
					  "wall_ms", "cpu_ms", "cpu_user_ms", "cpu_sys_ms",
					  "memory_peak_bytes", "pids_peak", "oom_killed", "idle_timeout", "stdout", "stderr",
					  "stdout_bytes", "stderr_bytes", "stdout_truncated", "stderr_truncated",
					  "setup_ms", "exec_ms", "teardown_ms", "residue", "audit_file_events",
					  "audit_net_events", "audit_denied", "audit", NULL};
static const char *const fusion_keys[] = {"status", "execution_time", "return_code", "stdout", "stderr",
					  NULL};

static void capture(const uint8_t *p, size_t n, uint8_t keep_b, uint8_t chunk_b, pd_output *out)
{
	pd_capture c;
	uint64_t keep = keep_b == 255 ? 1u << 16 : keep_b; /* 255: 64 KiB, untruncated up to -max_len */
	FUZZ_CHECK(pd_capture_init(&c, keep) == 0, "capture init");
	size_t chunk = chunk_b ? chunk_b : n ? n : 1;
	for (size_t off = 0; off < n; off += chunk)
		pd_capture_add(&c, (const char *)p + off, n - off < chunk ? n - off : chunk);
	pd_capture_finish(&c, out);
	size_t head_cap = (size_t)(keep - keep / 4), ring_cap = (size_t)(keep / 4);
	size_t hl = n < head_cap ? n : head_cap, tl = n - hl < ring_cap ? n - hl : ring_cap;
	FUZZ_CHECK(out->total == n, "total %llu != %zu", (unsigned long long)out->total, n);
	FUZZ_CHECK(out->head_len == hl && (!hl || !memcmp(out->head, p, hl)), "head (%zu of %zu)", out->head_len, hl);
	FUZZ_CHECK(out->tail_len == tl && (!tl || !memcmp(out->tail, p + n - tl, tl)), "tail (%zu of %zu)",
		   out->tail_len, tl);
	FUZZ_CHECK(out->truncated == (n > hl + tl), "truncated");
}

/* What the record says the stream was: head, the marker if bytes were dropped between head and
 * tail, tail. malloc'd. */
static char *expected_bytes(const pd_output *o, size_t *len)
{
	char mark[96] = "";
	if (o->truncated && o->tail_len)
		snprintf(mark, sizeof mark, "\n[... %llu bytes omitted ...]\n",
			 (unsigned long long)(o->total - o->head_len - o->tail_len));
	size_t ml = strlen(mark);
	char *b = malloc(o->head_len + ml + o->tail_len + 1);
	if (o->head_len)
		memcpy(b, o->head, o->head_len);
	memcpy(b + o->head_len, mark, ml);
	if (o->tail_len)
		memcpy(b + o->head_len + ml, o->tail, o->tail_len);
	*len = o->head_len + ml + o->tail_len;
	return b;
}

/* The JSON string v must be the sanitized form of bytes p[0..n). */
static void expect_string(json_t *v, const char *p, size_t n, const char *what)
{
	FUZZ_CHECK(json_is_string(v), "%s: not a string", what);
	size_t el;
	char *exp = fz_utf8_sanitize(p, n, &el);
	FUZZ_CHECK(json_string_length(v) == el && !memcmp(json_string_value(v), exp, el),
		   "%s: %zu bytes in the JSON, %zu expected", what, json_string_length(v), el);
	free(exp);
}

static void expect_output(json_t *v, const pd_output *o, const char *what)
{
	size_t n;
	char *b = expected_bytes(o, &n);
	expect_string(v, b, n, what);
	free(b);
}

static void dup_output(pd_output *dst, const pd_output *src)
{
	*dst = *src;
	dst->head = src->head ? malloc(src->head_len ? src->head_len : 1) : NULL;
	dst->tail = src->tail ? malloc(src->tail_len ? src->tail_len : 1) : NULL;
	if (src->head_len)
		memcpy(dst->head, src->head, src->head_len);
	if (src->tail_len)
		memcpy(dst->tail, src->tail, src->tail_len);
}

static void check_record(const pd_result *r, bool with_output, const char *target)
{
	int fd = memfd_create("record", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0, "memfd_create: %s", strerror(errno));
	FUZZ_CHECK(pd_result_write_json(r, fd, with_output) == 0, "pd_result_write_json: %s", strerror(errno));
	off_t len = lseek(fd, 0, SEEK_CUR);
	char *buf = malloc((size_t)len + 1);
	FUZZ_CHECK(pread(fd, buf, (size_t)len, 0) == len, "read back");
	close(fd);
	buf[len] = 0;
	FUZZ_CHECK(len > 0 && buf[len - 1] == '\n' && memchr(buf, '\n', (size_t)len) == buf + len - 1,
		   "the record is not exactly one line");
	json_error_t je;
	json_t *o = json_loadb(buf, (size_t)len, JSON_ALLOW_NUL, &je);
	FUZZ_CHECK(o != NULL, "the record is not JSON: %s (line %d col %d)", je.text, je.line, je.column);
	FUZZ_CHECK(json_is_object(o), "not an object");
	FUZZ_CHECK((uint64_t)json_integer_value(json_object_get(o, "stdout_bytes")) == r->out.total, "stdout_bytes");
	FUZZ_CHECK((uint64_t)json_integer_value(json_object_get(o, "stderr_bytes")) == r->err.total, "stderr_bytes");
	FUZZ_CHECK(json_is_true(json_object_get(o, "stdout_truncated")) == r->out.truncated, "stdout_truncated");
	FUZZ_CHECK(json_is_true(json_object_get(o, "stderr_truncated")) == r->err.truncated, "stderr_truncated");
	FUZZ_CHECK(!strcmp(json_string_value(json_object_get(o, "status")) ?: "", pd_status_name(r->status)), "status");
	FUZZ_CHECK(json_integer_value(json_object_get(o, "signal")) == r->signal, "signal");
	if (with_output) {
		expect_output(json_object_get(o, "stdout"), &r->out, "record stdout");
		expect_output(json_object_get(o, "stderr"), &r->err, "record stderr");
	} else {
		FUZZ_CHECK(!json_object_get(o, "stdout") && !json_object_get(o, "stderr"), "output without with_output");
	}
	expect_string(json_object_get(o, "error"), r->error, strlen(r->error), "record error");
	json_t *audit = json_object_get(o, "audit");
	FUZZ_CHECK(json_is_array(audit) && json_array_size(audit) == r->audit_len, "audit");
	if (r->audit_len)
		expect_string(json_object_get(json_array_get(audit, 0), "target"), target, strlen(target),
			      "audit target");
	json_decref(o);
	free(buf);
}

static void check_stage_json(json_t *st, const pd_result *r, const char *what)
{
	char w[64];
	snprintf(w, sizeof w, "%s stdout", what);
	expect_output(json_object_get(st, "stdout"), &r->out, w);
	snprintf(w, sizeof w, "%s stderr", what);
	expect_output(json_object_get(st, "stderr"), &r->err, w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 7)
		return 0;
	const uint8_t *p = data + 7;
	size_t n = size - 7, c1 = n * data[5] / 255, c2 = c1 + (n - c1) * data[6] / 255;
	bool with_output = data[0] & 1, compiled = data[0] & 0x20, ran = data[0] & 0x40;

	pd_result r;
	memset(&r, 0, sizeof r);
	snprintf(r.sandbox_id, sizeof r.sandbox_id, "sb-fuzz-1");
	r.status = (pd_status)((data[0] >> 1 & 7) % 7);
	r.signal = data[1];
	r.exit_code = data[1];
	r.oom_killed = data[0] & 0x10;
	r.wall_ms = 12, r.cpu_ms = 7, r.exec_us = 12345;
	capture(p, c1, data[2], data[4], &r.out);
	capture(p + c1, c2 - c1, data[3], data[4], &r.err);

	/* the text: raw bytes for an audited path (a program may open any name), and, made UTF-8 as a
	 * JSON request's strings are, a client's argv[0] in an exec error and a file path in a job error */
	char *raw = fz_cstr(p + c2, n - c2);
	size_t ul;
	char *utf8 = fz_utf8_sanitize(raw, strlen(raw), &ul);
	char what[240];
	snprintf(what, sizeof what, "execute %s", utf8); /* child.c: pd_ch_cat(m.what, ..., "execute ", argv[0]) */
	snprintf(r.error, sizeof r.error, "%s: %s", what, strerror(ENOENT)); /* exec.c, MSG_EXEC_FAILED */
	pd_audit_event ev = {.t_us = 1500, .denied = true, .pid = 42};
	snprintf(ev.kind, sizeof ev.kind, "open");
	snprintf(ev.target, sizeof ev.target, "%s", raw);
	r.audit = malloc(sizeof ev);
	*r.audit = ev;
	r.audit_len = r.audit_cap = 1;
	r.audit_files = r.audit_denied = 1;

	check_record(&r, with_output, ev.target);

	/* the server's responses for a job whose run (and compile) gave r */
	pd_job *j = pd_job_new();
	snprintf(j->language, sizeof j->language, "python");
	snprintf(j->template_name, sizeof j->template_name, "python");
	snprintf(j->task_id, sizeof j->task_id, "t-1");
	j->attempts = 1;
	j->failure = (pd_failure)(data[1] % PD_F_COUNT);
	if (data[0] & 0x80) /* job.c attempt(): a client's file path in the error */
		snprintf(j->error, sizeof j->error, "file /work/%s: %s", utf8, strerror(EINVAL));
	j->ran = ran;
	j->compiled = compiled;
	if (compiled) {
		j->compile_r = r;
		dup_output(&j->compile_r.out, &r.out);
		dup_output(&j->compile_r.err, &r.err);
		j->compile_r.audit = NULL;
		j->compile_r.audit_len = j->compile_r.audit_cap = 0;
	}
	if (ran) {
		j->run_r = r; /* moved: freed with the job */
		memset(&r.out, 0, sizeof r.out);
		memset(&r.err, 0, sizeof r.err);
		r.audit = NULL;
	}
	json_t *rec, *rc, *pis;
	fz_render_job(j, &rec, &rc, &pis);
	const pd_result *jr = ran ? &j->run_r : compiled ? &j->compile_r : NULL;
	if (compiled) {
		fz_need_keys(json_object_get(rec, "compile"), "record compile", result_keys);
		check_stage_json(json_object_get(rec, "compile"), &j->compile_r, "record compile");
		fz_need_keys(json_object_get(rc, "compile_result"), "run_code compile_result", fusion_keys);
		check_stage_json(json_object_get(rc, "compile_result"), &j->compile_r, "run_code compile");
		check_stage_json(json_object_get(pis, "compile"), &j->compile_r, "piston compile");
	}
	if (ran) {
		fz_need_keys(json_object_get(rec, "run"), "record run", result_keys);
		check_stage_json(json_object_get(rec, "run"), jr, "record run");
		fz_need_keys(json_object_get(rc, "run_result"), "run_code run_result", fusion_keys);
		check_stage_json(json_object_get(rc, "run_result"), jr, "run_code run");
		check_stage_json(json_object_get(pis, "run"), jr, "piston run");
	}
	/* Piston: output is stdout then stderr */
	for (int k = 0; k < 2; k++) {
		json_t *st = json_object_get(pis, k ? "compile" : "run");
		if (!st)
			continue;
		json_t *so = json_object_get(st, "stdout"), *se = json_object_get(st, "stderr"),
		       *ou = json_object_get(st, "output");
		size_t a = json_string_length(so), b = json_string_length(se);
		FUZZ_CHECK(json_string_length(ou) == a + b && !memcmp(json_string_value(ou), json_string_value(so), a) &&
				   !memcmp(json_string_value(ou) + a, json_string_value(se), b),
			   "piston output is not stdout + stderr");
	}
	json_decref(rec);
	json_decref(rc);
	json_decref(pis);
	pd_job_free(j);
	pd_result_free(&r);
	free(raw);
	free(utf8);
	return 0;
}
