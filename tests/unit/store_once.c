/* store_once.c: the store keeps one record per request id (cluster mode's unique key): a second
 * record of the same id is refused with EEXIST; the job's claim runs inside the transaction, and
 * a claim that fails (another node recorded it, or the broker could not say) leaves no row, so a
 * later try can record it; records without a request id are kept as before (one per put); a store
 * made before the key had it gets the column and the key when opened. A claimed record's stage is
 * cleared by the next record's commit (or pd_store_unstage, or the close), not by a commit of its
 * own: a kill before that leaves it staged, and the next start keeps it (the claim is ours). */
#define _GNU_SOURCE
#include "server.h"
#include "tap.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int claims;
static int claim_rc; /* what the claim answers: 0, EEXIST or EIO */
static int die_in_claim; /* 1: the process dies before the claim is made; 2: after */

static int claim(const pd_job *j, void *arg, pd_err *e)
{
	(void)j;
	(void)arg;
	claims++;
	if (die_in_claim)
		_exit(0); /* a node killed between its commit and (1) or after (2) its claim */
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

/* settle_staged stand-in: the broker has our claim (1), none (0), or cannot say (-1) */
static int broker_says;
static int settle(void *arg, const char *request_id, const char *token)
{
	(void)arg;
	(void)request_id;
	return strcmp(token, "tok-1") ? 0 : broker_says;
}

/* A child process records rid and dies in its claim; the store it leaves, reopened. */
static pd_store *killed_in_claim(const char *path, const char *rid)
{
	pid_t p = fork();
	if (p == 0) {
		pd_err ce = {0};
		pd_store *cs = pd_store_open(path, 0, &ce);
		pd_job *j = job(rid, true);
		snprintf(j->claim_token, sizeof j->claim_token, "tok-1");
		die_in_claim = 1;
		pd_store_put(cs, j, "n1", &ce);
		_exit(3); /* not reached: the claim ended the process */
	}
	int st = 0;
	waitpid(p, &st, 0);
	pd_err e = {0};
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? pd_store_open(path, 0, &e) : NULL;
}

/* A child process records each of rids with its claim made (token toks[i]) and is killed (exits
 * without closing the store) after the last; the store it leaves, reopened. */
static pd_store *killed_after(const char *path, const char *const *rids, const char *const *toks, int n)
{
	pid_t p = fork();
	if (p == 0) {
		pd_err ce = {0};
		pd_store *cs = pd_store_open(path, 0, &ce);
		for (int i = 0; i < n; i++) {
			pd_job *j = job(rids[i], true);
			snprintf(j->claim_token, sizeof j->claim_token, "%s", toks[i]);
			if (pd_store_put(cs, j, "n1", &ce) < 0)
				_exit(3);
		}
		_exit(0);
	}
	int st = 0;
	waitpid(p, &st, 0);
	pd_err e = {0};
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? pd_store_open(path, 0, &e) : NULL;
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
	plan(34);
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

	/* a node killed between its record's commit and its claim, or after the claim: the rows
	 * are staged, and its next start settles them by what the broker holds */
	unsigned kept, dropped;
	s = killed_in_claim(path, "k1");
	ok(s != NULL, "a process killed in its claim: the store reopens");
	is_int(pd_store_count(s), 5, "... its row was committed before the claim (staged)");
	broker_says = -1;
	is_int(pd_store_staged(s, settle, NULL, &kept, &dropped, &e), -1, "the broker cannot say: an error");
	is_int(pd_store_count(s), 5, "... and the row stays staged for the next start");
	broker_says = 0;
	ok(pd_store_staged(s, settle, NULL, &kept, &dropped, &e) == 0 && kept == 0 && dropped == 1,
	   "no claim of ours in the broker: dropped (the task, never acked, runs again)");
	is_int(pd_store_count(s), 4, "... its row is gone");
	pd_store_close(s);
	s = killed_in_claim(path, "k2");
	broker_says = 1;
	ok(s && pd_store_staged(s, settle, NULL, &kept, &dropped, &e) == 0 && kept == 1 && dropped == 0,
	   "our claim is in the broker: kept (the client's answer has its record)");
	is_int(pd_store_count(s), 5, "... its row stays");
	ok(pd_store_staged(s, settle, NULL, &kept, &dropped, &e) == 0 && kept == 0 && dropped == 0,
	   "settled once: nothing staged is left");
	pd_store_close(s);

	/* killed after claims were made: the last one's stage is left (its clearing waits for the
	 * next commit), the earlier ones' went with the later commits */
	int before = 0;
	s = pd_store_open(path, 0, &e);
	before = pd_store_count(s);
	pd_store_close(s);
	claim_rc = 0;
	die_in_claim = 0;
	s = killed_after(path, (const char *const[]){"c1", "c2", "c3"}, (const char *const[]){"tok-x", "tok-y", "tok-1"}, 3);
	ok(s != NULL, "a process killed after three claimed records: the store reopens");
	is_int(pd_store_count(s), before + 3, "... all three rows are there");
	broker_says = 1;
	ok(s && pd_store_staged(s, settle, NULL, &kept, &dropped, &e) == 0 && kept == 1 && dropped == 0,
	   "only the last is staged (the others' stage went with the next commit), and is kept: our claim");
	is_int(pd_store_count(s), before + 3, "... no row dropped");
	/* pd_store_unstage and the close clear the stage of claimed records */
	is_int(put(s, job("c4", true), &code), 0, "c4 recorded with its claim");
	is_int(pd_store_unstage(s), 0, "pd_store_unstage");
	ok(pd_store_staged(s, settle, NULL, &kept, &dropped, &e) == 0 && kept == 0 && dropped == 0,
	   "... nothing staged is left");
	is_int(put(s, job("c5", true), &code), 0, "c5 recorded with its claim");
	pd_store_close(s);
	s = pd_store_open(path, 0, &e);
	ok(s && pd_store_staged(s, settle, NULL, &kept, &dropped, &e) == 0 && kept == 0 && dropped == 0,
	   "closed and opened: nothing staged is left");
	is_int(pd_store_count(s), before + 5, "... c4 and c5 stay");
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
