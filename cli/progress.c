/* What the batch commands share: a progress line on a terminal, and latency percentiles. */
#define _GNU_SOURCE
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void cli_progress_line(const char *cmd, size_t done, size_t total, uint64_t t0_us)
{
	/* where stderr is a log, not a terminal: whole lines, no carriage returns */
	double secs = (pd_now_us() - t0_us) / 1e6, rate = secs > 0 ? done / secs : 0;
	fprintf(stderr, "paddock %s: %zu/%zu done (%.0f%%) in %.0f s, %.1f/s, ETA %.0f s\n", cmd, done, total,
		total ? 100.0 * (double)done / (double)total : 100.0, secs, rate,
		rate > 0 ? (double)(total - done) / rate : 0.0);
}

void cli_progress(size_t done, size_t total, uint64_t t0_us)
{
	double secs = (pd_now_us() - t0_us) / 1e6, rate = secs > 0 ? done / secs : 0;
	int width = 30, fill = total ? (int)(width * done / total) : width;
	fprintf(stderr, "\r[%.*s%*s] %zu/%zu  %.1f/s  ETA %.0fs   ", fill, "==============================",
		width - fill, "", done, total, rate, rate > 0 ? (double)(total - done) / rate : 0.0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void cli_sort_latencies(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
}

double cli_percentile(const double *sorted, size_t n, double p)
{
	if (!n)
		return 0;
	size_t i = (size_t)ceil(p / 100.0 * (double)n);
	return sorted[i ? i - 1 : 0];
}
