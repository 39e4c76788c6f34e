/* Cluster mode's internals, shared by the files of server/cluster/:
 *   nats_dl.c   libnats loaded on first use (nats_dl.h says why)
 *   bridge.c    the node: connection, stream and buckets, threads, start and stop; the design
 *   edge.c      the edge: submit, publish with the request id, wait for the answer
 *   executor.c  the executor: pull as slots free, run, record once with the claim, ack, note
 *   nodes.c     liveness: heartbeats into a bucket with a TTL, the node list, session routing,
 *               the node's metrics
 *   httpc.c     the small HTTP client forwarding uses (and paddock run --cluster)
 *   forward.c   session requests for another node, forwarded to it
 * The broker's names (docs/cluster.md lists them) are here, once. */
#ifndef PADDOCK_CLUSTER_H
#define PADDOCK_CLUSTER_H

#include "server.h"
#include "nats_dl.h"

#include <pthread.h>

#define CL_WORK_STREAM "PADDOCK_WORK"
#define CL_WORK_SUBJECTS "paddock.work.>"
#define CL_WORK_CONSUMER "paddock-workers"
#define CL_RESULTS_BUCKET "paddock-results"
#define CL_NODES_BUCKET "paddock-nodes"
#define CL_NOTIFY_PREFIX "paddock.done." /* + the origin node's id: "result ready" for its waiters */
#define CL_HEARTBEAT_MS 1000
#define CL_NODE_TTL_S 5 /* a node unheard of for this long is gone */

typedef struct cl_waiter cl_waiter;
typedef struct cl_task cl_task;
typedef struct cl_submit cl_submit;

struct pd_cluster {
	pd_cluster_opts o;
	char node[64];
	char address[160];
	char urls[1024];
	uint32_t run_id;
	pd_sched *sched;
	pd_pools *pools;
	pd_ctx *ctx;
	pd_store *store;
	natsOptions *nopts;
	natsConnection *nc;
	jsCtx *js;
	kvStore *results, *nodes;
	natsSubscription *work, *notify;
	int64_t max_payload;
	unsigned slots;

	pthread_mutex_t mu;
	pthread_cond_t cv;      /* submissions queued, slots freed, results ready, stopping */
	bool quiesced, stopping;
	cl_submit *subq, *subq_tail;
	cl_waiter *waiters; /* requests this node's clients wait for */
	unsigned nwaiting;
	char **ready; /* "ready" notes (malloc'd), for the poller */
	size_t nready, ready_cap;
	cl_task *tasks; /* pulled and not yet acked */
	unsigned ntasks;
	pthread_t publishers[2], puller, poller, ticker;
	bool started[5];

	/* figures (mu) */
	uint64_t submitted, published, dup_published, dup_answered, publish_failures;
	uint64_t pulled, redelivered, exhausted, recorded, already_recorded, naks, answered, results_too_big;
};

/* The results bucket's key of a request id: the id's bytes a key may hold as they are, others
 * (and '=') as =XX: one key per id, never two ids on one key. */
void cl_result_key(const char *request_id, char *key, size_t len);
/* A status's text, for logs and errors. */
const char *cl_status(natsStatus s);
uint64_t cl_wall_ms(void);

/* edge.c */
/* The stored answer of a request id: 1 (and *val, malloc'd), 0 none, -1 the broker did not say. */
int cl_result_get(pd_cluster *c, const char *request_id, char **val, size_t *len);
void *cl_publisher_main(void *arg);
void *cl_poller_main(void *arg);
void cl_on_notify(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *arg);
/* Answers what was submitted and not yet published (503: shutting down). */
void cl_edge_drain(pd_cluster *c);

/* executor.c */
void *cl_puller_main(void *arg);
void *cl_ticker_main(void *arg);

/* nodes.c */
void cl_heartbeat(pd_cluster *c);

#endif
