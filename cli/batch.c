/* paddock batch: run many commands, each in a clean sandbox taken from the warm pools.
 *
 * Input: JSON lines, one request each:
 *   {"id": "r1", "template": "python", "cmd": ["python3", "main.py"],
 *    "files": {"/work/main.py": "print(1)"}, "stdin": "", "wall_time": 5, "cpu_time": 2}
 * ("shell": "..." runs a command line with sh -c instead of "cmd".)
 * Output: one result record per request (JSON lines, in completion order, with "id" and
 * "template"), a progress line on a terminal, and a summary on stderr. */
#define _GNU_SOURCE
#include "cli.h"
#include "jsonl.h"
#include "pool.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


typedef struct req {
	int line;
	json_t *j;      /* the parsed request, or NULL */
	char error[256]; /* why the line is not a request */
} req;

typedef struct batch {
	pd_pools *pools;
	const pd_template *tpl; /* the templates loaded, named when a request names another */
	size_t ntpl;
	req *reqs;
	size_t n, next, done;
	pthread_mutex_t mu;
	uint64_t t0;
	double *lat_ms;
	uint64_t status_count[7];
	uint64_t bad_requests, hits;
	bool progress;
	int out_fd;
} batch;

static void emit_error(batch *b, const req *r, json_t *id, const char *msg)
{
	char *s = cli_batch_error_line(r->line, id, msg);
	pthread_mutex_lock(&b->mu);
	if (s) {
		dprintf(b->out_fd, "%s\n", s);
		free(s);
	}
	b->bad_requests++;
	b->done++;
	pthread_mutex_unlock(&b->mu);
}

/* Runs one request; returns after its result line is written. */
static void run_one(batch *b, req *r)
{
	if (!r->j) {
		emit_error(b, r, NULL, r->error);
		return;
	}
	cli_batch_req q;
	char why[256];
	if (cli_batch_parse(r->j, &q, why, sizeof why) < 0) {
		emit_error(b, r, q.id, why);
		return;
	}
	json_t *id = q.id;
	const char *tpl = q.template_name;
	pd_exec_opts x = q.x;
	x.argv = q.argv;
	const pd_template *t = pd_pools_template(b->pools, tpl);
	if (!t) {
		/* said here, with the names it could have meant: the pool's "no template named" is all
		 * the pools can say */
		char msg[1024];
		size_t n = (size_t)snprintf(msg, sizeof msg, "template: unknown template '%s' (the templates: ", tpl);
		for (size_t i = 0; i < b->ntpl && n < sizeof msg; i++)
			n += (size_t)snprintf(msg + n, sizeof msg - n, "%s%s", i ? ", " : "", b->tpl[i].name);
		if (n < sizeof msg)
			snprintf(msg + n, sizeof msg - n, ")");
		emit_error(b, r, id, msg);
		return;
	}
	x.envp = t->env[0] ? t->env : NULL;
	if (!x.cwd)
		x.cwd = t->cwd;

	uint64_t t0 = pd_now_us();
	pd_err e = {0};
	bool hit = false;
	pd_sandbox *s = pd_pool_acquire(b->pools, tpl, &hit, &e);
	if (!s) {
		emit_error(b, r, id, PD_ERR_STR(&e));
		return;
	}
	json_t *files = q.files;
	const char *path;
	json_t *content;
	json_object_foreach(files, path, content) {
		char dir[1024]; /* paths have at most 1023 bytes (cli_batch_parse) */
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = 0;
			pd_sandbox_mkdir(s, dir, 0755, NULL);
		}
		if (!json_is_string(content) ||
		    pd_sandbox_write_file(s, path, json_string_value(content), json_string_length(content),
					  0644, &e) < 0) {
			char msg[600];
			snprintf(msg, sizeof msg, "files.%s: %s", path,
				 json_is_string(content) ? PD_ERR_STR(&e) : "must be a string");
			pd_pool_release(b->pools, s);
			emit_error(b, r, id, msg);
			return;
		}
	}
	pd_result res;
	int rc = pd_sandbox_exec(s, &x, &res, &e);
	pd_pool_release(b->pools, s);
	double ms = (pd_now_us() - t0) / 1000.0;
	if (rc < 0) {
		emit_error(b, r, id, PD_ERR_STR(&e));
		return;
	}
	json_t *extra = json_object();
	json_object_set_new(extra, "line", json_integer(r->line));
	if (id)
		json_object_set(extra, "id", id);
	json_object_set_new(extra, "template", json_string(tpl));
	json_object_set_new(extra, "pool_hit", json_boolean(hit));
	json_object_set_new(extra, "latency_ms", json_real(ms));
	char *ex = pd_json_dumps(extra, JSON_COMPACT);
	json_decref(extra);
	/* drop the braces: pd_result_write_json_with takes the fields */
	if (ex) {
		size_t l = strlen(ex);
		memmove(ex, ex + 1, l);
		ex[l - 2] = 0;
	}
	pthread_mutex_lock(&b->mu);
	pd_result_write_json_with(&res, b->out_fd, true, ex ? ex : "");
	b->lat_ms[b->done] = ms;
	b->status_count[res.status]++;
	b->hits += hit;
	b->done++;
	pthread_mutex_unlock(&b->mu);
	free(ex);
	pd_result_free(&res);
}

static void *worker(void *arg)
{
	batch *b = arg;
	for (;;) {
		pthread_mutex_lock(&b->mu);
		size_t i = b->next < b->n ? b->next++ : b->n;
		pthread_mutex_unlock(&b->mu);
		if (i >= b->n)
			return NULL;
		run_one(b, &b->reqs[i]);
	}
}

static void batch_usage(FILE *f)
{
	fputs("usage: paddock batch [options] [REQUESTS.jsonl|-]\n"
	      "\n"
	      "Runs each request (a JSON line: id, template, cmd or shell, files, stdin, wall_time,\n"
	      "cpu_time, cwd) in a clean sandbox from the template's warm pool; reads stdin when no\n"
	      "file (or -) is given. Writes one result record per line, shows progress on a terminal\n"
	      "and a summary on stderr.\n"
	      "\n"
	      "  -j, --jobs N           concurrent requests, from 1 to 1024 (default 2)\n"
	      "  -n, --warm N           READY sandboxes per template, from 0 to 10000 (default: N jobs)\n"
	      "  -t, --templates FILE   templates (default: built-in)\n"
	      "  -o, --output FILE      results (default stdout)\n"
	      "\n"
	      "exit: 0 all OK, 1 some program failed, 2 a request could not run, 64 bad usage.\n",
	      f);
}

typedef struct batch_args {
	const char *file, *outfile;
	long jobs, warm;
} batch_args;

/* The command line; 0, -1 after --help, or the exit status of a bad one. The requests' file is
 * argv[optind] when there is one. */
static int batch_args_parse(int argc, char **argv, batch_args *a)
{
	static const struct option opts[] = {{"help", no_argument, 0, 'h'},
					     {"templates", required_argument, 0, 't'},
					     {"jobs", required_argument, 0, 'j'},
					     {"warm", required_argument, 0, 'n'},
					     {"output", required_argument, 0, 'o'},
					     {0, 0, 0, 0}};
	*a = (batch_args){.jobs = 2, .warm = -1};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":ht:j:n:o:", opts, NULL)) != -1) {
		switch (c) {
		case 'h': batch_usage(stdout); return -1;
		case 't': a->file = optarg; break;
		case 'j':
			if (!cli_count("--jobs", optarg, 1, 1024, &a->jobs))
				return EXIT_USAGE;
			break;
		case 'n':
			if (!cli_count("--warm", optarg, 0, 10000, &a->warm))
				return EXIT_USAGE;
			break;
		case 'o': a->outfile = optarg; break;
		default: return cli_bad_option("batch", "batch", NULL, c, argv, opts);
		}
	}
	if (optind + 1 < argc && !cli_no_operand("batch", argc, argv, optind + 1))
		return EXIT_USAGE;
	return 0;
}

/* Every line of in into b->reqs, a bad one with its error (it gets its error line when its turn
 * comes). 0, or an exit status. */
static int batch_read(FILE *in, batch *b)
{
	size_t cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	int lineno = 0, st;
	json_t *j;
	json_error_t je;
	while ((st = cli_jsonl_next(in, &line, &lcap, &lineno, &j, &je)) != CLI_LINE_EOF) {
		if (b->n == cap) {
			cap = cap ? cap * 2 : 256;
			req *nr = realloc(b->reqs, cap * sizeof *nr);
			if (!nr) {
				cli_error("out of memory reading requests");
				return EXIT_PADDOCK_FAILED;
			}
			b->reqs = nr;
		}
		req *r = &b->reqs[b->n++];
		memset(r, 0, sizeof *r);
		r->line = lineno;
		r->j = j;
		if (st == CLI_LINE_NOT_JSON)
			snprintf(r->error, sizeof r->error, "line %d: not JSON: %s", lineno, je.text);
		else if (st == CLI_LINE_NOT_OBJECT)
			snprintf(r->error, sizeof r->error, "line %d: a request must be a JSON object", lineno);
	}
	free(line);
	return 0;
}

/* The templates (each pool at least --warm, else --jobs, sandboxes), the context and the pools,
 * ready. 0, or an exit status. */
static int batch_setup(batch *b, const batch_args *a, pd_ctx **ctx, pd_template **tp)
{
	pd_template *t;
	size_t nt;
	if (cli_load_templates(a->file, &t, &nt) < 0)
		return EXIT_USAGE;
	*tp = t;
	for (size_t i = 0; i < nt; i++) {
		uint32_t w = a->warm >= 0 ? (uint32_t)a->warm : (uint32_t)a->jobs;
		if (t[i].pool_min < w)
			t[i].pool_min = w;
		if (t[i].pool_max < t[i].pool_min)
			t[i].pool_max = t[i].pool_min;
	}
	pd_err e = {0};
	*ctx = pd_ctx_new(NULL, &e);
	if (!*ctx) {
		cli_error("%s", PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	b->pools = pd_pools_new(*ctx, t, nt, NULL, &e);
	b->tpl = t;
	b->ntpl = nt;
	if (!b->pools) {
		cli_error("%s", PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	for (size_t i = 0; i < nt; i++)
		if (!t[i].available) {
			pd_template tc = t[i];
			pd_template_check(*ctx, &tc);
			if (!tc.available)
				fprintf(stderr, "paddock: template %s: dependency_missing: %s\n", tc.name, tc.missing);
		}
	pd_pools_wait_ready(b->pools, 10000);
	return 0;
}

/* The workers over every request, the progress meanwhile; the seconds they took. */
static double batch_work(batch *b, long jobs)
{
	b->progress = isatty(STDERR_FILENO);
	b->t0 = pd_now_us();
	pthread_t *th = calloc((size_t)jobs, sizeof *th);
	for (long i = 0; i < jobs; i++)
		pthread_create(&th[i], NULL, worker, b);
	while (b->progress) {
		pthread_mutex_lock(&b->mu);
		size_t done = b->done;
		pthread_mutex_unlock(&b->mu);
		cli_progress(done, b->n, b->t0);
		if (done >= b->n)
			break;
		usleep(200000);
	}
	for (long i = 0; i < jobs; i++)
		pthread_join(th[i], NULL);
	free(th);
	double secs = (pd_now_us() - b->t0) / 1e6;
	if (b->progress)
		fputc('\n', stderr);
	return secs;
}

/* The summary on stderr; the exit status. */
static int batch_summary(batch *b, long jobs, double secs)
{
	size_t ran = 0;
	for (int s = 0; s < 7; s++)
		ran += b->status_count[s];
	cli_sort_latencies(b->lat_ms, ran);
	fprintf(stderr,
		"paddock batch: %zu requests in %.2f s (%.1f/s), %ld workers; latency p50 %.1f ms, "
		"p90 %.1f ms, p99 %.1f ms; pool hits %llu of %zu\n",
		b->n, secs, secs > 0 ? b->n / secs : 0, jobs, cli_percentile(b->lat_ms, ran, 50),
		cli_percentile(b->lat_ms, ran, 90), cli_percentile(b->lat_ms, ran, 99), (unsigned long long)b->hits, ran);
	fprintf(stderr, "  status:");
	for (int s = 0; s < 7; s++)
		fprintf(stderr, " %s %llu", pd_status_name((pd_status)s), (unsigned long long)b->status_count[s]);
	fprintf(stderr, "; requests that could not run: %llu\n", (unsigned long long)b->bad_requests);
	if (b->bad_requests)
		return EXIT_PADDOCK_FAILED;
	return b->status_count[PD_OK] == ran ? 0 : EXIT_PROGRAM_FAILED;
}

int cmd_batch(int argc, char **argv)
{
	batch_args a;
	int rc = batch_args_parse(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	FILE *in = stdin;
	if (optind < argc && strcmp(argv[optind], "-")) {
		in = fopen(argv[optind], "re");
		if (!in) {
			cli_error("%s: %s", argv[optind], strerror(errno));
			return EXIT_USAGE;
		}
	}
	batch b;
	memset(&b, 0, sizeof b);
	pthread_mutex_init(&b.mu, NULL);
	rc = batch_read(in, &b);
	if (in != stdin)
		fclose(in);
	if (rc)
		return rc;
	b.out_fd = STDOUT_FILENO;
	if (a.outfile) {
		FILE *o = fopen(a.outfile, "we");
		if (!o) {
			cli_error("%s: %s", a.outfile, strerror(errno));
			return EXIT_USAGE;
		}
		b.out_fd = dup(fileno(o));
		fclose(o);
	}
	b.lat_ms = calloc(b.n ? b.n : 1, sizeof *b.lat_ms);
	if (!b.lat_ms)
		return EXIT_USAGE;
	pd_ctx *ctx = NULL;
	pd_template *t = NULL;
	rc = batch_setup(&b, &a, &ctx, &t);
	if (rc)
		return rc; /* the process ends: nothing to take down */
	rc = batch_summary(&b, a.jobs, batch_work(&b, a.jobs));
	pd_pools_free(b.pools);
	pd_templates_free(t, b.ntpl);
	pd_ctx_free(ctx);
	for (size_t i = 0; i < b.n; i++)
		json_decref(b.reqs[i].j);
	free(b.reqs);
	free(b.lat_ms);
	if (b.out_fd != STDOUT_FILENO)
		close(b.out_fd);
	return rc;
}
