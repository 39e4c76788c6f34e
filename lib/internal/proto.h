/* The private protocol between the library (host side) and a sandbox's init, over a SOCK_SEQPACKET
 * socketpair, plus the configuration the child inherits through clone(). Host-side code and the
 * child are the same binary, so the structs need no versioning. */
#ifndef PADDOCK_PROTO_H
#define PADDOCK_PROTO_H

#include "internal.h"

enum {
	MSG_GO = 1,      /* host -> init: maps written, cgroup joined; fds: layer and bind mounts */
	MSG_READY,       /* init -> host: root built, init loop running */
	MSG_ERROR,       /* init -> host: setup failed (struct msg_error) */
	MSG_EXEC,        /* host -> init: run a program (struct msg_exec + strings); fds: stdio */
	MSG_STARTED,     /* init -> host: the program is about to execve (struct msg_started) */
	MSG_EXITED,      /* init -> host: the program's main process ended (struct msg_exited) */
	MSG_EXEC_FAILED, /* init -> host: it could not be started (struct msg_error) */
	MSG_FILEOP,      /* host -> init: open/unlink/mkdir a path inside (struct msg_fileop) */
	MSG_FILEOP_DONE, /* init -> host: its result (struct msg_error); fd: the opened file */
	MSG_RESET,       /* host -> init: kill and reap every process, new IPC namespace, pids back;
			    then look whether the scratch directories are as the host left them
			    (struct msg_reset) */
	MSG_RESET_DONE,  /* init -> host: done (struct msg_reset_done; err 0 on success) */
	MSG_REWIND,      /* host -> init: pid counter back to a fresh sandbox's; answered RESET_DONE */
};

enum { FILEOP_OPEN = 1, FILEOP_UNLINK, FILEOP_RMDIR, FILEOP_MKDIR };

struct msg_fileop {
	uint32_t type;
	uint32_t op;
	int32_t flags; /* open(2) flags for FILEOP_OPEN */
	uint32_t mode;
	char path[4096];
};

#define PD_EXEC_MSG_MAX (128 * 1024)
#define PD_MAX_ARGS 4096

struct msg_hdr {
	uint32_t type;
};

struct msg_error {
	uint32_t type;
	int32_t err;
	char what[240];
};

/* A reset's report: err (0 on success) and, when the reset asked, whether the scratch directories
 * are exactly as the host left them (scratch 1) or not (0). */
struct msg_reset_done {
	uint32_t type;
	int32_t err;
	uint32_t scratch;
	char what[240];
};

/* The scratch directories (/tmp, /work, /dev/shm: the order of rootfs.c's pd_ch_scratch[]) as a
 * reset that keeps them expects them: a directory of this mode and owner (ids inside the sandbox) with
 * no entry but, in the directory file_dir, the one file the host wrote there (when has_file):
 * a regular file of that inode number, mode, size and blocks and one link, owned by the
 * sandbox's user (the ids init's file operations act with). */
#define PD_KEEP_FILE_MAX (1u << 20) /* what a kept file may hold: more goes with its tmpfs */
struct msg_reset {
	uint32_t type;
	uint32_t verify; /* 0: no look at the scratch directories (a plain MSG_RESET's meaning) */
	struct {
		uint32_t on, mode, uid, gid;
	} dir[PD_NSCRATCH];
	uint32_t has_file, file_dir, file_mode;
	uint64_t file_ino, file_size, file_blocks;
	char file_name[256];
};

struct msg_exec {
	uint32_t type;
	uint32_t argc, envc;
	uint32_t has_stdin; /* first fd is stdin; otherwise /dev/null */
	uint32_t audit;     /* load the audit filter and hand its listener over */
	uint32_t uid, gid;
	uint32_t has_mq;    /* the last fd is the IPC namespace's mqueue root, for Landlock (landlock.c) */
	uint32_t no_landlock; /* run the program without a Landlock ruleset (pd_exec_opts.no_landlock) */
	uint32_t has_report;  /* the fd after stdio is the exec's own socket: its STARTED (with its
			       * pid), EXEC_FAILED and EXITED go there, not to init's (concurrent execs) */
	uint64_t rl_cpu_s, rl_nofile, rl_fsize, rl_stack, rl_nproc, rl_data;
	/* then: cwd NUL, argc strings NUL, envc strings NUL */
};

struct msg_started {
	uint32_t type;
	int32_t pid;         /* in the sandbox's pid namespace */
	int32_t listener_fd; /* audit: the fd number of the listener in that process, else -1 */
};

struct msg_exited {
	uint32_t type;
	int32_t pid;
	int32_t wstatus;
};

/* /tmp or /work as a scratch mount (on), with the mode and owner of the image's directory it
 * covers; off when the image has files there, which then stay in the root overlay. */
typedef struct pd_scratch_attr {
	bool on;
	uint32_t mode, uid, gid;
} pd_scratch_attr;
#define PD_SCRATCH_IMG 2 /* /tmp and /work */

#define PD_LL_TOP 96

typedef struct child_cfg {
	int sock;
	char stage[PD_PATH];
	char hostname[65];
	int net;
	bool has_sysfs; /* a detached sysfs mount follows the layer and bind fds */
	int njoin;      /* then the v1 cgroups' `tasks` files init joins itself (pd_cg_ops.join_fds) */
	int nlayers;
	char layer_dst[PD_MAX_LAYERS][PD_PATH];
	int nbinds;
	char bind_dst[PD_MAX_BINDS][PD_PATH];
	bool bind_is_dir[PD_MAX_BINDS];
	bool bind_rw[PD_MAX_BINDS];
	uint64_t disk_bytes;
	const pd_bpf *bpf_base, *bpf_audit;
	/* reset only: keep_root keeps the root and its overlays (no fds are then passed) and
	 * replaces only the scratch mounts and devpts; uwatch_fd (or -1) is the inotify instance
	 * the helper watches the uppers of newly built overlays with (upperwatch.c) */
	bool keep_root;
	pd_scratch_attr scr[PD_SCRATCH_IMG]; /* keep_root: what the last build found */
	int uwatch_fd;
	/* the sandbox's user (pd_sandbox_opts.uid/gid): owner of the /work scratch, and the ids
	 * init's file operations act with */
	uint32_t uid, gid;
	/* the Landlock ABI each program is restricted with (landlock.c); 0: none */
	int landlock_abi;
	/* the directories directly in the root, listed by the host from the layers, the mount
	 * points and the binds (pd_landlock_top): a program's ruleset grants each, without reading
	 * the root directory, which would be an event to a reset's watches on its upper layer */
	int nll_top;
	char ll_top[PD_LL_TOP][64];
} child_cfg;

/* Runs in the child after clone3: builds the root, then serves as the sandbox's init. Never returns. */
__attribute__((noreturn)) void pd_child_main(const child_cfg *cfg);

/* What a reset's helper reports when it fails. */
typedef struct pd_reset_report {
	int err;
	char what[240];
	int wd[2 * PD_MAX_LAYERS]; /* the watches it added (upper and work directories) */
	int nwd;
	/* the watches of the new scratch directories (-1 for one not mounted) and of the new
	 * devpts, in this order; nswd 0 if there are none (no instance, or one failed) */
	int swd[PD_NSCRATCH + 1];
	int nswd;
	pd_scratch_attr scr[PD_SCRATCH_IMG]; /* a build's /tmp and /work (for a later keep_root) */
	int upper_fd; /* a build's upper tmpfs, opened in the caller's table for the audit
		       * (tamper.c), or -1 */
} pd_reset_report;

/* Gives the sandbox whose init is pidfd a fresh root, as its creation did: a new staging tmpfs
 * (/tmp, /work, /dev/shm), the layers (fds: detached id-mapped mounts, then the binds) under new
 * overlays with a new upper tmpfs, a new devpts; /proc, /dev and /sys move over from the old
 * root, which is then detached with everything the last user wrote. With cfg->keep_root, only
 * the staging tmpfs and devpts are new. Runs in a short-lived helper that enters the sandbox's user and mount namespaces
 * (never its pid namespace: it mounts no procfs); init, whose root was the old one, is moved by
 * pivot_root. Call only when no process but init is left in the sandbox. */
int pd_reset_root(const child_cfg *cfg, int pidfd, const int *fds, pd_reset_report *rep);

#endif
