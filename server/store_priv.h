/* The store's state, shared by the files that make up the store (store.c, store_outbox.c) and
 * by no one else: the rest of the daemon goes through server.h's pd_store_* functions. */
#ifndef PADDOCK_STORE_PRIV_H
#define PADDOCK_STORE_PRIV_H

#include "server.h"
#include "review.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>

/* Residue reports that came before their record was stored (the reclaimer can finish with a
 * sandbox before the worker that used it has written the record): kept this many, newest last,
 * and applied when the record comes. */
#define EARLY_RESIDUE 256
/* Reports waiting for the next record's transaction at most (store_residue.c). */
#define LATE_RESIDUE 64

struct pd_store {
	sqlite3 *db; /* the writer's connection, under mu */
	sqlite3_stmt *put;
	sqlite3_stmt *residue; /* prepared once: the reclaimer completes a record per released sandbox */
	pthread_mutex_t mu;
	/* The readers' connection, under rd_mu. A write waits up to SQLite's busy timeout (10 s)
	 * for another process's lock, holding mu meanwhile; on the WAL a reader never waits for a
	 * writer, so GET /v1/runs, /metrics and /readyz (on the event thread) read here and do not
	 * stall behind it. NULL if the file could not be opened twice: then readers share db. */
	sqlite3 *rd;
	pthread_mutex_t rd_mu;
	char dir[4096];
	/* read by /readyz and /metrics without either lock */
	_Atomic bool full;
	_Atomic uint64_t failed_full, failed_other;
	_Atomic uint64_t pruned; /* records deleted for the cap */
	uint64_t max;	 /* bytes the records may use; 0: no cap */
	uint64_t since;	 /* bytes written since the last look at the size */
	struct {
		char use_id[64];
		char residue[128];
		int64_t teardown_us; /* < 0: unknown */
	} early[EARLY_RESIDUE];
	unsigned early_next;
	/* The daemon's reports waiting for the next record's transaction (store_residue.c), and the
	 * jobs running whose records are still to come (pd_store_busy). */
	struct {
		char use_id[64];
		char residue[128];
		int64_t teardown_us;
		int changed; /* rows the write changed (0: the record is not there) */
	} late[LATE_RESIDUE];
	unsigned nlate;
	/* not under mu: a job's start must not wait for the writer's lock, which a write held for
	 * SQLite's busy timeout (10 s) while another process held the file's (store_stall.t) */
	_Atomic unsigned busy;
	uint64_t late_since_us; /* when the oldest came */
	pd_review_cfg review;
	/* Requests whose claims were made after their rows committed: their stage is cleared in the
	 * next record's transaction (or by pd_store_unstage, the cluster's ticker each second), not
	 * in a transaction of its own per request (a second commit per record, and the store's lock
	 * held for it: 6% of a cluster node's extra CPU). A kill before that leaves them staged,
	 * which the next start settles as kept (the claims are ours). */
	char claimed[64][128];
	unsigned nclaimed;
	sqlite3_stmt *unstage; /* DELETE FROM staged WHERE request_id = ?, prepared once */
	sqlite3_stmt *outbox;  /* the outbox's read (store_outbox.c), prepared at its first */
	/* BEGIN IMMEDIATE, COMMIT, ROLLBACK, prepared once (store_txn): sqlite3_exec parsed each
	 * anew, twice per record with the residue's reports in its transaction */
	sqlite3_stmt *txn[3];
};

enum { TXN_BEGIN, TXN_COMMIT, TXN_ROLLBACK };
/* Runs one of the three (TXN_*) on the writer's connection: SQLITE_OK or SQLite's code. Lock
 * held. */
int store_txn(pd_store *s, int which);

/* the residue's state, kept by store.c for pd_store_put and store_residue.c */
void store_early_keep_locked(pd_store *s, const char *use_id, const char *residue, int64_t teardown_us);
int store_residue_locked(pd_store *s, const char *use_id, const char *residue, int64_t teardown_us);
bool store_early_residue_locked(pd_store *s, const char *use_id);
bool store_take_early_residue(pd_store *s, const char *use_id, char *residue, size_t len, int64_t *teardown_us);
void store_late_apply_locked(pd_store *s);
void store_late_settle_locked(pd_store *s, bool committed);
void store_late_flush_locked(pd_store *s);

#endif
