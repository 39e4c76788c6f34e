/* The scratch directories kept across resets (scratch.c): the one module that knows what the
 * host did to a sandbox's /tmp, /work and /dev/shm since its last reset, and so whether the next
 * reset may keep them. Its state lives in the sandbox (pd_keep_state); only scratch.c reads or
 * writes it. files.c reports the host's file operations here; exec.c ends the setup; reset.c asks
 * for the verdict and reports the new scratch. */
#ifndef PADDOCK_SCRATCH_H
#define PADDOCK_SCRATCH_H

#include "internal.h"
#include "proto.h"

#include <sys/stat.h>

/* The scratch directories and devpts, kept by a reset when the last user only read them
 * (upperwatch.c's scratch watches, child.c's scratch_as_left). The host's own file there (the
 * program's source) is what makes that hold: a reset that keeps the scratch leaves it in place
 * (resid) for the next user's to overwrite, which then has the inode number a fresh sandbox's
 * first file has; any other use of the sandbox before its first exec replaces the scratch first
 * (so a new file's inode number, the scratch's free space and its listing are a fresh one's). */
typedef struct pd_keepfile {
	char path[PD_PATH];
	uint32_t mode;    /* as asked (the open's mode) */
	uint32_t st_mode; /* as made (st_mode & 07777) */
	uint64_t ino, size, blocks;
} pd_keepfile;

typedef struct pd_keep_state {
	pd_swatch sw;
	bool setup;   /* no exec since creation or the last reset: what the host does is setup */
	int nhost;    /* the file the host wrote directly in a scratch directory in setup: 0 or 1 */
	bool spoiled; /* something the next reset cannot account for: it replaces the scratch */
	pd_keepfile host, resid_file; /* that file; the last user's, left in place */
	bool resid;   /* resid_file is there, not yet overwritten by this user's host */
	uint32_t resets_scratch_kept;
} pd_keep_state;

/* A new sandbox: its setup begins (create). */
void pd_scratch_created(pd_sandbox *s);
/* Setup ends with the first exec: from then on a program may have run, so the scratch watches'
 * events count. The last user's file, if this user's host did not overwrite it, goes first. */
int pd_scratch_end_setup(pd_sandbox *s, pd_err *e);

/* files.c, before a file operation (op, path, flags, mode as asked, use): *reuse when it is
 * pd_sandbox_write_file's open of the last user's file to overwrite it in place; any other
 * operation during setup replaces that scratch first. */
int pd_scratch_fileop_begin(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode,
			    pd_fop_use use, bool *reuse, pd_err *e);
/* files.c, when the open that was to overwrite the last user's file failed. */
int pd_scratch_fileop_unreuse(pd_sandbox *s, pd_err *e);
/* files.c, after a file operation that succeeded. */
void pd_scratch_fileop_done(pd_sandbox *s, uint32_t op, int flags, pd_fop_use use);
/* files.c, after pd_sandbox_write_file wrote a file (st: its fstat then). */
void pd_scratch_host_wrote(pd_sandbox *s, const char *path, mode_t mode, const struct stat *st);

/* reset.c: the reset's request to init, with what the scratch directories should hold if they
 * may be kept; returns whether they may. */
bool pd_scratch_request(pd_sandbox *s, struct msg_reset *m);
/* reset.c, once init and the root agree (kept root; init found the scratch as left): keeps the
 * scratch if its watches still saw nothing that counts; returns whether it did. */
bool pd_scratch_keep(pd_sandbox *s);
/* The helper's configuration for a reset that keeps the root: new scratch mounts and devpts,
 * watched, laid out as the last rebuild laid the staging tmpfs out. */
void pd_scratch_keep_root_cfg(const pd_sandbox *s, child_cfg *cfg);
/* reset.c: the helper made new scratch directories and devpts (rep: their watches). */
void pd_scratch_new(pd_sandbox *s, const pd_reset_report *rep);
/* reset.c: the reset is done; the next user's setup begins. */
void pd_scratch_reset_done(pd_sandbox *s);
/* destroy: drops the scratch watches. */
void pd_scratch_forget(pd_sandbox *s);

#endif
