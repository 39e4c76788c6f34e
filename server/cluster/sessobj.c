/* A session's records in the cluster (issue 41): its trajectory, its spilled outputs and its
 * downloads go to the broker as they are written, so that any node answers them once the node
 * holding the session is gone (killed, stopped, restarted under a new run id). Sessions keep
 * their node: while it lives, other nodes forward to it (forward.c); what is here is what they
 * answer when it does not.
 *
 * - The trajectory: its bytes, whole lines, in the stream PADDOCK_TRAJECTORIES on the subject
 *   paddock.traj.<session>, each message "<offset>\n<bytes>" (the message id <session>@<offset>).
 *   A reader joins them by offset, so that a part published twice (a round cut by a broker that
 *   did not ack) is read once. Published at the end of each of the session's operations, before
 *   its answer (pd_cluster_session_step), and by the recorder's rounds for what is written
 *   between operations (the closing line of a DELETE or an expiry: cl_traj_sweep).
 * - A spilled output (an exec whose stdout or stderr was longer than its answer keeps): both
 *   streams as objects spill-<session>-<request id>-stdout/-stderr (objects.c), published with
 *   the exec's trajectory line, so GET /v1/sessions/{id}/output resolves the answer's request_id;
 *   an exec whose output its answer held whole is answered from its trajectory line.
 * - A download with a request id: the archive as it was sent, the object dl-<session>-<request
 *   id>, kept before the download's last byte reaches its client (a copy teed off the stream); a
 *   file read with one (GET files?path=): its bytes as file-<session>-<request id>, before its answer.
 * Objects and trajectories past KEEP_MAX are not kept (the log says so). */
#define _GNU_SOURCE
#include "cluster.h"
#include "http/http.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define N pd_nats

#define KEEP_MAX (64u << 20) /* the largest spill or download kept in the broker */
#define READ_WAIT_MS 3000

/* A session of this node whose trajectory is published: how far (one publisher at a time). */
typedef struct kept {
	struct kept *next;
	char id[48];
	pthread_mutex_t mu;
	uint64_t off;     /* the trajectory's bytes published */
	uint64_t scanned; /* its bytes looked at for spilled outputs */
	atomic_bool closed; /* its closing line is published: nothing follows (set under mu, read under the table's) */
	unsigned users;   /* threads using it (the table's lock) */
} kept;

struct cl_sessions {
	pthread_mutex_t mu;
	kept *list;
};

int cl_traj_stream(pd_cluster *c, pd_err *e)
{
	jsStreamConfig sc;
	const char *subject[] = {CL_TRAJ_PREFIX ">"};
	bool explicit_bytes;
	cl_stream_kept(c, &sc, CL_TRAJ_STREAM, subject, true, &explicit_bytes);
	return cl_stream_fit(c, &sc, explicit_bytes, e);
}

/* The session's entry (made with make), held until put; NULL without one. */
static kept *get(pd_cluster *c, const char *id, bool make)
{
	pthread_mutex_lock(&c->mu);
	if (!c->sessions && make && (c->sessions = calloc(1, sizeof *c->sessions)))
		pthread_mutex_init(&c->sessions->mu, NULL);
	struct cl_sessions *t = c->sessions;
	pthread_mutex_unlock(&c->mu);
	if (!t)
		return NULL;
	pthread_mutex_lock(&t->mu);
	kept *k = t->list;
	while (k && strcmp(k->id, id))
		k = k->next;
	if (!k && make && (k = calloc(1, sizeof *k))) {
		snprintf(k->id, sizeof k->id, "%s", id);
		pthread_mutex_init(&k->mu, NULL);
		k->next = t->list;
		t->list = k;
	}
	if (k)
		k->users++;
	pthread_mutex_unlock(&t->mu);
	return k;
}

/* Gives k back; a closed one nobody uses goes. */
static void put(pd_cluster *c, kept *k)
{
	struct cl_sessions *t = c->sessions;
	pthread_mutex_lock(&t->mu);
	bool drop = --k->users == 0 && atomic_load(&k->closed);
	if (drop)
		for (kept **p = &t->list; *p; p = &(*p)->next)
			if (*p == k) {
				*p = k->next;
				break;
			}
	pthread_mutex_unlock(&t->mu);
	if (drop) {
		pthread_mutex_destroy(&k->mu);
		free(k);
	}
}

void cl_sessions_free(pd_cluster *c)
{
	struct cl_sessions *t = c->sessions;
	if (!t)
		return;
	for (kept *k = t->list, *next; k; k = next) {
		next = k->next;
		pthread_mutex_destroy(&k->mu);
		free(k);
	}
	pthread_mutex_destroy(&t->mu);
	free(t);
	c->sessions = NULL;
}

static void spill_name(const char *sid, const char *rid, int stream, char *name, size_t len)
{
	snprintf(name, len, "spill-%s-%s-%s", sid, rid, stream == 2 ? "stderr" : "stdout");
}

/* A file's bytes into the object name (mapped, not copied); 0, or -1 (not kept: logged). */
static int put_file(pd_cluster *c, const char *name, int fd)
{
	struct stat st;
	pd_err e = {0};
	if (fstat(fd, &st) < 0)
		return -1;
	if ((uint64_t)st.st_size > KEEP_MAX) {
		pd_log("warn", "cluster: a session's object not kept in the broker", PD_LS("object", name),
		       PD_LS("why", "larger than 64 MiB"));
		return -1;
	}
	void *m = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	if (m == MAP_FAILED)
		return -1;
	int rc = cl_obj_put(c, name, m ? m : "", (size_t)st.st_size, &e);
	if (m)
		munmap(m, (size_t)st.st_size);
	if (rc < 0)
		pd_log("warn", "cluster: a session's object not kept in the broker", PD_LS("object", name),
		       PD_LS("error", PD_ERR_STR(&e)));
	return rc;
}

/* The spilled outputs of the exec lines in text (whole lines) whose answer was cut. */
static void keep_spills(pd_cluster *c, const char *sid, pd_session *s, const char *text, size_t len)
{
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (memmem(p, n, "_truncated\":true", 16)) {
			json_t *line = json_loadb(p, n, 0, NULL);
			json_t *obs = json_object_get(line, "observation");
			const char *rid = json_string_value(json_object_get(obs, "output_request_id"));
			const char *what = json_string_value(json_object_get(line, "kind"));
			bool cut = json_is_true(json_object_get(obs, "stdout_truncated")) ||
				   json_is_true(json_object_get(obs, "stderr_truncated"));
			for (int i = 1; cut && rid && what && !strcmp(what, "exec") && i <= 2; i++) {
				char path[4096], name[400];
				pd_err e = {0};
				if (pd_session_output_path(s, rid, i, path, sizeof path, &e) < 0)
					break; /* no longer kept (a session keeps 256 MiB of spills) */
				int fd = open(path, O_RDONLY | O_CLOEXEC);
				spill_name(sid, rid, i, name, sizeof name);
				if (fd >= 0) {
					put_file(c, name, fd);
					close(fd);
				}
			}
			json_decref(line);
		}
		p += n + 1;
	}
}

/* Publishes text (whole lines from offset off) in messages of at most half the broker's limit. */
static int publish_text(pd_cluster *c, kept *k, const char *text, size_t len, pd_err *e)
{
	char t[200], subject[300];
	cl_result_key(k->id, t, sizeof t);
	snprintf(subject, sizeof subject, CL_TRAJ_PREFIX "%s", t);
	size_t most = c->max_payload > 8192 ? (size_t)c->max_payload / 2 : 4096;
	for (size_t done = 0; done < len;) {
		size_t part = len - done;
		if (part > most) {
			/* at a line's end when one fits: a reader takes whole lines as they come */
			const char *nl = memrchr(text + done, '\n', most);
			part = nl ? (size_t)(nl - (text + done)) + 1 : most;
		}
		/* the message id names the part's bytes: a part published again after a round the
		 * broker did not ack may be longer, and must not be taken for the first */
		char head[32], id[120];
		int hl = snprintf(head, sizeof head, "%" PRIu64 "\n", k->off);
		snprintf(id, sizeof id, "%s@%" PRIu64 "+%zu", k->id, k->off, part);
		char *body = malloc((size_t)hl + part);
		if (!body)
			return pd_fail(e, ENOMEM, "trajectory %s", k->id);
		memcpy(body, head, (size_t)hl);
		memcpy(body + hl, text + done, part);
		natsMsg *m = NULL;
		natsStatus s = N.natsMsg_Create(&m, subject, NULL, body, (int)((size_t)hl + part));
		free(body);
		jsPubOptions po;
		N.jsPubOptions_Init(&po);
		po.MaxWait = 10000;
		po.MsgId = id;
		jsPubAck *pa = NULL;
		jsErrCode je = 0;
		if (s == NATS_OK)
			s = N.js_PublishMsg(&pa, c->js, m, &po, &je);
		N.natsMsg_Destroy(m);
		N.jsPubAck_Destroy(pa);
		if (s != NATS_OK)
			return pd_fail_as(e, EIO, "trajectory %s: %s", k->id, cl_status(s));
		k->off += part;
		done += part;
	}
	return 0;
}

/* Whether the last line of text is the trajectory's closing line. */
static bool ends_closed(const char *text, size_t len)
{
	if (len < 2)
		return false;
	const char *nl = memrchr(text, '\n', len - 1);
	const char *last = nl ? nl + 1 : text;
	json_t *line = json_loadb(last, (size_t)(text + len - last), 0, NULL);
	const char *what = json_string_value(json_object_get(line, "kind"));
	bool closed = what && !strcmp(what, "close");
	json_decref(line);
	return closed;
}

/* The trajectory's new whole lines published (and, with s, its cut execs' outputs first). */
static int publish_new(pd_cluster *c, kept *k, pd_session *s, pd_err *e)
{
	char path[4096];
	if (atomic_load(&k->closed))
		return 0;
	if (pd_trajectory_path(pd_ctx_state_dir(c->ctx), k->id, path, sizeof path, e) < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : pd_fail(e, errno, "trajectory %s", k->id);
	struct stat st;
	uint64_t from = s && k->scanned < k->off ? k->scanned : k->off;
	int rc = 0;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > from) {
		size_t len = (size_t)((uint64_t)st.st_size - from);
		char *buf = malloc(len);
		ssize_t got = buf ? pread(fd, buf, len, (off_t)from) : -1;
		const char *nl = got > 0 ? memrchr(buf, '\n', (size_t)got) : NULL;
		size_t whole = nl ? (size_t)(nl - buf) + 1 : 0; /* a line being written waits */
		if (s && whole) {
			keep_spills(c, k->id, s, buf, whole);
			k->scanned = from + whole;
		}
		size_t skip = (size_t)(k->off - from);
		if (whole > skip) {
			rc = publish_text(c, k, buf + skip, whole - skip, e);
			if (rc == 0 && ends_closed(buf, whole))
				atomic_store(&k->closed, true);
		}
		free(buf);
	}
	close(fd);
	return rc;
}

/* Whether to publish now: not once the node stops, and not while the broker is away, so that a
 * session's steps never wait for it (their lines go with the recorder's round once it is back). */
static bool stopping(pd_cluster *c)
{
	pthread_mutex_lock(&c->mu);
	bool stop = c->stopping;
	pthread_mutex_unlock(&c->mu);
	return stop || N.natsConnection_Status(c->nc) != NATS_CONN_STATUS_CONNECTED;
}

void pd_cluster_session_step(pd_cluster *c, const char *session_id, pd_session *s)
{
	if (!c || stopping(c))
		return;
	kept *k = get(c, session_id, true);
	if (!k)
		return;
	pd_err e = {0};
	pthread_mutex_lock(&k->mu);
	if (publish_new(c, k, s, &e) < 0)
		pd_log("warn", "cluster: a session's trajectory not published (the recorder tries again)",
		       PD_LS("session_id", session_id), PD_LS("error", PD_ERR_STR(&e)));
	pthread_mutex_unlock(&k->mu);
	put(c, k);
	/* the operation may have stored a record (an episode's grade): the recorder (records.c, which
	 * calls this file) woken to publish it now, not in a second */
	pthread_mutex_lock(&c->mu);
	c->rec_due = true;
	pthread_cond_signal(&c->rec_cv);
	pthread_mutex_unlock(&c->mu);
}

void cl_traj_sweep(pd_cluster *c)
{
	pthread_mutex_lock(&c->mu);
	struct cl_sessions *t = c->sessions; /* made once, freed only with c */
	pthread_mutex_unlock(&c->mu);
	if (!t)
		return;
	size_t n = 0, cap = 0;
	char(*ids)[48] = NULL;
	pthread_mutex_lock(&t->mu);
	for (kept *k = t->list; k; k = k->next) {
		if (n == cap) {
			char(*more)[48] = realloc(ids, (cap = cap ? cap * 2 : 16) * sizeof *ids);
			if (!more)
				break;
			ids = more;
		}
		snprintf(ids[n++], sizeof ids[0], "%s", k->id);
	}
	pthread_mutex_unlock(&t->mu);
	for (size_t i = 0; i < n && !stopping(c); i++) {
		kept *k = get(c, ids[i], false);
		if (!k)
			continue;
		/* a session's own operation publishing now: its lines go with it */
		if (pthread_mutex_trylock(&k->mu) == 0) {
			pd_err e = {0};
			publish_new(c, k, NULL, &e);
			pthread_mutex_unlock(&k->mu);
		}
		put(c, k);
	}
	free(ids);
}

/* ---- a download teed off to the broker ------------------------------------------------------- */

struct pd_cluster_tee {
	pd_cluster *c;
	char name[400];
	int in, wfd, copy; /* the pipe's ends, the copy (a memfd) */
	int out;           /* the client's */
	uint64_t bytes;
	bool broken, too_big;
	pthread_t th;
};

static void *tee_main(void *arg)
{
	pd_cluster_tee *t = arg;
	char buf[65536];
	for (;;) {
		ssize_t n = read(t->in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		t->bytes += (uint64_t)n;
		if (t->bytes > KEEP_MAX)
			t->too_big = true;
		if (!t->too_big && write(t->copy, buf, (size_t)n) != n)
			t->too_big = true;
		for (ssize_t off = 0; off < n && !t->broken;) {
			ssize_t w = write(t->out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				t->broken = true;
			else
				off += w;
		}
		if (t->broken)
			break;
	}
	close(t->in); /* broken: the archive's writer fails as if the client's pipe had */
	return NULL;
}

pd_cluster_tee *pd_cluster_download_tee(pd_cluster *c, const char *session_id, const char *request_id, int out_fd,
					int *in_fd)
{
	if (!c || !request_id || !request_id[0] || stopping(c))
		return NULL;
	pd_cluster_tee *t = calloc(1, sizeof *t);
	int p[2];
	if (!t)
		return NULL;
	t->c = c;
	t->out = out_fd;
	snprintf(t->name, sizeof t->name, "dl-%s-%s", session_id, request_id);
	t->copy = memfd_create("download", MFD_CLOEXEC);
	if (t->copy < 0 || pipe2(p, O_CLOEXEC) < 0) {
		if (t->copy >= 0)
			close(t->copy);
		free(t);
		return NULL;
	}
	t->in = p[0];
	t->wfd = p[1];
	if (pthread_create(&t->th, NULL, tee_main, t) != 0) {
		close(p[0]);
		close(p[1]);
		close(t->copy);
		free(t);
		return NULL;
	}
	*in_fd = p[1];
	return t;
}

int pd_cluster_download_kept(pd_cluster_tee *t, bool ok)
{
	if (!t)
		return ok ? 0 : -1;
	close(t->wfd);
	pthread_join(t->th, NULL);
	int rc = ok && !t->broken ? 0 : -1;
	if (rc == 0 && t->too_big)
		pd_log("warn", "cluster: a session's object not kept in the broker", PD_LS("object", t->name),
		       PD_LS("why", "larger than 64 MiB"));
	else if (rc == 0)
		put_file(t->c, t->name, t->copy);
	close(t->copy);
	free(t);
	return rc;
}

/* ---- reading: a gone node's session, answered from the broker ------------------------------------- */

/* The trajectory's bytes as published (*text malloc'd); -1 with ENOENT when there are none. */
static int traj_read(pd_cluster *c, const char *id, char **text, size_t *len, pd_err *e)
{
	char t[200], subject[300];
	cl_result_key(id, t, sizeof t);
	snprintf(subject, sizeof subject, CL_TRAJ_PREFIX "%s", t);
	jsSubOptions so;
	N.jsSubOptions_Init(&so);
	so.Stream = CL_TRAJ_STREAM;
	so.Ordered = true;
	so.Config.DeliverPolicy = js_DeliverAll;
	natsSubscription *sub = NULL;
	jsErrCode je = 0;
	natsStatus s = N.js_SubscribeSync(&sub, c->js, subject, NULL, &so, &je);
	if (s != NATS_OK)
		return pd_fail_as(e, EIO, "the cluster's trajectories: %s", cl_status(s));
	jsConsumerInfo *ci = NULL;
	s = N.natsSubscription_GetConsumerInfo(&ci, sub, NULL, &je);
	uint64_t pending = s == NATS_OK && ci ? ci->NumPending + ci->Delivered.Consumer : 0;
	N.jsConsumerInfo_Destroy(ci);
	char *buf = NULL;
	size_t have = 0;
	FILE *f = open_memstream(&buf, &have);
	int rc = s == NATS_OK && f ? 0 : pd_fail_as(e, EIO, "the cluster's trajectories: %s", cl_status(s));
	uint64_t size = 0;
	while (rc == 0 && pending > 0) {
		natsMsg *m = NULL;
		if ((s = N.natsSubscription_NextMsg(&m, sub, READ_WAIT_MS)) != NATS_OK) {
			rc = pd_fail_as(e, EIO, "the cluster's trajectories: %s", cl_status(s));
			break;
		}
		jsMsgMetaData *meta = NULL;
		pending = 0;
		if (N.natsMsg_GetMetaData(&meta, m) == NATS_OK) {
			pending = meta->NumPending;
			N.jsMsgMetaData_Destroy(meta);
		}
		const char *d = N.natsMsg_GetData(m);
		size_t dl = (size_t)N.natsMsg_GetDataLength(m);
		const char *nl = d ? memchr(d, '\n', dl) : NULL;
		uint64_t off = nl ? strtoull(d, NULL, 10) : UINT64_MAX;
		size_t n = nl ? dl - (size_t)(nl + 1 - d) : 0;
		/* joined by offset: a part published twice is taken once; one after a gap ends it */
		if (off <= size && off + n > size) {
			fwrite(nl + 1 + (size - off), 1, (size_t)(off + n - size), f);
			size = off + n;
		}
		N.natsMsg_Destroy(m);
	}
	N.natsSubscription_Unsubscribe(sub);
	N.natsSubscription_Destroy(sub);
	if (f)
		fclose(f);
	if (rc == 0 && !size)
		rc = pd_fail(e, ENOENT, "no trajectory %s in the cluster", id);
	if (rc < 0) {
		free(buf);
		return -1;
	}
	*text = buf;
	*len = (size_t)size;
	return 0;
}

/* An exec's output its answer held whole, from its trajectory line; -1 ENOENT when none is. */
static int output_from_line(pd_cluster *c, const char *sid, const char *rid, int stream, char **data, size_t *len,
			    pd_err *e)
{
	char *text = NULL;
	size_t tl = 0;
	if (traj_read(c, sid, &text, &tl, e) < 0)
		return -1;
	json_t *found = NULL;
	for (char *p = text, *end = text + tl; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		json_t *line = memmem(p, n, "\"output_request_id\"", 19) ? json_loadb(p, n, 0, NULL) : NULL;
		json_t *obs = json_object_get(line, "observation");
		const char *o = json_string_value(json_object_get(obs, "output_request_id"));
		if (o && !strcmp(o, rid)) {
			json_decref(found);
			found = json_incref(obs);
		}
		json_decref(line);
		p += n + 1;
	}
	free(text);
	const char *key = stream == 2 ? "stderr" : "stdout";
	const char *v = json_string_value(json_object_get(found, key));
	int rc = 0;
	if (!found)
		rc = pd_fail(e, ENOENT, "session %s has no exec with request id '%s' in the cluster", sid, rid);
	else if (json_is_true(json_object_get(found, stream == 2 ? "stderr_truncated" : "stdout_truncated")) || !v)
		rc = pd_fail(e, ENOENT, "the output of exec '%s' of session %s was not kept in the cluster", rid, sid);
	else if (!(*data = strndup(v, json_string_length(json_object_get(found, key)))))
		rc = pd_fail(e, ENOMEM, "output");
	else
		*len = json_string_length(json_object_get(found, key));
	json_decref(found);
	return rc;
}

bool cluster_session_kept_op(const char *method, const char *op)
{
	return !strcmp(method, "GET") && (!strcmp(op, "trajectory") || !strcmp(op, "output") ||
					  !strcmp(op, "download") || !strcmp(op, "files"));
}

/* The object of a download or a file read made with the step's request id (NULL: none). */
static const char *step_object(const req *r, const char *sid, const char *op, char *name, size_t len)
{
	const char *rid = r->q.step_id[0] ? r->q.step_id : r->q.request_id;
	if (!rid[0] || (!strcmp(op, "files") && r->q.list))
		return NULL;
	snprintf(name, len, "%s-%s-%s", !strcmp(op, "files") ? "file" : "dl", sid, rid);
	return name;
}

bool cluster_session_kept(req *r, const char *id, const char *op)
{
	pd_cluster *c = r->srv->cluster;
	char *data = NULL, name[400];
	size_t len = 0;
	pd_err e = {0};
	const char *ctype = "application/octet-stream";
	int rc;
	if (!c || !cluster_session_kept_op(r->method, op))
		return false;
	if (!strcmp(op, "trajectory")) {
		ctype = "application/x-ndjson";
		rc = traj_read(c, id, &data, &len, &e);
	} else if (!strcmp(op, "output")) {
		int stream = r->q.stderr_stream ? 2 : 1;
		spill_name(id, r->q.request_id, stream, name, sizeof name);
		rc = cl_obj_get(c, name, &data, &len, &e);
		if (rc < 0 && e.code == ENOENT)
			rc = output_from_line(c, id, r->q.request_id, stream, &data, &len, &e);
	} else {
		if (!step_object(r, id, op, name, sizeof name))
			return false; /* only a download or a file read with a request id is kept */
		if (!strcmp(op, "download"))
			ctype = "application/x-tar";
		rc = cl_obj_get(c, name, &data, &len, &e);
	}
	if (rc < 0 && e.code == ENOENT)
		return false; /* nothing of it in the broker: the gone node's 410 */
	if (rc < 0)
		http_set_error(r, 503, "%s", PD_ERR_STR(&e));
	else
		http_set_resp(r, 200, ctype, data, len);
	return true;
}

/* ---- the end of a session's operation on this node --------------------------------------------- */

/* The sessions a create (or a replay) opened, from its answer: {"session_id"} or {"sessions": [...]} */
static void created(pd_server *s, req *r)
{
	if (!r || r->status < 200 || r->status > 299 || !r->resp)
		return;
	json_t *o = json_loadb(r->resp, r->resp_len, 0, NULL);
	const char *one = json_string_value(json_object_get(o, "session_id"));
	if (one)
		pd_cluster_session_step(s->cluster, one, NULL);
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(o, "sessions"), i, v) {
		const char *id = json_string_value(json_object_get(v, "session_id"));
		if (id)
			pd_cluster_session_step(s->cluster, id, NULL);
	}
	json_decref(o);
}

void cluster_session_step(pd_server *s, req *r, const char *id, const char *op, sess_entry *se)
{
	if (!s->cluster)
		return;
	char name[400];
	/* a file read with a request id: its bytes as sent (the descriptor it is sent from, mapped) */
	if (r && se && id && !strcmp(op, "files") && !strcmp(r->method, "GET") && r->status == 200 && r->resp_from_fd &&
	    step_object(r, id, op, name, sizeof name) && !stopping(s->cluster))
		put_file(s->cluster, name, r->resp_fd);
	if (id && id[0] && se) /* a session this node holds */
		pd_cluster_session_step(s->cluster, id, se->s);
	/* a session opened by this operation: its first lines now (a replay's: all of them) */
	if (!se || !strcmp(op, "replay"))
		created(s, r);
}
