/* paddock bench's toolbox (cli/bench_util.c): what every section of the bench uses and nothing of
 * paddock's own: the clock, percentiles and medians, the CPU this process spent, $PATH, and the
 * bwrap command line every section compares with. The sections are above it, never below. */
#ifndef PADDOCK_CLI_BENCH_UTIL_H
#define PADDOCK_CLI_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* qsort's order of uint64_t. */
int bench_cmp_u64(const void *a, const void *b);
/* Nearest-rank percentile of sorted samples, in ms. */
double bench_percentile_ms(const uint64_t *ns, size_t n, unsigned pct);
/* The median of n values (sorted in place: the range is then v[0] to v[n - 1]). */
double bench_median(double *v, int n);
/* The CPU time of this process so far, all its threads, in ms (getrusage). */
double bench_self_cpu_ms(void);

/* A task-clock counter (perf events) of this thread and every thread and process started after it
 * opens, or -1 when perf events are not allowed here. Better than getrusage(RUSAGE_CHILDREN), which
 * only sees descendants that were waited for: bwrap's outer process exits without reaping its
 * pid-1 child, so half of bwrap's CPU would go unseen. */
int bench_task_clock_open(void);

/* The absolute path of name found in $PATH, into out; false if none. */
bool bench_find_in_path(const char *name, char *out, size_t len);
/* bwrap /bin/true with paddock's namespaces: the bwrap row's argv, path first. */
#define BENCH_BWRAP_ARGC 31
void bench_bwrap_argv(const char *path, const char **argv);

#endif
