/* The store: one SQLite row per attempt of a finished job (never overwritten: docs/api.md, the store) — its observation record (pd_job_to_json) as columns
 * for the questions operators ask, plus the whole record as JSON. WAL mode, so readers never
 * block the writers; a busy timeout, so concurrent workers queue instead of failing.
 *
 * It has a size cap: a record keeps up to a MiB of each output stream, so programs that flood
 * their output (an RL policy's endless print loop) would otherwise fill the disk at the request
 * rate, and a full disk stops the daemon from answering anyone. Past the cap the oldest records
 * are deleted; their pages go to SQLite's free list and new records reuse them, so the file
 * stays near the cap. */
#define _GNU_SOURCE
#include "server.h"
#include "review.h"
#include "store_schema.h"
#include "store_priv.h"

#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include "sqlite_dl.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

/* Free space the store must see before it takes rows again after a full disk: a row with its
 * record is a few KiB, the WAL grows by pages, and a checkpoint needs room too. */
#define ROOM_BYTES (4u << 20)

static int64_t query_i64(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return v;
}

/* Bytes of the database in use: its pages less the free ones. */
static uint64_t used_bytes(sqlite3 *db)
{
	int64_t pages = query_i64(db, "PRAGMA page_count"), free_pages = query_i64(db, "PRAGMA freelist_count"),
		size = query_i64(db, "PRAGMA page_size");
	return pages > free_pages && free_pages >= 0 && size > 0 ? (uint64_t)(pages - free_pages) * (uint64_t)size : 0;
}

/* Over the cap, deletes the oldest records until the database uses 1/32 less than it: a few
 * looks at the size later (one per 64th of the cap written), not at every write, and little
 * at a time, so the writer holding the store's lock is not kept long. Row ids grow by one per
 * record and only the oldest are ever deleted, so the range of ids counts the records, and the
 * average size says how many to take. */

static void prune_locked(pd_store *s)
{
	uint64_t used = used_bytes(s->db), target = s->max - s->max / 32, removed = 0;
	for (int round = 0; round < 8 && used > target; round++) {
		int64_t lo = query_i64(s->db, "SELECT MIN(id) FROM attempts"),
			hi = query_i64(s->db, "SELECT MAX(id) FROM attempts");
		if (lo <= 0 || hi < lo)
			break;
		uint64_t avg = used / (uint64_t)(hi - lo + 1);
		int64_t n = (int64_t)((used - target) / (avg ? avg : 1)) + 1;
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(s->db, "DELETE FROM attempts WHERE id < ?", -1, &st, NULL) != SQLITE_OK)
			break;
		sqlite3_bind_int64(st, 1, lo + n);
		int rc = sqlite3_step(st);
		sqlite3_finalize(st);
		int changed = sqlite3_changes(s->db);
		if (rc != SQLITE_DONE || changed <= 0)
			break;
		removed += (uint64_t)changed;
		used = used_bytes(s->db);
	}
	if (!removed)
		return;
	s->pruned += removed;
	pd_log("info", "results store over its cap: the oldest records deleted", PD_LU("deleted", removed),
	       PD_LU("used_bytes", used), PD_LU("cap_bytes", s->max));
}

pd_store *pd_store_open(const char *path, uint64_t max_bytes, pd_err *e)
{
	if (pd_dl_load(&pd_dls_lib, e) < 0)
		return NULL;
	pd_store *s = calloc(1, sizeof *s);
	if (!s) {
		pd_fail(e, ENOMEM, "store");
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->rd_mu, NULL);
	pd_review_cfg_default(&s->review);
	{
		char tmp[sizeof s->dir];
		snprintf(tmp, sizeof tmp, "%s", path);
		snprintf(s->dir, sizeof s->dir, "%s", dirname(tmp));
	}
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
			    NULL) != SQLITE_OK) {
		pd_fail_as(e, EIO, "open store %s: %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 10000);
	if (store_schema(s->db, path, e) < 0)
		goto fail;
	if (sqlite3_prepare_v2(s->db,
			       "INSERT INTO attempts (task_id, attempt, sandbox_id, problem_id, problem_version,"
			       " template, language, node, queued_at, started_at, finished_at, queue_ms, status,"
			       " failure_class, exit_code, signal, wall_ms, cpu_ms, memory_peak_bytes, record, request_id,"
			       " group_id, sample_id, kind, last, problem_key, passed, tests_ms, code_bytes, score, use_id)"
			       " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
			       -1, &s->put, NULL) != SQLITE_OK) {
		pd_fail_as(e, EIO, "store %s: %s", path, sqlite3_errmsg(s->db));
		goto fail;
	}
	if (sqlite3_prepare_v2(s->db, "DELETE FROM staged WHERE request_id = ?", -1, &s->unstage, NULL) != SQLITE_OK) {
		pd_fail_as(e, EIO, "store %s: %s", path, sqlite3_errmsg(s->db));
		goto fail;
	}
	/* the readers' connection, opened once the schema is there (a read-only one cannot make it) */
	if (sqlite3_open_v2(path, &s->rd, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK) {
		sqlite3_close(s->rd);
		s->rd = NULL;
	} else {
		/* a reader waits only for a WAL recovery or checkpoint, never for a writer */
		sqlite3_busy_timeout(s->rd, 1000);
	}
	/* a store kept from an earlier run under a larger cap is brought under this one now */
	s->max = max_bytes;
	if (s->max)
		prune_locked(s);
	return s;
fail:
	sqlite3_finalize(s->put);
	sqlite3_finalize(s->unstage);
	if (s->db)
		sqlite3_close(s->db);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->rd_mu);
	free(s);
	return NULL;
}

void pd_store_close(pd_store *s)
{
	if (!s)
		return;
	pd_store_unstage(s);
	pthread_mutex_lock(&s->mu);
	store_late_flush_locked(s);
	pthread_mutex_unlock(&s->mu);
	sqlite3_finalize(s->put);
	sqlite3_finalize(s->residue);
	sqlite3_finalize(s->unstage);
	sqlite3_finalize(s->outbox);
	for (int i = 0; i < 3; i++)
		sqlite3_finalize(s->txn[i]);
	/* The reader first: SQLite copies the WAL into the database file only when the last
	 * connection closes, and a read-only one cannot; closed after the writer, it left every
	 * record in the -wal file and the database file empty (a copy of it alone had nothing). Then
	 * the copy is made explicitly (TRUNCATE: the -wal is emptied too), so that it happens even
	 * while another process holds the file open and the close is not the last. */
	if (s->rd)
		sqlite3_close(s->rd);
	/* TRUNCATE waits for other processes' readers (an operator's sqlite3 shell): a second, not
	 * the writers' 10, so that one does not hold up the stop; if it gives up, the records stay
	 * in the -wal, whole, for the next open */
	sqlite3_busy_timeout(s->db, 1000);
	int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	if (rc != SQLITE_OK)
		pd_log("warn", "results store: the checkpoint at close failed (the records stay in the -wal file)",
		       PD_LS("dir", s->dir), PD_LS("error", sqlite3_errmsg(s->db)));
	sqlite3_close(s->db);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->rd_mu);
	free(s);
}

/* The connection a reader uses, its lock taken: the readers' own, or the writer's if there is none. */
static sqlite3 *rd_lock(pd_store *s)
{
	if (!s->rd) {
		pthread_mutex_lock(&s->mu);
		return s->db;
	}
	pthread_mutex_lock(&s->rd_mu);
	return s->rd;
}

static void rd_unlock(pd_store *s)
{
	pthread_mutex_unlock(s->rd ? &s->rd_mu : &s->mu);
}

int store_txn(pd_store *s, int which)
{
	static const char *const sql[] = {"BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"};
	if (!s->txn[which] && sqlite3_prepare_v2(s->db, sql[which], -1, &s->txn[which], NULL) != SQLITE_OK)
		return sqlite3_extended_errcode(s->db);
	int rc = sqlite3_step(s->txn[which]);
	sqlite3_reset(s->txn[which]);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static const char *jstr(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

static void bind_opt(sqlite3_stmt *st, int i, const char *v)
{
	if (v && v[0])
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* The columns read from the record itself: its GRPO ids, its kind (a judged record is the one with
 * a reward, even a null one), whether it is its task's last attempt, and the review's facts. */
static void bind_record(sqlite3_stmt *st, const pd_job *j, json_t *rec, const char *text, bool last)
{
	sqlite3_bind_text(st, 20, text, -1, SQLITE_TRANSIENT);
	bind_opt(st, 22, jstr(rec, "group_id"));
	bind_opt(st, 23, jstr(rec, "sample_id"));
	sqlite3_bind_text(st, 24, json_object_get(rec, "reward") ? "judge" : "run", -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 25, last);
	review_bind(st, 26, j, rec);
	bind_opt(st, 31, jstr(rec, "use_id"));
}

/* An earlier attempt's row: its columns come from its record (the job's own fields describe the
 * last attempt). Lock held. */
static int put_prior_locked(pd_store *s, const pd_job *j, const char *node, json_t *rec, unsigned attempt)
{
	char *text = pd_json_dumps(rec, JSON_COMPACT);
	if (!text)
		return SQLITE_NOMEM;
	sqlite3_stmt *st = s->put;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	json_int_t at = json_integer_value(json_object_get(rec, "attempt"));
	sqlite3_bind_text(st, 1, j->task_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 2, at > 0 ? (int)at : (int)attempt);
	sqlite3_bind_text(st, 3, jstr(rec, "sandbox_id"), -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, j->problem_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, j->problem_version, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 6, j->template_name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 7, j->language, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 8, node, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 9, json_integer_value(json_object_get(rec, "queued_at")));
	sqlite3_bind_int64(st, 10, json_integer_value(json_object_get(rec, "started_at")));
	sqlite3_bind_int64(st, 11, json_integer_value(json_object_get(rec, "finished_at")));
	sqlite3_bind_int64(st, 12, json_integer_value(json_object_get(rec, "queue_ms")));
	sqlite3_bind_text(st, 13, jstr(rec, "status")[0] ? jstr(rec, "status") : j->execute ? "judge" : "XX", -1,
			  SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 14, jstr(rec, "failure_class"), -1, SQLITE_TRANSIENT);
	for (int i = 15; i <= 19; i++)
		sqlite3_bind_int(st, i, 0);
	bind_record(st, j, rec, text, false);
	sqlite3_bind_null(st, 21);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	free(text);
	return rc;
}

/* Marks rows first..last as request_id's, awaiting its claim (token): inside the put's
 * transaction. */
static int stage_locked(pd_store *s, const char *request_id, const char *token, int64_t first, int64_t last)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO staged VALUES (?, ?, ?, ?, ?)", -1, &st, NULL) != SQLITE_OK)
		return sqlite3_extended_errcode(s->db);
	sqlite3_bind_text(st, 1, request_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, token ? token : "", -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, first);
	sqlite3_bind_int64(st, 4, last);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)(pd_wall_us() / 1000));
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc;
}

/* Clears request_id's stage: its rows stay (keep: the claim is ours) or go. 0, or -1 when the
 * store did not take it (the stage stays, for the next start to settle). */
static int unstage_locked(pd_store *s, const char *request_id, bool keep)
{
	sqlite3_stmt *st;
	bool ok = store_txn(s, TXN_BEGIN) == SQLITE_OK;
	if (ok && !keep) {
		ok = sqlite3_prepare_v2(s->db,
					"DELETE FROM attempts WHERE id BETWEEN (SELECT first_id FROM staged WHERE request_id = ?1)"
					" AND (SELECT last_id FROM staged WHERE request_id = ?1)",
					-1, &st, NULL) == SQLITE_OK;
		if (ok) {
			sqlite3_bind_text(st, 1, request_id, -1, SQLITE_TRANSIENT);
			ok = sqlite3_step(st) == SQLITE_DONE;
			sqlite3_finalize(st);
		}
	}
	if (ok && (ok = sqlite3_prepare_v2(s->db, "DELETE FROM staged WHERE request_id = ?", -1, &st, NULL) == SQLITE_OK)) {
		sqlite3_bind_text(st, 1, request_id, -1, SQLITE_TRANSIENT);
		ok = sqlite3_step(st) == SQLITE_DONE;
		sqlite3_finalize(st);
	}
	if (ok && store_txn(s, TXN_COMMIT) == SQLITE_OK)
		return 0;
	store_txn(s, TXN_ROLLBACK);
	return -1;
}

/* Clears the stage of the requests whose claims were made (s->claimed), inside the caller's
 * transaction; the list is emptied by the caller once that commits. */
static int unstage_claimed_locked(pd_store *s)
{
	int rc = SQLITE_DONE;
	for (unsigned i = 0; i < s->nclaimed && rc == SQLITE_DONE; i++) {
		sqlite3_reset(s->unstage);
		sqlite3_bind_text(s->unstage, 1, s->claimed[i], -1, SQLITE_STATIC);
		rc = sqlite3_step(s->unstage);
	}
	sqlite3_reset(s->unstage);
	sqlite3_clear_bindings(s->unstage);
	return rc;
}

/* The claimed requests' stage cleared in a transaction of its own. Under mu. */
static int unstage_claimed_txn_locked(pd_store *s)
{
	if (!s->nclaimed)
		return 0;
	if (store_txn(s, TXN_BEGIN) != SQLITE_OK)
		return -1;
	if (unstage_claimed_locked(s) == SQLITE_DONE && store_txn(s, TXN_COMMIT) == SQLITE_OK) {
		s->nclaimed = 0;
		return 0;
	}
	store_txn(s, TXN_ROLLBACK);
	return -1;
}

int pd_store_unstage(pd_store *s)
{
	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	int rc = unstage_claimed_txn_locked(s);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int pd_store_staged(pd_store *s, int (*settle)(void *arg, const char *request_id, const char *token), void *arg,
		    unsigned *kept, unsigned *dropped, pd_err *e)
{
	*kept = *dropped = 0;
	pthread_mutex_lock(&s->mu);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db, "SELECT request_id, token FROM staged ORDER BY staged_at", -1, &st, NULL) != SQLITE_OK) {
		pthread_mutex_unlock(&s->mu);
		return pd_fail_as(e, EIO, "store: %s", sqlite3_errmsg(s->db));
	}
	/* read whole first: the deletes below must not run under this statement's cursor */
	json_t *list = json_array();
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(list, json_pack("[s,s]", (const char *)sqlite3_column_text(st, 0),
						      (const char *)sqlite3_column_text(st, 1)));
	sqlite3_finalize(st);
	int out = 0;
	size_t i;
	json_t *it;
	json_array_foreach(list, i, it) {
		const char *rid = json_string_value(json_array_get(it, 0)), *tok = json_string_value(json_array_get(it, 1));
		int v = settle(arg, rid, tok);
		if (v < 0) {
			out = pd_fail(e, EAGAIN, "request %s: the broker could not say whose claim it has", rid);
			continue;
		}
		if (unstage_locked(s, rid, v == 1) < 0)
			out = pd_fail_as(e, EIO, "store: %s", sqlite3_errmsg(s->db));
		else if (v == 1)
			(*kept)++;
		else
			(*dropped)++;
	}
	json_decref(list);
	pthread_mutex_unlock(&s->mu);
	return out;
}

/* The record to store: the job's own, or made from the job, then completed with a residue report
 * that came before it (the reclaimer usually reports before the record is written: completed
 * before the insert, not rewritten after it; a record the job carries is not ours to change). */
static json_t *record_of(pd_store *s, const pd_job *j)
{
	json_t *rec = j->record ? json_incref(j->record) : pd_job_to_json(j);
	char early[128];
	int64_t early_td = -1;
	if (!j->record && rec && j->use_id[0] && store_take_early_residue(s, j->use_id, early, sizeof early, &early_td)) {
		json_object_set_new(rec, "residue", json_string(early));
		json_t *costs = json_object_get(rec, "costs");
		if (early_td >= 0 && json_is_object(costs))
			json_object_set_new(costs, "teardown_ms", json_real((double)early_td / 1000.0));
		for (const char *const *k = (const char *const[]){"compile", "run", NULL}; *k; k++)
			if (json_is_object(json_object_get(rec, *k)))
				json_object_set_new(json_object_get(rec, *k), "residue", json_string(early));
	}
	return rec;
}

/* The answering attempt's row: its columns from the job's own fields. Lock held. */
static void bind_last_locked(pd_store *s, const pd_job *j, const char *node, json_t *rec, const char *text)
{
	const pd_result *r = j->ran ? &j->run_r : j->compiled ? &j->compile_r : NULL;
	sqlite3_stmt *st = s->put;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	sqlite3_bind_text(st, 1, j->task_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 2, (int)j->attempts);
	sqlite3_bind_text(st, 3, j->sandbox_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, j->problem_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, j->problem_version, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 6, j->template_name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 7, j->language, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 8, node, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)(j->queued_us / 1000));
	sqlite3_bind_int64(st, 10, (sqlite3_int64)(j->started_us / 1000));
	sqlite3_bind_int64(st, 11, (sqlite3_int64)(j->finished_us / 1000));
	sqlite3_bind_int64(st, 12, j->started_us > j->queued_us ? (sqlite3_int64)((j->started_us - j->queued_us) / 1000) : 0);
	sqlite3_bind_text(st, 13, pd_job_status_name(j), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 14, pd_failure_name(j->failure), -1, SQLITE_STATIC);
	if (r && pd_result_exited(r)) /* a program that did not exit has no exit code: NULL */
		sqlite3_bind_int(st, 15, r->exit_code);
	else
		sqlite3_bind_null(st, 15);
	sqlite3_bind_int(st, 16, r ? r->signal : 0);
	sqlite3_bind_int64(st, 17, r ? (sqlite3_int64)r->wall_ms : 0);
	sqlite3_bind_int64(st, 18, r ? (sqlite3_int64)r->cpu_ms : 0);
	sqlite3_bind_int64(st, 19, r ? (sqlite3_int64)r->memory_peak_bytes : 0);
	bind_record(st, j, rec, text, true);
	bind_opt(st, 21, j->request_id);
}

/* Inside the transaction, the answering row inserted (row): the earlier attempts' rows, the
 * stage (with the earlier claimed requests' cleared), the commit, then the claim. Returns the
 * SQLite code of the writes (SQLITE_DONE: committed), or -1 (e set) when the claim was refused
 * and the rows were taken out again. Lock held. */
static int commit_attempts_locked(pd_store *s, const pd_job *j, const char *node, int64_t row, pd_err *e)
{
	size_t nprior = json_array_size(j->prior);
	int rc = SQLITE_DONE;
	sqlite3_reset(s->put);
	for (size_t i = 0; i < nprior && rc == SQLITE_DONE; i++)
		rc = put_prior_locked(s, j, node, json_array_get(j->prior, i), (unsigned)i + 1);
	bool staged = rc == SQLITE_DONE && j->claim;
	/* the earlier claimed requests' stage goes in this commit (before this one is staged: never
	 * its own id, which the unique key refused above if it were recorded) */
	bool unstaged = rc == SQLITE_DONE && s->nclaimed;
	if (unstaged)
		rc = unstage_claimed_locked(s);
	int64_t last = sqlite3_last_insert_rowid(s->db);
	if (staged && rc == SQLITE_DONE)
		rc = stage_locked(s, j->request_id, j->claim_token, row, last);
	if (rc == SQLITE_DONE && store_txn(s, TXN_COMMIT) != SQLITE_OK)
		rc = sqlite3_extended_errcode(s->db);
	if (rc != SQLITE_DONE)
		store_txn(s, TXN_ROLLBACK);
	else if (unstaged)
		s->nclaimed = 0;
	if (rc != SQLITE_DONE || !staged)
		return rc;
	if (j->claim(j, j->claim_arg, e) < 0) {
		unstage_locked(s, j->request_id, false);
		return -1;
	}
	/* kept staged until the next commit (s->claimed); a full list is cleared now */
	if (s->nclaimed == sizeof s->claimed / sizeof s->claimed[0])
		unstage_claimed_txn_locked(s);
	if (s->nclaimed < sizeof s->claimed / sizeof s->claimed[0])
		snprintf(s->claimed[s->nclaimed++], sizeof s->claimed[0], "%s", j->request_id);
	else
		unstage_locked(s, j->request_id, true);
	return rc;
}

/* After the writes (rc): a failure counted (a full disk apart), or the size looked at. Returns
 * 0 or -1 (e set). Lock held. */
static int account_locked(pd_store *s, int rc, size_t written, pd_err *e)
{
	if (rc != SQLITE_DONE) {
		/* a full disk shows as SQLITE_FULL, or as an I/O error whose errno is ENOSPC (a WAL or
		 * journal write that found no room) */
		bool nospace = rc == SQLITE_FULL || sqlite3_system_errno(s->db) == ENOSPC ||
			       sqlite3_system_errno(s->db) == EDQUOT;
		if (nospace) {
			s->full = true;
			s->failed_full++;
		} else {
			s->failed_other++;
		}
		return pd_fail(e, nospace ? ENOSPC : EIO, "store: %s", sqlite3_errmsg(s->db));
	}
	if (s->max) {
		/* a look at the size (three pragmas) for every 64th of the cap written; the insert is
		 * reset first, so that its transaction has ended before a delete begins another */
		s->since += written + 512;
		if (s->since >= s->max / 64) {
			s->since = 0;
			sqlite3_reset(s->put);
			if (used_bytes(s->db) > s->max)
				prune_locked(s);
		}
	}
	return 0;
}

int pd_store_put(pd_store *s, const pd_job *j, const char *node, pd_err *e)
{
	json_t *rec = record_of(s, j);
	char *text = rec ? pd_json_dumps(rec, JSON_COMPACT) : NULL;
	if (!text) {
		json_decref(rec);
		return pd_fail(e, ENOMEM, "record");
	}
	pthread_mutex_lock(&s->mu);
	bind_last_locked(s, j, node, rec, text);
	size_t nprior = json_array_size(j->prior);
	/* A job's attempts commit together. A request's record goes with its claim (the cluster's mark,
	 * in the broker, that this node recorded it): the rows commit first, staged (their ids and the
	 * claim's token), then the claim is made, and the stage is cleared with the next record's
	 * commit (s->claimed); a refused claim takes the rows out again. The broker and this file
	 * cannot commit as one, so the order is the one a node killed at any point can finish when it
	 * comes back (pd_store_staged): rows staged and no claim of ours, they go (the task, never
	 * acked, is delivered again); our claim made, they stay. Committing after the claim instead
	 * would lose a claimed record to a kill between the two. The lock is held throughout, so this
	 * process never shows a row before its claim. */
	/* The reclaimer's reports waiting for a record's transaction (store_residue.c) go in this
	 * one: a record alone is a single INSERT otherwise. */
	bool txn = (j->request_id[0] || nprior || s->nlate) &&
		   store_txn(s, TXN_BEGIN) == SQLITE_OK;
	int rc = sqlite3_step(s->put);
	/* the answering attempt's row, for the review queue (the earlier attempts are inserted after) */
	int64_t row = rc == SQLITE_DONE ? sqlite3_last_insert_rowid(s->db) : 0;
	bool late = txn && rc == SQLITE_DONE && s->nlate;
	if (late)
		store_late_apply_locked(s);
	if (txn && rc == SQLITE_CONSTRAINT) {
		sqlite3_reset(s->put);
		store_txn(s, TXN_ROLLBACK);
		rc = -1;
		pd_fail(e, EEXIST, "request %s is recorded already", j->request_id);
	} else if (txn && rc == SQLITE_DONE) {
		rc = commit_attempts_locked(s, j, node, row, e);
		/* -1: committed, then its claim refused (its own rows taken out again) */
		if (late)
			store_late_settle_locked(s, rc == SQLITE_DONE || rc == -1);
	} else if (txn) {
		sqlite3_reset(s->put);
		store_txn(s, TXN_ROLLBACK);
	}
	int out = rc < 0 ? -1 : account_locked(s, rc, strlen(text), e);
	sqlite3_reset(s->put);
	/* a residue report that came before the record completes it now (the earlier attempts'
	 * sandboxes were reclaimed first of all) */
	if (rc == SQLITE_DONE) {
		review_consider(s->db, row, j, rec, &s->review);
		if (j->use_id[0])
			store_early_residue_locked(s, j->use_id);
		for (size_t i = 0; i < nprior; i++) {
			const char *u = json_string_value(json_object_get(json_array_get(j->prior, i), "use_id"));
			if (u && *u)
				store_early_residue_locked(s, u);
		}
	}
	pthread_mutex_unlock(&s->mu);
	json_decref(rec);
	free(text);
	return out;
}

/* ---- residue reports (store_residue.c tells the whole of it) ------------------------------- */

/* Completes the pending residue of the record of use_id, and its teardown cost when known (a
 * record with "costs": POST /v1/runs'); the rows changed (0: not stored yet), -1 on an error. */
int store_residue_locked(pd_store *s, const char *use_id, const char *residue, int64_t teardown_us)
{
#define RESIDUE_SET "json_set(record, '$.residue', ?1, '$.run.residue', ?1, '$.compile.residue', ?1)"
	if (!s->residue &&
	    sqlite3_prepare_v2(s->db,
			       "UPDATE attempts SET record = CASE WHEN ?3 IS NOT NULL AND json_type(record, '$.costs') = 'object'"
			       " THEN json_set(" RESIDUE_SET ", '$.costs.teardown_ms', ?3) ELSE " RESIDUE_SET " END"
			       " WHERE use_id = ?2 AND json_extract(record, '$.residue') = 'pending'",
			       -1, &s->residue, NULL) != SQLITE_OK)
		return -1;
#undef RESIDUE_SET
	sqlite3_stmt *st = s->residue;
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, residue, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, use_id, -1, SQLITE_TRANSIENT);
	if (teardown_us >= 0)
		sqlite3_bind_double(st, 3, (double)teardown_us / 1000.0);
	else
		sqlite3_bind_null(st, 3);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? sqlite3_changes(s->db) : -1;
}

/* Keeps a report whose record is not stored yet, for pd_store_put (a use with no record at all,
 * a session's, is forgotten when the ring comes round). Lock held. */
void store_early_keep_locked(pd_store *s, const char *use_id, const char *residue, int64_t teardown_us)
{
	unsigned i = s->early_next++ % EARLY_RESIDUE;
	snprintf(s->early[i].use_id, sizeof s->early[i].use_id, "%s", use_id);
	snprintf(s->early[i].residue, sizeof s->early[i].residue, "%s", residue);
	s->early[i].teardown_us = teardown_us;
}

/* A report that came before use_id's record, applied to it now; true if there was one. */
bool store_early_residue_locked(pd_store *s, const char *use_id)
{
	for (unsigned i = 0; i < EARLY_RESIDUE; i++)
		if (s->early[i].use_id[0] && !strcmp(s->early[i].use_id, use_id)) {
			store_residue_locked(s, use_id, s->early[i].residue, s->early[i].teardown_us);
			s->early[i].use_id[0] = 0;
			return true;
		}
	return false;
}

/* Takes use_id's report out of the ring, or out of the waiting list (its record was not
 * written yet: it goes into the insert), into residue; false if there is none. */
bool store_take_early_residue(pd_store *s, const char *use_id, char *residue, size_t len, int64_t *teardown_us)
{
	bool found = false;
	pthread_mutex_lock(&s->mu);
	for (unsigned i = 0; i < EARLY_RESIDUE && !found; i++)
		if (s->early[i].use_id[0] && !strcmp(s->early[i].use_id, use_id)) {
			snprintf(residue, len, "%s", s->early[i].residue);
			*teardown_us = s->early[i].teardown_us;
			s->early[i].use_id[0] = 0;
			found = true;
		}
	for (unsigned i = 0; i < s->nlate && !found; i++)
		if (!strcmp(s->late[i].use_id, use_id)) {
			snprintf(residue, len, "%s", s->late[i].residue);
			*teardown_us = s->late[i].teardown_us;
			s->late[i] = s->late[--s->nlate];
			found = true;
		}
	pthread_mutex_unlock(&s->mu);
	return found;
}

/* Writes the waiting reports inside the transaction the caller has open. Lock held. */
void store_late_apply_locked(pd_store *s)
{
	for (unsigned i = 0; i < s->nlate; i++)
		s->late[i].changed = store_residue_locked(s, s->late[i].use_id, s->late[i].residue, s->late[i].teardown_us);
}

/* After the transaction that applied them: committed, they are done (one whose record was not
 * there goes to the ring, as pd_store_reclaimed's does); rolled back, they wait for the next. */
void store_late_settle_locked(pd_store *s, bool committed)
{
	if (!committed)
		return;
	for (unsigned i = 0; i < s->nlate; i++)
		if (s->late[i].changed == 0)
			store_early_keep_locked(s, s->late[i].use_id, s->late[i].residue, s->late[i].teardown_us);
	s->nlate = 0;
}

/* The waiting reports in a transaction of their own. Lock held. */
void store_late_flush_locked(pd_store *s)
{
	if (!s->nlate)
		return;
	/* one report is one statement: no transaction around it */
	bool txn = s->nlate > 1 && store_txn(s, TXN_BEGIN) == SQLITE_OK;
	store_late_apply_locked(s);
	bool committed = !txn || store_txn(s, TXN_COMMIT) == SQLITE_OK;
	if (!committed)
		store_txn(s, TXN_ROLLBACK);
	store_late_settle_locked(s, committed);
}

/* A row as the readers answer it: its record with the row's attempt number, whether it is the
 * task's last attempt, and the row's cursor. A record that no longer parses (it was written by
 * this store, so only a damaged file does that) is answered as an error in its place. */
static json_t *row_json(sqlite3_stmt *st)
{
	const char *text = (const char *)sqlite3_column_text(st, 1);
	json_error_t je;
	json_t *rec = text ? json_loads(text, 0, &je) : NULL;
	if (!json_is_object(rec)) {
		json_decref(rec);
		rec = json_object();
		json_object_set_new(rec, "error", json_string("the stored record does not parse"));
	}
	json_object_set_new(rec, "attempt", json_integer(sqlite3_column_int(st, 2)));
	json_object_set_new(rec, "last", json_boolean(sqlite3_column_int(st, 3)));
	json_object_set_new(rec, "row", json_integer(sqlite3_column_int64(st, 0)));
	return rec;
}

json_t *pd_store_get(pd_store *s, const char *task_id, pd_err *e)
{
	sqlite3_stmt *st;
	json_t *arr = json_array();
	sqlite3 *db = rd_lock(s);
	if (sqlite3_prepare_v2(db,
			       "SELECT id, record, attempt, last FROM attempts WHERE task_id = ? ORDER BY attempt, id",
			       -1, &st, NULL) != SQLITE_OK) {
		pd_fail_as(e, EIO, "store: %s", sqlite3_errmsg(db));
		rd_unlock(s);
		json_decref(arr);
		return NULL;
	}
	sqlite3_bind_text(st, 1, task_id, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(arr, row_json(st));
	sqlite3_finalize(st);
	rd_unlock(s);
	return arr;
}

int pd_store_list(pd_store *s, const pd_store_query *q, json_t **records, int64_t *next, pd_err *e)
{
	unsigned limit = q->limit ? q->limit : 100;
	if (limit > 1000)
		limit = 1000;
	/* one more row than the page, to know whether another page follows */
	char sql[640];
	/* last=1: each task's latest last attempt (a task recorded again later, an episode graded
	 * twice, has two rows with last = 1) */
	snprintf(sql, sizeof sql,
		 "SELECT id, record, attempt, last FROM attempts a WHERE id > ?1"
		 " AND (?2 IS NULL OR group_id = ?2) AND (?3 IS NULL OR kind = ?3) AND finished_at >= ?4%s"
		 " ORDER BY id LIMIT ?5",
		 q->last_only ? " AND last = 1 AND NOT EXISTS (SELECT 1 FROM attempts b WHERE b.task_id = a.task_id"
				" AND b.last = 1 AND b.id > a.id)"
			      : "");
	sqlite3_stmt *st;
	sqlite3 *db = rd_lock(s);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		pd_fail_as(e, EIO, "store: %s", sqlite3_errmsg(db));
		rd_unlock(s);
		return -1;
	}
	sqlite3_bind_int64(st, 1, q->after > 0 ? q->after : 0);
	bind_opt(st, 2, q->group_id);
	bind_opt(st, 3, q->kind);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)q->since_ms);
	sqlite3_bind_int(st, 5, (int)limit + 1);
	json_t *arr = json_array();
	*next = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (json_array_size(arr) == limit) {
			*next = json_integer_value(json_object_get(json_array_get(arr, limit - 1), "row"));
			break;
		}
		json_array_append_new(arr, row_json(st));
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		pd_fail_as(e, EIO, "store: %s", sqlite3_errmsg(db));
		sqlite3_finalize(st);
		rd_unlock(s);
		json_decref(arr);
		return -1;
	}
	sqlite3_finalize(st);
	rd_unlock(s);
	*records = arr;
	return 0;
}

long pd_store_count(pd_store *s)
{
	sqlite3_stmt *st;
	long n = -1;
	sqlite3 *db = rd_lock(s);
	if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM attempts", -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = (long)sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	rd_unlock(s);
	return n;
}

bool pd_store_full(pd_store *s, char *msg, size_t len)
{
	bool full = s->full;
	if (full) {
		struct statvfs v;
		uint64_t avail = statvfs(s->dir, &v) == 0 ? (uint64_t)v.f_bavail * v.f_frsize : 0;
		if (avail >= ROOM_BYTES) {
			s->full = false; /* the next write tells whether that was enough */
			full = false;
		} else if (msg) {
			snprintf(msg, len, "disk full: the results store in %s cannot record results (%llu KiB free)",
				 s->dir, (unsigned long long)(avail >> 10));
		}
	}
	return full;
}

void pd_store_size(pd_store *s, uint64_t *used, uint64_t *cap)
{
	sqlite3 *db = rd_lock(s);
	*used = used_bytes(db);
	*cap = s->max;
	rd_unlock(s);
}

uint64_t pd_store_pruned(pd_store *s)
{
	return s->pruned;
}

void pd_store_failures(pd_store *s, uint64_t *full, uint64_t *other)
{
	*full = s->failed_full;
	*other = s->failed_other;
}

void pd_store_set_review(pd_store *s, const pd_review_cfg *c)
{
	pthread_mutex_lock(&s->mu);
	s->review = *c;
	pthread_mutex_unlock(&s->mu);
}

json_t *pd_store_review_list(pd_store *s, const char *state, pd_err *e)
{
	if (!s) /* no store: nothing is recorded, so nothing is queued */
		return json_array();
	sqlite3 *db = rd_lock(s);
	json_t *a = review_list(db, state, e);
	rd_unlock(s);
	return a;
}

int pd_store_review_decide(pd_store *s, int64_t id, const char *decision, const char *note, json_t **item, pd_err *e)
{
	if (!s)
		return pd_fail(e, ENOENT, "no review item %lld (no store)", (long long)id);
	pthread_mutex_lock(&s->mu);
	int rc = review_decide(s->db, id, decision, note, item, e);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

void pd_store_review_stats(pd_store *s, uint64_t *pending, uint64_t *confirmed, uint64_t *dismissed)
{
	*pending = *confirmed = *dismissed = 0;
	if (!s)
		return;
	sqlite3 *db = rd_lock(s);
	review_stats(db, pending, confirmed, dismissed);
	rd_unlock(s);
}

bool pd_store_risky(pd_store *s, const char *problem_id)
{
	sqlite3 *db = rd_lock(s);
	bool on = review_risky(db, problem_id);
	rd_unlock(s);
	return on;
}

json_t *pd_store_risk_list(pd_store *s, pd_err *e)
{
	sqlite3 *db = rd_lock(s);
	json_t *a = review_risk_list(db, e);
	rd_unlock(s);
	return a;
}

int pd_store_risk_remove(pd_store *s, const char *problem_id, pd_err *e)
{
	pthread_mutex_lock(&s->mu);
	int rc = review_risk_remove(s->db, problem_id, e);
	pthread_mutex_unlock(&s->mu);
	return rc;
}
