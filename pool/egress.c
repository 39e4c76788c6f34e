/* A template's "egress" (the hosts an allowlist network may reach, and the relay's bounds) and
 * a request's narrowing of it.
 *
 * The template is the grant: an operator writes which mirrors a setup step may use. A request
 * or a session stage may ask for allowlist only where its template has a list, and only for
 * entries of that list (as written there): a client of the daemon must not be able to point
 * its sandboxes anywhere the operator did not. */
#define _GNU_SOURCE
#include "pools.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALLOW 64

void pd_egress_list_free(char **l)
{
	for (size_t i = 0; l && l[i]; i++)
		free(l[i]);
	free(l);
}

static char **list_copy(char *const *src)
{
	size_t n = 0;
	while (src && src[n])
		n++;
	char **l = calloc(n + 1, sizeof *l);
	for (size_t i = 0; l && i < n; i++)
		if (!(l[i] = strdup(src[i]))) {
			pd_egress_list_free(l);
			return NULL;
		}
	return l;
}

/* "allow": [...] into a heap list, each entry checked */
static int parse_allow(json_t *a, const char *where, char ***out, pd_err *e)
{
	if (!json_is_array(a) || !json_array_size(a) || json_array_size(a) > MAX_ALLOW)
		return pd_fail_as(e, EINVAL, "%s.allow: must be an array of 1 to %d \"HOST:PORT\" entries", where, MAX_ALLOW);
	char **l = calloc(json_array_size(a) + 1, sizeof *l);
	if (!l)
		return pd_fail(e, ENOMEM, "%s", where);
	for (size_t i = 0; i < json_array_size(a); i++) {
		const char *s = json_string_value(json_array_get(a, i));
		pd_err pe;
		if (!s || pd_egress_entry_check(s, &pe) < 0) {
			pd_egress_list_free(l);
			return pd_fail_as(e, EINVAL, "%s.allow[%zu]: %s", where, i, s ? pe.msg : "must be a string");
		}
		if (!(l[i] = strdup(s))) {
			pd_egress_list_free(l);
			return pd_fail(e, ENOMEM, "%s", where);
		}
	}
	*out = l;
	return 0;
}

int pd_template_parse_egress(json_t *v, const char *where, pd_template *t, pd_err *e)
{
	static const char *const known[] = {"allow", "max_connections", "max_bytes", "idle_timeout", NULL};
	if (!json_is_object(v))
		return pd_fail_as(e, EINVAL, "%s: must be an object ({\"allow\": [\"HOST:PORT\", ...]})", where);
	const char *key;
	json_t *x;
	json_object_foreach(v, key, x) {
		bool ok = false;
		for (int i = 0; known[i]; i++)
			ok |= !strcmp(key, known[i]);
		if (!ok)
			return pd_fail_as(e, EINVAL, "%s.%s: unknown field (allow, max_connections, max_bytes, idle_timeout)",
				       where, key);
	}
	char **l = NULL;
	if (parse_allow(json_object_get(v, "allow"), where, &l, e) < 0)
		return -1;
	pd_egress_opts o = {0};
	json_t *m = json_object_get(v, "max_connections");
	if (m && (!json_is_integer(m) || json_integer_value(m) < 1 || json_integer_value(m) > 1024)) {
		pd_egress_list_free(l);
		return pd_fail_as(e, EINVAL, "%s.max_connections: must be a whole number from 1 to 1024", where);
	}
	o.max_conns = m ? (uint32_t)json_integer_value(m) : 0;
	m = json_object_get(v, "max_bytes");
	if (m && !((json_is_integer(m) && json_integer_value(m) > 0 && (o.max_bytes = (uint64_t)json_integer_value(m))) ||
		   (json_is_string(m) && pd_parse_size(json_string_value(m), &o.max_bytes) == 0 && o.max_bytes))) {
		pd_egress_list_free(l);
		return pd_fail_as(e, EINVAL, "%s.max_bytes: not a size (bytes, or a string like \"64M\")", where);
	}
	m = json_object_get(v, "idle_timeout");
	if (m && !((json_is_number(m) && json_number_value(m) > 0 && json_number_value(m) <= 86400 &&
		    (o.idle_ms = (uint64_t)(json_number_value(m) * 1000.0 + 0.5))) ||
		   (json_is_string(m) && pd_parse_duration_ms(json_string_value(m), &o.idle_ms) == 0 && o.idle_ms))) {
		pd_egress_list_free(l);
		return pd_fail_as(e, EINVAL, "%s.idle_timeout: not a duration (seconds, or a string like \"30s\")", where);
	}
	pd_egress_list_free(t->egress_allow);
	t->egress_allow = l;
	o.allow = (const char *const *)l;
	t->egress = o;
	return 0;
}

int pd_egress_clone(pd_template *dst, const pd_template *src)
{
	dst->egress_allow = NULL;
	dst->egress.allow = NULL;
	if (!src->egress_allow)
		return 0;
	if (!(dst->egress_allow = list_copy(src->egress_allow)))
		return -1;
	dst->egress.allow = (const char *const *)dst->egress_allow;
	return 0;
}

int pd_egress_narrow(const pd_template *t, json_t *v, const char *where, pd_egress_opts *out, char ***list,
		     pd_err *e)
{
	*list = NULL;
	memset(out, 0, sizeof *out);
	if (!t->egress_allow)
		return pd_fail_as(e, EPERM, "%s: template '%s' has no egress allowlist to use", where, t->name);
	*out = t->egress;
	char **l = NULL;
	if (v && !json_is_null(v)) {
		static const char *const known[] = {"allow", NULL};
		const char *key;
		json_t *x;
		if (!json_is_object(v))
			return pd_fail_as(e, EINVAL, "%s: must be an object ({\"allow\": [...]})", where);
		json_object_foreach(v, key, x) {
			if (strcmp(key, known[0]))
				return pd_fail_as(e, EINVAL, "%s.%s: unknown field (allow; the bounds are the template's)",
					       where, key);
		}
		if (parse_allow(json_object_get(v, "allow"), where, &l, e) < 0)
			return -1;
		for (size_t i = 0; l[i]; i++) {
			bool on = false;
			for (size_t k = 0; !on && t->egress_allow[k]; k++)
				on = !strcmp(l[i], t->egress_allow[k]);
			if (!on) {
				pd_fail_as(e, EPERM, "%s.allow[%zu]: %s is not on template '%s''s egress allowlist", where, i,
					l[i], t->name);
				pd_egress_list_free(l);
				return -1;
			}
		}
	} else if (!(l = list_copy(t->egress_allow))) {
		return pd_fail(e, ENOMEM, "%s", where);
	}
	out->allow = (const char *const *)l;
	*list = l;
	return 0;
}
