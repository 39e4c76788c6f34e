/* Several agents in one session (issue 40): which agents' execs run now, and the rule that lets
 * an exec in beside them (session.c's exec path calls these; the lock is the pools'). An agent's
 * steps run one at a time; different agents' at once, up to SESSION_AGENTS; a request that
 * needs the session alone (session_enter) waits for none of them: it is refused while any runs. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

bool session_sandbox_alive(const pd_session *s)
{
	pd_state st = pd_sandbox_state(s->sb);
	return st == PD_READY || st == PD_RUNNING;
}

int pd_session_agent_check(const char *agent, pd_err *e)
{
	size_t n = agent ? strlen(agent) : 0;
	if (!n || n > PD_AGENT_MAX)
		return pd_fail(e, EINVAL, "agent: must be a string of 1 to %d characters",
			       PD_AGENT_MAX);
	for (size_t i = 0; i < n; i++)
		if (!((agent[i] >= 'a' && agent[i] <= 'z') ||
		      (agent[i] >= 'A' && agent[i] <= 'Z') ||
		      (agent[i] >= '0' && agent[i] <= '9') || strchr("-_.:@/", agent[i])))
			return pd_fail(e, EINVAL, "agent: letters, digits and \"-_.:@/\" only");
	return 0;
}

int session_not_held(const pd_session *s, pd_err *e)
{
	if (s->dead)
		return pd_fail(e, ESRCH, "session %s has ended: %s", s->id, s->dead_reason);
	if (s->busy)
		return pd_fail(e, EBUSY, "session %s is busy with another request", s->id);
	return 0;
}

/* Marks an exec of agent running (the session not ended, not busy with a request that needs it
 * alone, the agent not running another, rid not running); its slot, or -1 (EBUSY, ESRCH). */
int session_exec_enter(pd_session *s, const char *agent, const char *rid, bool audited, pd_err *e)
{
	const char *who = agent[0] ? agent : "the default agent";
	int slot = -1;
	pthread_mutex_lock(&s->p->mu);
	if (session_not_held(s, e) < 0) {
		pthread_mutex_unlock(&s->p->mu);
		return -1;
	}
	for (int i = 0; i < SESSION_AGENTS; i++) {
		agent_run *a = &s->runs[i];
		if (!a->on) {
			slot = slot < 0 ? i : slot;
			continue;
		}
		const char *why = !strcmp(a->agent, agent)
				      ? "has an exec running: an agent's steps run one at a time"
				  : rid && !strcmp(a->request_id, rid) ? "runs this request id now"
				  : a->audited || audited
				      ? "runs an exec, and an audited exec runs alone"
				      : NULL;
		if (why) {
			pd_fail(e, EBUSY, "session %s: %s%s%s %s (request %s)", s->id,
				a->agent[0] ? "agent '" : "",
				a->agent[0] ? a->agent : "the default agent",
				a->agent[0] ? "'" : "", why,
				a->request_id[0] ? a->request_id : "without an id");
			pthread_mutex_unlock(&s->p->mu);
			return -1;
		}
	}
	if (slot < 0) {
		pthread_mutex_unlock(&s->p->mu);
		return pd_fail(
		    e, EBUSY, "session %s runs %d agents' execs at once, the most it may: %s waits",
		    s->id, SESSION_AGENTS, who);
	}
	agent_run *a = &s->runs[slot];
	a->on = true;
	a->audited = audited;
	snprintf(a->agent, sizeof a->agent, "%s", agent);
	snprintf(a->request_id, sizeof a->request_id, "%s", rid ? rid : "");
	s->running++;
	pthread_mutex_unlock(&s->p->mu);
	return slot;
}

void session_exec_leave(pd_session *s, int slot)
{
	pthread_mutex_lock(&s->p->mu);
	s->runs[slot].on = false;
	s->running--;
	s->last_used_us = pd_now_us();
	if (!s->dead && !session_sandbox_alive(s)) {
		s->dead = true;
		snprintf(s->dead_reason, sizeof s->dead_reason, "its sandbox is %s%s%s",
			 pd_state_name(pd_sandbox_state(s->sb)), s->damage[0] ? ": " : "",
			 s->damage);
	}
	pthread_mutex_unlock(&s->p->mu);
}
