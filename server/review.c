/* The review queue (GET /v1/review, POST /v1/review/{id}): attempts a human should look at.
 * Two kinds go in when they are stored:
 *   policy_violation — the process level failed (the audit saw a rule broken); kept for a
 *     reviewer to confirm the hack, so that confirmed hacks can be counted per problem;
 *   rare_pass — a judged pass on a problem where passes are rare (at least RARE_MIN judged
 *     attempts stored, at most 1 in RARE_RATIO of them passed, this one included): the audit saw
 *     nothing, but a hack the audit missed looks exactly like this.
 * A reviewer confirms (a hack) or dismisses (honest) an item, with a note; the decision stays
 * with the item and is counted in /metrics (paddock_review_outcomes_total). */
#define _GNU_SOURCE
#include "review.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#define RARE_MIN 20
#define RARE_RATIO 20

static const char schema[] = "CREATE TABLE IF NOT EXISTS review ("
			     " id INTEGER PRIMARY KEY, attempt_row INTEGER, task_id TEXT, problem_id TEXT,"
			     " template TEXT, reason TEXT NOT NULL, detail TEXT, created_at INTEGER,"
			     " state TEXT NOT NULL DEFAULT 'pending', note TEXT, decided_at INTEGER);"
			     "CREATE INDEX IF NOT EXISTS review_state ON review(state);";

static int64_t now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int review_schema(sqlite3 *db, char **err)
{
	return sqlite3_exec(db, schema, NULL, NULL, err);
}

static void enqueue(sqlite3 *db, int64_t row, const pd_job *j, const char *reason, const char *detail)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO review (attempt_row, task_id, problem_id, template, reason, detail, created_at)"
			       " VALUES (?, ?, ?, ?, ?, ?, ?)",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, row);
	sqlite3_bind_text(st, 2, j->task_id, -1, SQLITE_TRANSIENT);
	if (j->problem_id[0])
		sqlite3_bind_text(st, 3, j->problem_id, -1, SQLITE_TRANSIENT);
	if (j->template_name[0])
		sqlite3_bind_text(st, 4, j->template_name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, reason, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, detail, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 7, now_ms());
	sqlite3_step(st);
	sqlite3_finalize(st);
}

/* The first reason the process level failed, if the record says. */
static const char *first_reason(json_t *rec)
{
	json_t *p = json_object_get(json_object_get(rec, "verdict"), "process");
	const char *s = json_string_value(json_array_get(json_object_get(p, "reasons"), 0));
	return s ? s : "process level failed";
}

void review_consider(sqlite3 *db, int64_t row, const pd_job *j, json_t *rec)
{
	if (j->failure == PD_F_POLICY) {
		enqueue(db, row, j, "policy_violation", first_reason(rec));
		return;
	}
	const char *out = json_string_value(
		json_object_get(json_object_get(json_object_get(rec, "verdict"), "output"), "status"));
	if (!j->problem_id[0] || !out || strcmp(out, "pass") || !json_object_get(rec, "reward"))
		return;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
			       "SELECT COUNT(*), SUM(json_extract(record, '$.verdict.output.status') = 'pass')"
			       " FROM attempts WHERE problem_id = ? AND kind = 'judge' AND last = 1",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, j->problem_id, -1, SQLITE_TRANSIENT);
	int64_t n = 0, passes = 0;
	if (sqlite3_step(st) == SQLITE_ROW) {
		n = sqlite3_column_int64(st, 0);
		passes = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if (n >= RARE_MIN && passes * RARE_RATIO <= n) {
		char detail[128];
		snprintf(detail, sizeof detail, "a pass where %lld of %lld judged attempts passed", (long long)passes,
			 (long long)n);
		enqueue(db, row, j, "rare_pass", detail);
	}
}

static json_t *opt_text(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? json_string((const char *)t) : json_null();
}

static json_t *opt_int(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? json_null() : json_integer(sqlite3_column_int64(st, col));
}

static const char columns[] = "SELECT id, task_id, problem_id, template, reason, detail, created_at, state, note,"
			      " decided_at FROM review";

static json_t *item_json(sqlite3_stmt *st)
{
	json_t *o = json_object();
	json_object_set_new(o, "id", json_integer(sqlite3_column_int64(st, 0)));
	json_object_set_new(o, "task_id", opt_text(st, 1));
	json_object_set_new(o, "problem_id", opt_text(st, 2));
	json_object_set_new(o, "template", opt_text(st, 3));
	json_object_set_new(o, "reason", opt_text(st, 4));
	json_object_set_new(o, "detail", opt_text(st, 5));
	json_object_set_new(o, "created_at", opt_int(st, 6));
	json_object_set_new(o, "state", opt_text(st, 7));
	json_object_set_new(o, "note", opt_text(st, 8));
	json_object_set_new(o, "decided_at", opt_int(st, 9));
	return o;
}

json_t *review_list(sqlite3 *db, const char *state, pd_err *e)
{
	char sql[256];
	bool all = !strcmp(state, "all");
	snprintf(sql, sizeof sql, "%s%s ORDER BY id LIMIT 1000", columns, all ? "" : " WHERE state = ?");
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		pd_fail(e, EIO, "review: %s", sqlite3_errmsg(db));
		return NULL;
	}
	if (!all)
		sqlite3_bind_text(st, 1, state, -1, SQLITE_TRANSIENT);
	json_t *a = json_array();
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(a, item_json(st));
	sqlite3_finalize(st);
	return a;
}

static json_t *item_get(sqlite3 *db, int64_t id)
{
	char sql[256];
	snprintf(sql, sizeof sql, "%s WHERE id = ?", columns);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, id);
	json_t *o = sqlite3_step(st) == SQLITE_ROW ? item_json(st) : NULL;
	sqlite3_finalize(st);
	return o;
}

int review_decide(sqlite3 *db, int64_t id, const char *decision, const char *note, json_t **item, pd_err *e)
{
	const char *state = !strcmp(decision, "confirm") ? "confirmed" : "dismissed";
	sqlite3_stmt *st;
	/* only a pending item is decided: a second decision would silently rewrite the first */
	if (sqlite3_prepare_v2(db, "UPDATE review SET state = ?, note = ?, decided_at = ? WHERE id = ? AND state = 'pending'",
			       -1, &st, NULL) != SQLITE_OK)
		return pd_fail(e, EIO, "review: %s", sqlite3_errmsg(db));
	sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
	if (note)
		sqlite3_bind_text(st, 2, note, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, now_ms());
	sqlite3_bind_int64(st, 4, id);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return pd_fail(e, EIO, "review: %s", sqlite3_errmsg(db));
	bool changed = sqlite3_changes(db) > 0;
	*item = item_get(db, id);
	if (!*item)
		return pd_fail(e, ENOENT, "no review item %lld", (long long)id);
	if (!changed) {
		json_decref(*item);
		*item = NULL;
		return pd_fail(e, EALREADY, "review item %lld is decided already", (long long)id);
	}
	return 0;
}

void review_stats(sqlite3 *db, uint64_t *pending, uint64_t *confirmed, uint64_t *dismissed)
{
	*pending = *confirmed = *dismissed = 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT state, COUNT(*) FROM review GROUP BY state", -1, &st, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 0);
		uint64_t n = (uint64_t)sqlite3_column_int64(st, 1);
		if (!s)
			continue;
		if (!strcmp(s, "pending"))
			*pending = n;
		else if (!strcmp(s, "confirmed"))
			*confirmed = n;
		else if (!strcmp(s, "dismissed"))
			*dismissed = n;
	}
	sqlite3_finalize(st);
}
