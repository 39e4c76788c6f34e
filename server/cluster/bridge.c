/* A node of a paddock cluster on NATS JetStream (docs/cluster.md is the user's account).
 *
 * The edge: a run request (native, /run_code, Piston, a judge request) is published to the work-queue stream
 * PADDOCK_WORK with its request id as the message id, so the stream's duplicate window absorbs a
 * client's retries; the request waits for its result in the bucket paddock-results, keyed by the
 * request id. A result already there (a retry, through any node) is answered at once.
 *
 * The executor: every node pulls from one durable pull consumer per template it has (shared by
 * the nodes that have it), only as many tasks as it has free slots, runs each through its own scheduler and pools, and acks only after the record is
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

/* Wakes every cluster thread (quiesce, stop); under c->mu. */
static void cl_wake_all(pd_cluster *c)
{
	pthread_cond_broadcast(&c->sub_cv);
	pthread_cond_broadcast(&c->slot_cv);
	pthread_cond_broadcast(&c->ready_cv);
	pthread_cond_broadcast(&c->tick_cv);
	pthread_cond_broadcast(&c->rec_cv);
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
		return pd_fail_as(e, EIO, "cluster: stream %s: %s (JetStream error %d; is the server run with -js?)",
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
		return pd_fail_as(e, EIO, "cluster: bucket %s: %s", name, cl_status(s));
	return 0;
}

/* A durable pull consumer per template this node has (filter paddock.work.*.<template>), shared
 * by every node that has it: a node pulls only work it can run, and work for a template no live
 * node has waits in the stream (it is not taken and failed by a node that lacks it). */
static int start_consumers(pd_cluster *c, pd_err *e)
{
	size_t n = 0;
	pd_pool_stats *st = pd_pools_stats(c->pools, &n);
	c->consumers = calloc(n ? n : 1, sizeof *c->consumers);
	if (!c->consumers) {
		free(st);
		return pd_fail(e, ENOMEM, "cluster: consumers");
	}
	int rc = 0;
	for (size_t i = 0; st && i < n && rc == 0; i++) {
		if (!st[i].available)
			continue; /* its dependency is missing here: another node runs it */
		cl_consumer *k = &c->consumers[c->nconsumers];
		k->c = c;
		snprintf(k->template_name, sizeof k->template_name, "%s", st[i].template_name);
		char ttok[200], name[260], filter[300];
		cl_template_token(k->template_name, ttok, sizeof ttok);
		if (!ttok[0])
			snprintf(ttok, sizeof ttok, "_");
		snprintf(name, sizeof name, CL_WORK_CONSUMER_PREFIX "%s", ttok);
		snprintf(filter, sizeof filter, "paddock.work.*.%s", ttok);
		jsSubOptions so;
		N.jsSubOptions_Init(&so);
		so.Stream = CL_WORK_STREAM;
		so.Config.AckPolicy = js_AckExplicit;
		so.Config.AckWait = (int64_t)c->o.ack_wait_s * 1000000000LL;
		/* one delivery beyond the last try: the node that sees it records the failure */
		so.Config.MaxDeliver = (int64_t)c->o.max_deliver + 1;
		so.Config.MaxAckPending = 65536;
		jsErrCode je = 0;
		natsStatus s = N.js_PullSubscribe(&k->sub, c->js, filter, name, NULL, &so, &je);
		if (s != NATS_OK) {
			/* the consumer exists with another configuration (an ack wait of an older
			 * default, say): every node of a cluster gives the same, so it is brought to
			 * this node's and bound again */
			jsConsumerConfig cc = so.Config;
			cc.Durable = name;
			cc.FilterSubject = filter;
			jsConsumerInfo *ci = NULL;
			je = 0;
			if (N.js_UpdateConsumer(&ci, c->js, CL_WORK_STREAM, &cc, NULL, &je) == NATS_OK)
				s = N.js_PullSubscribe(&k->sub, c->js, filter, name, NULL, &so, &je);
			N.jsConsumerInfo_Destroy(ci);
		}
		if (s != NATS_OK)
			rc = pd_fail_as(e, EIO, "cluster: consumer %s: %s (JetStream error %d)", name, cl_status(s), (int)je);
		else
			c->nconsumers++;
	}
	free(st);
	return rc;
}

bool pd_cluster_id_ok(const char *id)
{
	size_t n = strlen(id);
	if (!n || n >= 64 || id[0] == '.' || id[n - 1] == '.' || strstr(id, ".."))
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_' || *p == '.'))
			return false;
	return true;
}

/* The connection to the broker and the two JetStream contexts (the work's, the recorder's). */
static int connect_broker(pd_cluster *c, pd_err *e)
{
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
	/* acks and "ready" notes written by the thread that makes them, not handed to libnats'
	 * flusher thread: one wake-up fewer for each, and the origin hears of its answer sooner */
	if (s == NATS_OK)
		s = N.natsOptions_SetSendAsap(c->nopts, true);
	if (s != NATS_OK)
		return pd_fail_as(e, EINVAL, "--cluster %s: %s", c->urls, cl_status(s));
	if ((s = N.natsConnection_Connect(&c->nc, c->nopts)) != NATS_OK)
		return pd_fail_as(e, ECONNREFUSED, "cluster: connect to %s: %s", c->urls, cl_status(s));
	c->max_payload = N.natsConnection_GetMaxPayload(c->nc);
	jsOptions jo;
	N.jsOptions_Init(&jo);
	jo.Wait = 3000;
	/* work is published without waiting (edge.c): the broker's acks come to cl_on_pub_ack */
	jo.PublishAsync.AckHandler = cl_on_pub_ack;
	jo.PublishAsync.AckHandlerClosure = c;
	jo.PublishAsync.MaxPending = 65536;
	if ((s = N.natsConnection_JetStream(&c->js, c->nc, &jo)) != NATS_OK)
		return pd_fail_as(e, EIO, "cluster: JetStream: %s", cl_status(s));
	/* the recorder's own context: its publishes' acks are counted apart from the work's */
	N.jsOptions_Init(&jo);
	jo.Wait = 3000;
	jo.PublishAsync.AckHandler = cl_on_record_ack;
	jo.PublishAsync.AckHandlerClosure = c;
	jo.PublishAsync.MaxPending = 4096;
	if ((s = N.natsConnection_JetStream(&c->rjs, c->nc, &jo)) != NATS_OK)
		return pd_fail_as(e, EIO, "cluster: JetStream: %s", cl_status(s));
	return 0;
}

/* The node's first heartbeat, then its threads: publishers, poller, ticker, leaser, recorder,
 * and a puller per template consumer. */
static int start_threads(pd_cluster *c, pd_err *e)
{
	cl_heartbeat(c);
	for (int i = 0; i < 2; i++)
		c->started[i] = pthread_create(&c->publishers[i], NULL, cl_publisher_main, c) == 0;
	c->started[2] = pthread_create(&c->poller, NULL, cl_poller_main, c) == 0;
	c->started[3] = pthread_create(&c->ticker, NULL, cl_ticker_main, c) == 0;
	c->started[4] = pthread_create(&c->leaser, NULL, cl_leaser_main, c) == 0;
	c->started[5] = !c->store || pthread_create(&c->recorder, NULL, cl_recorder_main, c) == 0;
	for (int i = 0; i < 6; i++)
		if (!c->started[i])
			return pd_fail(e, EAGAIN, "cluster: threads");
	for (size_t i = 0; i < c->nconsumers; i++) {
		cl_consumer *k = &c->consumers[i];
		if (!(k->started = pthread_create(&k->thread, NULL, cl_puller_main, k) == 0))
			return pd_fail(e, EAGAIN, "cluster: threads");
	}
	return 0;
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
		c->o.ack_wait_s = 5;
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
	pthread_mutex_init(&c->drop_mu, NULL);
	pthread_mutex_init(&c->claim_mu, NULL);
	pthread_cond_init(&c->sub_cv, NULL);
	pthread_cond_init(&c->slot_cv, NULL);
	pthread_cond_init(&c->ready_cv, NULL);
	pthread_cond_init(&c->tick_cv, NULL);
	pthread_cond_init(&c->pub_cv, NULL);
	pthread_cond_init(&c->rec_cv, NULL);
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
	if (!pd_cluster_id_ok(c->node)) {
		/* as pd_server_check says it (a made-up id is made of these already) */
		pd_fail_as(e, EINVAL, "--node-id '%s': " PD_CLUSTER_ID_RULE, c->node);
		goto fail;
	}
	if (connect_broker(c, e) < 0)
		goto fail;
	if (ensure_stream(c, e) < 0 ||
	    ensure_bucket(c, CL_RESULTS_BUCKET, (int64_t)c->o.window_s * 1000000000LL, &c->results, e) < 0 ||
	    ensure_bucket(c, CL_NODES_BUCKET, (int64_t)CL_NODE_TTL_S * 1000000000LL, &c->nodes, e) < 0 ||
	    cl_records_stream(c, e) < 0 || cl_objects_stream(c, e) < 0)
		goto fail;
	char subject[128];
	snprintf(subject, sizeof subject, CL_NOTIFY_PREFIX "%s", c->node);
	natsStatus s = N.natsConnection_Subscribe(&c->notify, c->nc, subject, cl_on_notify, c);
	if (s != NATS_OK) {
		pd_fail_as(e, EIO, "cluster: subscribe %s: %s", subject, cl_status(s));
		goto fail;
	}
	/* a stage a kill left must be settled before this node can be handed the task again (its
	 * unique key would answer "recorded already" for rows that may be about to go) */
	if (c->store && cl_settle_staged(c, e) < 0)
		goto fail;
	/* the outbox after the stage is settled: a row the settling took out was never final */
	if (c->store && (c->rec_mark = pd_store_outbox_mark(c->store, e)) < 0)
		goto fail;
	if (cl_claims_start(c, e) < 0 || start_consumers(c, e) < 0)
		goto fail;
	if (start_threads(c, e) < 0)
		goto fail;
	pd_log("info", "cluster: joined", PD_LS("node", c->node), PD_LS("servers", c->urls),
	       PD_LU("slots", c->slots), PD_LU("templates", c->nconsumers), PD_LU("ack_wait_s", c->o.ack_wait_s));
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
	cl_wake_all(c);
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; i < c->nconsumers; i++)
		if (c->consumers[i].started) {
			pthread_join(c->consumers[i].thread, NULL);
			c->consumers[i].started = false;
		}
	if (c->started[3]) {
		pthread_join(c->ticker, NULL);
		c->started[3] = false;
	}
	/* no more tasks for this node: the consumers' other nodes take the queue */
	for (size_t i = 0; i < c->nconsumers; i++)
		if (c->consumers[i].sub) {
			N.natsSubscription_Destroy(c->consumers[i].sub);
			c->consumers[i].sub = NULL;
		}
}

void pd_cluster_stop(pd_cluster *c)
{
	if (!c || c->stopped)
		return;
	c->stopped = true;
	pthread_mutex_lock(&c->mu);
	c->stopping = c->quiesced = true;
	cl_wake_all(c);
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; i < c->nconsumers; i++)
		if (c->consumers[i].started)
			pthread_join(c->consumers[i].thread, NULL);
	for (int i = 0; i < 5; i++)
		if (c->started[i])
			pthread_join(i < 2 ? c->publishers[i] : i == 2 ? c->poller : i == 3 ? c->ticker : c->leaser, NULL);
	if (c->started[5] && c->store)
		pthread_join(c->recorder, NULL);
	/* every asynchronous publish is acked or taken back (cl_edge_reclaim): none may call
	 * cl_on_pub_ack once c is freed (the connection is closed below before that) */
	pthread_mutex_lock(&c->mu);
	uint64_t start = pd_now_us() / 1000, until = start + 10000;
	bool reclaimed = false;
	while (c->pub_inflight && pd_now_us() / 1000 < until) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&c->pub_cv, &c->mu, &ts);
		if (c->pub_inflight && !reclaimed && pd_now_us() / 1000 - start >= 5000) {
			/* no ack in 5 s (publishes carry no timeout of libnats'): given up as a
			 * publish's timeout did; their waiters were answered when the poller stopped */
			reclaimed = true;
			pthread_mutex_unlock(&c->mu);
			cl_edge_reclaim(c);
			pthread_mutex_lock(&c->mu);
		}
	}
	unsigned left = c->pub_inflight;
	pthread_mutex_unlock(&c->mu);
	if (left)
		pd_log("warn", "cluster: publishes still unacked at the stop", PD_LU("publishes", left));
	/* anything queued to be published again after the publishers left */
	cl_edge_drain(c);
	/* no note may reach on_notify once c is freed: unsubscribed, and the connection closed
	 * (which ends its deliveries) before anything of c goes */
	if (c->notify)
		N.natsSubscription_Unsubscribe(c->notify);
	if (c->nc)
		N.natsConnection_Close(c->nc);
}

/* The memory goes only here, once nothing can call in: the server calls this after libmicrohttpd
 * stopped, since its event thread reads s->cluster for every run, judge and /metrics request and a
 * keep-alive connection may still send one while the daemon stops (pd_cluster_submit then answers
 * "shutting down", pd_cluster_metrics reads figures under the lock). */
void pd_cluster_free(pd_cluster *c)
{
	if (!c)
		return;
	pd_cluster_stop(c);
	if (c->notify)
		N.natsSubscription_Destroy(c->notify);
	if (c->claim_sub)
		N.natsSubscription_Destroy(c->claim_sub);
	for (size_t i = 0; i < c->nconsumers; i++)
		if (c->consumers[i].sub)
			N.natsSubscription_Destroy(c->consumers[i].sub);
	free(c->consumers);
	cl_objects_free(c);
	if (c->results)
		N.kvStore_Destroy(c->results);
	if (c->nodes)
		N.kvStore_Destroy(c->nodes);
	if (c->js)
		N.jsCtx_Destroy(c->js);
	if (c->rjs)
		N.jsCtx_Destroy(c->rjs);
	if (c->nc)
		N.natsConnection_Destroy(c->nc);
	if (c->nopts)
		N.natsOptions_Destroy(c->nopts);
	for (size_t i = 0; i < c->nready; i++)
		free(c->ready[i]);
	free(c->ready);
	cl_sessions_free(c);
	cl_msg_flush(c); /* last: a handler the connection's end called may have added some */
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->drop_mu);
	pthread_mutex_destroy(&c->claim_mu);
	pthread_cond_destroy(&c->sub_cv);
	pthread_cond_destroy(&c->slot_cv);
	pthread_cond_destroy(&c->ready_cv);
	pthread_cond_destroy(&c->tick_cv);
	pthread_cond_destroy(&c->pub_cv);
	pthread_cond_destroy(&c->rec_cv);
	free(c);
}
