/* The scratch directories (/tmp, /work, /dev/shm) and devpts across resets: what the host did
 * to them since the last reset (files.c reports its file operations, exec.c the end of setup),
 * and so whether the next reset may keep them (reset.c asks). The state is the sandbox's keep
 * field (scratch.h); no other file reads or writes it. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void pd_scratch_created(pd_sandbox *s)
{
	s->keep.setup = true;
}

void pd_scratch_reset_done(pd_sandbox *s)
{
	s->keep.setup = true;
}

void pd_scratch_forget(pd_sandbox *s)
{
	pd_uwatch_forget_scratch(s->ctx->uwatch, &s->keep.sw);
}

/* Which scratch directory (0 /tmp, 1 /work, 2 /dev/shm) path names a file directly in, with the
 * file's name in *name; -1 if none, or if that directory is the image's own, not a scratch mount. */
static int scratch_child(const pd_sandbox *s, const char *path, const char **name)
{
	static const char *const dst[PD_NSCRATCH] = {"/tmp/", "/work/", "/dev/shm/"};
	for (int i = 0; i < PD_NSCRATCH; i++) {
		size_t n = strlen(dst[i]);
		if (strncmp(path, dst[i], n))
			continue;
		const char *b = path + n;
		/* '#': the names inotify gives a program's O_TMPFILE files ("#<inode>") */
		if (!*b || strchr(b, '/') || !strcmp(b, ".") || !strcmp(b, "..") || *b == '#' ||
		    strlen(b) > 255 || (i < PD_SCRATCH_IMG && !s->scr[i].on))
			return -1;
		*name = b;
		return i;
	}
	return -1;
}

/* A reset's helper's new scratch directories and devpts: their watches replace the old ones,
 * and nothing of the host's is in them yet. */
void pd_scratch_new(pd_sandbox *s, const pd_reset_report *rep)
{
	pd_uwatch *w = s->ctx->uwatch;
	pd_uwatch_forget_scratch(w, &s->keep.sw);
	if (rep->nswd == PD_NSCRATCH + 1)
		pd_uwatch_add_scratch(w, &s->keep.sw, rep->swd, rep->nswd);
	s->keep.nhost = 0;
	s->keep.resid = false;
	s->keep.spoiled = false;
}

/* The helper's configuration for a reset that keeps the root: new scratch mounts and devpts,
 * watched, laid out as the last rebuild laid the staging tmpfs out. */
void pd_scratch_keep_root_cfg(const pd_sandbox *s, child_cfg *cfg)
{
	cfg->disk_bytes = s->lim.disk_bytes;
	cfg->keep_root = true;
	memcpy(cfg->scr, s->scr, sizeof cfg->scr);
	cfg->nlayers = s->nlayers;
	cfg->uwatch_fd = pd_uwatch_fd(s->ctx->uwatch);
}

/* New scratch directories and devpts for a sandbox whose root a reset kept (the helper's
 * keep_root): at a reset, and before the first use of a sandbox whose kept scratch still holds
 * the last user's file when the new user does not overwrite it. */
static int replace_scratch(pd_sandbox *s, pd_err *e)
{
	child_cfg *cfg = calloc(1, sizeof *cfg);
	if (!cfg)
		return pd_fail(e, ENOMEM, "sandbox %s: new scratch directories", s->id);
	pd_scratch_keep_root_cfg(s, cfg);
	pd_reset_report rep;
	int rc = pd_reset_root(cfg, s->pidfd, NULL, &rep);
	free(cfg);
	if (rc < 0) {
		rep.what[sizeof rep.what - 1] = 0;
		return pd_fail(e, rep.err, "sandbox %s: new scratch directories: %s", s->id, rep.what);
	}
	pd_scratch_new(s, &rep);
	return 0;
}

/* Setup ends with the first exec: from then on a program may have run, so the scratch watches'
 * events count. The last user's file, if this user's host did not overwrite it, goes first. */
int pd_scratch_end_setup(pd_sandbox *s, pd_err *e)
{
	if (!s->keep.setup)
		return 0;
	if (s->keep.resid && replace_scratch(s, e) < 0)
		return -1;
	pd_uwatch_arm(s->ctx->uwatch, &s->keep.sw);
	s->keep.setup = false;
	return 0;
}

/* files.c, before a file operation (op, path, flags, mode as asked, use): *reuse when it is
 * pd_sandbox_write_file's open of the last user's file to overwrite it in place (as it was made:
 * O_CREAT | O_TRUNC, no O_EXCL, the same path and mode); any other operation during setup
 * replaces that scratch first. */
int pd_scratch_fileop_begin(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode,
			    pd_fop_use use, bool *reuse, pd_err *e)
{
	*reuse = false;
	if (!s->keep.setup || !s->keep.resid)
		return 0;
	if (use == PD_FOP_WRITE && op == FILEOP_OPEN && (flags & O_CREAT) && (flags & O_TRUNC) &&
	    !(flags & (O_EXCL | O_TMPFILE)) && (flags & O_ACCMODE) != O_RDONLY &&
	    !strcmp(path, s->keep.resid_file.path) && (uint32_t)mode == s->keep.resid_file.mode) {
		*reuse = true;
		return 0;
	}
	return replace_scratch(s, e);
}

/* files.c, when the open that was to overwrite the last user's file failed. */
int pd_scratch_fileop_unreuse(pd_sandbox *s, pd_err *e)
{
	return replace_scratch(s, e);
}

/* files.c, after a file operation that succeeded. What the next reset may keep must be only what
 * it can account for: a descriptor handed to the caller could still read (or write) the host's
 * file when the next user's host has overwritten it, and during setup, when the watches do not
 * count the host's own events, a directory made or an entry removed or any other file made
 * moves the tmpfs's inode counter. Either spoils the scratch until the next one is made. */
void pd_scratch_fileop_done(pd_sandbox *s, uint32_t op, int flags, pd_fop_use use)
{
	if (use == PD_FOP_HANDED)
		s->keep.spoiled = true;
	if (!s->keep.setup || use == PD_FOP_WRITE)
		return; /* armed: the watches see it; a write: pd_scratch_host_wrote */
	bool reads = op == FILEOP_OPEN && !(flags & (O_CREAT | O_TRUNC | O_TMPFILE)) &&
		     ((flags & O_PATH) || (flags & O_ACCMODE) == O_RDONLY);
	if (!reads)
		s->keep.spoiled = true;
}

/* files.c, after pd_sandbox_write_file wrote a file (st: its fstat then): during setup, the one
 * file the host makes directly in a scratch directory, which the program may then read and the
 * next reset keep; anything else it cannot account for spoils the scratch. Its open took the
 * last user's file when resid was still set (pd_scratch_fileop_begin): that must be the file left. */
void pd_scratch_host_wrote(pd_sandbox *s, const char *path, mode_t mode, const struct stat *st)
{
	if (s->keep.resid) {
		s->keep.resid = false;
		if (st->st_ino != s->keep.resid_file.ino || st->st_nlink != 1) {
			s->keep.spoiled = true;
			return;
		}
	}
	if (!s->keep.setup)
		return;
	const char *name;
	int d = scratch_child(s, path, &name);
	/* elsewhere, a second file (one at most is looked at), or one too large to leave charged to
	 * the sandbox's memory until the next user's overwrites it */
	if (d < 0 || !S_ISREG(st->st_mode) || st->st_nlink != 1 ||
	    (s->keep.nhost && st->st_ino != s->keep.host.ino) || (uint64_t)st->st_size > PD_KEEP_FILE_MAX) {
		s->keep.spoiled = true;
		return;
	}
	s->keep.nhost = 1;
	snprintf(s->keep.host.path, sizeof s->keep.host.path, "%s", path);
	s->keep.host.mode = (uint32_t)mode;
	s->keep.host.st_mode = st->st_mode & 07777;
	s->keep.host.ino = st->st_ino;
	s->keep.host.size = (uint64_t)st->st_size;
	s->keep.host.blocks = (uint64_t)st->st_blocks;
	/* unarmed during setup: upperwatch.c reads none of these until pd_uwatch_arm */
	s->keep.sw.file_dir = d;
	snprintf(s->keep.sw.file_name, sizeof s->keep.sw.file_name, "%s", name);
	s->keep.sw.nfiles = 1;
}

/* The reset's request to init, with what the scratch directories should hold if they may be
 * kept: returns whether they may (watched, no event that counts so far, at most one file of
 * the host's, the last user's left in place if this one's host made none). */
bool pd_scratch_request(pd_sandbox *s, struct msg_reset *m)
{
	memset(m, 0, sizeof *m);
	m->type = MSG_RESET;
	if (s->keep.spoiled || (s->keep.nhost && s->keep.resid) ||
	    !pd_uwatch_scratch_clean(s->ctx->uwatch, &s->keep.sw))
		return false;
	for (int i = 0; i < PD_NSCRATCH; i++) {
		bool img = i < PD_SCRATCH_IMG;
		m->dir[i].on = img ? s->scr[i].on : true;
		/* /dev/shm as make_scratch makes it, by uid 0 */
		m->dir[i].mode = img ? s->scr[i].mode : 01777;
		m->dir[i].uid = img ? s->scr[i].uid : 0;
		m->dir[i].gid = img ? s->scr[i].gid : 0;
	}
	const pd_keepfile *f = s->keep.nhost == 1 ? &s->keep.host : s->keep.resid ? &s->keep.resid_file : NULL;
	if (f) {
		const char *name;
		int d = scratch_child(s, f->path, &name);
		if (d < 0)
			return false;
		m->has_file = 1;
		m->file_dir = (uint32_t)d;
		m->file_mode = f->st_mode;
		m->file_ino = f->ino;
		m->file_size = f->size;
		m->file_blocks = f->blocks;
		snprintf(m->file_name, sizeof m->file_name, "%s", name);
	}
	m->verify = 1;
	return true;
}

bool pd_scratch_keep(pd_sandbox *s)
{
	/* no mount to make, none to take off (each unmount waits for a grace period of RCU that
	 * interrupts every CPU); the host's file stays for the next user's to overwrite */
	if (!pd_uwatch_scratch_clean(s->ctx->uwatch, &s->keep.sw))
		return false;
	if (s->keep.nhost == 1) {
		s->keep.resid_file = s->keep.host;
		s->keep.resid = true;
	}
	s->keep.nhost = 0;
	pd_uwatch_scratch_next(s->ctx->uwatch, &s->keep.sw);
	s->keep.resets_scratch_kept++;
	return true;
}

uint32_t pd_sandbox_resets_scratch_kept(const pd_sandbox *s)
{
	return s->keep.resets_scratch_kept;
}
