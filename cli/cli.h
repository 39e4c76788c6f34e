/* The paddock command: one file per subcommand over the public headers (paddock.h, pool.h,
 * server.h).
 *   main.c       the command table: dispatch and the top-level help
 *   args.c       cli_error and the value parsers every subcommand (and serve's config) shares
 *   exec.c run.c serve.c pool.c batch.c   the subcommands; serve.c holds serve's option table
 *   run_cluster.c                         paddock run --cluster: the lines posted to a cluster
 *   jsonl.c      the request lines of batch and run (shared with the fuzzer)
 *   progress.c   the progress line and latency percentiles of batch and run
 *   bench*.c     paddock bench (bench.c's head comment maps its files) */
#ifndef PADDOCK_CLI_H
#define PADDOCK_CLI_H

#include "paddock.h"
#include <jansson.h>
#include <stdio.h>

/* Exit statuses of the paddock command (isolate's split between the program and paddock). */
enum {
	EXIT_PROGRAM_OK = 0,     /* the program ran and its status is OK */
	EXIT_PROGRAM_FAILED = 1, /* the program ran and failed: RE, SG, TO, ML or OL (see the result) */
	EXIT_PADDOCK_FAILED = 2, /* paddock could not run or observe it (XX, setup error) */
	EXIT_USAGE = 64,         /* bad command line */
};

int cmd_exec(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* paddock bench --http: the daemon against python3 on the host. */
int cmd_bench_http(int argc, char **argv);
/* paddock bench --judge (bench_judge.c): the judge's cells against verl's way, the floor, a peer. */
int cmd_bench_judge(int argc, char **argv);
int cmd_bench_episode(int argc, char **argv);
/* paddock bench --guard (bench_guard.c): the CPU ratios `make test` keeps from sliding back. */
int cmd_bench_guard(int argc, char **argv);
/* paddock bench --goodput / --memory-verdict (bench_goodput.c): a trainer's load, limit verdicts. */
int cmd_bench_goodput(int argc, char **argv);
int cmd_pool(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_run(int argc, char **argv);
/* paddock run --cluster (run_cluster.c): the parsed lines (taken) posted to a cluster's nodes. */
int cli_run_cluster(const char *urls, json_t **reqs, const int *lines, size_t n, size_t bad, long workers,
		    FILE *out);
int cmd_image(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
/* paddock top (top.c, over promtext.c): a live view of a daemon's /metrics. */
int cmd_top(int argc, char **argv);
/* paddock run's summary of its judge lines (run_judged.c): per-problem verdicts, rewards, usable,
 * failure classes, the cache, the lines whose verdict differed from their "expect". */
typedef struct judged_sum judged_sum;
judged_sum *judged_sum_new(void);
/* One judged record (a new reference is not taken), the line's expect (may be NULL), its line. */
void judged_sum_add(judged_sum *s, json_t *rec, json_t *expect, int line);
void judged_sum_print(judged_sum *s, FILE *f, uint64_t cpu_ms_saved, uint64_t judge_errors);
void judged_sum_free(judged_sum *s);
/* paddock export --runs (export_runs.c): the store's records as JSON lines. */
int cmd_export_runs(int argc, char **argv);

struct pd_template;
struct pd_pools;
/* Loads templates from file (NULL = the built-in ones); prints the error. */
int cli_load_templates(const char *file, struct pd_template **t, size_t *n);
/* Prints the pools' state as a table or JSON lines. */
void cli_print_pools(struct pd_pools *p, const struct pd_template *t, size_t n, bool json);

/* A progress line on stderr ("\r[====  ] done/total  rate/s  ETA"). */
void cli_progress(size_t done, size_t total, uint64_t t0_us);
/* The same as a whole line ("paddock CMD: 120/252 done ..."), for a stderr that is not a terminal. */
void cli_progress_line(const char *cmd, size_t done, size_t total, uint64_t t0_us);
/* Sorts latencies; then the p-th percentile (nearest rank) of the sorted values. */
void cli_sort_latencies(double *v, size_t n);
double cli_percentile(const double *sorted, size_t n, double p);

/* Prints "paddock: <msg>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The parsers of option values (cli/args.c), one per kind, used for flags and config keys alike.
 * what names where the value came from ("--workers", "--config FILE: workers"). Each fills *out
 * and returns true, or says "<what>: '<arg>' is not <the kind and its range>" and returns false. */
/* decimal digits only, from lo to hi */
bool cli_count(const char *what, const char *arg, long lo, long hi, long *out);
/* pd_parse_size's sizes (k, M, G, T; plain digits are bytes), from lo to hi */
bool cli_size(const char *what, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out);
/* pd_parse_duration_ms's times (s, ms, m; plain numbers are seconds), in ms from lo to hi */
bool cli_duration_ms(const char *what, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out);
/* digits with at most one decimal point (no sign, exponent, nan or inf), from lo to hi */
bool cli_decimal(const char *what, const char *arg, double lo, double hi, double *out);
/* Says "<what>: '<arg>' is not <want>"; false. */
bool cli_bad(const char *what, const char *arg, const char *want);
/* After getopt_long returned '?' or ':' (every optstring starts with ':' so that getopt says
 * nothing itself, or the user would read two messages): one line on stderr naming the option as
 * given, "paddock CMD: unknown option '--x' (see 'paddock HELP --help')", where HELP is the
 * command whose --help lists the options (e.g. "bench" for bench --http); takes (may be NULL)
 * names the options CMD takes when HELP lists others too ("it takes T; see ..."). Returns
 * EXIT_USAGE. */
struct option;
int cli_bad_option(const char *cmd, const char *help, const char *takes, int c, char **argv,
		   const struct option *opts);
/* After getopt: true when no operand is left at optind, else says which one is unexpected. */
bool cli_no_operand(const char *cmd, int argc, char **argv, int optind_);

#endif
