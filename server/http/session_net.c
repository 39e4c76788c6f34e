/* POST /v1/sessions/<id>/network: the network of the session's next steps (pd_session_set_network),
 * and the first stage's, given when the session is opened. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

static int status_of(const pd_err *e)
{
	return e->code == EINVAL ? 400 : e->code == EPERM ? 403 : e->code == EBUSY ? 409 : e->code == ESRCH ? 410 : 503;
}

void session_network(req *r, sess_entry *se)
{
	char mode[16];
	json_t *egress = NULL;
	pd_err e = {0};
	if (pd_session_network_parse(r->body, r->len, mode, sizeof mode, &egress, &e) < 0) {
		http_set_error(r, 400, "%s", e.msg);
		return;
	}
	const char *rid = r->q.step_id[0] ? r->q.step_id : NULL;
	json_t *o = pd_session_set_network(se->s, mode, egress, rid, &e);
	json_decref(egress);
	if (!o) {
		http_set_error(r, status_of(&e), "%s", e.msg);
		return;
	}
	json_object_set_new(o, "session_id", json_string(se->id));
	http_set_json(r, 200, o);
}

int session_open_network(pd_session *ss, const pd_session_create_req *q, int *status, pd_err *e)
{
	if (!q->network[0])
		return 0;
	json_t *o = pd_session_set_network(ss, q->network, q->egress, NULL, e);
	if (!o) {
		*status = status_of(e);
		return -1;
	}
	json_decref(o);
	return 0;
}
