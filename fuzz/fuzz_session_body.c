/* Fuzzes the bodies of the session API (server/session_req.c), as server/http/sessions.c parses them:
 * pd_session_create_parse (POST /v1/sessions) and pd_session_exec_parse (POST
 * /v1/sessions/<id>/exec). The first byte chooses: even = create, odd = exec; the rest is the body.
 *
 * Beyond "no crash, no leak, no undefined behaviour" (UBSan's float-cast-overflow included):
 *  - a refused body has an error message that is valid UTF-8 (the 400 carries it);
 *  - create: the template is the string the client gave, whole (not cut to fit, not cut at a NUL
 *    byte), or "bash" when absent or null: anything else given as "template" is refused, not
 *    replaced; ttl and max_lifetime, when given, are numbers of seconds >= 0 (anything else is
 *    refused, not ignored), turned into milliseconds within 1 ms, and small enough that the pools'
 *    ms x 1000 comparison in microseconds does not wrap; the metadata is kept as JSON equal to the
 *    value given;
 *  - exec: the argv is the "cmd" list, each string whole, or /bin/sh -c "shell"; giving both is
 *    refused (one would be silently dropped); at most 4096 arguments; stdin is the string's bytes
 *    refused if not a string; cwd is the string whole; timeout like ttl (a number of seconds, at
 *    most a day); request_id is 1 to 127 characters, whole.
 * ("Whole" includes: not cut at a NUL byte. The bodies are loaded without JSON_ALLOW_NUL, so jansson
 * refuses \u0000 before the parsers see it; the check stays, should that flag ever be added.) */
#include "fuzz_common.h"

#include <math.h>

/* a JSON string as C sees it: whole only when there is no NUL inside */
static int whole(json_t *v, const char *got)
{
	return json_is_string(v) && got && strlen(got) == json_string_length(v) &&
	       !memcmp(got, json_string_value(v), json_string_length(v));
}

static int given(json_t *v)
{
	return v && !json_is_null(v);
}

/* a number of seconds given as v became ms: within 1 ms, no wrap in the pools' us arithmetic */
static void check_seconds(json_t *v, uint64_t ms, double max, const char *what)
{
	if (!given(v)) {
		FUZZ_CHECK(ms == 0, "%s absent but %llu ms", what, (unsigned long long)ms);
		return;
	}
	FUZZ_CHECK(json_is_number(v), "%s: a %s was accepted", what, json_is_string(v) ? "string" : "non-number");
	double s = json_number_value(v);
	FUZZ_CHECK(s >= 0 && s <= max, "%s: %g seconds accepted (0 to %g)", what, s, max);
	FUZZ_CHECK(fabs((double)ms - s * 1000) <= 1.0 + s * 1e-12, "%s: %g s gave %llu ms", what, s,
		   (unsigned long long)ms);
	FUZZ_CHECK(ms <= UINT64_MAX / 1000, "%s: %llu ms wraps in microseconds", what, (unsigned long long)ms);
}

static void create(const uint8_t *data, size_t size)
{
	pd_session_create_req q;
	pd_err e = {0};
	if (pd_session_create_parse((const char *)data, size, &q, &e) < 0) {
		fz_check_refusal(&e);
		FUZZ_CHECK(!q.o.metadata, "refused, yet metadata kept");
		return;
	}
	json_error_t je;
	json_t *b = size ? json_loadb((const char *)data, size, 0, &je) : json_object();
	FUZZ_CHECK(b && json_is_object(b), "accepted a body that is not a JSON object");
	size_t tl = strnlen(q.template_name, sizeof q.template_name);
	FUZZ_CHECK(tl > 0 && tl < sizeof q.template_name, "template name length");
	json_t *t = json_object_get(b, "template");
	if (given(t))
		FUZZ_CHECK(whole(t, q.template_name), "template: the client's %s became '%s'",
			   json_is_string(t) ? "string" : "non-string", q.template_name);
	else
		FUZZ_CHECK(!strcmp(q.template_name, "bash"), "default template '%s'", q.template_name);
	check_seconds(json_object_get(b, "ttl"), q.o.idle_ttl_ms, 1e12, "ttl");
	check_seconds(json_object_get(b, "max_lifetime"), q.o.max_lifetime_ms, 1e12, "max_lifetime");
	json_t *m = json_object_get(b, "metadata");
	FUZZ_CHECK(!m == !q.o.metadata, "metadata %s", m ? "lost" : "invented");
	if (m) {
		json_t *back = json_loads(q.o.metadata, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		FUZZ_CHECK(back && json_equal(back, m), "metadata kept as [%s]", q.o.metadata);
		json_decref(back);
	}
	pd_session_create_req_free(&q);
	json_decref(b);
}

static void exec(const uint8_t *data, size_t size)
{
	pd_session_exec_req q;
	pd_err e = {0};
	if (pd_session_exec_parse((const char *)data, size, &q, &e) < 0) {
		fz_check_refusal(&e);
		FUZZ_CHECK(!q.x.argv && !q.body, "refused, yet something kept");
		return;
	}
	json_t *b = q.body;
	FUZZ_CHECK(json_is_object(b), "accepted a body that is not a JSON object");
	json_t *cmd = json_object_get(b, "cmd"), *shell = json_object_get(b, "shell");
	/* neither: no argv (the session's image's Entrypoint and Cmd run) */
	FUZZ_CHECK((cmd || shell) == (q.x.argv != NULL), "argv %s with cmd %s and shell %s", q.x.argv ? "set" : "absent",
		   cmd ? "given" : "absent", shell ? "given" : "absent");
	size_t n = 0;
	while (q.x.argv && q.x.argv[n])
		n++;
	FUZZ_CHECK(!q.x.argv || n > 0, "an empty argv");
	FUZZ_CHECK(n <= 4096, "%zu arguments", n);
	FUZZ_CHECK(!(cmd && shell), "both cmd and shell accepted: one of them is ignored");
	if (!q.x.argv) {
		/* nothing more of argv to check */
	} else if (cmd) {
		FUZZ_CHECK(json_is_array(cmd) && json_array_size(cmd) == n, "cmd");
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(whole(json_array_get(cmd, i), q.x.argv[i]), "cmd[%zu] became '%s'", i, q.x.argv[i]);
	} else {
		FUZZ_CHECK(n == 3 && !strcmp(q.x.argv[0], "/bin/sh") && !strcmp(q.x.argv[1], "-c"), "shell argv");
		FUZZ_CHECK(whole(shell, q.x.argv[2]), "shell became '%s'", q.x.argv[2]);
	}
	json_t *in = json_object_get(b, "stdin");
	if (given(in)) {
		FUZZ_CHECK(json_is_string(in), "a non-string stdin was accepted (and ignored)");
		FUZZ_CHECK(q.x.stdin_data && q.x.stdin_len == json_string_length(in) &&
				   !memcmp(q.x.stdin_data, json_string_value(in), q.x.stdin_len),
			   "stdin bytes");
	} else {
		FUZZ_CHECK(!q.x.stdin_data && !q.x.stdin_len, "stdin invented");
	}
	FUZZ_CHECK(!q.x.stdin_from_fd, "stdin from an fd");
	json_t *cwd = json_object_get(b, "cwd");
	if (given(cwd))
		FUZZ_CHECK(whole(cwd, q.x.cwd), "cwd: the client's %s became '%s'",
			   json_is_string(cwd) ? "string" : "non-string", q.x.cwd ? q.x.cwd : "(none)");
	else
		FUZZ_CHECK(!q.x.cwd, "cwd invented");
	check_seconds(json_object_get(b, "timeout"), q.x.wall_ms, 86400, "timeout");
	FUZZ_CHECK(!q.x.cpu_ms && !q.x.envp && !q.x.uid && !q.x.gid && !q.x.spill && !q.x.output_kill_bytes,
		   "fields the client does not set");
	json_t *rid = json_object_get(b, "request_id");
	if (rid) {
		FUZZ_CHECK(whole(rid, q.request_id), "request_id: the client's value became '%s'",
			   q.request_id ? q.request_id : "(none)");
		FUZZ_CHECK(strlen(q.request_id) >= 1 && strlen(q.request_id) <= 127, "request_id length %zu",
			   strlen(q.request_id));
	} else {
		FUZZ_CHECK(!q.request_id, "request_id invented");
	}
	pd_session_exec_req_free(&q);
	FUZZ_CHECK(!q.x.argv && !q.body, "free");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 1)
		exec(data + 1, size - 1);
	else
		create(data + 1, size - 1);
	return 0;
}
