/* Sessions: one sandbox held across many execs and file operations (an agent's episode).
 *
 * Each exec may carry a client request id; a repeated id returns the recorded result, so a client
 * that retries after a network hiccup never runs a command twice. Every output byte (up to the
 * output-kill limit) is spilled to a file under <state>/sessions/<id>/, so output beyond the kept
 * head and tail can be fetched later. The reclaimer closes sessions past their idle TTL or maximum
 * lifetime; a session in use is never cut mid-exec. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


static char *dupbuf(const char *p, size_t n)
{
	if (!p || !n)
		return NULL;
	char *d = malloc(n);
	if (d)
		memcpy(d, p, n);
	return d;
}

static void result_copy(pd_result *dst, const pd_result *src)
{
	*dst = *src;
	dst->out.head = dupbuf(src->out.head, src->out.head_len);
	dst->out.tail = dupbuf(src->out.tail, src->out.tail_len);
	dst->err.head = dupbuf(src->err.head, src->err.head_len);
	dst->err.tail = dupbuf(src->err.tail, src->err.tail_len);
	dst->audit = src->audit_len ? (pd_audit_event *)dupbuf((const char *)src->audit,
								 src->audit_len * sizeof *src->audit)
				    : NULL;
	dst->audit_cap = dst->audit ? src->audit_len : 0;
	/* a copy that lost a buffer to ENOMEM says so rather than pretend the output was empty */
	if ((src->out.head_len && !dst->out.head) || (src->err.head_len && !dst->err.head))
		snprintf(dst->error, sizeof dst->error, "recorded output lost: out of memory");
	if (!dst->out.head)
		dst->out.head_len = 0;
	if (!dst->out.tail)
		dst->out.tail_len = 0;
	if (!dst->err.head)
		dst->err.head_len = 0;
	if (!dst->err.tail)
		dst->err.tail_len = 0;
	if (!dst->audit)
		dst->audit_len = 0;
}

static size_t held_bytes(const pd_result *r)
{
	return (r->out.head ? r->out.head_len : 0) + (r->out.tail ? r->out.tail_len : 0) +
	       (r->err.head ? r->err.head_len : 0) + (r->err.tail ? r->err.tail_len : 0);
}

/* Newest first, the records keep their output buffers while the total stays within
 * SESSION_OUTPUT_BYTES; the older ones drop them. Called with the session entered and the
 * pools' lock held. */
static void slim_records(pd_session *s)
{
	unsigned kept = s->nrec < SESSION_RECORDS ? s->nrec : SESSION_RECORDS;
	size_t total = 0;
	for (unsigned k = 0; k < kept; k++) {
		record *rec = &s->rec[(s->nrec - 1 - k) % SESSION_RECORDS];
		size_t h = held_bytes(&rec->r);
		if (rec->slim || total + h <= SESSION_OUTPUT_BYTES) {
			total += h;
			continue;
		}
		pd_output *o[2] = {&rec->r.out, &rec->r.err};
		for (int i = 0; i < 2; i++) {
			free(o[i]->head);
			free(o[i]->tail);
			o[i]->head = o[i]->tail = NULL;
		}
		rec->slim = true;
	}
}

/* The head and tail of a slim record's stream, from its spill file: the whole stream, so its
 * first head_len and last tail_len bytes are what the capture kept. 0, or -1 if the file does
 * not hold the stream whole (a spill that failed for lack of space, say). */
static int read_back(const pd_session *s, unsigned n, const char *stream, pd_output *o)
{
	char p[POOL_PATH];
	snprintf(p, sizeof p, "%s/%u.%s", s->dir, n, stream);
	if (!o->head_len && !o->tail_len)
		return 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int rc = -1;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == o->total &&
	    (uint64_t)st.st_size >= o->head_len + o->tail_len) {
		o->head = o->head_len ? malloc(o->head_len) : NULL;
		o->tail = o->tail_len ? malloc(o->tail_len) : NULL;
		if ((!o->head_len || (o->head && pread(fd, o->head, o->head_len, 0) == (ssize_t)o->head_len)) &&
		    (!o->tail_len || (o->tail && pread(fd, o->tail, o->tail_len, st.st_size - (off_t)o->tail_len) ==
							  (ssize_t)o->tail_len)))
			rc = 0;
	}
	close(fd);
	if (rc < 0) {
		free(o->head);
		free(o->tail);
		o->head = o->tail = NULL;
		o->head_len = o->tail_len = 0;
	}
	return rc;
}

/* A copy of a record's result, its output read back from the spill files if the record is slim. */
static void record_result(const pd_session *s, const record *rec, pd_result *r)
{
	if (!rec->slim) {
		result_copy(r, &rec->r);
		return;
	}
	pd_result src = rec->r;
	src.out.head_len = src.out.tail_len = src.err.head_len = src.err.tail_len = 0;
	result_copy(r, &src); /* the rest (the audit events) */
	r->out = rec->r.out;
	r->err = rec->r.err;
	int a = rec->spill_gone ? -1 : read_back(s, rec->n, "stdout", &r->out);
	int b = rec->spill_gone ? -1 : read_back(s, rec->n, "stderr", &r->err);
	if (rec->spill_gone) {
		r->out.head_len = r->out.tail_len = r->err.head_len = r->err.tail_len = 0;
		snprintf(r->error, sizeof r->error,
			 "recorded output no longer kept (a session keeps %u MiB of it in memory and %u MiB "
			 "on disk, newest first)",
			 SESSION_OUTPUT_BYTES >> 20, SESSION_SPILL_BYTES >> 20);
	} else if (a < 0 || b < 0) {
		snprintf(r->error, sizeof r->error, "recorded output lost: its spill file does not hold it whole");
	}
}

static void spill_unlink(const pd_session *s, unsigned n)
{
	char p[POOL_PATH];
	snprintf(p, sizeof p, "%s/%u.stdout", s->dir, n);
	unlink(p);
	snprintf(p, sizeof p, "%s/%u.stderr", s->dir, n);
	unlink(p);
}

/* Newest first, the records keep their spill files while they hold at most SESSION_SPILL_BYTES
 * together; the older ones lose theirs. Called with the session entered and the pools' lock
 * held. */
static void trim_spills(pd_session *s)
{
	unsigned kept = s->nrec < SESSION_RECORDS ? s->nrec : SESSION_RECORDS;
	uint64_t total = 0;
	for (unsigned k = 0; k < kept; k++) {
		record *rec = &s->rec[(s->nrec - 1 - k) % SESSION_RECORDS];
		if (rec->spill_gone || total + rec->spill_bytes <= SESSION_SPILL_BYTES) {
			total += rec->spill_gone ? 0 : rec->spill_bytes;
			continue;
		}
		spill_unlink(s, rec->n);
		rec->spill_gone = true;
		rec->spill_bytes = 0;
	}
}

static uint64_t fd_size(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

const char *pd_session_id(const pd_session *s)
{
	return s->id;
}

void pd_session_template(const pd_session *s, char *name, size_t len)
{
	snprintf(name, len, "%s", s->pl->t.name);
}

pd_sandbox *pd_session_sandbox(pd_session *s)
{
	return s->sb;
}

pd_session *pd_session_open(pd_pools *p, const char *name, const pd_session_opts *o, pd_err *e)
{
	pd_session *s = calloc(1, sizeof *s);
	if (!s) {
		pd_fail(e, ENOMEM, "session");
		return NULL;
	}
	if (o && o->from_snapshot) {
		/* a fork: a new sandbox of the snapshot's template with its tree as a layer */
		char tree[POOL_PATH], tpl[64];
		pd_pool *pl = pd_snapshot_tree(p, o->from_snapshot, tree, sizeof tree, tpl, sizeof tpl, e) < 0
				      ? NULL
				      : pd_pool_named(p, tpl);
		if (pl && name && strcmp(name, tpl)) {
			pd_fail(e, EINVAL, "snapshot %s is of template %s, not %s", o->from_snapshot, tpl, name);
			pl = NULL;
		} else if (!pl && !e->code) {
			pd_fail(e, ENOENT, "snapshot %s: its template %s is gone", o->from_snapshot, tpl);
		}
		s->snapshot = pl ? strdup(o->from_snapshot) : NULL;
		s->top_layer = pl ? strdup(tree) : NULL;
		s->sb = s->snapshot && s->top_layer ? pd_pool_make_fork(p, pl, s->top_layer, e) : NULL;
		s->pl = pl;
	} else {
		s->sb = pd_pool_acquire(p, name, NULL, e);
		s->pl = s->sb ? pd_pool_of(p, s->sb) : NULL;
	}
	if (!s->sb) {
		free(s->snapshot);
		free(s->top_layer);
		free(s);
		return NULL;
	}
	s->p = p;
	snprintf(s->sandbox_id, sizeof s->sandbox_id, "%s", pd_sandbox_id(s->sb));
	pd_sandbox_use_id(s->sb, s->use_id, sizeof s->use_id);
	s->created_us = s->last_used_us = pd_now_us();
	s->idle_ttl_ms = o && o->idle_ttl_ms ? o->idle_ttl_ms : s->pl->t.session_idle_ttl_ms;
	s->max_ms = o && o->max_lifetime_ms ? o->max_lifetime_ms : s->pl->t.session_max_ms;
	if (o && o->metadata)
		s->metadata = strdup(o->metadata);
	s->end_on_limit = o && o->end_on_limit;
	if (o) {
		s->budget_steps = o->budget_steps;
		s->budget_wall_ms = o->budget_wall_ms;
		s->budget_cpu_ms = o->budget_cpu_ms;
	}
	pthread_mutex_lock(&p->mu);
	uint64_t seq = ++p->session_seq;
	pthread_mutex_unlock(&p->mu);
	snprintf(s->id, sizeof s->id, "ss-%08" PRIx32 "-%" PRIu64, pd_ctx_run_id(p->ctx), seq);
	snprintf(s->dir, sizeof s->dir, "%s/sessions/%s", pd_ctx_state_dir(p->ctx), s->id);
	if (pd_mkdir_p(s->dir, 0700) < 0) {
		pd_fail(e, errno, "session directory %s", s->dir);
		pd_pool_release(p, s->sb);
		free(s->metadata);
		free(s);
		return NULL;
	}
	if (session_traj_open(s, o, e) < 0) {
		pd_pool_release(p, s->sb);
		rm_dir(s->dir);
		free(s->metadata);
		free(s);
		return NULL;
	}
	pthread_mutex_lock(&p->mu);
	s->next = p->sessions;
	p->sessions = s;
	s->pl->nsessions++; /* a derived pool with a session is never retired (pool.c) */
	pthread_mutex_unlock(&p->mu);
	return s;
}

bool pd_session_expired(const pd_session *s, uint64_t now)
{
	return (s->idle_ttl_ms && now - s->last_used_us > s->idle_ttl_ms * 1000) ||
	       (s->max_ms && now - s->created_us > s->max_ms * 1000);
}

/* Marks the session in use; fails if it has ended. */
int session_enter(pd_session *s, pd_err *e)
{
	pthread_mutex_lock(&s->p->mu);
	if (session_not_held(s, e) < 0) {
		pthread_mutex_unlock(&s->p->mu);
		return -1;
	}
	if (s->running) {
		/* a snapshot, fork, reset, grade or file operation waits for the agents' execs: its
		 * state would be none of theirs */
		char who[200] = "";
		for (int i = 0; i < SESSION_AGENTS; i++)
			if (s->runs[i].on && strlen(who) + strlen(s->runs[i].agent) + 4 < sizeof who)
				snprintf(who + strlen(who), sizeof who - strlen(who), "%s'%s'", who[0] ? ", " : "",
					 s->runs[i].agent[0] ? s->runs[i].agent : "(default)");
		pd_fail(e, EBUSY, "session %s is busy: %u exec%s running (agent%s %s); this request needs the session alone: "
			"retry once they end", s->id, s->running, s->running == 1 ? "" : "s", s->running == 1 ? "" : "s", who);
		pthread_mutex_unlock(&s->p->mu);
		return -1;
	}
	s->busy = true;
	pthread_mutex_unlock(&s->p->mu);
	return 0;
}

void session_leave(pd_session *s)
{
	pthread_mutex_lock(&s->p->mu);
	s->busy = false;
	s->last_used_us = pd_now_us();
	pd_state st = pd_sandbox_state(s->sb);
	if (!s->dead && !session_sandbox_alive(s)) {
		/* a limit kill ended the sandbox (end_on_limit, or the step's processes could not
		 * be killed), or its init died: so did the session */
		s->dead = true;
		snprintf(s->dead_reason, sizeof s->dead_reason, "its sandbox is %s%s%s", pd_state_name(st),
			 s->damage[0] ? ": " : "", s->damage);
	}
	pthread_mutex_unlock(&s->p->mu);
}

void pd_session_use_id(pd_session *s, char *buf, size_t len)
{
	pthread_mutex_lock(&s->p->mu);
	snprintf(buf, len, "%s", s->use_id);
	pthread_mutex_unlock(&s->p->mu);
}

void pd_session_info(pd_session *s, char *sandbox_id, size_t id_len, char *state, size_t state_len)
{
	pthread_mutex_lock(&s->p->mu);
	/* not dead under the lock means the sandbox has not been handed to the reclaimer */
	snprintf(sandbox_id, id_len, "%s", s->sandbox_id);
	snprintf(state, state_len, "%s", s->dead ? (s->closed_by_pools ? "EXPIRED" : "ENDED")
					       : pd_state_name(pd_sandbox_state(s->sb)));
	pthread_mutex_unlock(&s->p->mu);
}

size_t pd_session_output_memory(pd_session *s)
{
	size_t total = 0;
	pthread_mutex_lock(&s->p->mu);
	for (unsigned i = 0; i < s->nrec && i < SESSION_RECORDS; i++)
		total += held_bytes(&s->rec[i].r);
	pthread_mutex_unlock(&s->p->mu);
	return total;
}

unsigned pd_session_exec_count(pd_session *s)
{
	return s->nexec;
}

int pd_session_begin(pd_session *s, pd_err *e)
{
	return session_enter(s, e);
}

void pd_session_end(pd_session *s)
{
	session_leave(s);
}

static record *find_record(pd_session *s, const char *rid)
{
	for (unsigned i = 0; i < s->nrec && i < SESSION_RECORDS; i++)
		if (!strcmp(s->rec[i].request_id, rid))
			return &s->rec[i];
	return NULL;
}

/* A streamed exec whose stdout noise will cut: its stdout is not passed on live (the answer
 * holds the cut one), its start and stderr are. */
typedef struct live_filter {
	pd_output_cb cb;
	void *arg;
} live_filter;

static void live_no_stdout(void *arg, int stream, const char *buf, size_t len)
{
	live_filter *f = arg;
	if (stream != 1)
		f->cb(f->arg, stream, buf, len);
}

/* The fields an exec's trajectory line gets beside its action and observation: its noise, and
 * what the caller's step_extra_fn returned (taken). NULL: none. */
static json_t *step_extra(json_t *noise, json_t *more)
{
	json_t *extra = noise ? json_pack("{s:O}", "noise", noise) : NULL;
	if (more && !extra)
		extra = json_object();
	if (more)
		json_object_update(extra, more);
	json_decref(more);
	return extra;
}

/* Whether the session's budget refuses another exec (e says which budget, EDQUOT); called with
 * the session entered. */
static bool budget_spent(pd_session *s, pd_err *e)
{
	uint64_t wall = (pd_now_us() - s->created_us) / 1000;
	if (s->budget_steps && s->nexec >= s->budget_steps) {
		s->budget_refused |= 1;
		pd_fail_as(e, EDQUOT, "budget: steps: the session's budget of %llu execs is spent",
			(unsigned long long)s->budget_steps);
	} else if (s->budget_wall_ms && wall >= s->budget_wall_ms) {
		s->budget_refused |= 2;
		pd_fail_as(e, EDQUOT, "budget: wall_s: the session's budget of %.3f s of wall time is spent",
			(double)s->budget_wall_ms / 1000);
	} else if (s->budget_cpu_ms && s->cpu_used_ms >= s->budget_cpu_ms) {
		s->budget_refused |= 4;
		pd_fail_as(e, EDQUOT, "budget: cpu_s: the session's budget of %.3f s of CPU time is spent (%.3f s used)",
			(double)s->budget_cpu_ms / 1000, (double)s->cpu_used_ms / 1000);
	} else {
		return false;
	}
	return true;
}

json_t *pd_session_budget_json(pd_session *s)
{
	pthread_mutex_lock(&s->p->mu);
	bool any = s->budget_steps || s->budget_wall_ms || s->budget_cpu_ms;
	json_t *b = any ? json_object() : json_null();
	if (s->budget_steps)
		json_object_set_new(b, "steps", json_integer((json_int_t)s->budget_steps));
	if (s->budget_wall_ms)
		json_object_set_new(b, "wall_s", json_real((double)s->budget_wall_ms / 1000));
	if (s->budget_cpu_ms)
		json_object_set_new(b, "cpu_s", json_real((double)s->budget_cpu_ms / 1000));
	json_t *ex = json_array();
	if (s->budget_refused & 1)
		json_array_append_new(ex, json_string("steps"));
	if (s->budget_refused & 2)
		json_array_append_new(ex, json_string("wall_s"));
	if ((s->budget_refused & 4) || (s->budget_cpu_ms && s->cpu_used_ms > s->budget_cpu_ms))
		json_array_append_new(ex, json_string("cpu_s"));
	json_t *o = json_pack("{s:o,s:{s:I,s:f,s:f},s:o}", "budget", b, "spent", "steps", (json_int_t)s->nexec, "wall_s",
			      (double)((pd_now_us() - s->created_us) / 1000) / 1000, "cpu_s", (double)s->cpu_used_ms / 1000,
			      "exceeded", ex);
	pthread_mutex_unlock(&s->p->mu);
	return o;
}

int pd_session_exec(pd_session *s, const pd_exec_opts *x, const char *rid, pd_result *r, pd_err *e)
{
	return pd_session_exec_audited(s, x, NULL, rid, r, NULL, e);
}

int pd_session_exec_audited(pd_session *s, const pd_exec_opts *x, const pd_audit_policy *p, const char *rid,
			    pd_result *r, pd_audit_verdict *v, pd_err *e)
{
	return pd_session_exec_extra(s, x, p, rid, NULL, NULL, r, v, e);
}

int pd_session_exec_extra(pd_session *s, const pd_exec_opts *x, const pd_audit_policy *p, const char *rid,
			  pd_step_extra_fn fn, void *fn_arg, pd_result *r, pd_audit_verdict *v, pd_err *e)
{
	pd_session_step st = {.fn = fn, .fn_arg = fn_arg};
	return pd_session_exec_step(s, x, p, rid, &st, r, v, e);
}

/* The exec's spill files, <dir>/<n>.stdout and .stderr, into xo (-1 when they cannot be made) */
static void spill_open(const pd_session *s, unsigned n, pd_exec_opts *xo)
{
	char path[POOL_PATH];
	xo->spill = true;
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/%u.%s", s->dir, n, i ? "stderr" : "stdout");
		xo->spill_fd[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	}
}

/* Closes them (and removes them: drop); the bytes they held */
static uint64_t spill_close(const pd_session *s, unsigned n, pd_exec_opts *xo, bool drop)
{
	uint64_t bytes = fd_size(xo->spill_fd[0]) + fd_size(xo->spill_fd[1]);
	for (int i = 0; i < 2; i++)
		if (xo->spill_fd[i] >= 0)
			close(xo->spill_fd[i]);
	if (drop)
		spill_unlink(s, n);
	return bytes;
}

/* A retry of a recorded request id: its result again (true), under the lock (the records change
 * while other agents' execs end) */
static bool recorded(pd_session *s, const char *rid, pd_session_step *st, pd_result *r)
{
	pthread_mutex_lock(&s->p->mu);
	record *rec = rid ? find_record(s, rid) : NULL;
	if (rec) {
		record_result(s, rec, r);
		snprintf(st->ran_by, sizeof st->ran_by, "%s", rec->agent);
	}
	pthread_mutex_unlock(&s->p->mu);
	return rec != NULL;
}

/* The exec's number, past the budget's check (0: refused, e says which budget) */
static unsigned exec_number(pd_session *s, pd_err *e)
{
	pthread_mutex_lock(&s->p->mu);
	unsigned n = budget_spent(s, e) ? 0 : ++s->nexec;
	pthread_mutex_unlock(&s->p->mu);
	return n;
}

/* Keeps the last SESSION_RECORDS results; the oldest goes first, with its spilled output (only
 * a kept record's output can be fetched: a session of many execs would otherwise hold every
 * exec's output, up to the output kill each, until it ends). The records change under the
 * pools' lock: an output fetch or another agent's exec may be looking them up meanwhile. */
static void keep_record(pd_session *s, unsigned n, const char *rid, const char *agent, const pd_result *r,
			uint64_t spilled, json_t *noise)
{
	pd_result copy, old;
	result_copy(&copy, r);
	memset(&old, 0, sizeof old);
	unsigned old_n = 0;
	pthread_mutex_lock(&s->p->mu);
	record *rec = &s->rec[s->nrec % SESSION_RECORDS];
	if (s->nrec >= SESSION_RECORDS) {
		old = rec->r;
		old_n = rec->spill_gone ? 0 : rec->n;
	}
	rec->slim = false;
	rec->spill_gone = false;
	rec->spill_bytes = spilled;
	snprintf(rec->request_id, sizeof rec->request_id, "%s", rid ? rid : "");
	if (!rid)
		snprintf(rec->request_id, sizeof rec->request_id, "#%u", n);
	snprintf(rec->agent, sizeof rec->agent, "%s", agent);
	rec->n = n;
	rec->r = copy;
	/* the sandbox's CPU since the counter this exec began at, less what an overlapping exec of
	 * another agent counted already: the budget counts the cgroup's CPU once */
	uint64_t from = r->cpu_counter_us[0] > s->cpu_mark_us ? r->cpu_counter_us[0] : s->cpu_mark_us;
	if (r->cpu_counter_us[1] || r->cpu_counter_us[0])
		s->cpu_used_ms += r->cpu_counter_us[1] > from ? (r->cpu_counter_us[1] - from) / 1000 : 0;
	else
		s->cpu_used_ms += r->cpu_ms; /* not measured that way (an injected failure, gvisor) */
	if (r->cpu_counter_us[1] > s->cpu_mark_us)
		s->cpu_mark_us = r->cpu_counter_us[1];
	free(rec->noise);
	rec->noise = noise ? json_dumps(noise, JSON_COMPACT) : NULL;
	s->nrec++;
	slim_records(s);
	trim_spills(s);
	pthread_mutex_unlock(&s->p->mu);
	pd_result_free(&old);
	if (old_n)
		spill_unlink(s, old_n);
}

/* The exec's trajectory line (its error says so if it could not be written) */
static void exec_line(pd_session *s, const char *rid, const char *agent, uint64_t t0,
		      const pd_exec_opts *xo, json_t *noise, pd_session_step *st, const pd_audit_policy *p,
		      pd_result *r, pd_audit_verdict *v)
{
	json_t *obs = pd_result_json(r, true);
	if (obs)
		json_object_set_new(obs, "output_request_id", json_string(st->output_request_id));
	pd_err te = {0};
	json_t *extra = step_extra(noise, st->fn ? st->fn(st->fn_arg, r, p ? v : NULL) : NULL);
	if (agent[0]) {
		if (!extra)
			extra = json_object();
		json_object_set_new(extra, "agent", json_string(agent));
	}
	long line = session_traj_step(s, "exec", rid, t0, session_exec_action(xo), obs, extra, true, &te);
	json_decref(extra);
	if (line < 0)
		snprintf(r->error + strlen(r->error), sizeof r->error - strlen(r->error), "%strajectory: %s",
			 r->error[0] ? "; " : "", PD_ERR_STR(&te));
}

int pd_session_exec_step(pd_session *s, const pd_exec_opts *x, const pd_audit_policy *p, const char *rid,
			 pd_session_step *st, pd_result *r, pd_audit_verdict *v, pd_err *e)
{
	memset(r, 0, sizeof *r);
	const char *agent = st->agent ? st->agent : "";
	st->ran_by[0] = 0;
	snprintf(st->output_request_id, sizeof st->output_request_id, "%s", rid ? rid : "");
	if (rid && (!*rid || strlen(rid) >= sizeof s->rec[0].request_id))
		return pd_fail(e, EINVAL, "request id must have 1 to 127 characters");
	if (agent[0] && pd_session_agent_check(agent, e) < 0)
		return -1;
	int slot = session_exec_enter(s, agent, rid, p || x->audit, e);
	if (slot < 0)
		return -1;
	if (recorded(s, rid, st, r)) {
		session_exec_leave(s, slot);
		if (p)
			pd_audit_evaluate(p, r, NULL, v);
		return 0;
	}
	snprintf(st->ran_by, sizeof st->ran_by, "%s", agent);
	/* no command named: the image's Entrypoint then Cmd, as `docker run IMAGE` runs them */
	char *const *argv = x->argv;
	if (!argv && s->pl->t.image && s->pl->t.image->command && s->pl->t.image->command[0])
		argv = s->pl->t.image->command;
	if (!argv) {
		session_exec_leave(s, slot);
		return pd_fail_as(e, EINVAL, "cmd: give cmd (a list of strings) or shell (a string); the session's image "
					     "has no Entrypoint or Cmd to run instead");
	}
	unsigned n = exec_number(s, e);
	if (!n) {
		session_exec_leave(s, slot);
		return -1;
	}
	if (!rid)
		snprintf(st->output_request_id, sizeof st->output_request_id, "#%u", n);
	pd_exec_opts xo = *x;
	xo.argv = argv;
	spill_open(s, n, &xo);
	if (!xo.envp && s->pl->t.env[0])
		xo.envp = s->pl->t.env;
	if (!xo.cwd && s->pl->t.cwd)
		xo.cwd = s->pl->t.cwd;
	xo.spill_max = SESSION_SPILL_BYTES;
	xo.step_kill = !s->end_on_limit;
	/* a step must see and signal what earlier steps left running (a server it started, a job in
	 * the background): one Landlock domain per exec would hide them (paddock.h) */
	xo.no_landlock = true;
	/* other agents' execs may run beside it, in the same sandbox */
	xo.concurrent = true;
	live_filter lf = {x->on_data, x->data_arg};
	if (x->on_data && session_noise_cuts(s, n)) {
		xo.on_data = live_no_stdout;
		xo.data_arg = &lf;
	}
	uint64_t t0 = pd_wall_us();
	bool skip = false;
	noise_armed arm;
	json_t *noise = session_noise_before(s, n, &xo, &arm, r, &skip);
	/* the policy's decoys planted and honey variables set, as for a run (pd_sandbox_exec_audited),
	 * judged with the sandbox's files changed since the exec began (a decoy's answer or a token
	 * written), before the record is kept: its events are the record's. xo keeps what was asked
	 * (the trajectory records it): not the tokens */
	int rc = skip ? 0 : pd_sandbox_exec_audited(s->sb, &xo, p, PD_AUDITED_PLANT | PD_AUDITED_SINCE, r, v, e);
	if (skip && p)
		pd_audit_evaluate(p, r, NULL, v);
	if (rc == 0)
		session_noise_after(s, n, &arm, r, noise);
	if (rc == 0 && !session_sandbox_alive(s)) {
		pthread_mutex_lock(&s->p->mu);
		snprintf(s->damage, sizeof s->damage, "%s %s", pd_status_name(r->status),
			 r->error[0] ? r->error : "(a limit kill of the whole sandbox)");
		pthread_mutex_unlock(&s->p->mu);
	}
	/* failed: no record points at its spill files, nothing could fetch them */
	uint64_t spilled = spill_close(s, n, &xo, rc < 0);
	if (rc == 0) {
		keep_record(s, n, rid, agent, r, spilled, noise);
		exec_line(s, rid, agent, t0, &xo, noise, st, p, r, v);
	}
	json_decref(noise);
	session_exec_leave(s, slot);
	return rc;
}

char *pd_session_noise_of(pd_session *s, const char *rid)
{
	char *out = NULL;
	pthread_mutex_lock(&s->p->mu);
	record *rec = find_record(s, rid);
	if (rec && rec->noise)
		out = strdup(rec->noise);
	pthread_mutex_unlock(&s->p->mu);
	return out;
}

int pd_session_output_path(pd_session *s, const char *rid, int stream, char *path, size_t len, pd_err *e)
{
	if (stream != 1 && stream != 2)
		return pd_fail(e, EINVAL, "stream must be 1 (stdout) or 2 (stderr)");
	unsigned n = 0;
	bool gone = false;
	pthread_mutex_lock(&s->p->mu);
	record *rec = find_record(s, rid);
	if (rec)
		n = rec->n, gone = rec->spill_gone;
	pthread_mutex_unlock(&s->p->mu);
	if (!n)
		return pd_fail(e, ENOENT, "session %s has no exec with request id '%s'", s->id, rid);
	if (gone)
		return pd_fail(e, ENOENT,
			       "the output of exec '%s' is no longer kept: a session keeps %u MiB of its "
			       "newest execs' output",
			       rid, SESSION_SPILL_BYTES >> 20);
	snprintf(path, len, "%s/%u.%s", s->dir, n, stream == 1 ? "stdout" : "stderr");
	return 0;
}

int pd_session_reset(pd_session *s, const char *rid, pd_err *e)
{
	if (session_enter(s, e) < 0)
		return -1;
	uint64_t t0 = pd_wall_us();
	char old_id[40];
	snprintf(old_id, sizeof old_id, "%s", s->sandbox_id);
	pd_err re = {0};
	/* a fork's fresh state is its snapshot: the root again over the same layers, no template
	 * files placed over the snapshot's */
	int rc = s->snapshot ? pd_sandbox_reset(s->sb, &re) : pd_pool_reset(s->pl, s->sb, &re);
	if (rc < 0) {
		/* refused (a writable bind, the host's network) or failed: the fresh state is a new
		 * sandbox of the template; the old one goes to the reclaimer, which destroys it */
		pd_sandbox *fresh = pd_pool_acquire(s->p, s->pl->t.name, NULL, e);
		if (!fresh) {
			session_leave(s);
			return -1;
		}
		pd_pool_release(s->p, s->sb);
		pthread_mutex_lock(&s->p->mu);
		s->sb = fresh;
		snprintf(s->sandbox_id, sizeof s->sandbox_id, "%s", pd_sandbox_id(fresh));
		pthread_mutex_unlock(&s->p->mu);
		rc = 0;
	}
	pthread_mutex_lock(&s->p->mu);
	pd_sandbox_use_id(s->sb, s->use_id, sizeof s->use_id);
	s->cpu_mark_us = 0; /* a new sandbox's counter starts again; no exec runs meanwhile */
	pthread_mutex_unlock(&s->p->mu);
	json_t *obs = json_pack("{s:s,s:s,s:s,s:b}", "sandbox_id", s->sandbox_id, "use_id", s->use_id, "method",
				strcmp(old_id, s->sandbox_id) ? "new sandbox (the reset was refused)" : "pd_sandbox_reset",
				"reset", 1);
	if (strcmp(old_id, s->sandbox_id))
		json_object_set_new(obs, "reset_refused", json_string(PD_ERR_STR(&re)));
	pd_err te = {0};
	session_traj_step(s, "reset", rid, t0, json_object(), obs, NULL, true, &te);
	session_leave(s);
	return rc;
}

static void session_free(pd_session *s)
{
	session_traj_close(s);

	for (unsigned i = 0; i < s->nrec && i < SESSION_RECORDS; i++) {
		pd_result_free(&s->rec[i].r);
		free(s->rec[i].noise);
	}
	rm_dir(s->dir);
	free(s->metadata);
	free(s->snapshot);
	free(s->top_layer);
	free(s);
}

void pd_session_close(pd_session *s)
{
	if (!s)
		return;
	pd_pools *p = s->p;
	pthread_mutex_lock(&p->mu);
	for (pd_session **pp = &p->sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			s->pl->nsessions--;
			break;
		}
	bool released = s->closed_by_pools;
	pthread_mutex_unlock(&p->mu);
	if (!released)
		pd_pool_release(p, s->sb);
	session_free(s);
}

void pd_session_close_lost(pd_session *s, const char *why)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->p->mu);
	if (!s->dead_reason[0]) {
		snprintf(s->dead_reason, sizeof s->dead_reason, "%s", why);
		s->lost = true;
	}
	pthread_mutex_unlock(&s->p->mu);
	pd_session_close(s);
}

/* Called by the reclaimer with the lock held: ends sessions past their deadlines. The session
 * object stays (its owner still holds the pointer) until pd_session_close. */
void pd_sessions_expire_locked(pd_pools *p, uint64_t now)
{
	for (pd_session *s = p->sessions; s; s = s->next) {
		if (s->dead || s->busy || s->running || !pd_session_expired(s, now))
			continue;
		s->dead = true;
		s->closed_by_pools = true;
		bool idle = s->idle_ttl_ms && now - s->last_used_us > s->idle_ttl_ms * 1000;
		snprintf(s->dead_reason, sizeof s->dead_reason, "%s",
			 idle ? "idle TTL passed (EXPIRED)" : "maximum lifetime passed (EXPIRED)");
		pd_pool *pl = pd_pool_of(p, s->sb);
		if (pl) {
			if (pl->in_use)
				pl->in_use--;
			pl->st.expired++;
		}
		if (s->snapshot)
			pd_pool_discard_locked(p, s->pl, s->sb); /* a fork's sandbox is never reused */
		else
			pd_pool_reclaim_locked(p, pl ? pl : s->pl, s->sb);
	}
}

void pd_sessions_free_all(pd_pools *p)
{
	/* sessions still open at shutdown: their sandboxes were reclaimed with the pools */
	while (p->sessions) {
		pd_session *s = p->sessions;
		p->sessions = s->next;
		if (!s->closed_by_pools) {
			char residue[128];
			pd_sandbox_destroy(s->sb, residue, sizeof residue);
		}
		if (!s->dead_reason[0]) {
			snprintf(s->dead_reason, sizeof s->dead_reason, "%s", PD_SESSION_LOST_STOP);
			s->lost = true;
		}
		session_free(s);
	}
}
