/* Internal interfaces between the runtime's files. Not installed; not stable. */
#ifndef PADDOCK_INTERNAL_H
#define PADDOCK_INTERNAL_H

#include "paddock.h"

#include <linux/filter.h>
#include <pthread.h>
#include <sys/inotify.h>

#define PD_MAX_LAYERS 8
#define PD_MAX_BINDS 32
#define PD_PATH 512
#define PD_NSCRATCH 3 /* scratch directories: /tmp, /work, /dev/shm (rootfs.c) */
/* fds one message may carry: a sandbox's layers, its binds and its sysfs */
#define PD_MAX_PASS_FDS (PD_MAX_LAYERS + PD_MAX_BINDS + 1 + 5) /* + sysfs + v1 cgroups' tasks */

/* ---- cgroup backend (cgroup.c): v1 and v2 behind one table ----------------------------------- */

typedef struct pd_cg_stats {
	uint64_t cpu_user_us, cpu_sys_us, cpu_us;
	uint64_t mem_peak;
	uint64_t oom_kills;
	uint64_t mem_limit_hits; /* times usage pressed against the limit: v2 memory.events max, v1
				  * memory.failcnt */
	uint64_t pids_current, pids_peak;
	bool pids_peak_exact; /* v2 pids.peak; v1 is sampled */
} pd_cg_stats;

typedef struct pd_cg pd_cg;       /* one sandbox's cgroup (one dir per hierarchy on v1) */
typedef struct pd_cgroups pd_cgroups; /* the backend and its root(s) */
struct pd_iodev;

typedef struct pd_cg_ops {
	const char *name;
	int (*create)(pd_cgroups *root, const char *name, const pd_limits *l, pd_cg **out, pd_err *e);
	int (*clone_fd)(pd_cg *g); /* fd for CLONE_INTO_CGROUP, or -1 */
	int (*attach)(pd_cg *g, pid_t pid, pd_err *e);
	int (*stats)(pd_cg *g, pd_cg_stats *st);
	void (*reset_peaks)(pd_cg *g);
	int (*kill_all)(pd_cg *g);
	int (*destroy)(pd_cg *g, pd_err *e); /* rmdir; returns -1 if it could not */
	bool (*exists)(pd_cg *g);
	int (*set_memory)(pd_cg *g, uint64_t bytes, pd_err *e); /* 0 = unlimited */
	void (*rest)(pd_cg *g); /* closes the files stats keeps open during an exec */
	/* brings the cgroup's memory counter down to keep bytes, if it is over, by reclaiming what
	 * no process needs (page cache, kernel objects charged here) coldest first, so that the
	 * page cache every sandbox shares stays cached; returns the usage then, in bytes (0 if
	 * unknown, UINT64_MAX if the limit could not be put back) */
	uint64_t (*reclaim)(pd_cg *g, uint64_t keep);
	uint64_t (*tasks)(pd_cg *g); /* pids.current alone (a reset's check: one file, not stats' six) */
	/* l's I/O limits on each of the n disks (before the sandbox's init is attached) */
	int (*set_io)(pd_cg *g, const struct pd_iodev *devs, size_t n, const pd_limits *l, pd_err *e);
	/* an exec's periodic look (every 20 ms of its wall time): the CPU used, for the CPU limit,
	 * and pids.current, for the sampled peak — two files, not stats' six */
	uint64_t (*sample)(pd_cg *g);
	/* v1: descriptors of the cgroup's `tasks` files, one per hierarchy, opened here, for init to
	 * join them itself (writing 0: its own thread). A move of another task (cgroup.procs) takes
	 * the host-wide threadgroup lock for writing, which waits for an RCU grace period (6-17 ms on
	 * a loaded machine); a task moving its own thread does not take it. Returns how many (0: the
	 * caller attaches, as v2 does when clone3 could not place init), or -1. */
	int (*join_fds)(pd_cg *g, int *fds, int max, pd_err *e);
} pd_cg_ops;

struct pd_cgroups {
	const pd_cg_ops *ops;
	int version;
	bool fake;
	char v2_root[PD_PATH];     /* v2: parent of all sandbox cgroups */
	char v1_dirs[5][PD_PATH];  /* v1: memory, pids, cpu, cpuacct (may repeat), blkio parents */
	int v1_n;                  /* 5 when blkio is mounted (a sandbox with I/O limits joins it) */
	bool v2_io;                /* v2: the io controller is delegated to the sandboxes */
};

/* ---- iodev.c: the disks I/O limits apply to ---------------------------------------------------- */

typedef struct pd_iodev {
	unsigned maj, min; /* a whole disk: the throttles take no partitions */
} pd_iodev;
#define PD_MAX_IODEVS 16

/* Whether l limits block I/O at all. */
bool pd_limits_have_io(const pd_limits *l);
/* The whole disks behind the n paths (their file systems' devices; a partition's disk), each
 * once, into out (max entries); paths on file systems without a block device (tmpfs, overlay,
 * anything with an anonymous device) add none. Returns how many. */
size_t pd_io_devices(const char *const *paths, size_t n, pd_iodev *out, size_t max);

int pd_cgroups_init(pd_cgroups *cg, int version, const char *root, bool fake, pd_err *e);
/* Removes sandbox cgroups ("sb-<owner>-<n>") whose owner is dead: is_dead(owner) says so.
 * Returns how many were removed. */
int pd_cgroups_sweep(pd_cgroups *cg, bool (*is_dead)(const char *owner, void *arg), void *arg);
/* How many sandbox cgroups of owner exist. */
int pd_cgroups_owned(pd_cgroups *cg, const char *owner);

/* stepkill.c: SIGKILLs every live process of the session whose leader has host pid leader (an
 * exec's program and what it started); returns how many it signalled (0: none left), -1 if
 * /proc could not be read. */
int pd_kill_session(pid_t leader);
/* Init's children that lead a session of their own (each exec's program does), with their start
 * times: an exec's own leaders are those not there when it began. */
typedef struct pd_proc_id {
	pid_t pid;
	unsigned long long start;
} pd_proc_id;
size_t pd_init_leaders(pid_t init, pd_proc_id *out, size_t max);

/* ---- seccomp (seccomp.c): policies compiled once into BPF ------------------------------------ */

typedef struct pd_bpf {
	struct sock_filter *insns;
	unsigned short len;
} pd_bpf;

int pd_seccomp_compile_base(pd_bpf *out, pd_err *e);
int pd_seccomp_compile_audit(pd_bpf *out, pd_err *e);
/* The policy, taken from cache_dir when a compile with exactly the same inputs left it there, else
 * compiled (and left there). cache_dir NULL: compiled. */
typedef enum { PD_SECCOMP_BASE, PD_SECCOMP_AUDIT } pd_seccomp_which;
int pd_seccomp_policy(pd_seccomp_which which, const char *cache_dir, pd_bpf *out, pd_err *e);
void pd_bpf_free(pd_bpf *b);

/* ---- images (image.c) ------------------------------------------------------------------------ */

typedef struct pd_layer {
	char src[PD_PATH]; /* host directory */
	char dst[PD_PATH]; /* "/" or a subdirectory mounted with its own overlay */
} pd_layer;

/* Builds (once, atomically) the generated root layer of the default host image in dir. */
int pd_image_build_default(const char *dir, pd_err *e);
/* Fills r's image fields from the options the sandbox was made with (lib/image/store.c). */
/* r's image: o's imported one, or a directory's path, or the host image ("host", with its id
 * default_id: imageid.c). */
void pd_image_note(pd_result *r, const pd_sandbox_opts *o, const char *default_id);
/* imageid.c: the default image's id ("sha256:..."), kept in dir.id. 0, or -1 (out
 * left empty) when it could not be made. */
int pd_image_default_id(const char *dir, char out[PD_DIGEST_LEN]);
/* The layers of an image: the default host image (dir = generated root) or a plain directory. */
int pd_image_layers(const char *image_dir, bool is_default, pd_layer *out, int *n, pd_err *e);

/* ---- uid slots (userns.c) -------------------------------------------------------------------- */

#define PD_UID_BASE 0x40000000u /* host uid of slot 0's root; far above login and subuid ranges */
#define PD_UID_RANGE 65536u
#define PD_UID_SLOTS 16384u
/* init's real and saved uid inside the sandbox (its effective uid is 0): no program may run as
 * it, so no program matches init's ids, which is what the kernel asks of an unprivileged
 * process that changes another's rlimits (prlimit) or signals it */
#define PD_INIT_UID 65533u

typedef struct pd_slots pd_slots;
int pd_slots_init(pd_slots **out, const char *state_dir, pd_err *e);
void pd_slots_free(pd_slots *s);
/* Takes a uid range no other sandbox on this host is using (flock on a per-slot file). */
int pd_slot_get(pd_slots *s, uint32_t *slot, pd_err *e);
void pd_slot_put(pd_slots *s, uint32_t slot);

/* ---- network namespaces (netns.c): host-made, recycled when provably untouched -------------- */

typedef struct pd_netns pd_netns;
typedef struct pd_netpool pd_netpool;
/* keep: namespaces are checked and kept for reuse (false: each is closed after its sandbox) */
/* keep: namespaces reused within the process; pin_dir: kept between processes there (NULL: not) */
int pd_netpool_init(pd_netpool **out, bool keep, const char *pin_dir, pd_err *e);
void pd_netpool_free(pd_netpool *p);
void pd_netpool_stats(pd_netpool *p, pd_netns_stats *out);
/* An idle namespace that reads exactly as a fresh one, or a new one; lo up if loopback. */
pd_netns *pd_netns_get(pd_netpool *p, bool loopback, pd_err *e);
/* Moves the calling thread into ns / back to the host's namespace. Between the two the thread
 * does only what must happen inside (clone3 of the sandbox, its sysfs mount). */
int pd_netns_enter(const pd_netns *ns, pd_err *e);
int pd_netns_leave(pd_netpool *p, pd_err *e);
/* While its sandbox lives, the namespace is held by the sandbox's init, not by an fd of ours (a
 * daemon near its descriptor limit needs every one): detach after the clone, reattach from the
 * init (/proc/<pid>/ns/net, pid not yet reaped) before tearing it down. */
void pd_netns_detach(pd_netns *ns);
/* A namespace whose lo a switch turned on or off: put discards it (never handed out again). */
void pd_netns_taint(pd_netns *ns);
void pd_netns_reattach(pd_netns *ns, pid_t pid);
/* A detached read-only sysfs mount for the calling thread's current network namespace. */
int pd_netns_sysfs(pd_err *e);
/* Gives ns back. all_gone: no process of the sandbox is left, so the namespace is compared with
 * a fresh one and kept for reuse if equal; otherwise it is closed. */
void pd_netns_put(pd_netpool *p, pd_netns *ns, bool all_gone);
/* Whether ns, still held by the live init pid (and no other process), reads exactly as a fresh
 * namespace: the network half of a sandbox reset. */
/* allocfail.c: the program's stderr shows its runtime could not allocate (the memory fast path) */
bool pd_alloc_failure_seen(const pd_output *err);

/* execstatus.c: how an exec ended, as exec.c saw it */
typedef struct pd_exec_end {
	bool exited;        /* init reported the program's end: wstatus is its wait status */
	int wstatus;
	bool init_died;     /* init ended (or its socket closed) first */
	bool killed_to;     /* paddock's kill for the wall, CPU or no-output limit */
	bool killed_idle;   /* ... the no-output one, before the wall limit */
	bool killed_ol;     /* paddock's kill for the output limit */
	bool killed_cancel; /* paddock's kill for the caller's cancel */
	bool mem_pressed;   /* the cgroup's usage pressed against its limit during the run */
	bool mem_limited;   /* the sandbox has a memory limit */
	bool fast_path;     /* the memory fast path (a data-segment limit) was on */
} pd_exec_end;
/* The verdict of x into r: exit_code, signal, status, idle_timeout, cancelled (and error when
 * init ended first), from x and what r already holds (oom_killed, output truncation, stderr for
 * the fast path's evidence). Returns whether paddock's own kill ended the program. */
bool pd_exec_classify(const pd_exec_end *x, pd_result *r);

/* Whether the namespace of init (pid) reads as a fresh one: its PROBES (netns.c) compared byte for
 * byte. fds: PD_NETNS_PROBES descriptors of them the caller keeps between checks
 * (pd_netns_views_open; one still -1 is opened and closed for the check), or NULL. */
#define PD_NETNS_PROBES 8
bool pd_netns_fresh(pd_netpool *p, const pd_netns *ns, pid_t pid, const int *fds);
/* Opens those of fds still -1 on init's (pid) views (-2: absent here; -1 again: not opened). */
void pd_netns_views_open(pid_t pid, int *fds);

/* ---- the context ----------------------------------------------------------------------------- */

/* A sandbox whose init outlived SIGKILL and the teardown deadline (a task stuck in the kernel):
 * kept here and reaped later, so the cgroup and the pidfd are not lost. */
typedef struct pd_stuck {
	int pidfd;
	pd_cg *cg;
	char id[40];
	struct pd_stuck *next;
} pd_stuck;

struct pd_ctx {
	char state_dir[PD_PATH];
	char run_dir[PD_PATH]; /* owners/ and uid-slots/, shared by every paddock on the host */
	char default_image[PD_PATH];
	char default_image_id[PD_DIGEST_LEN]; /* imageid.c: the host image's digest in records */
	char stage_dir[PD_PATH]; /* empty host dir each sandbox mounts its skeleton tmpfs over (rootfs.c) */
	pd_cgroups cg;
	pd_bpf bpf_base, bpf_audit;
	pd_slots *slots;
	pd_netpool *net;
	pthread_mutex_t lock;
	uint64_t seq;
	uint32_t run_id;
	int owner_fd; /* flock held on <state>/owners/<run_id> while this context lives */
	pd_stuck *stuck;
	uint64_t nstuck, nstuck_total;
	struct pd_uwatch *uwatch; /* upperwatch.c */
	/* container sandboxes' cgroups made and not yet removed (sandbox.c), and whether any other
	 * was ever made (gvisor, whose runsc makes its own): at 0 and none, pd_ctx_free knows no
	 * cgroup of ours is left without listing every paddock cgroup on the host */
	uint64_t cg_open;
	bool cg_other;
	bool gv_swept; /* pd_ctx_gvisor_sweep_once ran (lock) */
	/* the Landlock ABI container programs get (landlock.c): the kernel's, or 0 when it has none
	 * or $PADDOCK_LANDLOCK is "off"; landlock_why says why 0 */
	int landlock_abi;
	char landlock_why[64];
};

/* ---- the owner registry (owners.c) ------------------------------------------------------------ */

/* Whether owner (8 hex digits: a run id) is a registered paddock that is gone: nobody holds the
 * flock on its file under <run_dir>/owners. arg: the context. Never true for c's own id. */
bool pd_owner_dead(const char *owner, void *arg);
/* Registers c as an owner: its file made and flocked (c->owner_fd) for as long as it lives. */
int pd_owner_lock(pd_ctx *c, pd_err *e);

/* The kernel's Landlock ABI version, or -errno (ENOSYS: not built in; EOPNOTSUPP: not enabled
 * at boot). */
int pd_landlock_abi(void);
/* A detached mount of the mqueue filesystem of pid's IPC namespace (its root, O_PATH), made from
 * this thread, which enters that namespace and returns to its own; -errno on failure. A program's
 * Landlock ruleset grants the queues under it (landlock.c says why it needs one). */
int pd_landlock_mqueue_root(int pidfd);
struct child_cfg;
/* Lists into cfg the directories directly in the root the layers (each "/" layer's own, a deeper
 * layer's first component), the sandbox's mount points and the binds will make (landlock.c). */
void pd_landlock_top(struct child_cfg *cfg, const pd_layer *layers, int nlayers);

/* ---- kept overlays of layers mounted elsewhere than "/" (upperwatch.c) ------------------------ */

typedef struct pd_uwatch pd_uwatch;
pd_uwatch *pd_uwatch_new(void);
void pd_uwatch_free(pd_uwatch *w);
/* The inotify instance, or -1. */
int pd_uwatch_fd(pd_uwatch *w);
/* A sandbox is known by its flag, dirty, which the watches' events set. */
/* Files the watches wds (added on pd_uwatch_fd's instance) as dirty's sandbox's; clears *dirty. */
int pd_uwatch_add(pd_uwatch *w, bool *dirty, const int *wds, int n);
/* Whether that sandbox has watches and none has seen an event since they were added. */
bool pd_uwatch_clean(pd_uwatch *w, bool *dirty);
/* Drops its watches (before a rebuild, and when the sandbox is destroyed). */
void pd_uwatch_forget(pd_uwatch *w, bool *dirty);

/* A sandbox's scratch directories (/tmp, /work, /dev/shm) and devpts under the same instance:
 * whether the next reset may keep them, because the last user only read them. Their watches
 * (PD_SCRATCH_EVENTS) leave out the events of reads, which change nothing (the mounts are
 * noatime), so a program that reads in a loop queues nothing. Until the sandbox is armed (its
 * first exec after a reset), events are the host's own setting up (its write of the program's
 * file) and do not count; after, any event does but the close of the one file the host wrote
 * (file_dir, file_name; nfiles 1) opened for writing, which the host's own last close can be.
 * Fields are written under the instance's lock, except nfiles and file_* while unarmed (events
 * are not looked at then). */
#define PD_SCRATCH_EVENTS \
	((IN_ALL_EVENTS & ~(IN_OPEN | IN_ACCESS | IN_CLOSE_NOWRITE)) | IN_ONLYDIR | IN_DONT_FOLLOW)
typedef struct pd_swatch {
	bool watched, armed, dirty;
	int nfiles; /* files the host made in a scratch directory while unarmed */
	int file_dir;
	char file_name[256];
} pd_swatch;
/* What a file operation of the host is to a sandbox's scratch (files.c tells scratch.c): one whose
 * descriptor stays in files.c, one that hands it to the caller (who may keep it past the next
 * reset), or pd_sandbox_write_file's own open. */
typedef enum { PD_FOP_INTERNAL, PD_FOP_HANDED, PD_FOP_WRITE } pd_fop_use;
/* Files the watches wds[PD_NSCRATCH + 1] (-1: none) as sw's: watched, unarmed, clean. */
int pd_uwatch_add_scratch(pd_uwatch *w, pd_swatch *sw, const int *wds, int n);
/* From now on sw's events count (what was queued before is the host's). */
void pd_uwatch_arm(pd_uwatch *w, pd_swatch *sw);
/* Whether sw has watches and none saw an event that counts. */
bool pd_uwatch_scratch_clean(pd_uwatch *w, pd_swatch *sw);
/* After a reset that kept them: unarmed and clean again, no file of the host's yet. */
void pd_uwatch_scratch_next(pd_uwatch *w, pd_swatch *sw);
/* Drops sw's watches (its scratch directories are replaced, or the sandbox destroyed). */
void pd_uwatch_forget_scratch(pd_uwatch *w, pd_swatch *sw);

/* ---- small helpers (util.c) ------------------------------------------------------------------ */

int pd_write_file(const char *path, const char *data, pd_err *e);
int pd_write_u64(const char *path, uint64_t v, pd_err *e);
int pd_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);
ssize_t pd_recv_fds(int sock, void *buf, size_t len, int *fds, int *nfds, int maxfds);
/* Reads "key value" lines: value of key, or 0 if absent. */
uint64_t pd_keyed_u64(const char *text, const char *key);

#endif
