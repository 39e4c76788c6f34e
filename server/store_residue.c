/* The residue of a stored record: what the pool's reclaimer found when it reset or destroyed the
 * sandbox a record used. The record is stored (pd_store_put) with "residue": "pending" before
 * the client hears of it; the reclaimer's report comes after and completes it (an UPDATE of the
 * row found by its use_id: store_residue_locked). A report that comes before its record is kept
 * in a ring (s->early) and goes into the record as it is inserted. The writes are store.c's,
 * which pd_store_put shares; the entry points are here.
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
		store_early_keep_locked(s, use_id, residue, teardown_us);
	pthread_mutex_unlock(&s->mu);
	return n;
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
		store_early_keep_locked(s, use_id, residue, teardown_us);
	}
	/* no record to come (the jobs that were running have ended), or the oldest waiting a
	 * second: written now */
	if (!atomic_load(&s->busy) || now - s->late_since_us >= LATE_MAX_WAIT_US)
		store_late_flush_locked(s);
	pthread_mutex_unlock(&s->mu);
}

void pd_store_busy(pd_store *s, bool begin)
{
	/* a job's start takes no lock: a write stalled on the file's lock holds mu */
	if (begin) {
		atomic_fetch_add(&s->busy, 1);
		return;
	}
	unsigned n = atomic_load(&s->busy);
	while (n && !atomic_compare_exchange_weak(&s->busy, &n, n - 1))
		;
	if (n != 1)
		return;
	/* the last running job ended: what waited for its records is written now (a report that
	 * came meanwhile saw busy 0 under mu and wrote itself, or is in the list this finds) */
	pthread_mutex_lock(&s->mu);
	store_late_flush_locked(s);
	pthread_mutex_unlock(&s->mu);
}
