/* Cluster mode's edge (bridge.c says how the parts fit): a run request is published to the work
 * stream under its request id and waits for its answer, which comes with a "ready" note from the
 * node that ran it, or is read from the results bucket (a retry, a lost note). */
#define _GNU_SOURCE
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N pd_nats

#define HEADROOM 4096
#define PUBLISH_GIVE_UP_MS 30000
#define ACK_WAIT_MS 5000 /* an asynchronous publish's ack, before it is tried again */
#define POLL_FIRST_MS 1000
#define POLL_MAX_MS 8000

/* A publish to try again (publish_later). */
struct cl_submit {
	char subject[300];
	char kind[16];
	char request_id[128];
	char *body;
	size_t len;
	cl_submit *next;
};

struct cl_waiter {
	char request_id[128];
	pd_cluster_answer cb;
	void *arg;
	uint64_t next_poll_ms, poll_gap_ms;
	/* its publish, until the broker acks it (libnats holds it meanwhile; only compared, never
	 * read): one unacked for ACK_WAIT_MS is taken back and published again (reclaim) */
	const natsMsg *pub;
	uint64_t pub_ms;
	cl_waiter *next;
};

/* ---- answers ------------------------------------------------------------------------------- */

/* The answer a result value holds: {"status", "node", "token", "body"}, or, for a result larger
 * than the broker carries, {"status", "node", "token", "ref"}: then fetched from the node that
 * has it (an HTTP round trip: never on a libnats thread, which the executor's bare note for a
 * reference ensures). */
static void answer_from_value(pd_cluster *c, const char *val, size_t len, pd_cluster_answer cb, void *arg)
{
	json_t *v = json_loadb(val, len, 0, NULL);
	json_t *ref = v ? json_object_get(v, "ref") : NULL;
	if (json_is_object(ref)) {
		char *whole = NULL;
		size_t wlen = 0;
		cl_ref_fetch(c, ref, json_string_value(json_object_get(v, "node")),
			     json_string_value(json_object_get(v, "token")) ? json_string_value(json_object_get(v, "token")) : "",
			     (int)json_integer_value(json_object_get(v, "status")), &whole, &wlen);
		json_decref(v);
		v = whole ? json_loadb(whole, wlen, 0, NULL) : NULL;
		free(whole);
	}
	json_t *b = v ? json_object_get(v, "body") : NULL;
	char *text = b ? pd_json_dumps(b, JSON_COMPACT) : NULL;
	if (!text) {
		static const char bad[] = "{\"error\":\"the cluster's result for this request is unreadable\"}";
		cb(arg, 502, bad, sizeof bad - 1, 0);
	} else {
		cb(arg, (int)json_integer_value(json_object_get(v, "status")), text, strlen(text), 0);
	}
	free(text);
	json_decref(v);
}

/* Takes every waiter of request_id off the list (answered: counted as answered). */
static cl_waiter *take_waiters(pd_cluster *c, const char *request_id, bool answered)
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
			c->answered += answered;
		} else {
			pp = &w->next;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return mine;
}

/* Answers every waiter of request_id with the result value val (taken). */
static void deliver_value(pd_cluster *c, const char *request_id, char *val, size_t len)
{
	cl_waiter *mine = take_waiters(c, request_id, true);
	while (mine) {
		cl_waiter *w = mine;
		mine = w->next;
		answer_from_value(c, val, len, w->cb, w->arg);
		free(w);
	}
	free(val);
}

/* Answers every waiter of request_id from its stored result, if there is one now. */
static void deliver(pd_cluster *c, const char *request_id)
{
	char *val = NULL;
	size_t len = 0;
	if (cl_result_get(c, request_id, &val, &len) == 1)
		deliver_value(c, request_id, val, len);
}

/* ---- the edge: submit, publish, wait ------------------------------------------------------- */

/* The work subject of a request: paddock.work.<kind>.<template>, so that the template's consumer
 * takes it and only a node that has the template pulls it. */
static void work_subject(const char *kind, const char *template_name, char *subject, size_t len)
{
	char tok[200];
	cl_template_token(template_name, tok, sizeof tok);
	if (!tok[0])
		snprintf(tok, sizeof tok, "_");
	snprintf(subject, len, "paddock.work.%s.%s", kind, tok);
}

static natsStatus work_msg(pd_cluster *c, const char *subject, const char *kind, const char *request_id,
			   const char *body, size_t len, natsMsg **m)
{
	*m = NULL;
	natsStatus s = N.natsMsg_Create(m, subject, NULL, body, (int)len);
	if (s == NATS_OK)
		s = N.natsMsgHeader_Set(*m, "Paddock-Kind", kind);
	if (s == NATS_OK)
		s = N.natsMsgHeader_Set(*m, "Paddock-Origin", c->node);
	if (s == NATS_OK)
		s = N.natsMsgHeader_Set(*m, "Paddock-Request-Id", request_id);
	return s;
}

/* A publish the broker did not take at once (its reply timed out, the connection is down): to
 * the publisher threads, which try again until the broker takes it or give up. Under no lock. */
static void publish_later(pd_cluster *c, const char *subject, const char *kind, const char *request_id,
			  const char *body, size_t len)
{
	cl_submit *q = calloc(1, sizeof *q);
	if (q)
		q->body = malloc(len + 1);
	if (!q || !q->body) {
		free(q);
		return; /* the waiter's later looks find nothing, and the stop answers it */
	}
	if (len)
		memcpy(q->body, body, len);
	q->body[len] = 0;
	q->len = len;
	snprintf(q->subject, sizeof q->subject, "%s", subject);
	snprintf(q->kind, sizeof q->kind, "%s", kind);
	snprintf(q->request_id, sizeof q->request_id, "%s", request_id);
	pthread_mutex_lock(&c->mu);
	if (c->subq_tail)
		c->subq_tail->next = q;
	else
		c->subq = q;
	c->subq_tail = q;
	pthread_cond_signal(&c->sub_cv);
	pthread_mutex_unlock(&c->mu);
}

/* The publish is done (the broker's ack counted, a give-up answered): one publish in flight
 * fewer, which the stop waits for. */
static void publish_settled(pd_cluster *c)
{
	pthread_mutex_lock(&c->mu);
	if (--c->pub_inflight == 0)
		pthread_cond_broadcast(&c->pub_cv);
	pthread_mutex_unlock(&c->mu);
}

/* A note for the poller: request_id's answer is (or may be) in the results bucket. Under mu. */
static void ready_push(pd_cluster *c, char *id)
{
	if (c->nready == c->ready_cap) {
		size_t cap = c->ready_cap ? c->ready_cap * 2 : 256;
		void *p = realloc(c->ready, cap * sizeof *c->ready);
		if (p) {
			c->ready = p;
			c->ready_cap = cap;
		}
	}
	if (c->nready < c->ready_cap) {
		c->ready[c->nready++] = id;
		pthread_cond_signal(&c->ready_cv);
	} else {
		free(id); /* no memory to keep it: the poller's later look finds the result */
	}
}

/* The waiter whose publish m was is told it was acked (or taken back). Under mu. */
static void unmark_pub(pd_cluster *c, const natsMsg *m)
{
	for (cl_waiter *w = c->waiters; w; w = w->next)
		if (w->pub == m) {
			w->pub = NULL;
			return;
		}
}

/* Publishes from the submitting thread without waiting for the broker: the request's waiter is
 * registered first (its answer may come before the broker's ack), and the ack comes to
 * cl_on_pub_ack. The synchronous publish this replaces held a publisher thread for a round trip
 * per request and cost two thread hand-offs (to the publisher and back from libnats). */
void pd_cluster_submit(pd_cluster *c, const char *kind, const char *template_name, const char *body, size_t len,
		       const char *request_id, pd_cluster_answer cb, void *arg)
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
	cl_waiter *w = calloc(1, sizeof *w);
	if (!w) {
		static const char oom[] = "{\"error\":\"out of memory\"}";
		cb(arg, 503, oom, sizeof oom - 1, 1);
		return;
	}
	snprintf(w->request_id, sizeof w->request_id, "%s", request_id);
	w->cb = cb;
	w->arg = arg;
	w->poll_gap_ms = POLL_FIRST_MS;
	w->next_poll_ms = pd_wall_us() / 1000 + POLL_FIRST_MS;
	char subject[300];
	work_subject(kind, template_name, subject, sizeof subject);
	natsMsg *m = NULL;
	natsStatus s = work_msg(c, subject, kind, request_id, body, len, &m);
	w->pub = s == NATS_OK ? m : NULL;
	w->pub_ms = pd_now_us() / 1000;
	pthread_mutex_lock(&c->mu);
	if (c->stopping) {
		pthread_mutex_unlock(&c->mu);
		N.natsMsg_Destroy(m);
		free(w);
		static const char stop[] = "{\"error\":\"shutting down\"}";
		cb(arg, 503, stop, sizeof stop - 1, 1);
		return;
	}
	c->submitted++;
	c->pub_inflight++;
	w->next = c->waiters;
	c->waiters = w;
	c->nwaiting++;
	if (!c->poll_due || w->next_poll_ms < c->poll_due) {
		/* the poller sleeps until its next due look: this one is sooner */
		c->poll_due = w->next_poll_ms;
		pthread_cond_signal(&c->ready_cv);
	}
	pthread_mutex_unlock(&c->mu);
	if (s == NATS_OK) {
		/* no MaxWait: libnats' timeout of an asynchronous publish is a timer reset for each
		 * publish and, for every one (acked or not), a made-up "timeout" message at its
		 * deadline, handed to the ack thread and freed by the collector: wake-ups a request.
		 * The poller looks for the unacked itself (reclaim). */
		jsPubOptions po;
		N.jsPubOptions_Init(&po);
		po.MsgId = request_id;
		s = N.js_PublishMsgAsync(c->js, &m, &po);
	}
	if (s != NATS_OK) {
		pthread_mutex_lock(&c->mu);
		c->publish_failures++;
		if (m)
			unmark_pub(c, m); /* (w itself may be answered and gone by now) */
		pthread_mutex_unlock(&c->mu);
		N.natsMsg_Destroy(m); /* NULL when libnats took it */
		publish_later(c, subject, kind, request_id, body, len);
		publish_settled(c);
	}
}

/* The broker's ack of an asynchronous publish, or its failure (a libnats thread). A duplicate
 * (a retry of an id the stream knows, through any node) is answered from the bucket by the
 * poller: a read this thread should not wait for. A failure is tried again by the publisher
 * threads. */
void cl_on_pub_ack(jsCtx *js, natsMsg *m, jsPubAck *pa, jsPubAckErr *pae, void *arg)
{
	(void)js;
	pd_cluster *c = arg;
	/* the request id only when it is needed (a duplicate, a failure): its lookup parses the
	 * message's headers, which the usual ack does not need */
	const char *rid = NULL;
	if ((!pa || pa->Duplicate) && N.natsMsgHeader_Get(m, "Paddock-Request-Id", &rid) != NATS_OK)
		rid = NULL;
	char *id = pa && pa->Duplicate && rid ? strdup(rid) : NULL;
	pthread_mutex_lock(&c->mu);
	bool stopping = c->stopping;
	if (pa && pa->Duplicate) {
		c->dup_published++;
		c->dup_answered++;
		if (id)
			ready_push(c, id);
	} else if (pa) {
		c->published++;
	} else {
		c->publish_failures++;
	}
	unmark_pub(c, m);
	bool retry = !pa && rid && !stopping;
	if (!retry && --c->pub_inflight == 0)
		pthread_cond_broadcast(&c->pub_cv); /* publish_settled, under the same lock */
	pthread_mutex_unlock(&c->mu);
	if (retry) {
		const char *kind = NULL;
		if (N.natsMsgHeader_Get(m, "Paddock-Kind", &kind) != NATS_OK || !kind)
			kind = "native";
		pd_log("info", "cluster: publish not acked, trying again", PD_LS("request_id", rid),
		       PD_LS("error", pae ? cl_status(pae->Err) : "no ack"));
		publish_later(c, N.natsMsg_GetSubject(m), kind, rid, N.natsMsg_GetData(m),
			      (size_t)N.natsMsg_GetDataLength(m));
		publish_settled(c);
	}
	cl_msg_drop(c, m);
}

/* Answers every waiter of request_id with a failure to publish. */
static void fail_waiters(pd_cluster *c, const char *request_id)
{
	cl_waiter *mine = take_waiters(c, request_id, false);
	while (mine) {
		cl_waiter *w = mine;
		mine = w->next;
		static const char down[] = "{\"error\":\"the cluster's broker did not take the request: retry later\"}";
		w->cb(w->arg, 503, down, sizeof down - 1, 5);
		free(w);
	}
}

/* Publishes until the broker takes it (a broker restart is waited out) or gives up: 1 published,
 * 2 a duplicate the stream's window absorbed, 0 not published. No look at the results bucket
 * first: the message id does the duplicate check in the same round trip. */
static int publish(pd_cluster *c, const cl_submit *q)
{
	uint64_t until = pd_now_us() / 1000 + PUBLISH_GIVE_UP_MS;
	for (;;) {
		natsMsg *m = NULL;
		natsStatus s = work_msg(c, q->subject, q->kind, q->request_id, q->body, q->len, &m);
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
		if (stop || pd_now_us() / 1000 >= until) {
			pd_log("warn", "cluster: work not published", PD_LS("request_id", q->request_id),
			       PD_LS("error", cl_status(s)));
			return 0;
		}
		/* the broker is away (restarting): libnats reconnects meanwhile */
		usleep(250 * 1000);
	}
}

/* The publishes the broker did not ack at once, tried again (synchronously: rare, and a broker
 * that is away is waited out here, not on the submitting threads). */
void *cl_publisher_main(void *arg)
{
	pd_cluster *c = arg;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		cl_submit *q = c->subq;
		if (!q) {
			if (c->stopping)
				break;
			pthread_cond_wait(&c->sub_cv, &c->mu);
			continue;
		}
		c->subq = q->next;
		if (!c->subq)
			c->subq_tail = NULL;
		pthread_mutex_unlock(&c->mu);
		int pub = publish(c, q);
		if (pub == 2) {
			/* the stream knew the id (the first try took after all, or a retry through
			 * another node): its result may be there already; if not, the poller looks */
			pthread_mutex_lock(&c->mu);
			c->dup_answered++;
			pthread_mutex_unlock(&c->mu);
			deliver(c, q->request_id);
		} else if (!pub) {
			fail_waiters(c, q->request_id);
		}
		free(q->body);
		free(q);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* "ready" notes for this node's waiters (a libnats thread). A note that carries the answer
 * ("ID\nVALUE", the usual case) is answered here: no round trip, and one thread hand-off fewer
 * per request than through the poller (hand-offs were most of a cluster request's CPU, perf).
 * A bare "ID" needs a read of the bucket, which this thread should not wait for: it goes to the
 * poller. */
void cl_deliver_local(pd_cluster *c, const char *request_id, int status, const char *body, size_t len)
{
	cl_waiter *mine = take_waiters(c, request_id, true);
	pthread_mutex_lock(&c->mu);
	c->notes_local++;
	pthread_mutex_unlock(&c->mu);
	/* the body as the executor made it: not the value parsed again and its body dumped again */
	while (mine) {
		cl_waiter *w = mine;
		mine = w->next;
		w->cb(w->arg, status, body, len, 0);
		free(w);
	}
}

void cl_on_notify(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *arg)
{
	(void)nc;
	(void)sub;
	pd_cluster *c = arg;
	int n = N.natsMsg_GetDataLength(m);
	const char *data = N.natsMsg_GetData(m);
	const char *nl = n > 0 ? memchr(data, '\n', (size_t)n) : NULL;
	if (nl && (size_t)(nl - data) < 128) {
		char id[128];
		memcpy(id, data, (size_t)(nl - data));
		id[nl - data] = 0;
		size_t vlen = (size_t)n - (size_t)(nl - data) - 1;
		char *val = malloc(vlen + 1);
		if (val) {
			memcpy(val, nl + 1, vlen);
			val[vlen] = 0;
			deliver_value(c, id, val, vlen);
			cl_msg_drop(c, m);
			return;
		}
	}
	char *note = n > 0 ? malloc((size_t)n + 1) : NULL;
	if (note) {
		memcpy(note, data, (size_t)n);
		note[n] = 0;
		if ((nl = strchr(note, '\n')))
			*(char *)nl = 0; /* no memory for the value: the poller reads the bucket */
		pthread_mutex_lock(&c->mu);
		ready_push(c, note);
		pthread_mutex_unlock(&c->mu);
	}
	cl_msg_drop(c, m);
}

/* Publishes the broker has not acked for ACK_WAIT_MS (the connection lost with them, a broker
 * that restarted before storing them): every publish libnats still holds is taken back and
 * published again by the publisher threads, as a publish's timeout did (the message id makes a
 * copy the stream has already a duplicate, answered from the bucket). A publish acked meanwhile
 * is not in the list: libnats hands each either to cl_on_pub_ack or to this. */
void cl_edge_reclaim(pd_cluster *c)
{
	natsMsgList l = {0};
	if (N.js_PublishAsyncGetPendingList(&l, c->js) != NATS_OK)
		return;
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < l.Count; i++)
		unmark_pub(c, l.Msgs[i]);
	c->publish_failures += (uint64_t)l.Count;
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < l.Count; i++) {
		natsMsg *m = l.Msgs[i];
		const char *rid = NULL, *kind = NULL;
		if (N.natsMsgHeader_Get(m, "Paddock-Request-Id", &rid) == NATS_OK && rid) {
			if (N.natsMsgHeader_Get(m, "Paddock-Kind", &kind) != NATS_OK || !kind)
				kind = "native";
			pd_log("info", "cluster: publish not acked, trying again", PD_LS("request_id", rid),
			       PD_LS("error", "no ack"));
			publish_later(c, N.natsMsg_GetSubject(m), kind, rid, N.natsMsg_GetData(m),
				      (size_t)N.natsMsg_GetDataLength(m));
		}
		publish_settled(c);
	}
	N.natsMsgList_Destroy(&l);
}

/* Answers the waiters whose results were announced, and looks again for those that waited long
 * (a note lost while the broker restarted, or a request another node published first). */
void *cl_poller_main(void *arg)
{
	pd_cluster *c = arg;
	char **batch = NULL;
	size_t cap = 0;
	pthread_mutex_lock(&c->mu);
	while (!(c->stopping && !c->waiters)) {
		/* asleep until a note comes or a look is due: no ticks while nothing waits */
		if (!c->nready && !c->stopping) {
			if (!c->poll_due) {
				pthread_cond_wait(&c->ready_cv, &c->mu);
			} else if (c->poll_due > pd_wall_us() / 1000) {
				struct timespec ts = {.tv_sec = (time_t)(c->poll_due / 1000),
						      .tv_nsec = (long)(c->poll_due % 1000) * 1000000L};
				pthread_cond_timedwait(&c->ready_cv, &c->mu, &ts);
			}
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
		/* (nothing ready: batch and ready may both still be NULL, which memcpy may not be given) */
		if (n) {
			memcpy(batch, c->ready, n * sizeof *batch);
			memmove(c->ready, c->ready + n, (c->nready - n) * sizeof *c->ready);
			c->nready -= n;
		}
		/* due looks, at most 64 a round so announced results are not kept behind them */
		char due[64][128];
		size_t ndue = 0;
		uint64_t now = pd_wall_us() / 1000, mono = pd_now_us() / 1000;
		uint64_t next_due = 0;
		bool reclaim = false;
		for (cl_waiter *w = c->waiters; w; w = w->next) {
			if (w->pub && mono - w->pub_ms >= ACK_WAIT_MS)
				reclaim = true;
			if (w->next_poll_ms <= now && ndue < 64) {
				snprintf(due[ndue++], 128, "%s", w->request_id);
				w->poll_gap_ms = w->poll_gap_ms * 2 > POLL_MAX_MS ? POLL_MAX_MS : w->poll_gap_ms * 2;
				w->next_poll_ms = now + w->poll_gap_ms;
			}
			if (!next_due || w->next_poll_ms < next_due)
				next_due = w->next_poll_ms;
		}
		c->poll_due = next_due;
		bool stopping = c->stopping;
		pthread_mutex_unlock(&c->mu);
		for (size_t i = 0; i < n; i++) {
			deliver(c, batch[i]);
			free(batch[i]);
		}
		for (size_t i = 0; i < ndue; i++)
			deliver(c, due[i]);
		if (reclaim && !stopping)
			cl_edge_reclaim(c);
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

void cl_edge_drain(pd_cluster *c)
{
	/* their waiters were answered when the poller stopped */
	while (c->subq) {
		cl_submit *q = c->subq;
		c->subq = q->next;
		free(q->body);
		free(q);
	}
}

