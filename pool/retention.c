/* Trajectory retention: a daemon deletes the trajectories of ended sessions once they are older
 * than its retention (pd_pools_opts.trajectory_retention_s; paddock serve
 * --trajectory-retention), so that a long-lived state directory does not fill up with them.
 *
 * Age is the file's modification time: the last step or the closing line. A trajectory is deleted
 * only when its session has ended: it has its closing line, or its daemon is no longer alive
 * (pd_ctx_run_alive; a daemon that starts closes those as lost first, session_lost.c); and never
 * while a session of these pools is open on it (an idle session with a long TTL has an old file).
 * The first reclaimer thread prunes at start and then every min(retention, 10 minutes). */
#define _GNU_SOURCE
#include "session_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool open_here(pd_pools *p, const char *id)
{
	bool found = false;
	pthread_mutex_lock(&p->mu);
	for (pd_session *s = p->sessions; s && !found; s = s->next)
		found = !strcmp(s->id, id) || (s->resume_id[0] && !strcmp(s->resume_id, id));
	pthread_mutex_unlock(&p->mu);
	return found;
}

/* a session id's run ("ss-<8 hex>-<n>"), or 0 when the name is not a session id's */
static bool run_of(const char *id, uint32_t *run)
{
	if (strncmp(id, "ss-", 3) || strlen(id) < 13 || id[11] != '-' || strspn(id + 3, "0123456789abcdef") < 8)
		return false;
	char hex[9];
	memcpy(hex, id + 3, 8);
	hex[8] = 0;
	*run = (uint32_t)strtoul(hex, NULL, 16);
	return true;
}

size_t pd_trajectories_prune(pd_pools *p, uint64_t older_than_s)
{
	const char *state = pd_ctx_state_dir(p->ctx);
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/trajectories", state);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	time_t now = time(NULL);
	size_t removed = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len <= 6 || strcmp(de->d_name + len - 6, ".jsonl") || de->d_name[0] == '.')
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_mtime + (time_t)older_than_s > now)
			continue;
		char id[64];
		if (len - 6 >= sizeof id)
			continue;
		memcpy(id, de->d_name, len - 6);
		id[len - 6] = 0;
		if (open_here(p, id))
			continue;
		pd_err e = {0};
		json_t *last = pd_trajectory_last(state, id, &e);
		const char *what = json_string_value(json_object_get(last, "kind"));
		bool closed = what && !strcmp(what, "close");
		json_decref(last);
		uint32_t run;
		if (!closed && (!run_of(id, &run) || pd_ctx_run_alive(p->ctx, run)))
			continue; /* a session still open somewhere (or a file that is not a session's) */
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
