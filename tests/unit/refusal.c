/* refusal.c: a refused request's error is the field and the reason alone (pd_refuse), code EINVAL,
 * with no strerror text baked in for the server to take off again: the API parsers
 * (server/api/) and the session parsers (server/session_req.c), each with a bad request. */
#define _GNU_SOURCE
#include "server.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>

typedef pd_job *(*parser)(json_t *, pd_err *);

static void refused(parser p, const char *body, const char *want, const char *what)
{
	json_t *req = json_loads(body, 0, NULL);
	pd_err e = {0};
	pd_job *j = req ? p(req, &e) : NULL;
	ok(!j && e.code == EINVAL, "%s: refused with EINVAL (%d)", what, e.code);
	ok(e.kind == PD_EK_REFUSED && e.cause == 0, "%s: the class is data (refused, no cause)", what);
	is_str(e.msg, want, "%s: the message alone", what);
	is_str(PD_ERR_STR(&e), want, "%s: rendered as it is", what);
	pd_job_free(j);
	json_decref(req);
}

int main(void)
{
	plan(30);
	refused(pd_job_from_native, "{\"shell\":\"true\",\"deadline_ms\":-1}",
		"deadline_ms: must be a positive whole number of milliseconds, at most a year", "native deadline_ms");
	refused(pd_job_from_native, "{\"language\":\"cobol\",\"code\":\"\"}",
		"language: 'cobol' is not a language paddock knows (python, python3, bash, c, cpp, c++, nodejs, "
		"javascript, node, perl, java, go, rust, ruby, lua, php, pascal, fortran)",
		"native language, listing the languages");
	refused(pd_job_from_native, "{\"language\":\"python\"}", "code: required with language",
		"native language without code");
	refused(pd_job_from_native, "{\"shell\":\"true\",\"x: Invalid argument\":1}",
		"x: Invalid argument: unknown field", "native unknown field quoting strerror's words");
	refused(pd_job_from_run_code, "{\"language\":\"python\"}", "code: required, a string", "run_code code");
	refused(pd_job_from_piston, "{\"language\":\"python\",\"version\":\"99\",\"files\":[{\"content\":\"\"}]}",
		"python-99 runtime is unknown", "piston runtime");
	pd_session_create_req c;
	pd_err e = {0};
	static const char cbody[] = "{\"ttl\":\"x\"}";
	ok(pd_session_create_parse(cbody, strlen(cbody), &c, &e) < 0 && e.code == EINVAL && e.kind == PD_EK_REFUSED,
	   "session create: refused, of the refused class");
	ok(e.msg[0] && !strstr(e.msg, "Invalid argument"), "session create: no strerror text (%s)", e.msg);
	pd_session_exec_req x;
	memset(&e, 0, sizeof e);
	/* "{}" is a step with no command (the image's Entrypoint and Cmd): a cmd of the wrong type is refused */
	ok(pd_session_exec_parse("{\"cmd\":5}", 9, &x, &e) < 0 && e.code == EINVAL && e.msg[0] && !strstr(e.msg, "Invalid argument"),
	   "session exec: refused, no strerror text (%s)", e.msg);
	/* a message cut at its buffer's end stays UTF-8: a client's long key of 2-byte characters */
	char *key = malloc(1201);
	for (int i = 0; i < 1200; i += 2)
		memcpy(key + i, "\xc3\xa9", 2);
	key[1200] = 0;
	json_t *req = json_pack("{s:s,s:i}", "shell", "true", key, 1);
	memset(&e, 0, sizeof e);
	pd_job *j = pd_job_from_native(req, &e);
	size_t n = strlen(e.msg);
	json_t *text = json_string(e.msg); /* NULL for a text that is not UTF-8 */
	ok(!j && n < sizeof e.msg && text, "a cut message is still UTF-8 (%zu bytes)", n);
	json_decref(text);
	json_decref(req);
	free(key);
	/* one text per admission refusal, the same from every way in (runs, judge, batch, paddock
	 * run all call pd_admit_text): distinct, and each says what to do */
	bool distinct = true, advice = true;
	for (int a = PD_ADMIT_FULL; a < PD_ADMIT_COUNT; a++) {
		for (int b = a + 1; b < PD_ADMIT_COUNT; b++)
			distinct &= strcmp(pd_admit_text((pd_admit)a), pd_admit_text((pd_admit)b)) != 0;
		advice &= strlen(pd_admit_text((pd_admit)a)) > 8;
	}
	ok(distinct, "each admission refusal has a text of its own");
	ok(advice && strstr(pd_admit_text(PD_ADMIT_DEADLINE), "deadline") && strstr(pd_admit_text(PD_ADMIT_FULL), "queue full"),
	   "and each says why (deadline: \"%s\")", pd_admit_text(PD_ADMIT_DEADLINE));
	return done();
}
