/* The store's tables, and the migration of a store made by an older paddock: the columns added
 * since (each added once, its older rows filled in from their records), in one transaction, so
 * that a store is never left with a column added and its rows not filled. */
#define _GNU_SOURCE
#include "store_schema.h"
#include "review.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=NORMAL;"
	"CREATE TABLE IF NOT EXISTS attempts ("
	" id INTEGER PRIMARY KEY,"
	" task_id TEXT, attempt INTEGER, sandbox_id TEXT, problem_id TEXT, problem_version TEXT,"
	" template TEXT, language TEXT, node TEXT,"
	" queued_at INTEGER, started_at INTEGER, finished_at INTEGER, queue_ms INTEGER,"
	" status TEXT, failure_class TEXT, exit_code INTEGER, signal INTEGER,"
	" wall_ms INTEGER, cpu_ms INTEGER, memory_peak_bytes INTEGER,"
	" record TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS attempts_task ON attempts(task_id);"
	"CREATE INDEX IF NOT EXISTS attempts_failure ON attempts(failure_class);"
	/* an index on json_extract(record, '$.use_id') parsed every record three more times per
	 * request (the insert, and the residue's update of the record, old and new): the use is a
	 * column now (attempts_use_id, below) */
	"DROP INDEX IF EXISTS attempts_use;";

/* Cluster mode's key: one record per request id (a task redelivered after its node died, or
 * pulled twice, is refused the second time). Added to stores made before it; NULL for the rows of
 * single-node requests, which the partial index leaves out. */
static const char schema_request_id[] =
	"CREATE UNIQUE INDEX IF NOT EXISTS attempts_request ON attempts(request_id)"
	" WHERE request_id IS NOT NULL;"
	/* a request's rows committed before its claim was made in the broker (pd_store_put): a node
	 * killed between the two finds them here when it comes back (pd_store_staged) */
	"CREATE TABLE IF NOT EXISTS staged (request_id TEXT PRIMARY KEY, token TEXT NOT NULL,"
	" first_id INTEGER NOT NULL, last_id INTEGER NOT NULL, staged_at INTEGER NOT NULL);";

/* Columns added after the first stores were made: the GRPO group and sample of a judged record,
 * the record's kind ("judge" or "run"), whether the row is its task's last attempt (rows of
 * older stores were one per job: the last), and the review signals' facts (review.h). */
static const struct {
	const char *name, *decl;
} added_columns[] = {
	{"request_id", "request_id TEXT"},
	{"group_id", "group_id TEXT"},
	{"sample_id", "sample_id TEXT"},
	{"kind", "kind TEXT"},
	{"last", "last INTEGER NOT NULL DEFAULT 1"},
	REVIEW_COLUMNS,
	/* the use of the sandbox (the record's use_id): the reclaimer's residue report finds its
	 * record by it */
	{"use_id", "use_id TEXT"},
};

/* Partial: a row without a group (every /run_code's) or a use costs no page of these indexes at its
 * insert, and each page written is a WAL frame at the commit that answers the request. */
static const char schema_group[] = "DROP INDEX IF EXISTS attempts_group;"
				   "CREATE INDEX IF NOT EXISTS attempts_group_nn ON attempts(group_id)"
				   " WHERE group_id IS NOT NULL;"
				   "CREATE INDEX IF NOT EXISTS attempts_use_id ON attempts(use_id) WHERE use_id IS NOT NULL;";

static bool has_column(sqlite3 *db, const char *table, const char *col)
{
	char sql[128];
	snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", table);
	sqlite3_stmt *st;
	bool found = false;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return false;
	while (!found && sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *name = sqlite3_column_text(st, 1);
		found = name && !strcmp((const char *)name, col);
	}
	sqlite3_finalize(st);
	return found;
}

int store_schema(sqlite3 *db, const char *path, pd_err *e)
{
	char *err = NULL;
	if (sqlite3_exec(db, schema, NULL, NULL, &err) != SQLITE_OK)
		goto fail;
	bool review_fill = false;
	int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &err);
	for (size_t i = 0; rc == SQLITE_OK && i < sizeof added_columns / sizeof added_columns[0]; i++) {
		char sql[160];
		snprintf(sql, sizeof sql, "ALTER TABLE attempts ADD COLUMN %s", added_columns[i].decl);
		if (has_column(db, "attempts", added_columns[i].name))
			continue;
		review_fill |= !strcmp(added_columns[i].name, "passed");
		rc = sqlite3_exec(db, sql, NULL, NULL, &err);
		/* the kind of older rows, from their record: a judged record has a reward */
		if (rc == SQLITE_OK && !strcmp(added_columns[i].name, "kind"))
			rc = sqlite3_exec(db, "UPDATE attempts SET kind = CASE WHEN instr(record, '\"reward\":') > 0"
					      " THEN 'judge' ELSE 'run' END", NULL, NULL, &err);
		/* the uses of older rows whose residue a reclaimer may still report */
		if (rc == SQLITE_OK && !strcmp(added_columns[i].name, "use_id"))
			rc = sqlite3_exec(db, "UPDATE attempts SET use_id = json_extract(record, '$.use_id')"
					      " WHERE json_extract(record, '$.residue') = 'pending'", NULL, NULL, &err);
	}
	if (rc == SQLITE_OK && review_fill)
		rc = sqlite3_exec(db, review_fill_sql, NULL, NULL, &err);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "COMMIT", NULL, NULL, &err);
	if (rc != SQLITE_OK) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		goto fail;
	}
	if (sqlite3_exec(db, schema_request_id, NULL, NULL, &err) != SQLITE_OK ||
	    sqlite3_exec(db, schema_group, NULL, NULL, &err) != SQLITE_OK || review_schema(db, &err) != SQLITE_OK)
		goto fail;
	return 0;
fail:
	pd_fail_as(e, EIO, "store %s: %s", path, err ? err : sqlite3_errmsg(db));
	sqlite3_free(err);
	return -1;
}
