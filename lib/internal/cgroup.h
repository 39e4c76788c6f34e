/* Private to lib/cgroup.c and lib/cgroup_v1.c: a sandbox's cgroup (struct pd_cg), the interface
 * files' helpers both backends use, and the v1 backend's table. */
#ifndef PADDOCK_LIB_CGROUP_H
#define PADDOCK_LIB_CGROUP_H

#include "internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum {
	CGF_CPU,
	CGF_CPU_STAT,
	CGF_MEM_PEAK,
	CGF_MEM_EVENTS,
	CGF_MEM_FAIL,  /* v1 memory.failcnt: limit hits */
	CGF_MEM_USAGE, /* v2 memory.current: the usage when the peak is reset */
	CGF_PIDS,
	CGF_PIDS_PEAK,
	CGF_N
};

struct pd_cg {
	pd_cgroups *root;
	char dirs[5][PD_PATH]; /* v2: dirs[0] only */
	int ndirs;
	int dirfd;             /* v2: the cgroup dir (for CLONE_INTO_CGROUP) */
	int mem_i, pids_i, cpu_i, cpuacct_i; /* v1: which dir serves each controller */
	uint64_t pids_peak_sampled; /* the highest pids.current read since reset_peaks */
	uint64_t pids_peak_base;    /* pids.peak when reset_peaks ran */
	/* The memory peak is reported over what the cgroup held when reset_peaks ran (mem_base):
	 * page cache an earlier exec or user was first to read stays charged here, and would
	 * otherwise count as this exec's. Unless the exec reached the limit (more limit hits
	 * than mem_hits_base): reaching it may have reclaimed that cache, and the peak is then
	 * the limit's, reported whole. */
	uint64_t mem_base, mem_hits_base;
	/* Files read at every exec, kept open from the first read to the end of the exec (rest)
	 * and re-read with pread at offset 0: an open of a cgroup file costs more than the read,
	 * but a sandbox at rest holds no descriptor for them. -1: not opened yet, -2: absent.
	 * v2's memory.peak is opened read-write, because a reset applies only to reads through the
	 * descriptor that wrote it. */
	int sfd[CGF_N];
};

void cg_stats_init(pd_cg *g);
void cg_stats_close(pd_cg *g);
int cg_stat_fd(pd_cg *g, int slot, const char *dir, const char *file, int flags);
ssize_t cg_pread(pd_cg *g, int slot, const char *dir, const char *file, char *buf, size_t size);
uint64_t cg_pread_u64(pd_cg *g, int slot, const char *dir, const char *file);
int cg_write(const char *dir, const char *file, const char *val, pd_err *e);
int cg_write_u64(const char *dir, const char *file, uint64_t v, pd_err *e);
ssize_t cg_read(const char *dir, const char *file, char *buf, size_t size);
int cg_rmdir(const char *dir, bool fake);
int cg_bad_name(const char *name, pd_err *e);
int cg_kill_procs_in(const char *dir);
void cg_pids_peak_since_reset(pd_cg *g, pd_cg_stats *st, uint64_t lifetime);
uint64_t cg_mem_peak_since_reset(const pd_cg *g, uint64_t peak, uint64_t hits);

/* the v1 hierarchies, in the order of pd_cgroups.v1_dirs */
enum { V1_MEMORY, V1_PIDS, V1_CPU, V1_CPUACCT, V1_BLKIO };

/* the v1 backend (cgroup_v1.c) */
extern const pd_cg_ops pd_cg_v1_ops;

#endif
