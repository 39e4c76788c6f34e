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

#include <errno.h>
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

static json_t *outbox_row(sqlite3_stmt *st)
{
	const char *text = (const char *)sqlite3_column_text(st, 1);
	json_t *rec = text ? json_loads(text, 0, NULL) : NULL;
	if (!json_is_object(rec)) {
		json_decref(rec);
		rec = json_pack("{s:s}", "error", "the stored record does not parse");
	}
	json_object_set_new(rec, "attempt", json_integer(sqlite3_column_int(st, 2)));
	json_object_set_new(rec, "last", json_boolean(sqlite3_column_int(st, 3)));
	const char *node = (const char *)sqlite3_column_text(st, 8);
	if (node && *node && !json_object_get(rec, "node"))
		json_object_set_new(rec, "node", json_string(node));
	const char *kind = (const char *)sqlite3_column_text(st, 6);
	return json_pack("{s:I,s:s,s:s,s:s,s:I,s:o}", "row", (json_int_t)sqlite3_column_int64(st, 0), "task_id",
			 sqlite3_column_text(st, 4) ? (const char *)sqlite3_column_text(st, 4) : "", "group_id",
			 sqlite3_column_text(st, 5) ? (const char *)sqlite3_column_text(st, 5) : "", "kind",
			 kind ? kind : "run", "finished_at", (json_int_t)sqlite3_column_int64(st, 7), "record", rec);
}

int pd_store_outbox(pd_store *s, int64_t after, unsigned limit, json_t **rows, pd_err *e)
{
	json_t *arr = json_array();
	pthread_mutex_lock(&s->mu);
	sqlite3_stmt *st = NULL;
	/* a row staged is one of a request's rows (first_id..last_id: its earlier attempts too) */
	int rc = sqlite3_prepare_v2(s->db,
				    "SELECT a.id, a.record, a.attempt, a.last, a.task_id, a.group_id, a.kind,"
				    " a.finished_at, a.node, st.request_id FROM attempts a"
				    " LEFT JOIN staged st ON a.id BETWEEN st.first_id AND st.last_id"
				    " WHERE a.id > ?1 ORDER BY a.id LIMIT ?2",
				    -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, after);
		sqlite3_bind_int(st, 2, (int)limit);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const char *staged = (const char *)sqlite3_column_text(st, 9);
			if (staged && !claimed_locked(s, staged))
				break; /* not final yet: nothing after it either, the watermark being a row */
			json_array_append_new(arr, outbox_row(st));
		}
	}
	int out = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : pd_fail_as(e, EIO, "store: outbox: %s", sqlite3_errmsg(s->db));
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->mu);
	if (out < 0) {
		json_decref(arr);
		return -1;
	}
	*rows = arr;
	return 0;
}
