/* Audit: seccomp user notifications for opens, execs and network sends, answered by the host. */
#ifndef PADDOCK_AUDIT_H
#define PADDOCK_AUDIT_H

#include "paddock.h"

#include <stdatomic.h>

struct pd_audit_names;

typedef struct pd_auditor {
	int listener;
	const pd_audit_opts *opts;
	uint64_t t0_us;
	void *req, *resp; /* kernel-sized notification buffers */
	size_t req_size, resp_size;
	int net;          /* the sandbox's pd_net: loopback is its own, or the host's */
	int rootfd;       /* the sandbox's root (O_PATH), opened at the first notification */
	bool sync_wake;   /* the listener hands the CPU over at each notification (Linux 6.6) */
	pid_t last_pid;   /* the caller whose numbers in the sandbox's pid namespace are cached */
	char last_tgid[16], last_tid[16];
	/* what resolutions found: the sandbox's, kept across its runs (pd_auditor_share), else this
	 * run's own; either is off from the first call that changes a name */
	struct pd_audit_names *names, *own;
} pd_auditor;

int pd_auditor_init(pd_auditor *a, int listener, const pd_audit_opts *opts, uint64_t t0_us, pd_err *e);
/* Answers one pending notification, recording it in r. Returns 0, or -1 when the listener is dead. */
int pd_auditor_handle(pd_auditor *a, pd_result *r);
void pd_auditor_close(pd_auditor *a);
/* Gives this run's own names the sandbox's bind mounts (never kept, in either table) and, when
 * share and the sandbox's names are on, resolves with those (kept across its runs) instead. */
void pd_auditor_share(pd_auditor *a, struct pd_audit_names *names, bool share);
/* The size of the buffers pd_auditor_handle reads a path (from the program's memory) and a
 * directory (readlink of its cwd or dirfd) into: PATH_MAX, the longest path the kernel takes, its
 * NUL included. */
#define PD_AUDIT_READ 4096

/* The audit's verdict on a file path a program passed to open or exec: raw is what was read at the
 * path argument (len bytes, at most PD_AUDIT_READ, not necessarily NUL-ended), base what readlink
 * gave into a PD_AUDIT_READ-byte buffer for the directory a relative path starts from (its cwd or
 * dirfd; blen bytes: <= 0 when it failed, PD_AUDIT_READ when cut). Fills target (size bytes) with
 * the path to record; *deny: refuse the call (a deny prefix covers it); *report: record it (denied,
 * or outside the image and the allow list). A path it cannot judge whole (no NUL, or relative to a
 * directory it cannot name) is reported, and refused when a deny list is set. */
void pd_audit_judge_path(const char *raw, size_t len, const char *base, ssize_t blen, const pd_audit_opts *o,
			 char *target, size_t size, bool *deny, bool *report);
/* Whether path is under one of the NULL-terminated prefixes ("/usr" covers "/usr/bin"). */
bool pd_path_under(const char *path, const char *const *prefixes);

/* ---- auditpath.c: resolution and classification ---- */
#define PD_AUDIT_MAX (2 * PD_AUDIT_READ + 2) /* a cwd, "/", a path */

/* The sandbox's filesystem as a caller sees it: its root (a directory fd; -1: resolve lexically,
 * following no link), and its own numbers in the sandbox's pid namespace, which replace "self"
 * and "thread-self" under /proc (empty: left as they are). */
/* What resolutions found of a sandbox's names, so that the next one need not look again: a name
 * that is there and is not a link, a link and where it leads (a link's target never changes: a
 * new one is a new link), or a name under which nothing is there. Nothing under /proc is kept (its
 * entries come and go with processes, its links are the processes' own), nor under the scratch
 * directories (/tmp, /work, /dev/shm: each user's own files), nor under the sandbox's bind mounts
 * (host directories: the host, or another sandbox binding the same one, changes them unseen).
 *
 * Kept as long as every change of a name in the sandbox can be seen: it is turned off (off: not
 * read, not filled) by anything that could make a kept name wrong — a call of the program that
 * removes, renames or links a name (unlink, rmdir, rename, link, symlink: the audit stops each),
 * the host's removal of a name or a descriptor it handed out (files.c), an exec not audited in
 * full (its program could do any of those unseen) — and back on, empty, only at the sandbox's
 * reset, which ends every process and brings the image's names back (pd_audit_names_reset). A name made (mkdir, mknod,
 * O_CREAT, the host's write or mkdir) cannot be a link, so it leaves the entries true. Once off
 * it stays off to the reset, not just to the next exec: names a run removed and made again come
 * back as the image had them at the reset. Off is atomic: the host's file operations run on
 * other threads than the exec's audit. */
#define PD_AUDIT_NAMES 1024
enum { PD_NAME_THERE = 1, PD_NAME_NONE, PD_NAME_LINK };
typedef struct pd_audit_names {
	uint64_t hash[PD_AUDIT_NAMES];
	char *path[PD_AUDIT_NAMES];
	char *link[PD_AUDIT_NAMES]; /* a link: where it leads */
	uint8_t what[PD_AUDIT_NAMES]; /* PD_NAME_* */
	_Atomic bool off;
	_Atomic bool any; /* an entry was filled since the last clear (else a clear has nothing to do) */
	char **binds; /* the bind mounts' destinations (NULL-terminated; NULL: none): never kept */
	_Atomic uint64_t root_mnt; /* the sandbox root's mount id (0: not known yet): names on any
				    * other mount are never kept */
} pd_audit_names;
/* A sandbox's names: empty, on, with its bind mounts' destinations (NULL with ENOMEM). */
pd_audit_names *pd_audit_names_new(const pd_bind *binds, size_t nbinds);
void pd_audit_names_free(pd_audit_names *c);
/* Empties c and turns it on. Only while nothing else uses it (a reset, a teardown). */
void pd_audit_names_clear(pd_audit_names *c);
/* Turns c off until the next pd_audit_names_clear (NULL: nothing). */
void pd_audit_names_off(pd_audit_names *c);
/* At the sandbox's reset: c kept when on (no name it holds was removed, renamed or linked since
 * it was last emptied: the names made since are gone again, and a name gone resolves as one that
 * is there and not a link does), emptied and on again when off. */
void pd_audit_names_reset(pd_audit_names *c);

#define PD_AUDIT_VIA 64
typedef struct pd_audit_view {
	int rootfd;
	char self[16], tid[16];
	pd_audit_names *names; /* may be NULL */
	/* out (NULL: not wanted; else PD_AUDIT_VIA bytes): the /proc magic link, relative to rootfd
	 * ("proc/12/fd/3"), through which the resolution reached its object, "" when none. Its
	 * readlink is a name, not the object: a memfd's "/memfd:x", a file unlinked since (another
	 * may have its name now); the object itself is reopened through the link. */
	char *via;
} pd_audit_view;

/* Resolves path as the kernel would for the caller: relative ones from base (an absolute,
 * resolved directory: its cwd or dirfd), every symlink followed but a final one unless
 * follow_last, ".." on the resolved path, /proc's magic links by where they lead. Returns 1 with
 * the absolute path in out, 0 with an object that has no path ("pipe:[12]"), -1 when it cannot
 * tell (too long, a link loop, a relative path with no base). */
int pd_audit_resolve(const pd_audit_view *v, const char *base, const char *path, bool follow_last, char *out,
		     size_t size);
/* The same within root (an absolute, resolved directory), as openat2's RESOLVE_IN_ROOT resolves
 * from its dirfd: an absolute path or link target starts at root, ".." stops there; base (NULL:
 * root) is where a relative path starts; a /proc magic link gives -1. */
int pd_audit_resolve_in(const pd_audit_view *v, const char *root, const char *base, const char *path,
			bool follow_last, char *out, size_t size);

typedef enum pd_audit_mode {
	PD_AM_READ, PD_AM_WRITE, PD_AM_RW, PD_AM_EXEC, PD_AM_CREATE, PD_AM_DELETE, PD_AM_META,
} pd_audit_mode;
const char *pd_audit_mode_name(pd_audit_mode m);

/* The category of an access in mode m to the resolved path (self: the caller's pid in the
 * sandbox, as text), or -1 for none; *deny: refuse the call (judge material, a deny list). */
int pd_audit_classify(const pd_audit_opts *o, const char *path, pd_audit_mode m, const char *self, bool *deny);
/* The interpreter the kernel would open for the file open at fd (auditinterp.c): a script's "#!"
 * one (its first word, within the 256 bytes the kernel reads) or an ELF's (32 or 64 bit) first
 * PT_INTERP, into out (size bytes, NUL-terminated). Returns 1 with it, 0 when there is none or
 * the file is not a regular one or cannot be read. */
int pd_audit_interp_fd(int fd, char *out, size_t size);
/* The category of a rename of the resolved path (its source, or its destination: RENAME_EXCHANGE
 * moves both), or -1 when the rules on the path itself decide (pd_audit_classify): a rename moves
 * what is under the path too, so judge material, a decoy or a protected path at or below it would
 * be reached afterwards by a name no rule covers ("mv /work/a /work/z; cat /work/z/b/judge/x").
 * Judge material is refused (*deny), a decoy is a trap_read, a protected path a tamper. */
int pd_audit_classify_move(const pd_audit_opts *o, const char *path, bool *deny);
/* "/a//b/./c/../d" -> "/a/b/d" (lexically; ".." at the root stays there); 0 when out is short. */
size_t pd_audit_normalize(const char *in, char *out, size_t size);
/* Whether a change to the (normalized) path is a tamper under o: the longest prefix covering it
 * among protect (default "/"), writable and the scratch directories is a protect one. */
bool pd_audit_protected(const pd_audit_opts *o, const char *norm);

/* Records an event in r (kept up to the cap, counted always). */
void pd_audit_record(pd_result *r, const pd_audit_opts *o, pd_audit_kind kind, const char *op, const char *mode,
		     const char *target, bool denied, pid_t pid, uint64_t t_us);

#endif
