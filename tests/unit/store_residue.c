/* store_residue.c: a record says "pending" residue until the pools' reclaimer has reset or
 * destroyed the sandbox; pd_store_residue then completes the stored record (top level and each
 * stage) by its use_id; a report that comes before the record is kept and applied when the record
 * is stored; records of other uses, and records that are no longer pending, are left alone. The
 * reclaimer's teardown time completes costs.teardown_ms the same way (pd_store_reclaimed). The
 * daemon's reports (pd_store_reclaimed_later) wait for the next record's transaction while a job
 * runs (pd_store_busy), and are written when the last running job ends, at once when none runs,
 * and at the store's close. */
#define _GNU_SOURCE
#include "server.h"
#include "tap.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pd_job *job(const char *task, const char *use_id)
{
	pd_job *j = pd_job_new();
	snprintf(j->task_id, sizeof j->task_id, "%s", task);
	snprintf(j->template_name, sizeof j->template_name, "bash");
	if (use_id) {
		snprintf(j->sandbox_id, sizeof j->sandbox_id, "%.*s", (int)(strrchr(use_id, '.') - use_id), use_id);
		snprintf(j->use_id, sizeof j->use_id, "%s", use_id);
		j->ran = true;
		snprintf(j->run_r.residue, sizeof j->run_r.residue, "pending");
	}
	return j;
}

static void put(pd_store *s, pd_job *j)
{
	pd_err e = {0};
	if (pd_store_put(s, j, "n1", &e) < 0)
		printf("# put %s: %s\n", j->task_id, e.msg);
	pd_job_free(j);
}

/* the stored record's field at path ("residue", "run.residue") for task, or "(none)" */
static char got[256];
static const char *field(const char *db, const char *task, const char *key, const char *sub)
{
	sqlite3 *d;
	snprintf(got, sizeof got, "(none)");
	if (sqlite3_open(db, &d) != SQLITE_OK)
		return got;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(d, "SELECT record FROM attempts WHERE task_id = ?", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, task, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW) {
			json_t *r = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
			json_t *v = json_object_get(r, key);
			if (sub)
				v = json_object_get(v, sub);
			if (json_is_number(v))
				snprintf(got, sizeof got, "%.3f", json_number_value(v));
			else
				snprintf(got, sizeof got, "%s", !v ? "(absent)" : json_is_null(v) ? "null" : json_string_value(v));
			json_decref(r);
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(d);
	return got;
}

int main(void)
{
	plan(30);
	char dir[] = "/tmp/pd-store-residue-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char path[256];
	snprintf(path, sizeof path, "%s/s.db", dir);
	pd_err e = {0};
	pd_store *s = pd_store_open(path, 0, &e);
	ok(s != NULL, "store opened (%s)", e.msg);

	put(s, job("a", "sb-1-1.1"));
	is_str(field(path, "a", "residue", NULL), "pending", "a run's record says pending before the reclaimer has checked");
	is_str(field(path, "a", "run", "residue"), "pending", "so does its run stage");
	put(s, job("b", "sb-1-1.2"));
	is_int(pd_store_residue(s, "sb-1-1.1", "clean"), 1, "the reclaimer's report completes one record");
	is_str(field(path, "a", "residue", NULL), "clean", "a: clean");
	is_str(field(path, "a", "run", "residue"), "clean", "a's run stage: clean");
	is_str(field(path, "b", "residue", NULL), "pending", "b (the next use of the same sandbox) is untouched");
	is_int(pd_store_residue(s, "sb-1-1.1", "3 processes left"), 0, "a record no longer pending is not rewritten");
	is_str(field(path, "a", "residue", NULL), "clean", "a still says clean");

	/* the reclaimer before the worker: kept, then applied */
	is_int(pd_store_residue(s, "sb-2-1.1", "2 processes left, killed"), 0, "a report before its record changes nothing yet");
	put(s, job("c", "sb-2-1.1"));
	is_str(field(path, "c", "residue", NULL), "2 processes left, killed", "and completes the record when it is stored");

	/* the teardown's cost into costs.teardown_ms (null until then), on either path */
	put(s, job("e", "sb-3-1.1"));
	is_str(field(path, "e", "costs", "teardown_ms"), "null", "a run's costs.teardown_ms is null before the reclaimer");
	is_int(pd_store_reclaimed(s, "sb-3-1.1", "clean", 2345), 1, "the reclaimer's report with its teardown time");
	is_str(field(path, "e", "costs", "teardown_ms"), "2.345", "completes costs.teardown_ms (2345 us)");
	is_int(pd_store_reclaimed(s, "sb-4-1.1", "clean", 1500), 0, "a report with a teardown time before its record");
	put(s, job("f", "sb-4-1.1"));
	is_str(field(path, "f", "costs", "teardown_ms"), "1.500", "and completes it when the record is stored");

	put(s, job("d", NULL));
	is_str(field(path, "d", "residue", NULL), "null", "a job that never had a sandbox has no residue to wait for");
	is_int(pd_store_residue(s, "", "clean"), 0, "an empty use id changes nothing");

	/* the daemon's reports: with no job running, written at once */
	put(s, job("g", "sb-5-1.1"));
	pd_store_reclaimed_later(s, "sb-5-1.1", "clean", 1000);
	is_str(field(path, "g", "residue", NULL), "clean", "a report with no job running is written at once");
	/* while a job runs, it waits for that job's record, and goes in its transaction */
	pd_store_busy(s, true);
	put(s, job("h", "sb-5-1.2"));
	pd_store_reclaimed_later(s, "sb-5-1.2", "clean", 1000);
	is_str(field(path, "h", "residue", NULL), "pending", "while a job runs, a report waits for its record");
	put(s, job("i", "sb-5-1.3"));
	is_str(field(path, "h", "residue", NULL), "clean", "and is written with the next record");
	is_str(field(path, "h", "costs", "teardown_ms"), "1.000", "its teardown time too");
	is_str(field(path, "i", "residue", NULL), "pending", "which itself says pending");
	/* a report for the record still to come goes into its insert */
	pd_store_reclaimed_later(s, "sb-5-1.4", "1 process left, killed", -1);
	put(s, job("j", "sb-5-1.4"));
	is_str(field(path, "j", "residue", NULL), "1 process left, killed", "a waiting report of a record to come goes into it");
	/* the last running job to end writes what waits */
	pd_store_reclaimed_later(s, "sb-5-1.3", "clean", -1);
	pd_store_busy(s, true);
	pd_store_busy(s, false);
	is_str(field(path, "i", "residue", NULL), "pending", "not while another job still runs");
	pd_store_busy(s, false);
	is_str(field(path, "i", "residue", NULL), "clean", "written when the last one ends");
	/* a report whose record never comes while jobs run: kept as an early one when written */
	pd_store_busy(s, true);
	pd_store_reclaimed_later(s, "sb-6-1.1", "clean", -1);
	pd_store_busy(s, false);
	put(s, job("k", "sb-6-1.1"));
	is_str(field(path, "k", "residue", NULL), "clean", "a report written before its record still completes it");
	/* what waits at the close is written */
	pd_store_busy(s, true);
	put(s, job("l", "sb-7-1.1"));
	pd_store_reclaimed_later(s, "sb-7-1.1", "clean", -1);
	is_str(field(path, "l", "residue", NULL), "pending", "(waiting at the close)");
	pd_store_close(s);
	is_str(field(path, "l", "residue", NULL), "clean", "is written by the close");
	s = pd_store_open(path, 0, &e);
	ok(s != NULL, "reopened");

	pd_store_close(s);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return done();
}
