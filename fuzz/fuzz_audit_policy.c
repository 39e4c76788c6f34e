/* Fuzzes the audit policy parser and merge (lib/auditpolicy.c): a policy arrives in a request's
 * "audit" field, so its bytes are the caller's. Input: byte 0 chooses how the policy is used
 * (bit0: also merged as a request over a fixed template policy, which it may only tighten), the
 * rest is the policy's JSON.
 *
 * Properties beyond "no crash, no leak, no undefined behaviour":
 *  - an error names where it is: its message starts with "audit";
 *  - a parsed policy's JSON (pd_audit_policy_json) parses again into the same JSON;
 *  - the compiled options hold only absolute paths, the lists NULL-terminated;
 *  - a request never widens a template: after a merge that succeeds, every path the template
 *    protects stays protected, what it calls judge material or a decoy stays so, its egress does
 *    not get laxer, and the kinds that fail the process level are a superset of its. */
#include "fuzz_common.h"

#include "audit.h"

static const char template_json[] =
	"{\"protect\": [\"/work/tests\", \"/srv/grader\"], \"writable\": [\"/work\", \"/home/user\"],"
	" \"judge\": [\"/judge\"], \"traps\": [\"/work/.git\"], \"allow\": [\"/data\"],"
	" \"egress\": {\"allowlist\": [\"10.0.0.1:443\", \"10.0.0.2:80\"]}, \"env\": {\"HONEY\": \"tok-123456789\"}}";

/* paths the properties are checked at: fixed ones, and those the input names */
static const char *const probes[] = {
	"/", "/usr/bin/bash", "/work", "/work/a", "/work/tests", "/work/tests/t.py", "/tmp/x", "/judge",
	"/judge/a.ans", "/work/.git/HEAD", "/home/user/x", "/home", "/srv/grader/run", "/data/x",
	"/dev/shm/s", "/proc/1/environ", "/etc/passwd", NULL,
};

static void check_list(const char *const *l, const char *name)
{
	FUZZ_CHECK(l != NULL, "%s: a NULL list", name);
	for (size_t i = 0; l[i]; i++)
		FUZZ_CHECK(l[i][0] == '/', "%s[%zu] = '%s' is not absolute", name, i, l[i]);
}

static void check_opts(const pd_audit_opts *o)
{
	FUZZ_CHECK(o->enabled, "compiled options not enabled");
	check_list(o->allow, "allow");
	check_list(o->protect, "protect");
	check_list(o->writable, "writable");
	check_list(o->judge, "judge");
	check_list(o->traps, "traps");
	for (size_t i = 0; o->egress_allow && o->egress_allow[i]; i++)
		FUZZ_CHECK(o->egress_allow[i][0], "an empty egress entry");
	for (int i = 0; probes[i]; i++) {
		bool deny;
		for (int m = PD_AM_READ; m <= PD_AM_META; m++) {
			int k = pd_audit_classify(o, probes[i], (pd_audit_mode)m, "7", &deny);
			FUZZ_CHECK(k >= -1 && k < PD_AK_N, "kind %d", k);
		}
	}
}

static int rank(pd_egress g)
{
	return g == PD_EGRESS_DENY ? 2 : g == PD_EGRESS_ALLOWLIST ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	const char *json = (const char *)data + 1;
	size_t len = size - 1;
	pd_err e = {0};
	pd_audit_policy *p = pd_audit_policy_parse(json, len, "audit", "/work", &e);
	if (!p) {
		FUZZ_CHECK(!strncmp(e.msg, "audit", 5) && e.code, "error without its field: '%s'", e.msg);
		return 0;
	}
	check_opts(pd_audit_policy_opts(p));
	char *j1 = pd_audit_policy_json(p);
	FUZZ_CHECK(j1 != NULL, "no JSON for a parsed policy");
	pd_audit_policy *q = pd_audit_policy_parse(j1, strlen(j1), "audit", "/work", &e);
	FUZZ_CHECK(q != NULL, "the policy's own JSON is refused: %s\n%s", e.msg, j1);
	char *j2 = pd_audit_policy_json(q);
	FUZZ_CHECK(j2 && !strcmp(j1, j2), "the JSON does not read back the same:\n%s\n%s", j1, j2);
	free(j1);
	free(j2);
	pd_audit_policy_free(q);

	if (mode & 1) {
		pd_audit_policy *t = pd_audit_policy_parse(template_json, strlen(template_json), "template", "/work", &e);
		FUZZ_CHECK(t != NULL, "the template: %s", e.msg);
		pd_audit_policy *m = pd_audit_policy_copy(t);
		FUZZ_CHECK(m != NULL, "copy");
		memset(&e, 0, sizeof e);
		if (pd_audit_policy_merge(m, p, true, &e) == 0) {
			const pd_audit_opts *to = pd_audit_policy_opts(t), *mo = pd_audit_policy_opts(m);
			check_opts(mo);
			const pd_audit_opts *po = pd_audit_policy_opts(p);
			/* the probes, and every path the request names */
			const char *const *lists[] = {probes, po->allow, po->protect, po->writable, po->judge, po->traps};
			for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
				for (size_t i = 0; lists[l][i]; i++) {
					const char *x = lists[l][i];
					char sub[600];
					for (int twice = 0; twice < 2; twice++, x = sub) {
						if (twice)
							snprintf(sub, sizeof sub, "%s/x", lists[l][i]);
						FUZZ_CHECK(!pd_audit_protected(to, x) || pd_audit_protected(mo, x),
							   "the request unprotected %s", x);
						FUZZ_CHECK(!pd_path_under(x, to->judge) || pd_path_under(x, mo->judge),
							   "the request removed judge material %s", x);
						FUZZ_CHECK(!pd_path_under(x, to->traps) || pd_path_under(x, mo->traps),
							   "the request removed a decoy %s", x);
					}
				}
			FUZZ_CHECK(rank(mo->egress) >= rank(to->egress), "egress got laxer");
			if (mo->egress == PD_EGRESS_ALLOWLIST)
				for (size_t i = 0; mo->egress_allow[i]; i++) {
					bool had = false;
					for (size_t k = 0; to->egress_allow[k]; k++)
						had |= !strcmp(to->egress_allow[k], mo->egress_allow[i]);
					FUZZ_CHECK(had, "the request allowed egress to %s", mo->egress_allow[i]);
				}
			char *tj = pd_audit_policy_json(t), *mj = pd_audit_policy_json(m);
			/* the failing kinds: the template's are all still there */
			const char *tf = strstr(tj, "\"fail\":["), *mf = strstr(mj, "\"fail\":[");
			FUZZ_CHECK(tf && mf, "no fail list");
			for (int k = 0; k < PD_AK_N; k++) {
				char q2[40];
				snprintf(q2, sizeof q2, "\"%s\"", pd_audit_kind_name((pd_audit_kind)k));
				const char *te = strchr(tf, ']'), *me = strchr(mf, ']');
				const char *ti = strstr(tf, q2), *mi = strstr(mf, q2);
				FUZZ_CHECK(!(ti && ti < te) || (mi && mi < me), "the request stopped %s failing", q2);
			}
			free(tj);
			free(mj);
		} else {
			FUZZ_CHECK(!strncmp(e.msg, "audit", 5), "merge error without its field: '%s'", e.msg);
		}
		pd_audit_policy_free(m);
		pd_audit_policy_free(t);
	}
	pd_audit_policy_free(p);
	return 0;
}
