/* The store as a cluster node's outbox (server/cluster/records.c publishes it to the cluster's
 * shared record stream): every row is published once, in row order, after it is final. The
 * watermark (the last row published) is kept in this file, table outbox, so that a node that
 * stops or is killed publishes, when it comes back, what it had not published yet: what the
 * broker acked before the watermark moved is published again, which the stream takes as the same
 * record (its subject holds one message, and the message id repeats). A row is final when its
 * request's claim is made: a row still staged and not claimed (pd_store_put) may yet be taken
 * out, so the outbox stops before it until the claim settles it. */
#define _GNU_SOURCE
#include "store_priv.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const char outbox_schema[] =
	"CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY CHECK (id = 1), published INTEGER NOT NULL);"
	"INSERT OR IGNORE INTO outbox VALUES (1, 0);";

int64_t pd_store_outbox_mark(pd_store *s, pd_err *e)
{
	pthread_mutex_lock(&s->mu);
	int64_t v = -1;
	sqlite3_stmt *st = NULL;
	if (sqlite3_exec(s->db, outbox_schema, NULL, NULL, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(s->db, "SELECT published FROM outbox WHERE id = 1", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	if (v < 0)
		pd_fail_as(e, EIO, "store: outbox: %s", sqlite3_errmsg(s->db));
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->mu);
	return v;
}

int pd_store_outbox_set(pd_store *s, int64_t row, pd_err *e)
{
	pthread_mutex_lock(&s->mu);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, "UPDATE outbox SET published = ? WHERE id = 1", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, row);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	int out = rc == SQLITE_DONE ? 0 : pd_fail_as(e, EIO, "store: outbox: %s", sqlite3_errmsg(s->db));
	pthread_mutex_unlock(&s->mu);
	return out;
}

/* Whether request_id's claim is made (its stage not yet cleared). Lock held. */
static bool claimed_locked(const pd_store *s, const char *request_id)
{
	for (unsigned i = 0; i < s->nclaimed; i++)
		if (!strcmp(s->claimed[i], request_id))
			return true;
	return false;
}

/* ---- a row's message, by concatenation ------------------------------------------------------ */

/* A growing text (the round's messages, one after another). */
typedef struct {
	char *p;
	size_t len, cap;
	bool oom;
} buf;

static void put(buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (b->len + n + 1 > cap)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

/* s as a JSON string (the ids and the kind: short, checked at intake; escaped all the same) */
static void put_str(buf *b, const char *s)
{
	put(b, "\"", 1);
	for (const char *q = s; *q; q++) {
		unsigned char ch = (unsigned char)*q;
		if (ch == '"' || ch == '\\') {
			char esc[2] = {'\\', (char)ch};
			put(b, esc, 2);
		} else if (ch < 0x20) {
			char esc[8];
			snprintf(esc, sizeof esc, "\\u%04x", ch);
			put(b, esc, 6);
		} else {
			put(b, q, 1);
		}
	}
	put(b, "\"", 1);
}

static void put_int(buf *b, int64_t v)
{
	char n[24];
	put(b, n, (size_t)snprintf(n, sizeof n, "%" PRId64, v));
}

/* ---- the stored text checked without parsing it --------------------------------------------- */

/* The store wrote each record with jansson, so the text is one JSON object unless the file was
 * damaged; published as it is (no parse and dump: the recorder's largest per-record cost), it is
 * still checked, with no allocation, to be one: a damaged one goes as an error record, as it did
 * when it was parsed. */
typedef struct {
	const unsigned char *p, *end;
} cur;

static void ws(cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool lit(cur *c, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
		return false;
	c->p += n;
	return true;
}

/* a string: escapes, no control byte, UTF-8 as jansson accepts it (no overlong form, no
 * surrogate, nothing past U+10FFFF) */
static bool str(cur *c)
{
	if (c->p >= c->end || *c->p++ != '"')
		return false;
	while (c->p < c->end) {
		unsigned ch = *c->p++;
		if (ch == '"')
			return true;
		if (ch < 0x20)
			return false;
		if (ch == '\\') {
			if (c->p >= c->end)
				return false;
			ch = *c->p++;
			if (ch == 'u') {
				for (int i = 0; i < 4; i++, c->p++)
					if (c->p >= c->end || !isxdigit(*c->p))
						return false;
			} else if (!strchr("\"\\/bfnrt", (int)ch) || !ch) {
				return false;
			}
			continue;
		}
		if (ch < 0x80)
			continue;
		int more = ch >= 0xF0 ? 3 : ch >= 0xE0 ? 2 : ch >= 0xC2 ? 1 : -1;
		if (more < 0 || ch > 0xF4 || c->end - c->p < more)
			return false;
		unsigned cp = ch & (0x3Fu >> more);
		for (int i = 0; i < more; i++, c->p++) {
			if ((*c->p & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (*c->p & 0x3Fu);
		}
		if ((more == 2 && cp < 0x800) || (more == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
	}
	return false;
}

static bool num(cur *c)
{
	const unsigned char *s = c->p;
	if (c->p < c->end && *c->p == '-')
		c->p++;
	if (c->p < c->end && *c->p == '0')
		c->p++;
	else if (c->p < c->end && isdigit(*c->p))
		while (c->p < c->end && isdigit(*c->p))
			c->p++;
	else
		return false;
	if (c->p < c->end && *c->p == '.') {
		c->p++;
		if (c->p >= c->end || !isdigit(*c->p))
			return false;
		while (c->p < c->end && isdigit(*c->p))
			c->p++;
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (c->p >= c->end || !isdigit(*c->p))
			return false;
		while (c->p < c->end && isdigit(*c->p))
			c->p++;
	}
	return c->p > s;
}

#define MAX_DEPTH 2048 /* jansson's own limit */

static bool value(cur *c, int depth)
{
	ws(c);
	if (c->p >= c->end || depth > MAX_DEPTH)
		return false;
	unsigned char open = *c->p;
	if (open == '"')
		return str(c);
	if (open == 't')
		return lit(c, "true");
	if (open == 'f')
		return lit(c, "false");
	if (open == 'n')
		return lit(c, "null");
	if (open != '{' && open != '[')
		return num(c);
	c->p++;
	ws(c);
	unsigned char close = open == '{' ? '}' : ']';
	if (c->p < c->end && *c->p == close) {
		c->p++;
		return true;
	}
	for (;;) {
		if (open == '{') {
			ws(c);
			if (!str(c))
				return false;
			ws(c);
			if (c->p >= c->end || *c->p++ != ':')
				return false;
		}
		if (!value(c, depth + 1))
			return false;
		ws(c);
		if (c->p >= c->end)
			return false;
		unsigned char ch = *c->p++;
		if (ch == close)
			return true;
		if (ch != ',')
			return false;
	}
}

/* whether text is one JSON object and nothing else */
static bool one_object(const char *text, size_t len)
{
	cur c = {(const unsigned char *)text, (const unsigned char *)text + len};
	ws(&c);
	if (c.p >= c.end || *c.p != '{' || !value(&c, 1))
		return false;
	ws(&c);
	return c.p == c.end;
}

/* The row's message: the envelope's fields by concatenation, and the record as it was stored:
 * {"row","task_id","group_id","kind","finished_at","attempt","last","node","record"}. The readers
 * (records.c) give the record its row's attempt and last, and the node when it names none. */
static void outbox_row(buf *b, sqlite3_stmt *st, const char *node_default)
{
	const char *text = (const char *)sqlite3_column_text(st, 1);
	size_t len = (size_t)sqlite3_column_bytes(st, 1);
	const char *task = (const char *)sqlite3_column_text(st, 4), *group = (const char *)sqlite3_column_text(st, 5),
		   *kind = (const char *)sqlite3_column_text(st, 6), *node = (const char *)sqlite3_column_text(st, 8);
	puts_(b, "{\"row\":");
	put_int(b, sqlite3_column_int64(st, 0));
	puts_(b, ",\"task_id\":");
	put_str(b, task ? task : "");
	puts_(b, ",\"group_id\":");
	put_str(b, group ? group : "");
	puts_(b, ",\"kind\":");
	put_str(b, kind ? kind : "run");
	puts_(b, ",\"finished_at\":");
	put_int(b, sqlite3_column_int64(st, 7));
	puts_(b, ",\"attempt\":");
	put_int(b, sqlite3_column_int(st, 2));
	puts_(b, sqlite3_column_int(st, 3) ? ",\"last\":true" : ",\"last\":false");
	if ((node && *node) || (node_default && *node_default)) {
		puts_(b, ",\"node\":");
		put_str(b, node && *node ? node : node_default);
	}
	puts_(b, ",\"record\":");
	if (text && one_object(text, len))
		put(b, text, len);
	else
		puts_(b, "{\"error\":\"the stored record does not parse\"}");
	puts_(b, "}");
}

int pd_store_outbox(pd_store *s, int64_t after, unsigned limit, const char *node, pd_outbox_row **rows,
		    unsigned *n, pd_err *e)
{
	*rows = NULL;
	*n = 0;
	pd_outbox_row *out = calloc(limit ? limit : 1, sizeof *out);
	if (!out)
		return pd_fail(e, ENOMEM, "store: outbox");
	buf b = {0};
	/* the message's offsets in b while it grows (b.p moves) */
	size_t *at = calloc(limit ? limit : 1, sizeof *at);
	pthread_mutex_lock(&s->mu);
	int rc = SQLITE_OK;
	/* prepared once and kept (the recorder reads a round's rows every 100 ms at most); a row
	 * staged is one of a request's rows (first_id..last_id: its earlier attempts too) */
	if (!s->outbox)
		rc = sqlite3_prepare_v2(s->db,
					"SELECT a.id, a.record, a.attempt, a.last, a.task_id, a.group_id, a.kind,"
					" a.finished_at, a.node, st.request_id FROM attempts a"
					" LEFT JOIN staged st ON a.id BETWEEN st.first_id AND st.last_id"
					" WHERE a.id > ?1 ORDER BY a.id LIMIT ?2",
					-1, &s->outbox, NULL);
	sqlite3_stmt *st = s->outbox;
	if (rc == SQLITE_OK && at) {
		sqlite3_bind_int64(st, 1, after);
		sqlite3_bind_int(st, 2, (int)limit);
		while (*n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			const char *staged = (const char *)sqlite3_column_text(st, 9);
			if (staged && !claimed_locked(s, staged))
				break; /* not final yet: nothing after it either, the watermark being a row */
			const char *task = (const char *)sqlite3_column_text(st, 4);
			const char *group = (const char *)sqlite3_column_text(st, 5);
			pd_outbox_row *r = &out[*n];
			r->row = sqlite3_column_int64(st, 0);
			r->finished_at = sqlite3_column_int64(st, 7);
			snprintf(r->task_id, sizeof r->task_id, "%s", task ? task : "");
			snprintf(r->group_id, sizeof r->group_id, "%s", group ? group : "");
			at[*n] = b.len;
			outbox_row(&b, st, node);
			put(&b, "", 1); /* each message its own string */
			r->len = b.len - at[*n] - 1;
			(*n)++;
		}
		sqlite3_reset(st);
	}
	int ret = rc == SQLITE_ROW || rc == SQLITE_DONE || rc == SQLITE_OK
			  ? 0
			  : pd_fail_as(e, EIO, "store: outbox: %s", sqlite3_errmsg(s->db));
	pthread_mutex_unlock(&s->mu);
	if (!at || b.oom)
		ret = pd_fail(e, ENOMEM, "store: outbox");
	if (ret < 0) {
		free(b.p);
		free(at);
		free(out);
		*n = 0;
		return -1;
	}
	/* the texts in one block, owned by the first row */
	for (unsigned i = 0; i < *n; i++)
		out[i].text = b.p + at[i];
	if (!*n)
		free(b.p);
	free(at);
	*rows = out;
	return 0;
}

void pd_store_outbox_free(pd_outbox_row *rows, unsigned n)
{
	if (rows && n)
		free(rows[0].text);
	free(rows);
}
