/* Jobs: a job's lifetime (new, free), the failure classes, and running its attempts in sandboxes
 * from the pools (pd_job_execute, called by the scheduler's workers). The requests that make jobs
 * and the answers made from them are server/api/'s, one file per API. */
#define _GNU_SOURCE
#include "server.h"
#include "api/api.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

static const char *const failure_names[PD_F_COUNT] = {
	"none",     "startup_failure", "dependency_missing", "exec_timeout", "judge_error",
	"oom",      "output_limit",    "policy_violation",   "queue_timeout", "cancelled",
	"internal_error", "compile_error",
};

const char *pd_failure_name(pd_failure f)
{
	return (unsigned)f < PD_F_COUNT ? failure_names[f] : "internal_error";
}


/* ---- jobs ------------------------------------------------------------------------------------ */

pd_job *pd_job_new(void)
{
	pd_job *j = calloc(1, sizeof *j);
	if (j) {
		j->priority = PD_PRIO_NORMAL;
		pthread_mutex_init(&j->run_mu, NULL);
	}
	return j;
}

const char *pd_job_status_name(const pd_job *j)
{
	/* a judge job compiles once and runs a program per test: no one program's status is the
	 * job's (its outcome is its verdict), and XX would say a sandbox failed it */
	if (j->execute)
		return "judge";
	const pd_result *r = j->ran ? &j->run_r : j->compiled ? &j->compile_r : NULL;
	return r ? pd_status_name(r->status) : "XX";
}

const char *pd_job_problem_key(const pd_job *j)
{
	return j->problem_key[0] ? j->problem_key : j->problem_id;
}

bool pd_job_is_cancelled(const pd_job *j)
{
	return __atomic_load_n(&j->cancelled, __ATOMIC_ACQUIRE) != 0;
}

void pd_job_cancel(pd_job *j)
{
	__atomic_store_n(&j->cancelled, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&j->run_mu);
	/* killing the sandbox's init ends its pid namespace, every process of the program with it;
	 * the exec returns, the sandbox is FAILED and the pool destroys it. The lock keeps the
	 * sandbox (and so its init, our child) from being handed back meanwhile. */
	if (j->running && pd_sandbox_pid(j->running) > 0)
		kill(pd_sandbox_pid(j->running), SIGKILL);
	pthread_mutex_unlock(&j->run_mu);
}

/* Records (or forgets) the sandbox the job runs in; false when the job was cancelled already. */
bool pd_job_hold_sandbox(pd_job *j, pd_sandbox *s)
{
	pthread_mutex_lock(&j->run_mu);
	bool go = !s || !pd_job_is_cancelled(j);
	j->running = go ? s : NULL;
	pthread_mutex_unlock(&j->run_mu);
	return go;
}

static bool cancelled_now(pd_job *j)
{
	if (!pd_job_is_cancelled(j))
		return false;
	j->failure = PD_F_CANCELLED;
	snprintf(j->error, sizeof j->error, "the client disconnected: the run was stopped");
	return true;
}

static void free_step(pd_step *s)
{
	api_free_vec(s->argv);
	free(s->stdin_data);
	free(s->whole[0]);
	free(s->whole[1]);
}

void pd_job_free(pd_job *j)
{
	if (!j)
		return;
	if (j->work_free)
		j->work_free(j->work);
	json_decref(j->record);
	json_decref(j->prior);
	for (size_t i = 0; i < j->nfiles; i++) {
		free(j->files[i].path);
		free(j->files[i].data);
	}
	free(j->files);
	free_step(&j->compile);
	free_step(&j->run);
	api_free_vec(j->env);
	free(j->cwd);
	for (size_t i = 0; i < j->nfetch; i++)
		free(j->fetch[i]);
	free(j->fetch);
	for (size_t i = 0; i < j->nfetched; i++) {
		free(j->fetched[i].path);
		free(j->fetched[i].data);
	}
	free(j->fetched);
	pd_result_free(&j->compile_r);
	pd_result_free(&j->run_r);
	pthread_mutex_destroy(&j->run_mu);
	pd_audit_policy_free(j->audit);
	free(j);
}

/* prefix + the request's args (non-strings as ""), NULL-terminated */
#define FETCH_FILE_MAX (16u << 20)
#define FETCH_TOTAL_MAX (64u << 20)

/* ---- running --------------------------------------------------------------------------------- */

pd_failure pd_failure_of(const pd_result *r, const pd_audit_verdict *v)
{
	switch (r->status) {
	case PD_TO: return PD_F_TIMEOUT;
	case PD_ML: return PD_F_OOM;
	case PD_OL: return PD_F_OUTPUT;
	case PD_XX: return PD_F_INTERNAL;
	default: return r->audit_denied || (v && v->status == PD_PROCESS_FAIL) ? PD_F_POLICY : PD_F_NONE;
	}
}

/* The process level over the job's audited steps: fail if one fails, not_audited if the run was
 * not audited whole. Evaluated with the sandbox still there (the files the attempt wrote). */
static void judge_process(pd_job *j, pd_sandbox *s)
{
	memset(&j->verdict, 0, sizeof j->verdict);
	if (!j->audit || !j->ran)
		return;
	pd_audit_verdict v[2];
	memset(v, 0, sizeof v);
	pd_sandbox *live = pd_sandbox_state(s) == PD_READY ? s : NULL;
	if (j->compiled)
		pd_audit_evaluate(j->audit, &j->compile_r, live, &v[0]);
	else
		v[0].status = PD_PROCESS_PASS;
	pd_audit_evaluate(j->audit, &j->run_r, live, &v[1]);
	j->verdict = v[1];
	if (v[0].status == PD_PROCESS_NOT_AUDITED || v[1].status == PD_PROCESS_NOT_AUDITED) {
		j->verdict.status = PD_PROCESS_NOT_AUDITED;
		return;
	}
	if (v[0].status == PD_PROCESS_FAIL) {
		j->verdict.status = PD_PROCESS_FAIL;
		j->verdict.failed_kinds |= v[0].failed_kinds;
		for (size_t i = 0; i < v[0].nreasons && j->verdict.nreasons < PD_VERDICT_REASONS; i++)
			snprintf(j->verdict.reasons[j->verdict.nreasons++], sizeof j->verdict.reasons[0], "compile: %s",
				 v[0].reasons[i]);
	}
}

/* The request's variables over the template's (or paddock's defaults), by name. */
static char **merged_env(const pd_job *j, const pd_template *t)
{
	return pd_env_merge(t && t->env[0] ? t->env : NULL, j->env);
}

/* The whole of a spilled stream, read back from its memfd (NULL: it could not be). */
static char *read_spill(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	if (end < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return NULL;
	char *buf = malloc((size_t)end + 1);
	size_t got = 0;
	while (buf && got < (size_t)end) {
		ssize_t n = read(fd, buf + got, (size_t)end - got);
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	if (buf)
		buf[got] = 0;
	*len = got;
	return buf;
}

static int run_step(pd_sandbox *s, pd_job *j, pd_step *st, const pd_template *t, pd_result *r,
		    pd_err *e)
{
	pd_exec_opts x = {0};
	x.argv = st->argv;
	char **env = j->env ? merged_env(j, t) : NULL;
	x.envp = env ? env : (t && t->env[0] ? t->env : NULL);
	char **honey = NULL;
	if (j->audit) {
		/* the policy's honey variables over everything else */
		honey = pd_env_merge(x.envp, (char *const *)pd_audit_policy_env(j->audit));
		if (honey)
			x.envp = honey;
		x.audit = pd_audit_policy_opts(j->audit);
	}
	x.cwd = j->cwd ? j->cwd : t ? t->cwd : NULL;
	/* a language's source and its steps are in /work (server/languages.c), wherever an image's
	 * WorkingDir would put a command */
	if (!j->cwd && j->language[0] && t && t->image)
		x.cwd = "/work";
	x.stdin_data = st->stdin_data;
	x.stdin_len = st->stdin_len;
	x.wall_ms = st->wall_ms;
	x.cpu_ms = st->cpu_ms;
	x.output_kill_bytes = st->output_kill_bytes;
	/* the template's memory fast path, for the program only: a compiler is not the model's and
	 * may map more than it touches */
	if (st == &j->run && t && !j->mem_fast_off)
		x.data_headroom_bytes = t->data_headroom_bytes;
	/* the whole output goes to two memory files as well as to the record's head and tail */
	int mfd[2] = {-1, -1};
	for (int i = 0; i < 2; i++) {
		free(st->whole[i]);
		st->whole[i] = NULL;
		st->whole_len[i] = 0;
	}
	if (st->keep_whole) {
		mfd[0] = memfd_create("stdout", MFD_CLOEXEC);
		mfd[1] = memfd_create("stderr", MFD_CLOEXEC);
		if (mfd[0] >= 0 && mfd[1] >= 0) {
			x.spill = true;
			x.spill_fd[0] = mfd[0];
			x.spill_fd[1] = mfd[1];
			x.spill_max = st->keep_whole;
			x.output_kill_bytes = st->keep_whole;
		}
	}
	/* POST /v1/runs: the run's whole output to two unnamed files, named if the record cuts it */
	int ofd[2] = {-1, -1};
	if (!x.spill && st == &j->run && j->output_dir && pd_run_output_open(j->output_dir, ofd) == 0) {
		x.spill = true;
		x.spill_fd[0] = ofd[0];
		x.spill_fd[1] = ofd[1];
		x.spill_max = PD_RUN_OUTPUT_MAX;
	}
	int rc = pd_sandbox_exec(s, &x, r, e);
	if (ofd[0] >= 0) {
		j->output_kept = rc == 0 && (r->out.truncated || r->err.truncated) && !r->spill_lost[0] &&
				  !r->spill_lost[1] &&
				  pd_run_output_keep(j->output_dir, j->task_id, j->attempts ? j->attempts : 1, ofd) == 0;
		pd_run_output_close(ofd);
		/* the library calls a cut record an output limit; nothing was lost here: the exit status
		 * decides (a kill past the output limit has its signal) */
		if (j->output_kept && r->status == PD_OL && !r->signal)
			r->status = r->exit_code ? PD_RE : PD_OK;
	}
	free(env); /* the strings belong to the job and the template */
	if (rc == 0 && x.spill && !r->spill_lost[0] && !r->spill_lost[1]) {
		for (int i = 0; i < 2; i++)
			st->whole[i] = read_spill(mfd[i], &st->whole_len[i]);
		/* the record kept a head and a tail only, so the library calls it an output limit; the
		 * output is whole here, under the cap: the exit status decides */
		if (st->whole[0] && st->whole[1] && r->status == PD_OL && !r->signal)
			r->status = r->exit_code ? PD_RE : PD_OK;
	}
	for (int i = 0; i < 2; i++)
		if (mfd[i] >= 0)
			close(mfd[i]);
	free(honey);
	return rc;
}

static uint64_t wall_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* The job's policy: the template's, tightened by the request's, when the template has one and
 * the request asks for an audit or the template makes it mandatory; else the request's. Once per
 * job: the surfaces call it when the request arrives (a request that would widen the template's
 * is refused there, naming the field), the attempt again for a job that did not come through them.
 * Returns -1 (e set) when the request would widen the template's. */
int pd_job_audit_policy(pd_job *j, const pd_template *t, pd_err *e)
{
	if (j->audit_merged || !t)
		return 0;
	int rc = pd_audit_policy_effective(t->audit, &j->audit, e);
	j->audit_merged = rc > 0;
	return rc < 0 ? -1 : 0;
}

/* One attempt in one fresh sandbox. Returns true if it may be retried (infrastructure). */
static bool attempt(pd_pools *pools, pd_job *j)
{
	pd_err e = {0};
	j->failure = PD_F_NONE;
	j->error[0] = 0;
	pd_result_free(&j->compile_r);
	pd_result_free(&j->run_r);
	memset(&j->compile_r, 0, sizeof j->compile_r);
	memset(&j->run_r, 0, sizeof j->run_r);
	j->compiled = j->ran = false;
	j->output_kept = false;
	memset(&j->costs, 0, sizeof j->costs);
	j->acquire_us = 0;
	memset(&j->verdict, 0, sizeof j->verdict);
	const char *pool = j->template_name;
	if (j->image[0]) {
		/* the pool of (template, image), made on first use: resolved again at each attempt, so
		 * a name re-pointed meanwhile is followed as pd_image_open would */
		if (pd_pools_image(pools, j->template_name, j->image, j->pool, sizeof j->pool, j->image_digest, &e) < 0) {
			j->failure = e.code == EAGAIN ? PD_F_STARTUP : PD_F_DEPENDENCY;
			snprintf(j->error, sizeof j->error, "%s", PD_ERR_STR(&e));
			return j->failure == PD_F_STARTUP;
		}
		pool = j->pool;
	}
	if (j->isolation[0]) {
		/* the (template or image) pool's recipe under the tier asked for: its own pool, made on
		 * first use (pd_pools_tier); the edge checked the template allows it */
		if (pd_pools_tier(pools, pool, pd_isolation_parse(j->isolation), j->tier_pool, sizeof j->tier_pool, &e) < 0) {
			j->failure = e.code == EAGAIN ? PD_F_STARTUP : PD_F_DEPENDENCY;
			snprintf(j->error, sizeof j->error, "%s", PD_ERR_STR(&e));
			return j->failure == PD_F_STARTUP;
		}
		pool = j->tier_pool;
	}
	const pd_template *t = pd_pools_template(pools, pool);
	if (!t) {
		j->failure = PD_F_DEPENDENCY;
		snprintf(j->error, sizeof j->error, "no template named '%s'", j->template_name);
		return false;
	}
	if (j->image[0]) /* the request's: its digest came with the pool */
		snprintf(j->image_name, sizeof j->image_name, "%s", pd_image_ref_is_digest(j->image) ? "" : j->image);
	else
		pd_pools_template_image(pools, t, j->image_name, sizeof j->image_name, j->image_digest,
					sizeof j->image_digest);
	if (!t->available) {
		j->failure = PD_F_DEPENDENCY;
		snprintf(j->error, sizeof j->error, "template '%s' needs %s, which the image lacks",
			 t->name, t->missing);
		return false;
	}
	pd_err pe = {0};
	if (pd_job_audit_policy(j, t, &pe) < 0) {
		j->failure = PD_F_NONE; /* the client's: its policy would widen the template's */
		snprintf(j->error, sizeof j->error, "%s", PD_ERR_STR(&pe));
		return false;
	}
	if (j->language[0]) {
		const pd_language *l = pd_language_find(j->language);
		if (l && l->requires && !pd_template_has_program(t, l->requires)) {
			/* the language has no template of its own when it runs in bash's, or its image
			 * lacks the compiler: the error says what to install, as paddock pool
			 * --toolchains does */
			j->failure = PD_F_DEPENDENCY;
			snprintf(j->error, sizeof j->error,
				 "language %s needs %s, which the image lacks (Debian package %s%s)", l->name,
				 l->requires, l->package, l->optional ? ", which make deps does not install" : "");
			return false;
		}
	}
	uint64_t a0 = pd_now_us();
	pd_sandbox *s = pd_pool_acquire(pools, pool, NULL, &e);
	j->acquire_us = pd_now_us() - a0;
	if (s)
		pd_sandbox_use_costs(s, &j->costs);
	if (!s) {
		j->failure = e.kind == PD_EK_DEPENDENCY ? PD_F_DEPENDENCY : PD_F_STARTUP;
		snprintf(j->error, sizeof j->error, "%s", PD_ERR_STR(&e));
		return j->failure == PD_F_STARTUP;
	}
	/* the pool's own template from here: an image pool's slot is stable while s is held */
	t = pd_pool_template_of(pools, s) ? pd_pool_template_of(pools, s) : t;
	snprintf(j->template_version, sizeof j->template_version, "%s", t->version);
	snprintf(j->sandbox_id, sizeof j->sandbox_id, "%s", pd_sandbox_id(s));
	pd_sandbox_use_id(s, j->use_id, sizeof j->use_id);
	bool retry = false;
	if (!pd_job_hold_sandbox(j, s)) {
		cancelled_now(j);
		goto out;
	}
	if (j->memory_bytes && pd_sandbox_set_memory(s, j->memory_bytes, &e) < 0) {
		j->failure = PD_F_INTERNAL;
		snprintf(j->error, sizeof j->error, "%s", PD_ERR_STR(&e));
		retry = true;
		goto out;
	}
	for (size_t i = 0; i < j->nfiles; i++) {
		/* the parent is usually there (the template's working directory): made only when the
		 * write says it is missing, which saves a round trip to init per file */
		int w = pd_sandbox_write_file(s, j->files[i].path, j->files[i].data, j->files[i].len, 0644, &e);
		char dir[1100];
		snprintf(dir, sizeof dir, "%s", j->files[i].path);
		char *slash = strrchr(dir, '/');
		if (w < 0 && e.code == ENOENT && slash && slash != dir) {
			*slash = 0;
			pd_sandbox_mkdir(s, dir, 0755, NULL);
			memset(&e, 0, sizeof e);
			w = pd_sandbox_write_file(s, j->files[i].path, j->files[i].data, j->files[i].len, 0644, &e);
		}
		if (w < 0) {
			/* a bad path is the client's; a full disk too */
			j->failure = PD_F_NONE;
			/* the library's message of a file operation names the path (lib/files.c) */
			snprintf(j->error, sizeof j->error, "file %s", PD_ERR_STR(&e));
			goto out;
		}
	}
	if (j->audit && pd_audit_policy_plant(j->audit, s, &e) < 0) {
		j->failure = PD_F_INTERNAL;
		snprintf(j->error, sizeof j->error, "plant the audit's decoys: %s", PD_ERR_STR(&e));
		retry = true;
		goto out;
	}
	if (j->compile.argv) {
		if (run_step(s, j, &j->compile, t, &j->compile_r, &e) < 0) {
			j->failure = PD_F_INTERNAL;
			snprintf(j->error, sizeof j->error, "compile: %s", PD_ERR_STR(&e));
			retry = true;
			goto out;
		}
		j->compiled = true;
		pd_failure f = pd_failure_of(&j->compile_r, NULL);
		if (f != PD_F_NONE || j->compile_r.status != PD_OK) {
			j->failure = f;
			retry = f == PD_F_INTERNAL;
			goto out;
		}
	}
	if (run_step(s, j, &j->run, t, &j->run_r, &e) < 0) {
		j->failure = PD_F_INTERNAL;
		snprintf(j->error, sizeof j->error, "run: %s", PD_ERR_STR(&e));
		retry = true;
		goto out;
	}
	j->ran = true;
	judge_process(j, s);
	j->failure = pd_failure_of(&j->run_r, &j->verdict);
	retry = j->failure == PD_F_INTERNAL;
	/* each file up to 16 MiB, and 64 MiB in all: the sandbox chooses what the files hold, and
	 * each byte is held several times over (data, base64, the JSON answer, the stored record)
	 * while the answer is built; a file past either comes back null */
	size_t budget = FETCH_TOTAL_MAX;
	if (pd_sandbox_state(s) == PD_READY)
		for (size_t i = 0; i < j->nfetch; i++) {
			pd_file *nf = realloc(j->fetched, (j->nfetched + 1) * sizeof *nf);
			if (!nf)
				break;
			j->fetched = nf;
			char path[1100];
			if (j->fetch[i][0] == '/')
				snprintf(path, sizeof path, "%s", j->fetch[i]);
			else
				snprintf(path, sizeof path, "%s/%s", j->cwd ? j->cwd : "/work", j->fetch[i]);
			pd_file *out = &j->fetched[j->nfetched++];
			out->path = strdup(j->fetch[i]);
			out->data = NULL;
			out->len = 0;
			size_t max = budget < FETCH_FILE_MAX ? budget : FETCH_FILE_MAX;
			if (!max || pd_sandbox_read_file(s, path, max, &out->data, &out->len, &e) < 0) {
				out->data = NULL;
				out->len = 0;
			}
			budget -= out->len;
		}
out:
	pd_job_hold_sandbox(j, NULL);
	/* whatever the killed run looked like (an init that died under it, files it could not
	 * write), it was the cancel */
	if (cancelled_now(j))
		retry = false;
	if (j->image[0] && !pd_image_ref_is_digest(j->image)) {
		/* an image pool is per digest: the name is the one this request used */
		snprintf(j->compile_r.image_name, sizeof j->compile_r.image_name, "%s", j->image);
		snprintf(j->run_r.image_name, sizeof j->run_r.image_name, "%s", j->image);
	}
	pd_pool_release(pools, s);
	/* what the use left is known when the reclaimer has reset or destroyed the sandbox: the
	 * stored record is completed then (pd_store_residue) */
	if (j->compiled)
		snprintf(j->compile_r.residue, sizeof j->compile_r.residue, "pending");
	if (j->ran)
		snprintf(j->run_r.residue, sizeof j->run_r.residue, "pending");
	return retry;
}

void pd_job_execute(pd_pools *pools, pd_job *j, unsigned max_retries)
{
	j->started_us = wall_us();
	for (j->attempts = 1;; j->attempts++) {
		if (cancelled_now(j))
			break;
		bool retry = attempt(pools, j);
		if (!retry || j->attempts > max_retries)
			break;
		if (j->deadline_us && pd_now_us() >= j->deadline_us)
			break;
		/* this attempt is kept as it ended (its sandbox, its error): the store gives it a row */
		j->finished_us = wall_us();
		if (!j->prior)
			j->prior = json_array();
		json_array_append_new(j->prior, pd_job_to_json(j));
		for (size_t i = 0; i < j->nfetched; i++) {
			free(j->fetched[i].path);
			free(j->fetched[i].data);
		}
		j->nfetched = 0;
	}
	j->finished_us = wall_us();
}

