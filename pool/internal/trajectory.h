/* Internals of a session's trajectory (pool/trajectory.c) and the file-change scan
 * (pool/fsdiff.c). Digests are lib's SHA-256 (pd_sha256). */
#ifndef PADDOCK_TRAJECTORY_H
#define PADDOCK_TRAJECTORY_H

#include "pool.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- what a step changed in the writable directories ---- */
typedef struct pd_fsent {
	char *path; /* inside the sandbox, absolute */
	uint64_t size, ino;
	int64_t mtime_ns, ctime_ns;
	uint32_t mode;
	/* from the writable layer (pd_sandbox_upper_list), not a scratch directory's walk: a
	 * deletion of an image's entry, whether the image has the path */
	bool upper, deleted, in_image;
} pd_fsent;

typedef struct pd_fsmap {
	pd_fsent *e; /* sorted by path */
	size_t n, cap;
	bool truncated; /* more entries than PD_FSMAP_MAX: the rest is not compared */
} pd_fsmap;

#define PD_FSMAP_MAX 50000
/* Lists dirs (absolute paths inside the sandbox whose init is host pid init) without following
 * any symlink. Returns 0, or -1 when the sandbox's root could not be opened. */
int pd_fsmap_scan(pid_t init, const char *const *dirs, pd_fsmap *m);
/* Adds the entries of the sandbox's writable layer (what differs from the image outside the
 * scratch directories) to m, paths under skip left out, and sorts m again. Returns 0 or -1. */
int pd_fsmap_add_upper(pd_sandbox *sb, const char *const *skip, pd_fsmap *m);
/* The entries added, modified or deleted from before to after: [{"path","change","type","size",
 * "sha256"}] (digests of regular files up to 16 MiB and of symlinks' targets, read now). */
json_t *pd_fsmap_diff(pid_t init, const pd_fsmap *before, const pd_fsmap *after);
void pd_fsmap_free(pd_fsmap *m);

/* ---- the trajectory file ---- */
typedef struct pd_traj pd_traj;
/* Creates <state>/trajectories/<id>.jsonl (refused if it exists) and writes its first line. */
pd_traj *pd_traj_create(const char *state_dir, const char *id, json_t *header, pd_err *e);
/* Appends one step line (fields trajectory_id and step set here; line is taken), written with
 * one write() and fdatasync'd before returning. Returns the step number, or -1. */
long pd_traj_append(pd_traj *t, json_t *line, pd_err *e);
void pd_traj_close(pd_traj *t);
/* Closes the trajectory of a session its daemon lost (it died with the session open): a closing
 * line {"kind": "close", "lost": true, reason, ended_at} unless it has one; a partial last line
 * (cut by the crash, never answered) is removed first. 0 also when there is no such file. */
int pd_traj_close_lost(const char *state_dir, const char *id, const char *ended_at, const char *reason, pd_err *e);

/* The recorded trajectory a resumed session fast-forwards from: its step lines by request id. */
typedef struct pd_traj_index pd_traj_index;
pd_traj_index *pd_traj_index_load(const char *state_dir, const char *id, pd_err *e);
/* The recorded line of the step with that request id and kind, or NULL (borrowed). */
json_t *pd_traj_index_find(pd_traj_index *x, const char *kind, const char *request_id);
void pd_traj_index_free(pd_traj_index *x);

#endif
