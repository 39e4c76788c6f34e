/* cgroups v1: one directory per hierarchy (memory, pids, cpu, cpuacct; blkio only for a sandbox
 * with I/O limits); the pid is written to each, or init writes itself through the tasks files the
 * host opened (join_fds). The backend table pd_cg_v1_ops; v2 and the shared helpers are cgroup.c's. */
#define _GNU_SOURCE
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int v1_create(pd_cgroups *root, const char *name, const pd_limits *l, pd_cg **out, pd_err *e)
{
	if (cg_bad_name(name, e) < 0)
		return -1;
	pd_cg *g = calloc(1, sizeof *g);
	if (!g)
		return pd_fail(e, ENOMEM, "cgroup");
	g->root = root;
	g->dirfd = -1;
	cg_stats_init(g);
	int idx[4];
	/* co-mounted controllers (cpu,cpuacct) share one directory */
	for (int c = 0; c < 4; c++) {
		idx[c] = -1;
		for (int j = 0; j < g->ndirs; j++) {
			char p[PD_PATH];
			snprintf(p, sizeof p, "%s/%s", root->v1_dirs[c], name);
			if (!strcmp(p, g->dirs[j]))
				idx[c] = j;
		}
		if (idx[c] >= 0)
			continue;
		idx[c] = g->ndirs;
		if (snprintf(g->dirs[g->ndirs], PD_PATH, "%s/%s", root->v1_dirs[c], name) >= PD_PATH)
			goto fail_name;
		if (mkdir(g->dirs[g->ndirs], 0755) < 0) {
			pd_fail(e, errno, "mkdir cgroup %s", g->dirs[g->ndirs]);
			goto fail;
		}
		g->ndirs++;
	}
	g->mem_i = idx[V1_MEMORY];
	g->pids_i = idx[V1_PIDS];
	g->cpu_i = idx[V1_CPU];
	g->cpuacct_i = idx[V1_CPUACCT];
	if (l->memory_bytes) {
		if (cg_write_u64(g->dirs[g->mem_i], "memory.limit_in_bytes", l->memory_bytes, e) < 0)
			goto fail;
		/* memsw exists only with swap accounting; without swap the limit above is the limit */
		cg_write_u64(g->dirs[g->mem_i], "memory.memsw.limit_in_bytes", l->memory_bytes, NULL);
		cg_write(g->dirs[g->mem_i], "memory.swappiness", "0", NULL);
	}
	if (l->pids && cg_write_u64(g->dirs[g->pids_i], "pids.max", l->pids, e) < 0)
		goto fail;
	if (l->cpu_millicores) {
		if (cg_write(g->dirs[g->cpu_i], "cpu.cfs_period_us", "100000", e) < 0 ||
		    cg_write_u64(g->dirs[g->cpu_i], "cpu.cfs_quota_us", l->cpu_millicores * 100ull, e) < 0)
			goto fail;
	}
	*out = g;
	return 0;
fail_name:
	pd_fail(e, ENAMETOOLONG, "cgroup name %s", name);
fail:
	for (int j = 0; j < g->ndirs; j++)
		cg_rmdir(g->dirs[j], false);
	free(g);
	return -1;
}

static int v1_clone_fd(pd_cg *g)
{
	(void)g;
	return -1;
}

static int v1_attach(pd_cg *g, pid_t pid, pd_err *e)
{
	for (int j = 0; j < g->ndirs; j++)
		if (cg_write_u64(g->dirs[j], "cgroup.procs", (uint64_t)pid, e) < 0)
			return -1;
	return 0;
}

static int v1_stats(pd_cg *g, pd_cg_stats *st)
{
	char b[1024];
	memset(st, 0, sizeof *st);
	const char *ca = g->dirs[g->cpuacct_i], *m = g->dirs[g->mem_i], *pi = g->dirs[g->pids_i];
	st->cpu_us = cg_pread_u64(g, CGF_CPU, ca, "cpuacct.usage") / 1000u;
	/* cpuacct.stat counts USER_HZ ticks: coarse, but it is what v1 has for the user/sys split */
	if (cg_pread(g, CGF_CPU_STAT, ca, "cpuacct.stat", b, sizeof b) >= 0) {
		uint64_t us_per_tick = 1000000u / (uint64_t)sysconf(_SC_CLK_TCK);
		st->cpu_user_us = pd_keyed_u64(b, "user") * us_per_tick;
		st->cpu_sys_us = pd_keyed_u64(b, "system") * us_per_tick;
	}
	st->mem_limit_hits = cg_pread_u64(g, CGF_MEM_FAIL, m, "memory.failcnt");
	st->mem_peak = cg_mem_peak_since_reset(g, cg_pread_u64(g, CGF_MEM_PEAK, m, "memory.max_usage_in_bytes"),
					    st->mem_limit_hits);
	if (cg_pread(g, CGF_MEM_EVENTS, m, "memory.oom_control", b, sizeof b) >= 0)
		st->oom_kills = pd_keyed_u64(b, "oom_kill");
	st->pids_current = cg_pread_u64(g, CGF_PIDS, pi, "pids.current");
	/* newer kernels keep pids.peak on v1 too; older ones leave us our samples */
	cg_pids_peak_since_reset(g, st, cg_pread_u64(g, CGF_PIDS_PEAK, pi, "pids.peak"));
	return 0;
}

static uint64_t v1_sample(pd_cg *g)
{
	uint64_t cpu = cg_pread_u64(g, CGF_CPU, g->dirs[g->cpuacct_i], "cpuacct.usage") / 1000u;
	uint64_t cur = cg_pread_u64(g, CGF_PIDS, g->dirs[g->pids_i], "pids.current");
	if (cur > g->pids_peak_sampled)
		g->pids_peak_sampled = cur;
	return cpu;
}

static void v1_reset_peaks(pd_cg *g)
{
	const char *m = g->dirs[g->mem_i];
	g->mem_hits_base = cg_pread_u64(g, CGF_MEM_FAIL, m, "memory.failcnt");
	/* a reset sets the peak to the usage now, which is then the base (read through the same
	 * descriptor: one file fewer to open per exec) */
	int fd = cg_stat_fd(g, CGF_MEM_PEAK, m, "memory.max_usage_in_bytes", O_RDWR);
	if (fd < 0 || pwrite(fd, "0", 1, 0) < 0)
		cg_write(m, "memory.max_usage_in_bytes", "0", NULL);
	g->mem_base = cg_pread_u64(g, CGF_MEM_PEAK, m, "memory.max_usage_in_bytes");
	g->pids_peak_base = cg_pread_u64(g, CGF_PIDS_PEAK, g->dirs[g->pids_i], "pids.peak");
	g->pids_peak_sampled = 0;
}

static int v1_kill_all(pd_cg *g)
{
	/* the pids hierarchy sees every task; freezing first is unnecessary because the sandbox
	 * is also a pid namespace whose init we kill */
	return cg_kill_procs_in(g->dirs[g->pids_i]) < 0 ? -1 : 0;
}

static int v1_destroy(pd_cg *g, pd_err *e)
{
	int rc = 0;
	cg_stats_close(g);
	for (int j = 0; j < g->ndirs; j++)
		if (cg_rmdir(g->dirs[j], false) < 0 && rc == 0)
			rc = pd_fail(e, errno, "rmdir cgroup %s", g->dirs[j]);
	free(g);
	return rc;
}

static bool v1_exists(pd_cg *g)
{
	for (int j = 0; j < g->ndirs; j++)
		if (access(g->dirs[j], F_OK) == 0)
			return true;
	return false;
}

static int v1_set_memory(pd_cg *g, uint64_t bytes, pd_err *e)
{
	/* -1 is v1's "unlimited"; memsw must stay >= the limit, so order the writes */
	const char *d = g->dirs[g->mem_i];
	if (!bytes)
		return cg_write(d, "memory.limit_in_bytes", "-1", e);
	cg_write_u64(d, "memory.memsw.limit_in_bytes", UINT64_MAX >> 2, NULL);
	int rc = cg_write_u64(d, "memory.limit_in_bytes", bytes, e);
	cg_write_u64(d, "memory.memsw.limit_in_bytes", bytes, NULL);
	return rc;
}

/* v1 has no memory.reclaim, and memory.force_empty evicts everything: the limit is lowered to
 * keep, which makes the kernel reclaim down to it the same way (coldest first, this cgroup's
 * slab objects too; EBUSY when it cannot), and put back. Only init, idle, runs meanwhile. */
static uint64_t v1_reclaim(pd_cg *g, uint64_t keep)
{
	char b[64];
	const char *m = g->dirs[g->mem_i];
	uint64_t usage = cg_read(m, "memory.usage_in_bytes", b, sizeof b) > 0 ? strtoull(b, NULL, 10) : 0;
	if (usage <= keep)
		return usage;
	char limit[64];
	ssize_t n = cg_read(m, "memory.limit_in_bytes", limit, sizeof limit);
	if (n <= 0)
		return usage;
	limit[strcspn(limit, "\n")] = 0;
	cg_write_u64(m, "memory.limit_in_bytes", keep, NULL);
	if (cg_write(m, "memory.limit_in_bytes", limit, NULL) < 0)
		return UINT64_MAX;
	return cg_read(m, "memory.usage_in_bytes", b, sizeof b) > 0 ? strtoull(b, NULL, 10) : 0;
}

static uint64_t v1_tasks(pd_cg *g)
{
	return cg_pread_u64(g, CGF_PIDS, g->dirs[g->pids_i], "pids.current");
}

/* A sandbox with I/O limits joins the blkio hierarchy too (the others never pay its mkdir). */
static int v1_set_io(pd_cg *g, const pd_iodev *devs, size_t n, const pd_limits *l, pd_err *e)
{
	if (g->root->v1_n <= V1_BLKIO)
		return pd_fail(e, EOPNOTSUPP, "I/O limits: the cgroup v1 blkio controller is not mounted");
	const char *name = strrchr(g->dirs[0], '/');
	char *dir = g->dirs[g->ndirs];
	if (!name || snprintf(dir, PD_PATH, "%s%s", g->root->v1_dirs[V1_BLKIO], name) >= PD_PATH)
		return pd_fail(e, ENAMETOOLONG, "blkio cgroup");
	if (mkdir(dir, 0755) < 0)
		return pd_fail(e, errno, "mkdir cgroup %s", dir);
	g->ndirs++; /* attach, destroy and exists take it from here */
	static const char *const files[] = {"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
					    "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"};
	const uint64_t v[] = {l->io_read_bps, l->io_write_bps, l->io_read_iops, l->io_write_iops};
	for (size_t i = 0; i < n; i++)
		for (int f = 0; f < 4; f++) {
			if (!v[f])
				continue;
			char line[64];
			snprintf(line, sizeof line, "%u:%u %" PRIu64, devs[i].maj, devs[i].min, v[f]);
			if (cg_write(dir, files[f], line, e) < 0)
				return -1;
		}
	return 0;
}

static int v1_join_fds(pd_cg *g, int *fds, int max, pd_err *e)
{
	int n = 0;
	for (int j = 0; j < g->ndirs; j++) {
		char p[PD_PATH + 8];
		snprintf(p, sizeof p, "%s/tasks", g->dirs[j]);
		int fd = n < max ? open(p, O_WRONLY | O_CLOEXEC) : (errno = E2BIG, -1);
		if (fd < 0) {
			int err = errno;
			while (n > 0)
				close(fds[--n]);
			return pd_fail(e, err, "open %s", p);
		}
		fds[n++] = fd;
	}
	return n;
}

const pd_cg_ops pd_cg_v1_ops = {"v1",         v1_create,  v1_clone_fd, v1_attach,
				  v1_stats,     v1_reset_peaks, v1_kill_all, v1_destroy,
				  v1_exists,    v1_set_memory,  cg_stats_close, v1_reclaim,
				  v1_tasks,     v1_set_io,      v1_sample,      v1_join_fds};
