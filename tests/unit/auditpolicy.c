/* auditpolicy.c and auditverdict.c without a sandbox: the policy's parse (errors naming the
 * field), its defaults, the merge (a request only tightens), the compiled options, the path
 * classification under them (resolution against a directory tree standing in for a sandbox's
 * root), and the process verdict over synthetic evidence. */
#define _GNU_SOURCE
#include "audit.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static pd_audit_policy *parse(const char *json, pd_err *e)
{
	memset(e, 0, sizeof *e);
	return pd_audit_policy_parse(json, strlen(json), "audit", "/work", e);
}

/* the policy is refused, with a message naming field */
static void refused(const char *json, const char *field)
{
	pd_err e;
	pd_audit_policy *p = parse(json, &e);
	if (!ok(!p && strstr(e.msg, field), "%s: refused, naming %s", json, field))
		printf("#   message: %s\n", e.msg);
	pd_audit_policy_free(p);
}

static int classify(const pd_audit_opts *o, const char *path, pd_audit_mode m)
{
	bool deny;
	return pd_audit_classify(o, path, m, "7", &deny);
}

static void test_parse(void)
{
	pd_err e;
	pd_audit_policy *p = parse("true", &e);
	ok(p != NULL, "\"audit\": true is the default policy");
	const pd_audit_opts *o = p ? pd_audit_policy_opts(p) : NULL;
	if (o) {
		is_int(classify(o, "/usr/bin/python3", PD_AM_WRITE), PD_AK_TAMPER, "default: the image is protected");
		is_int(classify(o, "/root/.cache/x", PD_AM_CREATE), PD_AK_TAMPER, "default: so is the home directory");
		is_int(classify(o, "/work/out.txt", PD_AM_WRITE), -1, "default: the work directory is not");
		is_int(classify(o, "/tmp/a/b", PD_AM_DELETE), -1, "default: nor /tmp");
		is_int(classify(o, "/dev/shm/x", PD_AM_CREATE), -1, "default: nor /dev/shm");
		is_int(classify(o, "/usr/lib/python3/os.py", PD_AM_READ), -1, "default: reading the image is no event");
		is_int(classify(o, "/opt/data", PD_AM_READ), PD_AK_READ_OUTSIDE, "default: reading elsewhere is read_outside");
		is_int(classify(o, "/proc/9/environ", PD_AM_READ), PD_AK_ENV_PROBE, "another's environ is env_probe");
		is_int(classify(o, "/proc/7/environ", PD_AM_READ), PD_AK_ENV_PROBE, "so is its own, read back");
		is_int(classify(o, "/proc/9/maps", PD_AM_READ), PD_AK_ENV_PROBE, "another's maps is env_probe");
		is_int(classify(o, "/proc/9/task/10/mem", PD_AM_READ), PD_AK_ENV_PROBE, "another thread's mem too");
		is_int(classify(o, "/proc/7/maps", PD_AM_READ), -1, "its own maps are no event");
		is_int(classify(o, "/proc/9/status", PD_AM_READ), -1, "another's status is no event");
		is_int(o->egress, PD_EGRESS_DENY, "default egress: deny");
	}
	pd_audit_policy_free(p);

	p = parse("{\"protect\": [\"/work/tests\"], \"judge\": [\"/judge\"], \"traps\": [\"/work/.git\", "
		  "{\"path\": \"/work/expected_output.txt\", \"content\": \"42\\n\", \"answer\": \"42\"}], "
		  "\"env\": [\"AWS_SECRET_ACCESS_KEY\"], \"egress\": {\"allowlist\": [\"10.0.0.1:443\"]}, "
		  "\"fail\": [\"read_outside\"], \"max_events\": 50, \"mandatory\": true}",
		  &e);
	ok(p != NULL, "a full policy parses (%s)", e.msg);
	o = p ? pd_audit_policy_opts(p) : NULL;
	if (o) {
		is_int(classify(o, "/work/tests/test_a.py", PD_AM_WRITE), PD_AK_TAMPER,
		       "protect /work/tests wins over the work directory (longer prefix)");
		is_int(classify(o, "/work/sol.py", PD_AM_WRITE), -1, "the rest of /work stays writable");
		bool deny;
		is_int(pd_audit_classify(o, "/judge/answers/1.ans", PD_AM_READ, "7", &deny), PD_AK_JUDGE,
		       "judge material read is judge_material");
		ok(deny, "and refused");
		is_int(classify(o, "/work/.git/HEAD", PD_AM_READ), PD_AK_TRAP, "a decoy directory read is a trap_read");
		is_int(classify(o, "/work/expected_output.txt", PD_AM_READ), PD_AK_TRAP, "a decoy file read too");
		is_int(o->egress, PD_EGRESS_ALLOWLIST, "egress allowlist");
		is_int(o->max_events, 50, "max_events");
		const char *const *env = pd_audit_policy_env(p);
		ok(env[0] && !strncmp(env[0], "AWS_SECRET_ACCESS_KEY=pdk-honey-", 32) && strlen(env[0]) == 22 + 10 + 32 && !env[1],
		   "a named honey variable gets a random token (%s)", env[0] ? env[0] : "none");
		ok(pd_audit_policy_mandatory(p), "mandatory");
		char *j = pd_audit_policy_json(p);
		pd_audit_policy *q = j ? parse(j, &e) : NULL;
		char *j2 = q ? pd_audit_policy_json(q) : NULL;
		ok(j && j2 && !strcmp(j, j2), "the policy's JSON reads back the same");
		free(j);
		free(j2);
		pd_audit_policy_free(q);
	}
	pd_audit_policy_free(p);

	refused("[1]", "audit: not true");
	refused("{\"protect\": \"/usr\"}", "audit.protect");
	refused("{\"protect\": [\"usr\"]}", "audit.protect[0]");
	refused("{\"allow\": [\"/a\", 3]}", "audit.allow[1]");
	refused("{\"judge\": [\"/a\\u0000b\"]}", "audit.judge[0]");
	refused("{\"traps\": [{\"content\": \"x\"}]}", "audit.traps[0].path");
	refused("{\"traps\": [{\"path\": \"/w\", \"size\": 1}]}", "audit.traps[0].size");
	refused("{\"env\": [\"1X\"]}", "audit.env[0]");
	refused("{\"env\": {\"K\": \"short\"}}", "audit.env.K");
	refused("{\"egress\": \"open\"}", "audit.egress");
	refused("{\"egress\": \"allowlist\"}", "audit.egress");
	refused("{\"egress\": {\"allowlist\": [\"evil.com:80\"]}}", "audit.egress.allowlist[0]");
	refused("{\"fail\": [\"cheating\"]}", "audit.fail[0]");
	refused("{\"max_events\": 0}", "audit.max_events");
	refused("{\"mandatory\": 1}", "audit.mandatory");
	refused("{\"protectt\": []}", "audit.protectt");
	refused("{\"protect\": [], \"protect\": []}", "audit: not JSON");
	refused("{", "audit: not JSON");
}

static void test_merge(void)
{
	pd_err e;
	pd_audit_policy *tmpl = parse("{\"egress\": {\"allowlist\": [\"10.0.0.1:443\", \"10.0.0.2:80\"]}, "
				      "\"allow\": [\"/data\"], \"judge\": [\"/judge\"]}",
				      &e);
	pd_audit_policy *req = parse("{\"protect\": [\"/work/tests\"], \"egress\": {\"allowlist\": [\"10.0.0.1:443\"]}, "
				     "\"allow\": [\"/data/small\"]}",
				     &e);
	ok(tmpl && req && pd_audit_policy_merge(tmpl, req, true, &e) == 0, "a request that tightens merges (%s)", e.msg);
	if (tmpl) {
		const pd_audit_opts *o = pd_audit_policy_opts(tmpl);
		is_int(classify(o, "/work/tests/t.py", PD_AM_WRITE), PD_AK_TAMPER, "merged: the request's protect");
		bool d;
		is_int(pd_audit_classify(o, "/judge/x", PD_AM_READ, "7", &d), PD_AK_JUDGE, "merged: the template's judge");
		ok(o->egress_allow[0] && !strcmp(o->egress_allow[0], "10.0.0.1:443") && !o->egress_allow[1],
		   "merged: the narrower allowlist");
		is_int(classify(o, "/data/big", PD_AM_READ), PD_AK_READ_OUTSIDE, "merged: the narrower allow");
	}
	pd_audit_policy_free(req);

	static const struct {
		const char *req, *field;
	} widen[] = {
		{"{\"egress\": \"log\"}", "audit.egress"},
		{"{\"egress\": {\"allowlist\": [\"10.9.9.9:22\"]}}", "audit.egress.allowlist[0]"},
		{"{\"allow\": [\"/etc/shadow\"]}", "audit.allow[0]"},
		{"{\"writable\": [\"/usr\"]}", "audit.writable[0]"},
	};
	for (size_t i = 0; i < sizeof widen / sizeof widen[0]; i++) {
		pd_audit_policy *base = tmpl ? pd_audit_policy_copy(tmpl) : NULL;
		req = parse(widen[i].req, &e);
		memset(&e, 0, sizeof e);
		int rc = base && req ? pd_audit_policy_merge(base, req, true, &e) : 0;
		if (!ok(rc < 0 && strstr(e.msg, widen[i].field), "a request may not widen: %s refused naming %s",
			widen[i].req, widen[i].field))
			printf("#   rc %d: %s\n", rc, e.msg);
		pd_audit_policy_free(req);
		pd_audit_policy_free(base);
	}
	/* a problem over a template may replace */
	req = parse("{\"egress\": \"log\"}", &e);
	ok(tmpl && req && pd_audit_policy_merge(tmpl, req, false, &e) == 0 &&
		   pd_audit_policy_opts(tmpl)->egress == PD_EGRESS_LOG,
	   "a problem over its template may set egress: log");
	pd_audit_policy_free(req);
	pd_audit_policy_free(tmpl);

	/* the policy a request runs under (pd_audit_policy_effective, every surface's one rule) */
	pd_audit_policy *opt = parse("{\"judge\": [\"/judge\"]}", &e);
	pd_audit_policy *must = parse("{\"mandatory\": true, \"judge\": [\"/judge\"]}", &e);
	req = NULL;
	ok(pd_audit_policy_effective(opt, &req, &e) == 0 && !req, "effective: an optional policy, no audit asked: none");
	ok(pd_audit_policy_effective(NULL, &req, &e) == 0 && !req, "effective: no template policy: none");
	ok(pd_audit_policy_effective(must, &req, &e) == 1 && req && pd_audit_policy_mandatory(req),
	   "effective: a mandatory policy applies unasked");
	pd_audit_policy_free(req);
	req = parse("{\"egress\": \"log\"}", &e);
	pd_audit_policy *asked = req;
	memset(&e, 0, sizeof e);
	ok(pd_audit_policy_effective(opt, &req, &e) == -1 && req == asked && strstr(e.msg, "audit.egress"),
	   "effective: a widening request is refused, its policy left as it was (%s)", e.msg);
	pd_audit_policy_free(req);
	req = parse("{\"protect\": [\"/work/tests\"]}", &e);
	ok(pd_audit_policy_effective(opt, &req, &e) == 1 && req &&
		   classify(pd_audit_policy_opts(req), "/judge/x", PD_AM_READ) == PD_AK_JUDGE &&
		   classify(pd_audit_policy_opts(req), "/work/tests/t", PD_AM_WRITE) == PD_AK_TAMPER,
	   "effective: an asked audit is the template's tightened by the request's");
	pd_audit_policy_free(req);
	pd_audit_policy_free(opt);
	pd_audit_policy_free(must);
}

/* a tree standing for a sandbox's root: symlinks the resolver must follow */
static void test_resolve(void)
{
	char root[] = "/tmp/pdk-auditpolicy-XXXXXX";
	if (!mkdtemp(root)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	char p[512];
#define AT(rel) (snprintf(p, sizeof p, "%s/%s", root, rel), p)
	mkdir(AT("secret"), 0755);
	mkdir(AT("usr"), 0755);
	mkdir(AT("usr/bin"), 0755);
	mkdir(AT("tmp"), 0755);
	int rc = symlink("usr/bin", AT("bin")) | symlink("/secret", AT("tmp/abs")) | symlink("../secret", AT("tmp/rel")) |
		 symlink("loop2", AT("tmp/loop1")) | symlink("loop1", AT("tmp/loop2")) |
		 symlink("python3.11", AT("usr/bin/python3"));
	ok(rc == 0, "the tree is made");
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	pd_audit_view v = {.rootfd = fd};
	char out[PD_AUDIT_MAX];
	static const struct {
		const char *base, *path;
		bool follow;
		const char *want;
	} cases[] = {
		{"/", "/bin/bash", true, "/usr/bin/bash"},
		{"/", "/bin/python3", true, "/usr/bin/python3.11"},
		{"/", "/bin/python3", false, "/usr/bin/python3"},
		{"/", "/tmp/abs/flag", true, "/secret/flag"},
		{"/", "/tmp/rel/flag", true, "/secret/flag"},
		{"/tmp", "abs/../usr", true, "/usr"},
		{"/tmp", "./rel/./flag", true, "/secret/flag"},
		{"/usr/bin", "../../../secret/x", true, "/secret/x"},
		{"/", "/nonexistent/../secret/f", true, "/secret/f"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int got = pd_audit_resolve(&v, cases[i].base, cases[i].path, cases[i].follow, out, sizeof out);
		if (!ok(got == 1 && !strcmp(out, cases[i].want), "resolve %s from %s%s: %s", cases[i].path,
			cases[i].base, cases[i].follow ? "" : " (last not followed)", cases[i].want))
			printf("#   got %d '%s'\n", got, out);
	}
	is_int(pd_audit_resolve(&v, "/", "/tmp/loop1/x", true, out, sizeof out), -1, "a link loop cannot be told");
	is_int(pd_audit_resolve(&v, NULL, "rel", true, out, sizeof out), -1, "nor a relative path with no base");
	close(fd);
	const char *rm[] = {"tmp/abs", "tmp/rel", "tmp/loop1", "tmp/loop2", "usr/bin/python3", "bin", NULL};
	for (int i = 0; rm[i]; i++)
		unlink(AT(rm[i]));
	const char *dirs[] = {"tmp", "usr/bin", "usr", "secret", "", NULL};
	for (int i = 0; dirs[i]; i++)
		rmdir(AT(dirs[i]));
#undef AT
}

static pd_result evidence(void)
{
	pd_result r;
	memset(&r, 0, sizeof r);
	r.audited = true;
	return r;
}

static void test_verdict(void)
{
	pd_err e;
	pd_audit_policy *p = parse("{\"env\": {\"API_KEY\": \"tok-9f8e7d6c5b\"}, \"traps\": [{\"path\": "
				   "\"/work/expected.txt\", \"content\": \"41\\n\"}], \"egress\": {\"allowlist\": "
				   "[\"10.0.0.1:443\"]}}",
				   &e);
	if (!ok(p != NULL, "the verdict's policy parses (%s)", e.msg))
		return;
	const pd_audit_opts *o = pd_audit_policy_opts(p);
	pd_audit_verdict v;

	pd_result r = evidence();
	r.audited = false;
	pd_audit_evaluate(p, &r, NULL, &v);
	is_str(pd_process_status_name(v.status), "not_audited", "no audit: not_audited, never pass");
	pd_result_free(&r);

	r = evidence();
	pd_audit_record(&r, o, PD_AK_READ_OUTSIDE, "open", "r", "/opt/x", false, 3, 10);
	pd_audit_evaluate(p, &r, NULL, &v);
	is_str(pd_process_status_name(v.status), "pass", "read_outside alone passes");
	pd_result_free(&r);

	r = evidence();
	pd_audit_record(&r, o, PD_AK_EGRESS, "connect", "allowed", "10.0.0.1:443", false, 3, 10);
	r.audit_egress_allowed = 1;
	pd_audit_evaluate(p, &r, NULL, &v);
	is_str(pd_process_status_name(v.status), "pass", "egress the allowlist allows passes");
	pd_audit_record(&r, o, PD_AK_EGRESS, "connect", "out", "10.0.0.9:80", true, 3, 11);
	pd_audit_evaluate(p, &r, NULL, &v);
	ok(v.status == PD_PROCESS_FAIL && v.nreasons == 1 && strstr(v.reasons[0], "egress: connect out 10.0.0.9:80"),
	   "egress outside it fails, the event as the reason (%s)", v.reasons[0]);
	pd_result_free(&r);

	r = evidence();
	pd_audit_record(&r, o, PD_AK_TAMPER, "upper", "w", "/usr/bin/bash", false, 0, 10);
	pd_audit_record(&r, o, PD_AK_HARNESS_PROBE, "connect", "out", "127.0.0.1:8080", false, 3, 11);
	pd_audit_evaluate(p, &r, NULL, &v);
	ok(v.status == PD_PROCESS_FAIL && v.failed_kinds == ((1u << PD_AK_TAMPER) | (1u << PD_AK_HARNESS_PROBE)) &&
		   v.nreasons == 2,
	   "each failing kind is a reason");
	json_t *jv = pd_audit_verdict_json(&v);
	char *j = jv ? json_dumps(jv, JSON_COMPACT) : NULL;
	json_decref(jv);
	ok(j && strstr(j, "\"status\":\"fail\"") && strstr(j, "\"failed\":[\"tamper\",\"harness_probe\"]"),
	   "the verdict's JSON (%s)", j ? j : "null");
	free(j);
	pd_result_free(&r);

	/* the output as evidence */
	r = evidence();
	r.out.head = strdup("the key is tok-9f8e7d6c5b\n");
	r.out.head_len = strlen(r.out.head);
	pd_audit_evaluate(p, &r, NULL, &v);
	ok(v.status == PD_PROCESS_FAIL && (v.failed_kinds & (1u << PD_AK_ENV_PROBE)) && r.audit_len == 1 &&
		   !strcmp(r.audit[0].op, "output") && !strcmp(r.audit[0].target, "API_KEY"),
	   "a honey token in stdout is an env_probe");
	pd_result_free(&r);
	r = evidence();
	r.out.head = strdup("41\n\n");
	r.out.head_len = strlen(r.out.head);
	pd_audit_evaluate(p, &r, NULL, &v);
	ok(v.status == PD_PROCESS_FAIL && (v.failed_kinds & (1u << PD_AK_TRAP)),
	   "an output that is the decoy's wrong answer is a trap_read");
	pd_result_free(&r);
	r = evidence();
	r.out.head = strdup("42\n");
	r.out.head_len = strlen(r.out.head);
	pd_audit_evaluate(p, &r, NULL, &v);
	is_str(pd_process_status_name(v.status), "pass", "another answer is not");
	pd_result_free(&r);

	/* the cap */
	pd_audit_policy *capped = parse("{\"max_events\": 2}", &e);
	r = evidence();
	for (int i = 0; i < 5; i++)
		pd_audit_record(&r, pd_audit_policy_opts(capped), PD_AK_TAMPER, "open", "w", "/etc/x", false, 1, 1);
	pd_audit_evaluate(capped, &r, NULL, &v);
	ok(r.audit_len == 2 && r.audit_dropped == 3 && r.audit_kinds[PD_AK_TAMPER] == 5 && v.status == PD_PROCESS_FAIL &&
		   strstr(v.reasons[0], "(5 events)"),
	   "events past the cap are counted as dropped, and still fail");
	pd_result_free(&r);
	pd_audit_policy_free(capped);
	pd_audit_policy_free(p);
}

static bool lists_whole(const pd_audit_opts *o)
{
	return o && o->allow && o->protect && o->writable && o->judge && o->traps && o->egress_allow;
}

/* The fuzz find ` true` (fuzz_audit_policy: mode byte ' ', then JSON `true`): reported as a
 * policy with a NULL list ("allow: a NULL list"). `true` in any spacing is the default policy with
 * every list present, alone and merged as a request over a template; a JSON value that is neither
 * true nor an object is refused with an error naming the field. */
static void test_true_spellings(void)
{
	static const char *const spellings[] = {"true", " true", "true ", "\t true \r\n", "\ntrue"};
	pd_err e;
	pd_audit_policy *d = parse("true", &e);
	char *dj = d ? pd_audit_policy_json(d) : NULL;
	for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
		pd_audit_policy *p = parse(spellings[i], &e);
		const pd_audit_opts *o = p ? pd_audit_policy_opts(p) : NULL;
		char *j = p ? pd_audit_policy_json(p) : NULL;
		ok(lists_whole(o) && j && dj && !strcmp(j, dj), "spelling %zu of true: the default policy, every list there", i);
		pd_audit_policy *t = parse("{\"protect\": [\"/work/tests\"], \"judge\": [\"/judge\"]}", &e);
		int rc = t && p ? pd_audit_policy_merge(t, p, true, &e) : -1;
		ok(rc == 0 && lists_whole(pd_audit_policy_opts(t)), "spelling %zu of true merged over a template: every list there", i);
		free(j);
		pd_audit_policy_free(t);
		pd_audit_policy_free(p);
	}
	free(dj);
	pd_audit_policy_free(d);
	refused(" false", "audit: not true nor a policy object");
	refused(" null", "audit: not true nor a policy object");
	refused(" [true]", "audit: not true nor a policy object");
	refused(" tru", "audit: not JSON");
}

int main(void)
{
	plan(97);
	test_parse();
	test_true_spellings();
	test_merge();
	test_resolve();
	test_verdict();
	return done();
}
