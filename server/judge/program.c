/* Running one program of the judge (the candidate's, a checker, an interactor) in a clean sandbox
 * from the pools: acquire (a fresh or reset sandbox), place the program and its files in /work, run
 * it once, take its whole stdout, release (the pools reset or destroy it). Nothing of one run is
 * seen by the next, and nothing the judge holds (answers, checkers) is placed unless the caller
 * places it, which only the checker and interactor runs do, in their own sandboxes. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUILT_MAX (256u << 20) /* a built program taken out of the compile sandbox */

/* The compiled program's name in /work: the run argv's "./main". */
static const char *built_name(const pd_language *l)
{
	return l->compile && !strncmp(l->run[0], "./", 2) && !l->run[1] ? l->run[0] + 2 : NULL;
}

static int place(pd_sandbox *s, const char *path, const char *data, size_t len, mode_t mode, pd_err *e)
{
	if (pd_sandbox_write_file(s, path, data, len, mode, e) == 0)
		return 0;
	if (e->code != ENOENT)
		return -1;
	char dir[1024];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return -1;
	*slash = 0;
	if (pd_sandbox_mkdir(s, dir, 0755, e) < 0)
		return -1;
	return pd_sandbox_write_file(s, path, data, len, mode, e);
}

static char *const *tpl_env(pd_pools *pools, const char *name)
{
	const pd_template *t = pd_pools_template(pools, name);
	return t && t->env[0] ? t->env : NULL;
}

int pd_jprog_build(pd_pools *pools, const pd_language *l, const char *template_name, const char *source,
		   size_t len, uint64_t wall_ms, char **built, size_t *built_len, char *msg, size_t msg_len,
		   uint64_t *cpu_ms, pd_job *job, pd_err *e)
{
	*built = NULL;
	*built_len = 0;
	if (msg_len)
		msg[0] = 0;
	if (!l->compile) {
		*built = malloc(len + 1);
		if (!*built)
			return pd_fail(e, ENOMEM, "program");
		memcpy(*built, source, len);
		(*built)[len] = 0;
		*built_len = len;
		return 0;
	}
	const char *name = built_name(l);
	if (!name)
		return pd_fail(e, EINVAL, "language %s: the judge runs compiled programs that are one file (./main)",
			       l->name);
	const char *tpl = template_name && *template_name ? template_name : l->template;
	pd_sandbox *s = pd_pool_acquire(pools, tpl, NULL, e);
	if (!s)
		return -2;
	int rc = -1;
	pd_result r;
	memset(&r, 0, sizeof r);
	if (job && !pd_job_hold_sandbox(job, s)) {
		pd_fail(e, ECANCELED, "compile: the job was cancelled");
		rc = -3;
		goto out;
	}
	if (place(s, l->source, source, len, 0644, e) < 0)
		goto out;
	char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)l->compile, NULL};
	pd_exec_opts x = {0};
	x.argv = argv;
	x.envp = tpl_env(pools, tpl);
	x.cwd = "/work";
	x.wall_ms = wall_ms;
	x.cpu_ms = wall_ms;
	if (pd_sandbox_exec(s, &x, &r, e) < 0)
		goto out;
	if (cpu_ms)
		*cpu_ms += r.cpu_ms;
	if (r.status == PD_XX) {
		pd_fail(e, EIO, "compile: sandbox fault: %s", r.error);
		goto out;
	}
	if (r.status != PD_OK) {
		/* the compiler's words, as it said them (stderr first, then stdout), or the limit hit */
		size_t k = 0;
		if (r.status != PD_RE)
			k += (size_t)snprintf(msg, msg_len, "compiler %s. ", pd_status_name(r.status));
		for (int i = 0; i < 2 && k + 1 < msg_len; i++) {
			const pd_output *o = i ? &r.out : &r.err;
			size_t take = o->head_len < msg_len - 1 - k ? o->head_len : msg_len - 1 - k;
			if (take) /* head is NULL for a stream that said nothing */
				memcpy(msg + k, o->head, take);
			k += take;
		}
		msg[k < msg_len ? k : msg_len - 1] = 0;
		rc = 1;
		goto out;
	}
	char path[256];
	snprintf(path, sizeof path, "/work/%s", name);
	if (pd_sandbox_read_file(s, path, BUILT_MAX, built, built_len, e) < 0) {
		/* the compiler said yes and left no program: the submission's doing (a #error trick
		 * would fail earlier), reported as a compile error, not as the infrastructure's */
		snprintf(msg, msg_len, "the compiler exited 0 but left no %s: %s", path, PD_ERR_STR(e));
		rc = 1;
		goto out;
	}
	rc = 0;
out:
	if (job)
		pd_job_hold_sandbox(job, NULL); /* before the release: a cancel must not kill a reused one */
	pd_result_free(&r);
	pd_pool_release(pools, s);
	return rc;
}

void pd_jprog_init(pd_jprog *p, const pd_language *l, const char *template_name, const char *data, size_t len)
{
	memset(p, 0, sizeof *p);
	p->lang = l;
	snprintf(p->template_name, sizeof p->template_name, "%s",
		 template_name && *template_name ? template_name : l->template);
	p->data = data;
	p->len = len;
	const char *name = built_name(l);
	if (name) {
		snprintf(p->path, sizeof p->path, "/work/%s", name);
		p->mode = 0755;
	} else {
		snprintf(p->path, sizeof p->path, "%s", l->source);
		p->mode = 0644;
	}
	for (int i = 0; i < 4 && l->run[i]; i++)
		p->argv[p->argc++] = (char *)l->run[i];
}

/* The memfd's bytes (at most max). */
static int take_out(int fd, size_t max, char **out, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	size_t n = end > 0 ? (size_t)end : 0;
	if (n > max)
		n = max;
	char *b = malloc(n + 1);
	if (!b)
		return -1;
	size_t k = 0;
	while (k < n) {
		ssize_t r = pread(fd, b + k, n - k, (off_t)k);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		k += (size_t)r;
	}
	b[k] = 0;
	*out = b;
	*len = k;
	return 0;
}

int pd_jprog_run(pd_pools *pools, const pd_jprog *p, pd_jrun *x, pd_err *e)
{
	memset(&x->r, 0, sizeof x->r);
	x->out = x->feedback = NULL;
	x->out_len = 0;
	x->sandbox_id[0] = 0;
	pd_sandbox *s = x->sandbox ? x->sandbox : pd_pool_acquire(pools, p->template_name, NULL, e);
	if (!s)
		return -2;
	snprintf(x->sandbox_id, sizeof x->sandbox_id, "%s", pd_sandbox_id(s));
	int rc = -1, mfd = -1;
	memset(&x->verdict, 0, sizeof x->verdict);
	if (x->job && !pd_job_hold_sandbox(x->job, s)) {
		pd_fail(e, ECANCELED, "the job was cancelled");
		rc = -3;
		goto out;
	}
	if (x->memory_bytes && pd_sandbox_set_memory(s, x->memory_bytes, e) < 0)
		goto out;
	if (place(s, p->path, p->data, p->len, p->mode, e) < 0)
		goto out;
	for (size_t i = 0; i < x->nfiles; i++)
		if (place(s, x->files[i].path, x->files[i].data, x->files[i].len, 0644, e) < 0)
			goto out;
	if (x->want_feedback && pd_sandbox_mkdir(s, "/work/feedback", 0777, e) < 0)
		goto out;
	char *argv[40];
	int argc = 0;
	for (int i = 0; i < p->argc; i++)
		argv[argc++] = p->argv[i];
	for (int i = 0; x->extra_args && x->extra_args[i] && argc < 39; i++)
		argv[argc++] = x->extra_args[i];
	argv[argc] = NULL;
	pd_exec_opts o = {0};
	o.argv = argv;
	o.envp = tpl_env(pools, p->template_name);
	o.cwd = "/work";
	if (x->stdin_data) {
		o.stdin_data = x->stdin_data;
		o.stdin_len = x->stdin_len;
	} else if (x->stdin_fd >= 0) {
		o.stdin_from_fd = true;
		o.stdin_fd = x->stdin_fd;
	}
	o.cpu_ms = x->cpu_ms;
	o.wall_ms = x->wall_ms;
	/* the whole stdout is what the checker reads: spilled to memory, not just the kept head */
	o.spill = true;
	o.spill_fd[1] = -1;
	if (x->stdout_fd >= 0) {
		o.spill_fd[0] = x->stdout_fd;
	} else {
		mfd = memfd_create("judge-stdout", MFD_CLOEXEC);
		if (mfd < 0) {
			pd_fail(e, errno, "memfd for the output");
			goto out;
		}
		o.spill_fd[0] = mfd;
		o.spill_max = x->output_bytes;
	}
	/* stderr counts towards the kill too: leave it room beyond the stdout budget */
	o.output_kill_bytes = x->output_bytes ? x->output_bytes + (1u << 20) : 0;
	/* under the policy (its decoys planted, its honey variables over the template's), judged
	 * before the release resets the sandbox: the files the attempt wrote are evidence */
	if (pd_sandbox_exec_audited(s, &o, x->audit, PD_AUDITED_PLANT, &x->r, &x->verdict, e) < 0)
		goto out;
	if (mfd >= 0 && take_out(mfd, x->output_bytes ? x->output_bytes : SIZE_MAX, &x->out, &x->out_len) < 0) {
		pd_fail(e, ENOMEM, "output");
		goto out;
	}
	if (x->want_feedback && pd_sandbox_state(s) == PD_READY) {
		size_t fl;
		pd_err fe;
		if (pd_sandbox_read_file(s, "/work/feedback/judgemessage.txt", 65536, &x->feedback, &fl, &fe) < 0)
			x->feedback = NULL;
	}
	rc = 0;
out:
	if (x->job)
		pd_job_hold_sandbox(x->job, NULL); /* before the release: a cancel must not kill a reused one */
	if (mfd >= 0)
		close(mfd);
	if (!x->sandbox)
		pd_pool_release(pools, s);
	return rc;
}

void pd_jrun_free(pd_jrun *x)
{
	pd_result_free(&x->r);
	free(x->out);
	free(x->feedback);
	x->out = x->feedback = NULL;
}
