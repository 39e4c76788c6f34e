/* paddock bench's lifecycle section (the rows of `paddock bench` without --http, --judge, ...): what a
 * case, its kind of operation, its workers and their figures are, shared by the files of that
 * section, which cli/bench.c conducts (its head comment maps every file of the bench):
 *   bench_case.c     the failures of a worker and of a case, recorded
 *   bench_measure.c  the drivers: workers, the latency phase, the throughput cells, CPU counters
 *   bench_kinds.c    the kinds of operation (spawn, lib, pool) a case measures
 *   bench_residue.c  what our sandboxes leave on the host (processes in our uid slots, cgroups)
 *   bench_density.c  N idle sandboxes at once and what they cost the host
 *   bench_report.c   the table and the JSON object */
#ifndef PADDOCK_CLI_BENCH_CASE_H
#define PADDOCK_CLI_BENCH_CASE_H

#include "bench_util.h"
#include "cli.h"
#include "pool.h"

#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define MAX_WORKERS 2 /* the throughput cells: 1 worker, then 2 */
#define ERR_LEN 256
#define DENSITY_DEFAULT 1000
#define DENSITY_MAX	10000

/* ---- what the workers share (read-only while they run) --------------------------------------- */

typedef struct bench_env {
	pd_ctx *ctx;        /* NULL when the library could not start: lib cases are skipped */
	pd_sandbox_opts so; /* full isolation, default limits */
	pd_exec_opts xo;    /* /bin/true, stdin /dev/null, output kept (not passed through) */
} bench_env;

typedef struct worker worker;
typedef struct bench_case bench_case;

/* One kind of measurement: how a worker gets ready, does one operation, and cleans up. op returns
 * 0 when the operation did what it should, -1 after recording why not. */
typedef struct bench_kind {
	int (*setup)(worker *w);
	int (*op)(worker *w);
	void (*cleanup)(worker *w);
	/* State the workers of a case share for one phase (the pools): begin runs before the
	 * workers start, untimed; drain after they stop, timed (a cell lasts until the work its
	 * operations queued is done); end after the figures are taken. phase: 0 latency, 1 + slot
	 * for a throughput cell. */
	int (*begin)(bench_case *bc, const bench_env *env, int phase, int nworkers);
	void (*drain)(bench_case *bc, int phase);
	uint64_t (*end)(bench_case *bc, int phase); /* returns failures found after the fact */
	/* untimed, before each operation of the latency phase */
	void (*pace)(worker *w);
	bool no_latency, no_throughput;
	bool apart; /* measured by its own routine (density), not in the phases */
} bench_kind;

typedef struct lat_stats {
	size_t n;
	double p50, p99, mean, min, max; /* ms */
} lat_stats;

typedef struct tp_cell {
	bool done;
	int workers;
	uint64_t ok, failed;
	double secs, ops_s;
	double max_op_ms;   /* the slowest operation: a stall shows here and in secs */
	bool cpu_from_perf; /* cpu_ms_op from an inherited task-clock counter, else getrusage */
	double cpu_ms_op;   /* CPU of this process and all it started, per OK operation */
	double host_ms_op;  /* busy time of all CPUs (/proc/stat) per OK operation: adds kernel
			     * workers (namespace teardown is deferred to them) and other load */
} tp_cell;


/* What is left of our sandboxes on the host after a phase: processes running under the uids of
 * our slots (others' sandboxes on a shared host are counted apart, never as ours) and cgroups
 * named after our context. */
typedef struct leftovers {
	long procs, others, cgroups;
} leftovers;

/* What the pools of one phase did (pd_pools_stats when the requests and the reclaimer are done). */
typedef struct pool_phase {
	bool done;
	int workers;
	uint64_t acquires, hits, misses, created, destroyed, create_failures, residue_failures;
	uint64_t forced, resets, reset_refusals;
	uint32_t backlog; /* sandboxes queued for the reclaimer when the requests ended */
	double drain_s;	  /* time the reclaimer then took to empty its queue */
	bool drain_timeout;
	leftovers left; /* after pd_pools_free */
} pool_phase;

struct bench_case {
	const char *key, *label;
	const char *group; /* a second --only name for rows measured together (audit) */
	const bench_kind *kind;
	const char *const *argv; /* spawned kinds: the command */
	const pd_sandbox_opts *so; /* lib kinds: NULL = the env's */
	const pd_exec_opts *xo;
	bench_case *twin; /* latency measured in the same loop, alternating with this one */
	bool optional;	  /* not in the default run */
	/* the tier cells (--only gvisor): an operation can take seconds (runsc), so the latency
	 * phase stops starting operations after bound_ms, a spawned command is killed at it, and a
	 * pool's waits end at it; a cell cut short says so (lat_cut) */
	uint64_t bound_ms;
	bool lat_cut;
	const char *peer;   /* key of the row this one is compared with (gvisor against container) */
	const char *runsc;  /* key of the `runsc do` row (the floor of the gvisor tier) */
	bool selected;
	bool paired;	  /* its latency was measured with the case it is the twin of */
	const char *skip; /* why it was not measured */
	/* results */
	bool lat_done;
	lat_stats lat;
	tp_cell tp[MAX_WORKERS];
	uint64_t failed; /* over all phases, warm-up included */
	char error[ERR_LEN];
	uint64_t parts_n, part_us[3]; /* lib: sums of the lifecycle parts over the latency phase */
	const char *part_names[3];
	/* audited runs over the latency phase: events reported (files + net) and kept */
	uint64_t audit_runs, audit_reported, audit_kept, audit_notified;
	/* pool kinds: the pools of the phase under way, and what each phase's pools did */
	pd_pools *pools;
	pool_phase pool[1 + MAX_WORKERS];
};

struct worker {
	const bench_env *env;
	const bench_case *bc;
	uint64_t deadline_ns; /* bounded cases: operations and waits end by then (0: none) */
	/* spawned kinds */
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr; /* bounded cases: the child in a group of its own, killed whole */
	bool attr_ok;
	bool fa_ok;
	int nullfd, errfd; /* children's stdio: /dev/null, and a memfd that keeps their stderr */
	/* lib-exec: this worker's long-lived sandbox */
	pd_sandbox *sb;
	/* counts */
	uint64_t ok, failed;
	char error[ERR_LEN]; /* the first failure, as it was reported */
	uint64_t part_us[3];
	uint64_t audit_runs, audit_reported, audit_kept, audit_notified;
	/* throughput: the start signal and the end of the cell */
	struct tp_run *run;
	uint64_t max_op_ns;
};

/* The /proc/meminfo fields the case reads, in KiB. */
typedef struct meminfo {
	long long total, avail, free, slab, sreclaimable, sunreclaim, pagetables, kstack, percpu,
	    shmem, vmalloc;
} meminfo;

/* A reading of /proc/meminfo taken once MemAvailable has stopped moving: RCU callbacks, the
 * kernel's deferred namespace teardown and the release of offlined memory cgroups go on for
 * seconds (tens of seconds after thousands of sandboxes) after the last create or destroy. */
typedef struct settled {
	meminfo m;
	double waited_s; /* from the end of the creates or destroys to the reading */
	bool settled;	 /* MemAvailable moved less than SETTLE_TOL_KB over SETTLE_WINDOW_MS */
} settled;

typedef struct density_report {
	bool ran;
	int asked, created, threads;
	uint64_t create_failures, residue_failures;
	char error[ERR_LEN];   /* the first failure */
	char stopped[ERR_LEN]; /* why the case did not start, or stopped short of N */
	char limits[ERR_LEN];  /* the limits that bound N, and what was raised */
	double create_s, destroy_s;
	double create_p50, create_p99, destroy_p50, destroy_p99; /* ms */
	settled before, after, end;    /* before the creates, with all N idle, after the destroys */
	int sampled;		       /* inits whose memory was read */
	double rss_kb, pss_kb, uss_kb; /* means over them */
	int memcg_n;
	double memcg_kb;	/* mean charged to a sandbox's own memory cgroup */
	long long own_memcg_kb; /* growth of ours over the creates (what clone charged to us) */
	bool own_memcg_ok;
	leftovers left;
} density_report;

typedef struct machine {
	long cpus;
	char kernel[65];
	const char *cgroup;
	double load[3];
} machine;

/* the kinds of operation (bench_kinds.c) */
extern const bench_kind bench_kind_spawn, bench_kind_lib_run, bench_kind_lib_create, bench_kind_lib_exec,
	bench_kind_pool_exec, bench_kind_pool_tp, bench_kind_audit, bench_kind_egress, bench_kind_density,
	bench_kind_tier_create, bench_kind_tier_run;
/* bench_case.c: a failed operation of a worker: counted, and the first one's text kept; -1. */
int bench_record_failure(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failure of a case as a whole (its pools would not start, its residue); -1. */
int bench_case_failure(bench_case *bc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* bench_residue.c: remembers a sandbox of ours (its uid slot, our id prefix) so that what is
 * left of it can be told from other sandboxes on a shared host. */
void bench_note_sandbox(const pd_sandbox *s);
void bench_count_leftovers(leftovers *l);
/* leftover processes and cgroups of ours: each one a failure */
uint64_t bench_leftovers_bad(const leftovers *l);

/* bench_measure.c */
/* The watchdog of bounded cells: a cell still running limit_ms after it started (an operation
 * stuck inside the library, where no bound of the bench reaches) ends the bench with its name
 * and exit 2 instead of hanging it. 0 ends the watch. */
void bench_watch(const char *label, uint64_t limit_ms);
void bench_measure_latency(const bench_env *env, bench_case **bcs, int nb, int iterations);
void bench_measure_throughput(const bench_env *env, bench_case *bc, int slot, int nworkers,
			      uint64_t duration_ms);

/* bench_density.c */
void bench_run_density(const bench_env *env, int n, density_report *rep, bool progress);

/* bench_report.c */
void bench_print_table(const machine *m, const bench_case *cases, size_t ncases,
		       const bench_case *floor_c, const bench_case *bwrap_c, int iterations,
		       uint64_t duration_ms, const density_report *dens);
void bench_print_json(const machine *m, const bench_case *cases, size_t ncases,
		      const bench_case *floor_c, const bench_case *bwrap_c, int iterations,
		      uint64_t duration_ms, const density_report *dens);

#endif
