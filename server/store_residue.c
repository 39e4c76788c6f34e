/* The residue of a stored record: what the pool's reclaimer found when it reset or destroyed the
 * sandbox a record used. The record is stored (pd_store_put) with "residue": "pending" before
 * the client hears of it; the reclaimer's report comes after and completes it here (an UPDATE of
 * the row found by its use_id). A report that comes before its record is kept in a ring
 * (s->early) and goes into the record as it is inserted.
 *
 * The daemon's reports (pd_store_reclaimed_later) are not each a transaction of their own: while
 * a job runs whose record is still to come (pd_store_busy), a report waits for that record's
 * transaction (pd_store_put applies the waiting reports before its COMMIT), so a /run_code costs
 * one commit, not two (issue 42: the second commit and its begin were a third of the update's
 * CPU). With no such job, or when the list is full or its oldest has waited a second, the reports
 * are written at once in one transaction. A report waits no longer than the jobs running when it
 * came: the last of them to end writes what is left (pd_store_busy). */
#define _GNU_SOURCE
#include "store_priv.h"

#include <stdio.h>
#include <string.h>

/* A waiting report is written at its next chance once it has waited this long. */
#define LATE_MAX_WAIT_US 1000000u

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
static void early_keep_locked(pd_store *s, const char *use_id, const char *residue, int64_t teardown_us)
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

int pd_store_residue(pd_store *s, const char *use_id, const char *residue)
{
	return pd_store_reclaimed(s, use_id, residue, -1);
}

int pd_store_reclaimed(pd_store *s, const char *use_id, const char *residue, int64_t teardown_us)
{
	if (!use_id || !*use_id)
		return 0;
	pthread_mutex_lock(&s->mu);
	int n = store_residue_locked(s, use_id, residue, teardown_us);
	if (n == 0)
		early_keep_locked(s, use_id, residue, teardown_us);
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* ---- reports waiting for the next record's transaction --------------------------------------- */

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
			early_keep_locked(s, s->late[i].use_id, s->late[i].residue, s->late[i].teardown_us);
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

void pd_store_reclaimed_later(pd_store *s, const char *use_id, const char *residue, int64_t teardown_us)
{
	if (!use_id || !*use_id)
		return;
	pthread_mutex_lock(&s->mu);
	if (s->nlate == LATE_RESIDUE)
		store_late_flush_locked(s);
	uint64_t now = pd_now_us();
	if (s->nlate < LATE_RESIDUE) {
		if (!s->nlate)
			s->late_since_us = now;
		unsigned i = s->nlate++;
		snprintf(s->late[i].use_id, sizeof s->late[i].use_id, "%s", use_id);
		snprintf(s->late[i].residue, sizeof s->late[i].residue, "%s", residue);
		s->late[i].teardown_us = teardown_us;
		s->late[i].changed = 0;
	} else if (store_residue_locked(s, use_id, residue, teardown_us) == 0) {
		/* the list could not be written (a store error): this one alone, as before */
		early_keep_locked(s, use_id, residue, teardown_us);
	}
	/* no record to come (the jobs that were running have ended), or the oldest waiting a
	 * second: written now */
	if (!s->busy || now - s->late_since_us >= LATE_MAX_WAIT_US)
		store_late_flush_locked(s);
	pthread_mutex_unlock(&s->mu);
}

void pd_store_busy(pd_store *s, bool begin)
{
	pthread_mutex_lock(&s->mu);
	if (begin)
		s->busy++;
	else if (s->busy && !--s->busy)
		store_late_flush_locked(s);
	pthread_mutex_unlock(&s->mu);
}
