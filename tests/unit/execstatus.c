/* execstatus.c: an exec's verdict from how it ended (pd_exec_classify), for every order of
 * evidence exec.c can gather, without a sandbox: which kill wins, when memory is the reason, the
 * fast path's stderr evidence, a cut output, init's death. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define EXITED(code) ((code) << 8)
#define SIGNALED(sig) (sig)

static pd_result classify(pd_exec_end x, bool oom, bool cut, const char *err, bool *ours)
{
	pd_result r;
	memset(&r, 0, sizeof r);
	r.oom_killed = oom;
	r.out.truncated = cut;
	if (err) {
		r.err.head = strdup(err);
		r.err.head_len = strlen(err);
		r.err.total = r.err.head_len;
	}
	bool k = pd_exec_classify(&x, &r);
	if (ours)
		*ours = k;
	free(r.err.head);
	r.err.head = NULL;
	return r;
}

int main(void)
{
	plan(27);
	bool ours;
	pd_result r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(0)}, false, false, NULL, &ours);
	ok(r.status == PD_OK && r.exit_code == 0 && r.signal == 0 && !ours, "exit 0: OK, not our kill");
	r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(3)}, false, false, NULL, NULL);
	ok(r.status == PD_RE && r.exit_code == 3, "exit 3: RE with its code");
	r = classify((pd_exec_end){.exited = true, .wstatus = SIGNALED(SIGSEGV)}, false, false, NULL, NULL);
	ok(r.status == PD_SG && r.signal == SIGSEGV, "SIGSEGV: SG with its signal");
	r = classify((pd_exec_end){.exited = true, .wstatus = SIGNALED(SIGXCPU)}, false, false, NULL, NULL);
	is_int(r.status, PD_TO, "SIGXCPU (the CPU rlimit's backstop): TO");

	/* the wall limit's kill */
	r = classify((pd_exec_end){.killed_to = true}, false, false, NULL, &ours);
	ok(r.status == PD_TO && r.signal == SIGKILL && ours && !r.idle_timeout, "wall limit: TO, SIGKILL, ours");
	r = classify((pd_exec_end){.killed_to = true, .killed_idle = true}, false, false, NULL, NULL);
	ok(r.status == PD_TO && r.idle_timeout, "no-output limit: TO, idle_timeout");
	r = classify((pd_exec_end){.exited = true, .wstatus = SIGNALED(SIGKILL), .killed_to = true}, false, false, NULL,
		     NULL);
	ok(r.status == PD_TO && r.signal == SIGKILL, "wall limit, the end reported by init: still TO");

	/* memory before time */
	r = classify((pd_exec_end){.killed_to = true, .mem_limited = true}, true, false, NULL, NULL);
	is_int(r.status, PD_ML, "an OOM kill in a run that then timed out: ML, not TO");
	r = classify((pd_exec_end){.killed_to = true, .mem_limited = true, .mem_pressed = true}, false, false, NULL,
		     NULL);
	is_int(r.status, PD_ML, "usage pressed against the limit, then a timeout: ML");
	r = classify((pd_exec_end){.exited = true, .wstatus = SIGNALED(SIGKILL), .mem_limited = true}, true, false, NULL,
		     NULL);
	is_int(r.status, PD_ML, "killed by the OOM killer: ML");
	r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(0), .mem_limited = true}, true, false, NULL, NULL);
	is_int(r.status, PD_OK, "an OOM kill of a child, the program exits 0: OK (nothing failed)");
	r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(1), .mem_pressed = true}, false, false, NULL, NULL);
	is_int(r.status, PD_RE, "pressure without a memory limit is no evidence: RE");
	r = classify((pd_exec_end){.init_died = true, .mem_limited = true}, true, false, NULL, NULL);
	is_int(r.status, PD_XX, "init died with an OOM kill, the program's end unknown: XX");

	/* the fast path: the runtime's words are the evidence */
	const char *memerr = "Traceback (most recent call last):\nMemoryError\n";
	r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(1), .mem_limited = true, .fast_path = true}, false,
		     false, memerr, NULL);
	is_int(r.status, PD_ML, "fast path, MemoryError on stderr, exit 1: ML");
	r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(1), .mem_limited = true}, false, false, memerr,
		     NULL);
	is_int(r.status, PD_RE, "the same words without the fast path: RE");
	r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(0), .mem_limited = true, .fast_path = true}, false,
		     false, memerr, NULL);
	is_int(r.status, PD_OK, "fast path, the words but exit 0: OK");
	r = classify((pd_exec_end){.killed_to = true, .mem_limited = true, .fast_path = true}, false, false, memerr,
		     NULL);
	is_int(r.status, PD_TO, "fast path, the words, then a timeout: TO (the words alone do not outrank it)");

	/* output */
	r = classify((pd_exec_end){.killed_ol = true, .killed_to = true, .mem_limited = true}, true, false, NULL, &ours);
	ok(r.status == PD_OL && ours && !r.idle_timeout, "the output kill outranks memory and time: OL");
	r = classify((pd_exec_end){.killed_ol = true, .killed_to = true, .killed_idle = true}, false, false, NULL, NULL);
	ok(!r.idle_timeout, "an output kill is no idle timeout");
	r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(0)}, false, true, NULL, NULL);
	is_int(r.status, PD_OL, "exit 0 with the output cut: OL");
	r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(2)}, false, true, NULL, NULL);
	is_int(r.status, PD_RE, "exit 2 with the output cut: RE (the failure first)");

	/* init's death and the cancel */
	r = classify((pd_exec_end){.init_died = true}, false, false, NULL, &ours);
	ok(r.status == PD_XX && r.signal == SIGKILL && !ours, "init died first: XX, SIGKILL, not our kill");
	is_str(r.error, "sandbox init ended before the program did", "and the error says so");
	pd_result pre;
	memset(&pre, 0, sizeof pre);
	snprintf(pre.error, sizeof pre.error, "could not take the audit listener");
	pd_exec_end dead = {.init_died = true};
	pd_exec_classify(&dead, &pre);
	is_str(pre.error, "could not take the audit listener", "an error already there is kept");
	r = classify((pd_exec_end){.exited = true, .wstatus = SIGNALED(SIGKILL), .killed_cancel = true}, false, false,
		     NULL, &ours);
	ok(r.cancelled && ours && r.signal == SIGKILL, "the caller's cancel: cancelled, ours");
	r = classify((pd_exec_end){.killed_cancel = true}, false, false, NULL, NULL);
	ok(r.cancelled && r.signal == SIGKILL && r.status == PD_XX, "a cancel before init's report: SIGKILL, XX");
	r = classify((pd_exec_end){.exited = true, .wstatus = EXITED(0), .init_died = true}, false, false, NULL, &ours);
	ok(r.status == PD_OK && r.signal == 0 && !ours, "the end reported, then init gone: the report stands");
	return done();
}
