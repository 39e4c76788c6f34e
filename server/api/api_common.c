/* What the three run APIs (native.c, sandboxfusion.c, piston.c) share: the request fields they
 * parse alike, and the pieces of their answers taken from a job. */
#define _GNU_SOURCE
#include "api.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pd_refuse(pd_err *e, const char *fmt, ...)
{
	/* formatted here and cut (at a character boundary) by pd_fail_as; no cause, so the message is
	 * the whole text a client reads */
	char msg[sizeof ((pd_err *)0)->msg + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pd_fail_as(e, EINVAL, "%s", msg);
	if (e)
		e->kind = PD_EK_REFUSED;
	return -1;
}

void api_free_vec(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}


char **api_run_argv(const char *const *prefix, json_t *args)
{
	size_t np = 0, na = json_is_array(args) ? json_array_size(args) : 0;
	while (prefix[np])
		np++;
	char **v = calloc(np + na + 1, sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < np + na; i++) {
		json_t *a = i >= np ? json_array_get(args, i - np) : NULL;
		v[i] = strdup(i < np ? prefix[i] : json_is_string(a) ? json_string_value(a) : "");
		if (!v[i]) {
			api_free_vec(v);
			return NULL;
		}
	}
	return v;
}

/* sh -c CMD, the request's args as $1... */
char **api_sh_argv(const char *cmd, json_t *args)
{
	const char *const prefix[] = {"/bin/sh", "-c", cmd, "sh", NULL};
	return api_run_argv(prefix, args);
}

int api_add_file(pd_job *j, const char *path, const char *data, size_t len)
{
	pd_file *f = realloc(j->files, (j->nfiles + 1) * sizeof *f);
	if (!f)
		return -1;
	j->files = f;
	char *p;
	if (path[0] == '/')
		p = strdup(path);
	else if (asprintf(&p, "/work/%s", path) < 0)
		p = NULL;
	char *d = malloc(len + 1);
	if (!p || !d) {
		free(p);
		free(d);
		return -1;
	}
	memcpy(d, data, len);
	d[len] = 0;
	j->files[j->nfiles++] = (pd_file){p, d, len};
	return 0;
}

/* "<name>.<key>" naming a field in an error message, cut (to fit) at a character boundary: the key
 * is a client's UTF-8, and half a character would make the message invalid UTF-8. */
void api_field_name(char *out, size_t size, const char *name, const char *key)
{
	if (snprintf(out, size, "%s.%s", name, key) < (int)size)
		return;
	size_t j = size - 2; /* the last byte kept */
	while (j && ((unsigned char)out[j] & 0xc0) == 0x80)
		j--;
	unsigned char lead = (unsigned char)out[j];
	size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
	if (size - 1 - j < need)
		out[j] = 0;
}

/* A relative path from a client must not climb out of /work by text alone; the sandbox resolves
 * it inside its own root anyway, so this only keeps requests honest. */
int api_check_path(const char *field, const char *p, pd_err *e)
{
	if (!*p || strlen(p) > 1024)
		return pd_refuse(e, "%s: path must have 1 to 1024 characters", field);
	return 0;
}

int api_set_language(pd_job *j, const char *lang, const char *code, size_t code_len, json_t *args,
			pd_err *e)
{
	const pd_language *l = pd_language_find(lang);
	if (!l) {
		char names[256];
		pd_language_names(names, sizeof names);
		return pd_refuse(e, "language: '%s' is not a language paddock knows (%s)", lang, names);
	}
	snprintf(j->language, sizeof j->language, "%s", l->name);
	snprintf(j->template_name, sizeof j->template_name, "%s", l->template);
	if (code && api_add_file(j, l->source, code, code_len) < 0)
		return pd_fail(e, ENOMEM, "code");
	if (l->compile && !(j->compile.argv = api_sh_argv(l->compile, NULL)))
		return pd_fail(e, ENOMEM, "compile");
	if (!(j->run.argv = api_run_argv(l->run, args)))
		return pd_fail(e, ENOMEM, "run");
	free(j->cwd);
	j->cwd = strdup("/work");
	return 0;
}

/* "stdin": a string fed to the run step (null or absent: none). */
int api_parse_stdin(pd_job *j, json_t *in, pd_err *e)
{
	if (!in || json_is_null(in))
		return 0;
	if (!json_is_string(in))
		return pd_refuse(e, "stdin: must be a string");
	j->run.stdin_len = json_string_length(in);
	j->run.stdin_data = malloc(j->run.stdin_len + 1);
	if (!j->run.stdin_data)
		return pd_fail(e, ENOMEM, "stdin");
	memcpy(j->run.stdin_data, json_string_value(in), j->run.stdin_len + 1);
	return 0;
}

/* An object of path: base64 content (native files_base64, SandboxFusion files). */
int api_parse_b64_files(pd_job *j, json_t *files, const char *name, bool null_ok, pd_err *e)
{
	if (!files || (null_ok && json_is_null(files)))
		return 0;
	if (!json_is_object(files))
		return pd_refuse(e, "%s: must be an object of path: base64", name);
	const char *k;
	json_t *v;
	json_object_foreach(files, k, v) {
		if (null_ok && json_is_null(v))
			continue;
		char field[300];
		api_field_name(field, sizeof field, name, k);
		char *data;
		size_t len;
		if (api_check_path(field, k, e) < 0)
			return -1;
		if (!json_is_string(v) || pd_b64_decode(json_string_value(v), &data, &len) < 0)
			return pd_refuse(e, "%s: must be base64", field);
		int rc = api_add_file(j, k, data, len);
		free(data);
		if (rc < 0)
			return pd_fail(e, ENOMEM, "%s", field);
	}
	return 0;
}

/* "fetch_files": paths to return after the run. */
int api_parse_fetch(pd_job *j, json_t *fetch, pd_err *e)
{
	if (!fetch || json_is_null(fetch))
		return 0;
	if (!json_is_array(fetch) || json_array_size(fetch) > 64)
		return pd_refuse(e, "fetch_files: must be a list of at most 64 paths");
	j->fetch = calloc(json_array_size(fetch) + 1, sizeof *j->fetch);
	if (!j->fetch)
		return pd_fail(e, ENOMEM, "fetch_files");
	size_t i;
	json_t *v;
	json_array_foreach(fetch, i, v) {
		if (!json_is_string(v))
			return pd_refuse(e, "fetch_files[%zu]: must be a string", i);
		j->fetch[j->nfetch++] = strdup(json_string_value(v));
	}
	return 0;
}

int api_get_seconds(json_t *o, const char *key, const char *field, uint64_t *ms, pd_err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 86400)
		return pd_refuse(e, "%s: must be a number of seconds from 0 to 86400", field);
	*ms = (uint64_t)(json_number_value(v) * 1000.0 + 0.5);
	return 0;
}

char **api_str_array(json_t *a, const char *field, size_t max, pd_err *e)
{
	if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > max) {
		pd_refuse(e, "%s: must be a list of 1 to %zu strings", field, max);
		return NULL;
	}
	char **v = calloc(json_array_size(a) + 1, sizeof *v);
	size_t i;
	json_t *x;
	json_array_foreach(a, i, x) {
		if (!json_is_string(x)) {
			api_free_vec(v);
			pd_refuse(e, "%s[%zu]: must be a string", field, i);
			return NULL;
		}
		v[i] = strdup(json_string_value(x));
	}
	return v;
}

int api_parse_image(pd_job *j, json_t *req, pd_err *e)
{
	json_t *im = json_object_get(req, "image");
	if (im && !json_is_null(im)) {
		if (!json_is_string(im) || !json_string_length(im) || json_string_length(im) >= sizeof j->image)
			return pd_refuse(e, "image: must be an imported image's name or digest of at most %zu characters",
					 sizeof j->image - 1);
		/* a request names images of the store only: a host directory is the operator's to choose */
		if (!pd_image_is_ref(json_string_value(im)))
			return pd_refuse(e, "image: '%s' is a path; a request names an imported image by name or "
					    "digest (paddock image ls)", json_string_value(im));
		snprintf(j->image, sizeof j->image, "%s", json_string_value(im));
	}
	return api_parse_isolation(json_object_get(req, "isolation"), j->isolation, sizeof j->isolation, e);
}

const char *api_isolation_of(const pd_job *j)
{
	if (j->ran && j->run_r.isolation[0])
		return j->run_r.isolation;
	if (j->compiled && j->compile_r.isolation[0])
		return j->compile_r.isolation;
	return j->isolation[0] ? j->isolation : "container";
}

int api_parse_network(pd_job *j, json_t *req, pd_err *e)
{
	/* paddock's extension: a network mode the daemon allows (--run-code-networks, checked by
	 * netmodes_pick: the request runs in the template's twin of that mode) */
	json_t *net = json_object_get(req, "network");
	if (!net || json_is_null(net))
		return 0;
	const char *ns = json_string_value(net);
	if (!ns || (strcmp(ns, "none") && strcmp(ns, "loopback") && strcmp(ns, "allowlist") && strcmp(ns, "host")))
		return pd_refuse(e, "network: must be none, loopback, allowlist or host");
	snprintf(j->network, sizeof j->network, "%s", ns);
	return 0;
}

int api_parse_isolation(json_t *v, char *out, size_t len, pd_err *e)
{
	if (!v || json_is_null(v))
		return 0;
	/* whether the template allows it is the edge's check (pd_pools_tier_allowed) */
	if (!json_is_string(v) || pd_isolation_parse(json_string_value(v)) < 0)
		return pd_refuse(e, "isolation: must be container or gvisor");
	snprintf(out, len, "%s", json_string_value(v));
	return 0;
}

int api_common_ids(pd_job *j, json_t *req, pd_err *e)
{
	static const struct {
		const char *key;
		size_t off, size;
	} ids[] = {{"task_id", offsetof(pd_job, task_id), sizeof(((pd_job *)0)->task_id)},
		   {"problem_id", offsetof(pd_job, problem_id), sizeof(((pd_job *)0)->problem_id)},
		   {"problem_version", offsetof(pd_job, problem_version),
		    sizeof(((pd_job *)0)->problem_version)}};
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(req, ids[i].key);
		if (!v || json_is_null(v))
			continue;
		if (!json_is_string(v) || json_string_length(v) >= ids[i].size)
			return pd_refuse(e, "%s: must be a string of at most %zu characters", ids[i].key,
				       ids[i].size - 1);
		snprintf((char *)j + ids[i].off, ids[i].size, "%s", json_string_value(v));
	}
	if (api_parse_image(j, req, e) < 0)
		return -1;
	json_t *au = json_object_get(req, "audit");
	if (au && !json_is_null(au) && !json_is_false(au)) {
		if (!json_is_true(au) && !json_is_object(au))
			return pd_refuse(e, "audit: must be true, false or a policy object");
		char *text = json_dumps(au, JSON_COMPACT | JSON_ENCODE_ANY);
		pd_err pe = {0};
		pd_audit_policy_free(j->audit);
		j->audit = text ? pd_audit_policy_parse(text, strlen(text), "audit", j->cwd ? j->cwd : "/work", &pe)
				: NULL;
		free(text);
		if (!j->audit)
			return pe.code == ENOMEM ? pd_fail(e, ENOMEM, "audit") : pd_refuse(e, "%s", PD_ERR_STR(&pe));
	}
	json_t *p = json_object_get(req, "priority");
	if (p && !json_is_null(p)) {
		const char *ps = json_string_value(p);
		if (ps && !strcmp(ps, "high"))
			j->priority = PD_PRIO_HIGH;
		else if (ps && !strcmp(ps, "normal"))
			j->priority = PD_PRIO_NORMAL;
		else if (ps && !strcmp(ps, "low"))
			j->priority = PD_PRIO_LOW;
		else
			return pd_refuse(e, "priority: must be high, normal or low");
	}
	json_t *d = json_object_get(req, "deadline_ms");
	if (d && !json_is_null(d)) {
		/* bounded: pd_now_us() + 2^62 ms * 1000 would wrap into a deadline already past */
		if (!json_is_integer(d) || json_integer_value(d) <= 0 || json_integer_value(d) > 31536000000LL)
			return pd_refuse(e, "deadline_ms: must be a positive whole number of milliseconds, at most a year");
		j->deadline_us = pd_now_us() + (uint64_t)json_integer_value(d) * 1000;
	}
	return 0;
}


/* The record's stdout or stderr text (pd_result_json renders both): SandboxFusion and Piston answer
 * with the same text as /v1/runs. */
json_t *api_record_text(json_t *rec, const char *stream)
{
	json_t *t = json_object_get(rec, stream);
	return t ? json_incref(t) : json_string("");
}


/* The fetched files: path -> base64, null for one that could not be read. */
json_t *api_files_json(const pd_job *j)
{
	json_t *files = json_object();
	for (size_t i = 0; i < j->nfetched; i++) {
		char *b = j->fetched[i].data ? pd_b64_encode(j->fetched[i].data, j->fetched[i].len) : NULL;
		json_object_set_new(files, j->fetched[i].path, b ? json_string(b) : json_null());
		free(b);
	}
	return files;
}

/* one event as every record spells it (pd_audit_event_json), with the stage it happened in */
static json_t *event_json(const pd_audit_event *ev, const char *step)
{
	json_t *o = pd_audit_event_json(ev);
	if (o)
		json_object_set_new(o, "step", json_string(step));
	return o;
}

json_t *api_audit_json(const pd_job *j)
{
	if (!j->audit)
		return json_null();
	json_t *o = json_object(), *events = json_array(), *counts = json_object();
	uint64_t dropped = 0, kinds[PD_AK_N] = {0};
	const struct {
		bool done;
		const pd_result *r;
		const char *name;
	} steps[] = {{j->compiled, &j->compile_r, "compile"}, {j->ran, &j->run_r, "run"}};
	for (size_t s = 0; s < 2; s++) {
		if (!steps[s].done)
			continue;
		const pd_result *r = steps[s].r;
		for (size_t i = 0; i < r->audit_len; i++)
			json_array_append_new(events, event_json(&r->audit[i], steps[s].name));
		dropped += r->audit_dropped;
		for (int k = 0; k < PD_AK_N; k++)
			kinds[k] += r->audit_kinds[k];
	}
	for (int k = 0; k < PD_AK_N; k++)
		json_object_set_new(counts, pd_audit_kind_name((pd_audit_kind)k), json_integer((json_int_t)kinds[k]));
	json_object_set_new(o, "events", events);
	json_object_set_new(o, "dropped", json_integer((json_int_t)dropped));
	json_object_set_new(o, "counts", counts);
	return o;
}

json_t *api_process_json(const pd_job *j)
{
	json_t *o = pd_audit_verdict_json(&j->verdict);
	return o ? o : json_null();
}
