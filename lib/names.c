/* The names of a sandbox's states and of the verdicts, and the default limits: the small values
 * every file of a sandbox's life uses (create, exec, files, reset, netmode, the gvisor tier), kept
 * below them all so that none of them calls another for a name. */
#define _GNU_SOURCE
#include "internal.h"

static const char *const state_names[] = {"CREATING",    "READY",     "RUNNING",  "COLLECTING",
					  "RECLAIMING", "DESTROYED", "FAILED",   "TIMED_OUT",
					  "EXPIRED"};

const char *pd_state_name(pd_state s)
{
	return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "?";
}

const char *pd_status_name(pd_status s)
{
	static const char *const n[] = {"OK", "RE", "SG", "TO", "ML", "OL", "XX"};
	return (unsigned)s < 7 ? n[s] : "XX";
}

pd_limits pd_limits_default(void)
{
	pd_limits l = {
		.memory_bytes = 512ull << 20,
		.pids = 256,
		.cpu_ms = 10000,
		.wall_ms = 20000,
		.cpu_millicores = 1000,
		.disk_bytes = 256ull << 20,
		.output_bytes = 1ull << 20,
		.output_kill_bytes = 64ull << 20,
		.nofile = 256,
		.fsize_bytes = 0, /* none: the disk size bounds files (ENOSPC) */
		.stack_bytes = 8ull << 20,
	};
	return l;
}
