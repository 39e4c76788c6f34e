/* paddock run FILE.jsonl: the main job. Every line is a run request (native schema, or
 * SandboxFusion's /run_code with "schema": "run_code" or its timeout fields); they go through the
 * same scheduler and warm pools as the daemon, in this process. Results are JSON lines (the same
 * records as the API, plus "line"), progress shows on a terminal, a summary ends the run. */
#define _GNU_SOURCE
#include "cli.h"
#include "jsonl.h"
#include "server.h"
#include "intake.h"
#include "judge/judge.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct run_state {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t total, done;
	FILE *out;
	double *lat;
	size_t nlat;
	uint64_t status[8];
	uint64_t judge_lines; /* judge lines: no one program status (pd_job_status_name) */
	uint64_t failure[PD_F_COUNT];
	pd_job **jobs; /* by request: set while submitted and not yet answered (for Ctrl-C) */
	judged_sum *judged; /* judge lines: the grading run's summary (run_judged.c) */
} run_state;

typedef struct line_ctx {
	run_state *st;
	size_t idx; /* in st->jobs */
	int line;
	bool run_code;
	uint64_t t0;
	json_t *expect; /* a judge line's expected verdict: {"output", "failure_class"} */
} line_ctx;

static void line_done(pd_job *j, void *arg)
{
	line_ctx *lc = arg;
	run_state *st = lc->st;
	json_t *o = j->execute ? pd_judge_job_record(j) : lc->run_code ? pd_job_to_run_code(j) : pd_job_to_json(j);
	json_object_set_new(o, "line", json_integer(lc->line));
	if (lc->run_code)
		json_object_set_new(o, "task_id", json_string(j->task_id));
	char *text = pd_json_dumps(o, JSON_COMPACT);
	const pd_result *r = j->ran ? &j->run_r : j->compiled ? &j->compile_r : NULL;
	pthread_mutex_lock(&st->mu);
	if (text)
		fprintf(st->out, "%s\n", text);
	st->lat[st->nlat++] = (pd_now_us() - lc->t0) / 1000.0;
	/* a judge line has no one program status (its tests have theirs), and its failure classes
	 * include the judge's own (compile_error): the judged summary counts them */
	if (j->execute) {
		st->judge_lines++;
		judged_sum_add(st->judged, o, lc->expect, lc->line);
	} else {
		st->status[r ? r->status : 7]++;
		st->failure[j->failure]++;
	}
	st->jobs[lc->idx] = NULL;
	st->done++;
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
	json_decref(o);
	json_decref(lc->expect);
	free(text);
	pd_job_free(j);
	free(lc);
}

/* Counts the record of a line that never ran (interrupted before it was submitted, refused at
 * admission) as line_done counts one that did: a judge line's in the judged summary under its
 * problem (named in its record too), against what it expected; a run line's in the program
 * statuses and failure classes. Takes expect. */
static void unrun_done(run_state *st, char *text, bool judge, const char *problem_id, json_t *expect, int line,
		       pd_failure f)
{
	json_t *o = judge && text ? json_loads(text, 0, NULL) : NULL;
	if (o && problem_id && *problem_id) {
		json_object_set_new(o, "problem_id", pd_json_text(problem_id));
		char *again = pd_json_dumps(o, JSON_COMPACT);
		if (again) {
			free(text);
			text = again;
		}
	}
	pthread_mutex_lock(&st->mu);
	fprintf(st->out, "%s\n", text ? text : "{}");
	if (judge) {
		st->judge_lines++;
		judged_sum_add(st->judged, o ? o : json_object(), expect, line);
	} else {
		st->status[7]++;
		st->failure[f]++;
	}
	st->done++;
	pthread_mutex_unlock(&st->mu);
	json_decref(o);
	json_decref(expect);
	free(text);
}

/* A line is the judge's when it carries a problem: an inline one, or a problem_id while
 * --problems is given. Without --problems, problem_id and problem_version are a run's ids,
 * as in POST /v1/runs: examples/requests.jsonl labels its lines with them. */
static bool judge_line(const json_t *req, bool have_problems)
{
	if (json_is_object(json_object_get(req, "problem")))
		return true;
	return have_problems && json_object_get(req, "problem_id");
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	/* the first one stops the batch cleanly; the second is the user insisting */
	if (interrupted++)
		_exit(130);
}

/* The record of a request that passed its checks but was not admitted. Its own deadline is its
 * own outcome (queue_timeout, as when it expires in the queue); anything else is the
 * infrastructure's (internal_error) and makes the run exit 2. */
static char *admission_record(int line, const char *task_id, pd_admit a, const char *why, bool *infra)
{
	*infra = a != PD_ADMIT_DEADLINE;
	return cli_run_unrun(line, task_id, a == PD_ADMIT_DEADLINE ? PD_F_QUEUE : PD_F_INTERNAL, why);
}

static void run_usage(FILE *f)
{
	fputs("usage: paddock run [options] REQUESTS.jsonl|-\n"
	      "\n"
	      "Runs every request line through the scheduler and warm pools in this process (no\n"
	      "server needed) and writes one result line each. A line is a native run request\n"
	      "(language+code, or template+cmd/shell, files, stdin, limits, ids) or a SandboxFusion\n"
	      "/run_code request (with \"schema\": \"run_code\", or its compile_timeout/run_timeout/\n"
	      "memory_limit_MB fields), or a judge request (an inline problem, or a problem_id when\n"
	      "--problems is given; language, code, group_id, sample_id...; docs/judge.md); a judge\n"
	      "line's \"expect\" ({\"output\", \"failure_class\"}) is checked and counted, \"note\"\n"
	      "ignored. Without --problems, problem_id and problem_version are a run's ids.\n"
	      "\n"
	      "  --problems DIR         the judge's problems (examples/problems)\n"
	      "  --cluster URLS         send the lines to a cluster's nodes (http://HOST:PORT, comma-\n"
	      "                         separated) instead of running them here; each line has a\n"
	      "                         request id, so retries never run it twice (docs/cluster.md)\n"
	      "  -o, --output FILE      results (default stdout)\n"
	      "  -j, --workers N        concurrent jobs (default 2 x CPUs)\n"
	      "  --templates FILE       templates (default: built-in)\n"
	      "  --warm N               READY sandboxes per template (default 2)\n"
	      "  --retries N            infrastructure retries (default 2)\n"
	      "  -q, --quiet            no progress bar\n"
	      "  -v, --verbose          the daemon's JSON log lines on stderr\n"
	      "\n"
	      "A line refused as a request (malformed, a bad field) is answered {\"line\", \"refused\":\n"
	      "\"bad_request\", \"error\"}; one whose deadline could not be met, status XX with\n"
	      "failure_class queue_timeout. Ctrl-C cancels what has not finished (each gets its\n"
	      "cancelled record) and prints the summary; a second Ctrl-C quits at once.\n"
	      "\n"
	      "exit: 0 when every line got its result (whatever the programs' verdicts), 2 when a line\n"
	      "was refused or the infrastructure could not run it, 130 after Ctrl-C.\n",
	      f);
}

typedef struct run_args {
	const char *outfile, *tfile, *problems_dir, *cluster;
	long workers, warm, retries;
	bool quiet;
} run_args;

/* The command line; 0, -1 after --help, or the exit status of a bad one. */
static int run_args_parse(int argc, char **argv, run_args *a)
{
	static const struct option opts[] = {{"help", no_argument, 0, 'h'},
					     {"output", required_argument, 0, 'o'},
					     {"workers", required_argument, 0, 'j'},
					     {"templates", required_argument, 0, 't'},
					     {"warm", required_argument, 0, 'n'},
					     {"retries", required_argument, 0, 'r'},
					     {"quiet", no_argument, 0, 'q'},
					     {"verbose", no_argument, 0, 'v'},
					     {"problems", required_argument, 0, 'P'},
					     {"cluster", required_argument, 0, 'C'},
					     {0, 0, 0, 0}};
	*a = (run_args){.warm = 2, .retries = 2};
	int c;
	optind = 1;
	pd_log_enable(false);
	while ((c = getopt_long(argc, argv, ":ho:j:qv", opts, NULL)) != -1) {
		switch (c) {
		case 'h': run_usage(stdout); return -1;
		case 'o': a->outfile = optarg; break;
		case 'j':
			if (!cli_count("--workers", optarg, 1, 1024, &a->workers))
				return EXIT_USAGE;
			break;
		case 't': a->tfile = optarg; break;
		case 'P': a->problems_dir = optarg; break;
		case 'n':
			if (!cli_count("--warm", optarg, 0, 1000, &a->warm))
				return EXIT_USAGE;
			break;
		case 'r':
			if (!cli_count("--retries", optarg, 0, 10, &a->retries))
				return EXIT_USAGE;
			break;
		case 'q': a->quiet = true; break;
		case 'v': pd_log_enable(true); break;
		case 'C': a->cluster = optarg; break;
		default: return cli_bad_option("run", "run", NULL, c, argv, opts);
		}
	}
	if (optind >= argc) {
		cli_error("run: which requests? (usage: paddock run REQUESTS.jsonl)");
		return EXIT_USAGE;
	}
	if (!cli_no_operand("run", argc, argv, optind + 1))
		return EXIT_USAGE;
	return 0;
}

/* What the lines run with, in this process: the requests read, and the daemon's parts. */
typedef struct run_env {
	json_t **reqs;
	int *lines;
	size_t n, bad; /* the requests read; the lines refused before (not JSON objects) */
	const char *problems_dir;
	bool quiet;
	pd_template *t;
	size_t nt;
	pd_ctx *ctx;
	pd_pools *pools;
	pd_judge *judge;
	pd_problem_set problems;
	pd_metrics *m;
	pd_sched *sched;
} run_env;

/* Reads and validates every line first: a bad line is reported (its record on out), the rest
 * still run. 0, or an exit status. */
static int run_read(FILE *in, FILE *out, run_env *env)
{
	size_t cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	int lineno = 0, lst;
	json_t *o;
	json_error_t je;
	while ((lst = cli_jsonl_next(in, &line, &lcap, &lineno, &o, &je)) != CLI_LINE_EOF) {
		if (lst != CLI_LINE_OK) {
			char msg[300];
			if (lst == CLI_LINE_NOT_OBJECT)
				snprintf(msg, sizeof msg, "not a JSON object: a JSON value of another type");
			else
				snprintf(msg, sizeof msg, "malformed JSON at column %d: %s", je.column, je.text);
			char *text = cli_run_refusal(lineno, NULL, msg);
			fprintf(out, "%s\n", text ? text : "{}");
			free(text);
			env->bad++;
			continue;
		}
		if (env->n == cap) {
			cap = cap ? cap * 2 : 256;
			env->reqs = realloc(env->reqs, cap * sizeof *env->reqs);
			env->lines = realloc(env->lines, cap * sizeof *env->lines);
			if (!env->reqs || !env->lines) {
				cli_error("out of memory");
				return EXIT_PADDOCK_FAILED;
			}
		}
		env->reqs[env->n] = o;
		env->lines[env->n++] = lineno;
	}
	free(line);
	return 0;
}

/* The templates (each pool at least --warm), the context, the pools, the judge and its problems
 * (every problem checked and its checker built before the first line runs), the scheduler.
 * 0, or an exit status. */
static int run_setup(const run_args *a, run_env *env)
{
	if (cli_load_templates(a->tfile, &env->t, &env->nt) < 0)
		return EXIT_USAGE;
	pd_template *t = env->t;
	for (size_t i = 0; i < env->nt; i++)
		if (t[i].pool_min < (uint32_t)a->warm) {
			t[i].pool_min = (uint32_t)a->warm;
			if (t[i].pool_max < t[i].pool_min)
				t[i].pool_max = t[i].pool_min;
		}
	pd_err e = {0};
	env->ctx = pd_ctx_new(NULL, &e);
	if (!env->ctx) {
		cli_error("%s", PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	for (size_t i = 0; i < env->nt; i++) {
		pd_template_check(env->ctx, &t[i]);
		if (!t[i].available)
			fprintf(stderr, "paddock: template %s: dependency_missing: %s\n", t[i].name, t[i].missing);
	}
	env->pools = pd_pools_new(env->ctx, t, env->nt, NULL, &e);
	if (!env->pools) {
		cli_error("%s", PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	env->judge = pd_judge_new(env->pools, NULL, &e);
	if (!env->judge) {
		cli_error("%s", PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	if (a->problems_dir) {
		if (pd_problems_load_dir(a->problems_dir, &env->problems, &e) < 0) {
			cli_error("%s", PD_ERR_STR(&e));
			return EXIT_USAGE;
		}
		for (size_t i = 0; i < env->problems.n; i++)
			if (pd_judge_prepare(env->judge, env->problems.p[i], &e) < 0) {
				cli_error("%s", PD_ERR_STR(&e));
				return EXIT_USAGE;
			}
	}
	env->m = pd_metrics_new();
	pd_sched_opts so = {0};
	so.workers = (unsigned)a->workers;
	/* -j is how many lines run at once, /run_code and Piston lines too: a batch's expected
	 * verdicts (a memory hog's ML before its wall limit) hold at that concurrency, as the user
	 * chose it, not at the daemon's SandboxFusion sharing */
	so.one_class = true;
	so.retries = (unsigned)a->retries;
	so.queue_max = env->n + 16; /* a batch is admitted whole: it is ours, not a flood */
	env->sched = pd_sched_new(env->pools, NULL, env->m, &so, &e);
	if (!env->sched) {
		cli_error("%s", PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	return 0;
}

/* Until every line has its record: the progress, and on Ctrl-C the cancelling of what is left.
 * Returns the seconds since t0. */
static double run_wait(run_state *st, pd_sched *sched, size_t n, bool quiet, uint64_t t0)
{
	bool tty = !quiet && isatty(STDERR_FILENO), cancelling = false;
	uint64_t said = t0;
	pthread_mutex_lock(&st->mu);
	while (st->done < st->total) {
		if (interrupted && !cancelling) {
			/* queued jobs end as cancelled, running ones are killed: every line gets its record */
			cancelling = true;
			if (tty)
				fputc('\n', stderr);
			fprintf(stderr, "paddock run: interrupted: cancelling %zu unfinished requests (Ctrl-C again quits at once)\n",
				st->total - st->done);
			for (size_t i = 0; i < n; i++)
				if (st->jobs[i])
					pd_sched_cancel(sched, st->jobs[i]);
		}
		if (tty)
			cli_progress(st->done, st->total, t0);
		else if (!quiet && pd_now_us() - said >= 10000000) {
			said = pd_now_us();
			cli_progress_line("run", st->done, st->total, t0);
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&st->cv, &st->mu, &ts);
	}
	pthread_mutex_unlock(&st->mu);
	double secs = (pd_now_us() - t0) / 1e6;
	if (tty)
		fputc('\n', stderr);
	return secs;
}

/* The summary on stderr: rate and latencies, the run lines' statuses and failure classes, the
 * lines refused, the judged summary. */
static void run_summary(run_state *st, const run_env *env, double secs, size_t refused, size_t rejected)
{
	size_t all = env->n + env->bad;
	cli_sort_latencies(st->lat, st->nlat);
	fprintf(stderr, "paddock run: %zu requests in %.2f s: %.1f/s; latency from submission (queue included) p50 %.0f ms, p90 %.0f ms, p99 %.0f ms\n",
		all, secs, secs > 0 ? all / secs : 0.0, cli_percentile(st->lat, st->nlat, 50),
		cli_percentile(st->lat, st->nlat, 90), cli_percentile(st->lat, st->nlat, 99));
	uint64_t runs = 0;
	for (int s = 0; s < 8; s++)
		runs += st->status[s];
	if (runs) { /* the run lines' own; judge lines have the judged summary below */
		fprintf(stderr, "  status:");
		for (int s = 0; s < 7; s++)
			fprintf(stderr, " %s %llu", pd_status_name((pd_status)s), (unsigned long long)st->status[s]);
		fprintf(stderr, ", never ran %llu", (unsigned long long)st->status[7]);
		if (st->judge_lines) /* a file that mixes both: the judge lines are not in these counts */
			fprintf(stderr, " (and %llu judge lines, below)", (unsigned long long)st->judge_lines);
		fprintf(stderr, "\n  failure classes:");
		for (int f = 0; f < PD_F_COUNT; f++)
			fprintf(stderr, " %s %llu", pd_failure_name((pd_failure)f), (unsigned long long)st->failure[f]);
		fputc('\n', stderr);
	}
	fprintf(stderr, "  lines refused as requests (malformed, a bad field): %zu; not admitted by the infrastructure: %zu\n",
		env->bad + refused, rejected);
	pd_judge_stats js;
	pd_judge_stats_get(env->judge, &js);
	judged_sum_print(st->judged, stderr, js.cpu_ms_saved, js.judge_errors);
}

/* Runs the lines read: each submitted in turn (a line refused, or not admitted, gets its record
 * at once), then waited for, then the summary. Returns the exit status. */
static int run_lines(run_env *env, FILE *out)
{
	json_t **reqs = env->reqs;
	const int *lines = env->lines;
	size_t n = env->n;
	const char *problems_dir = env->problems_dir;
	pd_template *t = env->t;
	size_t nt = env->nt;
	pd_ctx *ctx = env->ctx;
	pd_pools *pools = env->pools;
	pd_judge *judge = env->judge;
	pd_problem_set problems = env->problems;
	pd_sched *sched = env->sched;
	run_state st;
	memset(&st, 0, sizeof st);
	st.out = out;
	pd_pools_wait_ready(pools, 20000);
	pd_intake intake = {.pools = pools, .sched = sched, .judge = judge, .problems = &problems, .ctx = ctx,
			    .tpl = t, .ntpl = nt, .self = "run",
			    .no_network = "network: paddock run has no per-request networks (serve "
					  "--run-code-networks has): name a template with that network"};
	pthread_mutex_init(&st.mu, NULL);
	st.judged = judged_sum_new();
	pthread_cond_init(&st.cv, NULL);
	st.total = n;
	st.lat = calloc(n ? n : 1, sizeof *st.lat);
	st.jobs = calloc(n ? n : 1, sizeof *st.jobs);
	struct sigaction sa = {.sa_handler = on_interrupt}, old_int, old_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	uint64_t t0 = pd_now_us();
	size_t rejected = 0, refused = 0;
	for (size_t i = 0; i < n; i++) {
		bool is_judge = judge_line(reqs[i], problems_dir != NULL);
		if (interrupted) {
			/* the rest are not submitted: each still gets its line */
			char *text = cli_run_unrun(lines[i], json_string_value(json_object_get(reqs[i], "task_id")),
						   PD_F_CANCELLED, "interrupted before it was submitted");
			unrun_done(&st, text, is_judge, json_string_value(json_object_get(reqs[i], "problem_id")),
				   is_judge ? json_incref(json_object_get(reqs[i], "expect")) : NULL, lines[i],
				   PD_F_CANCELLED);
			json_decref(reqs[i]);
			continue;
		}
		pd_err pe = {0};
		json_t *expect = NULL;
		const pd_api *api = &pd_api_judge;
		if (is_judge) {
			/* a judge line: what it expects is the file's, not the judge's */
			expect = json_incref(json_object_get(reqs[i], "expect"));
			json_object_del(reqs[i], "expect");
			json_object_del(reqs[i], "note");
		} else {
			api = cli_run_api(reqs[i]);
		}
		/* every rule a daemon applies (server/intake.h), with this run's templates */
		int status;
		unsigned ra;
		pd_job *j = pd_intake_check(&intake, api, reqs[i], PD_INTAKE_CLIENT, 0, &status, &ra, &pe);
		bool rc = api == &pd_api_run_code;
		char task_id[sizeof j->task_id] = "";
		const char *tid = json_string_value(json_object_get(reqs[i], "task_id"));
		if (tid)
			snprintf(task_id, sizeof task_id, "%s", tid);
		json_decref(reqs[i]);
		if (!j) {
			json_decref(expect);
			char *text = cli_run_refusal(lines[i], task_id, PD_ERR_STR(&pe));
			pthread_mutex_lock(&st.mu);
			fprintf(st.out, "%s\n", text ? text : "{}");
			st.done++;
			refused++;
			pthread_mutex_unlock(&st.mu);
			free(text);
			continue;
		}
		if (!j->task_id[0])
			snprintf(j->task_id, sizeof j->task_id, "line-%d", lines[i]);
		line_ctx *lc = calloc(1, sizeof *lc);
		lc->st = &st;
		lc->idx = i;
		lc->line = lines[i];
		lc->run_code = rc;
		lc->expect = expect;
		lc->t0 = pd_now_us();
		j->done = line_done;
		j->done_arg = lc;
		snprintf(j->client, sizeof j->client, "run");
		pthread_mutex_lock(&st.mu);
		st.jobs[i] = j; /* before it can finish: line_done clears it */
		pthread_mutex_unlock(&st.mu);
		int code;
		char why[600];
		pd_admit a = pd_intake_admit(&intake, api, j, &code, &ra, why, sizeof why);
		if (a != PD_ADMIT_OK) {
			bool infra;
			char *text = admission_record(lines[i], j->task_id, a, why, &infra);
			pthread_mutex_lock(&st.mu);
			st.jobs[i] = NULL;
			pthread_mutex_unlock(&st.mu);
			rejected += infra;
			unrun_done(&st, text, is_judge, j->problem_id, lc->expect, lines[i],
				   infra ? PD_F_INTERNAL : PD_F_QUEUE);
			pd_job_free(j);
			free(lc);
		}
	}
	free(reqs);
	env->reqs = NULL; /* each one was taken or freed */
	double secs = run_wait(&st, sched, n, env->quiet, t0);
	pd_sched_drain(sched);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	run_summary(&st, env, secs, refused, rejected);
	free(st.lat);
	free(st.jobs);
	judged_sum_free(st.judged);
	if (interrupted)
		return 130;
	return env->bad + refused + rejected ? EXIT_PADDOCK_FAILED : 0;
}

int cmd_run(int argc, char **argv)
{
	run_args a;
	int rc = run_args_parse(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	FILE *in = strcmp(argv[optind], "-") ? fopen(argv[optind], "re") : stdin;
	if (!in) {
		cli_error("%s: %s", argv[optind], strerror(errno));
		return EXIT_USAGE;
	}
	FILE *out = stdout;
	if (a.outfile && !(out = fopen(a.outfile, "we"))) {
		cli_error("%s: %s", a.outfile, strerror(errno));
		return EXIT_USAGE;
	}
	/* a line reaches the file when it is written: an interrupted run leaves whole lines */
	setvbuf(out, NULL, _IOLBF, 0);
	run_env env = {.problems_dir = a.problems_dir, .quiet = a.quiet};
	rc = run_read(in, out, &env);
	if (in != stdin)
		fclose(in);
	if (rc)
		return rc;
	if (a.cluster)
		rc = cli_run_cluster(a.cluster, env.reqs, env.lines, env.n, env.bad, a.workers, out);
	else {
		rc = run_setup(&a, &env);
		if (rc)
			return rc; /* the process ends: nothing to take down */
		rc = run_lines(&env, out);
		pd_sched_free(env.sched);
		pd_judge_free(env.judge);
		pd_problems_free(&env.problems);
		pd_metrics_free(env.m);
		pd_pools_free(env.pools);
		pd_templates_free(env.t, env.nt);
		pd_ctx_free(env.ctx);
	}
	free(env.reqs);
	free(env.lines);
	if (out != stdout)
		fclose(out);
	return rc;
}
