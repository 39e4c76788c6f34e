/* The result record as one line of JSON. Field names are the observation record's (DESIGN.md §5)
 * where they overlap; output bytes are escaped so any program output yields valid JSON. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void putf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(sbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n > 0)
		put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* JSON string of arbitrary bytes: UTF-8 passes, invalid bytes become U+FFFD. */
static void put_str(sbuf *b, const char *s, size_t n)
{
	put(b, "\"", 1);
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		unsigned char ch = u[i];
		if (ch == '"' || ch == '\\') {
			char esc[2] = {'\\', (char)ch};
			put(b, esc, 2);
			i++;
		} else if (ch < 0x20 || ch == 0x7f) {
			const char *named = ch == '\n' ? "\\n" : ch == '\t' ? "\\t" : ch == '\r' ? "\\r" : NULL;
			if (named)
				put(b, named, 2);
			else
				putf(b, "\\u%04x", ch);
			i++;
		} else if (ch < 0x80) {
			put(b, s + i, 1);
			i++;
		} else {
			size_t len = ch >= 0xf5 ? 0 : ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc2 ? 2 : 0;
			bool ok = len && i + len <= n;
			for (size_t k = 1; ok && k < len; k++)
				ok = (u[i + k] & 0xc0) == 0x80;
			if (ok && len == 3)
				ok = !(ch == 0xe0 && u[i + 1] < 0xa0) && !(ch == 0xed && u[i + 1] >= 0xa0);
			if (ok && len == 4)
				ok = !(ch == 0xf0 && u[i + 1] < 0x90) && !(ch == 0xf4 && u[i + 1] >= 0x90);
			if (ok) {
				put(b, s + i, len);
				i += len;
			} else {
				put(b, "\xef\xbf\xbd", 3);
				i++;
			}
		}
	}
	put(b, "\"", 1);
}

static void put_cstr(sbuf *b, const char *s)
{
	put_str(b, s, strlen(s));
}

static void put_output(sbuf *b, const char *name, const pd_output *o, bool with_output)
{
	putf(b, ",\"%s_bytes\":%" PRIu64 ",\"%s_truncated\":%s", name, o->total, name,
	     o->truncated ? "true" : "false");
	if (!with_output)
		return;
	putf(b, ",\"%s\":", name);
	if (!o->truncated || !o->tail_len) {
		/* head and tail join up exactly when nothing was dropped between them */
		sbuf t = {0};
		put(&t, o->head ? o->head : "", o->head_len);
		put(&t, o->tail ? o->tail : "", o->tail_len);
		put_str(b, t.p ? t.p : "", t.len);
		free(t.p);
	} else {
		char mark[96];
		int n = snprintf(mark, sizeof mark, "\n[... %" PRIu64 " bytes omitted ...]\n",
				 o->total - o->head_len - o->tail_len);
		sbuf t = {0};
		put(&t, o->head, o->head_len);
		put(&t, mark, (size_t)n);
		put(&t, o->tail, o->tail_len);
		put_str(b, t.p ? t.p : "", t.len);
		free(t.p);
	}
}

int pd_result_write_json(const pd_result *r, int fd, bool with_output)
{
	return pd_result_write_json_with(r, fd, with_output, NULL);
}

int pd_result_write_json_with(const pd_result *r, int fd, bool with_output, const char *extra)
{
	sbuf b = {0};
	put(&b, "{", 1);
	if (extra && *extra) {
		put(&b, extra, strlen(extra));
		put(&b, ",", 1);
	}
	put(&b, "\"sandbox_id\":", 13);
	put_cstr(&b, r->sandbox_id);
	putf(&b, ",\"status\":\"%s\",\"exit_code\":%d,\"signal\":%d", pd_status_name(r->status),
	     r->exit_code, r->signal);
	put(&b, ",\"error\":", 9);
	put_cstr(&b, r->error);
	putf(&b,
	     ",\"wall_ms\":%" PRIu64 ",\"cpu_ms\":%" PRIu64 ",\"cpu_user_ms\":%" PRIu64
	     ",\"cpu_sys_ms\":%" PRIu64 ",\"memory_peak_bytes\":%" PRIu64 ",\"pids_peak\":%" PRIu32
	     ",\"oom_killed\":%s",
	     r->wall_ms, r->cpu_ms, r->cpu_user_ms, r->cpu_sys_ms, r->memory_peak_bytes, r->pids_peak,
	     r->oom_killed ? "true" : "false");
	put_output(&b, "stdout", &r->out, with_output);
	put_output(&b, "stderr", &r->err, with_output);
	/* milliseconds with three decimals from integers: %f would follow LC_NUMERIC (a comma) */
	putf(&b, ",\"setup_ms\":%" PRIu64 ".%03" PRIu64 ",\"exec_ms\":%" PRIu64 ".%03" PRIu64
		 ",\"teardown_ms\":%" PRIu64 ".%03" PRIu64,
	     r->setup_us / 1000, r->setup_us % 1000, r->exec_us / 1000, r->exec_us % 1000,
	     r->teardown_us / 1000, r->teardown_us % 1000);
	put(&b, ",\"residue\":", 11);
	put_cstr(&b, r->residue[0] ? r->residue : "unchecked");
	putf(&b, ",\"audit_file_events\":%" PRIu64 ",\"audit_net_events\":%" PRIu64
		 ",\"audit_denied\":%" PRIu64 ",\"audit\":[",
	     r->audit_files, r->audit_net, r->audit_denied);
	for (size_t i = 0; i < r->audit_len; i++) {
		const pd_audit_event *ev = &r->audit[i];
		putf(&b, "%s{\"t_ms\":%" PRIu64 ".%03" PRIu64 ",\"kind\":", i ? "," : "", ev->t_us / 1000,
		     ev->t_us % 1000);
		put_cstr(&b, ev->kind);
		put(&b, ",\"target\":", 10);
		put_cstr(&b, ev->target);
		putf(&b, ",\"denied\":%s,\"pid\":%d}", ev->denied ? "true" : "false", ev->pid);
	}
	put(&b, "]}\n", 3);
	if (b.oom) {
		free(b.p);
		errno = ENOMEM;
		return -1;
	}
	size_t off = 0;
	while (off < b.len) {
		ssize_t n = write(fd, b.p + off, b.len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(b.p);
			return -1;
		}
		off += (size_t)n;
	}
	free(b.p);
	return 0;
}

/* ---- JSON strings of arbitrary bytes --------------------------------------------------------- */

#include <jansson.h>

json_t *pd_json_bytes(const char *buf, size_t k)
{
	/* invalid UTF-8 becomes U+FFFD one byte at a time: jansson refuses anything else */
	json_t *s = json_stringn(buf ? buf : "", buf ? k : 0);
	if (!s) {
		char *clean = malloc(k * 3 + 1);
		size_t c = 0;
		const unsigned char *u = (const unsigned char *)buf;
		for (size_t i = 0; clean && i < k;) {
			unsigned char ch = u[i];
			size_t len = ch < 0x80 ? 1 : ch >= 0xf5 ? 0 : ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc2 ? 2 : 0;
			bool ok = len && i + len <= k;
			for (size_t m = 1; ok && m < len; m++)
				ok = (u[i + m] & 0xc0) == 0x80;
			if (ok && len == 3)
				ok = !(ch == 0xe0 && u[i + 1] < 0xa0) && !(ch == 0xed && u[i + 1] >= 0xa0);
			if (ok && len == 4)
				ok = !(ch == 0xf0 && u[i + 1] < 0x90) && !(ch == 0xf4 && u[i + 1] >= 0x90);
			if (ok) {
				memcpy(clean + c, u + i, len);
				c += len;
				i += len;
			} else {
				clean[c++] = (char)0xef;
				clean[c++] = (char)0xbf;
				clean[c++] = (char)0xbd;
				i++;
			}
		}
		s = clean ? json_stringn(clean, c) : NULL;
		free(clean);
	}
	return s ? s : json_string("");
}

json_t *pd_json_text(const char *s)
{
	return pd_json_bytes(s ? s : "", s ? strlen(s) : 0);
}
