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

json_t *session_noise_before(pd_session *s, unsigned n, const pd_exec_opts *x, pd_result *r, bool *skip)
{
	*skip = false;
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
	return list;
}

bool session_noise_cuts(const pd_session *s, unsigned n)
{
	const pd_noise *z = &s->noise;
	return z->on && z->truncate_rate > 0 && draw(z, n, 3) < z->truncate_rate;
}

void session_noise_after(pd_session *s, unsigned n, pd_result *r, json_t *list)
{
	const pd_noise *z = &s->noise;
	if (!list || !session_noise_cuts(s, n) || !r->out.head_len)
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
