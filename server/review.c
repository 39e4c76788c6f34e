/* The review queue (GET /v1/review, POST /v1/review/{id}): attempts a human should look at.
 * They go in when they are stored, for one of these reasons (docs/audit.md, "The review queue"):
 *   policy_violation — the process level failed (the audit saw a rule broken); kept for a
 *     reviewer to confirm the hack, so that confirmed hacks can be counted per problem;
 * and, for a judged attempt that broke no rule but looks too good (a hack the audit missed looks
 * exactly like these), with thresholds from serve's --review-* options (pd_review_cfg):
 *   rare_pass — a pass on a problem where passes are rare (at least min_samples judged attempts
 *     stored, at most rare_percent of them passed, this one included);
 *   fast_pass — a pass whose tests took (wall time, summed) under fast_percent of the median of
 *     the problem's earlier passes in the same language (at least min_samples of them);
 *   short_pass — a pass whose code is under short_percent of that median's code size;
 *   score_jump — a score at least jump_percent points (of 100) above the best of its group's
 *     (group_id) earlier judged attempts (at least group_min of them);
 * and, for a graded episode (POST /v1/sessions/{id}/judge) whose agent claimed success:
 *   claim_mismatch — the claim (record's claim.mismatch) on an output that did not pass;
 * and, for a judged attempt that ended as judge_error:
 *   checker_failure — the checker crashed, timed out or said fail on this attempt's output, twice.
 *     No reward and not the model's fault (it may be the checker's bug), but an output made to
 *     break or stall the checker (a timing attack on it) looks exactly like this: a human decides.
 * One item per attempt: its reason is the first signal that fired, its detail names all of them.
 * A reviewer confirms (a hack) or dismisses (honest) an item, with a note; the decision stays
 * with the item and is counted in /metrics (paddock_review_outcomes_total). A confirmed item puts
 * its problem on the risk list (server/risk.c). */
#define _GNU_SOURCE
#include "review.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the earlier passes a median is taken over: the newest ones */
#define MEDIAN_ROWS 1000

static const char schema[] = "CREATE TABLE IF NOT EXISTS review ("
			     " id INTEGER PRIMARY KEY, attempt_row INTEGER, task_id TEXT, problem_id TEXT,"
			     " template TEXT, reason TEXT NOT NULL, detail TEXT, created_at INTEGER,"
			     " state TEXT NOT NULL DEFAULT 'pending', note TEXT, decided_at INTEGER);"
			     "CREATE INDEX IF NOT EXISTS review_state ON review(state);"
			     /* the signals' questions are per problem and language, and per group: answered
			      * from this index alone (the facts review_bind stored with each row), never by
			      * reading records, which took 7 ms a judged record at 200 of them and grew with
			      * the store */
			     "DROP INDEX IF EXISTS attempts_problem;"
			     /* partial: every question names a problem, and a row without one (each
			      * /run_code's) then writes no page of this index at its insert */
			     "DROP INDEX IF EXISTS attempts_review;"
			     "CREATE INDEX IF NOT EXISTS attempts_review_nn ON attempts(problem_key, language, kind, last,"
			     " passed, id, tests_ms, code_bytes) WHERE problem_key IS NOT NULL;"
			     /* the risk list: problems with confirmed hacks (kept across restarts) */
			     "CREATE TABLE IF NOT EXISTS risk (problem_id TEXT PRIMARY KEY, since INTEGER,"
			     " confirmed INTEGER NOT NULL DEFAULT 0, last_review INTEGER);";

void pd_review_cfg_default(pd_review_cfg *c)
{
	c->min_samples = 20;
	c->rare_percent = 5;
	c->fast_percent = 10;
	c->short_percent = 10;
	c->jump_percent = 50;
	c->group_min = 3;
}


int review_schema(sqlite3 *db, char **err)
{
	return sqlite3_exec(db, schema, NULL, NULL, err);
}

/* The facts of older rows, from their records (run once, when the store gains the columns). */
const char review_fill_sql[] =
	"UPDATE attempts SET problem_key = CASE WHEN problem_id = 'inline' THEN NULL ELSE problem_id END,"
	" passed = COALESCE(json_extract(record, '$.verdict.output.status') = 'pass', 0),"
	" tests_ms = (SELECT SUM(json_extract(t.value, '$.wall_ms')) FROM json_each(record, '$.tests') t),"
	" code_bytes = json_extract(record, '$.code_bytes'), score = json_extract(record, '$.verdict.output.score')"
	" WHERE kind = 'judge'";

void review_bind(sqlite3_stmt *st, int first, const pd_job *j, json_t *rec)
{
	const char *key = pd_job_problem_key(j);
	if (key[0])
		sqlite3_bind_text(st, first, key, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, first);
	for (int i = 1; i <= 4; i++)
		sqlite3_bind_null(st, first + i);
	if (!json_object_get(rec, "reward"))
		return; /* a run: none of the judged facts */
	json_t *out = json_object_get(json_object_get(rec, "verdict"), "output");
	const char *status = json_string_value(json_object_get(out, "status"));
	sqlite3_bind_int(st, first + 1, status && !strcmp(status, "pass"));
	/* the tests' wall time summed (none when no test says it, as SQL's SUM of nothing) */
	json_t *t, *tests = json_object_get(rec, "tests");
	size_t k;
	int64_t ms = 0;
	bool any = false;
	json_array_foreach(tests, k, t) {
		json_t *w = json_object_get(t, "wall_ms");
		if (json_is_integer(w))
			ms += json_integer_value(w), any = true;
	}
	if (any)
		sqlite3_bind_int64(st, first + 2, ms);
	json_t *cb = json_object_get(rec, "code_bytes");
	if (json_is_integer(cb))
		sqlite3_bind_int64(st, first + 3, json_integer_value(cb));
	json_t *sc = json_object_get(out, "score");
	if (json_is_number(sc))
		sqlite3_bind_double(st, first + 4, json_number_value(sc));
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
	const char *key = pd_job_problem_key(j);
	if (key[0])
		sqlite3_bind_text(st, 3, key, -1, SQLITE_TRANSIENT);
	if (j->template_name[0])
		sqlite3_bind_text(st, 4, j->template_name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, reason, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 6, detail, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 7, (int64_t)(pd_wall_us() / 1000));
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

/* The signals that fired so far: the first one's name, and all of them as "name: detail; ...". */
typedef struct signals {
	char reason[32];
	char detail[512];
} signals;

static void fired(signals *g, const char *name, const char *detail)
{
	if (!g->reason[0])
		snprintf(g->reason, sizeof g->reason, "%s", name);
	size_t n = strlen(g->detail);
	snprintf(g->detail + n, sizeof g->detail - n, "%s%s: %s", n ? "; " : "", name, detail);
}

static void rare_pass(sqlite3 *db, const pd_job *j, const pd_review_cfg *c, signals *g)
{
	sqlite3_stmt *st;
	if (!c->rare_percent ||
	    sqlite3_prepare_v2(db,
			       "SELECT COUNT(*), SUM(passed) FROM attempts WHERE problem_key = ? AND kind = 'judge'"
			       " AND last = 1",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, pd_job_problem_key(j), -1, SQLITE_TRANSIENT);
	int64_t n = 0, passes = 0;
	if (sqlite3_step(st) == SQLITE_ROW) {
		n = sqlite3_column_int64(st, 0);
		passes = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if (n >= c->min_samples && passes * 100 <= n * (int64_t)c->rare_percent) {
		char detail[128];
		snprintf(detail, sizeof detail, "a pass where %lld of %lld judged attempts passed", (long long)passes,
			 (long long)n);
		fired(g, "rare_pass", detail);
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The median of expr over the problem's earlier passes in this language (the newest
 * MEDIAN_ROWS), and how many there were; -1 when the query fails. */
static int64_t median_of(sqlite3 *db, const pd_job *j, int64_t row, const char *column, int64_t *n)
{
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT %s FROM attempts WHERE problem_key = ? AND language = ? AND kind = 'judge' AND last = 1"
		 " AND passed = 1 AND id <> ? AND %s IS NOT NULL ORDER BY id DESC LIMIT %d",
		 column, column, MEDIAN_ROWS);
	*n = 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, pd_job_problem_key(j), -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, j->language, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, row);
	int64_t *v = malloc(MEDIAN_ROWS * sizeof *v);
	while (v && *n < MEDIAN_ROWS && sqlite3_step(st) == SQLITE_ROW)
		v[(*n)++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (!v || !*n) {
		free(v);
		return -1;
	}
	qsort(v, (size_t)*n, sizeof *v, cmp_i64);
	int64_t m = v[*n / 2];
	free(v);
	return m;
}

/* fast_pass and short_pass: this pass against the median of the earlier ones. */
static void unusual_pass(sqlite3 *db, int64_t row, const pd_job *j, json_t *rec, const pd_review_cfg *c, signals *g)
{
	static const struct {
		const char *name, *column, *unit;
		size_t off;
	} sig[] = {
		{"fast_pass", "tests_ms", "ms of tests", offsetof(pd_review_cfg, fast_percent)},
		{"short_pass", "code_bytes", "bytes of code", offsetof(pd_review_cfg, short_percent)},
	};
	for (size_t i = 0; i < sizeof sig / sizeof sig[0]; i++) {
		unsigned pct = *(const unsigned *)((const char *)c + sig[i].off);
		int64_t mine = 0;
		if (!pct)
			continue;
		if (i == 0) {
			json_t *t;
			size_t k;
			json_array_foreach(json_object_get(rec, "tests"), k, t)
				mine += json_integer_value(json_object_get(t, "wall_ms"));
		} else {
			json_t *cb = json_object_get(rec, "code_bytes");
			if (!json_is_integer(cb))
				continue;
			mine = json_integer_value(cb);
		}
		int64_t n, med = median_of(db, j, row, sig[i].column, &n);
		if (med <= 0 || n < c->min_samples || mine * 100 >= med * (int64_t)pct)
			continue;
		char detail[160];
		snprintf(detail, sizeof detail, "%lld %s where the median of %lld earlier %s passes is %lld",
			 (long long)mine, sig[i].unit, (long long)n, j->language, (long long)med);
		fired(g, sig[i].name, detail);
	}
}

static void score_jump(sqlite3 *db, int64_t row, json_t *rec, const pd_review_cfg *c, signals *g)
{
	const char *group = json_string_value(json_object_get(rec, "group_id"));
	json_t *sc = json_object_get(json_object_get(json_object_get(rec, "verdict"), "output"), "score");
	sqlite3_stmt *st;
	if (!c->jump_percent || !group || !group[0] || !json_is_number(sc) ||
	    sqlite3_prepare_v2(db,
			       "SELECT COUNT(*), MAX(score) FROM attempts WHERE group_id = ? AND kind = 'judge' AND last = 1"
			       " AND id <> ?",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, group, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, row);
	int64_t n = 0;
	double best = 0;
	if (sqlite3_step(st) == SQLITE_ROW) {
		n = sqlite3_column_int64(st, 0);
		best = sqlite3_column_double(st, 1);
	}
	sqlite3_finalize(st);
	double mine = json_number_value(sc);
	if (n < c->group_min || (mine - best) * 100 < c->jump_percent)
		return;
	char detail[192];
	snprintf(detail, sizeof detail, "score %.2f where the best of %lld earlier attempts of group %.64s is %.2f", mine,
		 (long long)n, group, best);
	fired(g, "score_jump", detail);
}

void review_consider(sqlite3 *db, int64_t row, const pd_job *j, json_t *rec, const pd_review_cfg *c)
{
	if (j->failure == PD_F_POLICY) {
		enqueue(db, row, j, "policy_violation", first_reason(rec));
		return;
	}
	/* the too-good signals are about judged attempts: a run has no output level */
	if (!json_object_get(rec, "reward"))
		return;
	json_t *claim = json_object_get(rec, "claim");
	if (json_is_true(json_object_get(claim, "mismatch"))) {
		const char *why = json_string_value(json_object_get(claim, "why"));
		enqueue(db, row, j, "claim_mismatch", why ? why : "the agent claimed success on a failed grade");
		return;
	}
	if (j->failure == PD_F_JUDGE) {
		const char *why = json_string_value(json_object_get(rec, "error"));
		enqueue(db, row, j, "checker_failure", why && *why ? why : "the checker failed twice");
		return;
	}
	signals g = {{0}, {0}};
	const char *out = json_string_value(
		json_object_get(json_object_get(json_object_get(rec, "verdict"), "output"), "status"));
	if (pd_job_problem_key(j)[0] && out && !strcmp(out, "pass")) {
		rare_pass(db, j, c, &g);
		unusual_pass(db, row, j, rec, c, &g);
	}
	score_jump(db, row, rec, c, &g);
	if (g.reason[0])
		enqueue(db, row, j, g.reason, g.detail);
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
		pd_fail_as(e, EIO, "review: %s", sqlite3_errmsg(db));
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
		return pd_fail_as(e, EIO, "review: %s", sqlite3_errmsg(db));
	sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
	if (note)
		sqlite3_bind_text(st, 2, note, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, (int64_t)(pd_wall_us() / 1000));
	sqlite3_bind_int64(st, 4, id);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return pd_fail_as(e, EIO, "review: %s", sqlite3_errmsg(db));
	bool changed = sqlite3_changes(db) > 0;
	/* a confirmed hack puts its problem on the risk list: from now on its submissions are
	 * audited in full with egress denied (docs/audit.md, "The risk list") */
	if (changed && !strcmp(state, "confirmed") &&
	    sqlite3_prepare_v2(db,
			       "INSERT INTO risk (problem_id, since, confirmed, last_review)"
			       " SELECT problem_id, ?1, 1, id FROM review WHERE id = ?2 AND problem_id IS NOT NULL"
			       " AND problem_id <> '' ON CONFLICT(problem_id) DO UPDATE SET confirmed = confirmed + 1,"
			       " last_review = excluded.last_review",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (int64_t)(pd_wall_us() / 1000));
		sqlite3_bind_int64(st, 2, id);
		sqlite3_step(st);
		sqlite3_finalize(st);
	}
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

bool review_risky(sqlite3 *db, const char *problem_id)
{
	sqlite3_stmt *st;
	if (!problem_id[0] || sqlite3_prepare_v2(db, "SELECT 1 FROM risk WHERE problem_id = ?", -1, &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(st, 1, problem_id, -1, SQLITE_TRANSIENT);
	bool on = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return on;
}

json_t *review_risk_list(sqlite3 *db, pd_err *e)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT problem_id, since, confirmed, last_review FROM risk ORDER BY problem_id", -1,
			       &st, NULL) != SQLITE_OK) {
		pd_fail_as(e, EIO, "risk: %s", sqlite3_errmsg(db));
		return NULL;
	}
	json_t *a = json_array();
	while (sqlite3_step(st) == SQLITE_ROW) {
		json_t *o = json_object();
		json_object_set_new(o, "problem_id", opt_text(st, 0));
		json_object_set_new(o, "since", opt_int(st, 1));
		json_object_set_new(o, "confirmed", opt_int(st, 2));
		json_object_set_new(o, "last_review", opt_int(st, 3));
		json_array_append_new(a, o);
	}
	sqlite3_finalize(st);
	return a;
}

int review_risk_remove(sqlite3 *db, const char *problem_id, pd_err *e)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "DELETE FROM risk WHERE problem_id = ?", -1, &st, NULL) != SQLITE_OK)
		return pd_fail_as(e, EIO, "risk: %s", sqlite3_errmsg(db));
	sqlite3_bind_text(st, 1, problem_id, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return pd_fail_as(e, EIO, "risk: %s", sqlite3_errmsg(db));
	if (!sqlite3_changes(db))
		return pd_fail(e, ENOENT, "problem %s is not on the risk list", problem_id);
	return 0;
}
