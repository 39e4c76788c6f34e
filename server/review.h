/* The review queue's table, kept in the store's database (store.c holds the lock and calls these;
 * nothing else does). */
#ifndef PD_REVIEW_H
#define PD_REVIEW_H
#include "server.h"

#include "sqlite_dl.h"

int review_schema(sqlite3 *db, char **err);
/* The facts the signals ask about, kept as columns of each attempt's row (they were read from the
 * record at every judged store): the problem's key (pd_job_problem_key), whether it passed, its
 * tests' wall time, its code's size, its score. REVIEW_COLUMNS are their declarations for the
 * store's table; review_bind binds the five parameters from first on for an insert of rec;
 * review_fill_sql fills them in for the judged rows of a store made before them. */
#define REVIEW_COLUMNS {"problem_key", "problem_key TEXT"}, {"passed", "passed INTEGER"}, \
	{"tests_ms", "tests_ms INTEGER"}, {"code_bytes", "code_bytes INTEGER"}, {"score", "score REAL"}
void review_bind(sqlite3_stmt *st, int first, const pd_job *j, json_t *rec);
extern const char review_fill_sql[];
/* Looks at the attempt just stored (row id `row`, its record rec) and queues it for review when
 * it broke a rule or looks too good by c's thresholds. */
void review_consider(sqlite3 *db, int64_t row, const pd_job *j, json_t *rec, const pd_review_cfg *c);
json_t *review_list(sqlite3 *db, const char *state, pd_err *e);
int review_decide(sqlite3 *db, int64_t id, const char *decision, const char *note, json_t **item, pd_err *e);
/* The risk list: whether the problem is on it; its entries; one taken off (ENOENT: not on it). */
bool review_risky(sqlite3 *db, const char *problem_id);
json_t *review_risk_list(sqlite3 *db, pd_err *e);
int review_risk_remove(sqlite3 *db, const char *problem_id, pd_err *e);
void review_stats(sqlite3 *db, uint64_t *pending, uint64_t *confirmed, uint64_t *dismissed);
#endif
