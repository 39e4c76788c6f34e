/* Templates: parsed from JSON with jansson; every error names the field it concerns, e.g.
 * "templates[2].limits.memory: '5X' is not a size". */
#define _GNU_SOURCE
#include "pool.h"
#include "pools.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void pd_templates_free(pd_template *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++) {
		for (int k = 0; t[i].layers[k]; k++)
			free(t[i].layers[k]);
		free(t[i].image_ref);
		if (t[i].image)
			pd_image_close(t[i].image);
		free(t[i].image);
		for (int k = 0; t[i].env[k]; k++)
			free(t[i].env[k]);
		for (int k = 0; t[i].requires[k]; k++)
			free(t[i].requires[k]);
		for (int k = 0; t[i].warmup[k]; k++)
			free(t[i].warmup[k]);
		for (size_t k = 0; k < t[i].nfiles; k++) {
			free(t[i].files[k].path);
			free(t[i].files[k].data);
		}
		free(t[i].cwd);
		pd_audit_policy_free(t[i].audit);
		free(t[i].rules);
		pd_egress_list_free(t[i].egress_allow);
	}
	free(t);
}

static void tpl_defaults(pd_template *t)
{
	memset(t, 0, sizeof *t);
	t->limits = pd_limits_default();
	t->net = PD_NET_LOOPBACK;
	t->isolation = PD_ISO_CONTAINER;
	t->isolation_allowed = (1u << PD_ISO_N) - 1;
	t->pool_min = 0;
	t->pool_max = 64;
	t->pool_idle_ttl_ms = 60000;
	t->pool_reuse = true;
	t->session_idle_ttl_ms = 300000;
	t->session_max_ms = 3600000;
}

/* ---- field readers: each fails with the field's full name ------------------------------------ */

static int need_string(json_t *v, const char *where, const char **out, pd_err *e)
{
	*out = "";
	if (!json_is_string(v))
		return pd_fail_as(e, EINVAL, "%s: must be a string", where);
	*out = json_string_value(v);
	return 0;
}

static int get_size(json_t *v, const char *where, uint64_t *out, pd_err *e)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v) && pd_parse_size(json_string_value(v), out) == 0)
		return 0;
	return pd_fail_as(e, EINVAL, "%s: '%s' is not a size (bytes, or a string like \"512M\")", where,
		          json_is_string(v) ? json_string_value(v) : "(not a string)");
}

static int get_duration(json_t *v, const char *where, uint64_t *out, pd_err *e)
{
	/* at most 10^12 s, as pd_parse_duration_ms: a larger double does not convert to uint64_t */
	if (json_is_number(v) && json_number_value(v) >= 0 && json_number_value(v) <= 1e12) {
		*out = (uint64_t)(json_number_value(v) * 1000.0 + 0.5);
		return 0;
	}
	if (json_is_string(v) && pd_parse_duration_ms(json_string_value(v), out) == 0)
		return 0;
	return pd_fail_as(e, EINVAL, "%s: '%s' is not a duration (seconds, or a string like \"250ms\")",
		          where, json_is_string(v) ? json_string_value(v) : "(not a string)");
}

static int get_count(json_t *v, const char *where, uint64_t lo, uint64_t hi, uint64_t *out, pd_err *e)
{
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo ||
	    (uint64_t)json_integer_value(v) > hi)
		return pd_fail_as(e, EINVAL, "%s: must be a whole number from %llu to %llu", where,
			          (unsigned long long)lo, (unsigned long long)hi);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int unknown_keys(json_t *obj, const char *where, const char *const *known, pd_err *e)
{
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v) {
		bool ok = false;
		for (int i = 0; known[i]; i++)
			ok |= !strcmp(k, known[i]);
		if (!ok)
			return pd_fail_as(e, EINVAL, "%s: unknown field '%s'", where, k);
	}
	return 0;
}

static int parse_limits(json_t *o, const char *where, pd_limits *l, pd_err *e)
{
	static const char *const known[] = {"memory", "pids", "cpu_time", "wall_time", "cpus", "disk",
					    "output", "output_kill", "nofile", "fsize", "stack", "io_read_bps",
					    "io_write_bps", "io_read_iops", "io_write_iops", NULL};
	if (!json_is_object(o))
		return pd_fail_as(e, EINVAL, "%s: must be an object", where);
	if (unknown_keys(o, where, known, e) < 0)
		return -1;
	char w[160];
	json_t *v;
	uint64_t x;
#define FIELD(name) (snprintf(w, sizeof w, "%s.%s", where, name), v = json_object_get(o, name))
	if (FIELD("memory") && get_size(v, w, &l->memory_bytes, e) < 0)
		return -1;
	if (FIELD("pids")) {
		if (get_count(v, w, 1, 1000000, &x, e) < 0)
			return -1;
		l->pids = (uint32_t)x;
	}
	if (FIELD("cpu_time") && get_duration(v, w, &l->cpu_ms, e) < 0)
		return -1;
	if (FIELD("wall_time") && get_duration(v, w, &l->wall_ms, e) < 0)
		return -1;
	if (FIELD("cpus")) {
		if (!json_is_number(v) || json_number_value(v) < 0.01 || json_number_value(v) > 1024)
			return pd_fail_as(e, EINVAL, "%s: must be a number of cores from 0.01 to 1024", w);
		l->cpu_millicores = (uint32_t)(json_number_value(v) * 1000 + 0.5);
	}
	if (FIELD("disk") && get_size(v, w, &l->disk_bytes, e) < 0)
		return -1;
	if (FIELD("output") && get_size(v, w, &l->output_bytes, e) < 0)
		return -1;
	if (FIELD("output_kill") && get_size(v, w, &l->output_kill_bytes, e) < 0)
		return -1;
	if (FIELD("nofile")) {
		if (get_count(v, w, 4, 1048576, &x, e) < 0)
			return -1;
		l->nofile = (uint32_t)x;
	}
	if (FIELD("fsize") && get_size(v, w, &l->fsize_bytes, e) < 0)
		return -1;
	if (FIELD("stack") && get_size(v, w, &l->stack_bytes, e) < 0)
		return -1;
	if (FIELD("io_read_bps") && get_size(v, w, &l->io_read_bps, e) < 0)
		return -1;
	if (FIELD("io_write_bps") && get_size(v, w, &l->io_write_bps, e) < 0)
		return -1;
	if (FIELD("io_read_iops") && get_count(v, w, 1, 1000000000, &l->io_read_iops, e) < 0)
		return -1;
	if (FIELD("io_write_iops") && get_count(v, w, 1, 1000000000, &l->io_write_iops, e) < 0)
		return -1;
#undef FIELD
	if (l->disk_bytes && l->disk_bytes < 4096)
		return pd_fail_as(e, EINVAL, "%s.disk: at least 4k", where);
	if (l->memory_bytes && l->memory_bytes < (4u << 20))
		return pd_fail_as(e, EINVAL, "%s.memory: at least 4M", where);
	if ((l->io_read_bps && l->io_read_bps < 4096) || (l->io_write_bps && l->io_write_bps < 4096))
		return pd_fail_as(e, EINVAL, "%s.io_read_bps/io_write_bps: at least 4k (a page) per second", where);
	return 0;
}

static int dup_str(char **dst, const char *s, const char *where, pd_err *e)
{
	*dst = strdup(s);
	return *dst ? 0 : pd_fail(e, ENOMEM, "%s", where);
}

/* "isolation": a tier ("gvisor": that one alone), or a list of the tiers a request may ask for,
 * the first the template's own (["container", "gvisor"]) */
static int parse_isolation(json_t *v, const char *w, pd_template *t, pd_err *e)
{
	json_t *one = json_is_array(v) ? NULL : v;
	if (json_is_array(v) && json_array_size(v) == 0)
		return pd_fail_as(e, EINVAL, "%s: must name at least one tier", w);
	t->isolation_allowed = 0;
	size_t i, n = one ? 1 : json_array_size(v);
	for (i = 0; i < n; i++) {
		json_t *x = one ? one : json_array_get(v, i);
		int k = json_is_string(x) ? pd_isolation_parse(json_string_value(x)) : -1;
		if (k < 0)
			return pd_fail_as(e, EINVAL, "%s%s: must be container or gvisor%s", w, one ? "" : "[]",
				          one ? ", or a list of them" : "");
		if (i == 0)
			t->isolation = (pd_isolation)k;
		t->isolation_allowed |= 1u << k;
	}
	return 0;
}

void pd_template_tiers(const pd_template *t, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s", pd_isolation_name(t->isolation));
	for (int k = 0; k < PD_ISO_N && n < len; k++)
		if (k != (int)t->isolation && (t->isolation_allowed & (1u << k)))
			n += (size_t)snprintf(buf + n, len - n, " %s", pd_isolation_name((pd_isolation)k));
}

#define FIELD(name) (snprintf(w, sizeof w, "%s.%s", where, name), v = json_object_get(o, name))

/* "name", "version", "language" and "memory_fast_path". */
static int parse_identity(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	char w[160];
	const char *s = NULL;
	json_t *v;
	/* the headroom over the memory limit, or false (off) */
	if (FIELD("memory_fast_path") && !json_is_false(v)) {
		if (get_size(v, w, &t->data_headroom_bytes, e) < 0)
			return -1;
		if (t->data_headroom_bytes < (16u << 20))
			return pd_fail_as(e, EINVAL, "%s: a headroom of at least 16M (a runtime's own mappings), or false", w);
	}
	if (!FIELD("name"))
		return pd_fail_as(e, EINVAL, "%s.name: required", where);
	if (need_string(v, w, &s, e) < 0)
		return -1;
	if (!*s || strlen(s) >= sizeof t->name || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_.-") != strlen(s))
		return pd_fail_as(e, EINVAL, "%s: '%s' must be 1-63 characters of a-z 0-9 _ . -", w, s);
	snprintf(t->name, sizeof t->name, "%s", s);
	if (FIELD("version")) {
		if (need_string(v, w, &s, e) < 0)
			return -1;
		if (!*s || strlen(s) >= sizeof t->version)
			return pd_fail_as(e, EINVAL, "%s: must be 1 to %zu characters", w, sizeof t->version - 1);
		snprintf(t->version, sizeof t->version, "%s", s);
		t->version_given = true;
	}
	if (FIELD("language")) {
		if (need_string(v, w, &s, e) < 0)
			return -1;
		snprintf(t->language, sizeof t->language, "%s", s);
	} else {
		snprintf(t->language, sizeof t->language, "%s", t->name);
	}
	return 0;
}

/* "image" (a directory, or an imported image's name or digest) or "layers". */
static int parse_image(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	char w[160];
	const char *s = NULL;
	json_t *v;
	json_t *img = json_object_get(o, "image"), *layers = json_object_get(o, "layers");
	if (img && layers)
		return pd_fail_as(e, EINVAL, "%s: give image or layers, not both", where);
	if (img && !json_is_null(img)) {
		snprintf(w, sizeof w, "%s.image", where);
		if (need_string(img, w, &s, e) < 0)
			return -1;
		/* a path is a plain directory; anything else an imported image's name or digest */
		if (pd_image_is_ref(s)) {
			if (dup_str(&t->image_ref, s, w, e) < 0)
				return -1;
		} else {
			if (s[0] != '/')
				return pd_fail_as(e, EINVAL, "%s: '%s' must be an absolute path or an image name",
					          w, s);
			if (dup_str(&t->layers[0], s, w, e) < 0)
				return -1;
		}
	}
	if (layers) {
		snprintf(w, sizeof w, "%s.layers", where);
		if (!json_is_array(layers) || json_array_size(layers) == 0 ||
		    json_array_size(layers) > PD_TPL_MAX_LAYERS)
			return pd_fail_as(e, EINVAL, "%s: must be a list of 1 to %d directories", w, PD_TPL_MAX_LAYERS);
		size_t i;
		json_array_foreach(layers, i, v) {
			snprintf(w, sizeof w, "%s.layers[%zu]", where, i);
			if (need_string(v, w, &s, e) < 0 || dup_str(&t->layers[i], s, w, e) < 0)
				return -1;
			if (s[0] != '/')
				return pd_fail_as(e, EINVAL, "%s: '%s' must be an absolute path", w, s);
		}
	}
	return 0;
}

/* "requires" (programs the image must have) and "warmup" (a sandbox's first exec). */
static int parse_programs(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	char w[160];
	const char *s = NULL;
	json_t *v;
	if (FIELD("requires")) {
		if (!json_is_array(v) || json_array_size(v) > PD_TPL_MAX_REQUIRES)
			return pd_fail_as(e, EINVAL, "%s: must be a list of at most %d program names", w,
				          PD_TPL_MAX_REQUIRES);
		size_t i;
		json_t *r;
		json_array_foreach(v, i, r) {
			snprintf(w, sizeof w, "%s.requires[%zu]", where, i);
			if (need_string(r, w, &s, e) < 0)
				return -1;
			if (!*s || strchr(s, '/') || strlen(s) > 64)
				return pd_fail_as(e, EINVAL, "%s: '%s' must be a program name", w, s);
			if (dup_str(&t->requires[i], s, w, e) < 0)
				return -1;
		}
	}
	if (FIELD("warmup")) {
		if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > PD_TPL_MAX_REQUIRES)
			return pd_fail_as(e, EINVAL, "%s: must be a command, a list of 1 to %d strings", w,
				          PD_TPL_MAX_REQUIRES);
		size_t i;
		json_t *a;
		json_array_foreach(v, i, a) {
			snprintf(w, sizeof w, "%s.warmup[%zu]", where, i);
			if (need_string(a, w, &s, e) < 0 || dup_str(&t->warmup[i], s, w, e) < 0)
				return -1;
		}
	}
	return 0;
}

/* "env", "user" and "cwd": what the programs run as and in. */
static int parse_process(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	char w[160];
	const char *s = NULL;
	json_t *v;
	if (FIELD("env")) {
		if (!json_is_object(v) || json_object_size(v) > PD_TPL_MAX_ENV)
			return pd_fail_as(e, EINVAL, "%s: must be an object of at most %d strings", w, PD_TPL_MAX_ENV);
		const char *k;
		json_t *x;
		size_t i = 0;
		json_object_foreach(v, k, x) {
			snprintf(w, sizeof w, "%s.env.%s", where, k);
			if (!*k || strchr(k, '='))
				return pd_fail_as(e, EINVAL, "%s: a variable name cannot be empty or hold '='", w);
			if (need_string(x, w, &s, e) < 0)
				return -1;
			if (asprintf(&t->env[i], "%s=%s", k, s) < 0)
				return pd_fail(e, ENOMEM, "%s", w);
			i++;
		}
	}
	if (FIELD("user")) {
		if (need_string(v, w, &s, e) < 0)
			return -1;
		uint32_t u, g;
		pd_err ue = {0};
		/* names wait for the image (pd_template_check); numbers are checked now */
		if (!*s || strlen(s) >= sizeof t->user || strchr(s, ' ') ||
		    (pd_user_keyword(s, &u, &g) < 0 && strspn(s, "0123456789:") == strlen(s) &&
		     pd_user_resolve(NULL, s, &u, &g, &ue) < 0))
			return pd_fail_as(e, EINVAL, "%s: '%s' must be root, sandbox, UID[:GID] (below 65536, not 65533) or a name of the image's /etc/passwd",
				          w, s);
		snprintf(t->user, sizeof t->user, "%s", s);
	}
	if (FIELD("cwd")) {
		if (need_string(v, w, &s, e) < 0)
			return -1;
		if (s[0] != '/')
			return pd_fail_as(e, EINVAL, "%s: '%s' must be an absolute path", w, s);
		if (dup_str(&t->cwd, s, w, e) < 0)
			return -1;
	}
	return 0;
}

/* One entry of a template's "files" (where.files[i]). */
static int parse_file(json_t *f, const char *where, size_t i, pd_template *t, pd_err *e)
{
	char w[160];
	const char *s = NULL;
	char fw[200];
	snprintf(fw, sizeof fw, "%s.files[%zu]", where, i);
	static const char *const fknown[] = {"path", "content", "content_base64", "mode", NULL};
	if (!json_is_object(f))
		return pd_fail_as(e, EINVAL, "%s: must be an object", fw);
	if (unknown_keys(f, fw, fknown, e) < 0)
		return -1;
	pd_tpl_file *tf = &t->files[t->nfiles++];
	tf->mode = 0644;
	snprintf(w, sizeof w, "%s.path", fw);
	json_t *p = json_object_get(f, "path");
	if (!p)
		return pd_fail_as(e, EINVAL, "%s: required", w);
	if (need_string(p, w, &s, e) < 0)
		return -1;
	if (s[0] != '/')
		return pd_fail_as(e, EINVAL, "%s: '%s' must be an absolute path", w, s);
	if (dup_str(&tf->path, s, w, e) < 0)
		return -1;
	json_t *c = json_object_get(f, "content"), *c64 = json_object_get(f, "content_base64");
	if (!!c == !!c64)
		return pd_fail_as(e, EINVAL, "%s: give exactly one of content, content_base64", fw);
	if (c) {
		snprintf(w, sizeof w, "%s.content", fw);
		if (need_string(c, w, &s, e) < 0)
			return -1;
		tf->len = json_string_length(c);
		tf->data = malloc(tf->len + 1);
		if (!tf->data)
			return pd_fail(e, ENOMEM, "%s", w);
		memcpy(tf->data, s, tf->len + 1);
	} else {
		snprintf(w, sizeof w, "%s.content_base64", fw);
		if (need_string(c64, w, &s, e) < 0)
			return -1;
		if (pd_b64_decode(s, &tf->data, &tf->len) < 0)
			return pd_fail_as(e, EINVAL, "%s: not valid base64", w);
	}
	json_t *m = json_object_get(f, "mode");
	if (m) {
		snprintf(w, sizeof w, "%s.mode", fw);
		char *end = NULL;
		long mode = json_is_string(m) ? strtol(json_string_value(m), &end, 8) : -1;
		if (!json_is_string(m) || *end || mode < 0 || mode > 07777)
			return pd_fail_as(e, EINVAL, "%s: must be an octal string like \"0644\"", w);
		tf->mode = (mode_t)mode;
	}
	return 0;
}

/* "files": what a template places in each sandbox before use. */
static int parse_files(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	char w[160];
	json_t *v;
	if (FIELD("files")) {
		if (!json_is_array(v) || json_array_size(v) > PD_TPL_MAX_FILES)
			return pd_fail_as(e, EINVAL, "%s: must be a list of at most %d files", w, PD_TPL_MAX_FILES);
		size_t i;
		json_t *f;
		json_array_foreach(v, i, f)
			if (parse_file(f, where, i, t, e) < 0)
				return -1;
	}
	return 0;
}

/* "limits", "network", "egress" and "isolation". */
static int parse_confinement(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	char w[160];
	const char *s = NULL;
	json_t *v;
	if (FIELD("limits")) {
		if (parse_limits(v, w, &t->limits, e) < 0)
			return -1;
	}
	if (FIELD("network")) {
		if (need_string(v, w, &s, e) < 0)
			return -1;
		if (!strcmp(s, "loopback"))
			t->net = PD_NET_LOOPBACK;
		else if (!strcmp(s, "none"))
			t->net = PD_NET_NONE;
		else if (!strcmp(s, "host"))
			t->net = PD_NET_HOST;
		else if (!strcmp(s, "allowlist"))
			t->net = PD_NET_ALLOWLIST;
		else
			return pd_fail_as(e, EINVAL, "%s: '%s' must be loopback, none, allowlist or host", w, s);
	}
	if (FIELD("egress") && pd_template_parse_egress(v, w, t, e) < 0)
		return -1;
	if (t->net == PD_NET_ALLOWLIST && !t->egress_allow)
		return pd_fail_as(e, EINVAL, "%s.egress.allow: an allowlist network needs the hosts it may reach", where);
	if (FIELD("isolation") && parse_isolation(v, w, t, e) < 0)
		return -1;
	return 0;
}

/* "pool": min, max, idle_ttl, reuse. */
static int parse_pool(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	char w[160];
	json_t *v;
	if (FIELD("pool")) {
		static const char *const pknown[] = {"min", "max", "idle_ttl", "reuse", NULL};
		char pw[160];
		snprintf(pw, sizeof pw, "%s", w);
		if (!json_is_object(v))
			return pd_fail_as(e, EINVAL, "%s: must be an object", pw);
		if (unknown_keys(v, pw, pknown, e) < 0)
			return -1;
		json_t *x;
		uint64_t n;
		if ((x = json_object_get(v, "min"))) {
			snprintf(w, sizeof w, "%s.min", pw);
			if (get_count(x, w, 0, 100000, &n, e) < 0)
				return -1;
			t->pool_min = (uint32_t)n;
		}
		if ((x = json_object_get(v, "max"))) {
			snprintf(w, sizeof w, "%s.max", pw);
			if (get_count(x, w, 0, 100000, &n, e) < 0)
				return -1;
			t->pool_max = (uint32_t)n;
		}
		if ((x = json_object_get(v, "idle_ttl"))) {
			snprintf(w, sizeof w, "%s.idle_ttl", pw);
			if (get_duration(x, w, &t->pool_idle_ttl_ms, e) < 0)
				return -1;
		}
		if ((x = json_object_get(v, "reuse"))) {
			if (!json_is_boolean(x))
				return pd_fail_as(e, EINVAL, "%s.reuse: must be true or false", pw);
			t->pool_reuse = json_is_true(x);
		}
		if (t->pool_min > t->pool_max)
			return pd_fail_as(e, EINVAL, "%s: min (%u) is above max (%u)", pw, t->pool_min, t->pool_max);
	}
	return 0;
}

/* "session": idle_ttl, max_lifetime. */
static int parse_session(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	char w[160];
	json_t *v;
	if (FIELD("session")) {
		static const char *const sknown[] = {"idle_ttl", "max_lifetime", NULL};
		char sw[160];
		snprintf(sw, sizeof sw, "%s", w);
		if (!json_is_object(v))
			return pd_fail_as(e, EINVAL, "%s: must be an object", sw);
		if (unknown_keys(v, sw, sknown, e) < 0)
			return -1;
		json_t *x;
		if ((x = json_object_get(v, "idle_ttl"))) {
			snprintf(w, sizeof w, "%s.idle_ttl", sw);
			if (get_duration(x, w, &t->session_idle_ttl_ms, e) < 0)
				return -1;
		}
		if ((x = json_object_get(v, "max_lifetime"))) {
			snprintf(w, sizeof w, "%s.max_lifetime", sw);
			if (get_duration(x, w, &t->session_max_ms, e) < 0)
				return -1;
		}
	}
	return 0;
}

/* "rules" over a session's trajectory and the "audit" policy. */
static int parse_policies(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	char w[160];
	json_t *v;
	if (FIELD("rules")) {
		if (!json_is_object(v))
			return pd_fail_as(e, EINVAL, "%s: must be an object (docs/sessions.md, \"Rules over the trajectory\")", w);
		if (!(t->rules = json_dumps(v, JSON_COMPACT)))
			return pd_fail(e, ENOMEM, "%s", w);
	}
	if (FIELD("audit")) {
		if (!json_is_object(v))
			return pd_fail_as(e, EINVAL, "%s: must be a policy object", w);
		char *text = json_dumps(v, JSON_COMPACT);
		if (!text)
			return pd_fail(e, ENOMEM, "%s", w);
		t->audit = pd_audit_policy_parse(text, strlen(text), w, t->cwd ? t->cwd : "/work", e);
		pd_sha256_of(text, strlen(text), t->audit_digest); /* "" if it could not be made */
		free(text);
		if (!t->audit)
			return -1;
	}
	return 0;
}

/* What the template's own tier cannot offer: the gvisor tier has no audit (the Sentry's calls
 * never reach the host's seccomp) and no host network. */
static int check_tier(const char *where, pd_template *t, pd_err *e)
{
	const pd_limits *l = &t->limits;
	bool io = l->io_read_bps || l->io_write_bps || l->io_read_iops || l->io_write_iops;
	if (t->isolation == PD_ISO_GVISOR && (t->audit || t->net == PD_NET_HOST || t->net == PD_NET_ALLOWLIST || io))
		return pd_fail_as(e, EINVAL, "%s.isolation: gvisor offers no %s", where,
			          t->audit ? "audit" : t->net == PD_NET_HOST ? "host network"
					      : t->net == PD_NET_ALLOWLIST ? "allowlist network" : "I/O limits");
	/* the gvisor tier's reuse rule is none (lib/gvisor/sandbox.c): a released sandbox is destroyed */
	if (t->isolation == PD_ISO_GVISOR)
		t->pool_reuse = false;
	return 0;
}
#undef FIELD

static int parse_one(json_t *o, const char *where, pd_template *t, pd_err *e)
{
	static const char *const known[] = {"name", "language", "image", "layers", "requires", "env",
					    "cwd", "files", "limits", "network", "pool", "session", "warmup",
					    "audit", "memory_fast_path", "version", "egress", "user", "isolation", "rules",
					    NULL};
	if (!json_is_object(o))
		return pd_fail_as(e, EINVAL, "%s: must be an object", where);
	if (unknown_keys(o, where, known, e) < 0)
		return -1;
	/* in the order the fields depend on each other: the audit policy reads cwd, the tier rule
	 * the network, limits and audit */
	if (parse_identity(o, where, t, e) < 0 || parse_image(o, where, t, e) < 0 || parse_programs(o, where, t, e) < 0 ||
	    parse_process(o, where, t, e) < 0 || parse_files(o, where, t, e) < 0 ||
	    parse_confinement(o, where, t, e) < 0 || parse_pool(o, where, t, e) < 0 ||
	    parse_session(o, where, t, e) < 0 || parse_policies(o, where, t, e) < 0)
		return -1;
	return check_tier(where, t, e);
}

int pd_templates_parse(const char *text, size_t len, pd_template **out, size_t *n, pd_err *e)
{
	*out = NULL;
	*n = 0;
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return pd_fail_as(e, EINVAL, "line %d column %d: %s", je.line, je.column, je.text);
	json_t *arr = json_is_object(root) ? json_object_get(root, "templates") : NULL;
	int rc = -1;
	if (!arr || !json_is_array(arr)) {
		pd_fail_as(e, EINVAL, "templates: the file must be an object with a list \"templates\"");
		goto out;
	}
	if (json_object_size(root) != 1) {
		static const char *const known[] = {"templates", NULL};
		if (unknown_keys(root, "(top level)", known, e) < 0)
			goto out;
	}
	size_t count = json_array_size(arr);
	pd_template *t = calloc(count ? count : 1, sizeof *t);
	if (!t) {
		pd_fail(e, ENOMEM, "templates");
		goto out;
	}
	for (size_t i = 0; i < count; i++) {
		char where[64];
		snprintf(where, sizeof where, "templates[%zu]", i);
		tpl_defaults(&t[i]);
		if (parse_one(json_array_get(arr, i), where, &t[i], e) < 0) {
			pd_templates_free(t, i + 1);
			goto out;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t[j].name, t[i].name)) {
				pd_fail_as(e, EINVAL, "%s.name: '%s' is already the name of templates[%zu]", where,
					   t[i].name, j);
				pd_templates_free(t, i + 1);
				goto out;
			}
	}
	*out = t;
	*n = count;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

int pd_templates_load(const char *path, pd_template **out, size_t *n, pd_err *e)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return pd_fail(e, errno, "templates file %s", path);
	char *buf = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len + 4096 > cap) {
			if (cap > (16u << 20)) {
				free(buf);
				fclose(f);
				return pd_fail_as(e, EFBIG, "templates file %s is over 16 MiB", path);
			}
			cap = cap ? cap * 2 : 8192;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return pd_fail(e, ENOMEM, "templates file %s", path);
			}
			buf = nb;
		}
		size_t k = fread(buf + len, 1, cap - len, f);
		len += k;
		if (k == 0)
			break;
	}
	fclose(f);
	int rc = pd_templates_parse(buf, len, out, n, e);
	if (rc < 0)
		pd_err_prefix(e, "templates file %s: ", path);
	free(buf);
	return rc;
}

static const char default_templates[] =
	"{\"templates\": ["
	"{\"name\": \"bash\", \"requires\": [\"bash\"], \"cwd\": \"/work\"},"
	/* the memory fast path where the runtime tolerates a data-segment limit and says so when
	 * an allocation fails (MemoryError, std::bad_alloc): see lib/allocfail.c */
	"{\"name\": \"python\", \"requires\": [\"python3\"], \"cwd\": \"/work\", \"memory_fast_path\": \"32M\","
	" \"warmup\": [\"python3\", \"-c\", \"import os, sys, json\"],"
	" \"env\": {\"PATH\": \"/usr/local/bin:/usr/bin:/bin\", \"HOME\": \"/root\", \"LANG\": \"C.UTF-8\","
	"          \"PYTHONDONTWRITEBYTECODE\": \"1\", \"PYTHONUNBUFFERED\": \"1\"}},"
	"{\"name\": \"c\", \"requires\": [\"gcc\", \"as\", \"ld\"], \"cwd\": \"/work\"},"
	"{\"name\": \"cpp\", \"requires\": [\"g++\", \"as\", \"ld\"], \"cwd\": \"/work\", \"memory_fast_path\": \"32M\"},"
	"{\"name\": \"node\", \"language\": \"nodejs\", \"requires\": [\"node\"], \"cwd\": \"/work\","
	" \"warmup\": [\"node\", \"-e\", \"0\"],"
	/* Debian's node modules (node-lodash...) live there; a node not from Debian does not look */
	" \"env\": {\"PATH\": \"/usr/local/bin:/usr/bin:/bin\", \"HOME\": \"/root\", \"LANG\": \"C.UTF-8\","
	"          \"NODE_PATH\": \"/usr/share/nodejs:/usr/lib/nodejs\"}}"
	"]}";

int pd_templates_default(pd_template **out, size_t *n, pd_err *e)
{
	return pd_templates_parse(default_templates, sizeof default_templates - 1, out, n, e);
}
