/* A snapshot of a session's files taken as one of its steps (pd_session_snapshot): it holds the
 * session (session_enter) and is a line of its trajectory. The copy and the snapshots' store are
 * snapshot.c's, below the session. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

json_t *pd_session_snapshot(pd_session *s, const char *name, uint64_t ttl_s, uint64_t max_bytes,
			    const char *rid, pd_err *e)
{
	char gen[64];
	if (!name) {
		snprintf(gen, sizeof gen, "snap-%s-%llx", s->id + 3,
			 (unsigned long long)pd_wall_us());
		name = gen;
	}
	if (!session_snapshot_name_ok(name)) {
		pd_fail(e, EINVAL, "name: 1 to 63 letters, digits, '-', '_' or '.'");
		return NULL;
	}
	if (!ttl_s)
		ttl_s = 3600;
	if (!max_bytes)
		max_bytes = 1ull << 30;
	if (session_enter(s, e) < 0)
		return NULL;
	uint64_t t0 = pd_wall_us();
	const char *state = pd_ctx_state_dir(s->p->ctx);
	char root[4096], final[4096], tmp[4096], tree[4096];
	snprintf(root, sizeof root, "%s/snapshots", state);
	session_snapshots_sweep(s->p, root);
	snprintf(final, sizeof final, "%s/%s", root, name);
	snprintf(tmp, sizeof tmp, "%s/.tmp-%s", root, name);
	snprintf(tree, sizeof tree, "%s/tree", tmp);
	json_t *res = NULL;
	struct {
		uint64_t bytes, files;
		int err;
	} c = {0, 0, 0};
	struct stat st;
	if (stat(final, &st) == 0) {
		pd_fail(e, EEXIST,
			"snapshot %s exists (snapshots are immutable: take another name)", name);
		goto out;
	}
	session_rm_tree(tmp);
	if (pd_mkdir_p(tree, 0755) < 0) {
		pd_fail(e, errno, "snapshot directory %s", tree);
		goto out;
	}
	json_t *dirs = json_array();
	c.err = session_copy_tree(s, tree, max_bytes, &c.bytes, &c.files, dirs);
	if (c.err) {
		pd_fail(e, c.err,
			c.err == EFBIG ? "snapshot of session %s: over its size cap of %llu bytes"
				       : "snapshot of session %s",
			s->id, (unsigned long long)max_bytes);
		session_rm_tree(tmp);
		json_decref(dirs);
		goto out;
	}
	time_t now = time(NULL);
	res = json_pack("{s:s,s:s,s:s,s:o,s:I,s:I,s:I,s:I,s:s}", "snapshot", name, "template",
			s->pl->t.name, "session_id", s->id, "captured", dirs, "bytes",
			(json_int_t)c.bytes, "files", (json_int_t)c.files, "created_at",
			(json_int_t)now, "expires_at", (json_int_t)(now + (time_t)ttl_s),
			"processes", "not captured: a snapshot holds files only");
	char meta[4096];
	snprintf(meta, sizeof meta, "%s/meta.json", tmp);
	if (json_dump_file(res, meta, JSON_COMPACT) < 0 || rename(tmp, final) < 0) {
		pd_fail(e, errno ? errno : EIO, "snapshot %s", name);
		session_rm_tree(tmp);
		json_decref(res);
		res = NULL;
		goto out;
	}
out:;
	pd_err te = {0};
	json_t *obs = res ? json_deep_copy(res) : json_pack("{s:s}", "error", PD_ERR_STR(e));
	session_traj_step(s, "snapshot", rid, t0,
			  json_pack("{s:s,s:I,s:I}", "name", name, "ttl_s", (json_int_t)ttl_s,
				    "max_bytes", (json_int_t)max_bytes),
			  obs, NULL, false, &te);
	session_leave(s);
	return res;
}
