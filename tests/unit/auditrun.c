/* auditrun.c: the one audited exec (pd_sandbox_exec_audited) on the real runtime (root), as the
 * judge, a run's job and a session step use it: the policy's decoys planted when asked, its honey
 * variables in the program's environment, the verdict judged into the struct with the sandbox
 * there (a token in the output, a token in a file written), only this exec's files with
 * PD_AUDITED_SINCE, a caller's own audit options kept, and a plain exec without a policy. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ARGV(...) ((char *const *)(const char *const[]){__VA_ARGS__, NULL})

static const char policy_json[] = "{\"env\": {\"API_KEY\": \"tok-5a4b3c2d1e\"}, \"traps\": [{\"path\": "
				  "\"/work/expected_output.txt\", \"content\": \"WRONG-17\\n\"}]}";

static bool failed_with(const pd_audit_verdict *v, pd_audit_kind k)
{
	return v->status == PD_PROCESS_FAIL && (v->failed_kinds & (1u << k));
}

static char *out_of(const pd_result *r)
{
	return strndup(r->out.head ? r->out.head : "", r->out.head_len);
}

/* until the coarse clock (the one file times and PD_AUDITED_SINCE read) has moved past now: a
 * file written before is then strictly older than the next exec's start */
static void past_this_tick(void)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_REALTIME_COARSE, &t0);
	do {
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		clock_gettime(CLOCK_REALTIME_COARSE, &t);
	} while (t.tv_sec == t0.tv_sec && t.tv_nsec == t0.tv_nsec);
}

int main(void)
{
	plan(16);
	pd_err e = {0};
	pd_ctx *ctx = pd_ctx_new(NULL, &e);
	pd_audit_policy *p = pd_audit_policy_parse(policy_json, strlen(policy_json), "audit", "/work", &e);
	pd_sandbox *s = ctx && p ? pd_sandbox_create(ctx, NULL, &e) : NULL;
	if (!ok(s != NULL, "context, policy and sandbox (%s)", e.msg))
		return done();
	pd_result r;
	pd_audit_verdict v;

	/* planted, honest: pass */
	pd_exec_opts x = {.argv = ARGV("sh", "-c", "echo hello"), .stdin_fd = -1};
	int rc = pd_sandbox_exec_audited(s, &x, p, PD_AUDITED_PLANT, &r, &v, &e);
	ok(rc == 0 && r.status == PD_OK && r.audited, "an honest program under the policy runs audited (%s)", e.msg);
	is_str(pd_process_status_name(v.status), "pass", "and passes");
	pd_result_free(&r);
	char *decoy = NULL;
	size_t len = 0;
	pd_sandbox_read_file(s, "/work/expected_output.txt", 4096, &decoy, &len, &e);
	ok(decoy && len == 9 && !memcmp(decoy, "WRONG-17\n", 9), "PD_AUDITED_PLANT planted the decoy");
	free(decoy);

	/* the honey variable is in the environment; printing it fails the process level */
	x.argv = ARGV("sh", "-c", "echo \"key=$API_KEY\"");
	rc = pd_sandbox_exec_audited(s, &x, p, 0, &r, &v, &e);
	char *out = out_of(&r);
	is_str(out, "key=tok-5a4b3c2d1e\n", "the program sees the honey variable");
	free(out);
	ok(rc == 0 && failed_with(&v, PD_AK_ENV_PROBE) && v.nreasons >= 1, "the token in its output fails it (%s)",
	   v.nreasons ? v.reasons[0] : "no reason");
	pd_result_free(&r);

	/* no policy: a plain exec, no variable, not audited */
	rc = pd_sandbox_exec_audited(s, &x, NULL, PD_AUDITED_PLANT, &r, &v, &e);
	out = out_of(&r);
	ok(rc == 0 && !strcmp(out, "key=\n") && !r.audited, "without a policy: a plain exec (%s)", out);
	is_str(pd_process_status_name(v.status), "not_audited", "whose verdict is not_audited");
	free(out);
	pd_result_free(&r);

	/* a token written to a file: this exec's doing; the next exec's only without SINCE */
	x.argv = ARGV("sh", "-c", "echo \"$API_KEY\" > /work/leak");
	rc = pd_sandbox_exec_audited(s, &x, p, PD_AUDITED_SINCE, &r, &v, &e);
	ok(rc == 0 && failed_with(&v, PD_AK_ENV_PROBE), "a token written to a file fails the exec that wrote it");
	pd_result_free(&r);
	past_this_tick();
	x.argv = ARGV("true");
	rc = pd_sandbox_exec_audited(s, &x, p, PD_AUDITED_SINCE, &r, &v, &e);
	ok(rc == 0 && v.status == PD_PROCESS_PASS, "with PD_AUDITED_SINCE a later honest exec passes (%s)",
	   pd_process_status_name(v.status));
	pd_result_free(&r);
	rc = pd_sandbox_exec_audited(s, &x, p, 0, &r, &v, &e);
	ok(rc == 0 && failed_with(&v, PD_AK_ENV_PROBE), "without it the file counts against it (%s)",
	   pd_process_status_name(v.status));
	pd_result_free(&r);

	/* the caller's own audit options are kept (a session's faults armed over the policy's) */
	pd_audit_opts mine = *pd_audit_policy_opts(p);
	static pd_fault fault[1];
	uint32_t hits = 0;
	fault[0] = (pd_fault){.op = "open", .path = "/etc/hostname", .err = 5, .hits = &hits};
	mine.faults = fault;
	mine.nfaults = 1;
	x.argv = ARGV("cat", "/etc/hostname");
	x.audit = &mine;
	rc = pd_sandbox_exec_audited(s, &x, p, 0, &r, &v, &e);
	ok(rc == 0 && r.status == PD_RE && hits >= 1, "the caller's audit options (an injected fault) are used (%s, %u hits)",
	   pd_status_name(r.status), hits);
	pd_result_free(&r);
	x.audit = NULL;

	/* a sandbox a limit's kill ended: the decoys cannot be planted, no verdict */
	x.argv = ARGV("sleep", "30");
	x.wall_ms = 200;
	rc = pd_sandbox_exec_audited(s, &x, p, 0, &r, &v, &e);
	ok(rc == 0 && r.status == PD_TO && pd_sandbox_state(s) == PD_TIMED_OUT, "a limit's kill ends the sandbox");
	pd_result_free(&r);
	memset(&e, 0, sizeof e);
	rc = pd_sandbox_exec_audited(s, &x, p, PD_AUDITED_PLANT, &r, &v, &e);
	ok(rc < 0 && r.status == PD_XX && strstr(r.error, "plant the audit's decoys"),
	   "then the plant fails: -1, XX, said in the record (%s)", r.error);
	is_str(pd_process_status_name(v.status), "not_audited", "with no verdict");
	pd_result_free(&r);
	char res[64];
	pd_sandbox_destroy(s, res, sizeof res);
	ok(1, "destroyed (%s)", res);
	pd_audit_policy_free(p);
	pd_ctx_free(ctx);
	return done();
}
