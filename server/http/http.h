/* The HTTP server's internals, shared by its files (server/http/). The calls go one way, down:
 *   daemon.c      the conductor: start and stop, libmicrohttpd's callbacks (the request's body,
 *                 the token, then routes.c); nothing in the folder calls it
 *   routes.c      the route table (method + path -> handler) and the small endpoints
 *   runs.c        the run endpoints (native, SandboxFusion, Piston): parse, admit, queue, answer
 *   sessions.c    the session endpoints and the threads their operations run on
 *   replay.c      a trajectory replayed through the session operations
 *   session_ops.c the operations on one session (exec, files, ...): session_dispatch
 *   replay_agents.c  the replay's steps dispatched, agents' overlapping ones at once
 *   exec_stream.c a session exec whose output is sent while it runs (JSON lines)
 *   exec_answer.c an exec's answer, streamed or not
 *   session_table.c the table of open sessions, under every session file
 *   stream.c      a producer whose first bytes decide the answer (session downloads, streamed
 *                 execs): http_piped_run
 *   conns.c       connection limits (total, per client address) and the descriptor reserve
 *   hangup.c      clients that hang up while their run waits: the job is cancelled
 *   prometheus.c  /metrics: the server's gauges and counters as Prometheus text
 *   judge.c       POST /v1/judge: a submission judged by server/judge/ on a scheduler worker
 *   judge_batch.c POST /v1/judge with many submissions: one array, or JSON lines as they finish
 *   images.c      a request's "image": checked against serve --images and the store
 *   records.c     GET /v1/runs[/{task_id}]: the stored attempts read back
 *   settings.c    serve's settings checked before anything starts (pd_server_check)
 *   http.c        the toolbox under all of them: responses (a buffer, a file, a body read from a
 *                 pipe while it is produced), suspend and resume; it calls no other file here
 * Only the files above include this header; the rest of paddock sees server.h. */
#ifndef PADDOCK_SERVER_HTTP_H
#define PADDOCK_SERVER_HTTP_H

#include "server.h"
#include "judge/judge.h"
#include "intake.h"
#include "mhd.h" /* <microhttpd.h>, its functions loaded on first use */

#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#define MAX_SESSIONS 4096
#define MAX_SESSION_OPS 256
#define MAX_EXEMPT 16
#define FD_MARGIN 16      /* the store, logs, a pipe or two */
#define FD_PER_SANDBOX 16 /* what building one sandbox may hold at once */

/* Open connections per client address (IPv4), for the per-address limit. Only the event thread
 * touches it (the accept policy and connection notifications both run there): no lock. A plain
 * array, linear search: it holds only the addresses connected now, at most max_connections. */
typedef struct ip_count {
	uint32_t ip;
	unsigned n;
} ip_count;

typedef struct sess_entry {
	pd_session *s;
	int ops;      /* requests using it now: it is closed only when this drops to 0 */
	bool closing; /* DELETE arrived while in use */
	char id[48];
	char template_name[64];
	char image_name[160]; /* the image the session was opened on by name ("" = none, or by digest) */
	char template_version[48]; /* its template's (pd_template.version), for its exec records */
	uint64_t created_ms;
	/* the episode's rules (session_judge.c): as given (an array: the template's, the create's;
	 * NULL: none), compiled, their
	 * state over the steps so far, and the steps they refused ([{request_id, cmd, flags, why}]);
	 * the state under the server's lock */
	json_t *rules_json;
	pd_rules *rules;
	pd_rules_state rstate;
	json_t *refusals;
} sess_entry;

struct pd_server {
	pd_server_opts o;
	pd_ctx *ctx;
	pd_template *tpl;
	size_t ntpl;
	unsigned run_code_nets; /* 1 << pd_net: the modes a /run_code request may ask for (netmodes.c) */
	pd_pools *pools;
	pd_store *store;
	char output_dir[4096]; /* POST /v1/runs' spilled output, beside the store (run_output.c) */
	pd_metrics *metrics;
	pd_sched *sched;
	pd_judge *judge;
	pd_caps *caps;           /* per-problem submission caps (--problem-submit-max) */
	pd_problem_set problems; /* --problems DIR, loaded and prepared at start */
	pd_cluster *cluster; /* NULL: a single node */
	pd_intake intake;    /* every request's rules (server/intake.c), set by runs_intake_init */
	struct MHD_Daemon *mhd;
	int listen_fd;
	char address[160];
	char unix_path[108];
	/* guards sessions[], session_ops and stopping, and brackets MHD_suspend/resume_connection
	 * (libmicrohttpd wants those two serialized with each other) */
	pthread_mutex_t mu;
	sess_entry sessions[MAX_SESSIONS];
	unsigned session_ops;
	pthread_cond_t ops_cv;
	bool stopping;
	/* connections: the per-address limit and its figures (metrics read them from any thread) */
	ip_count *ips;
	size_t nips;
	struct {
		uint32_t net, mask;
	} exempt[MAX_EXEMPT];
	size_t nexempt;
	unsigned conns_open;
	uint64_t refused_per_ip, refused_limit;
	uint64_t refusal_logged_us;
	/* file descriptors: RLIMIT_NOFILE (0 = unlimited) and the work refused for lack of them */
	uint64_t fd_limit;
	uint64_t fd_refused;
	uint64_t steps_cancelled; /* session steps whose client left (atomic) */
	/* hang-ups of suspended runs (hangup.c): its epoll set, the eventfd that stops its thread,
	 * the requests watched now (under mu) */
	int hup_epfd, hup_evfd;
	pthread_t hup_thread;
	bool hup_started;
	struct req *watched;
	uint64_t watch_seq, hangups;
};

/* One request, from its first callback to its completion (libmicrohttpd's con_cls). */
typedef struct req {
	pd_server *srv;
	struct MHD_Connection *conn;
	char *body;
	size_t len, cap;
	bool too_big, suspended, answered, unauthorized;
	/* filled by the worker that finished the request */
	int status;
	char *resp;
	size_t resp_len;
	/* or a file sent from its descriptor (an archive, a spilled output): held whole in memory
	 * it could take the daemon's memory; resp_fd is valid while resp_from_fd */
	bool resp_from_fd;
	int resp_fd;
	uint64_t resp_fd_len;
	/* or a body produced while it is sent (http.c); held until libmicrohttpd takes it */
	struct http_stream *resp_stream;
	const char *content_type;
	unsigned retry_after;
	const pd_api *api; /* a run's API (its row: errors in its body), NULL before one is routed */
	/* a run's job while it is queued or runs, watched for the client's hang-up (hangup.c); or,
	 * for a batch of jobs, a function told of the hang-up (fired) or of the end of the watch */
	pd_job *job;
	void (*hup_fn)(void *arg, bool fired);
	void *hup_arg;
	bool hup_owned; /* hup_fn was set: on_completed ends the watch (event thread only) */
	uint64_t watch_id; /* 0: not watched */
	int watch_fd;
	struct req *wprev, *wnext;
	/* the client's request id when the request runs under dedupe.c's guard ("" otherwise) */
	char dedupe_rid[128];
	/* session operations */
	char method[8];
	char url[512];
	pd_session_query q;
} req;

/* ---- a body produced while it is sent (http.c) ---- */
typedef struct http_stream http_stream;
/* Reads rfd (a pipe's read end, taken); holds a session operation until it is done. NULL on
 * failure (rfd is then the caller's). */
http_stream *http_stream_new(pd_server *s, struct MHD_Connection *conn, int rfd);
/* The producer: how it ended, said before it closes its write end. */
void http_stream_end(http_stream *st, bool ok);
/* The same and the write end wfd closed at once (under the stream's lock): the reader never sees
 * "produced" with the pipe still open. */
void http_stream_close(http_stream *st, bool ok, int wfd);
/* The response's reference, given up (sent, never sent, or the client left). */
void http_stream_drop(http_stream *st);
/* A producer's own reference, for one that may still call http_stream_end after the response and
 * the watcher are gone (the client left): taken, then given back once it ended the stream. */
void http_stream_hold(http_stream *st);
void http_stream_release(http_stream *st);
struct MHD_Response *http_stream_response(http_stream *st);

/* A producer on a thread of its own (a streamed session step, a download) whose first bytes
 * decide the answer: bytes first, 200 and the rest streamed; its end without a byte, the caller
 * answers (its error, usually, with its status). */
typedef struct http_piped http_piped;
struct http_piped {
	void (*produce)(http_piped *pp); /* writes into wfd, then calls http_piped_end */
	int pipe_bytes;			 /* the pipe's size, 0 for the default */
	bool nonblocking;		 /* wfd non-blocking (the producer handles EAGAIN) */
	int wfd;			 /* the write end, for produce */
	/* private to stream.c */
	pthread_mutex_t mu;
	http_stream *st;
	bool done, ok;
};
enum { HTTP_PIPED_FAILED = -1, HTTP_PIPED_ENDED = 0, HTTP_PIPED_STREAMED = 1 };
/* stream.c: runs pp->produce and waits for it. STREAMED: r was resumed with the streamed response
 * (r is no longer the caller's). ENDED: no byte streamed; the caller answers r. FAILED: r was answered. */
int http_piped_run(req *r, http_piped *pp, const char *ctype);
/* The producer's end (ok: the body is whole); closes wfd. After it the producer must not touch the
 * pipe. */
void http_piped_end(http_piped *pp, bool ok);

/* ---- responses (http.c) ---- */
/* The body is fd's first len bytes, sent by libmicrohttpd, which closes fd. */
void http_set_resp_fd(req *r, int status, const char *ctype, int fd, uint64_t len);
/* The body is read from st's pipe as it is produced, chunked (st is taken). */
void http_set_resp_stream(req *r, int status, const char *ctype, struct http_stream *st);
/* body is malloc'd and taken. */
void http_set_resp(req *r, int status, const char *ctype, char *body, size_t len);
/* j is taken. */
void http_set_json(req *r, int status, json_t *j);
/* {"error": text} ("message" too for Piston's clients). */
void http_set_error(req *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A refusal: the error, and when to try again (Retry-After; 0: not said). */
void http_refuse(req *r, int status, unsigned retry_after, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Suspends the connection: a worker answers it later with http_resume. */
void http_suspend(req *r);
/* Hands an answered request back to the event thread. Once resumed, the event thread may answer
 * and free r at any moment: r is not touched after the resume. */
void http_resume(req *r);
/* r and what it still holds (its body, an unsent response): libmicrohttpd's completion. */
void http_req_free(req *r);

/* ---- one run per request id (dedupe.c) ---- */
/* 0: the first request with rid: run it, then call dedupe_end. 1: r was answered (rid's first
 * answer again). 2: r waits for the first answer (suspended; dedupe_end resumes it). */
int dedupe_begin(req *r, const char *rid);
/* rid's first answer, r's response as it is set now: kept (unless a 5xx refusal) and sent to the
 * requests that wait for it. */
void dedupe_end(const char *rid, const req *r);
uint64_t dedupe_hits(void);

/* ---- routing (routes.c) ---- */
void http_route(req *r, const char *url, const char *method);

/* ---- runs (runs.c) ---- */
/* POST of a run API's route (pd_api.route): parsed, checked and admitted by the intake */
void runs_submit(req *r, const pd_api *api);
/* A template a request names (a run's, a session's) is one of this daemon's: else refused, naming
 * the field and the templates there are (runs.c). */
int http_check_template(pd_server *srv, const char *name, pd_err *e);
/* The intake's state and hooks (images_check, netmodes_pick), once the server's parts exist. */
void runs_intake_init(pd_server *s);
/* A checked job (its done callback set, answering through runs_answer) queued with the
 * connection suspended, or the connection answered why not and resumed; for the judge too. */
void runs_admit(req *r, const pd_api *api, pd_job *j);
/* A finished job's answer by its API's row (a worker's thread): the job freed, the waiters on its
 * request id answered, the connection resumed. */
void runs_answer(req *r, const pd_api *api, pd_job *j);

/* ---- the judge (judge.c) ---- */
void judge_submit(req *r, const char *url, const char *method);
/* judge_batch.c: {"submissions": [...]} answered as one array, or with "stream": true as JSON
 * lines in the order they finish */
void judge_batch(req *r, json_t *body);
/* A cluster's answer to a suspended request (runs.c): sets the response and resumes. */
void cluster_answer(void *arg, int status, const char *body, size_t len, unsigned retry_after);

/* ---- the store read back (records.c) ---- */
/* GET /v1/runs?group_id=&since=&kind=&last=&limit=&cursor= */
void records_list(req *r, const char *url, const char *method);
/* GET /v1/runs/{task_id} */
void records_get(req *r, const char *url, const char *method);
/* groups.c: GET /v1/groups/{group_id} */
void groups_get(req *r, const char *url, const char *method);
void review_list_http(req *r, const char *url, const char *method);
void review_decide_http(req *r, const char *url, const char *method);
/* GET /v1/review/risk, DELETE /v1/review/risk/{problem_id}: the risk list */
void review_risk_http(req *r, const char *url, const char *method);
void review_risk_remove_http(req *r, const char *url, const char *method);

/* ---- sessions (sessions.c) ---- */
void sessions_create(req *r, const char *url, const char *method);
void sessions_list(req *r, const char *url, const char *method);
/* /v1/sessions/<id>[/<op>], any method */
void sessions_op(req *r, const char *url, const char *method);
/* trajectory.c: GET /v1/sessions/<id>/trajectory */
void trajectory_get(req *r, const char *id);
/* trajectory.c: the answer about a session not in the table: 410 with why it ended (lost with a
 * daemon, expired) from its trajectory's closing line, else 404 */
void session_unknown(req *r, const char *id);
/* session_table.c, the table of open sessions (under every other session file): the one with
 * that id (s->mu held), or NULL; a session held against closing (ops) and given back; a session
 * opened and filed in the table (its description, or NULL with the answer's status and e); one
 * closed unless in use. */
sess_entry *session_find(pd_server *s, const char *id);
sess_entry *session_hold(pd_server *s, const char *id);
void session_unhold(pd_server *s, sess_entry *se);
json_t *session_open_one(pd_server *s, pd_session_create_req *q, const char *digest, int *status, pd_err *e);
void session_delete_quiet(pd_server *s, const char *id);
/* session_ops.c: the operation op on a held session (from a client's request, or one made in the
 * daemon itself by a replay): true when it resumed the connection, which a replay's requests
 * never ask for. */
bool session_dispatch(req *r, sess_entry *se, const char *op);
/* replay.c: POST /v1/replay (the body: a trajectory's JSON lines) and POST
 * /v1/sessions/<id>/replay (that session's trajectory), on a session operation's thread */
void replay_run(req *r, const char *id);
/* replay_agents.c, for replay.c: the steps of lines run into done ([line, answer | why, batch]
 * each, in the lines' order; batch 0: run alone) by run (replay.c's: recorded step l run in the
 * replay's session, its answer with "http_status", or NULL with why), agents' overlapping steps at
 * once; the replay's own line for recorded step rec (by its request id, else the next not used:
 * used and *k are the caller's, starting [] and 1) */
typedef json_t *(*replay_step_fn)(pd_server *s, sess_entry *se, json_t *l, char *why, size_t wlen);
void replay_steps(pd_server *s, sess_entry *se, json_t *lines, json_t *done, replay_step_fn run);
json_t *replay_own_line(json_t *mine, json_t *rec, json_t *used, size_t *k);
/* replay_agents.c: for each batch of steps run at once (done's third element), its recorded lines
 * and its own lines in mine get the batch's files changed together (compared as one) */
void replay_union_batches(json_t *done, json_t *mine);
/* exec_answer.c, for session_ops.c and exec_stream.c. An exec's answer: the result record, its
 * process verdict when audited, the session and request ids, the noise injected. NULL: out of
 * memory. */
json_t *session_exec_answer(sess_entry *se, const pd_session_exec_req *q, const pd_session_step *st,
			    pd_result *res);
/* The recorded answer of a resumed trajectory's exec with that request id, or NULL. */
json_t *session_exec_fast_forward(sess_entry *se, const char *rid);
/* The HTTP status of a failed pd_session_exec. */
int session_exec_status(const pd_err *e);
/* exec_stream.c: POST /v1/sessions/<id>/exec with "stream": true. Returns true when the
 * connection was resumed there (the answer streams while the step runs). */
bool session_exec_stream(req *r, sess_entry *se, pd_session_exec_req *q, const char *rid);
/* session_net.c: POST /v1/sessions/<id>/network; a new session's first network (the create's
 * "network"): 0, or -1 with e and the answer's status */
void session_network(req *r, sess_entry *se);
int session_open_network(pd_session *ss, const pd_session_create_req *q, int *status, pd_err *e);
/* snapshots.c: POST /v1/sessions/<id>/snapshot */
void session_snapshot(req *r, sess_entry *se);
/* session_judge.c: POST /v1/sessions/{id}/judge (an episode graded in a fork) and /annotate */
void session_judge(req *r, sess_entry *se);
void session_annotate(req *r, sess_entry *se);
/* The session's rules on an exec: before it runs (true: refused, answered here), and the flags of
 * its trajectory line once it ran (pd_step_extra_fn, arg a step_rules). */
typedef struct step_rules {
	pd_server *srv;
	sess_entry *se;
	unsigned flags;
	char why[256];
} step_rules;
bool session_rules_before(req *r, sess_entry *se, const pd_session_exec_req *q, const char *rid, step_rules *sr);
json_t *session_rules_after(void *arg, const pd_result *res, const pd_audit_verdict *v);
/* The rules of a session being opened on its slot: its template's (tpl_rules, JSON text, or NULL),
 * then the request's over them, tighten-only; -1 (e: 400) when they are bad. */
int session_rules_open(sess_entry *slot, const char *tpl_rules, json_t *rules, pd_err *e);
/* Every template's "rules" checked (at start: a bad one stops it, naming the template). */
int session_rules_check_templates(const pd_template *t, size_t n, pd_err *e);
/* Waits until no session operation runs (pd_server_stop, once no new request can start one). */
void sessions_drain(pd_server *s);

/* ---- cluster mode (server/cluster/forward.c) ---- */
/* GET /v1/cluster. */
void cluster_list(req *r, const char *url, const char *method);
/* GET /v1/cluster/results/{token}: a result too big for the broker, kept here for its origin. */
void cluster_result(req *r, const char *url, const char *method);
/* A session request: forwarded to the node holding the session (410 when it is gone), or
 * handled here by sessions_op. */
void cluster_session_op(req *r, const char *url, const char *method);
/* sessobj.c: whether a session operation is one the broker can answer for a gone node (GET of
 * its trajectory, an exec's output, a download by request id); the answer (true), or false when
 * the broker holds none of it */
bool cluster_session_kept_op(const char *method, const char *op);
bool cluster_session_kept(req *r, const char *id, const char *op);
/* sessobj.c: the end of a session operation on this node (r: its request, NULL once resumed; id
 * and op: the URL's, "" when it has none; se: the session, held, or NULL): its records published;
 * a session the operation opened is found in r's answer */
void cluster_session_step(pd_server *s, req *r, const char *id, const char *op, sess_entry *se);

/* ---- settings (settings.c): each -1 with e naming the flag ---- */
typedef struct listen_addr {
	bool is_unix;
	char path[108];        /* unix: the socket's path */
	struct sockaddr_in in; /* else the address and port */
	char host[128];        /* and the host as given */
} listen_addr;
/* --listen: its form (HOST:PORT with an IPv4 host, or unix:/path in a directory that exists), and a
 * token when the address is beyond loopback. */
int settings_listen(const char *listen, const char *token, listen_addr *a, pd_err *e);
/* --db: its directory exists, and the path is not a directory. */
int settings_db(const char *path, pd_err *e);
/* --memory-watermark: a size of at least 1M, or a percent from 1 to 90, into so. */
int settings_watermark(const char *w, pd_sched_opts *so, pd_err *e);
int settings_budget(const char *w, pd_sched_opts *so, pd_err *e);

/* ---- connections and descriptors (conns.c) ---- */
/* "10.0.0.0/8,192.168.1.7" into the exemption list of the per-address limit. */
int conns_parse_exempt(pd_server *s, const char *list, pd_err *e);
/* libmicrohttpd's accept policy and connection notifications (event thread). */
enum MHD_Result conns_on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void conns_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			 enum MHD_ConnectionNotificationCode toe);
/* Descriptors the daemon holds now (-1: cannot tell). */
long conns_fds_open(void);
/* True (and why, in msg) when a sandbox of this template would have to be built from descriptors
 * kept for the connections that may still come. */
bool conns_fds_short(pd_server *s, const char *template_name, char *msg, size_t len);

/* ---- hang-ups (hangup.c) ---- */
int hangup_start(pd_server *s, pd_err *e);
void hangup_stop(pd_server *s);
/* Watches r's socket while j waits or runs: a hang-up cancels j. Before pd_sched_submit. */
void hangup_watch(req *r, pd_job *j);
/* Stops watching (j finished, or was refused); before r is resumed. With a function watched, it
 * is called (fired false) if the hang-up did not call it already. */
void hangup_unwatch(req *r);
/* Watches r's socket for as long as r lives (its answer may stream after r was resumed): fn(arg,
 * true) on a hang-up, fn(arg, false) when r completes without one; called once, under srv->mu,
 * so it must not take srv->mu. on_completed ends the watch. */
void hangup_watch_fn(req *r, void (*fn)(void *arg, bool fired), void *arg);

/* ---- /run_code's network per request (netmodes.c) ---- */
/* Parses --run-code-networks and adds each template's twins for the modes it allows. */
int netmodes_add(pd_server *s, pd_err *e);
/* j's "network": its template's twin with that mode. -1 (why filled) when not allowed. */
int netmodes_pick(pd_server *s, pd_job *j, char *why, size_t len);
/* ---- request images (images.c) ---- */
/* Checks a request's "image" against serve --images and the store: 0 (digest filled), or the
 * HTTP status to answer (400 a malformed reference, 403 not allowed, 404 not in the store) with
 * e's message. */
int images_check(pd_server *s, const char *ref, char digest[PD_DIGEST_LEN], pd_err *e);

/* ---- /metrics (prometheus.c) ---- */
/* The whole exposition: the scheduler's, the pools', the host's, the store's, the connections'. */
char *prometheus_text(pd_server *s);

#endif
