/* The cluster's shared record store: every node publishes its finished records (each attempt's
 * row, as its store committed it) to the stream PADDOCK_RECORDS, and every node answers
 * GET /v1/runs/{id} and GET /v1/runs from that stream, so that the fleet reads as one store, a
 * node that is down included.
 *
 * A record's subject is paddock.rec.<group>.<task>.<key> (tokens as cl_result_key makes them;
 * "=" for no group), its key <node>_<row>_<finished_at ms> naming the row once; the stream keeps
 * one message per subject and takes the key as the message id too, so a record published again
 * (a node killed between the broker's ack and its watermark's move) replaces itself: listed once.
 * Exactly once overall because a row is only ever published by the node that recorded it, after
 * its request's claim (store_outbox.c), and the claim is made once across the cluster.
 *
 * The node's SQLite file is the outbox (store_outbox.c): the publisher thread here takes its
 * final rows in order and moves the watermark after the broker acked them; woken by each record
 * (task_done) and every second. Reads make an ordered consumer filtered to a task's or a group's
 * subjects for the one call.
 *
 * A run's whole output, larger than its record keeps, is kept beside it as two objects
 * (objects.c) under its request id, for GET /v1/runs/{id}/output from any node. */
#define _GNU_SOURCE
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N pd_nats

#define BATCH 256
/* The recorder's rounds are at least this far apart, so that on a busy node a round publishes
 * several records (one read of the outbox, one wake-up) instead of one each; 100 ms rather than
 * 20: the recorder's CPU a request fell from 0.12-0.17 to 0.07 ms at 8 clients (bash echo), and a
 * record alone (after a quiet spell) is still published at once */
#define ROUND_GAP_MS 100
/* The watermark is written at most this often (and at the stop): a write per round was a SQLite
 * commit per record on a busy node; a kill in between publishes the last rounds' rows again,
 * which the stream takes as the same records */
#define MARK_GAP_MS 1000
#define READ_WAIT_MS 3000 /* a message of a scan the broker said is there */

static void tok(const char *s, char *out, size_t len)
{
	if (!s || !*s) {
		snprintf(out, len, "=");
		return;
	}
	cl_result_key(s, out, len);
}

int cl_records_stream(pd_cluster *c, pd_err *e)
{
	jsStreamConfig sc;
	const char *subject[] = {CL_REC_PREFIX ">"};
	bool explicit_bytes;
	cl_stream_kept(c, &sc, CL_REC_STREAM, subject, true, &explicit_bytes);
	sc.MaxMsgsPerSubject = 1; /* a record published twice is kept once */
	/* and the sessions' trajectories beside them (sessobj.c), kept as long */
	return cl_stream_fit(c, &sc, explicit_bytes, e) < 0 ? -1 : cl_traj_stream(c, e);
}

/* A record too large for the record stream, summarized: its fields that are not objects or
 * arrays, and "record_ref" naming the object that holds it whole (GET /v1/runs/{id} answers it
 * whole; a page of GET /v1/runs answers the summary). */
static json_t *summary(json_t *rec, const char *object, size_t bytes)
{
	json_t *s = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(rec, k, v) {
		if (!json_is_object(v) && !json_is_array(v))
			json_object_set(s, k, v);
	}
	json_object_set_new(s, "record_ref", json_pack("{s:s,s:I}", "object", object, "bytes", (json_int_t)bytes));
	return s;
}

/* Publishes one outbox row (its message as the store made it: the stored record is not parsed
 * and dumped again); 0, or -1 when the broker did not take it. */
static int publish_row(pd_cluster *c, const pd_outbox_row *row)
{
	char g[400], t[400], subject[1024], id[200], key[600];
	tok(row->group_id, g, sizeof g);
	tok(row->task_id, t, sizeof t);
	snprintf(id, sizeof id, "%s_%" PRId64 "_%" PRId64, c->node, row->row, row->finished_at);
	tok(id, key, sizeof key); /* a node id may hold a dot, which would split the subject's token */
	snprintf(subject, sizeof subject, CL_REC_PREFIX "%s.%s.%s", g, t, key);
	const char *text = row->text;
	size_t len = row->len;
	char *small = NULL;
	if (c->max_payload > 0 && len + 4096 > (size_t)c->max_payload) {
		/* larger than the broker's messages (a record keeps up to 1 MiB of each stream): the
		 * row goes whole to the object stream, and the record stream has its summary */
		char name[700];
		snprintf(name, sizeof name, "rec-%s", key);
		pd_err e = {0};
		json_t *whole = json_loadb(text, len, 0, NULL);
		if (!whole || cl_obj_put(c, name, text, len, &e) < 0) {
			json_decref(whole);
			return -1;
		}
		json_object_set_new(whole, "record", summary(json_object_get(whole, "record"), name, len));
		small = pd_json_dumps(whole, JSON_COMPACT);
		json_decref(whole);
		if (!small)
			return -1;
		text = small;
		len = strlen(small);
	}
	/* without waiting: the round waits for all its acks at once (publish_pending) */
	natsMsg *m = NULL;
	natsStatus s = N.natsMsg_Create(&m, subject, NULL, text, (int)len);
	free(small);
	jsPubOptions po;
	N.jsPubOptions_Init(&po);
	po.MsgId = key;
	if (s == NATS_OK)
		s = N.js_PublishMsgAsync(c->rjs, &m, &po);
	N.natsMsg_Destroy(m); /* NULL when libnats took it */
	return s == NATS_OK ? 0 : -1;
}

void cl_on_record_ack(jsCtx *js, natsMsg *m, jsPubAck *pa, jsPubAckErr *pae, void *arg)
{
	(void)js;
	(void)pa;
	pd_cluster *c = arg;
	if (pae) {
		pthread_mutex_lock(&c->mu);
		c->rec_failed++;
		pthread_mutex_unlock(&c->mu);
	}
	cl_msg_drop(c, m); /* destroyed with others: one wake-up of libnats' collector a batch */
}

/* Waits for the acks of the round's publishes: true when the broker took every one. */
static bool round_acked(pd_cluster *c)
{
	jsPubOptions po;
	N.jsPubOptions_Init(&po);
	po.MaxWait = 10000;
	natsStatus s = N.js_PublishAsyncComplete(c->rjs, &po);
	if (s != NATS_OK) {
		/* not acked in time: taken back (the next round publishes them again) */
		natsMsgList pending = {0};
		if (N.js_PublishAsyncGetPendingList(&pending, c->rjs) == NATS_OK)
			N.natsMsgList_Destroy(&pending);
	}
	pthread_mutex_lock(&c->mu);
	bool failed = c->rec_failed > 0;
	c->rec_failed = 0;
	pthread_mutex_unlock(&c->mu);
	return s == NATS_OK && !failed;
}

/* Writes the watermark if it moved (force) or if it is due. */
static void save_mark(pd_cluster *c, bool force)
{
	if (c->rec_saved == c->rec_mark || (!force && pd_now_us() / 1000 - c->rec_saved_ms < MARK_GAP_MS))
		return;
	pd_err e = {0};
	if (pd_store_outbox_set(c->store, c->rec_mark, &e) < 0)
		pd_log("warn", "cluster: the record outbox", PD_LS("error", PD_ERR_STR(&e)));
	else
		c->rec_saved = c->rec_mark;
	c->rec_saved_ms = pd_now_us() / 1000;
}

/* Publishes the outbox's final rows; false when the broker stopped taking them (tried again at
 * the next wake-up). */
static bool publish_pending(pd_cluster *c)
{
	for (;;) {
		pd_outbox_row *rows = NULL;
		unsigned n = 0, done = 0;
		pd_err e = {0};
		if (pd_store_outbox(c->store, c->rec_mark, BATCH, c->node, &rows, &n, &e) < 0) {
			pd_log("warn", "cluster: the record outbox", PD_LS("error", PD_ERR_STR(&e)));
			return false;
		}
		if (!n) {
			pd_store_outbox_free(rows, n);
			return true;
		}
		int64_t mark = c->rec_mark;
		for (; done < n; done++) {
			if (publish_row(c, &rows[done]) < 0)
				break;
			mark = rows[done].row;
		}
		pd_store_outbox_free(rows, n);
		if (!round_acked(c)) {
			/* which were taken is not known: the round is published again */
			mark = c->rec_mark;
			done = 0;
			n = 1;
		}
		if (mark != c->rec_mark) {
			c->rec_mark = mark; /* saved by save_mark: a kill before publishes them again */
			pthread_mutex_lock(&c->mu);
			c->records_published += done;
			pthread_mutex_unlock(&c->mu);
		}
		if (done < n)
			return false;
		if (n < BATCH)
			return true;
	}
}

void *cl_recorder_main(void *arg)
{
	pd_cluster *c = arg;
	c->rec_saved = c->rec_mark;
	uint64_t last_round = 0;
	pthread_mutex_lock(&c->mu);
	while (!c->stopping) {
		/* woken by a record, or after a second; never sooner than ROUND_GAP_MS after the
		 * last round (the records of that time are published together) */
		uint64_t now = pd_now_us() / 1000, due = c->rec_due ? last_round + ROUND_GAP_MS : now + 1000;
		if (due > now) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			uint64_t ns = (uint64_t)ts.tv_nsec + (due - now) * 1000000u;
			ts.tv_sec += (time_t)(ns / 1000000000u);
			ts.tv_nsec = (long)(ns % 1000000000u);
			pthread_cond_timedwait(&c->rec_cv, &c->mu, &ts);
			if (!c->stopping && c->rec_due && pd_now_us() / 1000 < last_round + ROUND_GAP_MS)
				continue;
		}
		c->rec_due = false;
		pthread_mutex_unlock(&c->mu);
		last_round = pd_now_us() / 1000;
		publish_pending(c);
		save_mark(c, false);
		cl_traj_sweep(c); /* the sessions' lines written between their operations */
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	/* what the last tasks recorded, published before the node goes (if the broker takes it;
	 * else at the next start) */
	publish_pending(c);
	save_mark(c, true);
	cl_traj_sweep(c);
	return NULL;
}

void cl_records_due(pd_cluster *c)
{
	/* only the first record since the last round wakes the recorder: a wake-up for each
	 * record sent it back to sleep until its round was due (a context switch a request) */
	if (!c->rec_due)
		pthread_cond_signal(&c->rec_cv);
	c->rec_due = true;
}

/* ---- reading ------------------------------------------------------------------------------ */

typedef bool (*scan_fn)(void *arg, uint64_t seq, const char *subject, json_t *row);

/* Calls each for the stream's messages on filter (from sequence start_seq, or from time
 * start_ms, or all), in order, until it answers false or none is left. */
static int scan(pd_cluster *c, const char *filter, uint64_t start_seq, uint64_t start_ms, scan_fn each, void *arg,
		pd_err *e)
{
	jsSubOptions so;
	N.jsSubOptions_Init(&so);
	so.Stream = CL_REC_STREAM;
	so.Ordered = true;
	if (start_seq) {
		so.Config.DeliverPolicy = js_DeliverByStartSequence;
		so.Config.OptStartSeq = start_seq;
	} else if (start_ms) {
		so.Config.DeliverPolicy = js_DeliverByStartTime;
		so.Config.OptStartTime = (int64_t)start_ms * 1000000LL;
	} else {
		so.Config.DeliverPolicy = js_DeliverAll;
	}
	natsSubscription *sub = NULL;
	jsErrCode je = 0;
	natsStatus s = N.js_SubscribeSync(&sub, c->js, filter, NULL, &so, &je);
	if (s != NATS_OK)
		return pd_fail_as(e, EIO, "the cluster's record stream: %s (JetStream error %d)", cl_status(s), (int)je);
	jsConsumerInfo *ci = NULL;
	s = N.natsSubscription_GetConsumerInfo(&ci, sub, NULL, &je);
	uint64_t pending = s == NATS_OK && ci ? ci->NumPending + ci->Delivered.Consumer : 0;
	N.jsConsumerInfo_Destroy(ci);
	int rc = s == NATS_OK ? 0 : pd_fail_as(e, EIO, "the cluster's record stream: %s", cl_status(s));
	while (rc == 0 && pending > 0) {
		natsMsg *m = NULL;
		s = N.natsSubscription_NextMsg(&m, sub, READ_WAIT_MS);
		if (s != NATS_OK) {
			rc = pd_fail_as(e, EIO, "the cluster's record stream: %s", cl_status(s));
			break;
		}
		jsMsgMetaData *meta = NULL;
		uint64_t seq = 0;
		if (N.natsMsg_GetMetaData(&meta, m) == NATS_OK) {
			seq = meta->Sequence.Stream;
			pending = meta->NumPending;
			N.jsMsgMetaData_Destroy(meta);
		} else {
			pending = 0;
		}
		json_t *row = json_loadb(N.natsMsg_GetData(m), (size_t)N.natsMsg_GetDataLength(m), 0, NULL);
		bool more = !row || each(arg, seq, N.natsMsg_GetSubject(m), row);
		N.natsMsg_Destroy(m);
		json_decref(row);
		if (!more)
			break;
	}
	N.natsSubscription_Unsubscribe(sub);
	N.natsSubscription_Destroy(sub);
	return rc;
}

/* Whether a row's record is its task's last attempt: the row's "last" (the record as stored is
 * published as it is), or the record's own in a row published by an older paddock. */
static bool row_last(json_t *row)
{
	json_t *v = json_object_get(row, "last");
	return json_is_true(v ? v : json_object_get(json_object_get(row, "record"), "last"));
}

/* A row's record as the readers answer it: the row's attempt and last (its node when the record
 * names none), and its "row" the stream's sequence (the fleet's cursor). */
static json_t *answer_record(uint64_t seq, json_t *row)
{
	json_t *rec = json_deep_copy(json_object_get(row, "record"));
	if (!rec)
		rec = json_object();
	json_t *v;
	if ((v = json_object_get(row, "attempt")))
		json_object_set(rec, "attempt", v);
	if ((v = json_object_get(row, "last")))
		json_object_set(rec, "last", v);
	if ((v = json_object_get(row, "node")) && !json_object_get(rec, "node"))
		json_object_set(rec, "node", v);
	json_object_set_new(rec, "row", json_integer((json_int_t)seq));
	return rec;
}

typedef struct {
	pd_cluster *c;
	json_t *arr;
} gather;

/* A task's records, each whole: a summary's record read from the object stream. */
static bool collect(void *arg, uint64_t seq, const char *subject, json_t *row)
{
	(void)subject;
	gather *g = arg;
	const char *object = json_string_value(json_object_get(json_object_get(json_object_get(row, "record"), "record_ref"), "object"));
	json_t *whole = NULL;
	if (object) {
		char *text = NULL;
		size_t len = 0;
		pd_err e = {0};
		if (cl_obj_get(g->c, object, &text, &len, &e) == 0)
			whole = json_loadb(text, len, 0, NULL);
		free(text);
	}
	json_array_append_new(g->arr, answer_record(seq, whole ? whole : row));
	json_decref(whole);
	return true;
}

static int by_attempt(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "attempt"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "attempt"));
	return x < y ? -1 : x > y;
}

json_t *pd_cluster_records_get(pd_cluster *c, const char *task_id, pd_err *e)
{
	char t[400], filter[600];
	tok(task_id, t, sizeof t);
	snprintf(filter, sizeof filter, CL_REC_PREFIX "*.%s.*", t);
	json_t *arr = json_array();
	gather g = {c, arr};
	if (scan(c, filter, 0, 0, collect, &g, e) < 0) {
		json_decref(arr);
		return NULL;
	}
	/* oldest attempt first, as the store answers (a stable order: the stream's for ties) */
	size_t n = json_array_size(arr);
	json_t **v = n ? malloc(n * sizeof *v) : NULL;
	if (v) {
		for (size_t i = 0; i < n; i++)
			v[i] = json_incref(json_array_get(arr, i));
		for (size_t i = 1; i < n; i++) /* insertion sort: stable, and a task has few attempts */
			for (size_t k = i; k > 0 && by_attempt(&v[k - 1], &v[k]) > 0; k--) {
				json_t *x = v[k];
				v[k] = v[k - 1];
				v[k - 1] = x;
			}
		json_array_clear(arr);
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, v[i]);
		free(v);
	}
	return arr;
}

typedef struct {
	const pd_store_query *q;
	pd_cluster *c;
	unsigned limit;
	json_t *arr;
	int64_t next;
	pd_err *e;
	int failed;
} page;

static bool any_last(void *arg, uint64_t seq, const char *subject, json_t *row)
{
	(void)seq;
	(void)subject;
	*(bool *)arg = row_last(row);
	return !*(bool *)arg;
}

/* Whether the record at seq (subject) is its task's latest "last" in the stream: a task recorded
 * again later (an episode graded twice, a task id sent again) has two, and last=1 answers the
 * later only, as a single node's store does. One look-up of the task's last message (a
 * wildcard's, by the broker's subject index); only when that is an earlier attempt's row (a
 * job's earlier attempts are rows after its last one) are the task's later messages read. 1,
 * 0, or -1 (e set). */
static int latest(pd_cluster *c, const char *task_id, uint64_t seq, const char *subject, pd_err *e)
{
	if (!task_id || !*task_id)
		return 1; /* records without a task are not one task's (as in the store: NULL = NULL is not true) */
	char t[400], filter[600];
	tok(task_id, t, sizeof t);
	snprintf(filter, sizeof filter, CL_REC_PREFIX "*.%s.*", t);
	natsMsg *m = NULL;
	jsErrCode je = 0;
	natsStatus s = N.js_GetLastMsg(&m, c->js, CL_REC_STREAM, filter, NULL, &je);
	if (s != NATS_OK)
		return pd_fail_as(e, EIO, "the cluster's record stream: %s (JetStream error %d)", cl_status(s), (int)je);
	const char *ls = N.natsMsg_GetSubject(m);
	bool same = ls && subject && !strcmp(ls, subject);
	json_t *row = same ? NULL : json_loadb(N.natsMsg_GetData(m), (size_t)N.natsMsg_GetDataLength(m), 0, NULL);
	N.natsMsg_Destroy(m);
	bool later_last = row && row_last(row);
	json_decref(row);
	if (same || later_last)
		return same;
	bool found = false;
	if (scan(c, filter, seq + 1, 0, any_last, &found, e) < 0)
		return -1;
	return !found;
}

static bool page_each(void *arg, uint64_t seq, const char *subject, json_t *row)
{
	page *p = arg;
	const char *kind = json_string_value(json_object_get(row, "kind"));
	if ((p->q->kind && p->q->kind[0] && (!kind || strcmp(kind, p->q->kind))) ||
	    (uint64_t)json_integer_value(json_object_get(row, "finished_at")) < p->q->since_ms ||
	    (p->q->last_only && !row_last(row)))
		return true;
	if (p->q->last_only) {
		int l = latest(p->c, json_string_value(json_object_get(row, "task_id")), seq, subject, p->e);
		if (l < 0) {
			p->failed = 1;
			return false;
		}
		if (!l)
			return true;
	}
	if (json_array_size(p->arr) == p->limit) {
		/* one more than the page: another follows, from after the page's last */
		p->next = json_integer_value(json_object_get(json_array_get(p->arr, p->limit - 1), "row"));
		return false;
	}
	json_array_append_new(p->arr, answer_record(seq, row));
	return true;
}

int pd_cluster_records_list(pd_cluster *c, const pd_store_query *q, json_t **records, int64_t *next, pd_err *e)
{
	page p = {.q = q, .c = c, .limit = q->limit ? q->limit : 100, .arr = json_array(), .e = e};
	if (p.limit > 1000)
		p.limit = 1000;
	char filter[600];
	if (q->group_id && q->group_id[0]) {
		char g[400];
		tok(q->group_id, g, sizeof g);
		snprintf(filter, sizeof filter, CL_REC_PREFIX "%s.>", g);
	} else {
		snprintf(filter, sizeof filter, CL_REC_PREFIX ">");
	}
	if (scan(c, filter, q->after > 0 ? (uint64_t)q->after + 1 : 0, q->after > 0 ? 0 : q->since_ms, page_each, &p,
		 e) < 0 ||
	    p.failed) {
		json_decref(p.arr);
		return -1;
	}
	*records = p.arr;
	*next = p.next;
	return 0;
}

/* ---- a run's whole output ------------------------------------------------------------------- */

#define OUTPUT_OBJECT_MIN (1u << 20) /* a record keeps a head and a tail of each stream: 1 MiB by default */

static void output_name(const char *request_id, int i, char *name, size_t len)
{
	snprintf(name, len, "out-%s-%s", request_id, i ? "stderr" : "stdout");
}

void cl_output_keep(pd_cluster *c, const pd_job *j)
{
	const pd_step *st = j->ran ? &j->run : &j->compile;
	if (!j->request_id[0] || (!st->whole[0] && !st->whole[1]) ||
	    st->whole_len[0] + st->whole_len[1] <= OUTPUT_OBJECT_MIN)
		return;
	for (int i = 0; i < 2; i++) {
		char name[200];
		output_name(j->request_id, i, name, sizeof name);
		pd_err e = {0};
		if (cl_obj_put(c, name, st->whole[i] ? st->whole[i] : "", st->whole[i] ? st->whole_len[i] : 0, &e) < 0) {
			pd_log("warn", "cluster: a run's whole output not kept in the object stream",
			       PD_LS("request_id", j->request_id), PD_LS("error", PD_ERR_STR(&e)));
			return;
		}
	}
}

json_t *pd_cluster_output(pd_cluster *c, const char *task_id, pd_err *e)
{
	json_t *records = pd_cluster_records_get(c, task_id, e);
	if (!records)
		return NULL;
	json_t *rec = json_array_get(records, json_array_size(records) - 1);
	if (!rec) {
		json_decref(records);
		pd_fail(e, ENOENT, "no task %s in the cluster's records", task_id);
		return NULL;
	}
	const char *rid = json_string_value(json_object_get(rec, "request_id"));
	json_t *out = json_pack("{s:s,s:O,s:O}", "task_id", task_id, "request_id",
				json_object_get(rec, "request_id") ? json_object_get(rec, "request_id") : json_null(),
				"node", json_object_get(rec, "node") ? json_object_get(rec, "node") : json_null());
	bool whole = rid != NULL;
	char *data[2] = {NULL, NULL};
	size_t len[2] = {0, 0};
	for (int i = 0; i < 2 && whole; i++) {
		char name[200];
		output_name(rid, i, name, sizeof name);
		pd_err oe = {0};
		if (cl_obj_get(c, name, &data[i], &len[i], &oe) < 0) {
			whole = false;
			if (oe.code != ENOENT) {
				/* kept, and not read now: not answered as if it were the record's part */
				free(data[0]);
				json_decref(out);
				json_decref(records);
				pd_fail_as(e, EIO, "%s", PD_ERR_STR(&oe));
				return NULL;
			}
		}
	}
	if (whole) {
		json_object_set_new(out, "stdout", pd_json_bytes(data[0], len[0]));
		json_object_set_new(out, "stderr", pd_json_bytes(data[1], len[1]));
		json_object_set_new(out, "stdout_bytes", json_integer((json_int_t)len[0]));
		json_object_set_new(out, "stderr_bytes", json_integer((json_int_t)len[1]));
	} else {
		/* none kept past the record's own: the record's run (or compile) output is all there is */
		json_t *step = json_object_get(rec, "run");
		if (!json_is_object(step))
			step = json_object_get(rec, "compile");
		for (int i = 0; i < 2; i++) {
			json_t *v = json_object_get(step, i ? "stderr" : "stdout");
			json_object_set_new(out, i ? "stderr" : "stdout", v ? json_incref(v) : json_string(""));
		}
	}
	json_object_set_new(out, "whole", json_boolean(whole));
	free(data[0]);
	free(data[1]);
	json_decref(records);
	return out;
}
