/* Cluster mode's internals, shared by the files of server/cluster/:
 *   nats_dl.c   libnats loaded on first use (nats_dl.h says why)
 *   bridge.c    the node: connection, stream and buckets, threads, start and stop; the design
 *   edge.c      the edge: submit, publish with the request id, wait for the answer
 *   executor.c  the executor: pull as slots free, run, record once with the claim, ack, note
 *   nodes.c     liveness: heartbeats into a bucket with a TTL, the node list, session routing,
 *               the node's metrics
 *   httpc.c     the small HTTP client forwarding uses (and paddock run --cluster)
 *   forward.c   session requests for another node, forwarded to it
 *   records.c   the shared record store: the outbox published to a stream, reads from it; a
 *               run's whole output beyond its record
 *   objects.c   large values (results, records, whole outputs) as chunks in a stream, or in
 *               S3 through s3.c
 *   s3.c        the S3-compatible object backend: signed PUT and GET, path-style
 *   https.c     libcurl, loaded on first use, for an https:// S3 endpoint
 *   sessobj.c   a session's trajectory, spilled outputs and downloads in the broker, for any
 *               node to answer once the session's node is gone
 *   broker.c    the small tools all of these share: status text, keys, the results bucket's
 *               read, a stream that fits the broker's store, messages destroyed in batches
 * Calls run one way: bridge.c (start and stop) calls the rest; executor.c calls edge.c (an
 * answer in process) and records.c, nodes.c, refs.c; records.c calls sessobj.c (the recorder's
 * round); records.c, refs.c and sessobj.c call objects.c, which calls s3.c, which calls https.c;
 * forward.c calls sessobj.c (a gone node's session); all call broker.c, which calls none of them.
 * The broker's names (docs/cluster.md lists them) are here, once. */
#ifndef PADDOCK_CLUSTER_H
#define PADDOCK_CLUSTER_H

#include "server.h"
#include "nats_dl.h"

#include <pthread.h>
#include <time.h>

#define CL_WORK_STREAM "PADDOCK_WORK"
#define CL_WORK_SUBJECTS "paddock.work.>"
#define CL_WORK_CONSUMER_PREFIX "paddock-t-" /* + a template: its durable pull consumer */
#define CL_MAX_TEMPLATES 128
#define CL_RESULTS_BUCKET "paddock-results"
#define CL_NODES_BUCKET "paddock-nodes"
#define CL_NOTIFY_PREFIX "paddock.done." /* + the origin node's id: "result ready" for its waiters */
#define CL_REC_STREAM "PADDOCK_RECORDS"
#define CL_REC_PREFIX "paddock.rec." /* + <group>.<task>.<key>: a finished record (records.c) */
#define CL_OBJ_STREAM "PADDOCK_OBJECTS"
#define CL_OBJ_PREFIX "paddock.obj." /* + <name>.c (chunks), <name>.m (its description) */
#define CL_TRAJ_STREAM "PADDOCK_TRAJECTORIES"
#define CL_TRAJ_PREFIX "paddock.traj." /* + <session>: its trajectory's bytes (sessobj.c) */
#define CL_HEARTBEAT_MS 1000
#define CL_NODE_TTL_S 5 /* a node unheard of for this long is gone */
#define CL_DROP_BATCH 64 /* messages destroyed together (cl_msg_drop) */

typedef struct cl_waiter cl_waiter;
typedef struct cl_task cl_task;
typedef struct cl_submit cl_submit;
typedef struct cl_s3 cl_s3;

/* One template's work: its durable consumer (shared by every node that has the template) and
 * the thread that pulls from it on this node. */
typedef struct cl_consumer {
	pd_cluster *c;
	char template_name[64];
	natsSubscription *sub;
	pthread_t thread;
	bool started;
	/* the tasks the consumer had queued behind the last one pulled: the next pull asks for
	 * that many (at most the free slots), or for one, waiting for it, when none was queued. A
	 * pull for more than there are ends with a "no more" message besides: one more message,
	 * and a wake-up, a request */
	uint64_t queued;
} cl_consumer;

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
	natsSubscription *notify;
	cl_consumer *consumers; /* one per template this node has */
	size_t nconsumers;
	int64_t max_payload;
	unsigned slots;
	/* tasks held beyond the slots, queued in this node's scheduler so that a worker that
	 * finishes starts the next task at once instead of idling for a pull's round trip to the
	 * broker; only while tasks are short (mu) */
	unsigned ahead;
	uint64_t run_avg_us; /* moving mean of tasks' run times (mu) */

	pthread_mutex_t mu;
	/* one condition per sleeper, so that an event wakes only the thread it concerns (one shared
	 * condition woke all five threads for every submission, note and finished task: on a busy
	 * node the context switches cost more CPU than the broker's round trips) */
	pthread_cond_t sub_cv;   /* publishers: submissions queued */
	pthread_cond_t slot_cv;  /* puller: slots freed */
	pthread_cond_t ready_cv; /* poller: results announced */
	pthread_cond_t tick_cv;  /* ticker: only quiesce and stop */
	pthread_cond_t pub_cv;   /* the stop: every asynchronous publish settled */
	unsigned pub_inflight;   /* publishes whose ack (or failure) has not come yet */
	uint64_t poll_due;       /* the poller's next look (wall ms); 0: nothing waits */
	bool quiesced, stopping;
	bool stopped; /* pd_cluster_stop ran (only the stopping thread reads and writes it) */
	cl_submit *subq, *subq_tail;
	cl_waiter *waiters; /* requests this node's clients wait for */
	unsigned nwaiting;
	char **ready; /* "ready" notes (malloc'd), for the poller */
	size_t nready, ready_cap;
	cl_task *tasks; /* pulled and not yet acked */
	unsigned ntasks;
	pthread_t publishers[2], poller, ticker, leaser, recorder; /* publishers: the tries again (edge.c) */
	bool started[6]; /* publishers, poller, ticker, leaser, recorder */
	pthread_cond_t rec_cv; /* recorder: records stored */
	bool rec_due;
	int64_t rec_mark, rec_saved; /* the outbox's watermark, and as last written (the recorder's own) */
	uint64_t rec_saved_ms;
	jsCtx *rjs; /* the recorder's: its publishes' acks go to cl_on_record_ack */
	unsigned rec_failed; /* publishes of the round the broker refused (mu) */

	/* messages destroyed in batches (cl_msg_drop, drop_mu): libnats frees each message on its
	 * own collector thread, which a destroy wakes whenever it is idle */
	pthread_mutex_t drop_mu;
	natsMsg *drop[CL_DROP_BATCH];
	unsigned ndrop;
	/* claims (executor.c, claim_mu): created with a publish whose reply comes to this one
	 * subscription, read by the claiming thread itself (kvStore_Create's reply went through
	 * libnats' request thread first: one thread hand-off more a request) */
	pthread_mutex_t claim_mu;
	natsSubscription *claim_sub;
	char claim_inbox[160];
	uint64_t claim_seq;

	/* figures (mu) */
	uint64_t submitted, published, dup_published, dup_answered, publish_failures;
	uint64_t pulled, redelivered, exhausted, recorded, already_recorded, naks, answered, results_too_big;
	uint64_t notes_local; /* results of this node's own requests answered in process (no note) */
	uint64_t results_by_ref, refs_fetched, ref_failures;
	uint64_t records_published;
	cl_s3 *s3; /* the objects' S3 backend (--cluster-objects s3://); NULL: the broker's stream */
	struct cl_sessions *sessions; /* sessobj.c's: made on first use (mu), freed with c */
};

/* broker.c: the small tools every file here uses (it calls none of them) */
/* The results bucket's key of a request id: the id's bytes a key may hold as they are, others
 * (and '=') as =XX: one key per id, never two ids on one key. */
void cl_result_key(const char *request_id, char *key, size_t len);
/* A template's subject token (and consumer name part): as a result key. */
#define cl_template_token cl_result_key
/* A status's text, for logs and errors. */
const char *cl_status(natsStatus s);
/* The stored answer of a request id: 1 (and *val, malloc'd), 0 none, -1 the broker did not say. */
int cl_result_get(pd_cluster *c, const char *request_id, char **val, size_t *len);
/* Makes a stream or brings it to sc; a default MaxBytes the broker's store has no room for is
 * halved until it fits. */
int cl_stream_fit(pd_cluster *c, jsStreamConfig *sc, bool explicit_bytes, pd_err *e);
/* sc for a stream the cluster keeps (records, objects, trajectories): name, its one subject
 * (*subject must outlive sc), limits retention on file storage, oldest out first, the age and size
 * of --cluster-records-max-age/-max-bytes (*explicit_bytes when the operator gave the size); with
 * dedupe, a duplicate window of --cluster-window, at most the age (the broker refuses longer). */
void cl_stream_kept(pd_cluster *c, jsStreamConfig *sc, const char *name, const char **subject, bool dedupe,
		    bool *explicit_bytes);

/* Destroys m, with others: in batches of CL_DROP_BATCH (or at cl_msg_flush), so that libnats'
 * collector thread is woken once a batch, not once a message. */
void cl_msg_drop(pd_cluster *c, natsMsg *m);
/* Destroys the messages cl_msg_drop keeps (the leaser's tick, the node's end). */
void cl_msg_flush(pd_cluster *c);

/* edge.c */
void *cl_publisher_main(void *arg);
void *cl_poller_main(void *arg);
void cl_on_notify(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *arg);
/* The executor's answer to a request this node published itself: its waiters answered in
 * process with the status and body, with no note through the broker. */
void cl_deliver_local(pd_cluster *c, const char *request_id, int status, const char *body, size_t len);
/* The broker's ack (or not) of an asynchronous publish (jsOptions.PublishAsync.AckHandler). */
void cl_on_pub_ack(jsCtx *js, natsMsg *m, jsPubAck *pa, jsPubAckErr *pae, void *arg);
/* Takes back the publishes libnats holds unacked and queues them to be published again (the
 * poller, for one unacked for 5 s; the stop, for those still unacked after 5 s). */
void cl_edge_reclaim(pd_cluster *c);
/* Frees what waited to be published again (its waiters were answered at the stop). */
void cl_edge_drain(pd_cluster *c);

/* executor.c */
/* Settles the store's records that a kill left between commit and claim (pd_store_staged):
 * before the node pulls work. */
int cl_settle_staged(pd_cluster *c, pd_err *e);
void *cl_puller_main(void *arg);
/* The claims' reply subscription (before any task is pulled). */
int cl_claims_start(pd_cluster *c, pd_err *e);
void *cl_ticker_main(void *arg);
void *cl_leaser_main(void *arg);

/* refs.c: results larger than the broker carries */
/* Keeps value (the whole answer) in this node's file for token; returns the small value that
 * claims the request by reference (malloc'd), or NULL when it could not be kept. */
char *cl_ref_keep(pd_cluster *c, int status, const char *token, const char *value, size_t len, size_t *out_len);
/* Removes token's file (its claim lost: another node's answer is the request's). */
void cl_ref_drop(pd_cluster *c, const char *token);
/* Removes the files older than the duplicate window. */
void cl_ref_expire(pd_cluster *c);
/* Fetches the answer a claim by reference names (ref: its "ref" object) from the node that
 * keeps it: *val (malloc'd) the whole value, or an error value (502) saying what failed. */
void cl_ref_fetch(pd_cluster *c, json_t *ref, const char *node, const char *token, int status, char **val,
		  size_t *len);

/* records.c */
/* Makes (or brings to this node's retention) the shared record stream. */
int cl_records_stream(pd_cluster *c, pd_err *e);
/* Publishes the store's outbox as records are stored. */
void *cl_recorder_main(void *arg);
/* The broker's answer to a record's publish (the recorder's jsCtx's handler). */
void cl_on_record_ack(jsCtx *js, natsMsg *m, jsPubAck *pa, jsPubAckErr *pae, void *arg);
/* A record was stored: the recorder looks now. Under c->mu. */
void cl_records_due(pd_cluster *c);
/* A recorded run's whole output, when larger than its record keeps: in the object stream under
 * its request id, for GET /v1/runs/{id}/output from any node. */
void cl_output_keep(pd_cluster *c, const pd_job *j);

/* objects.c */
/* The objects' backend: the stream PADDOCK_OBJECTS made (or brought to this node's retention),
 * or, with --cluster-objects s3://, the S3 bucket reached and read once. */
int cl_objects_stream(pd_cluster *c, pd_err *e);
void cl_objects_free(pd_cluster *c);
/* Puts data as the object name (any node reads it); 0 or -1. */
int cl_obj_put(pd_cluster *c, const char *name, const void *data, size_t len, pd_err *e);
/* The object name's bytes (*data malloc'd, NUL-terminated); -1 with e->code ENOENT when there
 * is none. */
int cl_obj_get(pd_cluster *c, const char *name, char **data, size_t *len, pd_err *e);

/* s3.c: objects in an S3-compatible store (objects.c's second backend) */
/* Reads the options (--cluster-objects s3://BUCKET[/PREFIX], --cluster-s3-*), the credentials,
 * and the bucket once: -1 saying why when the store refuses them. */
int cl_s3_open(const pd_cluster_opts *o, cl_s3 **s, pd_err *e);
void cl_s3_free(cl_s3 *s);
int cl_s3_put(cl_s3 *s, const char *name, const void *data, size_t len, pd_err *e);
/* As cl_obj_get: -1 with e->code ENOENT when the bucket has no such object. */
int cl_s3_get(cl_s3 *s, const char *name, char **data, size_t *len, pd_err *e);
/* The headers that sign a request with AWS Signature Version 4 ("x-amz-date: ...\r\n",
 * "x-amz-content-sha256: ...\r\n", "Authorization: ...\r\n"; malloc'd, NULL on failure): host as
 * the Host header says it, path as sent (unreserved characters only), query canonical (sorted,
 * encoded) or "", payload the body's SHA-256 in hex, when the request's time. */
char *cl_s3_sign(const char *key_id, const char *secret, const char *region, const char *host, const char *method,
		 const char *path, const char *query, const char *payload, time_t when);

/* https.c: libcurl (loaded on first use) for s3.c's https:// endpoints */
int cl_https_load(pd_err *e);
/* As pd_http_call for an https:// url (headers: "Name: value\r\n" lines); ca_file NULL: the
 * system's CAs. */
int cl_https_call(const char *url, const char *method, const char *headers, const void *body, size_t len,
		  const char *ca_file, int timeout_ms, int *status, char **resp, size_t *resp_len, pd_err *e);
/* sessobj.c */
/* Makes (or brings to this node's retention) the trajectories' stream. */
int cl_traj_stream(pd_cluster *c, pd_err *e);
/* Publishes what this node's sessions wrote to their trajectories since (the recorder's round). */
void cl_traj_sweep(pd_cluster *c);
void cl_sessions_free(pd_cluster *c);

/* nodes.c */
void cl_heartbeat(pd_cluster *c);

#endif
