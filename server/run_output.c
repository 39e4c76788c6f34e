/* A run's full output, beyond the head and tail its record keeps (issue 39): POST /v1/runs
 * spills the run step's stdout and stderr, as sessions spill theirs, and GET
 * /v1/runs/{task_id}/output serves them.
 *
 * Each run writes its two streams to unnamed files (O_TMPFILE) in the output directory, beside the
 * store (<db>.output/), while the library captures its head and tail; a run whose output was cut
 * (more than the record keeps) gets them linked under names of its own,
 * <sha256(task_id)[:40]>.<attempt>.stdout|stderr; the others are closed and vanish, so a run that
 * printed little costs two file creations and its writes, never a name. A spill holds what the
 * program wrote up to its output kill (limits.output, else the template's output_kill: 64M).
 *
 * The disk used is bounded: after each kept spill, and at start, files older than
 * PD_RUN_OUTPUT_TTL_S go, then the oldest until the directory holds at most PD_RUN_OUTPUT_MAX
 * bytes. One lock orders the trims of this process (another daemon has a store and so a directory
 * of its own). */
#define _GNU_SOURCE
#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t trim_mu = PTHREAD_MUTEX_INITIALIZER;

static void base_name(const char *task_id, unsigned attempt, const char *stream, char *out, size_t len)
{
	char hex[65] = "";
	if (pd_sha256_of(task_id, strlen(task_id), hex) < 0)
		snprintf(hex, sizeof hex, "unknown");
	snprintf(out, len, "%.40s.%u.%s", hex, attempt, stream);
}

typedef struct ofile {
	char name[96];
	int64_t mtime;
	uint64_t bytes;
} ofile;

static int by_age(const void *a, const void *b)
{
	const ofile *x = a, *y = b;
	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime ? 1 : strcmp(x->name, y->name);
}

void pd_run_output_trim(const char *dir)
{
	pthread_mutex_lock(&trim_mu);
	DIR *d = opendir(dir);
	ofile *f = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	int64_t now = (int64_t)time(NULL);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof f->name ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (now - (int64_t)st.st_mtim.tv_sec > PD_RUN_OUTPUT_TTL_S) {
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (n == cap) {
			ofile *nf = realloc(f, (cap = cap ? cap * 2 : 64) * sizeof *nf);
			if (!nf)
				break;
			f = nf;
		}
		snprintf(f[n].name, sizeof f[n].name, "%s", de->d_name);
		f[n].mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		f[n].bytes = (uint64_t)st.st_blocks * 512;
		total += f[n].bytes;
		n++;
	}
	if (n && total > PD_RUN_OUTPUT_MAX) {
		qsort(f, n, sizeof *f, by_age);
		for (size_t i = 0; i < n && total > PD_RUN_OUTPUT_MAX; i++)
			if (unlinkat(dirfd(d), f[i].name, 0) == 0)
				total -= f[i].bytes;
	}
	free(f);
	if (d)
		closedir(d);
	pthread_mutex_unlock(&trim_mu);
}

int pd_run_output_init(const char *db_path, char *dir, size_t len, pd_err *e)
{
	if (snprintf(dir, len, "%s.output", db_path) >= (int)len)
		return pd_fail(e, ENAMETOOLONG, "%s.output", db_path);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return pd_fail(e, errno, "create %s", dir);
	pd_run_output_trim(dir);
	return 0;
}

int pd_run_output_open(const char *dir, int fds[2])
{
	fds[0] = fds[1] = -1;
	for (int i = 0; i < 2; i++) {
		fds[i] = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
		if (fds[i] < 0) {
			pd_run_output_close(fds);
			return -1;
		}
	}
	return 0;
}

void pd_run_output_close(int fds[2])
{
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int pd_run_output_keep(const char *dir, const char *task_id, unsigned attempt, int fds[2])
{
	static const char *const streams[] = {"stdout", "stderr"};
	char name[2][128], from[64];
	int rc = 0;
	for (int i = 0; i < 2 && rc == 0; i++) {
		base_name(task_id, attempt, streams[i], name[i], sizeof name[i]);
		char to[PATH_MAX];
		snprintf(to, sizeof to, "%s/%s", dir, name[i]);
		unlink(to); /* the same task id and attempt again: the newer run's */
		snprintf(from, sizeof from, "/proc/self/fd/%d", fds[i]);
		if (linkat(AT_FDCWD, from, AT_FDCWD, to, AT_SYMLINK_FOLLOW) < 0)
			rc = -1;
	}
	if (rc < 0)
		for (int i = 0; i < 2; i++) {
			char to[PATH_MAX];
			snprintf(to, sizeof to, "%s/%s", dir, name[i]);
			unlink(to);
		}
	pd_run_output_close(fds);
	pd_run_output_trim(dir);
	return rc;
}

int pd_run_output_path(const char *dir, const char *task_id, unsigned attempt, int stream, char *path, size_t len,
		       unsigned *found, pd_err *e)
{
	const char *s = stream == 2 ? "stderr" : "stdout";
	/* no attempt asked: the last one kept (retries are few: --retries, at most 10) */
	for (unsigned a = attempt ? attempt : 64; a >= (attempt ? attempt : 1u); a--) {
		char name[128];
		base_name(task_id, a, s, name, sizeof name);
		snprintf(path, len, "%s/%s", dir, name);
		if (access(path, R_OK) == 0) {
			*found = a;
			return 0;
		}
		if (a == 1)
			break;
	}
	return pd_fail_as(e, ENOENT,
		       "no kept output for task %s%s: only a run whose output was cut keeps it, for %d minutes "
		       "at most (and less when newer ones need the room)",
		       task_id, attempt ? " at that attempt" : "", PD_RUN_OUTPUT_TTL_S / 60);
}
