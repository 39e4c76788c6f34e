/* Session requests: the client's bytes of the session API (URL, query parameters, the create and
 * exec bodies), parsed apart from the HTTP plumbing, so that server/http/sessions.c and
 * session_ops.c and the fuzzer (fuzz/fuzz_session_*.c) run the same code. */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGV 4096 /* the runtime's PD_MAX_ARGS */

/* Refusals (pd_refuse, server.h) quote no client bytes here, so they are ASCII. */

/* A JSON string that is a C string: no NUL inside, which strdup(), the kernel or a strcmp would
 * cut it at. Defensive: bodies are loaded without JSON_ALLOW_NUL, so jansson refuses \u0000. */
static bool c_string(json_t *v)
{
	return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
}

/* ---- URL and query ------------------------------------------------------------------------- */

static bool url_part(const char *p, size_t n, char *out, size_t size)
{
	if (n >= size)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] <= 0x20 || p[i] == 0x7f)
			return false;
	memcpy(out, p, n);
	out[n] = 0;
	return true;
}

/* (it was sscanf "%47[^/]/%31s": "exec junk" ran exec, and an over-long id was cut to 47 bytes) */
int pd_session_url(const char *url, char *id, size_t id_size, char *op, size_t op_size)
{
	static const char prefix[] = "/v1/sessions/";
	if (!id_size || !op_size)
		return -1;
	id[0] = op[0] = 0;
	if (!url || strncmp(url, prefix, sizeof prefix - 1))
		return -1;
	const char *p = url + sizeof prefix - 1, *slash = strchr(p, '/');
	size_t idn = slash ? (size_t)(slash - p) : strlen(p);
	const char *o = slash ? slash + 1 : "";
	if (!idn || !url_part(p, idn, id, id_size) || strchr(o, '/') || !url_part(o, strlen(o), op, op_size)) {
		id[0] = op[0] = 0;
		return -1;
	}
	return 0;
}

static void query_refuse(pd_session_query *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void query_refuse(pd_session_query *q, const char *fmt, ...)
{
	if (q->error[0])
		return; /* the first one is reported */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(q->error, sizeof q->error, fmt, ap);
	va_end(ap);
}

/* Whole or refused: a path cut to fit (or at a %00) would name another file, and PUT or DELETE
 * would act on it. */
static void query_text(pd_session_query *q, const char *key, char *dst, size_t size, const char *v, size_t len)
{
	if (len >= size)
		query_refuse(q, "%s: at most %zu bytes", key, size - 1);
	else if (memchr(v, 0, len))
		query_refuse(q, "%s: must not contain a NUL byte (%%00)", key);
	else {
		memcpy(dst, v, len);
		dst[len] = 0;
	}
}

static bool word(const char *v, size_t len, const char *w)
{
	return len == strlen(w) && !memcmp(v, w, len);
}

void pd_session_query_set(pd_session_query *q, const char *key, const char *v, size_t len)
{
	if (!key || !v)
		return;
	if (!strcmp(key, "path"))
		query_text(q, key, q->path, sizeof q->path, v, len);
	else if (!strcmp(key, "dir"))
		query_text(q, key, q->dir, sizeof q->dir, v, len);
	else if (!strcmp(key, "request_id"))
		query_text(q, key, q->request_id, sizeof q->request_id, v, len);
	else if (!strcmp(key, "X-Request-Id"))
		query_text(q, key, q->step_id, sizeof q->step_id, v, len);
	else if (!strcmp(key, "stream")) {
		if (word(v, len, "stdout") || word(v, len, "stderr"))
			q->stderr_stream = word(v, len, "stderr");
		else
			query_refuse(q, "stream: must be stdout or stderr");
	} else if (!strcmp(key, "list")) {
		if (word(v, len, "1") || word(v, len, "true"))
			q->list = true;
		else if (word(v, len, "0") || word(v, len, "false") || !len)
			q->list = false;
		else
			query_refuse(q, "list: must be 1, true, 0 or false");
	}
}

/* ---- bodies -------------------------------------------------------------------------------- */

/* Seconds as a number from 0 to max, or null/absent (0: the template's) -> truncated ms. The bound
 * keeps the double's conversion defined (1e300 x 1000 does not fit 64 bits: undefined behaviour) and
 * ms x 1000 (the pools compare in us) within 64 bits. */
static int seconds(json_t *b, const char *key, double max, uint64_t *ms, pd_err *e)
{
	json_t *v = json_object_get(b, key);
	*ms = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || !(json_number_value(v) >= 0) || json_number_value(v) > max)
		return pd_refuse(e, "%s: must be a number of seconds from 0 to %.0f (0: the template's)", key, max);
	*ms = (uint64_t)(json_number_value(v) * 1000);
	return 0;
}

/* An optional string of 1 to size-1 bytes, whole or refused. */
static int opt_text(json_t *b, const char *key, char *dst, size_t size, pd_err *e)
{
	json_t *v = json_object_get(b, key);
	if (!v || json_is_null(v))
		return 0;
	if (!c_string(v) || !json_string_length(v) || json_string_length(v) >= size)
		return pd_refuse(e, "%s: must be a string of 1 to %zu characters, without NUL bytes", key, size - 1);
	memcpy(dst, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int rate(json_t *n, const char *key, double *out, pd_err *e)
{
	json_t *v = json_object_get(n, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || !(json_number_value(v) >= 0) || json_number_value(v) > 1)
		return pd_refuse(e, "noise.%s: must be a number from 0 to 1", key);
	*out = json_number_value(v);
	return 0;
}

/* noise.faults: [{"op": "open", "path": "/work/data.csv", "errno": "EIO", "rate": 0.3}, ...]: calls
 * inside the program that fail, armed per exec with the rule's rate (pool/noise.c). */
static int noise_faults(json_t *a, pd_noise *z, pd_err *e)
{
	if (!a || json_is_null(a))
		return 0;
	size_t max = sizeof z->faults / sizeof z->faults[0];
	if (!json_is_array(a) || json_array_size(a) > max)
		return pd_refuse(e, "noise.faults: must be an array of at most %zu rules {op, path, errno, rate}", max);
	size_t i;
	json_t *f;
	json_array_foreach(a, i, f) {
		struct pd_noise_fault *d = &z->faults[i];
		if (!json_is_object(f))
			return pd_refuse(e, "noise.faults[%zu]: must be an object {op, path, errno, rate}", i);
		const char *k;
		json_t *v;
		json_object_foreach(f, k, v) {
			if (strcmp(k, "op") && strcmp(k, "path") && strcmp(k, "errno") && strcmp(k, "rate"))
				return pd_refuse(e, "noise.faults[%zu].%s: unknown field (op, path, errno, rate)", i, k);
		}
		json_t *op = json_object_get(f, "op"), *path = json_object_get(f, "path"), *en = json_object_get(f, "errno"),
		       *r = json_object_get(f, "rate");
		if (op && (!json_is_string(op) || !pd_noise_op_known(json_string_value(op))))
			return pd_refuse(e, "noise.faults[%zu].op: one of open, exec, unlink, rename, chmod, chown, "
					    "truncate, link, symlink, mkdir, mknod, xattr, connect, sendto, sendmsg, sendmmsg", i);
		if (path && (!json_is_string(path) || !json_string_length(path) ||
			     json_string_length(path) >= sizeof d->path))
			return pd_refuse(e, "noise.faults[%zu].path: a path or address prefix of 1 to %zu bytes", i,
					 sizeof d->path - 1);
		if (!op && !path)
			return pd_refuse(e, "noise.faults[%zu]: needs an op, a path, or both", i);
		int err = json_is_string(en) ? pd_noise_errno_parse(json_string_value(en)) : -1;
		if (err < 0)
			return pd_refuse(e, "noise.faults[%zu].errno: one of EACCES, EPERM, ENOENT, ENOSPC, EIO, EAGAIN, "
					    "EMFILE, EROFS, ETIMEDOUT, ECONNREFUSED, ECONNRESET, ENETUNREACH, EHOSTUNREACH", i);
		if (!json_is_number(r) || !(json_number_value(r) >= 0) || json_number_value(r) > 1)
			return pd_refuse(e, "noise.faults[%zu].rate: required, a number from 0 to 1", i);
		snprintf(d->op, sizeof d->op, "%s", op ? json_string_value(op) : "");
		snprintf(d->path, sizeof d->path, "%s", path ? json_string_value(path) : "");
		d->err = err;
		d->rate = json_number_value(r);
	}
	z->nfaults = json_array_size(a);
	return 0;
}

/* "budget": {"steps": N, "wall_s": S, "cpu_s": C} (issue 40): each optional, at least one. */
static int budget_fields(json_t *bg, pd_session_opts *o, pd_err *e)
{
	if (!bg || json_is_null(bg))
		return 0;
	if (!json_is_object(bg) || !json_object_size(bg))
		return pd_refuse(e, "budget: must be an object {\"steps\", \"wall_s\", \"cpu_s\"} with at least one");
	const char *k;
	json_t *v;
	json_object_foreach(bg, k, v) {
		if (!strcmp(k, "steps")) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000)
				return pd_refuse(e, "budget.steps: must be an integer from 1 to 1000000");
			o->budget_steps = (uint64_t)json_integer_value(v);
		} else if (!strcmp(k, "wall_s") || !strcmp(k, "cpu_s")) {
			if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 1e7)
				return pd_refuse(e, "budget.%s: must be a number of seconds above 0, at most 1e7", k);
			uint64_t ms = (uint64_t)(json_number_value(v) * 1000 + 0.5);
			*(!strcmp(k, "wall_s") ? &o->budget_wall_ms : &o->budget_cpu_ms) = ms ? ms : 1;
		} else {
			return pd_refuse(e, "budget.%s: unknown field (steps, wall_s, cpu_s)", k);
		}
	}
	return 0;
}

/* The episode's fields: survival, trajectory identity, fast-forward, noise, budget. */
static int episode_fields(json_t *b, pd_session_create_req *q, pd_err *e)
{
	json_t *eol = json_object_get(b, "end_on_limit");
	if (eol && !json_is_boolean(eol) && !json_is_null(eol))
		return pd_refuse(e, "end_on_limit: must be true or false");
	q->o.end_on_limit = json_is_true(eol);
	if (opt_text(b, "group_id", q->group_id, sizeof q->group_id, e) < 0 ||
	    opt_text(b, "sample_id", q->sample_id, sizeof q->sample_id, e) < 0 ||
	    opt_text(b, "resume_from", q->resume_from, sizeof q->resume_from, e) < 0)
		return -1;
	q->o.group_id = q->group_id[0] ? q->group_id : NULL;
	q->o.sample_id = q->sample_id[0] ? q->sample_id : NULL;
	q->o.resume_from = q->resume_from[0] ? q->resume_from : NULL;
	if (opt_text(b, "from_snapshot", q->from_snapshot, sizeof q->from_snapshot, e) < 0)
		return -1;
	q->o.from_snapshot = q->from_snapshot[0] ? q->from_snapshot : NULL;
	json_t *count = json_object_get(b, "count");
	if (count && !json_is_null(count)) {
		if (!json_is_integer(count) || json_integer_value(count) < 1 || json_integer_value(count) > 64)
			return pd_refuse(e, "count: must be an integer from 1 to 64");
		q->count = (unsigned)json_integer_value(count);
	}
	if (budget_fields(json_object_get(b, "budget"), &q->o, e) < 0)
		return -1;
	json_t *n = json_object_get(b, "noise");
	if (!n || json_is_null(n))
		return 0;
	if (!json_is_object(n))
		return pd_refuse(e, "noise: must be an object {seed, latency_ms, fail_rate, truncate_rate}");
	json_t *seed = json_object_get(n, "seed"), *lat = json_object_get(n, "latency_ms");
	if (!json_is_integer(seed) || json_integer_value(seed) < 0)
		return pd_refuse(e, "noise.seed: required, an integer from 0");
	if (lat && !json_is_null(lat) && (!json_is_integer(lat) || json_integer_value(lat) < 0 ||
					  json_integer_value(lat) > 60000))
		return pd_refuse(e, "noise.latency_ms: must be an integer from 0 to 60000");
	q->o.noise.on = true;
	q->o.noise.seed = (uint64_t)json_integer_value(seed);
	q->o.noise.latency_ms = lat ? (uint64_t)json_integer_value(lat) : 0;
	if (rate(n, "fail_rate", &q->o.noise.fail_rate, e) < 0 || rate(n, "truncate_rate", &q->o.noise.truncate_rate, e) < 0)
		return -1;
	return noise_faults(json_object_get(n, "faults"), &q->o.noise, e);
}

/* "network" (required: one of the modes a stage may switch to) and "egress" (an object, checked
 * against the template's allowlist by the pools) */
static int network_fields(json_t *b, char *mode, size_t ml, json_t **egress, bool required, pd_err *e)
{
	json_t *n = json_object_get(b, "network"), *g = json_object_get(b, "egress");
	if ((!n || json_is_null(n)) && !required) {
		if (g && !json_is_null(g))
			return pd_refuse(e, "egress: only with \"network\": \"allowlist\"");
		return 0;
	}
	const char *s = json_string_value(n);
	if (!s || (strcmp(s, "none") && strcmp(s, "loopback") && strcmp(s, "allowlist")))
		return pd_refuse(e, "network: must be \"none\", \"loopback\" or \"allowlist\"");
	snprintf(mode, ml, "%s", s);
	if (g && !json_is_null(g)) {
		if (strcmp(s, "allowlist"))
			return pd_refuse(e, "egress: only with \"network\": \"allowlist\"");
		if (!json_is_object(g))
			return pd_refuse(e, "egress: must be an object {\"allow\": [\"HOST:PORT\", ...]}");
		*egress = json_incref(g);
	}
	return 0;
}

int pd_session_create_parse(const char *body, size_t len, pd_session_create_req *q, pd_err *e)
{
	memset(q, 0, sizeof *q);
	json_error_t je;
	json_t *b = len ? json_loadb(body, len, 0, &je) : json_object();
	if (!b || !json_is_object(b)) {
		json_decref(b);
		return pd_refuse(e, "request body must be a JSON object");
	}
	/* given, the name is taken whole or refused: cut to 63 bytes or at a NUL, or replaced by bash
	 * when not a string, it would open a session on a template the client did not ask for */
	json_t *t = json_object_get(b, "template");
	snprintf(q->template_name, sizeof q->template_name, "bash");
	if (t && !json_is_null(t)) {
		if (!c_string(t) || !json_string_length(t) || json_string_length(t) >= sizeof q->template_name) {
			json_decref(b);
			return pd_refuse(e, "template: must be a template name of 1 to %zu characters",
				      sizeof q->template_name - 1);
		}
		memcpy(q->template_name, json_string_value(t), json_string_length(t) + 1);
		q->template_given = true;
	}
	json_t *im = json_object_get(b, "image");
	if (im && !json_is_null(im)) {
		if (!c_string(im) || !json_string_length(im) || json_string_length(im) >= sizeof q->image ||
		    !pd_image_is_ref(json_string_value(im))) {
			json_decref(b);
			return pd_refuse(e, "image: must be an imported image's name or digest of 1 to %zu characters, "
					    "not a path", sizeof q->image - 1);
		}
		memcpy(q->image, json_string_value(im), json_string_length(im) + 1);
		if (!pd_image_ref_is_digest(q->image)) /* the trajectory names it as the request did */
			q->o.image_name = q->image;
	}
	json_t *iso = json_object_get(b, "isolation");
	if (iso && !json_is_null(iso)) {
		/* whether the template allows it is checked where the session is opened (pd_pools_tier) */
		if (!c_string(iso) || pd_isolation_parse(json_string_value(iso)) < 0) {
			json_decref(b);
			return pd_refuse(e, "isolation: must be container or gvisor");
		}
		snprintf(q->isolation, sizeof q->isolation, "%s", json_string_value(iso));
	}
	/* the templates file's bound on session durations: 10^12 s */
	if (seconds(b, "ttl", 1e12, &q->o.idle_ttl_ms, e) < 0 ||
	    seconds(b, "max_lifetime", 1e12, &q->o.max_lifetime_ms, e) < 0) {
		json_decref(b);
		return -1;
	}
	if (episode_fields(b, q, e) < 0) {
		json_decref(b);
		return -1;
	}
	if (q->image[0] && q->from_snapshot[0]) {
		json_decref(b);
		return pd_refuse(e, "image: a fork runs on its snapshot's image; give image or from_snapshot, not both");
	}
	if (network_fields(b, q->network, sizeof q->network, &q->egress, false, e) < 0) {
		json_decref(b);
		return -1;
	}
	json_t *meta = json_object_get(b, "metadata");
	q->o.metadata = meta ? json_dumps(meta, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_t *rules = json_object_get(b, "rules");
	q->rules = rules && !json_is_null(rules) ? json_incref(rules) : NULL;
	json_decref(b);
	return 0;
}

void pd_session_create_req_free(pd_session_create_req *q)
{
	free((char *)q->o.metadata);
	q->o.metadata = NULL;
	json_decref(q->egress);
	q->egress = NULL;
	json_decref(q->rules);
	q->rules = NULL;
}

int pd_session_network_parse(const char *body, size_t len, char *mode, size_t ml, json_t **egress, pd_err *e)
{
	*egress = NULL;
	mode[0] = 0;
	json_error_t je;
	json_t *b = json_loadb(body ? body : "", len, 0, &je);
	if (!b || !json_is_object(b)) {
		json_decref(b);
		return pd_refuse(e, "request body must be a JSON object");
	}
	int rc = network_fields(b, mode, ml, egress, true, e);
	json_decref(b);
	return rc;
}

/* "agent": whose step (several agents in one session); null or absent: the default agent */
static int exec_agent(json_t *agent, const char **out, pd_err *e)
{
	if (!agent || json_is_null(agent))
		return 0;
	pd_err ae = {0};
	if (pd_session_agent_check(json_is_string(agent) ? json_string_value(agent) : NULL, &ae) < 0)
		return pd_refuse(e, "%s", ae.msg);
	if (strlen(json_string_value(agent)) != json_string_length(agent))
		return pd_refuse(e, "agent: letters, digits and \"-_.:@/\" only");
	*out = json_string_value(agent);
	return 0;
}

/* "cmd" (a list of strings) or "shell" (a string run by /bin/sh -c), or neither: q->x.argv, whose
 * strings are b's */
static int exec_argv(json_t *b, pd_session_exec_req *q, pd_err *e)
{
	json_t *cmd = json_object_get(b, "cmd"), *shell = json_object_get(b, "shell");
	char **argv = NULL;
	if (cmd && shell)
		return pd_refuse(e, "cmd: give cmd or shell, not both");
	if (cmd && json_is_array(cmd) && json_array_size(cmd) > 0 && json_array_size(cmd) <= MAX_ARGV) {
		q->x.argv = argv = calloc(json_array_size(cmd) + 1, sizeof *argv);
		if (!argv)
			return pd_refuse(e, "cmd: out of memory");
		size_t i;
		json_t *a;
		json_array_foreach(cmd, i, a) {
			if (!c_string(a))
				return pd_refuse(e, "cmd[%zu]: must be a string%s", i,
						 json_is_string(a) ? " without NUL bytes" : "");
			argv[i] = (char *)json_string_value(a);
		}
	} else if (shell && c_string(shell)) {
		q->x.argv = argv = calloc(4, sizeof *argv);
		if (!argv)
			return pd_refuse(e, "shell: out of memory");
		static char sh[] = "/bin/sh", dash_c[] = "-c";
		argv[0] = sh;
		argv[1] = dash_c;
		argv[2] = (char *)json_string_value(shell);
	} else if (!cmd && !shell) {
		/* neither: the session's image's Entrypoint and Cmd (pd_session_exec), or a refusal */
		q->x.argv = NULL;
	} else {
		return pd_refuse(e, "cmd: give cmd (a list of 1 to %d strings) or shell (a string), without NUL bytes",
				 MAX_ARGV);
	}
	return 0;
}

/* "stdin" (NUL bytes and all) and "cwd" */
static int exec_io(json_t *b, pd_session_exec_req *q, pd_err *e)
{
	json_t *in = json_object_get(b, "stdin");
	if (in && !json_is_null(in)) {
		if (!json_is_string(in))
			return pd_refuse(e, "stdin: must be a string");
		q->x.stdin_data = json_string_value(in);
		q->x.stdin_len = json_string_length(in);
	}
	json_t *cwd = json_object_get(b, "cwd");
	if (cwd && !json_is_null(cwd)) {
		if (!c_string(cwd) || json_string_length(cwd) > 1023)
			return pd_refuse(e, "cwd: must be a path of at most 1023 bytes, without NUL bytes");
		q->x.cwd = json_string_value(cwd);
	}
	return 0;
}

/* "stream" and "request_id" */
static int exec_answer_fields(json_t *b, pd_session_exec_req *q, pd_err *e)
{
	json_t *stream = json_object_get(b, "stream");
	if (stream && !json_is_boolean(stream) && !json_is_null(stream))
		return pd_refuse(e, "stream: must be true or false");
	q->stream = json_is_true(stream);
	/* the idempotency key: "a\u0000x" must not be taken as "a" (the recorded answer of another
	 * request) */
	json_t *rid = json_object_get(b, "request_id");
	if (rid) {
		if (!c_string(rid) || !json_string_length(rid) || json_string_length(rid) > 127)
			return pd_refuse(e, "request_id: must be a string of 1 to 127 characters, without NUL bytes");
		q->request_id = json_string_value(rid);
	}
	return 0;
}

/* "audit": true, a policy, or false/null/absent (none); relative paths against the step's cwd */
static int exec_audit(json_t *b, pd_session_exec_req *q, pd_err *e)
{
	json_t *au = json_object_get(b, "audit");
	if (!au || json_is_null(au) || json_is_false(au))
		return 0;
	if (!json_is_true(au) && !json_is_object(au))
		return pd_refuse(e, "audit: must be true, false or a policy object");
	char *text = json_dumps(au, JSON_COMPACT | JSON_ENCODE_ANY);
	pd_err pe = {0};
	q->audit = text ? pd_audit_policy_parse(text, strlen(text), "audit", q->x.cwd ? q->x.cwd : "/work", &pe) : NULL;
	free(text);
	if (!q->audit)
		return pd_refuse(e, "%s", pe.code ? PD_ERR_STR(&pe) : "audit: out of memory");
	q->x.audit = pd_audit_policy_opts(q->audit);
	return 0;
}

int pd_session_exec_parse(const char *body, size_t len, pd_session_exec_req *q, pd_err *e)
{
	memset(q, 0, sizeof *q);
	json_error_t je;
	json_t *b = q->body = json_loadb(body ? body : "", len, 0, &je);
	if (!b || !json_is_object(b)) {
		pd_refuse(e, "request body must be a JSON object");
		goto fail;
	}
	if (exec_argv(b, q, e) < 0 || exec_io(b, q, e) < 0)
		goto fail;
	/* native limits.wall_time's bound; the no-output timeout has no default (a step may rightly
	 * think in silence for as long as its time limit allows) */
	if (seconds(b, "timeout", 86400, &q->x.wall_ms, e) < 0 || seconds(b, "idle_timeout", 86400, &q->x.idle_ms, e) < 0)
		goto fail;
	if (exec_answer_fields(b, q, e) < 0 || exec_agent(json_object_get(b, "agent"), &q->agent, e) < 0 ||
	    exec_audit(b, q, e) < 0)
		goto fail;
	return 0;
fail:
	pd_session_exec_req_free(q);
	return -1;
}

void pd_session_exec_req_free(pd_session_exec_req *q)
{
	free((void *)q->x.argv);
	q->x.argv = NULL;
	json_decref(q->body);
	q->body = NULL;
	pd_audit_policy_free(q->audit);
	q->audit = NULL;
	q->x.audit = NULL;
}
