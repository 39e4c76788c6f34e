/* GET /v1/sessions/<id>/trajectory: the session's trajectory file as it is on disk (JSON lines,
 * byte for byte), while the session lives, after it ended and after a daemon restart. Answered
 * on the event thread: an open and an fstat; libmicrohttpd sends from the descriptor. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void trajectory_get(req *r, const char *id)
{
	char path[4096];
	pd_err e = {0};
	if (pd_trajectory_path(pd_ctx_state_dir(r->srv->ctx), id, path, sizeof path, &e) < 0) {
		http_set_error(r, 404, "no trajectory %s", id);
		return;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		if (err == ENOENT)
			http_set_error(r, 404, "no trajectory %s", id);
		else
			http_set_error(r, 500, "trajectory %s: %s", id, strerror(err));
		return;
	}
	http_set_resp_fd(r, 200, "application/x-ndjson", fd, (uint64_t)st.st_size);
}

/* A session this daemon does not hold: ended by something else than its client's DELETE (lost
 * with a daemon that stopped or died, expired and forgotten) is 410 with the closing line's reason
 * and time, read from its trajectory; closed by its client, or never known, 404. Either way the
 * client has its answer at once. */
void session_unknown(req *r, const char *id)
{
	pd_err e = {0};
	json_t *last = pd_trajectory_last(pd_ctx_state_dir(r->srv->ctx), id, &e);
	const char *what = json_string_value(json_object_get(last, "kind"));
	const char *reason = json_string_value(json_object_get(last, "reason"));
	if (what && !strcmp(what, "close") && reason) {
		bool lost = json_is_true(json_object_get(last, "lost")); /* as data, never read from the reason */
		json_t *o = json_pack("{s:s+++,s:s,s:s,s:s,s:O}", "error", "session ", id, " has ended: ", reason,
				      "session_id", id, "state", lost ? "LOST" : "ENDED", "reason", reason, "ended_at",
				      json_object_get(last, "ended_at") ? json_object_get(last, "ended_at") : json_null());
		http_set_json(r, 410, o);
	} else {
		http_set_error(r, 404, "no session %s", id);
	}
	json_decref(last);
}
