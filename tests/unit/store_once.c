/* store_once.c: the store keeps one record per request id (cluster mode's unique key): a second
 * record of the same id is refused with EEXIST; the job's claim runs inside the transaction, and
 * a claim that fails (another node recorded it, or the broker could not say) leaves no row, so a
 * later try can record it; records without a request id are kept as before (one per put); a store
 * made before the key had it gets the column and the key when opened. */
#define _GNU_SOURCE
#include "server.h"
#include "tap.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int claims;
static int claim_rc; /* what the claim answers: 0, EEXIST or EIO */

static int claim(const pd_job *j, void *arg, pd_err *e)
{
	(void)j;
	(void)arg;
	claims++;
	return claim_rc ? pd_fail(e, claim_rc, "claim") : 0;
}

static pd_job *job(const char *rid, bool with_claim)
{
	pd_job *j = pd_job_new();
	snprintf(j->task_id, sizeof j->task_id, "t-%s", rid);
	snprintf(j->request_id, sizeof j->request_id, "%s", rid);
	if (with_claim)
		j->claim = claim;
	return j;
}

static int put(pd_store *s, pd_job *j, int *code)
{
	pd_err e = {0};
	int rc = pd_store_put(s, j, "n1", &e);
	*code = e.code;
	pd_job_free(j);
	return rc;
}

int main(void)
{
	plan(15);
	char dir[] = "/tmp/pd-store-once-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char path[256];
	snprintf(path, sizeof path, "%s/s.db", dir);
	pd_err e = {0};
	pd_store *s = pd_store_open(path, 0, &e);
	ok(s != NULL, "store opened (%s)", e.msg);
	int code;
	is_int(put(s, job("r1", false), &code), 0, "r1 recorded");
	is_int(put(s, job("r1", false), &code), -1, "r1 again: refused");
	is_int(code, EEXIST, "... with EEXIST");
	is_int(pd_store_count(s), 1, "one row for r1");

	claim_rc = EEXIST;
	is_int(put(s, job("r2", true), &code), -1, "r2 whose claim says another node has it: refused");
	is_int(pd_store_count(s), 1, "... and no row of it stays");
	claim_rc = EIO;
	is_int(put(s, job("r3", true), &code), -1, "r3 whose claim could not be made: refused");
	is_int(pd_store_count(s), 1, "... no row of it either");
	claim_rc = 0;
	claims = 0;
	is_int(put(s, job("r3", true), &code), 0, "r3 tried again with a claim made: recorded");
	is_int(claims, 1, "... the claim ran once, inside the put");
	is_int(pd_store_count(s), 2, "two rows now");

	is_int(put(s, job("", false), &code) + put(s, job("", false), &code), 0, "two records without a request id");
	is_int(pd_store_count(s), 4, "... both kept (single-node records are not keyed)");
	pd_store_close(s);

	/* a store from before the key: the old table without request_id */
	char old[256];
	snprintf(old, sizeof old, "%s/old.db", dir);
	sqlite3 *db;
	sqlite3_open(old, &db);
	sqlite3_exec(db,
		     "CREATE TABLE attempts (id INTEGER PRIMARY KEY, task_id TEXT, attempt INTEGER, sandbox_id TEXT,"
		     " problem_id TEXT, problem_version TEXT, template TEXT, language TEXT, node TEXT, queued_at INTEGER,"
		     " started_at INTEGER, finished_at INTEGER, queue_ms INTEGER, status TEXT, failure_class TEXT,"
		     " exit_code INTEGER, signal INTEGER, wall_ms INTEGER, cpu_ms INTEGER, memory_peak_bytes INTEGER,"
		     " record TEXT NOT NULL)",
		     NULL, NULL, NULL);
	sqlite3_close(db);
	s = pd_store_open(old, 0, &e);
	int a = s ? put(s, job("r1", false), &code) : -2, b = s ? put(s, job("r1", false), &code) : -2;
	ok(s && a == 0 && b == -1 && code == EEXIST, "an older store gets the key: r1 recorded once (%s)", e.msg);
	pd_store_close(s);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return done();
}
