/* paddock bench's toolbox (bench_util.h says what it holds, and why it is apart). */
#define _GNU_SOURCE
#include "bench_util.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

double bench_percentile_ms(const uint64_t *ns, size_t n, unsigned pct)
{
	size_t rank = (pct * n + 99) / 100;
	return (double)ns[rank ? rank - 1 : 0] / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_self_cpu_ms(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

int bench_task_clock_open(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof a;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.inherit = 1;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

bool bench_find_in_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ":");
		if (n && (size_t)snprintf(buf, len, "%.*s/%s", (int)n, p, name) < len &&
		    access(buf, X_OK) == 0)
			return true;
		p += n;
		if (*p == ':')
			p++;
	}
	return false;
}

/* the namespaces paddock uses, and a root that can run /bin/true (usrmerged host) */
static const char *const bwrap_flags[] = {
	"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
	"--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib",
	"/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev",
	"/dev", "--tmpfs", "/tmp", "/bin/true", NULL};

_Static_assert(sizeof bwrap_flags / sizeof *bwrap_flags == BENCH_BWRAP_ARGC - 1, "BENCH_BWRAP_ARGC");

void bench_bwrap_argv(const char *path, const char **argv)
{
	argv[0] = path;
	for (size_t i = 0; bwrap_flags[i]; i++)
		argv[i + 1] = bwrap_flags[i];
	argv[BENCH_BWRAP_ARGC - 1] = NULL;
}
