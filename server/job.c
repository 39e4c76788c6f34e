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

pd_failure pd_failure_parse(const char *name)
{
	for (int f = 0; name && f < PD_F_COUNT; f++)
		if (!strcmp(name, failure_names[f]))
			return (pd_failure)f;
	return PD_F_NONE;
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

/* The process level over the job's audited steps (each judged by its exec, with the sandbox still
 * there: pd_sandbox_exec_audited): fail if one fails, not_audited if the run was not audited
 * whole. */
static void judge_process(pd_job *j, const pd_audit_verdict *compile, const pd_audit_verdict *run)
{
	memset(&j->verdict, 0, sizeof j->verdict);
	if (!j->audit || !j->ran)
		return;
	pd_audit_verdict v[2] = {*compile, *run};
	if (!j->compiled)
		v[0].status = PD_PROCESS_PASS;
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

/* One step (compile or run) in s, under the job's audit when it has one: the decoys planted before
 * the first step, the step judged into v (pd_sandbox_exec_audited). */
static int run_step(pd_sandbox *s, pd_job *j, pd_step *st, const pd_template *t, pd_result *r,
		    pd_audit_verdict *v, pd_err *e)
{
	pd_exec_opts x = {0};
	x.argv = st->argv;
	char **env = j->env ? merged_env(j, t) : NULL;
	x.envp = env ? env : (t && t->env[0] ? t->env : NULL);
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
	bool first = st == (j->compile.argv ? &j->compile : &j->run);
	int rc = pd_sandbox_exec_audited(s, &x, j->audit, first ? PD_AUDITED_PLANT : 0, r, v, e);
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
	return rc;
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

/* The attempt's failure: its class, its message, and whether it may be retried. */
static bool fail_as(pd_job *j, pd_failure f, const pd_err *e, bool retry)
{
	j->failure = f;
	snprintf(j->error, sizeof j->error, "%s", PD_ERR_STR(e));
	return retry;
}

/* The pool the job runs in (its image's and tier's, made on first use) and its template, checked
 * (available, the language's program, the audit policy). NULL with j's failure set and *retry
 * whether it may be retried. */
static const pd_template *attempt_template(pd_pools *pools, pd_job *j, const char **pool_out, bool *retry)
{
	pd_err e = {0};
	*retry = false;
	/* the pool of (template, image, tier), each made on first use, in one pass: resolved again
	 * at each attempt, so an image name re-pointed meanwhile is followed as pd_image_open would;
	 * the edge checked the template allows the tier */
	char *pool = j->isolation[0] ? j->tier_pool : j->pool;
	int tier = -1; /* the pool's own */
	if (j->isolation[0] && (tier = pd_isolation_parse(j->isolation)) < 0)
		tier = PD_ISO_N; /* refused by name, as no tier there is */
	const pd_template *t = pd_pools_resolve(pools, j->template_name, j->image, tier, pool, sizeof j->pool,
						j->image_digest, &e);
	if (!t) {
		*retry = fail_as(j, e.code == EAGAIN ? PD_F_STARTUP : PD_F_DEPENDENCY, &e, e.code == EAGAIN);
		return NULL;
	}
	*pool_out = pool;
	if (j->image[0]) /* the request's: its digest came with the pool */
		snprintf(j->image_name, sizeof j->image_name, "%s", pd_image_ref_is_digest(j->image) ? "" : j->image);
	else
		pd_pools_template_image(pools, t, j->image_name, sizeof j->image_name, j->image_digest,
					sizeof j->image_digest);
	if (!t->available) {
		j->failure = PD_F_DEPENDENCY;
		snprintf(j->error, sizeof j->error, "template '%s' needs %s, which the image lacks", t->name, t->missing);
		return NULL;
	}
	if (pd_job_audit_policy(j, t, &e) < 0) {
		fail_as(j, PD_F_NONE, &e, false); /* the client's: its policy would widen the template's */
		return NULL;
	}
	const pd_language *l = j->language[0] ? pd_language_find(j->language) : NULL;
	if (l && l->requires && !pd_template_has_program(t, l->requires)) {
		/* the language has no template of its own when it runs in bash's, or its image lacks
		 * the compiler: the error says what to install, as paddock pool --toolchains does */
		j->failure = PD_F_DEPENDENCY;
		snprintf(j->error, sizeof j->error, "language %s needs %s, which the image lacks (Debian package %s%s)",
			 l->name, l->requires, l->package, l->optional ? ", which make deps does not install" : "");
		return NULL;
	}
	return t;
}

/* The request's files into the sandbox. -1 with j's error set (the client's: a bad path, a full
 * disk). */
static int write_files(pd_sandbox *s, pd_job *j)
{
	pd_err e = {0};
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
			j->failure = PD_F_NONE;
			/* the library's message of a file operation names the path (lib/files.c) */
			snprintf(j->error, sizeof j->error, "file %s", PD_ERR_STR(&e));
			return -1;
		}
	}
	return 0;
}

/* The files the request asked back, each up to 16 MiB and 64 MiB in all: the sandbox chooses what
 * the files hold, and each byte is held several times over (data, base64, the JSON answer, the
 * stored record) while the answer is built; a file past either comes back null. */
static void fetch_files(pd_sandbox *s, pd_job *j)
{
	size_t budget = FETCH_TOTAL_MAX;
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
		pd_err e;
		if (!max || pd_sandbox_read_file(s, path, max, &out->data, &out->len, &e) < 0) {
			out->data = NULL;
			out->len = 0;
		}
		budget -= out->len;
	}
}

/* The compile step (if any) and the run, each under the job's audit, then the process level over
 * both and the failure class. Returns whether the attempt may be retried. */
static bool run_steps(pd_sandbox *s, pd_job *j, const pd_template *t)
{
	pd_err e = {0};
	pd_audit_verdict vc = {0}, vr = {0};
	if (j->compile.argv) {
		if (run_step(s, j, &j->compile, t, &j->compile_r, &vc, &e) < 0) {
			j->failure = PD_F_INTERNAL;
			snprintf(j->error, sizeof j->error, "compile: %s", PD_ERR_STR(&e));
			return true;
		}
		j->compiled = true;
		pd_failure f = pd_failure_of(&j->compile_r, NULL);
		if (f != PD_F_NONE || j->compile_r.status != PD_OK) {
			j->failure = f;
			return f == PD_F_INTERNAL;
		}
	}
	if (run_step(s, j, &j->run, t, &j->run_r, &vr, &e) < 0) {
		j->failure = PD_F_INTERNAL;
		snprintf(j->error, sizeof j->error, "run: %s", PD_ERR_STR(&e));
		return true;
	}
	j->ran = true;
	judge_process(j, &vc, &vr);
	j->failure = pd_failure_of(&j->run_r, &j->verdict);
	return j->failure == PD_F_INTERNAL;
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
	const char *pool = NULL;
	bool retry = false;
	const pd_template *t = attempt_template(pools, j, &pool, &retry);
	if (!t)
		return retry;
	uint64_t a0 = pd_now_us();
	pd_sandbox *s = pd_pool_acquire(pools, pool, NULL, &e);
	j->acquire_us = pd_now_us() - a0;
	if (!s)
		return fail_as(j, e.kind == PD_EK_DEPENDENCY ? PD_F_DEPENDENCY : PD_F_STARTUP, &e,
			       e.kind != PD_EK_DEPENDENCY);
	pd_sandbox_use_costs(s, &j->costs);
	/* the pool's own template from here: an image pool's slot is stable while s is held */
	t = pd_pool_template_of(pools, s) ? pd_pool_template_of(pools, s) : t;
	snprintf(j->template_version, sizeof j->template_version, "%s", t->version);
	snprintf(j->sandbox_id, sizeof j->sandbox_id, "%s", pd_sandbox_id(s));
	pd_sandbox_use_id(s, j->use_id, sizeof j->use_id);
	if (!pd_job_hold_sandbox(j, s))
		cancelled_now(j);
	else if (j->memory_bytes && pd_sandbox_set_memory(s, j->memory_bytes, &e) < 0)
		retry = fail_as(j, PD_F_INTERNAL, &e, true);
	else if (write_files(s, j) == 0) {
		retry = run_steps(s, j, t);
		if (j->ran && pd_sandbox_state(s) == PD_READY)
			fetch_files(s, j);
	}
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
	j->started_us = pd_wall_us();
	for (j->attempts = 1;; j->attempts++) {
		if (cancelled_now(j))
			break;
		bool retry = attempt(pools, j);
		if (!retry || j->attempts > max_retries)
			break;
		if (j->deadline_us && pd_now_us() >= j->deadline_us)
			break;
		/* this attempt is kept as it ended (its sandbox, its error): the store gives it a row */
		j->finished_us = pd_wall_us();
		if (!j->prior)
			j->prior = json_array();
		json_array_append_new(j->prior, pd_job_to_json(j));
		for (size_t i = 0; i < j->nfetched; i++) {
			free(j->fetched[i].path);
			free(j->fetched[i].data);
		}
		j->nfetched = 0;
	}
	j->finished_us = pd_wall_us();
}

/* ---- the observation record (the native API's answer, the store's row) ------------------ */

/* The record of a step, or null when it did not run (or there was no memory for it). */
static json_t *step_json(bool done, const pd_result *r)
{
	json_t *o = done ? pd_result_json(r, true) : NULL;
	return o ? o : json_null();
}

/* The attempt's four cost segments, as paddock exec's record has them for its own sandbox: what
 * made the pooled sandbox ready (its creation, or the reset that began this use: "ready_by"), the
 * pool's preparation of it (the template's files, its warm-up), the execs, and the reset or
 * teardown that ended the use, null until the reclaimer has done it (the stored record is then
 * completed: pd_store_reclaimed); and the request's wait to acquire the sandbox (on a miss it
 * includes the creation and preparation). null when no sandbox was used. */
static json_t *costs_json(const pd_job *j, uint64_t exec_us)
{
	if (!j->use_id[0])
		return json_null();
	return json_pack("{s:f,s:s,s:f,s:f,s:f,s:n}", "create_ms", (double)j->costs.ready_us / 1000.0, "ready_by",
			 j->costs.by_reset ? "reset" : "create", "prepare_ms", (double)j->costs.prepare_us / 1000.0,
			 "acquire_ms", (double)j->acquire_us / 1000.0, "exec_ms", (double)exec_us / 1000.0, "teardown_ms");
}

static json_t *image_json(const char *name, const char *digest)
{
	return json_pack("{s:o,s:o}", "name", name[0] ? pd_json_text(name) : json_null(), "digest",
			 digest[0] ? json_string(digest) : json_null());
}

/* what a stage ran on (the stage's record names it: pd_result_json), else what the attempt
 * resolved, else (it never reached a template: a queue timeout) the request's image */
static void job_image(const pd_job *j, const char **name, const char **digest)
{
	const pd_result *r = j->ran ? &j->run_r : j->compiled ? &j->compile_r : NULL;
	*name = r ? r->image_name : j->image_name[0] || j->image_digest[0] ? j->image_name : j->image;
	*digest = r ? r->image_digest : j->image_digest;
	if (r && !(*name)[0] && !(*digest)[0])
		*name = "host";
}

json_t *pd_job_image_json(const pd_job *j)
{
	const char *name, *digest;
	job_image(j, &name, &digest);
	return image_json(name, digest);
}

void pd_record_head_json(json_t *o, const pd_record_head *h)
{
	json_object_set_new(o, "task_id", pd_json_text(h->task_id));
	json_object_set_new(o, "problem_id", pd_json_text(h->problem_id));
	json_object_set_new(o, "problem_version", pd_json_text(h->problem_version));
	json_object_set_new(o, "language", pd_json_text(h->language));
	json_object_set_new(o, "template", pd_json_text(h->template_name));
	json_object_set_new(o, "template_version", h->template_version[0] ? json_string(h->template_version) : json_null());
	json_object_set_new(o, "isolation", json_string(h->isolation));
	json_object_set_new(o, "image", image_json(h->image_name, h->image_digest));
}

json_t *pd_job_to_json(const pd_job *j)
{
	json_t *o = json_object();
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	/* the tier it ran under: the run's (the one asked for, or the template's own) */
	pd_record_head h = {.task_id = j->task_id, .problem_id = j->problem_id, .problem_version = j->problem_version,
			    .language = j->language, .template_name = j->template_name,
			    .template_version = j->template_version, .isolation = api_isolation_of(j)};
	job_image(j, &h.image_name, &h.image_digest);
	pd_record_head_json(o, &h);
	json_object_set_new(o, "risk_list", json_boolean(j->risk_list));
	json_object_set_new(o, "attempt", json_integer(j->attempts));
	json_object_set_new(o, "sandbox_id", json_string(j->sandbox_id));
	json_object_set_new(o, "use_id", j->use_id[0] ? json_string(j->use_id) : json_null());
	json_object_set_new(o, "node", json_string(j->node[0] ? j->node : host));
	if (j->request_id[0])
		json_object_set_new(o, "request_id", json_string(j->request_id));
	json_object_set_new(o, "queued_at", json_integer((json_int_t)(j->queued_us / 1000)));
	json_object_set_new(o, "started_at", json_integer((json_int_t)(j->started_us / 1000)));
	json_object_set_new(o, "finished_at", json_integer((json_int_t)(j->finished_us / 1000)));
	json_object_set_new(o, "queue_ms", json_integer(j->started_us > j->queued_us && j->queued_us
								 ? (json_int_t)((j->started_us - j->queued_us) / 1000)
								 : 0));
	uint64_t exec_us = (j->compiled ? j->compile_r.exec_us : 0) + (j->ran ? j->run_r.exec_us : 0);
	uint64_t total_us = j->finished_us > j->started_us ? j->finished_us - j->started_us : 0;
	json_object_set_new(o, "exec_ms", json_real(exec_us / 1000.0));
	json_object_set_new(o, "setup_ms", json_real(total_us > exec_us ? (total_us - exec_us) / 1000.0 : 0));
	/* pooled sandboxes are torn down off the request path; the pools count residue failures */
	json_object_set_new(o, "teardown", json_string("deferred to the pool reclaimer"));
	json_object_set_new(o, "costs", costs_json(j, exec_us));
	/* "pending" until the reclaimer has checked; the stored record is then completed */
	json_object_set_new(o, "residue", j->use_id[0] ? json_string("pending") : json_null());
	const pd_result *r = j->ran ? &j->run_r : j->compiled ? &j->compile_r : NULL;
	json_object_set_new(o, "status", json_string(r ? pd_status_name(r->status) : "XX"));
	json_object_set_new(o, "failure_class", json_string(pd_failure_name(j->failure)));
	json_object_set_new(o, "error", pd_json_text(j->error));
	pd_job_verdict_t v;
	pd_job_verdict(j, &v);
	json_t *verdict = json_object();
	json_object_set_new(verdict, "output", json_string(v.output));
	/* from the audit's evidence; never "pass" for a run nobody watched */
	json_object_set_new(verdict, "process", api_process_json(j));
	json_object_set_new(verdict, "resources", json_string(v.resources));
	json_object_set_new(o, "verdict", verdict);
	json_object_set_new(o, "usable", json_boolean(v.usable));
	json_object_set_new(o, "compile", step_json(j->compiled, &j->compile_r));
	json_object_set_new(o, "run", step_json(j->ran, &j->run_r));
	json_object_set_new(o, "files", api_files_json(j));
	/* the run's whole output was kept past the record's head and tail: GET
	 * /v1/runs/{task_id}/output?stream=stdout|stderr&attempt=N serves it for an hour at most */
	json_object_set_new(o, "output_kept", json_boolean(j->output_kept));
	json_object_set_new(o, "audit", api_audit_json(j));
	return o;
}

