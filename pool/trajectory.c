/* A session's trajectory: every step (exec, file write/read/delete, upload, download, reset,
 * snapshot) as one line of JSON appended to <state>/trajectories/<session id>.jsonl.
 *
 * Durability: the file is opened O_APPEND; each line is one write() and is fdatasync'd before the
 * step is answered, so a step a client saw answered is on disk, and a daemon that dies mid-write
 * leaves at most one partial last line (a reader skips a line without its newline). The file
 * stays after the session ends and across daemon restarts: GET /v1/sessions/<id>/trajectory
 * serves its bytes as they are. */
#define _GNU_SOURCE
#include "trajectory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pd_traj {
	int fd;
	long step;
	char id[64];
};

/* the id names a file: the characters session ids are made of, nothing that walks */
static bool good_id(const char *id)
{
	size_t n = strlen(id);
	if (!n || n > 63 || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') || (id[i] >= '0' && id[i] <= '9') ||
		      id[i] == '-' || id[i] == '_' || id[i] == '.'))
			return false;
	return true;
}

int pd_trajectory_path(const char *state_dir, const char *id, char *path, size_t len, pd_err *e)
{
	if (!good_id(id))
		return pd_fail(e, EINVAL, "trajectory id: 1 to 63 letters, digits, '-', '_' or '.'");
	if ((size_t)snprintf(path, len, "%s/trajectories/%s.jsonl", state_dir, id) >= len)
		return pd_fail(e, ENAMETOOLONG, "trajectory path");
	return 0;
}

static int write_line(int fd, json_t *line, pd_err *e)
{
	char *text = pd_json_dumps(line, JSON_COMPACT);
	if (!text)
		return pd_fail(e, ENOMEM, "trajectory line");
	size_t n = strlen(text);
	char *buf = realloc(text, n + 2);
	if (!buf) {
		free(text);
		return pd_fail(e, ENOMEM, "trajectory line");
	}
	buf[n] = '\n';
	ssize_t w = write(fd, buf, n + 1);
	int err = errno;
	free(buf);
	if (w != (ssize_t)(n + 1))
		return pd_fail(e, w < 0 ? err : ENOSPC, "trajectory write");
	if (fdatasync(fd) < 0)
		return pd_fail(e, errno, "trajectory fdatasync");
	return 0;
}

pd_traj *pd_traj_create(const char *state_dir, const char *id, json_t *header, pd_err *e)
{
	char path[4096], dir[4096];
	if (pd_trajectory_path(state_dir, id, path, sizeof path, e) < 0)
		return NULL;
	snprintf(dir, sizeof dir, "%s/trajectories", state_dir);
	if (pd_mkdir_p(dir, 0700) < 0) {
		pd_fail(e, errno, "trajectory directory %s", dir);
		return NULL;
	}
	pd_traj *t = calloc(1, sizeof *t);
	if (!t) {
		pd_fail(e, ENOMEM, "trajectory");
		return NULL;
	}
	t->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
	if (t->fd < 0) {
		pd_fail(e, errno, "trajectory %s", path);
		free(t);
		return NULL;
	}
	snprintf(t->id, sizeof t->id, "%s", id);
	json_object_set_new(header, "trajectory_id", json_string(id));
	json_object_set_new(header, "step", json_integer(0));
	int rc = write_line(t->fd, header, e);
	if (rc < 0) {
		close(t->fd);
		unlink(path);
		free(t);
		return NULL;
	}
	return t;
}

long pd_traj_append(pd_traj *t, json_t *line, pd_err *e)
{
	long n = t->step + 1;
	/* the two identifying fields first, as a reader of the lines sees them */
	json_t *o = json_pack("{s:s,s:I}", "trajectory_id", t->id, "step", (json_int_t)n);
	json_object_update(o, line);
	json_decref(line);
	int rc = write_line(t->fd, o, e);
	json_decref(o);
	if (rc < 0)
		return -1;
	t->step = n;
	return n;
}

void pd_traj_close(pd_traj *t)
{
	if (!t)
		return;
	close(t->fd);
	free(t);
}

/* The last whole line of the file open at fd (a line a crash cut is not one), malloc'd, and the
 * offset where what follows it starts (the cut line, if any). NULL when there is none. */
static char *last_line(int fd, off_t *end_of_whole)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return NULL;
	/* a closing line is small, a step line up to a few MiB: read back until a newline before
	 * the last one is found */
	size_t want = 65536;
	for (;;) {
		off_t from = st.st_size > (off_t)want ? st.st_size - (off_t)want : 0;
		size_t n = (size_t)(st.st_size - from);
		char *buf = malloc(n + 1);
		if (!buf || pread(fd, buf, n, from) != (ssize_t)n) {
			free(buf);
			return NULL;
		}
		buf[n] = 0;
		char *nl = n ? memrchr(buf, '\n', n) : NULL;
		if (!nl && from == 0) {
			free(buf);
			*end_of_whole = 0;
			return NULL;
		}
		if (nl) {
			*end_of_whole = from + (nl - buf) + 1;
			*nl = 0;
			char *start = memrchr(buf, '\n', (size_t)(nl - buf));
			if (start || from == 0) {
				char *line = strdup(start ? start + 1 : buf);
				free(buf);
				return line;
			}
		}
		free(buf);
		if (want >= (64u << 20))
			return NULL;
		want *= 4;
	}
}

json_t *pd_trajectory_last(const char *state_dir, const char *id, pd_err *e)
{
	char path[4096];
	if (pd_trajectory_path(state_dir, id, path, sizeof path, e) < 0)
		return NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pd_fail(e, errno, "trajectory %s", id);
		return NULL;
	}
	off_t end;
	char *line = last_line(fd, &end);
	close(fd);
	json_t *o = line ? json_loads(line, 0, NULL) : NULL;
	free(line);
	if (!json_is_object(o)) {
		json_decref(o);
		pd_fail(e, EINVAL, "trajectory %s has no whole line", id);
		return NULL;
	}
	return o;
}

int pd_traj_close_lost(const char *state_dir, const char *id, const char *ended_at, const char *reason, pd_err *e)
{
	char path[4096];
	if (pd_trajectory_path(state_dir, id, path, sizeof path, e) < 0)
		return -1;
	int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : pd_fail(e, errno, "trajectory %s", id);
	off_t end = 0;
	char *text = last_line(fd, &end);
	json_t *last = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	const char *kind = json_string_value(json_object_get(last, "kind"));
	int rc = 0;
	if (!kind || strcmp(kind, "close")) {
		/* a line the crash cut was never answered: it goes, so that the closing line is a line */
		struct stat st;
		if (fstat(fd, &st) == 0 && st.st_size > end && ftruncate(fd, end) < 0)
			rc = pd_fail(e, errno, "trajectory %s: cut its partial last line", id);
		json_int_t step = json_integer_value(json_object_get(last, "step"));
		json_t *line = json_pack("{s:s,s:I,s:s,s:s,s:s,s:b}", "trajectory_id", id, "step", step + 1, "kind",
					 "close", "ended_at", ended_at, "reason", reason, "lost", 1);
		if (rc == 0)
			rc = write_line(fd, line, e);
		json_decref(line);
	}
	json_decref(last);
	close(fd);
	return rc;
}

/* ---- fast-forward ---- */

struct pd_traj_index {
	json_t *lines; /* array of the recorded step lines */
};

json_t *pd_trajectory_load(const char *state_dir, const char *id, pd_err *e)
{
	char path[4096];
	if (pd_trajectory_path(state_dir, id, path, sizeof path, e) < 0)
		return NULL;
	FILE *f = fopen(path, "re");
	if (!f) {
		pd_fail(e, errno, "trajectory %s", id);
		return NULL;
	}
	json_t *arr = json_array();
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n')
			break; /* a last line cut by a crash */
		json_t *o = json_loadb(line, (size_t)n, 0, NULL);
		if (json_is_object(o))
			json_array_append_new(arr, o);
		else
			json_decref(o);
	}
	free(line);
	fclose(f);
	return arr;
}

pd_traj_index *pd_traj_index_load(const char *state_dir, const char *id, pd_err *e)
{
	json_t *arr = pd_trajectory_load(state_dir, id, e);
	if (!arr)
		return NULL;
	pd_traj_index *x = calloc(1, sizeof *x);
	if (!x) {
		json_decref(arr);
		pd_fail(e, ENOMEM, "trajectory");
		return NULL;
	}
	x->lines = arr;
	return x;
}

json_t *pd_traj_index_find(pd_traj_index *x, const char *kind, const char *rid)
{
	if (!x || !rid)
		return NULL;
	size_t i;
	json_t *o;
	json_array_foreach(x->lines, i, o) {
		const char *r = json_string_value(json_object_get(o, "request_id"));
		const char *k = json_string_value(json_object_get(o, "kind"));
		if (r && k && !strcmp(r, rid) && !strcmp(k, kind))
			return o;
	}
	return NULL;
}

void pd_traj_index_free(pd_traj_index *x)
{
	if (!x)
		return;
	json_decref(x->lines);
	free(x);
}
