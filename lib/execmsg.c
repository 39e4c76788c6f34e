/* A container sandbox's exec request to its init (proto.h's msg_exec): the program, its
 * environment (with the relay's proxy variables under an allowlist network), cwd, user and
 * rlimits; the request's descriptors are exec.c's to add. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t vec_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

static int build_msg(const pd_sandbox *s, const pd_exec_opts *o, char *const *envp, char **out, size_t *len,
		     pd_err *e);

int pd_ct_exec_msg(const pd_sandbox *s, const pd_exec_opts *o, char **out, size_t *len, pd_err *e)
{
	char *const *envp = o->envp ? o->envp : pd_default_env();
	/* an allowlist sandbox's programs find the relay where HTTP clients look for a proxy */
	char **proxied = pd_sb_proxy_env(s, envp);
	if (s->relay && !proxied)
		return pd_fail(e, ENOMEM, "exec environment");
	if (proxied)
		envp = proxied;
	int rc = build_msg(s, o, envp, out, len, e);
	free(proxied);
	return rc;
}

static int build_msg(const pd_sandbox *s, const pd_exec_opts *o, char *const *envp, char **out, size_t *len,
		     pd_err *e)
{
	size_t argc = vec_len(o->argv), envc = vec_len(envp);
	if (!argc)
		return pd_fail(e, EINVAL, "exec needs a program");
	if (argc > PD_MAX_ARGS || envc > PD_MAX_ARGS)
		return pd_fail(e, E2BIG, "more than %d arguments or variables", PD_MAX_ARGS);
	const char *cwd = o->cwd && *o->cwd ? o->cwd : "/";
	size_t n = sizeof(struct msg_exec) + strlen(cwd) + 1;
	for (size_t i = 0; i < argc; i++)
		n += strlen(o->argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		n += strlen(envp[i]) + 1;
	if (n > PD_EXEC_MSG_MAX)
		return pd_fail(e, E2BIG, "arguments and environment exceed %d bytes", PD_EXEC_MSG_MAX);
	char *b = calloc(1, n);
	if (!b)
		return pd_fail(e, ENOMEM, "exec request");
	struct msg_exec *x = (struct msg_exec *)b;
	x->type = MSG_EXEC;
	x->argc = (uint32_t)argc;
	x->envc = (uint32_t)envc;
	const pd_audit_opts *ao = o->audit ? o->audit : s->opts.audit;
	x->audit = ao && ao->enabled;
	/* 0:0 is the sandbox's user (checked at its creation) */
	bool own = o->uid || o->gid;
	if (o->uid >= PD_UID_RANGE || o->gid >= PD_UID_RANGE) {
		free(b);
		return pd_fail(e, EINVAL, "uid and gid must be below %u", PD_UID_RANGE);
	}
	if (o->uid == PD_INIT_UID) {
		free(b);
		return pd_fail(e, EINVAL, "uid %u is reserved for the sandbox's init", PD_INIT_UID);
	}
	x->uid = own ? o->uid : s->opts.uid;
	x->gid = own ? o->gid : s->opts.gid;
	uint64_t cpu_ms = o->cpu_ms ? o->cpu_ms : s->lim.cpu_ms;
	/* the per-process CPU rlimit is a backstop; the cgroup check ends the sandbox first */
	x->rl_cpu_s = cpu_ms ? cpu_ms / 1000 + 2 : 0;
	x->rl_nofile = s->lim.nofile;
	x->rl_fsize = s->lim.fsize_bytes; /* the disk size already bounds every file: ENOSPC */
	x->rl_stack = s->lim.stack_bytes;
	x->rl_data = o->data_headroom_bytes && s->lim.memory_bytes ? s->lim.memory_bytes + o->data_headroom_bytes : 0;
	char *p = b + sizeof *x;
	p = stpcpy(p, cwd) + 1;
	for (size_t i = 0; i < argc; i++)
		p = stpcpy(p, o->argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		p = stpcpy(p, envp[i]) + 1;
	*out = b;
	*len = n;
	return 0;
}
