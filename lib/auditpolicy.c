/* auditpolicy.c: the audit policy language — parse, merge (template <- problem <- request, the
 * request only tightening), compile to pd_audit_opts — and the honey variables and decoys it
 * declares. The verdict over the evidence is in auditverdict.c.
 *
 * A policy is data from a request, so it is parsed as hostile input (fuzz/fuzz_audit_policy.c):
 * every error names the field it is about, no field is taken on faith (paths absolute and
 * NUL-free, kinds known, counts bounded). */
#define _GNU_SOURCE
#include "auditpolicy.h"
#include "internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define MAX_LIST 256  /* entries per list */
#define MAX_TRAP_BYTES (1 << 20)

/* How much of a client's key an error quotes: at most 64 bytes, cut at a character boundary (the
 * message must stay UTF-8: a 400's JSON needs it; found by fuzz_judge_req). */
static int key_quote(const char *key)
{
	size_t n = strlen(key);
	return (int)pd_utf8_cut(key, n < 64 ? n : 64);
}

static const char *const scratch_dirs[] = {"/tmp", "/work", "/dev/shm"};

/* ---- string vectors (NULL-terminated, owned) ---- */

static int sv_add(strvec *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->s[i], s))
			return 0;
	if (v->n + 2 > v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 8;
		char **p = realloc(v->s, nc * sizeof *p);
		if (!p)
			return -1;
		v->s = p;
		v->cap = nc;
	}
	v->s[v->n] = strdup(s);
	if (!v->s[v->n])
		return -1;
	v->s[++v->n] = NULL;
	return 0;
}

static void sv_free(strvec *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->s[i]);
	free(v->s);
	memset(v, 0, sizeof *v);
}

static int sv_copy(strvec *dst, const strvec *src)
{
	for (size_t i = 0; i < src->n; i++)
		if (sv_add(dst, src->s[i]) < 0)
			return -1;
	return 0;
}

static bool sv_has(const strvec *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->s[i], s))
			return true;
	return false;
}

static const char *const *sv_list(const strvec *v)
{
	static const char *const none[] = {NULL};
	return v->n ? (const char *const *)v->s : none;
}

/* ---- the policy ---- */

static void trap_free(pd_trap *t)
{
	free(t->path);
	free(t->content);
	free(t->answer);
}

void pd_audit_policy_free(pd_audit_policy *p)
{
	if (!p)
		return;
	sv_free(&p->allow);
	sv_free(&p->protect);
	sv_free(&p->writable);
	sv_free(&p->judge);
	sv_free(&p->trap_paths);
	sv_free(&p->env);
	sv_free(&p->egress_allow);
	for (size_t i = 0; i < p->ntraps; i++)
		trap_free(&p->traps[i]);
	free(p->traps);
	free(p);
}

static uint32_t default_fail(void)
{
	return (1u << PD_AK_JUDGE) | (1u << PD_AK_TRAP) | (1u << PD_AK_TAMPER) | (1u << PD_AK_ENV_PROBE) |
	       (1u << PD_AK_EGRESS) | (1u << PD_AK_HARNESS_PROBE);
}

/* points opts at the vectors (after any change to them) */
static void compile(pd_audit_policy *p)
{
	memset(&p->opts, 0, sizeof p->opts);
	p->opts.enabled = true;
	p->opts.allow = sv_list(&p->allow);
	p->opts.protect = sv_list(&p->protect);
	p->opts.writable = sv_list(&p->writable);
	p->opts.judge = sv_list(&p->judge);
	p->opts.traps = sv_list(&p->trap_paths);
	p->opts.egress = p->egress;
	p->opts.egress_allow = sv_list(&p->egress_allow);
	p->opts.max_events = p->max_events;
}

pd_audit_policy *pd_audit_policy_default(const char *workdir)
{
	pd_audit_policy *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->egress = PD_EGRESS_DENY;
	p->fail = default_fail();
	if (sv_add(&p->protect, "/") < 0 || (workdir && workdir[0] == '/' && sv_add(&p->writable, workdir) < 0)) {
		pd_audit_policy_free(p);
		return NULL;
	}
	for (size_t i = 0; i < sizeof scratch_dirs / sizeof scratch_dirs[0]; i++)
		if (sv_add(&p->writable, scratch_dirs[i]) < 0) {
			pd_audit_policy_free(p);
			return NULL;
		}
	compile(p);
	return p;
}

/* an absolute path with no NUL and no control character, shorter than PD_PATH */
static const char *path_value(json_t *j, const char *what, const char *field, size_t idx, pd_err *e)
{
	const char *s = json_is_string(j) ? json_string_value(j) : NULL;
	size_t n = s ? json_string_length(j) : 0;
	if (!s) {
		pd_fail(e, EINVAL, "%s.%s[%zu]: not a string", what, field, idx);
		return NULL;
	}
	if (n == 0 || s[0] != '/' || strlen(s) != n || n >= PD_PATH) {
		pd_fail(e, EINVAL, "%s.%s[%zu]: not an absolute path (under %d bytes)", what, field, idx, PD_PATH);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20) {
			pd_fail(e, EINVAL, "%s.%s[%zu]: a control character in the path", what, field, idx);
			return NULL;
		}
	return s;
}

static int path_list(json_t *j, const char *what, const char *field, strvec *out, pd_err *e)
{
	if (!json_is_array(j))
		return pd_fail(e, EINVAL, "%s.%s: not an array of paths", what, field);
	if (json_array_size(j) > MAX_LIST)
		return pd_fail(e, E2BIG, "%s.%s: more than %d paths", what, field, MAX_LIST);
	sv_free(out);
	for (size_t i = 0; i < json_array_size(j); i++) {
		const char *s = path_value(json_array_get(j, i), what, field, i, e);
		char norm[PD_PATH];
		if (!s)
			return -1;
		/* kept as the kernel would walk them: "/work/../usr" is /usr */
		if (!pd_audit_normalize(s, norm, sizeof norm) || sv_add(out, norm) < 0)
			return pd_fail(e, ENOMEM, "%s.%s", what, field);
	}
	return 0;
}

static char *text_field(json_t *o, const char *key, const char *what, size_t idx, pd_err *e, bool *bad)
{
	json_t *j = json_object_get(o, key);
	if (!j)
		return NULL;
	if (!json_is_string(j) || json_string_length(j) > MAX_TRAP_BYTES ||
	    strlen(json_string_value(j)) != json_string_length(j)) {
		pd_fail(e, EINVAL, "%s.traps[%zu].%s: not a string of at most %d bytes without NUL", what, idx, key,
			MAX_TRAP_BYTES);
		*bad = true;
		return NULL;
	}
	char *s = strdup(json_string_value(j));
	if (!s) {
		pd_fail(e, ENOMEM, "%s.traps[%zu]", what, idx);
		*bad = true;
	}
	return s;
}

static int add_trap(pd_audit_policy *p, const pd_trap *t)
{
	for (size_t i = 0; i < p->ntraps; i++)
		if (!strcmp(p->traps[i].path, t->path))
			return 0;
	pd_trap *n = realloc(p->traps, (p->ntraps + 1) * sizeof *n);
	if (!n)
		return -1;
	p->traps = n;
	pd_trap *d = &p->traps[p->ntraps];
	memset(d, 0, sizeof *d);
	d->path = strdup(t->path);
	d->content = t->content ? strdup(t->content) : NULL;
	d->answer = t->answer ? strdup(t->answer) : NULL;
	if (!d->path || (t->content && !d->content) || (t->answer && !d->answer)) {
		trap_free(d);
		return -1;
	}
	p->ntraps++;
	return sv_add(&p->trap_paths, t->path);
}

static int parse_traps(pd_audit_policy *p, json_t *j, const char *what, pd_err *e)
{
	if (!json_is_array(j))
		return pd_fail(e, EINVAL, "%s.traps: not an array", what);
	if (json_array_size(j) > MAX_LIST)
		return pd_fail(e, E2BIG, "%s.traps: more than %d traps", what, MAX_LIST);
	for (size_t i = 0; i < json_array_size(j); i++) {
		json_t *t = json_array_get(j, i);
		pd_trap tr = {0};
		bool bad = false;
		if (json_is_string(t)) {
			const char *s = path_value(t, what, "traps", i, e);
			if (!s)
				return -1;
			char norm[PD_PATH];
			pd_audit_normalize(s, norm, sizeof norm);
			tr.path = norm;
			if (add_trap(p, &tr) < 0)
				return pd_fail(e, ENOMEM, "%s.traps", what);
			continue;
		}
		if (!json_is_object(t))
			return pd_fail(e, EINVAL, "%s.traps[%zu]: not a path or an object", what, i);
		const char *key;
		json_t *val;
		json_object_foreach(t, key, val)
		{
			if (strcmp(key, "path") && strcmp(key, "content") && strcmp(key, "answer"))
				return pd_fail(e, EINVAL, "%s.traps[%zu].%s: unknown field", what, i, key);
		}
		json_t *pj = json_object_get(t, "path");
		if (!pj)
			return pd_fail(e, EINVAL, "%s.traps[%zu].path: missing", what, i);
		char field[32];
		snprintf(field, sizeof field, "traps[%zu].path", i);
		const char *path = json_is_string(pj) ? json_string_value(pj) : NULL;
		if (!path || !path_value(pj, what, "traps", i, e))
			return path ? -1 : pd_fail(e, EINVAL, "%s.%s: not a string", what, field);
		tr.content = text_field(t, "content", what, i, e, &bad);
		if (!bad)
			tr.answer = text_field(t, "answer", what, i, e, &bad);
		char norm[PD_PATH];
		pd_audit_normalize(path, norm, sizeof norm);
		tr.path = norm;
		int rc = bad ? -1 : add_trap(p, &tr);
		free(tr.content);
		free(tr.answer);
		if (rc < 0)
			return bad ? -1 : pd_fail(e, ENOMEM, "%s.traps", what);
	}
	return 0;
}

static bool env_name_ok(const char *s)
{
	if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* a token no program could guess nor produce by chance */
static int new_token(const char *name, char *out, size_t size)
{
	unsigned char r[16];
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		return -1;
	size_t n = (size_t)snprintf(out, size, "pdk-honey-");
	for (size_t i = 0; i < sizeof r && n + 3 < size; i++)
		n += (size_t)snprintf(out + n, size - n, "%02x", r[i]);
	(void)name;
	return 0;
}

static int add_env(pd_audit_policy *p, const char *name, const char *value, const char *what, pd_err *e)
{
	for (size_t i = 0; i < p->env.n; i++)
		if (!strncmp(p->env.s[i], name, strlen(name)) && p->env.s[i][strlen(name)] == '=')
			return 0; /* the first declaration keeps its token */
	char buf[PD_PATH + 128];
	if (snprintf(buf, sizeof buf, "%s=%s", name, value) >= (int)sizeof buf)
		return pd_fail(e, E2BIG, "%s.env.%s: too long", what, name);
	return sv_add(&p->env, buf) < 0 ? pd_fail(e, ENOMEM, "%s.env", what) : 0;
}

static int parse_env(pd_audit_policy *p, json_t *j, const char *what, pd_err *e)
{
	if (json_is_array(j)) {
		if (json_array_size(j) > MAX_LIST)
			return pd_fail(e, E2BIG, "%s.env: more than %d variables", what, MAX_LIST);
		for (size_t i = 0; i < json_array_size(j); i++) {
			json_t *n = json_array_get(j, i);
			const char *name = json_is_string(n) ? json_string_value(n) : NULL;
			if (!name || strlen(name) != json_string_length(n) || strlen(name) > 128 || !env_name_ok(name))
				return pd_fail(e, EINVAL, "%s.env[%zu]: not a variable name", what, i);
			char tok[64];
			if (new_token(name, tok, sizeof tok) < 0)
				return pd_fail(e, errno, "%s.env[%zu]: no random token", what, i);
			if (add_env(p, name, tok, what, e) < 0)
				return -1;
		}
		return 0;
	}
	if (!json_is_object(j))
		return pd_fail(e, EINVAL, "%s.env: not an array of names nor an object of name: token", what);
	if (json_object_size(j) > MAX_LIST)
		return pd_fail(e, E2BIG, "%s.env: more than %d variables", what, MAX_LIST);
	const char *key;
	json_t *val;
	json_object_foreach(j, key, val)
	{
		if (strlen(key) > 128 || !env_name_ok(key))
			return pd_fail(e, EINVAL, "%s.env.%.*s: not a variable name", what, key_quote(key), key);
		const char *v = json_is_string(val) ? json_string_value(val) : NULL;
		/* a token must be long enough not to turn up by chance in honest output */
		if (!v || strlen(v) != json_string_length(val) || strlen(v) < 8 || strlen(v) > 256)
			return pd_fail(e, EINVAL, "%s.env.%s: not a token of 8 to 256 bytes", what, key);
		if (add_env(p, key, v, what, e) < 0)
			return -1;
	}
	return 0;
}

static int parse_egress(pd_audit_policy *p, json_t *j, const char *what, pd_err *e)
{
	if (json_is_string(j)) {
		const char *s = json_string_value(j);
		if (!strcmp(s, "deny"))
			p->egress = PD_EGRESS_DENY;
		else if (!strcmp(s, "log"))
			p->egress = PD_EGRESS_LOG;
		else if (!strcmp(s, "allowlist"))
			return pd_fail(e, EINVAL, "%s.egress: an allowlist is {\"allowlist\": [\"ADDR:PORT\", ...]}",
				       what);
		else
			return pd_fail(e, EINVAL, "%s.egress: not deny, log or {\"allowlist\": [...]}", what);
		sv_free(&p->egress_allow);
		return 0;
	}
	json_t *l = json_is_object(j) ? json_object_get(j, "allowlist") : NULL;
	if (!l || json_object_size(j) != 1)
		return pd_fail(e, EINVAL, "%s.egress: not deny, log or {\"allowlist\": [...]}", what);
	if (!json_is_array(l) || json_array_size(l) > MAX_LIST)
		return pd_fail(e, EINVAL, "%s.egress.allowlist: not an array of at most %d entries", what, MAX_LIST);
	sv_free(&p->egress_allow);
	for (size_t i = 0; i < json_array_size(l); i++) {
		json_t *x = json_array_get(l, i);
		const char *s = json_is_string(x) ? json_string_value(x) : NULL;
		bool ok = s && strlen(s) == json_string_length(x) && s[0] && strlen(s) < 80;
		for (const char *c = s; ok && *c; c++)
			ok = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || (*c >= 'A' && *c <= 'F') ||
			     *c == '.' || *c == ':' || *c == '[' || *c == ']';
		if (!ok)
			return pd_fail(e, EINVAL, "%s.egress.allowlist[%zu]: not ADDR:PORT, ADDR or :PORT", what, i);
		if (sv_add(&p->egress_allow, s) < 0)
			return pd_fail(e, ENOMEM, "%s.egress", what);
	}
	p->egress = PD_EGRESS_ALLOWLIST;
	return 0;
}

static int parse_fail(pd_audit_policy *p, json_t *j, const char *what, pd_err *e)
{
	if (!json_is_array(j))
		return pd_fail(e, EINVAL, "%s.fail: not an array of event kinds", what);
	for (size_t i = 0; i < json_array_size(j); i++) {
		json_t *k = json_array_get(j, i);
		int kind = json_is_string(k) ? pd_audit_kind_parse(json_string_value(k)) : -1;
		if (kind < 0)
			return pd_fail(e, EINVAL, "%s.fail[%zu]: not an event kind (read_outside, judge_material, "
					      "trap_read, tamper, env_probe, egress, harness_probe)",
				       what, i);
		p->fail |= 1u << kind;
	}
	return 0;
}

pd_audit_policy *pd_audit_policy_parse(const char *json, size_t len, const char *what, const char *workdir,
				       pd_err *e)
{
	if (!what)
		what = "audit";
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!root) {
		pd_fail(e, EINVAL, "%s: not JSON (%s at %d)", what, je.text, je.position);
		return NULL;
	}
	pd_audit_policy *p = NULL;
	if (json_is_true(root)) {
		json_decref(root);
		p = pd_audit_policy_default(workdir);
		if (!p)
			pd_fail(e, ENOMEM, "%s", what);
		return p;
	}
	if (!json_is_object(root)) {
		pd_fail(e, EINVAL, "%s: not true nor a policy object", what);
		json_decref(root);
		return NULL;
	}
	p = pd_audit_policy_default(workdir);
	if (!p) {
		pd_fail(e, ENOMEM, "%s", what);
		json_decref(root);
		return NULL;
	}
	const char *key;
	json_t *val;
	int rc = 0;
	json_object_foreach(root, key, val)
	{
		if (!strcmp(key, "allow")) {
			rc = path_list(val, what, key, &p->allow, e);
			p->set_allow = true;
		}
		else if (!strcmp(key, "protect")) {
			/* more protected paths: "/" stays (what is the attempt's to change is said
			 * with writable) */
			rc = path_list(val, what, key, &p->protect, e);
			if (!rc && sv_add(&p->protect, "/") < 0)
				rc = pd_fail(e, ENOMEM, "%s", what);
		}
		else if (!strcmp(key, "writable")) {
			rc = path_list(val, what, key, &p->writable, e);
			p->set_writable = true;
			for (size_t i = 0; !rc && i < sizeof scratch_dirs / sizeof scratch_dirs[0]; i++)
				rc = sv_add(&p->writable, scratch_dirs[i]) < 0 ? pd_fail(e, ENOMEM, "%s", what) : 0;
		} else if (!strcmp(key, "judge"))
			rc = path_list(val, what, key, &p->judge, e);
		else if (!strcmp(key, "traps"))
			rc = parse_traps(p, val, what, e);
		else if (!strcmp(key, "env"))
			rc = parse_env(p, val, what, e);
		else if (!strcmp(key, "egress")) {
			rc = parse_egress(p, val, what, e);
			p->set_egress = true;
		}
		else if (!strcmp(key, "fail"))
			rc = parse_fail(p, val, what, e);
		else if (!strcmp(key, "mandatory")) {
			if (!json_is_boolean(val))
				rc = pd_fail(e, EINVAL, "%s.mandatory: not true or false", what);
			p->mandatory = json_is_true(val);
		} else if (!strcmp(key, "max_events")) {
			json_int_t n = json_is_integer(val) ? json_integer_value(val) : -1;
			if (n < 1 || n > 100000)
				rc = pd_fail(e, EINVAL, "%s.max_events: not an integer from 1 to 100000", what);
			else
				p->max_events = (size_t)n;
		} else
			rc = pd_fail(e, EINVAL, "%s.%.*s: unknown field (allow, protect, writable, judge, traps, env, "
					      "egress, fail, mandatory, max_events)",
				     what, key_quote(key), key);
		if (rc < 0)
			break;
	}
	json_decref(root);
	if (rc < 0) {
		pd_audit_policy_free(p);
		return NULL;
	}
	compile(p);
	return p;
}

pd_audit_policy *pd_audit_policy_copy(const pd_audit_policy *src)
{
	pd_audit_policy *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->egress = src->egress;
	p->set_allow = src->set_allow;
	p->set_writable = src->set_writable;
	p->set_egress = src->set_egress;
	p->fail = src->fail;
	p->mandatory = src->mandatory;
	p->max_events = src->max_events;
	bool bad = sv_copy(&p->allow, &src->allow) < 0 || sv_copy(&p->protect, &src->protect) < 0 ||
		   sv_copy(&p->writable, &src->writable) < 0 || sv_copy(&p->judge, &src->judge) < 0 ||
		   sv_copy(&p->env, &src->env) < 0 || sv_copy(&p->egress_allow, &src->egress_allow) < 0;
	for (size_t i = 0; !bad && i < src->ntraps; i++)
		bad = add_trap(p, &src->traps[i]) < 0;
	if (bad) {
		pd_audit_policy_free(p);
		return NULL;
	}
	compile(p);
	return p;
}

/* how strict an egress mode is */
static int egress_rank(pd_egress g)
{
	return g == PD_EGRESS_DENY ? 2 : g == PD_EGRESS_ALLOWLIST ? 1 : 0;
}

/* each path of over under one of base's (over narrows base) */
static int narrows(const strvec *over, const strvec *base, const char *field, pd_err *e)
{
	for (size_t i = 0; i < over->n; i++)
		if (!pd_path_under(over->s[i], sv_list(base)))
			return pd_fail_as(e, EPERM, "audit.%s[%zu]: %s widens the template's or problem's policy",
				       field, i, over->s[i]);
	return 0;
}

int pd_audit_policy_merge(pd_audit_policy *base, const pd_audit_policy *over, bool tighten_only, pd_err *e)
{
	if (tighten_only) {
		/* what a request may read unrecorded stays within what base lets it */
		strvec readable = {0};
		int rc = sv_copy(&readable, &base->allow) < 0 || sv_copy(&readable, &base->writable) < 0
				 ? pd_fail(e, ENOMEM, "audit policy merge")
				 : 0;
		if (!rc && over->set_allow)
			rc = narrows(&over->allow, &readable, "allow", e);
		sv_free(&readable);
		if (rc < 0)
			return -1;
		/* a writable path must be one base lets change already (then nothing under it that
		 * base protects by a longer prefix stops being protected: those prefixes stay) */
		for (size_t i = 0; over->set_writable && i < over->writable.n; i++)
			if (pd_audit_protected(&base->opts, over->writable.s[i]))
				return pd_fail_as(e, EPERM, "audit.writable[%zu]: %s is protected by the template's or "
							 "problem's policy",
					       i, over->writable.s[i]);
		if (over->set_egress && egress_rank(over->egress) < egress_rank(base->egress))
			return pd_fail_as(e, EPERM, "audit.egress: laxer than the template's or problem's");
		if (over->set_egress && over->egress == PD_EGRESS_ALLOWLIST && base->egress == PD_EGRESS_ALLOWLIST)
			for (size_t i = 0; i < over->egress_allow.n; i++)
				if (!sv_has(&base->egress_allow, over->egress_allow.s[i]))
					return pd_fail_as(e, EPERM,
						       "audit.egress.allowlist[%zu]: %s is not on the template's or "
						       "problem's allowlist",
						       i, over->egress_allow.s[i]);
	}
	strvec allow = {0}, writable = {0}, egress_allow = {0};
	if ((over->set_allow && sv_copy(&allow, &over->allow) < 0) ||
	    (over->set_writable && sv_copy(&writable, &over->writable) < 0) ||
	    (over->set_egress && sv_copy(&egress_allow, &over->egress_allow) < 0) ||
	    sv_copy(&base->protect, &over->protect) < 0 || sv_copy(&base->judge, &over->judge) < 0 ||
	    sv_copy(&base->env, &over->env) < 0) {
		sv_free(&allow);
		sv_free(&writable);
		sv_free(&egress_allow);
		return pd_fail(e, ENOMEM, "audit policy merge");
	}
	for (size_t i = 0; i < over->ntraps; i++)
		if (add_trap(base, &over->traps[i]) < 0) {
			sv_free(&allow);
			sv_free(&writable);
			sv_free(&egress_allow);
			return pd_fail(e, ENOMEM, "audit policy merge");
		}
	if (over->set_allow) {
		sv_free(&base->allow);
		base->allow = allow;
		base->set_allow = true;
	}
	if (over->set_writable) {
		sv_free(&base->writable);
		base->writable = writable;
		base->set_writable = true;
	}
	if (over->set_egress) {
		sv_free(&base->egress_allow);
		base->egress_allow = egress_allow;
		base->egress = over->egress;
		base->set_egress = true;
	}
	base->fail |= over->fail;
	base->mandatory |= over->mandatory;
	if (over->max_events && (!base->max_events || !tighten_only || over->max_events < base->max_events))
		base->max_events = over->max_events;
	compile(base);
	return 0;
}

const pd_audit_opts *pd_audit_policy_opts(const pd_audit_policy *p)
{
	return &p->opts;
}

bool pd_audit_policy_mandatory(const pd_audit_policy *p)
{
	return p->mandatory;
}

int pd_audit_policy_effective(const pd_audit_policy *base, pd_audit_policy **req, pd_err *e)
{
	if (!base || (!*req && !base->mandatory))
		return 0;
	pd_audit_policy *p = pd_audit_policy_copy(base);
	if (!p)
		return pd_fail(e, ENOMEM, "audit: out of memory");
	if (*req && pd_audit_policy_merge(p, *req, true, e) < 0) {
		pd_audit_policy_free(p);
		return -1;
	}
	pd_audit_policy_free(*req);
	*req = p;
	return 1;
}

const char *const *pd_audit_policy_env(const pd_audit_policy *p)
{
	return sv_list(&p->env);
}

int pd_audit_policy_plant(const pd_audit_policy *p, pd_sandbox *s, pd_err *e)
{
	for (size_t i = 0; i < p->ntraps; i++) {
		const pd_trap *t = &p->traps[i];
		if (!t->content)
			continue;
		char dir[PD_PATH];
		snprintf(dir, sizeof dir, "%s", t->path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = 0;
			if (pd_sandbox_mkdir(s, dir, 0755, e) < 0)
				return -1;
		}
		if (pd_sandbox_write_file(s, t->path, t->content, strlen(t->content), 0644, e) < 0)
			return -1;
	}
	return 0;
}

static void json_paths(json_t *o, const char *key, const strvec *v)
{
	json_t *a = json_array();
	for (size_t i = 0; i < v->n; i++)
		json_array_append_new(a, json_string(v->s[i]));
	json_object_set_new(o, key, a);
}

char *pd_audit_policy_json(const pd_audit_policy *p)
{
	json_t *o = json_object();
	json_paths(o, "allow", &p->allow);
	json_paths(o, "protect", &p->protect);
	json_paths(o, "writable", &p->writable);
	json_paths(o, "judge", &p->judge);
	json_t *traps = json_array();
	for (size_t i = 0; i < p->ntraps; i++) {
		json_t *t = json_object();
		json_object_set_new(t, "path", json_string(p->traps[i].path));
		if (p->traps[i].content)
			json_object_set_new(t, "content", json_string(p->traps[i].content));
		if (p->traps[i].answer)
			json_object_set_new(t, "answer", json_string(p->traps[i].answer));
		json_array_append_new(traps, t);
	}
	json_object_set_new(o, "traps", traps);
	json_t *env = json_object();
	for (size_t i = 0; i < p->env.n; i++) {
		char *eq = strchr(p->env.s[i], '=');
		char name[160];
		snprintf(name, sizeof name, "%.*s", (int)(eq - p->env.s[i]), p->env.s[i]);
		json_object_set_new(env, name, json_string(eq + 1));
	}
	json_object_set_new(o, "env", env);
	if (p->egress == PD_EGRESS_ALLOWLIST) {
		json_t *g = json_object();
		json_paths(g, "allowlist", &p->egress_allow);
		json_object_set_new(o, "egress", g);
	} else {
		json_object_set_new(o, "egress", json_string(p->egress == PD_EGRESS_DENY ? "deny" : "log"));
	}
	json_t *fail = json_array();
	for (int k = 0; k < PD_AK_N; k++)
		if (p->fail & (1u << k))
			json_array_append_new(fail, json_string(pd_audit_kind_name((pd_audit_kind)k)));
	json_object_set_new(o, "fail", fail);
	json_object_set_new(o, "mandatory", json_boolean(p->mandatory));
	if (p->max_events)
		json_object_set_new(o, "max_events", json_integer((json_int_t)p->max_events));
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}
