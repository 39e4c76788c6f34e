/* An exec's verdict from how it ended: the exit code or signal, OK / RE / SG / TO / ML / OL / XX,
 * and whether paddock's own kill ended it. A pure function of what the exec saw (exec.c gathers
 * it), so that every order of evidence can be tested without a sandbox (tests/unit/execstatus.c). */
#define _GNU_SOURCE
#include "internal.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

bool pd_exec_classify(const pd_exec_end *x, pd_result *r)
{
	bool killed_by_us = x->killed_to || x->killed_ol || x->killed_cancel;
	r->idle_timeout = x->killed_to && x->killed_idle && !x->killed_ol;
	r->cancelled = x->killed_cancel;
	if (x->exited) {
		if (WIFEXITED(x->wstatus))
			r->exit_code = WEXITSTATUS(x->wstatus);
		else if (WIFSIGNALED(x->wstatus))
			r->signal = WTERMSIG(x->wstatus);
	}
	if (killed_by_us || (x->init_died && !x->exited))
		r->signal = r->signal ? r->signal : SIGKILL;
	/* The memory verdict comes before the time verdict, from the cgroup's own evidence: an OOM
	 * kill, or usage that pressed against the limit (v2 memory.events max, v1 failcnt) in a run
	 * that then failed or ran out of time. A program faulting in its way to the limit on a
	 * loaded machine can reach the time limit before the OOM killer reaches it: it used too
	 * much memory, and the verdict must say so, not "too slow". */
	bool failed = x->killed_to || (x->exited && (r->signal || r->exit_code));
	bool mem_evidence = (r->oom_killed || x->mem_pressed) && failed && x->mem_limited;
	/* under the fast path's data-segment limit the cgroup saw nothing: the runtime's own words
	 * (allocfail.c) are the evidence */
	if (x->fast_path && x->mem_limited && failed && !x->killed_to && pd_alloc_failure_seen(&r->err))
		mem_evidence = true;
	if (x->killed_ol)
		r->status = PD_OL;
	else if (mem_evidence && (x->exited || x->killed_to))
		r->status = PD_ML;
	else if (x->killed_to)
		r->status = PD_TO;
	else if (!x->exited) {
		r->status = PD_XX;
		if (!r->error[0])
			snprintf(r->error, sizeof r->error, "sandbox init ended before the program did");
	} else if (WIFSIGNALED(x->wstatus))
		r->status = WTERMSIG(x->wstatus) == SIGXCPU ? PD_TO : PD_SG;
	else if (r->exit_code)
		r->status = PD_RE;
	else
		r->status = PD_OK;
	if (r->status == PD_OK && (r->out.truncated || r->err.truncated))
		r->status = PD_OL;
	return killed_by_us;
}
