/* store_outbox.c: the store as a cluster node's outbox (server/store_outbox.c): the rows after
 * the watermark, in row order, each with its task, group, kind and record; a row whose claim was
 * made is final at once (its stage not yet cleared); a row a kill left staged without its claim
 * stops the outbox until the next start settles it (dropped: the outbox goes on past it); a
 * refused claim leaves nothing to publish; the watermark is kept in the file. */
#define _GNU_SOURCE
#include "server.h"
#include "tap.h"

#include <errno.h>
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
	j->claim = claim;
	j->record = json_pack("{s:s,s:s}", "task_id", j->task_id, "group_id", group);
	pd_err e = {0};
	int rc = pd_store_put(s, j, "n1", &e);
	pd_job_free(j);
	return rc;
}

/* The task ids the outbox gives after `after`, joined by spaces. */
static const char *outbox(pd_store *s, int64_t after)
{
	static char buf[512];
	buf[0] = 0;
	json_t *rows = NULL;
	pd_err e = {0};
	if (pd_store_outbox(s, after, 100, &rows, &e) < 0)
		return "error";
	size_t i;
	json_t *r;
	json_array_foreach(rows, i, r) {
		size_t n = strlen(buf);
		snprintf(buf + n, sizeof buf - n, "%s%s", n ? " " : "", json_string_value(json_object_get(r, "task_id")));
	}
	json_decref(rows);
	return buf;
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
	plan(13);
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
	json_t *rows = NULL;
	pd_store_outbox(s, 0, 1, &rows, &e);
	json_t *r = json_array_get(rows, 0);
	is_str(json_string_value(json_object_get(r, "group_id")), "g1", "... a row with its group");
	ok(json_integer_value(json_object_get(r, "row")) == 1 && json_is_object(json_object_get(r, "record")),
	   "... its row and its record");
	json_decref(rows);
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
