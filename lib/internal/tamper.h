/* tamper.c: changes to the image, read from the sandbox's writable layers after a program. */
#ifndef PADDOCK_TAMPER_H
#define PADDOCK_TAMPER_H

#include "internal.h"

/* What the writable layers held before an exec (keys of path, inode and ctime), so that a scan
 * after it reports only that exec's changes. */
typedef struct pd_tamper_base {
	uint64_t *keys;
	size_t n, cap;
	/* or, when the uppers were not looked at before (nothing had touched them since they were
	 * built): the paths the build itself made there, skipped (mount points and their parents) */
	char **made;
	size_t nmade;
	/* a snapshot of protected trees (tampertree.c): keys of the entries' paths alone (one gone
	 * is a deletion), and their count after each tree's walk */
#define PD_TAMPER_TREES 16
	uint64_t *names;
	size_t nnames, names_cap;
	size_t tree_n[PD_TAMPER_TREES];
	bool tree_cut; /* a walk stopped short (its caps): entries were not keyed */
} pd_tamper_base;
/* Notes a path the build made (and its parents). Returns 0 or -1 (no memory). */
int pd_tamper_base_made(pd_tamper_base *b, const char *path);

/* One overlay of the sandbox: its mount point and the name of its upper directory in the upper
 * tmpfs (upperwatch.c's "us/u0" on the overlay at "/"). */
typedef struct pd_upper_dir {
	char dst[PD_PATH];
	char name[16];
} pd_upper_dir;
/* The sandbox's overlays, read from its init's mountinfo: how many, or -1. */
int pd_upper_dirs(pid_t init_pid, pd_upper_dir *out, int max);

/* upper_fd: the sandbox's upper tmpfs (its root); init_pid: the sandbox's init on the host, whose
 * mountinfo says which directory there is the upper of which mount point. */
int pd_tamper_snapshot(int upper_fd, pid_t init_pid, pd_tamper_base *b);
/* Records a tamper event (op "upper") in r for each entry of the uppers not in base (may be
 * NULL) under a path o protects: "w" for a file written or created, "delete" for a whiteout or an
 * opaque directory. Returns 0, or -1 when the layers could not be named. */
int pd_tamper_scan(int upper_fd, pid_t init_pid, const pd_audit_opts *o, const pd_tamper_base *base, pd_result *r,
		   uint64_t t_us);
void pd_tamper_base_free(pd_tamper_base *b);

/* ---- tampertree.c: protected trees no writable layer holds ---- */
/* The protected paths of o (those it names: not the default "/") that lie on a scratch tmpfs
 * (/tmp, /work, /dev/shm) or a writable bind, and writable binds inside a protected path: into
 * roots (at most max). Returns how many. */
int pd_tamper_tree_roots(const pd_audit_opts *o, const pd_bind *binds, size_t nbinds, char roots[][PD_PATH],
			 int max);
/* Keys (path, inode, ctime, type) of every entry of the trees, walked from rootfd (the sandbox's
 * root), links not followed. */
int pd_tamper_tree_snapshot(int rootfd, char roots[][PD_PATH], int nroots, pd_tamper_base *b);
/* Records a tamper (op "tree") for each protected entry whose key base lacks ("w": written,
 * made, moved in, its mode or owner changed) and for each tree that lost one of its keys
 * ("delete", at the tree's root). Returns 1 when this walk or base's stopped short of an entry
 * (100,000 a walk, 32 levels deep, a path too long): a change there went unseen, the evidence
 * is not whole; else 0. */
int pd_tamper_tree_scan(int rootfd, char roots[][PD_PATH], int nroots, const pd_audit_opts *o,
			 const pd_tamper_base *base, pd_result *r, uint64_t t_us);

#endif
