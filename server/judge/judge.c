/* The judging pipeline: compile the submission once, run every test against the built program in a
 * clean sandbox (the pools' reset makes each one cheap), check each output, score, decide the
 * verdict and the reward, and remember verdicts a rerun would reproduce.
 *
 * Where things run: the candidate's program gets its own file and one test's input on stdin, in a
 * sandbox of its language's template; a checker program gets the input, the candidate's output and
 * the answer as files in a sandbox of the judge template; built-in checkers are pure functions in
 * the daemon. Nothing the candidate prints can reach the verdict except through the checker. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

struct pd_judge {
	pd_pools *pools;
	pd_jcache *cache;
	pthread_mutex_t mu;
	uint64_t judged, judge_errors, checker_ms, by_output[5], seq;
	uint64_t by_process[5], audit_kinds[PD_AK_N];
};


pd_judge *pd_judge_new(pd_pools *pools, const pd_judge_cfg *c, pd_err *e)
{
	pd_judge *j = calloc(1, sizeof *j);
	if (!j) {
		pd_fail(e, ENOMEM, "judge");
		return NULL;
	}
	j->pools = pools;
	j->cache = pd_jcache_new(c ? c->cache_entries : 0);
	if (!j->cache) {
		free(j);
		pd_fail(e, ENOMEM, "judge cache");
		return NULL;
	}
	pthread_mutex_init(&j->mu, NULL);
	return j;
}

void pd_judge_free(pd_judge *j)
{
	if (!j)
		return;
	pd_jcache_free(j->cache);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

void pd_judge_opts_default(pd_judge_opts *o)
{
	memset(o, 0, sizeof *o);
	o->stop_at_first_failure = -1;
	o->rule = pd_reward_rule_default();
	o->judge_retries = 1;
	o->infra_retries = 1;
}

/* The judge template: the problem's, else "judge" if the pools have one, else the language's. */
static const char *judge_template(pd_judge *j, const pd_problem *p, const pd_jsource *s)
{
	if (p->judge_template[0])
		return p->judge_template;
	if (pd_pools_template(j->pools, "judge"))
		return "judge";
	const pd_language *l = pd_language_find(s->language);
	return l ? l->template : "bash";
}

static int prepare_one(pd_judge *j, const pd_problem *p, pd_jsource *s, const char *what, pd_err *e)
{
	if (s->prepared)
		return 0;
	const pd_language *l = pd_language_find(s->language);
	if (!l)
		return pd_refuse(e, "%s: %s: language %s is not known", p->origin, what, s->language);
	char msg[1024];
	int rc = pd_jprog_build(j->pools, l, NULL, s->source, s->source_len, p->compile_ms, &s->built, &s->built_len,
				msg, sizeof msg, NULL, NULL, e);
	if (rc == 1)
		return pd_refuse(e, "%s: %s does not compile: %.700s", s->file, what, msg);
	if (rc < 0)
		return pd_err_prefix(e, "%s: %s could not be built: ", s->file, what);
	if (!pd_pools_template(j->pools, judge_template(j, p, s)))
		return pd_refuse(e, "%s: %s: no template '%s' to run it in", p->origin, what, judge_template(j, p, s));
	s->prepared = true;
	return 0;
}

/* Each template a submission to p may run in (its own, else every template: a language's is any
 * of them) whose audit policy plants a decoy with a test's expected output as its answer. */
static int check_template_decoys(pd_judge *j, const pd_problem *p, pd_err *e)
{
	size_t n = 0;
	pd_pool_stats *st = pd_pools_stats(j->pools, &n);
	int rc = 0;
	for (size_t i = 0; st && i < n && rc == 0; i++) {
		if (p->template_name[0] && strcmp(p->template_name, st[i].template_name))
			continue;
		const pd_template *t = pd_pools_template(j->pools, st[i].template_name);
		if (!t || !t->audit)
			continue;
		char whose[600];
		snprintf(whose, sizeof whose, "%s: template %s", p->origin, st[i].template_name);
		rc = pd_judge_check_decoys(p, t->audit, whose, e);
	}
	free(st);
	return rc;
}

int pd_judge_prepare(pd_judge *j, pd_problem *p, pd_err *e)
{
	if (p->episode)
		return 0; /* nothing to build: its command runs in the session's fork */
	if (check_template_decoys(j, p, e) < 0)
		return -1;
	if (p->checker.mode == PD_CHK_PROGRAM && prepare_one(j, p, &p->checker_prog, "checker", e) < 0)
		return -1;
	if (p->checker.mode == PD_CHK_INTERACTIVE && prepare_one(j, p, &p->interactor, "interactor", e) < 0)
		return -1;
	return 0;
}

static uint64_t now_ms(void)
{
	return pd_now_us() / 1000;
}

static pd_tstatus of_status(const pd_jrun *x)
{
	switch (x->r.status) {
	case PD_OK: return x->r.spill_lost[0] ? PD_T_OL : PD_T_AC;
	case PD_RE: return PD_T_RE;
	case PD_SG: return PD_T_SG;
	case PD_TO: return PD_T_TO;
	case PD_ML: return PD_T_ML;
	case PD_OL: return PD_T_OL;
	default: return PD_T_XX;
	}
}

/* Runs a checker program over one test, in its own sandbox; retried once when it fails. */
static void run_checker(pd_judge *j, const pd_problem *p, const pd_jtest *t, const pd_jrun *cx, const pd_judge_opts *o,
			pd_check_result *cr, pd_jtest_result *tr, pd_judged *d)
{
	const pd_jsource *s = &p->checker_prog;
	pd_jprog prog;
	pd_jprog_init(&prog, pd_language_find(s->language), judge_template(j, p, s), s->built, s->built_len);
	bool kattis = p->checker.convention == PD_CONV_KATTIS;
	pd_jfile files[] = {{"/work/input", t->input, t->input_len},
			    {"/work/output", cx->out ? cx->out : "", cx->out_len},
			    {"/work/answer", t->answer, t->answer_len}};
	char *targs[] = {(char *)"input", (char *)"output", (char *)"answer", NULL};
	char *kargs[] = {(char *)"input", (char *)"answer", (char *)"feedback/", NULL};
	for (unsigned a = 0; a <= o->judge_retries; a++) {
		pd_jrun x;
		memset(&x, 0, sizeof x);
		x.files = files;
		x.nfiles = 3;
		x.extra_args = kattis ? kargs : targs;
		x.stdin_fd = -1;
		x.stdout_fd = -1;
		if (kattis) { /* Kattis validators read the team's output on stdin */
			x.stdin_data = cx->out ? cx->out : "";
			x.stdin_len = cx->out_len;
		}
		x.want_feedback = kattis;
		x.cpu_ms = p->interactor_time_ms;
		x.wall_ms = p->interactor_time_ms * 2;
		x.output_bytes = 1u << 20;
		pd_err e = {0};
		int rc = pd_jprog_run(j->pools, &prog, &x, &e);
		tr->checker_attempts = a + 1;
		if (rc < 0) {
			memset(cr, 0, sizeof *cr);
			cr->status = PD_T_JE;
			snprintf(cr->message, sizeof cr->message, "checker sandbox: %s", PD_ERR_STR(&e));
		} else {
			pd_check_program_verdict(p->checker.convention, &x.r, x.feedback, cr);
			d->checker_ms += x.r.cpu_ms;
			d->cpu_ms += x.r.cpu_ms;
		}
		pd_jrun_free(&x);
		if (cr->status != PD_T_JE)
			return;
		d->judge_errors++;
	}
}

static bool is_cancelled(const pd_judge_opts *o)
{
	return o->job && pd_job_is_cancelled(o->job);
}

/* The last line of s[0..n) that starts with the harness's mark, without it (malloc'd), or NULL. */
static char *harness_line(const char *s, size_t n)
{
	const size_t ml = sizeof PD_JHARNESS_SAYS - 1;
	char *found = NULL;
	for (size_t i = 0; i + ml <= n; i++) {
		if ((i && s[i - 1] != '\n') || memcmp(s + i, PD_JHARNESS_SAYS, ml))
			continue;
		const char *end = memchr(s + i + ml, '\n', n - i - ml);
		size_t l = (end ? (size_t)(end - s) : n) - i - ml;
		free(found);
		found = strndup(s + i + ml, l < 255 ? l : 255);
	}
	return found;
}

/* What a test's record keeps of the candidate's stderr: its last PD_JTEST_STDERR_MAX bytes (of
 * what the capture kept: the tail when it was cut), and for a call-based test the harness's own
 * message, so that a run the harness could not make (a misnamed function) says why rather than
 * only its exit status. Out of memory leaves them NULL. */
static void keep_stderr(pd_jtest_result *tr, const pd_result *r, bool call_based)
{
	const pd_output *o = &r->err;
	tr->stderr_bytes = o->total;
	const char *s = o->truncated && o->tail_len ? o->tail : o->head;
	size_t n = o->truncated && o->tail_len ? o->tail_len : o->head_len;
	if (s && n) {
		size_t from = n > PD_JTEST_STDERR_MAX ? n - PD_JTEST_STDERR_MAX : 0;
		tr->stderr_tail = strndup(s + from, n - from);
	}
	if (call_based && r->status == PD_RE && r->exit_code == 3) {
		tr->harness = harness_line(s, n);
		if (!tr->harness && o->head_len && s != o->head)
			tr->harness = harness_line(o->head, o->head_len);
	}
}

/* One test: run the candidate (and the interactor), check, fill tr. */
static void test_once(pd_judge *j, const pd_problem *p, const pd_jtest *t, const pd_jprog *cand, const pd_judge_opts *o,
		      const pd_audit_policy *pol, pd_sandbox *shared, pd_jtest_result *tr, pd_judged *d, bool *startup)
{
	pd_jtest_result_clear(tr);
	pd_jrun x, ix;
	for (unsigned a = 0; a <= o->infra_retries; a++) {
		memset(&x, 0, sizeof x);
		memset(&ix, 0, sizeof ix);
		x.stdin_fd = -1;
		x.stdout_fd = -1;
		x.cpu_ms = p->time_ms;
		x.wall_ms = p->time_ms * 2 + 1000;
		x.memory_bytes = p->memory_bytes;
		x.output_bytes = p->output_bytes;
		x.audit = pol; /* the candidate's run only: never the checker's or the interactor's */
		x.job = o->job;
		x.sandbox = shared; /* one_sandbox: the tests' common one */
		char *call_args[] = {(char *)p->fn_name, NULL};
		pd_jfile harness;
		if (p->call_based) { /* harness.c */
			if (pd_jharness_file(cand->lang, &harness)) {
				x.files = &harness;
				x.nfiles = 1;
			}
			x.extra_args = call_args;
		}
		pd_err e = {0}, ie = {0};
		int rc;
		if (p->checker.mode == PD_CHK_INTERACTIVE) {
			const pd_jsource *s = &p->interactor;
			pd_jprog inter;
			pd_jprog_init(&inter, pd_language_find(s->language), judge_template(j, p, s), s->built, s->built_len);
			ix.cpu_ms = p->interactor_time_ms;
			ix.wall_ms = x.wall_ms + 1000;
			ix.output_bytes = p->output_bytes;
			rc = pd_jinteract(j->pools, cand, &x, &inter, &ix, p->checker.convention, t, &e, &ie);
			if (rc == 0) {
				d->checker_ms += ix.r.cpu_ms;
				d->cpu_ms += ix.r.cpu_ms;
			}
		} else {
			x.stdin_data = t->input;
			x.stdin_len = t->input_len;
			rc = pd_jprog_run(j->pools, cand, &x, &e);
		}
		if (rc == 0 && x.r.status != PD_XX)
			break;
		if (is_cancelled(o)) {
			/* killed for a client that left, or never started: not a sandbox fault to retry */
			pd_jrun_free(&x);
			pd_jrun_free(&ix);
			tr->status = PD_T_SKIPPED;
			snprintf(tr->message, sizeof tr->message, "cancelled: the client left");
			return;
		}
		/* the sandbox failed, not the program: a new sandbox, once */
		snprintf(tr->message, sizeof tr->message, "%s", rc < 0 ? PD_ERR_STR(&e) : x.r.error);
		*startup = rc == -2;
		pd_jrun_free(&x);
		pd_jrun_free(&ix);
		if (a == o->infra_retries) {
			tr->status = PD_T_XX;
			pd_judged_audit_unseen(d);
			return;
		}
	}
	*startup = false;
	pd_judged_audit_add(d, t->name, &x);
	tr->message[0] = 0;
	tr->time_ms = x.r.cpu_ms;
	tr->wall_ms = x.r.wall_ms;
	snprintf(tr->use_id, sizeof tr->use_id, "%s", x.r.use_id);
	tr->memory_kb = x.r.memory_peak_bytes / 1024;
	d->cpu_ms += x.r.cpu_ms;
	tr->status = of_status(&x);
	keep_stderr(tr, &x.r, p->call_based);
	pd_check_result cr;
	memset(&cr, 0, sizeof cr);
	if (p->checker.mode == PD_CHK_INTERACTIVE) {
		pd_check_program_verdict(p->checker.convention, &ix.r, ix.feedback, &cr);
		snprintf(tr->checker_message, sizeof tr->checker_message, "%s", cr.message);
		tr->checker_attempts = 1;
		if (cr.status == PD_T_JE) {
			d->judge_errors++;
			tr->status = PD_T_JE;
		} else if (cr.status != PD_T_AC || tr->status == PD_T_AC) {
			/* the interactor's wrong answer stands over a candidate that then starved */
			tr->status = cr.status;
			tr->score = cr.score;
		}
	} else if (tr->status == PD_T_AC) {
		if (p->checker.mode == PD_CHK_PROGRAM) {
			run_checker(j, p, t, &x, o, &cr, tr, d);
		} else {
			pd_err e = {0};
			if (pd_check(&p->checker, x.out, x.out_len, t->answer, t->answer_len, &cr, &e) < 0) {
				cr.status = PD_T_JE;
				snprintf(cr.message, sizeof cr.message, "%s", PD_ERR_STR(&e));
			}
			if (cr.status == PD_T_JE)
				d->judge_errors++;
		}
		tr->status = cr.status;
		tr->score = cr.score;
		snprintf(tr->checker_message, sizeof tr->checker_message, "%s", cr.message);
	}
	if (tr->status != PD_T_AC && tr->status != PD_T_PC)
		tr->score = 0;
	if (tr->status == PD_T_RE)
		snprintf(tr->message, sizeof tr->message, "exit code %d", x.r.exit_code);
	else if (tr->status == PD_T_SG)
		snprintf(tr->message, sizeof tr->message, "signal %d", x.r.signal);
	else if (tr->status == PD_T_OL)
		snprintf(tr->message, sizeof tr->message, "output over %llu bytes", (unsigned long long)p->output_bytes);
	pd_jrun_free(&x);
	pd_jrun_free(&ix);
}

/* One test; an interactive one whose interactor failed is run again, whole (the candidate talks
 * to the interactor as it goes: there is no output to check again), judge_retries times. */
static void one_test(pd_judge *j, const pd_problem *p, const pd_jtest *t, const pd_jprog *cand, const pd_judge_opts *o,
		     const pd_audit_policy *pol, pd_sandbox *shared, pd_jtest_result *tr, pd_judged *d, bool *startup)
{
	for (unsigned a = 0;; a++) {
		test_once(j, p, t, cand, o, pol, shared, tr, d, startup);
		tr->checker_attempts = p->checker.mode == PD_CHK_INTERACTIVE ? a + 1 : tr->checker_attempts;
		if (p->checker.mode != PD_CHK_INTERACTIVE || tr->status != PD_T_JE || a >= o->judge_retries)
			return;
	}
}

static void count(pd_judge *j, const pd_judged *d)
{
	pthread_mutex_lock(&j->mu);
	j->judged++;
	j->judge_errors += d->judge_errors;
	j->checker_ms += d->checker_ms;
	if ((unsigned)d->v.output < 5)
		j->by_output[d->v.output]++;
	if ((unsigned)d->v.process < 5)
		j->by_process[d->v.process]++;
	for (int k = 0; d->audited && !d->cache_hit && k < PD_AK_N; k++)
		j->audit_kinds[k] += d->audit_kinds[k];
	pthread_mutex_unlock(&j->mu);
}

static void set_ids(pd_judge *j, const pd_problem *p, const char *language, const char *tpl, pd_judged *d)
{
	snprintf(d->problem_id, sizeof d->problem_id, "%s", p->id);
	snprintf(d->problem_version, sizeof d->problem_version, "%s", p->version);
	snprintf(d->language, sizeof d->language, "%s", language);
	snprintf(d->template_name, sizeof d->template_name, "%s", tpl);
	pthread_mutex_lock(&j->mu);
	uint64_t n = ++j->seq;
	pthread_mutex_unlock(&j->mu);
	if (!d->attempt_id[0])
		snprintf(d->attempt_id, sizeof d->attempt_id, "%s%s%llu", d->task_id[0] ? d->task_id : "judge",
			 d->task_id[0] ? "#" : "-", (unsigned long long)n);
}

/* The output level, the score and the failure class from the tests. */
static void decide(const pd_problem *p, pd_judged *d)
{
	double total = 0, got = 0;
	bool all = true, any_je = false, any_xx = false, res_fail = false;
	const char *fc = "none";
	for (size_t i = 0; i < d->ntests; i++) {
		const pd_jtest_result *t = &d->tests[i];
		total += p->tests[i].weight;
		got += p->tests[i].weight * t->score;
		all &= t->status == PD_T_AC;
		any_je |= t->status == PD_T_JE;
		any_xx |= t->status == PD_T_XX;
		if (!res_fail && (t->status == PD_T_TO || t->status == PD_T_ML || t->status == PD_T_OL)) {
			res_fail = true;
			fc = t->status == PD_T_TO ? "exec_timeout" : t->status == PD_T_ML ? "oom" : "output_limit";
		}
	}
	d->v.score = total > 0 ? got / total : 0;
	if (d->v.score > 1)
		d->v.score = 1;
	d->v.output = all ? PD_LV_PASS : d->v.score <= 0 ? PD_LV_FAIL : PD_LV_PARTIAL;
	d->v.resources = res_fail ? PD_LV_FAIL : PD_LV_PASS;
	if (any_je)
		fc = "judge_error";
	else if (any_xx && !d->v.failure_class)
		fc = "internal_error";
	if (!d->v.failure_class || !strcmp(d->v.failure_class, "none"))
		d->v.failure_class = fc;
	if (pd_failure_is_infra(d->v.failure_class))
		d->v.output = any_je || any_xx ? PD_LV_NOT_JUDGED : d->v.output;
}

int pd_judge_submit(pd_judge *j, const pd_problem *p, const char *language, const char *code, size_t code_len,
		    const pd_judge_opts *o, pd_judged *d, pd_err *e)
{
	pd_judge_opts defaults;
	bool keyed = false; /* the cache's key was computed: the cache may be read and written */
	unsigned char key[32];
	if (!o) {
		pd_judge_opts_default(&defaults);
		o = &defaults;
	}
	const pd_language *l = pd_language_find(language);
	if (!l) {
		char names[256];
		pd_language_names(names, sizeof names);
		return pd_refuse(e, "language: '%s' is not a language paddock knows (%s)", language, names);
	}
	if (p->call_based && !pd_jharness_supported(l))
		return pd_refuse(e, "language: problem %s is call-based (fn_name %s): python, node or cpp", p->id,
				 p->fn_name);
	if ((p->checker.mode == PD_CHK_PROGRAM && !p->checker_prog.prepared) ||
	    (p->checker.mode == PD_CHK_INTERACTIVE && !p->interactor.prepared))
		return pd_refuse(e, "problem %s: its checker was not prepared (pd_judge_prepare)", p->id);
	uint64_t t0 = now_ms();
	const char *tpl_name = p->template_name[0] ? p->template_name : l->template;
	d->v.process = PD_LV_NOT_AUDITED; /* no audit ran: never "pass" without evidence */
	pd_audit_policy *pol = NULL;      /* the audit's policy, once the template is known */
	d->v.resources = PD_LV_NOT_JUDGED;
	set_ids(j, p, l->name, tpl_name, d);
	/* an image (the request's, else the problem's): the candidate runs in the pool of (template,
	 * image), its requires checked against the image (docs/images.md) */
	const char *img = o->image[0] ? o->image : p->image;
	char pool[64];
	if (img[0]) {
		pd_err ie = {0};
		if (pd_pools_image(j->pools, tpl_name, img, pool, sizeof pool, d->image_digest, &ie) < 0) {
			d->v.failure_class = ie.code == EAGAIN ? "startup_failure" : "dependency_missing";
			snprintf(d->error, sizeof d->error, "%s", PD_ERR_STR(&ie));
			goto done;
		}
		if (!pd_image_ref_is_digest(img))
			snprintf(d->image_name, sizeof d->image_name, "%s", img);
		tpl_name = pool;
	} else {
		/* the template's own image, or the host image (its digest the default image's id) */
		pd_pools_template_image(j->pools, pd_pools_template(j->pools, tpl_name), d->image_name,
					sizeof d->image_name, d->image_digest, sizeof d->image_digest);
	}
	/* a tier (the request's, else the problem's): the (template or image) pool's recipe under it,
	 * a pool of its own made on first use; the edge checked the template allows it. Only the
	 * candidate's runs move: checkers and interactors run judge material in the judge template. */
	const char *iso = o->isolation[0] ? o->isolation : p->isolation;
	snprintf(d->isolation, sizeof d->isolation, "%s", iso);
	char tpool[64];
	if (iso[0]) {
		pd_err te = {0};
		if (pd_pools_tier(j->pools, tpl_name, pd_isolation_parse(iso), tpool, sizeof tpool, &te) < 0) {
			d->v.failure_class = te.code == EAGAIN ? "startup_failure" : "dependency_missing";
			snprintf(d->error, sizeof d->error, "%s", PD_ERR_STR(&te));
			goto done;
		}
		tpl_name = tpool;
	}
	const pd_template *tpl = pd_pools_template(j->pools, tpl_name);
	if (tpl)
		snprintf(d->template_version, sizeof d->template_version, "%s", tpl->version);
	if (tpl) /* the tier it runs under, named or the template's own */
		snprintf(d->isolation, sizeof d->isolation, "%s", pd_isolation_name(tpl->isolation));
	if (!tpl || !tpl->available) {
		d->v.failure_class = "dependency_missing";
		snprintf(d->error, sizeof d->error, "template '%s' %s", tpl_name,
			 tpl ? "lacks its toolchain" : "does not exist");
		goto done;
	}
	const pd_jsource *js = p->checker.mode == PD_CHK_PROGRAM ? &p->checker_prog
			       : p->checker.mode == PD_CHK_INTERACTIVE ? &p->interactor
								      : NULL;
	const pd_template *jt = js ? pd_pools_template(j->pools, judge_template(j, p, js)) : NULL;
	bool stop = o->stop_at_first_failure < 0 ? p->stop_at_first_failure : o->stop_at_first_failure > 0;
	/* the default audit where the tier has one: gvisor offers none (the candidate would fail to
	 * start), and a default must not make a judging impossible; an audit asked for still does */
	const pd_audit_policy *req = o->audit;
	if (req && o->audit_default && tpl->isolation == PD_ISO_GVISOR)
		req = NULL;
	if (pd_judge_policy(tpl, p, req, &pol, e) < 0)
		return -1;
	if (o->risky && pd_judge_policy_risky(&pol, e) < 0) {
		pd_audit_policy_free(pol);
		return -1;
	}
	d->risk_list = o->risky;
	d->v.audit_asked = pol != NULL;
	if (pol)
		pd_judged_audit_start(d);
	/* no key (out of memory): no cache, neither read nor written */
	keyed = !o->no_cache && pd_jcache_key(p, l->name, code, code_len, tpl, jt, stop, pol, key);
	d->cache_used = keyed;
	if (keyed) {
		pd_judged hit;
		if (pd_jcache_get(j->cache, key, &hit)) {
			/* the stored verdict with this request's ids */
			memcpy(hit.task_id, d->task_id, sizeof hit.task_id);
			memcpy(hit.group_id, d->group_id, sizeof hit.group_id);
			memcpy(hit.sample_id, d->sample_id, sizeof hit.sample_id);
			memcpy(hit.attempt_id, d->attempt_id, sizeof hit.attempt_id);
			*d = hit;
			d->risk_list = o->risky;
			d->cache_hit = true;
			d->cache_used = true;
			pd_verdict_decide(&d->v, &o->rule); /* this request's rule */
			d->wall_ms = now_ms() - t0;
			count(j, d);
			pd_audit_policy_free(pol);
			return 0;
		}
	}
	/* compile once */
	char *built = NULL;
	size_t built_len = 0;
	int rc = -1;
	pd_err ce = {0};
	char *harnessed = NULL; /* C++ call-based: the submission with its harness */
	size_t harnessed_len = 0;
	if (p->call_based && pd_jharness_source(l, p, code, code_len, &harnessed, &harnessed_len, &ce) < 0) {
		d->v.failure_class = "internal_error";
		snprintf(d->error, sizeof d->error, "harness: %s", PD_ERR_STR(&ce));
		goto done;
	}
	for (unsigned a = 0; a <= o->infra_retries; a++) {
		rc = pd_jprog_build(j->pools, l, tpl_name, harnessed ? harnessed : code, harnessed ? harnessed_len : code_len,
				    p->compile_ms, &built, &built_len, d->compile_message, sizeof d->compile_message,
				    &d->cpu_ms, o->job, &ce);
		if (rc >= 0 || rc == -3 || is_cancelled(o))
			break;
	}
	free(harnessed);
	d->compiled = l->compile != NULL;
	if (is_cancelled(o)) {
		free(built);
		d->v.failure_class = "cancelled";
		snprintf(d->error, sizeof d->error, "cancelled: the client left before the compile ended");
		goto done;
	}
	if (rc < 0) {
		d->v.failure_class = rc == -2 ? "startup_failure" : ce.kind == PD_EK_DEPENDENCY ? "dependency_missing"
											: "internal_error";
		snprintf(d->error, sizeof d->error, "compile: %s", PD_ERR_STR(&ce));
		goto done;
	}
	if (rc == 1) {
		/* the model's failure: a failed output, reward as such, no test run */
		d->compile_error = true;
		d->v.failure_class = "compile_error";
		d->v.output = PD_LV_FAIL;
		d->v.score = 0;
		goto done;
	}
	pd_jprog cand;
	pd_jprog_init(&cand, l, tpl_name, built, built_len);
	if (p->call_based)
		pd_jharness_argv(l, &cand);
	d->tests = calloc(p->ntests, sizeof *d->tests);
	if (!d->tests) {
		free(built);
		d->v.failure_class = "internal_error";
		snprintf(d->error, sizeof d->error, "out of memory");
		goto done;
	}
	d->ntests = p->ntests;
	/* one_sandbox: the tests run in order in one sandbox, which keeps what each left (files,
	 * /tmp) for the next; the judge's material stays out of it as always */
	pd_sandbox *shared = NULL;
	if (p->one_sandbox && !(shared = pd_pool_acquire(j->pools, tpl_name, NULL, &ce))) {
		free(built);
		d->v.failure_class = "startup_failure";
		snprintf(d->error, sizeof d->error, "one_sandbox: %s", ce.msg);
		goto done;
	}
	bool failed = false, cancelled = false;
	for (size_t i = 0; i < p->ntests; i++) {
		pd_jtest_result *tr = &d->tests[i];
		if (stop && failed) {
			tr->status = PD_T_SKIPPED;
			continue;
		}
		if (p->total_ms && now_ms() - t0 > p->total_ms) {
			tr->status = PD_T_TO;
			snprintf(tr->message, sizeof tr->message, "not run: the total time limit (%llu ms) passed",
				 (unsigned long long)p->total_ms);
			failed = true;
			continue;
		}
		bool startup = false;
		if (!is_cancelled(o))
			one_test(j, p, &p->tests[i], &cand, o, pol, shared, tr, d, &startup);
		if (shared && pd_sandbox_state(shared) != PD_READY) {
			/* a run that had to be killed whole (a time limit, a crash of its init) leaves no
			 * sandbox to go on in: the next test starts in a fresh one */
			pd_pool_release(j->pools, shared);
			pd_err se = {0};
			shared = pd_pool_acquire(j->pools, tpl_name, NULL, &se);
			if (!shared && i + 1 < p->ntests) {
				d->v.failure_class = "startup_failure";
				snprintf(d->error, sizeof d->error, "one_sandbox: %s", se.msg);
				for (size_t k = i + 1; k < p->ntests; k++)
					d->tests[k].status = PD_T_SKIPPED;
				break;
			}
		}
		if (is_cancelled(o)) {
			/* the client left: nothing more runs (the running program was killed) */
			cancelled = true;
			for (size_t k = i; k < p->ntests; k++)
				d->tests[k].status = PD_T_SKIPPED;
			snprintf(d->error, sizeof d->error, "cancelled: the client left at test %s", p->tests[i].name);
			break;
		}
		if (tr->status == PD_T_XX) {
			d->v.failure_class = startup ? "startup_failure" : "internal_error";
			snprintf(d->error, sizeof d->error, "test %s: %s", p->tests[i].name, tr->message);
		}
		failed |= tr->status != PD_T_AC;
		/* an infrastructure failure ends the judging: the rest would be judged on a broken host */
		if (tr->status == PD_T_XX || tr->status == PD_T_JE) {
			for (size_t k = i + 1; k < p->ntests; k++)
				d->tests[k].status = PD_T_SKIPPED;
			break;
		}
	}
	if (shared)
		pd_pool_release(j->pools, shared);
	free(built);
	decide(p, d);
	if (cancelled) {
		/* no evidence either way: no output level, no reward, never cached */
		d->v.failure_class = "cancelled";
		d->v.output = PD_LV_NOT_JUDGED;
		d->v.resources = PD_LV_NOT_JUDGED;
	}
done:
	pd_judged_audit_decide(d);
	pd_audit_policy_free(pol);
	pd_verdict_decide(&d->v, &o->rule);
	d->wall_ms = now_ms() - t0;
	if (keyed && pd_jcache_cacheable(d))
		pd_jcache_put(j->cache, key, d);
	count(j, d);
	return 0;
}

int pd_judge_check_isolation(pd_judge *j, const pd_problem *p, const char *language, const char *isolation,
			     pd_err *e)
{
	const char *iso = isolation && isolation[0] ? isolation : p->isolation;
	if (!iso[0])
		return 0;
	const pd_language *l = pd_language_find(language);
	const char *tpl_name = p->template_name[0] ? p->template_name : l ? l->template : "";
	return pd_pools_tier_allowed(j->pools, tpl_name, pd_isolation_parse(iso), e);
}

int pd_judge_check_policy(pd_judge *j, const pd_problem *p, const char *language, const pd_audit_policy *req,
			  pd_err *e)
{
	const pd_language *l = pd_language_find(language);
	const char *tpl_name = p->template_name[0] ? p->template_name : l ? l->template : "";
	pd_audit_policy *pol = NULL;
	int rc = pd_judge_policy(pd_pools_template(j->pools, tpl_name), p, req, &pol, e);
	pd_audit_policy_free(pol);
	return rc;
}

void pd_jtest_result_clear(pd_jtest_result *t)
{
	free(t->stderr_tail);
	free(t->harness);
	memset(t, 0, sizeof *t);
}

void pd_judged_free(pd_judged *d)
{
	for (size_t i = 0; d->tests && i < d->ntests; i++)
		pd_jtest_result_clear(&d->tests[i]);
	free(d->tests);
	d->tests = NULL;
	d->ntests = 0;
	free(d->audit);
	d->audit = NULL;
	d->audit_len = 0;
}

void pd_judge_stats_get(pd_judge *j, pd_judge_stats *s)
{
	memset(s, 0, sizeof *s);
	pthread_mutex_lock(&j->mu);
	s->judged = j->judged;
	s->judge_errors = j->judge_errors;
	s->checker_ms = j->checker_ms;
	memcpy(s->by_output, j->by_output, sizeof s->by_output);
	memcpy(s->by_process, j->by_process, sizeof s->by_process);
	memcpy(s->audit_kinds, j->audit_kinds, sizeof s->audit_kinds);
	pthread_mutex_unlock(&j->mu);
	pd_jcache_stats(j->cache, &s->cache_hits, &s->cache_misses, &s->cache_entries, &s->cpu_ms_saved);
}
