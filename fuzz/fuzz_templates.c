/* Fuzzes pd_templates_parse: the input is the text of a templates file (paddock serve
 * --templates, paddock run --templates).
 *
 * Beyond "no crash, no leak, no undefined behaviour" (ASan, LSan incl. the partial templates of the
 * error paths, UBSan incl. float-cast-overflow of durations):
 *  - a refusal returns -1 with *out NULL, *n 0 and an error message naming the field;
 *  - accepted templates are valid as the pools use them: names of 1-63 characters of a-z 0-9 _ . -
 *    and unique, the layers (image) absolute and NULL-ended, env entries K=V with a non-empty K, a
 *    warm-up command of 1 to PD_TPL_MAX_REQUIRES words (or none),
 *    at most PD_TPL_MAX_* of each list, absolute file paths with data, modes within 07777, an
 *    absolute cwd, pool min <= max, memory 0 or >= 4 MiB, disk 0 or >= 4 KiB;
 *  - pd_template_sandbox_opts points at the template's own layers;
 *  - parsing is deterministic: the same text parses to the same templates a second time;
 *  - the built-in templates (pd_templates_default) parse and pass the same checks. */
#include "fuzz_common.h"

static void check_template(const pd_template *t)
{
	size_t nl = strnlen(t->name, sizeof t->name);
	FUZZ_CHECK(nl > 0 && nl < sizeof t->name, "name length");
	FUZZ_CHECK(strspn(t->name, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == nl, "name '%s'", t->name);
	FUZZ_CHECK(strnlen(t->language, sizeof t->language) < sizeof t->language, "language");
	int k;
	for (k = 0; t->layers[k]; k++) {
		FUZZ_CHECK(k < PD_TPL_MAX_LAYERS, "too many layers");
		FUZZ_CHECK(t->layers[k][0] == '/', "layer '%s' not absolute", t->layers[k]);
	}
	for (k = 0; t->env[k]; k++) {
		FUZZ_CHECK(k < PD_TPL_MAX_ENV, "too many env");
		const char *eq = strchr(t->env[k], '=');
		FUZZ_CHECK(eq && eq != t->env[k], "env '%s' is not K=V", t->env[k]);
	}
	for (k = 0; t->requires[k]; k++) {
		FUZZ_CHECK(k < PD_TPL_MAX_REQUIRES, "too many requires");
		FUZZ_CHECK(t->requires[k][0] && !strchr(t->requires[k], '/'), "requires '%s'", t->requires[k]);
	}
	for (k = 0; t->warmup[k]; k++)
		FUZZ_CHECK(k < PD_TPL_MAX_REQUIRES, "warm-up command too long");
	FUZZ_CHECK(!t->cwd || t->cwd[0] == '/', "cwd '%s'", t->cwd);
	FUZZ_CHECK(t->nfiles <= PD_TPL_MAX_FILES, "nfiles %zu", t->nfiles);
	for (size_t i = 0; i < t->nfiles; i++) {
		FUZZ_CHECK(t->files[i].path && t->files[i].path[0] == '/', "file %zu path", i);
		FUZZ_CHECK(t->files[i].data && t->files[i].data[t->files[i].len] == 0, "file %zu data", i);
		FUZZ_CHECK(t->files[i].mode <= 07777, "file %zu mode %o", i, (unsigned)t->files[i].mode);
	}
	FUZZ_CHECK(t->pool_min <= t->pool_max, "pool min %u > max %u", t->pool_min, t->pool_max);
	FUZZ_CHECK(!t->limits.memory_bytes || t->limits.memory_bytes >= (4u << 20), "memory");
	FUZZ_CHECK(!t->limits.disk_bytes || t->limits.disk_bytes >= 4096, "disk");
	FUZZ_CHECK(t->net == PD_NET_LOOPBACK || t->net == PD_NET_NONE || t->net == PD_NET_HOST, "net");
	pd_sandbox_opts o;
	pd_template_sandbox_opts(t, &o);
	FUZZ_CHECK(t->layers[0] ? o.layers == (const char *const *)t->layers : o.layers == NULL, "opts.layers");
}

static int same_template(const pd_template *a, const pd_template *b)
{
	if (strcmp(a->name, b->name) || strcmp(a->language, b->language) || a->nfiles != b->nfiles ||
	    memcmp(&a->limits, &b->limits, sizeof a->limits) || a->net != b->net ||
	    a->pool_min != b->pool_min || a->pool_max != b->pool_max ||
	    a->pool_idle_ttl_ms != b->pool_idle_ttl_ms || a->session_idle_ttl_ms != b->session_idle_ttl_ms ||
	    a->session_max_ms != b->session_max_ms || !a->cwd != !b->cwd || (a->cwd && strcmp(a->cwd, b->cwd)))
		return 0;
	for (int k = 0; a->warmup[k] || b->warmup[k]; k++)
		if (!a->warmup[k] || !b->warmup[k] || strcmp(a->warmup[k], b->warmup[k]))
			return 0;
	for (size_t i = 0; i < a->nfiles; i++)
		if (strcmp(a->files[i].path, b->files[i].path) || a->files[i].len != b->files[i].len ||
		    memcmp(a->files[i].data, b->files[i].data, a->files[i].len) || a->files[i].mode != b->files[i].mode)
			return 0;
	return 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	pd_template *t = NULL;
	size_t n = 0;
	pd_err e = {0};
	FUZZ_CHECK(pd_templates_default(&t, &n, &e) == 0 && n > 0, "built-in templates: %s", e.msg);
	for (size_t i = 0; i < n; i++)
		check_template(&t[i]);
	pd_templates_free(t, n);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pd_template *t = (pd_template *)1, *t2 = NULL;
	size_t n = 12345, n2 = 0;
	pd_err e = {0};
	int rc = pd_templates_parse((const char *)data, size, &t, &n, &e);
	if (rc < 0) {
		FUZZ_CHECK(rc == -1 && t == NULL && n == 0, "a refusal leaves no templates");
		FUZZ_CHECK(e.msg[0] && strnlen(e.msg, sizeof e.msg) < sizeof e.msg, "refusal without a message");
		return 0;
	}
	FUZZ_CHECK(rc == 0 && t != NULL, "accepted without templates");
	for (size_t i = 0; i < n; i++) {
		check_template(&t[i]);
		for (size_t j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(t[i].name, t[j].name), "duplicate name '%s'", t[i].name);
	}
	pd_err e2 = {0};
	FUZZ_CHECK(pd_templates_parse((const char *)data, size, &t2, &n2, &e2) == 0 && n2 == n,
		   "second parse differs");
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(same_template(&t[i], &t2[i]), "second parse of templates[%zu] differs", i);
	pd_templates_free(t, n);
	pd_templates_free(t2, n2);
	return 0;
}
