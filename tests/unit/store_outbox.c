/* store_outbox.c: the store as a cluster node's outbox (server/store_outbox.c): the rows after
 * the watermark, in row order, each with its task, group, kind and record; a row whose claim was
 * made is final at once (its stage not yet cleared); a row a kill left staged without its claim
 * stops the outbox until the next start settles it (dropped: the outbox goes on past it); a
 * refused claim leaves nothing to publish; the watermark is kept in the file; each row's message
 * carries the stored record's text as it is, when it is one JSON object (else an error record). */
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

static int claim_rc;
static int die_in_claim;

static int claim(const pd_job *j, void *arg, pd_err *e)
{
	(void)j;
	(void)arg;
	if (die_in_claim)
		_exit(0); /* a node killed between its commit and its claim */
	return claim_rc ? pd_fail(e, claim_rc, "claim") : 0;
}

static int put(pd_store *s, const char *rid, const char *group)
{
	pd_job *j = pd_job_new();
	snprintf(j->task_id, sizeof j->task_id, "t-%s", rid);
	snprintf(j->request_id, sizeof j->request_id, "%s", rid);
	snprintf(j->claim_token, sizeof j->claim_token, "tok-%s", rid);
	j->attempts = 1;
	j->claim = claim;
	j->record = json_pack("{s:s,s:s}", "task_id", j->task_id, "group_id", group);
	pd_err e = {0};
	int rc = pd_store_put(s, j, "n1", &e);
	pd_job_free(j);
	return rc;
}

/* The task ids the outbox gives after `after`, joined by spaces (each row's and its message's). */
static const char *outbox(pd_store *s, int64_t after)
{
	static char buf[512];
	buf[0] = 0;
	pd_outbox_row *rows = NULL;
	unsigned n = 0;
	pd_err e = {0};
	if (pd_store_outbox(s, after, 100, "dflt", &rows, &n, &e) < 0)
		return "error";
	for (unsigned i = 0; i < n; i++) {
		json_t *m = json_loadb(rows[i].text, rows[i].len, 0, NULL);
		const char *t = json_string_value(json_object_get(m, "task_id"));
		size_t len = strlen(buf);
		snprintf(buf + len, sizeof buf - len, "%s%s", len ? " " : "",
			 t && !strcmp(t, rows[i].task_id) ? t : "(mismatch)");
		json_decref(m);
	}
	pd_store_outbox_free(rows, n);
	return buf;
}

/* The first row's message after row 0, parsed (NULL if it does not parse). */
static json_t *first_message(pd_store *s, char **text)
{
	pd_outbox_row *rows = NULL;
	unsigned n = 0;
	pd_err e = {0};
	if (pd_store_outbox(s, 0, 1, "dflt", &rows, &n, &e) < 0 || n != 1) {
		pd_store_outbox_free(rows, n);
		return NULL;
	}
	json_t *m = json_loadb(rows[0].text, rows[0].len, 0, NULL);
	if (text)
		*text = strndup(rows[0].text, rows[0].len);
	pd_store_outbox_free(rows, n);
	return m;
}

/* Row 1's stored record replaced by text (as a damaged file would have it): whether the outbox
 * publishes it as it is (1), as the error record (0), or its message does not parse (-1). */
static int stored_as(pd_store *s, const char *path, const char *text, size_t len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "UPDATE attempts SET record = ? WHERE id = 1", -1, &st, NULL) != SQLITE_OK)
		return -2;
	sqlite3_bind_text(st, 1, text, (int)len, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (rc != SQLITE_DONE)
		return -2;
	json_t *m = first_message(s, NULL);
	if (!m)
		return -1;
	json_t *rec = json_object_get(m, "record");
	int out = json_is_object(rec) && !json_object_get(rec, "error") ? 1 : 0;
	json_decref(m);
	return out;
}

static int settle_none(void *arg, const char *request_id, const char *token)
{
	(void)arg;
	(void)request_id;
	(void)token;
	return 0; /* the broker has no claim of ours: the rows go */
}

int main(void)
{
	plan(18);
	char dir[] = "/tmp/pd-store-outbox-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char path[256];
	snprintf(path, sizeof path, "%s/s.db", dir);
	pd_err e = {0};
	pd_store *s = pd_store_open(path, 0, &e);
	ok(s != NULL, "store opened (%s)", e.msg);
	is_int(pd_store_outbox_mark(s, &e), 0, "a new store's watermark: 0");
	is_int(put(s, "r1", "g1") + put(s, "r2", "g1") + put(s, "r3", ""), 0, "three records with their claims made");
	/* r3's stage is cleared only by the next commit: its claim is made, so it is final */
	is_str(outbox(s, 0), "t-r1 t-r2 t-r3", "the outbox gives all three in order, the last one still staged");
	char *text = NULL;
	json_t *r = first_message(s, &text);
	is_str(json_string_value(json_object_get(r, "group_id")), "g1", "... a row with its group");
	ok(json_integer_value(json_object_get(r, "row")) == 1 && json_is_object(json_object_get(r, "record")),
	   "... its row and its record");
	is_str(json_string_value(json_object_get(r, "node")), "n1", "... the row's node (its column)");
	ok(json_integer_value(json_object_get(r, "attempt")) == 1 && json_is_true(json_object_get(r, "last")) &&
		   json_is_string(json_object_get(r, "kind")) && json_object_get(r, "finished_at"),
	   "... its attempt, last, kind and finished_at");
	/* the record as stored, byte for byte: not parsed and dumped again */
	is_str(text ? strstr(text, ",\"record\":") : NULL, ",\"record\":{\"task_id\":\"t-r1\",\"group_id\":\"g1\"}}",
	       "... the stored record's text as it is, last in the message");
	free(text);
	json_decref(r);
	/* the stored text is checked without a parse: each case as a damaged file could have it */
	static const struct {
		const char *text;
		int want;
	} cases[] = {
		{"{\"a\":[1,-2.5e+3,true,false,null,{}],\"b\":\"\\u00e9\\n\\\"\",\"c\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}", 1},
		{" {\"a\" : { \"b\" : [ ] } }\n", 1},
		{"{\"a\":1", 0},
		{"{\"a\":1}x", 0},
		{"[1,2]", 0},
		{"{\"a\":01}", 0},
		{"{\"a\":1,}", 0},
		{"{\"a\":\"\x01\"}", 0},
		{"{\"a\":\"\xc3\"}", 0},
		{"{\"a\":\"\xed\xa0\x80\"}", 0},
		{"{\"a\":\"\\x\"}", 0},
		{"{\"a\":tru}", 0},
		{"", 0},
	};
	int wrong = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int got = stored_as(s, path, cases[i].text, strlen(cases[i].text));
		if (got != cases[i].want) {
			printf("# stored %s: %d, not %d\n", cases[i].text, got, cases[i].want);
			wrong++;
		}
	}
	is_int(wrong, 0, "a stored record is published as it is when it is one JSON object, else as an error record");
	is_int(stored_as(s, path, "{\"a\":\"\0\"}", 8), 0, "... a NUL byte in it too");
	stored_as(s, path, "{\"task_id\":\"t-r1\",\"group_id\":\"g1\"}", 34);
	claim_rc = EEXIST;
	put(s, "r4", "g1");
	claim_rc = 0;
	is_str(outbox(s, 0), "t-r1 t-r2 t-r3", "a record whose claim another node had: nothing to publish");
	is_int(pd_store_outbox_set(s, 2, &e), 0, "watermark moved to row 2");
	is_str(outbox(s, 2), "t-r3", "the outbox after it: row 3 only");
	pd_store_close(s);

	/* a child records r5 and dies before its claim: its rows stay staged, unclaimed */
	pid_t p = fork();
	if (p == 0) {
		pd_store *cs = pd_store_open(path, 0, &e);
		die_in_claim = 1;
		put(cs, "r5", "g2");
		_exit(3);
	}
	int st = 0;
	waitpid(p, &st, 0);
	s = pd_store_open(path, 0, &e);
	is_int(pd_store_outbox_mark(s, &e), 2, "reopened: the watermark was kept");
	is_str(outbox(s, 2), "t-r3", "a row a kill left staged and unclaimed stops the outbox before it");
	unsigned kept = 0, dropped = 0;
	pd_store_staged(s, settle_none, NULL, &kept, &dropped, &e);
	is_int(put(s, "r6", "g2"), 0, "the stage settled (dropped), r6 recorded");
	is_str(outbox(s, 2), "t-r3 t-r6", "the outbox goes on past it: r5 never published");
	pd_store_close(s);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", dir);
	return done();
}
