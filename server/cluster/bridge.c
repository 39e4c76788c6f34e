/* A node of a paddock cluster on NATS JetStream (docs/cluster.md is the user's account).
 *
 * The edge: a run request (native, /run_code, Piston) is published to the work-queue stream
 * PADDOCK_WORK with its request id as the message id, so the stream's duplicate window absorbs a
 * client's retries; the request waits for its result in the bucket paddock-results, keyed by the
 * request id. A result already there (a retry, through any node) is answered at once.
 *
 * The executor: every node pulls from one durable pull consumer, only as many tasks as it has
 * free slots, runs each through its own scheduler and pools, and acks only after the record is
 * stored. The store commits a record only together with its claim: the creation of the request's
 * key in paddock-results (first writer wins), whose value is the answer. So a task redelivered
 * after its node died (ack timeout; long runs renew it with in-progress acks) finds the claim and
 * is acked without running again, or, when the dead node never claimed it, runs once more and is
 * recorded once. A finished job is acked whatever its outcome (deterministic failures are
 * answers, never redelivered); a task seen past its last delivery ends as a recorded
 * infrastructure failure, answered to the client. The origin node hears "ready" on its own
 * subject and reads the answer from the bucket; should that note be lost (a broker restart), it
 * looks again, less and less often. */
#define _GNU_SOURCE
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define N pd_nats

/* a request body is published whole: this much below the broker's limit is left for headers */
#define HEADROOM 4096
#define PUBLISH_GIVE_UP_MS 30000
#define POLL_FIRST_MS 1000
#define POLL_MAX_MS 8000

struct cl_submit {
	char kind[16];
	char request_id[128];
	char *body;
	size_t len;
	pd_cluster_answer cb;
	void *arg;
	cl_submit *next;
};

struct cl_waiter {
	char request_id[128];
	pd_cluster_answer cb;
	void *arg;
	uint64_t next_poll_ms, poll_gap_ms;
	cl_waiter *next;
};

struct cl_task {
	pd_cluster *c;
	natsMsg *m;
	char request_id[128];
	char origin[64];
	char kind[16];
	char token[40]; /* this attempt's mark in its claim: tells our claim from another node's */
	char *value;    /* the result value claimed, sent with the note to the origin */
	cl_task *next;
};

uint64_t cl_wall_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000u + (uint64_t)tv.tv_usec / 1000u;
}

const char *cl_status(natsStatus s)
{
	return N.natsStatus_GetText ? N.natsStatus_GetText(s) : "nats";
}

void cl_result_key(const char *id, char *key, size_t len)
{
	size_t k = 0;
	for (const unsigned char *p = (const unsigned char *)id; *p && k + 4 < len; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			     *p == '-' || *p == '_';
		if (plain)
			key[k++] = (char)*p;
		else
			k += (size_t)snprintf(key + k, len - k, "=%02X", *p);
	}
	key[k] = 0;
}

/* ---- answers ------------------------------------------------------------------------------- */

/* The answer a result value holds: {"status", "node", "token", "body"}. */
static void answer_from_value(const char *val, size_t len, pd_cluster_answer cb, void *arg)
{
	json_t *v = json_loadb(val, len, 0, NULL);
	json_t *b = v ? json_object_get(v, "body") : NULL;
	char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	if (!text) {
		static const char bad[] = "{\"error\":\"the cluster's result for this request is unreadable\"}";
		cb(arg, 502, bad, sizeof bad - 1, 0);
	} else {
		cb(arg, (int)json_integer_value(json_object_get(v, "status")), text, strlen(text), 0);
	}
	free(text);
	json_decref(v);
}

/* The stored answer of a request id: 1 (and *val, malloc'd), 0 none, -1 the broker did not say. */
static int result_get(pd_cluster *c, const char *request_id, char **val, size_t *len)
{
	char key[400];
	cl_result_key(request_id, key, sizeof key);
	kvEntry *en = NULL;
	natsStatus s = N.kvStore_Get(&en, c->results, key);
	if (s == NATS_NOT_FOUND)
		return 0;
	if (s != NATS_OK)
		return -1;
	int n = N.kvEntry_ValueLen(en);
	*val = malloc((size_t)n + 1);
	if (*val) {
		memcpy(*val, N.kvEntry_Value(en), (size_t)n);
		(*val)[n] = 0;
		*len = (size_t)n;
	}
	N.kvEntry_Destroy(en);
	return *val ? 1 : -1;
}

/* Answers every waiter of request_id with the result value val (taken). */
static void deliver_value(pd_cluster *c, const char *request_id, char *val, size_t len)
{
	pthread_mutex_lock(&c->mu);
	cl_waiter *mine = NULL;
	for (cl_waiter **pp = &c->waiters; *pp;) {
		cl_waiter *w = *pp;
		if (!strcmp(w->request_id, request_id)) {
			*pp = w->next;
			w->next = mine;
			mine = w;
			c->nwaiting--;
			c->answered++;
		} else {
			pp = &w->next;
		}
	}
	pthread_mutex_unlock(&c->mu);
	while (mine) {
		cl_waiter *w = mine;
		mine = w->next;
		answer_from_value(val, len, w->cb, w->arg);
		free(w);
	}
	free(val);
}

/* Answers every waiter of request_id from its stored result, if there is one now. */
static void deliver(pd_cluster *c, const char *request_id)
{
	char *val = NULL;
	size_t len = 0;
	if (result_get(c, request_id, &val, &len) == 1)
		deliver_value(c, request_id, val, len);
}

/* ---- the edge: submit, publish, wait ------------------------------------------------------- */

void pd_cluster_submit(pd_cluster *c, const char *kind, const char *body, size_t len, const char *request_id,
		       pd_cluster_answer cb, void *arg)
{
	if (c->max_payload > 0 && len + HEADROOM > (uint64_t)c->max_payload) {
		char msg[200];
		int n = snprintf(msg, sizeof msg,
				 "{\"error\":\"request body of %zu bytes exceeds what the cluster's broker carries "
				 "(%" PRId64 " bytes less %d)\"}",
				 len, c->max_payload, HEADROOM);
		cb(arg, 413, msg, (size_t)n, 0);
		return;
	}
	cl_submit *q = calloc(1, sizeof *q);
	if (q)
		q->body = malloc(len + 1);
	if (!q || !q->body) {
		free(q);
		static const char oom[] = "{\"error\":\"out of memory\"}";
		cb(arg, 503, oom, sizeof oom - 1, 1);
		return;
	}
	memcpy(q->body, body, len);
	q->body[len] = 0;
	q->len = len;
	snprintf(q->kind, sizeof q->kind, "%s", kind);
	snprintf(q->request_id, sizeof q->request_id, "%s", request_id);
	q->cb = cb;
	q->arg = arg;
	pthread_mutex_lock(&c->mu);
	if (c->stopping) {
		pthread_mutex_unlock(&c->mu);
		free(q->body);
		free(q);
		static const char stop[] = "{\"error\":\"shutting down\"}";
		cb(arg, 503, stop, sizeof stop - 1, 1);
		return;
	}
	c->submitted++;
	if (c->subq_tail)
		c->subq_tail->next = q;
	else
		c->subq = q;
	c->subq_tail = q;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* Publishes until the broker takes it (a broker restart is waited out) or gives up: 1 published,
 * 2 a duplicate the stream's window absorbed, 0 not published. No look at the results bucket
 * first: the message id does the duplicate check in the same round trip. */
static int publish(pd_cluster *c, const cl_submit *q)
{
	char subject[64];
	snprintf(subject, sizeof subject, "paddock.work.%s", q->kind);
	uint64_t until = cl_wall_ms() + PUBLISH_GIVE_UP_MS;
	for (;;) {
		natsMsg *m = NULL;
		natsStatus s = N.natsMsg_Create(&m, subject, NULL, q->body, (int)q->len);
		if (s == NATS_OK)
			s = N.natsMsgHeader_Set(m, "Paddock-Kind", q->kind);
		if (s == NATS_OK)
			s = N.natsMsgHeader_Set(m, "Paddock-Origin", c->node);
		if (s == NATS_OK)
			s = N.natsMsgHeader_Set(m, "Paddock-Request-Id", q->request_id);
		jsPubOptions po;
		N.jsPubOptions_Init(&po);
		po.MsgId = q->request_id;
		po.MaxWait = 5000;
		jsPubAck *pa = NULL;
		jsErrCode je = 0;
		if (s == NATS_OK)
			s = N.js_PublishMsg(&pa, c->js, m, &po, &je);
		N.natsMsg_Destroy(m);
		if (s == NATS_OK) {
			bool dup = pa && pa->Duplicate;
			pthread_mutex_lock(&c->mu);
			if (dup)
				c->dup_published++;
			else
				c->published++;
			pthread_mutex_unlock(&c->mu);
			N.jsPubAck_Destroy(pa);
			return dup ? 2 : 1;
		}
		pthread_mutex_lock(&c->mu);
		c->publish_failures++;
		bool stop = c->stopping;
		pthread_mutex_unlock(&c->mu);
		if (stop || cl_wall_ms() >= until) {
			pd_log("warn", "cluster: work not published", PD_LS("request_id", q->request_id),
			       PD_LS("error", cl_status(s)));
			return 0;
		}
		usleep(250 * 1000);
	}
}

static void *publisher_main(void *arg)
{
	pd_cluster *c = arg;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		cl_submit *q = c->subq;
		if (!q) {
			if (c->stopping)
				break;
			pthread_cond_wait(&c->cv, &c->mu);
			continue;
		}
		c->subq = q->next;
		if (!c->subq)
			c->subq_tail = NULL;
		pthread_mutex_unlock(&c->mu);

		{
			/* waiting before publishing: the result may be announced before publish returns */
			cl_waiter *w = calloc(1, sizeof *w);
			if (!w) {
				static const char oom[] = "{\"error\":\"out of memory\"}";
				q->cb(q->arg, 503, oom, sizeof oom - 1, 1);
			} else {
				snprintf(w->request_id, sizeof w->request_id, "%s", q->request_id);
				w->cb = q->cb;
				w->arg = q->arg;
				w->poll_gap_ms = POLL_FIRST_MS;
				w->next_poll_ms = cl_wall_ms() + POLL_FIRST_MS;
				pthread_mutex_lock(&c->mu);
				w->next = c->waiters;
				c->waiters = w;
				c->nwaiting++;
				pthread_mutex_unlock(&c->mu);
				int pub = publish(c, q);
				if (pub == 2) {
					/* the stream knew the id (a retry, here or through another node): its
					 * result may be there already; if not, the poller looks again */
					pthread_mutex_lock(&c->mu);
					c->dup_answered++;
					pthread_mutex_unlock(&c->mu);
					deliver(c, q->request_id);
				} else if (!pub) {
					bool found = false;
					pthread_mutex_lock(&c->mu);
					for (cl_waiter **pp = &c->waiters; *pp; pp = &(*pp)->next)
						if (*pp == w) {
							*pp = w->next;
							c->nwaiting--;
							found = true;
							break;
						}
					pthread_mutex_unlock(&c->mu);
					if (found) {
						static const char down[] =
							"{\"error\":\"the cluster's broker did not take the request: retry later\"}";
						w->cb(w->arg, 503, down, sizeof down - 1, 5);
						free(w);
					}
				}
			}
		}
		free(q->body);
		free(q);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* "ready" notes for this node's waiters (a libnats thread): handed to the poller, which reads
 * the bucket (a round trip this thread should not wait for). */
static void on_notify(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *arg)
{
	(void)nc;
	(void)sub;
	pd_cluster *c = arg;
	int n = N.natsMsg_GetDataLength(m);
	char *note = n > 0 ? malloc((size_t)n + 1) : NULL;
	if (note) {
		memcpy(note, N.natsMsg_GetData(m), (size_t)n);
		note[n] = 0;
		pthread_mutex_lock(&c->mu);
		if (c->nready == c->ready_cap) {
			size_t cap = c->ready_cap ? c->ready_cap * 2 : 256;
			void *p = realloc(c->ready, cap * sizeof *c->ready);
			if (p) {
				c->ready = p;
				c->ready_cap = cap;
			}
		}
		if (c->nready < c->ready_cap) {
			c->ready[c->nready++] = note;
			note = NULL;
			pthread_cond_broadcast(&c->cv);
		}
		pthread_mutex_unlock(&c->mu);
		free(note); /* no memory to keep it: the poller's later look finds the result */
	}
	N.natsMsg_Destroy(m);
}

/* Answers the waiters whose results were announced, and looks again for those that waited long
 * (a note lost while the broker restarted, or a request another node published first). */
static void *poller_main(void *arg)
{
	pd_cluster *c = arg;
	char **batch = NULL;
	size_t cap = 0;
	pthread_mutex_lock(&c->mu);
	while (!(c->stopping && !c->waiters)) {
		if (!c->nready) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 200 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&c->cv, &c->mu, &ts);
		}
		size_t n = c->nready;
		if (n > cap) {
			void *p = realloc(batch, n * sizeof *batch);
			if (p) {
				batch = p;
				cap = n;
			} else {
				n = cap;
			}
		}
		memcpy(batch, c->ready, n * sizeof *batch);
		memmove(c->ready, c->ready + n, (c->nready - n) * sizeof *c->ready);
		c->nready -= n;
		/* due looks, at most 64 a round so announced results are not kept behind them */
		char due[64][128];
		size_t ndue = 0;
		uint64_t now = cl_wall_ms();
		for (cl_waiter *w = c->waiters; w && ndue < 64; w = w->next)
			if (w->next_poll_ms <= now) {
				snprintf(due[ndue++], 128, "%s", w->request_id);
				w->poll_gap_ms = w->poll_gap_ms * 2 > POLL_MAX_MS ? POLL_MAX_MS : w->poll_gap_ms * 2;
				w->next_poll_ms = now + w->poll_gap_ms;
			}
		bool stopping = c->stopping;
		pthread_mutex_unlock(&c->mu);
		for (size_t i = 0; i < n; i++) {
			/* "ID\nVALUE": the result came with the note; "ID": read it from the bucket */
			char *nl = strchr(batch[i], '\n');
			if (nl) {
				*nl = 0;
				size_t vlen = strlen(nl + 1);
				char *val = malloc(vlen + 1);
				if (val) {
					memcpy(val, nl + 1, vlen + 1);
					deliver_value(c, batch[i], val, vlen);
				} else {
					deliver(c, batch[i]);
				}
			} else {
				deliver(c, batch[i]);
			}
			free(batch[i]);
		}
		for (size_t i = 0; i < ndue; i++)
			deliver(c, due[i]);
		pthread_mutex_lock(&c->mu);
		if (stopping)
			break;
	}
	/* what still waits at the stop is answered: the work may still run elsewhere, and a retry
	 * with the same request id gets its result */
	cl_waiter *left = c->waiters;
	c->waiters = NULL;
	c->nwaiting = 0;
	pthread_mutex_unlock(&c->mu);
	while (left) {
		cl_waiter *w = left;
		left = w->next;
		static const char stop[] =
			"{\"error\":\"this node is shutting down: retry with the same X-Request-Id for the result\"}";
		w->cb(w->arg, 503, stop, sizeof stop - 1, 1);
		free(w);
	}
	free(batch);
	return NULL;
}

/* ---- the executor: pull, run, record once, answer, ack ------------------------------------- */

/* The answer in the API's shape, as the edge's runs.c would make it. */
static json_t *render(const pd_job *j, const char *kind, int *status)
{
	*status = 200;
	if (!strcmp(kind, "piston") && j->failure == PD_F_DEPENDENCY) {
		*status = 400;
		return json_pack("{s:o}", "message", pd_json_text(j->error));
	}
	return !strcmp(kind, "run_code") ? pd_job_to_run_code(j)
	       : !strcmp(kind, "piston") ? pd_job_to_piston(j)
					 : pd_job_to_json(j);
}

static char *result_value(pd_cluster *c, int status, json_t *body, const char *token, size_t *len)
{
	json_t *v = json_pack("{s:i,s:s,s:s,s:o}", "status", status, "node", c->node, "token", token, "body", body);
	char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
	json_decref(v);
	if (text && c->max_payload > 0 && strlen(text) + 512 > (uint64_t)c->max_payload) {
		/* the record stays whole in this node's store; the answer says where */
		size_t big = strlen(text);
		free(text);
		pthread_mutex_lock(&c->mu);
		c->results_too_big++;
		pthread_mutex_unlock(&c->mu);
		char msg[400];
		snprintf(msg, sizeof msg,
			 "the result (%zu bytes) exceeds the cluster broker's message limit (%" PRId64
			 " bytes); its record is in the store of node %s",
			 big, c->max_payload, c->node);
		v = json_pack("{s:i,s:s,s:s,s:{s:s,s:s}}", "status", 502, "node", c->node, "token", token, "body",
			      "error", msg, "node", c->node);
		text = v ? json_dumps(v, JSON_COMPACT) : NULL;
		json_decref(v);
	}
	if (text)
		*len = strlen(text);
	return text;
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
	uint64_t until = cl_wall_ms() + 60000;
	for (;;) {
		uint64_t rev = 0;
		natsStatus s = N.kvStore_Create(&rev, c->results, key, val, (int)len);
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
		if (s != NATS_NOT_FOUND && cl_wall_ms() >= until)
			return pd_fail(e, EIO, "cluster broker: %s", cl_status(s));
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
	char *val = body ? result_value(t->c, status, body, t->token, &len) : NULL;
	if (!val)
		return pd_fail(e, ENOMEM, "result");
	int rc = claim_put(t->c, t->request_id, t->token, val, len, e);
	free(t->value);
	t->value = rc == 0 ? val : NULL;
	if (rc < 0)
		free(val);
	return rc;
}

/* "Ready" to the origin node: the request id, and the result value when this node has it (the
 * origin answers without a read of the bucket). */
static void notify(pd_cluster *c, const char *origin, const char *request_id, const char *value)
{
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

static void task_end(pd_cluster *c, cl_task *t)
{
	pthread_mutex_lock(&c->mu);
	for (cl_task **pp = &c->tasks; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			c->ntasks--;
			break;
		}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	N.natsMsg_Destroy(t->m);
	free(t->value);
	free(t);
}

/* The job finished and finish() stored it (with its claim) or was refused. A worker thread. */
static void task_done(pd_job *j, void *arg)
{
	cl_task *t = arg;
	pd_cluster *c = t->c;
	bool recorded = j->store_errno == 0, elsewhere = j->store_errno == EEXIST;
	pthread_mutex_lock(&c->mu);
	/* in-progress acks and this ack go out on the same message: under the lock, one at a time */
	if (recorded || elsewhere) {
		N.natsMsg_Ack(t->m, NULL);
		if (recorded)
			c->recorded++;
		else
			c->already_recorded++;
	} else {
		/* not recorded (the store's disk, the broker): run again, here or elsewhere */
		N.natsMsg_NakWithDelay(t->m, 1000, NULL);
		c->naks++;
	}
	pthread_mutex_unlock(&c->mu);
	if (recorded || elsewhere)
		notify(c, t->origin, t->request_id, recorded ? t->value : NULL);
	pd_job_free(j);
	task_end(c, t);
}

static pd_job *parse(const char *kind, const char *body, size_t len, pd_err *e)
{
	json_error_t je;
	json_t *b = json_loadb(body, len, 0, &je);
	if (!b) {
		pd_refuse(e, "request body is not JSON");
		return NULL;
	}
	pd_job *j = !strcmp(kind, "run_code") ? pd_job_from_run_code(b, e)
		    : !strcmp(kind, "piston") ? pd_job_from_piston(b, e)
					      : pd_job_from_native(b, e);
	json_decref(b);
	return j;
}

/* A refusal by the parser on this node (the edge parsed it once already: versions differ) is
 * the request's answer, recorded nowhere. */
static void answer_refusal(pd_cluster *c, cl_task *t, const char *msg)
{
	json_t *body = json_pack("{s:s}", "error", msg);
	size_t len = 0;
	char *val = body ? result_value(c, 400, body, t->token, &len) : NULL;
	pd_err e = {0};
	if (val && claim_put(c, t->request_id, t->token, val, len, &e) == 0) {
		N.natsMsg_Ack(t->m, NULL);
		notify(c, t->origin, t->request_id, NULL);
	}
	free(val);
	task_end(c, t);
}

static void take_task(pd_cluster *c, natsMsg *m)
{
	cl_task *t = calloc(1, sizeof *t);
	if (!t) {
		N.natsMsg_NakWithDelay(m, 1000, NULL);
		N.natsMsg_Destroy(m);
		return;
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
	static uint64_t seq;
	snprintf(t->token, sizeof t->token, "%s-%08" PRIx32 "-%" PRIu64, c->node, c->run_id,
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	uint64_t delivered = 1;
	jsMsgMetaData *meta = NULL;
	if (N.natsMsg_GetMetaData(&meta, m) == NATS_OK) {
		delivered = meta->NumDelivered;
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
		return;
	}
	if (delivered > 1) {
		/* a redelivery: the node that had it may have recorded it before it died */
		char *val = NULL;
		size_t len = 0;
		if (result_get(c, t->request_id, &val, &len) == 1) {
			free(val);
			pthread_mutex_lock(&c->mu);
			N.natsMsg_Ack(m, NULL);
			c->already_recorded++;
			pthread_mutex_unlock(&c->mu);
			notify(c, t->origin, t->request_id, NULL);
			task_end(c, t);
			return;
		}
	}
	pd_err e = {0};
	pd_job *j = parse(t->kind, N.natsMsg_GetData(m), (size_t)N.natsMsg_GetDataLength(m), &e);
	if (!j) {
		answer_refusal(c, t, e.msg);
		return;
	}
	snprintf(j->request_id, sizeof j->request_id, "%s", t->request_id);
	snprintf(j->node, sizeof j->node, "%s", c->node);
	if (!j->task_id[0])
		snprintf(j->task_id, sizeof j->task_id, "%.63s", t->request_id);
	/* the scheduler's round robin is per origin node: one node's flood does not starve the rest */
	snprintf(j->client, sizeof j->client, "node:%.57s", t->origin);
	j->claim = claim;
	j->claim_arg = t;
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
		j->queued_us = j->started_us = j->finished_us = cl_wall_ms() * 1000;
		if (pd_store_put(c->store, j, c->node, &e) < 0) {
			j->store_errno = e.code ? e.code : EIO;
			snprintf(j->store_error, sizeof j->store_error, "%s", e.msg);
		}
		task_done(j, t);
		return;
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
}

static void *puller_main(void *arg)
{
	pd_cluster *c = arg;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		while (!c->quiesced && c->ntasks >= c->slots)
			pthread_cond_wait(&c->cv, &c->mu);
		bool q = c->quiesced;
		int free_slots = (int)(c->slots - c->ntasks);
		pthread_mutex_unlock(&c->mu);
		if (q)
			break;
		natsMsgList list = {0};
		jsErrCode je = 0;
		natsStatus s = N.natsSubscription_Fetch(&list, c->work, free_slots, 1000, &je);
		if (s != NATS_OK && s != NATS_TIMEOUT) {
			/* the broker away: libnats reconnects; ask again shortly */
			usleep(200 * 1000);
			continue;
		}
		for (int i = 0; i < list.Count; i++) {
			natsMsg *m = list.Msgs[i];
			list.Msgs[i] = NULL;
			if (m)
				take_task(c, m);
		}
		N.natsMsgList_Destroy(&list);
	}
	return NULL;
}

/* Renews the ack timeout of running tasks, and heartbeats. */
static void *ticker_main(void *arg)
{
	pd_cluster *c = arg;
	uint64_t ack_gap = (uint64_t)c->o.ack_wait_s * 1000 / 3, last_ack = cl_wall_ms();
	pthread_mutex_lock(&c->mu);
	while (!c->quiesced) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
		if (cl_wall_ms() - last_ack >= ack_gap) {
			last_ack = cl_wall_ms();
			for (cl_task *t = c->tasks; t; t = t->next)
				N.natsMsg_InProgress(t->m, NULL);
		}
		if (c->quiesced)
			break;
		pthread_mutex_unlock(&c->mu);
		cl_heartbeat(c);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* ---- start and stop ------------------------------------------------------------------------ */

static int ensure_stream(pd_cluster *c, pd_err *e)
{
	jsStreamConfig sc;
	N.jsStreamConfig_Init(&sc);
	sc.Name = CL_WORK_STREAM;
	const char *subjects[] = {CL_WORK_SUBJECTS};
	sc.Subjects = subjects;
	sc.SubjectsLen = 1;
	sc.Retention = js_WorkQueuePolicy;
	sc.Storage = js_FileStorage;
	sc.Duplicates = (int64_t)c->o.window_s * 1000000000LL;
	jsStreamInfo *si = NULL;
	jsErrCode je = 0;
	natsStatus s = N.js_AddStream(&si, c->js, &sc, NULL, &je);
	if (s != NATS_OK)
		s = N.js_UpdateStream(&si, c->js, &sc, NULL, &je);
	N.jsStreamInfo_Destroy(si);
	if (s != NATS_OK)
		return pd_fail(e, EIO, "cluster: stream %s: %s (JetStream error %d; is the server run with -js?)",
			       CL_WORK_STREAM, cl_status(s), (int)je);
	return 0;
}

static int ensure_bucket(pd_cluster *c, const char *name, int64_t ttl_ns, kvStore **kv, pd_err *e)
{
	kvConfig kc;
	N.kvConfig_Init(&kc);
	kc.Bucket = name;
	kc.History = 1;
	kc.TTL = ttl_ns;
	kc.StorageType = js_FileStorage;
	natsStatus s = N.js_CreateKeyValue(kv, c->js, &kc);
	if (s != NATS_OK)
		s = N.js_KeyValue(kv, c->js, name);
	if (s != NATS_OK)
		return pd_fail(e, EIO, "cluster: bucket %s: %s", name, cl_status(s));
	return 0;
}

static bool id_ok(const char *id)
{
	if (!*id || strlen(id) >= 64)
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_'))
			return false;
	return true;
}

pd_cluster *pd_cluster_start(const pd_cluster_opts *o, pd_sched *sched, pd_pools *pools, pd_ctx *ctx,
			     pd_store *store, pd_err *e)
{
	if (pd_nats_load(e) < 0)
		return NULL;
	pd_cluster *c = calloc(1, sizeof *c);
	if (!c) {
		pd_fail(e, ENOMEM, "cluster");
		return NULL;
	}
	c->o = *o;
	if (!c->o.ack_wait_s)
		c->o.ack_wait_s = 30;
	if (!c->o.max_deliver)
		c->o.max_deliver = 5;
	if (!c->o.window_s)
		c->o.window_s = 600;
	c->slots = c->o.slots ? c->o.slots : 4;
	c->sched = sched;
	c->pools = pools;
	c->ctx = ctx;
	c->store = store;
	c->run_id = pd_ctx_run_id(ctx);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	snprintf(c->urls, sizeof c->urls, "%s", o->urls);
	snprintf(c->address, sizeof c->address, "%s", o->address ? o->address : "");
	if (o->node_id) {
		snprintf(c->node, sizeof c->node, "%s", o->node_id);
	} else {
		char host[64] = "";
		gethostname(host, sizeof host - 1);
		const char *port = strrchr(c->address, ':');
		snprintf(c->node, sizeof c->node, "%.40s-%s", host, port ? port + 1 : "0");
		for (char *p = c->node; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			      *p == '-'))
				*p = '_';
	}
	if (!id_ok(c->node)) {
		pd_fail(e, EINVAL, "node id '%s': 1 to 63 of A-Z a-z 0-9 - _", c->node);
		goto fail;
	}
	natsStatus s = N.natsOptions_Create(&c->nopts);
	if (s == NATS_OK)
		s = N.natsOptions_SetURL(c->nopts, c->urls);
	/* a broker restart is waited out, for ever: queued work stays in the stream meanwhile */
	if (s == NATS_OK)
		s = N.natsOptions_SetMaxReconnect(c->nopts, -1);
	if (s == NATS_OK)
		s = N.natsOptions_SetReconnectWait(c->nopts, 250);
	if (s == NATS_OK)
		s = N.natsOptions_SetTimeout(c->nopts, 2000);
	if (s == NATS_OK)
		s = N.natsOptions_SetPingInterval(c->nopts, 2000);
	if (s == NATS_OK)
		s = N.natsOptions_SetReconnectBufSize(c->nopts, 64 << 20);
	if (s != NATS_OK) {
		pd_fail(e, EINVAL, "cluster %s: %s", c->urls, cl_status(s));
		goto fail;
	}
	if ((s = N.natsConnection_Connect(&c->nc, c->nopts)) != NATS_OK) {
		pd_fail(e, ECONNREFUSED, "cluster: connect to %s: %s", c->urls, cl_status(s));
		goto fail;
	}
	c->max_payload = N.natsConnection_GetMaxPayload(c->nc);
	jsOptions jo;
	N.jsOptions_Init(&jo);
	jo.Wait = 3000;
	if ((s = N.natsConnection_JetStream(&c->js, c->nc, &jo)) != NATS_OK) {
		pd_fail(e, EIO, "cluster: JetStream: %s", cl_status(s));
		goto fail;
	}
	if (ensure_stream(c, e) < 0 ||
	    ensure_bucket(c, CL_RESULTS_BUCKET, (int64_t)c->o.window_s * 1000000000LL, &c->results, e) < 0 ||
	    ensure_bucket(c, CL_NODES_BUCKET, (int64_t)CL_NODE_TTL_S * 1000000000LL, &c->nodes, e) < 0)
		goto fail;
	char subject[128];
	snprintf(subject, sizeof subject, CL_NOTIFY_PREFIX "%s", c->node);
	if ((s = N.natsConnection_Subscribe(&c->notify, c->nc, subject, on_notify, c)) != NATS_OK) {
		pd_fail(e, EIO, "cluster: subscribe %s: %s", subject, cl_status(s));
		goto fail;
	}
	jsSubOptions so;
	N.jsSubOptions_Init(&so);
	so.Stream = CL_WORK_STREAM;
	so.Config.AckPolicy = js_AckExplicit;
	so.Config.AckWait = (int64_t)c->o.ack_wait_s * 1000000000LL;
	/* one delivery beyond the last try: the node that sees it records the failure */
	so.Config.MaxDeliver = (int64_t)c->o.max_deliver + 1;
	so.Config.MaxAckPending = 65536;
	jsErrCode je = 0;
	if ((s = N.js_PullSubscribe(&c->work, c->js, CL_WORK_SUBJECTS, CL_WORK_CONSUMER, NULL, &so, &je)) != NATS_OK) {
		pd_fail(e, EIO, "cluster: consumer %s: %s (JetStream error %d)", CL_WORK_CONSUMER, cl_status(s), (int)je);
		goto fail;
	}
	cl_heartbeat(c);
	for (int i = 0; i < 2; i++)
		c->started[i] = pthread_create(&c->publishers[i], NULL, publisher_main, c) == 0;
	c->started[2] = pthread_create(&c->puller, NULL, puller_main, c) == 0;
	c->started[3] = pthread_create(&c->poller, NULL, poller_main, c) == 0;
	c->started[4] = pthread_create(&c->ticker, NULL, ticker_main, c) == 0;
	for (int i = 0; i < 5; i++)
		if (!c->started[i]) {
			pd_fail(e, EAGAIN, "cluster: threads");
			goto fail;
		}
	pd_log("info", "cluster: joined", PD_LS("node", c->node), PD_LS("servers", c->urls),
	       PD_LU("slots", c->slots), PD_LU("ack_wait_s", c->o.ack_wait_s));
	return c;
fail:
	pd_cluster_quiesce(c);
	pd_cluster_free(c);
	return NULL;
}

const char *pd_cluster_node_id(const pd_cluster *c)
{
	return c->node;
}

void pd_cluster_quiesce(pd_cluster *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->quiesced = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (c->started[2]) {
		pthread_join(c->puller, NULL);
		c->started[2] = false;
	}
	if (c->started[4]) {
		pthread_join(c->ticker, NULL);
		c->started[4] = false;
	}
	/* no more tasks for this node: the consumer's others take the queue */
	if (c->work) {
		N.natsSubscription_Destroy(c->work);
		c->work = NULL;
	}
}

void pd_cluster_free(pd_cluster *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = c->quiesced = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < 5; i++)
		if (c->started[i])
			pthread_join(i < 2 ? c->publishers[i] : i == 2 ? c->puller : i == 3 ? c->poller : c->ticker, NULL);
	/* anything submitted after the publishers left */
	while (c->subq) {
		cl_submit *q = c->subq;
		c->subq = q->next;
		static const char stop[] = "{\"error\":\"shutting down\"}";
		q->cb(q->arg, 503, stop, sizeof stop - 1, 1);
		free(q->body);
		free(q);
	}
	if (c->notify)
		N.natsSubscription_Destroy(c->notify);
	if (c->work)
		N.natsSubscription_Destroy(c->work);
	if (c->results)
		N.kvStore_Destroy(c->results);
	if (c->nodes)
		N.kvStore_Destroy(c->nodes);
	if (c->js)
		N.jsCtx_Destroy(c->js);
	if (c->nc) {
		N.natsConnection_Close(c->nc);
		N.natsConnection_Destroy(c->nc);
	}
	if (c->nopts)
		N.natsOptions_Destroy(c->nopts);
	for (size_t i = 0; i < c->nready; i++)
		free(c->ready[i]);
	free(c->ready);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}
