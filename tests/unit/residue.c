/* Nothing left behind: counts what a sandbox could leave on the host (processes, threads, fds,
 * mounts, cgroups, namespaces, staging files, uid slots) before and after many sandboxes.
 * PADDOCK_RESIDUE_N sets the count (default 1000). */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"
#include "../hostcount.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
	int n = getenv("PADDOCK_RESIDUE_N") ? atoi(getenv("PADDOCK_RESIDUE_N")) : 1000;
	plan(13);
	pd_err e = {0};
	pd_ctx *c = pd_ctx_new(NULL, &e);
	if (!ok(c != NULL, "context: %s", c ? "ok" : e.msg))
		return 1;
	pd_sandbox_opts so = {0};
	so.limits = pd_limits_default();
	/* the program leaves work behind on purpose: a daemon, a file, a shm segment */
	static char sh[] = "/bin/sh", dash_c[] = "-c",
		    script[] = "(setsid sleep 30 &) ; echo x > /tmp/f; : > /dev/shm/s; "
			       "ipcmk -M 4096 >/dev/null 2>&1; true";
	char *argv[] = {sh, dash_c, script, NULL};
	pd_exec_opts xo = {0};
	xo.argv = argv;
	xo.stdin_fd = -1;
	/* one run first so that lazily made things (image, slots, cgroup parents) exist */
	pd_result r;
	pd_run(c, &so, &xo, &r, &e);
	pd_result_free(&r);
	snap before, after;
	take(c, &before);
	int bad = 0, dirty = 0;
	char first_bad[256] = "";
	for (int i = 0; i < n; i++) {
		if (pd_run(c, &so, &xo, &r, &e) < 0 || r.status != PD_OK) {
			if (!bad++)
				snprintf(first_bad, sizeof first_bad, "%s %s", pd_status_name(r.status), r.error);
		}
		if (strcmp(r.residue, "clean")) {
			if (!dirty++ && !first_bad[0])
				snprintf(first_bad, sizeof first_bad, "residue %s", r.residue);
		}
		pd_result_free(&r);
	}
	is_int(bad, 0, "%d sandboxes all ran OK %s", n, first_bad);
	is_int(dirty, 0, "every teardown reported a clean residue");
	/* namespaces and the last sandbox's processes vanish asynchronously: give the kernel time */
	settle(c, &before, &after);
	is_int(own_fds(&after), own_fds(&before), "no parent-side fd left (%ld)", own_fds(&after));
	is_int(after.threads, before.threads, "no thread left");
	ok(after.mounts <= before.mounts, "no mount left in the host namespace (%d, %d before)", after.mounts,
	   before.mounts);
	is_int(after.cgroups, before.cgroups, "no sandbox cgroup left");
	is_int(after.procs, 0, "no process in the sandboxes' uid ranges on the host");
	is_int(after.stage, 0, "the staging directory is empty on the host");
	/* the context keeps idle namespaces for reuse (lib/netns.c): they are not a leak */
	pd_netns_stats nst;
	pd_ctx_netns_stats(c, &nst);
	ok(after.netns <= before.netns + (long)nst.idle + NS_SLACK,
	   "network namespaces back to %ld + %llu idle in the pool (now %ld)", before.netns,
	   (unsigned long long)nst.idle, after.netns);
	ok(after.pidns <= before.pidns + NS_SLACK, "pid namespaces back to %ld (now %ld)", before.pidns,
	   after.pidns);
	ok(after.userns <= before.userns + NS_SLACK, "user namespaces back to %ld (now %ld)", before.userns,
	   after.userns);
	/* the uid slots this process holds are reused, not one per sandbox */
	is_int(after.slot_locks, before.slot_locks, "uid slots are recycled (%d held)", after.slot_locks);
	pd_ctx_free(c);
	return done();
}
