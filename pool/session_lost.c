/* Sessions and daemon restarts. A session's sandbox never outlives the daemon that made it: its
 * init exits as soon as the daemon's end of its control socket closes (lib/child.c), so that no
 * sandbox is ever left running without an owner. What survives a restart is what is on disk: the
 * session's trajectory and its snapshots (a new session can be forked from a snapshot and
 * fast-forwarded from the trajectory, docs/sessions.md).
 *
 * So a session open when its daemon ended is lost, and says so: a daemon that stops closes its
 * sessions' trajectories with that reason (session.c), and one that died (SIGKILL, a crash, the
 * host's OOM killer) is found out by the next daemon to start on the state directory. A session
 * directory (<state>/sessions/ss-<run id>-<n>, its spilled output) whose run is not alive in the
 * host's owner registry (pd_ctx_run_alive: every paddock holds its file there while it lives)
 * belongs to a dead daemon: its trajectory gets a closing line {"kind": "close", "lost": true, "reason": ...} and
 * the directory goes. A client asking about such a session is answered at once (410 with the
 * reason, server/http/sessions.c), never left waiting. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "ss-<8 hex>-<n>": the run id, or false */
static bool session_run(const char *name, char run[9])
{
	if (strncmp(name, "ss-", 3) || strlen(name) < 13 || name[11] != '-' || strspn(name + 3, "0123456789abcdef") < 8)
		return false;
	memcpy(run, name + 3, 8);
	run[8] = 0;
	return true;
}

static void rm_flat_dir(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

void pd_sessions_recover(pd_pools *p)
{
	const char *state = pd_ctx_state_dir(p->ctx);
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/sessions", state);
	DIR *d = opendir(dir);
	if (!d)
		return;
	char now[40];
	session_wall_text(pd_wall_us(), now);
	struct dirent *de;
	while ((de = readdir(d))) {
		char run[9];
		if (!session_run(de->d_name, run) || pd_ctx_run_alive(p->ctx, (uint32_t)strtoul(run, NULL, 16)))
			continue;
		char why[300];
		snprintf(why, sizeof why,
			 "lost: the daemon that held the session (run %s) ended without closing it; a sandbox "
			 "does not outlive its daemon, so its processes and files are gone (its trajectory and "
			 "snapshots remain)",
			 run);
		pd_err e = {0};
		pd_traj_close_lost(state, de->d_name, now, why, &e);
		rm_flat_dir(dirfd(d), de->d_name);
	}
	closedir(d);
}
