/* Injected faults for robust training (a session's "noise"): added latency, commands answered
 * with a realistic failure instead of running, output cut short. Every draw comes from the
 * session's seed and the exec's number alone (splitmix64), so the same seed gives the same faults
 * at the same steps whatever the timing; each fault is listed in the step's trajectory line and
 * in the exec's answer ("noise"), so a trainer knows which observations were noise. Only session
 * execs get any: runs and judging never pass through here. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* draw k (0, 1, 2, ...) of exec n: uniform in [0, 1) */
static double draw(const pd_noise *z, unsigned n, unsigned k)
{
	uint64_t v = mix(mix(z->seed) ^ mix(((uint64_t)n << 8) | k));
	return (double)(v >> 11) / 9007199254740992.0;
}

static const struct {
	int err;
	const char *name;
} faults[] = {{EACCES, "EACCES"}, {ENOSPC, "ENOSPC"}, {ETIMEDOUT, "ETIMEDOUT"}, {EIO, "EIO"}};

/* what a fault rule may make a call fail with: errors a real system gives */
static const struct {
	int err;
	const char *name;
} errnos[] = {{EACCES, "EACCES"},	  {EPERM, "EPERM"},		 {ENOENT, "ENOENT"},
	      {ENOSPC, "ENOSPC"},	  {EIO, "EIO"},			 {EAGAIN, "EAGAIN"},
	      {EMFILE, "EMFILE"},	  {EROFS, "EROFS"},		 {ETIMEDOUT, "ETIMEDOUT"},
	      {ECONNREFUSED, "ECONNREFUSED"}, {ECONNRESET, "ECONNRESET"}, {ENETUNREACH, "ENETUNREACH"},
	      {EHOSTUNREACH, "EHOSTUNREACH"}};

const char *session_noise_errno_name(int err)
{
	for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
		if (errnos[i].err == err)
			return errnos[i].name;
	return "?";
}

int pd_noise_errno_parse(const char *name)
{
	for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
		if (!strcmp(errnos[i].name, name))
			return errnos[i].err;
	return -1;
}

bool pd_noise_op_known(const char *op)
{
	/* the calls the audit's seccomp listener stops (lib/audit.c decodes each by these names) */
	static const char *const ops[] = {"open",  "exec",    "unlink", "rename", "chmod", "chown",
					  "truncate", "link", "symlink", "mkdir",  "mknod", "xattr",
					  "connect", "sendto", "sendmsg", "sendmmsg", NULL};
	for (size_t i = 0; ops[i]; i++)
		if (!strcmp(ops[i], op))
			return true;
	return false;
}

/* Arms the session's fault rules drawn for exec n: the program's matching calls fail for this exec
 * through a seccomp listener (the audit's, or one serving the faults alone). */
static void arm_faults(const pd_noise *z, unsigned n, pd_exec_opts *x, noise_armed *arm)
{
	for (size_t i = 0; i < z->nfaults && arm->n < sizeof arm->f / sizeof arm->f[0]; i++) {
		if (!(draw(z, n, 5 + (unsigned)i) < z->faults[i].rate))
			continue;
		size_t k = arm->n++;
		arm->rule[k] = i;
		arm->hits[k] = 0;
		arm->f[k] = (pd_fault){.op = z->faults[i].op[0] ? z->faults[i].op : NULL,
				       .path = z->faults[i].path[0] ? z->faults[i].path : NULL,
				       .err = z->faults[i].err,
				       .hits = &arm->hits[k]};
	}
	if (!arm->n)
		return;
	/* over the step's own audit when it has one (its events and verdict stay as they were) */
	if (x->audit && x->audit->enabled) {
		arm->ao = *x->audit;
	} else {
		memset(&arm->ao, 0, sizeof arm->ao);
		arm->ao.enabled = true;
		arm->ao.faults_only = true;
	}
	arm->ao.faults = arm->f;
	arm->ao.nfaults = arm->n;
	x->audit = &arm->ao;
}

json_t *session_noise_before(pd_session *s, unsigned n, pd_exec_opts *x, noise_armed *arm, pd_result *r,
			     bool *skip)
{
	*skip = false;
	arm->n = 0;
	const pd_noise *z = &s->noise;
	if (!z->on)
		return NULL;
	json_t *list = json_array();
	if (z->latency_ms) {
		uint64_t ms = (uint64_t)(draw(z, n, 0) * (double)(z->latency_ms + 1));
		if (ms > z->latency_ms)
			ms = z->latency_ms;
		struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		json_array_append_new(list, json_pack("{s:s,s:I}", "kind", "latency", "ms", (json_int_t)ms));
	}
	if (z->fail_rate > 0 && draw(z, n, 1) < z->fail_rate) {
		size_t f = (size_t)(draw(z, n, 2) * (sizeof faults / sizeof faults[0]));
		/* what a shell prints when the program (or the file it opens) fails so */
		char msg[300];
		const char *prog = x->argv && x->argv[0] ? x->argv[0] : "sh";
		const char *slash = strrchr(prog, '/');
		snprintf(msg, sizeof msg, "%s: %s\n", slash ? slash + 1 : prog, strerror(faults[f].err));
		memset(r, 0, sizeof *r);
		snprintf(r->sandbox_id, sizeof r->sandbox_id, "%s", s->sandbox_id);
		snprintf(r->use_id, sizeof r->use_id, "%s", s->use_id);
		r->status = PD_RE;
		r->exit_code = 1;
		r->err.head = strdup(msg);
		r->err.head_len = r->err.head ? strlen(msg) : 0;
		r->err.total = r->err.head_len;
		*skip = true;
		json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "kind", "fail", "errno", faults[f].name, "stderr", msg));
	}
	if (!*skip)
		arm_faults(z, n, x, arm);
	return list;
}

bool session_noise_cuts(const pd_session *s, unsigned n)
{
	const pd_noise *z = &s->noise;
	return z->on && z->truncate_rate > 0 && draw(z, n, 3) < z->truncate_rate;
}

void session_noise_after(pd_session *s, unsigned n, const noise_armed *arm, pd_result *r, json_t *list)
{
	const pd_noise *z = &s->noise;
	if (!list)
		return;
	for (size_t k = 0; k < arm->n; k++) {
		/* armed for this exec: listed whether the program made the call or not */
		const struct pd_noise_fault *f = &z->faults[arm->rule[k]];
		json_t *o = json_pack("{s:s,s:s,s:I}", "kind", "fault", "errno", session_noise_errno_name(f->err), "hits",
				      (json_int_t)arm->hits[k]);
		if (f->op[0])
			json_object_set_new(o, "op", json_string(f->op));
		if (f->path[0])
			json_object_set_new(o, "path", json_string(f->path));
		json_array_append_new(list, o);
	}
	if (!session_noise_cuts(s, n) || !r->out.head_len)
		return;
	/* stdout cut at a drawn point of what was kept: the head shortened, the tail dropped */
	size_t keep = (size_t)(draw(z, n, 4) * (double)r->out.head_len);
	json_array_append_new(list, json_pack("{s:s,s:s,s:I,s:I}", "kind", "truncate", "stream", "stdout", "kept",
					      (json_int_t)keep, "of", (json_int_t)(r->out.head_len + r->out.tail_len)));
	r->out.head_len = keep;
	free(r->out.tail);
	r->out.tail = NULL;
	r->out.tail_len = 0;
	r->out.truncated = true;
}
