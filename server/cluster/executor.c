/* Cluster mode's executor (bridge.c says how the parts fit): tasks pulled as slots free, run on
 * this node's scheduler, recorded with their claim in the results bucket, acked, and the origin
 * noted; in-progress acks for long runs. */
#define _GNU_SOURCE
#include "cluster.h"
#include "intake.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N pd_nats

/* Tasks shorter than this on average are pulled ahead of free slots (one slot's worth each):
 * a task pulled ahead waits at most about this long behind another while a different node may
 * have been free, which for short tasks costs less than an idle worker per round trip. */
#define AHEAD_BELOW_US 100000

struct cl_task {
	pd_cluster *c;
	natsMsg *m;
	char request_id[128];
	char origin[64];
	char kind[16];
	char token[96]; /* this attempt's mark in its claim: tells our claim from another node's */
	char *value;    /* the result value claimed, sent with the note to the origin */
	char *body;     /* its body's text and status, for an answer in process (origin: this node) */
	size_t body_len;
	int status;
	bool by_ref;    /* the value claimed names a file of this node's (refs.c) */
	cl_task *next;
};

/* ---- the executor: pull, run, record once, answer, ack ------------------------------------- */

/* The answer in the API's shape, by its row (server/intake.c), as the edge would make it. */
static json_t *render(const pd_job *j, const char *kind, int *status)
{
	const pd_api *api = pd_api_find(kind);
	return (api ? api : &pd_api_native)->render(j, status);
}

/* The value of a result: {"status","node","token","body"}, made from the body's text (kept by
 * the caller for an answer in process: one serialization of the body, and none parsed again). */
static char *value_text(pd_cluster *c, int status, const char *token, const char *body, size_t blen, size_t *len)
{
	json_t *head = json_pack("{s:i,s:s,s:s}", "status", status, "node", c->node, "token", token);
	char *h = head ? json_dumps(head, JSON_COMPACT) : NULL;
	json_decref(head);
	size_t hl = h ? strlen(h) : 0;
	char *text = hl > 1 ? malloc(hl + blen + 16) : NULL;
	if (text) {
		/* "{...}" less its "}", then ,"body":BODY} */
		memcpy(text, h, hl - 1);
		int n = sprintf(text + hl - 1, ",\"body\":");
		if (blen)
			memcpy(text + hl - 1 + n, body, blen);
		text[hl - 1 + n + blen] = '}';
		text[hl + n + blen] = 0;
		*len = hl + (size_t)n + blen;
	}
	free(h);
	return text;
}

/* The value a request is claimed with: the answer itself, or, when it is larger than the
 * broker carries, a reference to this node's copy of it (refs.c), *by_ref set. body: taken.
 * *body_text (if asked for, and the claim is the answer itself): the body's text, malloc'd. */
static char *result_value(pd_cluster *c, int status, json_t *body, const char *token, size_t *len, bool *by_ref,
			  char **body_text)
{
	*by_ref = false;
	if (body_text)
		*body_text = NULL;
	char *b = pd_json_dumps(body, JSON_COMPACT);
	json_decref(body);
	char *text = b ? value_text(c, status, token, b, strlen(b), len) : NULL;
	if (text && c->max_payload > 0 && *len + 512 > (uint64_t)c->max_payload) {
		size_t big = *len;
		pthread_mutex_lock(&c->mu);
		c->results_too_big++;
		pthread_mutex_unlock(&c->mu);
		size_t rlen = 0;
		char *ref = cl_ref_keep(c, status, token, text, big, &rlen);
		free(text);
		free(b);
		if (ref) {
			*by_ref = true;
			*len = rlen;
			return ref;
		}
		/* not kept (this node's disk): the record stays whole in this node's store; the
		 * answer says where */
		char msg[400];
		snprintf(msg, sizeof msg,
			 "the result (%zu bytes) exceeds the cluster broker's message limit (%" PRId64
			 " bytes) and could not be kept for fetching; its record is in the store of node %s",
			 big, c->max_payload, c->node);
		json_t *v = json_pack("{s:i,s:s,s:s,s:{s:s,s:s}}", "status", 502, "node", c->node, "token", token, "body",
				      "error", msg, "node", c->node);
		text = v ? json_dumps(v, JSON_COMPACT) : NULL;
		json_decref(v);
		if (text)
			*len = strlen(text);
		return text;
	}
	if (text && body_text)
		*body_text = b;
	else
		free(b);
	return text;
}

/* The reply subscription of the claims: a sync subscription on <inbox>.*, each claim's reply
 * subject <inbox>.<its number>, so that a late reply to an earlier claim is told apart. */
int cl_claims_start(pd_cluster *c, pd_err *e)
{
	snprintf(c->claim_inbox, sizeof c->claim_inbox, "_INBOX.paddock-claim.%s.%08x", c->node, (unsigned)c->run_id);
	char subject[200];
	snprintf(subject, sizeof subject, "%s.*", c->claim_inbox);
	natsStatus s = N.natsConnection_SubscribeSync(&c->claim_sub, c->nc, subject);
	if (s != NATS_OK)
		return pd_fail_as(e, EIO, "cluster: subscribe %s: %s", subject, cl_status(s));
	return 0;
}

/* The bucket's create of key (what kvStore_Create does: a publish to the key's subject that the
 * stream takes only when the subject has no message yet), its reply read by this thread: NATS_OK
 * created, NATS_ERR refused (the key exists, or the stream said no), NATS_TIMEOUT no answer. */
static natsStatus claim_create(pd_cluster *c, const char *key, const char *val, size_t len)
{
	char subject[500], reply[200];
	snprintf(subject, sizeof subject, "$KV." CL_RESULTS_BUCKET ".%s", key);
	pthread_mutex_lock(&c->claim_mu);
	snprintf(reply, sizeof reply, "%s.%" PRIu64, c->claim_inbox, ++c->claim_seq);
	natsMsg *m = NULL;
	natsStatus s = N.natsMsg_Create(&m, subject, reply, val, (int)len);
	if (s == NATS_OK)
		s = N.natsMsgHeader_Set(m, "Nats-Expected-Last-Subject-Sequence", "0");
	if (s == NATS_OK)
		s = N.natsConnection_PublishMsg(c->nc, m);
	cl_msg_drop(c, m);
	uint64_t until = pd_now_us() / 1000 + 3000;
	while (s == NATS_OK) {
		uint64_t now = pd_now_us() / 1000;
		natsMsg *r = NULL;
		s = now < until ? N.natsSubscription_NextMsg(&r, c->claim_sub, (int64_t)(until - now)) : NATS_TIMEOUT;
		if (s != NATS_OK)
			break;
		if (strcmp(N.natsMsg_GetSubject(r), reply)) {
			cl_msg_drop(c, r); /* a reply to an earlier claim that waited too long */
			continue;
		}
		/* {"stream", "seq"} when taken; {"error": {...}} or a bare status (no responders) not */
		int n = N.natsMsg_GetDataLength(r);
		const char *d = N.natsMsg_GetData(r);
		json_t *v = n > 0 ? json_loadb(d, (size_t)n, 0, NULL) : NULL;
		s = v && json_is_integer(json_object_get(v, "seq")) && !json_object_get(v, "error") ? NATS_OK : NATS_ERR;
		json_decref(v);
		cl_msg_drop(c, r);
		break;
	}
	pthread_mutex_unlock(&c->claim_mu);
	return s;
}

/* Creates the request's key in the results bucket: 0 when ours is the value there (created now,
 * or by an earlier try of ours whose reply was lost), EEXIST when another node's is. A broker
 * that does not answer is asked again: whether our create took must be known before the record
 * commits or rolls back. */
static int claim_put(pd_cluster *c, const char *request_id, const char *token, const char *val, size_t len,
		     pd_err *e)
{
	char key[400];
	cl_result_key(request_id, key, sizeof key);
	uint64_t until = pd_now_us() / 1000 + 60000;
	for (;;) {
		natsStatus s = claim_create(c, key, val, len);
		if (s == NATS_OK)
			return 0;
		kvEntry *en = NULL;
		s = N.kvStore_Get(&en, c->results, key);
		if (s == NATS_OK) {
			json_t *v = json_loadb(N.kvEntry_Value(en), (size_t)N.kvEntry_ValueLen(en), 0, NULL);
			const char *t = json_string_value(json_object_get(v, "token"));
			bool ours = t && !strcmp(t, token);
			json_decref(v);
			N.kvEntry_Destroy(en);
			return ours ? 0 : pd_fail(e, EEXIST, "request %s was recorded by another node", request_id);
		}
		if (s != NATS_NOT_FOUND && pd_now_us() / 1000 >= until)
			return pd_fail_as(e, EIO, "cluster broker: %s", cl_status(s));
		if (s != NATS_NOT_FOUND)
			usleep(200 * 1000);
	}
}

static int claim(const pd_job *j, void *arg, pd_err *e)
{
	cl_task *t = arg;
	int status;
	json_t *body = render(j, t->kind, &status);
	size_t len = 0;
	bool by_ref = false;
	char *btext = NULL;
	/* the body's text is kept for an answer in process (the request's origin is this node) */
	char *val = body ? result_value(t->c, status, body, t->token, &len, &by_ref,
					!strcmp(t->origin, t->c->node) ? &btext : NULL)
			 : NULL;
	if (!val)
		return pd_fail(e, ENOMEM, "result");
	int rc = claim_put(t->c, t->request_id, t->token, val, len, e);
	free(t->value);
	free(t->body);
	t->value = rc == 0 ? val : NULL;
	t->body = rc == 0 ? btext : NULL;
	t->body_len = t->body ? strlen(t->body) : 0;
	t->status = status;
	t->by_ref = rc == 0 && by_ref;
	if (rc < 0) {
		/* another node's answer is the request's (or none is yet): this copy names nothing */
		if (by_ref)
			cl_ref_drop(t->c, t->token);
		free(val);
		free(btext);
	}
	return rc;
}

/* "Ready" to the origin node: the request id, and the result value when this node has it (the
 * origin answers without a read of the bucket). When the origin is this node (every request of a
 * one-node cluster, a node's share of its own requests in a larger one) its waiters are answered
 * in process: the note would only go to the broker and back (two messages, two thread hand-offs
 * and about 0.1 ms each way). The claim is made either way: it is what a retry, a duplicate or a
 * redelivery finds. */
static void notify(pd_cluster *c, const cl_task *t, const char *request_id, const char *value)
{
	const char *origin = t->origin;
	if (value && t->body && !strcmp(origin, c->node)) {
		cl_deliver_local(c, request_id, t->status, t->body, t->body_len);
		return;
	}
	char subject[128];
	snprintf(subject, sizeof subject, CL_NOTIFY_PREFIX "%s", origin);
	char *note = NULL;
	int n = value ? asprintf(&note, "%s\n%s", request_id, value) : -1;
	if (n > 0 && (c->max_payload <= 0 || n < c->max_payload))
		N.natsConnection_Publish(c->nc, subject, note, n);
	else
		N.natsConnection_Publish(c->nc, subject, request_id, (int)strlen(request_id));
	free(note);
}

/* The free slots a puller waits for before it pulls again: while tasks are queued ahead, half
 * of those (the workers still have the other half queued, so none idles meanwhile), one pull and
 * one wake-up of the puller for every few tasks instead of one each; else one. Under mu. */
static unsigned pull_batch(const pd_cluster *c)
{
	return c->ahead >= 2 ? c->ahead / 2 : 1;
}

static bool may_pull(const pd_cluster *c)
{
	return c->ntasks + pull_batch(c) <= c->slots + c->ahead;
}

static void task_end(pd_cluster *c, cl_task *t)
{
	pthread_mutex_lock(&c->mu);
	for (cl_task **pp = &c->tasks; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			c->ntasks--;
			break;
		}
	/* every template's puller may use the slots; none is woken to sleep again */
	if (may_pull(c)) {
		if (c->nconsumers > 1)
			pthread_cond_broadcast(&c->slot_cv);
		else
			pthread_cond_signal(&c->slot_cv);
	}
	pthread_mutex_unlock(&c->mu);
	cl_msg_drop(c, t->m);
	free(t->value);
	free(t->body);
	free(t);
}

/* The job finished and finish() stored it (with its claim) or was refused. A worker thread. */
static void task_done(pd_job *j, void *arg)
{
	cl_task *t = arg;
	pd_cluster *c = t->c;
	bool recorded = j->store_errno == 0, elsewhere = j->store_errno == EEXIST;
	uint64_t ran = j->started_us && j->finished_us > j->started_us ? j->finished_us - j->started_us : 0;
	pthread_mutex_lock(&c->mu);
	if (ran) {
		c->run_avg_us = c->run_avg_us ? (c->run_avg_us * 7 + ran) / 8 : ran;
		c->ahead = c->run_avg_us < AHEAD_BELOW_US ? c->slots : 0;
	}
	/* in-progress acks and this ack go out on the same message: under the lock, one at a time */
	if (recorded || elsewhere) {
		N.natsMsg_Ack(t->m, NULL);
		if (recorded) {
			c->recorded++;
			cl_records_due(c);
		}
		else
			c->already_recorded++;
	} else {
		/* not recorded (the store's disk, the broker): run again, here or elsewhere */
		N.natsMsg_NakWithDelay(t->m, 1000, NULL);
		c->naks++;
	}
	pthread_mutex_unlock(&c->mu);
	if (recorded || elsewhere)
		/* a reference goes as a bare note: the origin fetches over HTTP, which its libnats
		 * thread must not wait for */
		notify(c, t, t->request_id, recorded && !t->by_ref ? t->value : NULL);
	if (recorded)
		cl_output_keep(c, j);
	pd_job_free(j);
	task_end(c, t);
}

/* The task through this node's intake (server/intake.h), as a request of its own clients: the
 * edge checked it already, but by its own rules (its templates, networks, risk list, deadline
 * margin), and a request must be refused for the same reasons whichever node runs it. */
static pd_job *parse(pd_cluster *c, const char *kind, const char *body, size_t len, uint64_t waited_us, bool *named,
		     int *status, pd_err *e)
{
	*status = 400;
	json_error_t je;
	json_t *b = json_loadb(body, len, 0, &je);
	if (!b) {
		pd_refuse(e, "request body is not JSON");
		return NULL;
	}
	*named = json_is_string(json_object_get(b, "task_id"));
	const pd_api *api = pd_api_find(kind);
	unsigned ra;
	pd_job *j = api ? pd_intake_check(c->o.intake, api, b, PD_INTAKE_BROKER, waited_us, status, &ra, e) : NULL;
	if (!api)
		pd_refuse(e, "kind: '%s' is not an API of this node", kind);
	json_decref(b);
	return j;
}

/* A refusal by this node's intake (the edge checked it too, by its own rules) is the request's
 * answer, with the status and body the edge would give it, recorded nowhere. */
static void answer_refusal(pd_cluster *c, cl_task *t, int status, const char *msg)
{
	const pd_api *api = pd_api_find(t->kind);
	json_t *body = (api ? api : &pd_api_native)->error_body(msg);
	size_t len = 0;
	bool by_ref = false;
	char *val = body ? result_value(c, status, body, t->token, &len, &by_ref, NULL) : NULL;
	pd_err e = {0};
	if (val && claim_put(c, t->request_id, t->token, val, len, &e) == 0) {
		N.natsMsg_Ack(t->m, NULL);
		notify(c, t, t->request_id, NULL);
	}
	free(val);
	task_end(c, t);
}

/* Takes a pulled task; returns how many tasks the consumer had queued behind it (what the next
 * pull asks for, at most the free slots). */
static uint64_t take_task(pd_cluster *c, natsMsg *m)
{
	cl_task *t = calloc(1, sizeof *t);
	if (!t) {
		N.natsMsg_NakWithDelay(m, 1000, NULL);
		N.natsMsg_Destroy(m);
		return 1;
	}
	t->c = c;
	t->m = m;
	const char *v = NULL;
	if (N.natsMsgHeader_Get(m, "Paddock-Request-Id", &v) == NATS_OK && v)
		snprintf(t->request_id, sizeof t->request_id, "%s", v);
	v = NULL;
	if (N.natsMsgHeader_Get(m, "Paddock-Origin", &v) == NATS_OK && v)
		snprintf(t->origin, sizeof t->origin, "%s", v);
	v = NULL;
	snprintf(t->kind, sizeof t->kind, "%s",
		 N.natsMsgHeader_Get(m, "Paddock-Kind", &v) == NATS_OK && v ? v : "native");
	pd_new_id(t->token, sizeof t->token, c->run_id, "%s", c->node);
	uint64_t delivered = 1, waited_us = 0;
	uint64_t queued = 1;
	jsMsgMetaData *meta = NULL;
	if (N.natsMsg_GetMetaData(&meta, m) == NATS_OK) {
		delivered = meta->NumDelivered;
		queued = meta->NumPending;
		/* its time in the broker (the stream's clock, the edge's own clock give or take): its
		 * deadline counts from its arrival (intake.h) */
		int64_t stored_ms = meta->Timestamp / 1000000, now_ms = (int64_t)(pd_wall_us() / 1000);
		waited_us = stored_ms > 0 && now_ms > stored_ms ? (uint64_t)(now_ms - stored_ms) * 1000 : 0;
		N.jsMsgMetaData_Destroy(meta);
	}
	pthread_mutex_lock(&c->mu);
	c->pulled++;
	if (delivered > 1)
		c->redelivered++;
	t->next = c->tasks;
	c->tasks = t;
	c->ntasks++;
	pthread_mutex_unlock(&c->mu);
	if (!t->request_id[0]) {
		/* not ours: nothing to answer */
		N.natsMsg_Ack(m, NULL);
		task_end(c, t);
		return queued;
	}
	if (delivered > 1) {
		/* a redelivery: the node that had it may have recorded it before it died */
		char *val = NULL;
		size_t len = 0;
		if (cl_result_get(c, t->request_id, &val, &len) == 1) {
			free(val);
			pthread_mutex_lock(&c->mu);
			N.natsMsg_Ack(m, NULL);
			c->already_recorded++;
			pthread_mutex_unlock(&c->mu);
			notify(c, t, t->request_id, NULL);
			task_end(c, t);
			return queued;
		}
	}
	pd_err e = {0};
	bool named = false;
	int status;
	pd_job *j = parse(c, t->kind, N.natsMsg_GetData(m), (size_t)N.natsMsg_GetDataLength(m), waited_us, &named,
			  &status, &e);
	if (!j) {
		answer_refusal(c, t, status, PD_ERR_STR(&e));
		return queued;
	}
	snprintf(j->request_id, sizeof j->request_id, "%s", t->request_id);
	snprintf(j->node, sizeof j->node, "%s", c->node);
	/* a judge job names itself (j-<run id>-<n>) when the request gives no task id: the request
	 * id names it across the cluster instead, as it does a run */
	if (!j->task_id[0] || !named)
		snprintf(j->task_id, sizeof j->task_id, "%.63s", t->request_id);
	/* the scheduler's round robin is per origin node: one node's flood does not starve the rest */
	snprintf(j->client, sizeof j->client, "node:%.57s", t->origin);
	j->claim = claim;
	j->claim_arg = t;
	snprintf(j->claim_token, sizeof j->claim_token, "%s", t->token);
	j->done = task_done;
	j->done_arg = t;
	if (delivered > c->o.max_deliver) {
		/* every node that took it stopped before recording it (killed, say): it is not tried
		 * again, and ends as a counted infrastructure failure the client hears of */
		pthread_mutex_lock(&c->mu);
		c->exhausted++;
		pthread_mutex_unlock(&c->mu);
		j->failure = PD_F_INTERNAL;
		snprintf(j->error, sizeof j->error,
			 "delivered %" PRIu64 " times, and every node that took it stopped before recording it",
			 delivered - 1);
		j->queued_us = j->started_us = j->finished_us = pd_wall_us();
		if (pd_store_put(c->store, j, c->node, &e) < 0) {
			j->store_errno = e.code ? e.code : EIO;
			snprintf(j->store_error, sizeof j->store_error, "%s", PD_ERR_STR(&e));
		}
		task_done(j, t);
		return queued;
	}
	pd_admit a = pd_sched_submit(c->sched, j);
	if (a != PD_ADMIT_OK) {
		/* this node cannot take it now (its breaker, its disk): another may */
		pd_job_free(j);
		pthread_mutex_lock(&c->mu);
		N.natsMsg_NakWithDelay(m, 2000, NULL);
		c->naks++;
		pthread_mutex_unlock(&c->mu);
		task_end(c, t);
	}
	return queued;
}

/* One template's puller. The node's slots (and, while tasks are short, as many again queued
 * ahead: c->ahead) are shared by its templates' pullers: each asks, in one pull, for at most as
 * many tasks as are free when it asks (as many as its consumer had queued), so while two fetch at once a node may hold a few more (they
 * wait in its scheduler's queue, their acks renewed), never more than that times its
 * templates. */
void *cl_puller_main(void *arg)
{
	cl_consumer *k = arg;
	pd_cluster *c = k->c;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		while (!c->quiesced && !may_pull(c))
			pthread_cond_wait(&c->slot_cv, &c->mu);
		bool q = c->quiesced;
		int free_slots = (int)(c->slots + c->ahead - c->ntasks);
		pthread_mutex_unlock(&c->mu);
		if (q)
			break;
		natsMsgList list = {0};
		jsErrCode je = 0;
		/* as many as the consumer had queued (when they are all there the pull ends with the
		 * last, with no "no more" message), at most the free slots; one when none was queued */
		int batch = k->queued < (uint64_t)free_slots ? (int)k->queued : free_slots;
		natsStatus s = N.natsSubscription_Fetch(&list, k->sub, batch > 0 ? batch : 1, 1000, &je);
		if (s != NATS_OK && s != NATS_TIMEOUT) {
			/* the broker away: libnats reconnects; ask again shortly */
			usleep(200 * 1000);
			continue;
		}
		for (int i = 0; i < list.Count; i++) {
			natsMsg *m = list.Msgs[i];
			list.Msgs[i] = NULL;
			if (m)
				k->queued = take_task(c, m);
		}
		N.natsMsgList_Destroy(&list);
	}
	return NULL;
}

/* The lease of the tasks this node holds: an in-progress ack for each, every second (or a third
 * of the ack wait, if shorter). The broker hands a task on once its node has been silent for the
 * ack wait (5 s by default): a node killed with its tasks is noticed by the broker itself, a few
 * seconds after its last renewal, and its tasks go to the other nodes then, not after a long
 * timeout (docs/cluster.md, "a node dies"). Its own thread, so that a slow heartbeat or a store
 * that waits for its lock never delays a renewal past the ack wait; it runs until the node's
 * end, not its quiesce: the tasks a stopping node finishes stay its own. Only held tasks cost
 * messages: a task that ends within a second costs none. */
void *cl_leaser_main(void *arg)
{
	pd_cluster *c = arg;
	uint64_t gap = (uint64_t)c->o.ack_wait_s * 1000 / 3;
	if (gap > 1000 || !gap)
		gap = 1000;
	pthread_mutex_lock(&c->mu);
	while (!c->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(gap / 1000);
		ts.tv_nsec += (long)(gap % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->tick_cv, &c->mu, &ts);
		if (c->stopping)
			break;
		/* in-progress acks and the final ack go out on the same message: under the lock */
		for (cl_task *t = c->tasks; t; t = t->next)
			N.natsMsg_InProgress(t->m, NULL);
		pthread_mutex_unlock(&c->mu);
		cl_msg_flush(c); /* what cl_msg_drop kept: a second at most */
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Heartbeats, the stage of claimed records, and the expiry of kept results. */
void *cl_ticker_main(void *arg)
{
	pd_cluster *c = arg;
	uint64_t last_expire = 0;
	pthread_mutex_lock(&c->mu);
	while (!c->quiesced) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&c->tick_cv, &c->mu, &ts);
		if (c->quiesced)
			break;
		pthread_mutex_unlock(&c->mu);
		/* the stage of claimed records that no later record's commit cleared (pd_store_put) */
		pd_store_unstage(c->store);
		cl_heartbeat(c);
		if (pd_now_us() / 1000 - last_expire >= 60000) {
			last_expire = pd_now_us() / 1000;
			cl_ref_expire(c);
		}
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Whose claim request_id has: 1 ours (token), 0 none or another's, -1 the broker did not say. */
static int settle_staged(void *arg, const char *request_id, const char *token)
{
	pd_cluster *c = arg;
	char *val = NULL;
	size_t len = 0;
	int got = cl_result_get(c, request_id, &val, &len);
	if (got <= 0)
		return got;
	json_t *v = json_loadb(val, len, 0, NULL);
	const char *t = json_string_value(json_object_get(v, "token"));
	int ours = t && !strcmp(t, token);
	json_decref(v);
	free(val);
	return ours;
}

int cl_settle_staged(pd_cluster *c, pd_err *e)
{
	unsigned kept = 0, dropped = 0;
	int rc = pd_store_staged(c->store, settle_staged, c, &kept, &dropped, e);
	if (kept || dropped)
		/* dropped: never claimed, so never acked: the queue delivers them again */
		pd_log("warn", "cluster: records staged when this node stopped settled", PD_LU("kept", kept),
		       PD_LU("dropped", dropped));
	return rc;
}
