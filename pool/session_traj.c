/* A session's trajectory: the header line when it opens, a line per step (one at a time under
 * traj_mu: several agents' steps may end at once), the closing line; the files each step changed in the
 * writable directories (fsdiff.c); fast-forward from a recorded trajectory. The file itself and
 * its durability are trajectory.c's. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void session_wall_text(uint64_t us, char b[40])
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(b, 40, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(us % 1000000 / 1000));
}

static json_t *wall_text(uint64_t us)
{
	char b[40];
	session_wall_text(us, b);
	return json_string(b);
}

int session_traj_open(pd_session *s, const pd_session_opts *o, pd_err *e)
{
	pthread_mutex_init(&s->traj_mu, NULL);
	if (o && o->group_id)
		snprintf(s->group_id, sizeof s->group_id, "%s", o->group_id);
	if (o && o->sample_id)
		snprintf(s->sample_id, sizeof s->sample_id, "%s", o->sample_id);
	if (o)
		s->noise = o->noise;
	const char *state = pd_ctx_state_dir(s->p->ctx);
	if (o && o->resume_from) {
		s->resume = pd_traj_index_load(state, o->resume_from, e);
		if (!s->resume)
			return -1;
		snprintf(s->resume_id, sizeof s->resume_id, "%s", o->resume_from);
	}
	size_t nd = 0;
	s->scan_dirs[nd++] = "/work";
	s->scan_dirs[nd++] = "/tmp";
	if (s->pl->t.cwd && strcmp(s->pl->t.cwd, "/"))
		s->scan_dirs[nd++] = s->pl->t.cwd;
	s->scan_dirs[nd] = NULL;
	json_t *meta = s->metadata ? json_loads(s->metadata, JSON_DECODE_ANY, NULL) : NULL;
	json_t *h = json_pack("{s:s,s:s,s:s,s:o,s:o,s:b}", "kind", "session", "template", s->pl->t.name,
			      "sandbox_id", s->sandbox_id, "started_at", wall_text(pd_wall_us()), "metadata",
			      meta ? meta : json_null(), "end_on_limit", s->end_on_limit);
	json_object_set_new(h, "use_id", json_string(s->use_id));
	/* the image, {name, digest} as every record names it (the host image: "host" and its id) */
	char iname[256], idigest[PD_DIGEST_LEN];
	pd_pools_template_image(s->p, &s->pl->t, iname, sizeof iname, idigest, sizeof idigest);
	if (o && o->image_name && o->image_name[0])
		snprintf(iname, sizeof iname, "%s", o->image_name);
	json_object_set_new(h, "image", json_pack("{s:o,s:o}", "name", iname[0] ? pd_json_text(iname) : json_null(),
						   "digest", idigest[0] ? json_string(idigest) : json_null()));
	if (s->group_id[0])
		json_object_set_new(h, "group_id", json_string(s->group_id));
	if (s->sample_id[0])
		json_object_set_new(h, "sample_id", json_string(s->sample_id));
	if (s->snapshot)
		json_object_set_new(h, "from_snapshot", json_string(s->snapshot));
	if (s->resume_id[0])
		json_object_set_new(h, "resumed_from", json_string(s->resume_id));
	if (s->budget_steps || s->budget_wall_ms || s->budget_cpu_ms)
		json_object_set_new(h, "budget", json_pack("{s:I,s:f,s:f}", "steps", (json_int_t)s->budget_steps, "wall_s",
							   (double)s->budget_wall_ms / 1000, "cpu_s",
							   (double)s->budget_cpu_ms / 1000));
	if (s->noise.on)
		json_object_set_new(h, "noise", json_pack("{s:I,s:I,s:f,s:f}", "seed", (json_int_t)s->noise.seed,
							  "latency_ms", (json_int_t)s->noise.latency_ms, "fail_rate",
							  s->noise.fail_rate, "truncate_rate", s->noise.truncate_rate));
	s->traj = pd_traj_create(state, s->id, h, e);
	json_decref(h);
	if (!s->traj) {
		pd_traj_index_free(s->resume);
		return -1;
	}
	if (pd_fsmap_scan(pd_sandbox_pid(s->sb), s->scan_dirs, &s->fs) == 0)
		pd_fsmap_add_upper(s->sb, s->scan_dirs, &s->fs);
	return 0;
}

/* Appends a line; the caller holds the session (enter). Takes action and observation; a note (a
 * verdict, an annotation) is not one of the agent's steps. */
static long traj_line(pd_session *s, const char *kind, const char *rid, uint64_t t0, json_t *action, json_t *obs,
		      json_t *extra, bool scan, bool note, pd_err *e)
{
	/* agents' steps end at once: one line at a time, each with the changes since the last */
	pthread_mutex_lock(&s->traj_mu);
	uint64_t t1 = pd_wall_us();
	json_t *changed = NULL;
	bool truncated = false;
	if (scan && session_sandbox_alive(s)) {
		pd_fsmap now;
		if (pd_fsmap_scan(pd_sandbox_pid(s->sb), s->scan_dirs, &now) == 0) {
			/* and the image's writable layer: what the step changed outside those */
			if (pd_fsmap_add_upper(s->sb, s->scan_dirs, &now) < 0)
				now.truncated = true; /* not listed whole: say so */
			changed = pd_fsmap_diff(pd_sandbox_pid(s->sb), &s->fs, &now);
			truncated = now.truncated || s->fs.truncated;
			pd_fsmap_free(&s->fs);
			s->fs = now;
		}
	}
	json_t *line = json_pack("{s:s,s:o,s:o,s:o,s:I,s:o,s:o,s:o}", "kind", kind, "request_id",
				 rid ? json_string(rid) : json_null(), "started_at", wall_text(t0), "ended_at",
				 wall_text(t1), "duration_ms", (json_int_t)((t1 - t0) / 1000), "action",
				 action ? action : json_object(), "observation", obs ? obs : json_object(),
				 "files_changed", changed ? changed : json_array());
	pthread_mutex_lock(&s->p->mu);
	json_object_set_new(line, "use_id", json_string(s->use_id));
	pthread_mutex_unlock(&s->p->mu);
	if (s->group_id[0])
		json_object_set_new(line, "group_id", json_string(s->group_id));
	if (s->sample_id[0])
		json_object_set_new(line, "sample_id", json_string(s->sample_id));
	if (truncated)
		json_object_set_new(line, "files_changed_truncated", json_true());
	if (extra)
		json_object_update(line, extra);
	long n = s->traj ? pd_traj_append(s->traj, line, e) : (json_decref(line), pd_fail(e, EBADF, "trajectory closed"));
	if (n > 0 && !note)
		s->steps++;
	pthread_mutex_unlock(&s->traj_mu);
	return n;
}

long pd_session_note(pd_session *s, const char *kind, const char *rid, json_t *action, json_t *obs, json_t *extra,
		     pd_err *e)
{
	uint64_t t0 = pd_wall_us();
	long n = traj_line(s, kind, rid, t0, action, obs, extra, false, true, e);
	json_decref(extra);
	return n;
}

unsigned pd_session_steps(pd_session *s)
{
	pthread_mutex_lock(&s->traj_mu);
	unsigned n = s->steps;
	pthread_mutex_unlock(&s->traj_mu);
	return n;
}

long session_traj_step(pd_session *s, const char *kind, const char *rid, uint64_t t0, json_t *action,
			json_t *obs, json_t *extra, bool scan, pd_err *e)
{
	return traj_line(s, kind, rid, t0, action, obs, extra, scan, false, e);
}

long pd_session_record(pd_session *s, const char *kind, const char *rid, uint64_t t0, json_t *action,
		       json_t *obs, pd_err *e)
{
	return session_traj_step(s, kind, rid, t0, action, obs, NULL, true, e);
}

json_t *pd_session_fast_forward(pd_session *s, const char *kind, const char *rid)
{
	json_t *rec = pd_traj_index_find(s->resume, kind, rid);
	if (!rec)
		return NULL;
	pd_err e = {0};
	/* the step does not run: it needs the session not ended, not alone (agents' execs may run
	 * meanwhile, and a fast-forwarded one must not run for real because they do) */
	pthread_mutex_lock(&s->p->mu);
	bool dead = s->dead;
	pthread_mutex_unlock(&s->p->mu);
	if (dead)
		return NULL;
	json_t *obs = json_object_get(rec, "observation");
	json_t *extra = json_pack("{s:{s:s,s:O}}", "fast_forward", "trajectory_id", s->resume_id, "step",
				  json_object_get(rec, "step"));
	json_t *fc = json_object_get(rec, "files_changed");
	uint64_t t0 = pd_wall_us();
	/* the recorded files_changed, not a scan: the step did not run here */
	json_object_set(extra, "files_changed", fc ? fc : json_array());
	if (json_is_string(json_object_get(rec, "agent")))
		json_object_set(extra, "agent", json_object_get(rec, "agent"));
	session_traj_step(s, kind, rid, t0, json_deep_copy(json_object_get(rec, "action")), json_deep_copy(obs), extra,
		    false, &e);
	json_decref(extra);
	return obs ? json_deep_copy(obs) : json_object();
}

void session_traj_close(pd_session *s)
{
	if (s->traj) {
		pd_err e = {0};
		json_t *line = json_pack("{s:s,s:o}", "kind", "close", "ended_at", wall_text(pd_wall_us()));
		if (s->dead_reason[0])
			json_object_set_new(line, "reason", json_string(s->dead_reason));
		if (s->lost)
			json_object_set_new(line, "lost", json_true());
		pthread_mutex_lock(&s->traj_mu);
		pd_traj_append(s->traj, line, &e);
		pd_traj_close(s->traj);
		s->traj = NULL;
		pthread_mutex_unlock(&s->traj_mu);
	}
	pd_fsmap_free(&s->fs);
	pd_traj_index_free(s->resume);
}

/* stdin kept in the trajectory whole up to this (a replay needs it); digested always */
#define STDIN_KEEP (64u << 10)

json_t *session_exec_action(const pd_exec_opts *x)
{
	json_t *cmd = json_array();
	for (size_t i = 0; x->argv && x->argv[i]; i++)
		json_array_append_new(cmd, pd_json_text(x->argv[i]));
	char hex[65];
	pd_sha256 d;
	pd_sha256_init(&d);
	for (size_t i = 0; x->envp && x->envp[i]; i++)
		pd_sha256_add(&d, x->envp[i], strlen(x->envp[i]) + 1);
	json_t *env = pd_sha256_end_hex(&d, hex) == 0 ? json_string(hex) : json_null();
	json_t *a = json_pack("{s:o,s:o,s:o}", "cmd", cmd, "cwd", x->cwd ? pd_json_text(x->cwd) : json_null(),
			      "env_sha256", env);
	if (x->stdin_data) {
		json_object_set_new(a, "stdin_bytes", json_integer((json_int_t)x->stdin_len));
		json_object_set_new(a, "stdin_sha256", pd_sha256_of(x->stdin_data, x->stdin_len, hex) == 0 ? json_string(hex)
												 : json_null());
		/* as bytes: jansson keeps a NUL inside a string with json_stringn */
		json_object_set_new(a, "stdin", x->stdin_len <= STDIN_KEEP ? pd_json_bytes(x->stdin_data, x->stdin_len)
									 : json_null());
	}
	if (x->wall_ms)
		json_object_set_new(a, "timeout_ms", json_integer((json_int_t)x->wall_ms));
	if (x->idle_ms)
		json_object_set_new(a, "idle_timeout_ms", json_integer((json_int_t)x->idle_ms));
	return a;
}

int pd_session_digest_fd(int fd, char hex[65])
{
	off_t at = lseek(fd, 0, SEEK_CUR);
	pd_sha256 d;
	pd_sha256_init(&d);
	char buf[65536];
	ssize_t n;
	off_t off = 0;
	while ((n = pread(fd, buf, sizeof buf, off)) > 0) {
		pd_sha256_add(&d, buf, (size_t)n);
		off += n;
	}
	if (at >= 0)
		lseek(fd, at, SEEK_SET);
	if (n < 0) {
		pd_sha256_free(&d);
		return -1;
	}
	return pd_sha256_end_hex(&d, hex);
}
