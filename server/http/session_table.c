/* The table of open sessions (pd_server.sessions, under pd_server.mu): a session found by id,
 * held against closing while an operation uses it and given back, opened and filed, closed unless
 * in use. Under every other session file: sessions.c (the endpoints), replay.c and session_ops.c
 * use it, and it calls none of them. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sess_entry *session_find(pd_server *s, const char *id)
{
	for (int i = 0; i < MAX_SESSIONS; i++)
		if (s->sessions[i].s && !s->sessions[i].closing && !strcmp(s->sessions[i].id, id))
			return &s->sessions[i];
	return NULL;
}

sess_entry *session_hold(pd_server *s, const char *id)
{
	pthread_mutex_lock(&s->mu);
	sess_entry *se = session_find(s, id);
	if (se)
		se->ops++;
	pthread_mutex_unlock(&s->mu);
	return se;
}

void session_unhold(pd_server *s, sess_entry *se)
{
	pd_session *to_close = NULL;
	pthread_mutex_lock(&s->mu);
	if (se && --se->ops == 0 && se->closing) {
		to_close = se->s;
		se->s = NULL;
		se->closing = false;
	}
	pthread_mutex_unlock(&s->mu);
	if (to_close)
		pd_session_close(to_close);
}

/* Opens one session for q and files it in the table: its description, or NULL with the answer's
 * status and e filled. digest: the request image's, or NULL. */
json_t *session_open_one(pd_server *s, pd_session_create_req *q, const char *digest, int *status, pd_err *e)
{
	/* the acquire may create a sandbox on the spot: this runs on the operation's own thread */
	pd_session *ss = pd_session_open(s->pools, q->from_snapshot[0] && !q->template_given ? NULL : q->template_name,
					 &q->o, e);
	if (!ss) {
		*status = e->code == ENOENT || e->code == EINVAL ? 400 : 503;
		return NULL;
	}
	if (session_open_network(ss, q, status, e) < 0) {
		pd_session_close(ss);
		return NULL;
	}
	char tpl[64], tver[48];
	pd_session_template(ss, tpl, sizeof tpl);
	const pd_template *st = pd_pools_template(s->pools, tpl); /* its pool holds the session's sandbox */
	snprintf(tver, sizeof tver, "%s", st ? st->version : "");
	pthread_mutex_lock(&s->mu);
	sess_entry *slot = NULL;
	for (int i = 0; i < MAX_SESSIONS && !slot; i++)
		if (!s->sessions[i].s)
			slot = &s->sessions[i];
	if (!slot) {
		/* full: forget sessions the pools already ended (their sandboxes are gone; a client
		 * asking about one now gets 404 rather than 410) */
		uint64_t now = pd_now_us();
		for (int i = 0; i < MAX_SESSIONS; i++) {
			pd_session *old = s->sessions[i].s;
			if (old && !s->sessions[i].ops && pd_session_expired(old, now)) {
				s->sessions[i].s = NULL;
				pthread_mutex_unlock(&s->mu);
				pd_session_close(old);
				pthread_mutex_lock(&s->mu);
				if (!slot && !s->sessions[i].s)
					slot = &s->sessions[i];
			}
		}
	}
	if (slot && session_rules_open(slot, st ? st->rules : NULL, q->rules, e) < 0) {
		pthread_mutex_unlock(&s->mu);
		pd_session_close(ss);
		*status = 400;
		return NULL;
	}
	if (slot) {
		slot->s = ss;
		snprintf(slot->id, sizeof slot->id, "%s", pd_session_id(ss));
		snprintf(slot->template_name, sizeof slot->template_name, "%s", tpl);
		snprintf(slot->image_name, sizeof slot->image_name, "%s",
			 q->image[0] && !pd_image_ref_is_digest(q->image) ? q->image : "");
		snprintf(slot->template_version, sizeof slot->template_version, "%s", tver);
		slot->created_ms = pd_wall_us() / 1000;
	}
	pthread_mutex_unlock(&s->mu);
	if (!slot) {
		pd_session_close(ss);
		*status = 503;
		pd_fail(e, EAGAIN, "too many open sessions (%d): close some", MAX_SESSIONS);
		return NULL;
	}
	char uid[56];
	pd_session_use_id(ss, uid, sizeof uid);
	pd_log("info", "session opened", PD_LS("session_id", pd_session_id(ss)),
	       PD_LS("sandbox_id", pd_sandbox_id(pd_session_sandbox(ss))), PD_LS("use_id", uid),
	       PD_LS("template", tpl));
	json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "session_id", pd_session_id(ss), "sandbox_id",
			      pd_sandbox_id(pd_session_sandbox(ss)), "use_id", uid, "template", tpl);
	if (q->from_snapshot[0])
		json_object_set_new(o, "from_snapshot", json_string(q->from_snapshot));
	if (q->network[0])
		json_object_set_new(o, "network", json_string(q->network));
	if (digest && digest[0]) {
		json_t *im = json_object();
		if (!pd_image_ref_is_digest(q->image))
			json_object_set_new(im, "name", json_string(q->image));
		json_object_set_new(im, "digest", json_string(digest));
		json_object_set_new(o, "image", im);
	}
	return o;
}

void session_delete_quiet(pd_server *s, const char *id)
{
	pthread_mutex_lock(&s->mu);
	sess_entry *se = session_find(s, id);
	pd_session *ss = NULL;
	if (se && se->ops)
		se->closing = true;
	else if (se) {
		ss = se->s;
		se->s = NULL;
	}
	pthread_mutex_unlock(&s->mu);
	if (ss)
		pd_session_close(ss);
}
