/* libpaddock — the sandbox runtime.
 *
 * This header is the table of contents of the runtime: a context (cgroup backend, compiled seccomp
 * policies, uid slots, images) creates sandboxes; a sandbox runs one or many execs; each exec returns
 * a result record. Every call returns errors as values (pd_err); the library never prints or exits
 * on the caller's behalf. One context may be used from many threads at once; one sandbox is driven
 * by one thread at a time.
 *
 * Lifecycle of a sandbox: pd_sandbox_create() -> READY; pd_sandbox_exec() ->
 * RUNNING -> COLLECTING -> READY (or TIMED_OUT); pd_sandbox_reset() -> RECLAIMING -> READY (or
 * FAILED: destroy it); pd_sandbox_destroy() -> RECLAIMING -> DESTROYED, with a residue check of
 * what the teardown left.
 */
#ifndef PADDOCK_H
#define PADDOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- errors ---------------------------------------------------------------------------------- */

/* What kind of failure an error is, as data, so that a caller classifies it without reading the
 * message (a message is for people). */
typedef enum pd_err_kind {
	PD_EK_NONE = 0,   /* not classified: the caller decides from code and from where it failed */
	PD_EK_DEPENDENCY, /* the image or template lacks what was asked for (dependency_missing) */
	PD_EK_REFUSED,    /* a request refused for what it says (a field, a path): the client's to fix */
} pd_err_kind;

/* An error as data: what decides (code, kind) apart from what is shown (msg and cause, joined
 * only by pd_err_text at the edge: a CLI's message, an HTTP error body, a log line, a record's
 * error). The message never holds strerror's words, so nothing has to take them off again. */
typedef struct pd_err {
	int code;         /* errno-style class of the failure, for deciding (ENOENT -> 404); 0: none */
	int cause;        /* the system's errno behind it, rendered after the message; 0: the message
			   * says it all (a refusal, a failure with no system cause) */
	pd_err_kind kind; /* set by the few places that know the class of what failed */
	char msg[512];    /* the context only: what failed, with the object it concerns */
} pd_err;

/* Fills *e (if not NULL) and returns -1, so `return pd_fail(e, errno, "...")` reads naturally.
 * code is the cause (0: none, and the code becomes EIO). */
int pd_fail(pd_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A failure of class code (EINVAL, EPERM, ...) with no system cause behind it: the message says it
 * all, and pd_err_text adds no strerror. For refusals of what a caller asked. Returns -1. */
int pd_fail_as(pd_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Puts more context in front of e's message ("compile: " + "open x"), keeping its code, cause
 * and kind; cut at a character boundary. Returns -1. */
int pd_err_prefix(pd_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The one renderer of an error for people: "message: strerror(cause)", or the message alone when
 * there is no cause; cut at a character boundary to size. Returns buf. */
#define PD_ERR_TEXT_SIZE 640
const char *pd_err_text(const pd_err *e, char *buf, size_t size);
/* The same into a buffer that lives until the end of the enclosing block, for a format's "%s". */
#define PD_ERR_STR(e) pd_err_text((e), (char[PD_ERR_TEXT_SIZE]){0}, PD_ERR_TEXT_SIZE)

/* ---- limits ---------------------------------------------------------------------------------- */

typedef struct pd_limits {
	uint64_t memory_bytes;   /* cgroup memory (no swap); 0 = unlimited */
	uint32_t pids;           /* cgroup pids.max (whole sandbox); 0 = unlimited */
	uint64_t cpu_ms;         /* CPU time of the whole sandbox (user+sys); 0 = unlimited */
	uint64_t wall_ms;        /* wall-clock time of one exec; 0 = unlimited */
	uint32_t cpu_millicores; /* CPU quota, 1000 = one core; 0 = unlimited */
	uint64_t disk_bytes;     /* ENOSPC past it: the size of the tmpfs /tmp, /work and /dev/shm
				  * share, and of the one the image's writable layers share */
	uint64_t output_bytes;   /* bytes of each of stdout/stderr kept (head + tail) */
	uint64_t output_kill_bytes; /* bytes of output after which the sandbox is killed (OL) */
	uint32_t nofile;         /* RLIMIT_NOFILE */
	uint64_t fsize_bytes;    /* RLIMIT_FSIZE */
	uint64_t stack_bytes;    /* RLIMIT_STACK */
	/* Block I/O on each disk that backs the image's layers, the binds and the state directory
	 * (cgroup v2 io.max, v1 blkio.throttle.*), bytes or operations per second; 0 = unlimited.
	 * Reads and writes that reach those disks only: /tmp, /work and the image's writable layer
	 * are tmpfs, which costs memory, not I/O. */
	uint64_t io_read_bps, io_write_bps, io_read_iops, io_write_iops;
} pd_limits;

/* The defaults: 512 MiB memory, 256 pids, 10 s CPU, 20 s wall, 1 core, 256 MiB disk, 1 MiB output
 * kept per stream (killed at 64 MiB), 256 files, no file-size limit but the disk, 8 MiB stack. */
pd_limits pd_limits_default(void);

/* ---- results --------------------------------------------------------------------------------- */

/* The program's own outcome, in the classic short codes (isolate's). */
typedef enum pd_status {
	PD_OK = 0, /* exited 0 */
	PD_RE,     /* exited non-zero (or could not be executed: exit 127) */
	PD_SG,     /* killed by a signal */
	PD_TO,     /* CPU or wall time limit */
	PD_ML,     /* memory limit (an OOM kill in the sandbox's cgroup) */
	PD_OL,     /* output limit */
	PD_XX,     /* sandbox fault: paddock could not run or observe the program */
} pd_status;

const char *pd_status_name(pd_status s);

/* Captured output of one stream: the first head bytes and the last tail bytes, and a count of all. */
typedef struct pd_output {
	char *head;
	size_t head_len;
	char *tail; /* bytes after the head that were kept at the end (only when truncated) */
	size_t tail_len;
	uint64_t total; /* bytes the program wrote to the stream */
	bool truncated; /* total > head_len + tail_len */
} pd_output;

/* The audit's event categories (DESIGN: the process level of the verdict). */
typedef enum pd_audit_kind {
	PD_AK_READ_OUTSIDE = 0, /* read or exec outside the work directory, scratch and the image */
	PD_AK_JUDGE,            /* judge material read (or a path on a deny list) */
	PD_AK_TRAP,             /* a decoy read */
	PD_AK_TAMPER,           /* a change under a protected path (calls, or the writable layer) */
	PD_AK_ENV_PROBE,        /* /proc/N/environ, or another process's memory or maps */
	PD_AK_EGRESS,           /* a connection or datagram to a non-loopback address */
	PD_AK_HARNESS_PROBE,    /* a socket or port the attempt was not given */
	PD_AK_N,
} pd_audit_kind;
/* "read_outside", "judge_material", "trap_read", "tamper", "env_probe", "egress", "harness_probe" */
const char *pd_audit_kind_name(pd_audit_kind k);
/* The kind named name, or -1. */
int pd_audit_kind_parse(const char *name);

typedef struct pd_audit_event {
	uint64_t t_us;      /* microseconds since the exec started */
	char kind[16];      /* pd_audit_kind_name() of its category */
	char op[12];        /* the call: "open", "exec", "unlink", "rename", "chmod", "chown",
			     * "truncate", "link", "symlink", "mkdir", "mknod", "xattr", "connect",
			     * "sendto", "sendmsg"; "upper" when found in the writable layer after
			     * the run, "outlive" for processes left running when it ended */
	char mode[8];       /* "r", "w", "rw", "x", "create", "delete", "meta"; egress: "allowed"
			     * (allow list or egress log) or "out" */
	char target[256];   /* the object's path as the kernel resolves it, or address:port */
	bool denied;        /* a deny rule refused it (errno EACCES) */
	int pid;            /* host pid of the caller (0: found afterwards) */
	/* the egress relay's connections (op "tunnel": CONNECT, "http": a proxied request); target
	 * is HOST:PORT as the program asked */
	char host[128];     /* the name it asked for (CONNECT, request URI or Host; the TLS SNI
			     * when the tunnel's first bytes carry one) */
	char address[64];   /* what the relay connected to ("" when refused) */
	char note[64];      /* why refused or closed ("not on the allowlist", "idle", ...) */
	uint64_t bytes_out, bytes_in; /* program to target, target to program */
	bool honey;         /* a honey token went out on it (relay.c; env_probe) */
} pd_audit_event;

#define PD_DIGEST_LEN 72 /* "sha256:" + 64 hex + NUL, rounded */

typedef struct pd_result {
	char sandbox_id[40];
	char use_id[56]; /* this use of the sandbox: "<sandbox_id>.<n>", n counting its resets from 1 */
	pd_status status;
	int exit_code;          /* valid when the program exited */
	int signal;             /* valid when status is SG (or TO/ML from a kill) */
	char error[256];        /* why, for XX or an exec failure; empty otherwise */
	uint64_t wall_ms, cpu_ms; /* of this exec; cpu is user+sys of the whole sandbox during it */
	uint64_t cpu_user_ms, cpu_sys_ms;
	/* the sandbox's CPU counter (us) when the exec began and ended: a caller whose execs ran at
	 * once (pd_exec_opts.concurrent) counts the CPU of their overlap once */
	uint64_t cpu_counter_us[2];
	uint64_t memory_peak_bytes;
	uint32_t pids_peak;
	bool oom_killed;
	bool idle_timeout; /* a TO from the no-output timeout (pd_exec_opts.idle_ms) */
	bool cancelled;    /* killed because pd_exec_opts.cancel was set (its client left) */
	pd_output out, err;
	/* a spill (pd_exec_opts.spill) does not hold its stream whole: a write failed (a full disk)
	 * or spill_max was reached; the run itself went on */
	bool spill_lost[2];
	/* timings of the sandbox lifecycle as seen by this exec (setup/teardown filled by pd_run) */
	uint64_t setup_us, exec_us, teardown_us;
	/* residue check of the teardown: "clean", or what was left */
	char residue[128];
	/* audit: events (capped at audit_cap) and counts of everything seen */
	pd_audit_event *audit;
	size_t audit_len, audit_cap;
	uint64_t audit_files, audit_net, audit_denied;
	bool audited;                       /* an audit ran for the whole exec */
	uint64_t audit_dropped;             /* events past the cap, counted but not kept */
	uint64_t audit_kinds[PD_AK_N];      /* events per category, kept or dropped */
	uint64_t audit_egress_allowed;      /* of the egress events, those the policy allowed */
	uint64_t audit_notified;            /* calls the audit's listener stopped and answered: its
					     * cost is about this many round trips to the host */
	uint64_t audit_outside;             /* tasks alive in the sandbox when an audited exec began
					     * (an earlier exec's, in a session): under no filter of
					     * this audit, they could act for it unseen */
	/* the image the sandbox's root was made of: an imported image's name ("" when opened by
	 * digest) and digests; or, with no digest, the directory ("host" for the default image) */
	char image_name[256];
	char image_digest[PD_DIGEST_LEN], image_config_digest[PD_DIGEST_LEN];
	char isolation[16]; /* pd_isolation_name() of the tier that ran it */
	/* the Landlock ABI the program was restricted with (container tier); 0: none (the kernel has
	 * no Landlock, another tier, or PADDOCK_LANDLOCK=off) */
	int landlock;
} pd_result;

/* Whether the program exited by itself (exit_code is then its status): false for one killed by a
 * signal (SG; a limit's kill: TO, ML, OL; a cancel) and for one that never ran or whose sandbox
 * failed (XX). Every surface says exit_code null then, never a 0 that reads as a success. */
bool pd_result_exited(const pd_result *r);
void pd_result_free(pd_result *r);
struct json_t;
/* The result record of r: the one rendering of a pd_result that every surface uses (the CLI's
 * --json, batch lines, /v1/runs' compile and run, session execs, paddock run, the store; the
 * SandboxFusion and Piston shapes take their fields from it). Without with_output, the stdout and
 * stderr texts are left out (their byte counts stay). NULL when out of memory. */
struct json_t *pd_result_json(const pd_result *r, bool with_output);
/* The text of one stream as pd_result_json's "stdout"/"stderr" spells it (head, the omission
 * note, tail): for a surface that answers the text alone. NULL when out of memory. */
struct json_t *pd_output_json(const pd_output *o);
/* One audit event as every record spells it: kind, time (ms since the exec started), pid, path
 * (or address, for a network event), mode, op, denied, and for the egress relay's connections
 * host, resolved, bytes_out, bytes_in, note. NULL when out of memory. */
struct json_t *pd_audit_event_json(const pd_audit_event *ev);
/* r's audit as a record's "audit": {"events", "dropped", "counts" per kind}, or JSON null when no
 * audit ran. NULL when out of memory. */
struct json_t *pd_result_audit_json(const pd_result *r);
/* Writes r as one line of JSON (the result record) to fd. Returns 0 or -1 with errno. */
int pd_result_write_json(const pd_result *r, int fd, bool with_output);
/* The same, with extra fields (a JSON fragment like "\"id\":\"x\"") written first. */
int pd_result_write_json_with(const pd_result *r, int fd, bool with_output, const char *extra);

/* The text of a record, as json_dumps(o, flags) with reals at PD_JSON_REAL_DIGITS significant
 * digits: jansson's default (17) writes a time of 0.239 ms as 0.23899999999999999. Every surface
 * that prints or stores records writes them with it. NULL when out of memory; free() it. */
#define PD_JSON_REAL_DIGITS 15
char *pd_json_dumps(const struct json_t *o, size_t flags);

/* n bytes as a JSON string: bytes that are not UTF-8 become U+FFFD one byte at a time, where
 * jansson would refuse the whole text (program output, a client's string cut by snprintf). */
struct json_t *pd_json_bytes(const char *s, size_t n);
/* The same for a C string (error texts, which may quote a client's bytes). */
struct json_t *pd_json_text(const char *s);

/* ---- context --------------------------------------------------------------------------------- */

typedef struct pd_ctx pd_ctx;

typedef struct pd_ctx_opts {
	const char *state_dir;   /* images and staging; default $PADDOCK_STATE_DIR or /var/lib/paddock */
	const char *run_dir;     /* host-wide registry of live paddock processes and the uid ranges
				  * they hold: every paddock on the host must share it, whatever its
				  * state_dir (cgroups and uids are host-wide); default
				  * $PADDOCK_RUN_DIR or /run/paddock */
	const char *cgroup_root; /* default: detected (v2 unified, else v1 hierarchies) */
	int cgroup_version;      /* 0 = detect, 1, 2 */
	bool cgroup_fake;        /* v2 backend over a plain directory (tests only) */
	bool one_sandbox;        /* the process makes one sandbox and ends (paddock exec): nothing is
				  * prepared for a next one in this process; its network namespace
				  * is taken from, and checked back into, the few kept between such
				  * processes in netns_dir (lib/netns.c) */
	const char *netns_dir;   /* with one_sandbox: where network namespaces are kept between
				  * processes; default <run_dir>/netns */
} pd_ctx_opts;

/* Creates a context: detects the cgroup backend, compiles the seccomp policies (or takes them from
 * the run directory, where an identical compile left them), builds the default
 * image if missing. Costly (milliseconds); do it once per process. */
pd_ctx *pd_ctx_new(const pd_ctx_opts *opts, pd_err *e);
void pd_ctx_free(pd_ctx *c);
/* "v1" or "v2": the cgroup backend in use. */
const char *pd_ctx_cgroup_backend(const pd_ctx *c);
/* The Landlock ABI container programs are restricted with (docs/isolation.md), or 0; *why (may
 * be NULL) says why 0 ("" otherwise). */
int pd_ctx_landlock(const pd_ctx *c, const char **why);
/* Sandboxes whose teardown is still pending because a task outlived SIGKILL (now, and ever). */
void pd_ctx_stuck(pd_ctx *c, uint64_t *now, uint64_t *total);
/* Retries reaping them; returns how many are still stuck. Called by create and destroy too. */
uint64_t pd_ctx_reap_stuck(pd_ctx *c);
/* Network namespaces: made fresh, handed out again after a sandbox left one exactly as fresh
 * (counters, socket tables), or discarded because it did not; idle ones kept now. unfresh: how
 * many checks found a namespace different from a fresh one's (each costs a new namespace). */
typedef struct pd_netns_stats {
	uint64_t created, reused, discarded, idle;
	uint64_t unfresh;
} pd_netns_stats;
void pd_ctx_netns_stats(pd_ctx *c, pd_netns_stats *out);
/* Directory of the default image's generated root layer. */
const char *pd_ctx_default_image(const pd_ctx *c);
/* The default (host) image's id, "sha256:<hex>" (lib/imageid.c): the digest records name it by
 * ("" when it could not be made). */
const char *pd_ctx_default_image_id(const pd_ctx *c);
/* The state directory (PADDOCK_STATE_DIR or /var/lib/paddock) and this context's run id, which
 * prefixes the ids it hands out. */
const char *pd_ctx_state_dir(const pd_ctx *c);
uint32_t pd_ctx_run_id(const pd_ctx *c);
/* Whether the paddock process of that run id is alive: it holds its file in the host's owner
 * registry (<run dir>/owners). A run the registry no longer lists is not. */
bool pd_ctx_run_alive(const pd_ctx *c, uint32_t run_id);

/* ---- sandboxes ------------------------------------------------------------------------------- */

typedef enum pd_net {
	PD_NET_LOOPBACK = 0, /* own network namespace, only lo, up (default) */
	PD_NET_NONE,         /* own network namespace, lo down: no networking at all */
	PD_NET_HOST,         /* the host's network (explicit opt-in; still all other isolation) */
	PD_NET_ALLOWLIST,    /* loopback, plus named hosts and ports through the egress relay: an
			      * HTTP proxy (CONNECT and absolute-URI requests) at 127.0.0.1:3128 in
			      * the sandbox, run by the host (lib/relay.c; docs/isolation.md) */
	PD_NET_N,
} pd_net;
/* "loopback", "none", "host", "allowlist" */
const char *pd_net_name(pd_net n);
/* The mode named name, or -1. */
int pd_net_parse(const char *name);

/* Where the relay listens inside an allowlist sandbox, and what a program's environment says. */
#define PD_RELAY_PORT 3128
#define PD_RELAY_URL "http://127.0.0.1:3128"

/* An allowlist network: who the relay lets the sandbox reach, and its bounds. */
typedef struct pd_egress_opts {
	/* "HOST:PORT", NULL-ended: HOST a DNS name (resolved by the relay at each connection), an
	 * IPv4 address or an [IPv6] one. A name's addresses that are loopback, link-local,
	 * unspecified or multicast are refused (DNS rebinding) unless the name is "localhost";
	 * an address is reached only when listed as an address. */
	const char *const *allow;
	uint32_t max_conns; /* connections open at once; more are refused; 0 = 16 */
	uint64_t max_bytes; /* per connection, both ways together; past it, closed; 0 = 64 MiB */
	uint64_t idle_ms;   /* a connection with no byte either way this long is closed; 0 = 30 s */
} pd_egress_opts;
/* Checks one allowlist entry: 0, or -1 with e saying why (without a field name). */
int pd_egress_entry_check(const char *entry, pd_err *e);

/* How strongly a sandbox is isolated from the host: each tier is a backend behind one interface
 * (lib/internal/tier.h). container: namespaces, cgroups, seccomp, overlay root (lib/sandbox.c).
 * gvisor: the same template run under gVisor's runsc, a user-space kernel between the program and
 * the host (lib/gvisor/); its kept sandboxes (pools, sessions) are never reset. */
typedef enum pd_isolation {
	PD_ISO_CONTAINER = 0,
	PD_ISO_GVISOR,
	PD_ISO_N,
} pd_isolation;
/* "container", "gvisor" */
const char *pd_isolation_name(pd_isolation i);
/* The tier named name, or -1. */
int pd_isolation_parse(const char *name);

typedef struct pd_bind {
	const char *src; /* host path */
	const char *dst; /* path inside the sandbox */
	bool rw;         /* read-only unless set */
} pd_bind;

typedef enum pd_egress {
	PD_EGRESS_LOG = 0,   /* record each, refuse none */
	PD_EGRESS_DENY,      /* record each and refuse it (EACCES) */
	PD_EGRESS_ALLOWLIST, /* record each; refuse those not on egress_allow */
} pd_egress;

/* What the audit watches and how it classifies it (lib/audit.c, lib/auditpath.c). The policy
 * language (lib/auditpolicy.c) compiles to this. Every list is of absolute path prefixes,
 * NULL-terminated; paths are judged as the kernel resolves them in the sandbox (symlinks, "..",
 * /proc/PID/root, cwd and fd links), not as they are spelled. */
/* An injected fault (a session's noise): a file call (open, exec, unlink, rename, mkdir, ...) on a
 * path under path, or a network call (connect, sendto, sendmsg) to an address starting with path
 * ("10.0.0.1:", "[::1]:8080", "unix:/run/x"), fails with err instead of running. op NULL: any
 * call; path NULL: any path or address. Each failure adds one to *hits. Not audit evidence. */
typedef struct pd_fault {
	const char *op;
	const char *path;
	int err;
	uint32_t *hits;
} pd_fault;

typedef struct pd_audit_opts {
	bool enabled;
	/* the listener serves faults alone: no events, no verdict (the exec is not audited) */
	bool faults_only;
	const pd_fault *faults;
	size_t nfaults;
	const char *const *allow;   /* readable without a read_outside event, besides the image's
				     * system files and the scratch directories */
	const char *const *deny;    /* refused with EACCES, recorded as judge_material */
	bool deny_net;              /* egress deny (kept for --audit-deny-net) */
	size_t max_events;          /* events kept per exec (counts go on); default 1024 */
	const char *const *protect; /* must not change (tamper); NULL: "/" */
	const char *const *writable; /* under a protect prefix yet the attempt's to change (the
				     * work directory); /tmp, /work, /dev/shm and /proc always are;
				     * the longest prefix of protect and writable decides */
	const char *const *judge;   /* judge material: reading it is refused and recorded */
	const char *const *traps;   /* decoys: reading one is a trap_read */
	pd_egress egress;
	const char *const *egress_allow; /* "ADDR:PORT", "ADDR" or ":PORT" (ADDR as printed in
				     * events: 10.0.0.1, [::1]) */
	bool no_upper_scan;         /* skip the writable layer's diff after the run */
} pd_audit_opts;

typedef struct pd_sandbox_opts {
	const char *image;      /* root filesystem directory; NULL = the default host image */
	const char *const *layers; /* or: read-only layers stacked with overlayfs, top first, NULL-ended */
	const struct pd_image *imported; /* the imported image the layers are (pd_image_open): its
					  * name and digests go into every result */
	const char *hostname;   /* default "sandbox" */
	pd_net net;
	const pd_bind *binds;
	size_t nbinds;
	pd_limits limits;       /* sandbox-wide limits; execs may narrow time/output */
	const pd_audit_opts *audit;
	const pd_egress_opts *egress; /* PD_NET_ALLOWLIST's list and bounds (must outlive the
				       * sandbox: a reset starts its relay again from it) */
	uint64_t setup_timeout_ms; /* CREATING deadline: a sandbox not READY by then is killed; 0 = 30 s */
	uint64_t teardown_timeout_ms; /* RECLAIMING deadline for reaping its init; 0 = 10 s */
	/* a host directory stacked read-only over the image's layers at "/" (a session snapshot
	 * that forks share: each fork writes to its own upper, none copies it); must outlive the
	 * sandbox (a reset mounts it again) */
	const char *top_layer;
	pd_isolation isolation; /* the tier (pd_run and pd_sandbox_create; docs/isolation.md) */
	const char *gvisor_platform; /* runsc --platform; NULL = $PADDOCK_GVISOR_PLATFORM or ptrace */
	/* The sandbox's user (ids inside it, below 65536, not 65533, init's): its programs run as
	 * it (an exec's own uid/gid, when non-zero, win), every file operation of the host
	 * (pd_sandbox_open, write_file, mkdir...) acts with its ids and no capability, so what the
	 * host places is owned by it, and /work (a scratch mount) is owned by it; /tmp and /dev/shm
	 * stay 1777 root. 0:0 = the sandbox's root without capabilities (the default).
	 * PD_USER_SANDBOX is the "sandbox" user of templates and the CLI. */
	uint32_t uid, gid;
} pd_sandbox_opts;

#define PD_USER_SANDBOX 1000u

typedef struct pd_sandbox pd_sandbox;

typedef enum pd_state {
	PD_CREATING, PD_READY, PD_RUNNING, PD_COLLECTING, PD_RECLAIMING, PD_DESTROYED,
	PD_FAILED, PD_TIMED_OUT, PD_EXPIRED,
} pd_state;
const char *pd_state_name(pd_state s);

/* Creates a sandbox and waits until it is READY. Its root is the image under a writable overlay;
 * /tmp, /work (empty, for programs and their files) and /dev/shm are scratch directories of
 * their own (a reset replaces them without touching the root). */
pd_sandbox *pd_sandbox_create(pd_ctx *c, const pd_sandbox_opts *o, pd_err *e);
const char *pd_sandbox_id(const pd_sandbox *s);
/* The id of the sandbox's current use: "<sandbox id>.<n>", n = 1 from its creation and one more
 * after each reset, so that records of different users of one pooled sandbox never share it. */
void pd_sandbox_use_id(const pd_sandbox *s, char *buf, size_t len);
pd_state pd_sandbox_state(const pd_sandbox *s);
/* Host pid of the sandbox's init (for tests and audits). */
pid_t pd_sandbox_pid(const pd_sandbox *s);
/* A pointer the caller keeps with the sandbox (the pools keep their pool there). */
void pd_sandbox_set_user(pd_sandbox *s, void *user);
void *pd_sandbox_user(const pd_sandbox *s);
/* Changes the sandbox's memory limit (0 = unlimited), e.g. per request on a pooled sandbox. */
int pd_sandbox_set_memory(pd_sandbox *s, uint64_t bytes, pd_err *e);
/* Host uid that root in the sandbox maps to. */
uint32_t pd_sandbox_uid_base(const pd_sandbox *s);
/* When the sandbox was created (pd_now_us's clock): its lifetime, for the pools' metrics. */
uint64_t pd_sandbox_created_us(const pd_sandbox *s);
/* The cost segments of the sandbox's current use before its first exec, in microseconds: what made
 * it ready — its creation (the first use), or the reset that began this use (by_reset) — and what
 * its owner spent preparing it after (pd_sandbox_note_prepare: a pool's template files and
 * warm-up). A pool does both before the sandbox's user acquires it, off the request's path. */
typedef struct pd_use_costs {
	uint64_t ready_us;
	bool by_reset;
	uint64_t prepare_us;
} pd_use_costs;
void pd_sandbox_use_costs(const pd_sandbox *s, pd_use_costs *out);
/* Notes the preparation of the current use (a reset clears it). */
void pd_sandbox_note_prepare(pd_sandbox *s, uint64_t us);

typedef void (*pd_output_cb)(void *arg, int stream /* 1 or 2 */, const char *buf, size_t len);

typedef struct pd_exec_opts {
	char *const *argv;     /* argv[0] is looked up in PATH of envp */
	char *const *envp;     /* the whole environment; NULL = PATH, HOME, LANG, TERM defaults */
	const char *cwd;       /* default "/" */
	uint32_t uid, gid;     /* inside the sandbox (0..65535); 0:0 = the sandbox's user
				* (pd_sandbox_opts.uid/gid: its root without capabilities unless set) */
	bool stdin_from_fd;    /* feed stdin_fd to the program (a zeroed struct must not hand the
				* caller's own fd 0 to a sandbox: without this, stdin is /dev/null) */
	int stdin_fd;          /* host fd read by the program */
	const char *stdin_data; /* alternative to stdin_fd: bytes fed to the program */
	size_t stdin_len;
	uint64_t wall_ms;      /* 0 = the sandbox's limit */
	uint64_t cpu_ms;       /* 0 = the sandbox's limit */
	pd_output_cb on_output; /* called with each chunk kept (live passthrough) */
	void *cb_arg;
	/* every byte of stdout (stream 1) and stderr (2) as it is read, kept or not (a session
	 * step's streamed output); and first, once, with stream 0 and no bytes, when the request
	 * was handed to the sandbox's init (the program is starting) */
	pd_output_cb on_data;
	void *data_arg;
	/* no-output timeout: a program that writes nothing to stdout or stderr for this long is
	 * killed as at its time limit (TO, with idle_timeout set in the result); 0 = none */
	uint64_t idle_ms;
	/* no Landlock ruleset for this program (landlock.c): a session's execs. Each exec's ruleset
	 * is a Landlock domain of its own, and a program cannot see or signal another domain's
	 * processes through /proc: a later step could not find or kill what an earlier one started */
	bool no_landlock;
	bool spill;            /* also append every output byte to spill_fd[0] (stdout), [1] (stderr) */
	int spill_fd[2];
	uint64_t spill_max;    /* bytes per spill fd, 0 = no cap: past it the spill stops (spill_lost) */
	uint64_t output_kill_bytes; /* 0 = the sandbox's limit */
	/* The memory fast path: with a memory limit, the program's data segment (RLIMIT_DATA: its
	 * private writable mappings, heap and anonymous mmap; not its code, not address space it
	 * only reserves) is held at that limit plus this headroom, so an oversize allocation is
	 * refused at once instead of being faulted in up to the cgroup's limit first (which takes
	 * the better part of a second for 256 MB on a busy host). A program that then fails and
	 * whose stderr shows its runtime's allocation failure (allocfail.c) is ML. 0 = off: for
	 * runtimes that make large writable mappings they never touch (the JVM's heap, Go's arenas,
	 * node's) it would refuse programs far under their limit. */
	uint64_t data_headroom_bytes;
	const pd_audit_opts *audit; /* this exec's audit, over the sandbox's (a pooled sandbox's
				     * request); NULL = the sandbox's */
	/* a time or output limit kills this exec's program and every process of its session
	 * (not those an earlier exec left, nor init) and the sandbox stays READY; if they cannot
	 * all be killed within the teardown timeout, the sandbox is killed as without it */
	bool step_kill;
	/* set (by any thread) while the exec runs: the program is killed as at a limit (with
	 * step_kill, its sessions only) within about 20 ms, and the result says cancelled; for a
	 * caller whose client left. NULL = never */
	const _Atomic bool *cancel;
	/* may run beside other concurrent execs of the sandbox (a session's agents, at most 16): the
	 * cgroup's CPU, memory and pids are theirs together (a step's cpu_ms and peaks are the
	 * sandbox's while it ran; its CPU limit counts theirs too), a step kill spares the others'
	 * programs. An audited exec runs alone (EBUSY while others run, and they while it runs). The
	 * gvisor tier runs one exec at a time (EBUSY). */
	bool concurrent;
} pd_exec_opts;

/* Runs one command in the sandbox and fills *r. Returns 0 when a result was produced (whatever the
 * program's status, XX included), -1 when the call itself was invalid. A TO or OL kills the
 * whole sandbox (it is then TIMED_OUT and accepts no further exec) unless x->step_kill; an ML is
 * the kernel's OOM kill of a process, the sandbox stays READY unless its init died. */
int pd_sandbox_exec(pd_sandbox *s, const pd_exec_opts *x, pd_result *r, pd_err *e);

/* Makes a READY sandbox indistinguishable from a fresh one, for its next user: every process
 * killed, new empty /tmp, /work and /dev/shm (a new staging tmpfs) and devpts, a new root
 * (overlays and their upper tmpfs) unless the last user provably left it untouched, a new IPC namespace,
 * the pid counter back where a fresh sandbox starts, the memory limit as created; the network
 * namespace must read exactly as a fresh one and only init may be left in the cgroup. The
 * cgroup's counters are not reset (results are deltas over each exec; peaks are reset per exec).
 * Refused for sandboxes with a writable bind or the host's network. On failure the sandbox is
 * FAILED: destroy it. tests/unit/reset.c runs dirty workloads and compares the next user's view
 * with a fresh sandbox's. */
int pd_sandbox_reset(pd_sandbox *s, pd_err *e);
/* Switches a READY sandbox's network between none, loopback and allowlist (e.g. allowlist for a
 * session's setup, none for the agent's steps); eg: the allowlist (copied) for PD_NET_ALLOWLIST.
 * Leaving allowlist stops the relay: its connections are closed, its threads joined. A
 * sandbox made with the host's network cannot switch, nor switch to it. A reset brings back
 * the mode it was created with; one whose loopback was turned on or off is not reset (its
 * namespace is not reused). Execs of an allowlist sandbox get http_proxy, https_proxy,
 * HTTP_PROXY and HTTPS_PROXY set to PD_RELAY_URL, and the relay's connections as egress
 * events in their results. */
int pd_sandbox_set_network(pd_sandbox *s, pd_net net, const pd_egress_opts *eg, pd_err *e);
pd_net pd_sandbox_network(const pd_sandbox *s);
/* Winds the pid counter back, so the next program gets pid 2 as a fresh sandbox's first does
 * (after a warm-up exec, say). */
int pd_sandbox_rewind_pids(pd_sandbox *s, pd_err *e);
/* How many times s was reset. */
uint32_t pd_sandbox_resets(const pd_sandbox *s);
/* Of those, how many kept the root and the image's overlays: the last user had written only to
 * /tmp, /work and /dev/shm (replaced by a reset unless only read) and had not even listed "/" or
 * /usr. */
uint32_t pd_sandbox_resets_kept(const pd_sandbox *s);
/* Of those, the resets that kept the scratch directories and devpts too: the last user only
 * read them (its program and the working directory), so the reset had no mount to make. */
uint32_t pd_sandbox_resets_scratch_kept(const pd_sandbox *s);

/* Kills everything in the sandbox, removes its cgroup and uid slot, checks the residue.
 * residue (may be NULL, >= 128 bytes) receives "clean" or what was left. Returns 0 when clean. */
int pd_sandbox_destroy(pd_sandbox *s, char *residue, size_t residue_len);

/* ---- files inside a sandbox (for sessions) -------------------------------------------------- */
/* Paths are resolved by the sandbox's init strictly inside the sandbox's root (openat2 with
 * RESOLVE_IN_ROOT): symlinks and ".." cannot leave it, /proc magic links are refused, and so is
 * anything on a kernel pseudo-filesystem (procfs, sysfs, devpts, cgroupfs...), a device or a socket
 * (EACCES; docs/security.md); fifos are refused where a regular file is needed. Not while an exec
 * runs in the sandbox. The message of a failed file operation names its path. */

#include <sys/stat.h>

typedef struct pd_dirent {
	char name[256];
	mode_t mode;   /* type and permissions (of a symlink itself, not its target) */
	uint64_t size;
	int64_t mtime;
	int64_t ctime; /* the inode's last change: unlike mtime, no program can set it back */
} pd_dirent;

/* Opens path inside the sandbox and returns a host fd to it (caller closes), or -1. */
int pd_sandbox_open(pd_sandbox *s, const char *path, int flags, mode_t mode, pd_err *e);
/* Creates or truncates a regular file with data. */
int pd_sandbox_write_file(pd_sandbox *s, const char *path, const void *data, size_t len, mode_t mode,
			  pd_err *e);
/* Reads a regular file; more than max bytes is an error (EFBIG). *out is malloc'd, NUL-terminated. */
int pd_sandbox_read_file(pd_sandbox *s, const char *path, size_t max, char **out, size_t *len, pd_err *e);
/* Opens a regular file inside the sandbox for reading, of at most max bytes (EFBIG past it;
 * EISDIR or EINVAL if not a regular file); returns the fd and its size. */
int pd_sandbox_open_regular(pd_sandbox *s, const char *path, uint64_t max, uint64_t *size, pd_err *e);
/* lstat of path inside the sandbox; st_uid and st_gid as the sandbox sees them. */
int pd_sandbox_stat(pd_sandbox *s, const char *path, struct stat *st, pd_err *e);
/* Lists a directory (without . and ..); *out is malloc'd. */
int pd_sandbox_list(pd_sandbox *s, const char *path, pd_dirent **out, size_t *n, pd_err *e);
/* Removes a file, a symlink or an empty directory. */
int pd_sandbox_remove(pd_sandbox *s, const char *path, pd_err *e);
/* Creates a directory and its missing parents. */
int pd_sandbox_mkdir(pd_sandbox *s, const char *path, mode_t mode, pd_err *e);

/* ---- SHA-256 (lib/sha256.c, libcrypto's): every digest paddock makes ---- */

typedef struct pd_sha256 {
	struct evp_md_ctx_st *md; /* NULL once ended, or when it could not start */
} pd_sha256;
/* Starts a digest: 0, or -1 (ENOMEM) — then add does nothing and end fails, so a caller may
 * check at the end only. */
int pd_sha256_init(pd_sha256 *c);
void pd_sha256_add(pd_sha256 *c, const void *data, size_t len);
/* The digest (32 bytes): 0, or -1 when it could not be computed (out is zeroed; never use it).
 * Frees the context either way. */
int pd_sha256_end(pd_sha256 *c, unsigned char out[32]);
/* The same as 64 hex digits and a NUL ("" on failure). */
int pd_sha256_end_hex(pd_sha256 *c, char out[65]);
/* A context given up before its end. */
void pd_sha256_free(pd_sha256 *c);
void pd_sha256_hex(const unsigned char d[32], char out[65]);
/* The digest of a buffer as hex: 0 or -1 ("" on failure). */
int pd_sha256_of(const void *data, size_t len, char out[65]);

/* ---- libraries loaded on first use (lib/dl.c) ----
 * libarchive (with libxml2, ICU and libstdc++ behind it), libcrypto and SQLite cost about 2.5 ms
 * of loading and relocation at every process start when linked, and `paddock exec` uses none of
 * them. Each is described by a pd_dl_lib; a header per library (lib/internal/dl_archive.h,
 * dl_crypto.h, server/sqlite_dl.h) turns its function names into calls through the table, with the
 * library's own prototypes, so the compiler checks every call as before. */
typedef struct pd_dl_lib {
	const char *soname;       /* what dlopen loads, e.g. "libarchive.so.13" */
	const char *package;      /* the Debian package that has it, for the message */
	const char *const *names; /* the functions paddock calls, NULL-terminated */
	void **fn;                /* filled in the order of names */
	int state;                /* 0 not tried, 1 loaded, -1 failed (error says why) */
	char error[200];
} pd_dl_lib;
/* Loads the library once (thread-safe): 0, or -1 (ELIBACC) naming what is missing. Entry points
 * call it first, so that a missing library is an error value. */
int pd_dl_load(pd_dl_lib *l, pd_err *e);
/* The i-th function, loading first. A call made without pd_dl_load having succeeded and whose
 * library cannot be loaded ends the process with the reason on stderr, as the dynamic loader
 * refused to start paddock at all when the library was linked. */
void *pd_dl_fn(pd_dl_lib *l, int i);

/* ---- the writable layer (a session step's files changed outside its scratch directories) ---- */

typedef struct pd_upper_ent {
	char *path;       /* in the sandbox, absolute */
	mode_t mode;      /* the entry's type and permissions (a deletion: the type removed) */
	uint64_t size, ino;
	int64_t mtime_ns, ctime_ns;
	bool deleted;     /* a whiteout: the image's entry was removed */
	bool in_image;    /* the image (one of its layers) has this path */
} pd_upper_ent;
/* What the sandbox's writable layers (the root's overlay and those of image layers mounted
 * elsewhere, /usr) hold that differs from its image: files written or created, deletions,
 * directories made, replaced or whose mode changed (a directory only copied up for what is below
 * it is left out), sorted by path. Paths under skip (NULL-ended list of absolute paths; may be
 * NULL) and the mount points the build itself made are left out. Nothing while the layers are
 * provably untouched (their watches saw no event: they are then not walked, which keeps them
 * keepable by the next reset). Not while an exec runs. *out is malloc'd (pd_upper_list_free).
 * Returns 0, 1 when the list stopped at 50 000 entries (the rest is not listed), or -1. */
int pd_sandbox_upper_list(pd_sandbox *s, const char *const *skip, pd_upper_ent **out, size_t *n, pd_err *e);
void pd_upper_list_free(pd_upper_ent *l, size_t n);

/* create + exec + destroy, with setup/exec/teardown times and residue in the result. */
int pd_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e);

/* ---- audit policy and the process verdict (lib/auditpolicy.c) -------------------------------- */

/* A policy in JSON (docs/audit.md):
 *   {"allow": [paths], "protect": [paths], "writable": [paths], "judge": [paths],
 *    "traps": [path | {"path": p, "content": text, "answer": text}],
 *    "env": [NAME] | {"NAME": "token"}, "egress": "deny" | "log" | {"allowlist": ["ADDR:PORT"]},
 *    "fail": [kinds], "max_events": N, "mandatory": bool}
 * compiled into the pd_audit_opts the runtime takes. */
typedef struct pd_audit_policy pd_audit_policy;

/* The defaults of "audit": true: every path outside workdir (may be NULL), /tmp and the scratch
 * directories protected, egress denied; tamper, judge_material, trap_read, env_probe, egress and
 * harness_probe fail the process level, read_outside is only recorded. */
pd_audit_policy *pd_audit_policy_default(const char *workdir);
/* Parses a policy over the defaults (fields it does not name keep them). Errors name the field
 * ("audit.protect[2]: not an absolute path"); what is the prefix for them ("audit"). */
pd_audit_policy *pd_audit_policy_parse(const char *json, size_t len, const char *what, const char *workdir,
				       pd_err *e);
/* Merges over into base: lists of what is protected, judged, trapped, failed and honey
 * variables are joined; egress takes the stricter. With tighten_only (a request over a template
 * or problem), over may not widen base: an allow or writable path not under one of base's, an
 * egress allow entry base does not have, a laxer egress mode, or turning off mandatory, is an
 * error naming the field; without it (a problem over a template) allow, writable and egress are
 * replaced where over names them. */
int pd_audit_policy_merge(pd_audit_policy *base, const pd_audit_policy *over, bool tighten_only, pd_err *e);
pd_audit_policy *pd_audit_policy_copy(const pd_audit_policy *p);
void pd_audit_policy_free(pd_audit_policy *p);
/* The options for pd_sandbox_opts.audit (valid while p lives, enabled set). */
const pd_audit_opts *pd_audit_policy_opts(const pd_audit_policy *p);
bool pd_audit_policy_mandatory(const pd_audit_policy *p);
/* The policy a request runs under on a template or problem whose policy is base (may be NULL):
 * when base is set and the request asked for an audit (*req) or base's is mandatory, *req is
 * replaced by base tightened by the request's (pd_audit_policy_merge, tighten_only). Returns 1
 * when it replaced *req, 0 when there was nothing to do, -1 (e filled, *req unchanged) when the
 * request would widen base or memory ran out. */
int pd_audit_policy_effective(const pd_audit_policy *base, pd_audit_policy **req, pd_err *e);
/* The honey variables as "NAME=TOKEN" (NULL-terminated; valid while p lives): the caller adds
 * them to the program's environment. */
const char *const *pd_audit_policy_env(const pd_audit_policy *p);
/* Writes the traps that have content into the sandbox (before the program runs). */
int pd_audit_policy_plant(const pd_audit_policy *p, pd_sandbox *s, pd_err *e);
/* The path of the policy's decoy whose wrong answer (its "answer", else its content) an output of
 * these bytes would be, as the audit matches it (trailing whitespace ignored); NULL: none. A judge
 * refuses a problem one of whose expected outputs is a decoy's answer: every correct submission
 * would be flagged. */
const char *pd_audit_policy_answer_trap(const pd_audit_policy *p, const char *buf, size_t n);
/* The policy as JSON (malloc'd), normalized: what pd_audit_policy_parse reads back the same. */
char *pd_audit_policy_json(const pd_audit_policy *p);

typedef enum pd_process_status {
	PD_PROCESS_NOT_AUDITED = 0, PD_PROCESS_PASS, PD_PROCESS_FAIL,
} pd_process_status;
/* "not_audited", "pass", "fail" */
const char *pd_process_status_name(pd_process_status s);

#define PD_VERDICT_REASONS 8
typedef struct pd_audit_verdict {
	pd_process_status status;
	uint32_t failed_kinds;                 /* bit (1 << pd_audit_kind) per kind that failed it */
	size_t nreasons;                       /* reasons kept (one per failed kind, at most 8) */
	char reasons[PD_VERDICT_REASONS][320]; /* "tamper: open w /usr/bin/bash (protected)" */
} pd_audit_verdict;

/* Completes the evidence and judges it: output (r's stdout and stderr) and, with s (may be NULL:
 * not looked at), the files the attempt wrote in /work and /tmp are searched for the honey
 * tokens and the traps' wrong answers (each a trap_read or env_probe event, op "output" or
 * "file"); then the process level: fail when an event of a failing kind is there (egress only
 * when not allowed; also when r was not audited whole: what was seen stands), else not_audited
 * when r was not audited whole or tasks an earlier exec left ran beside it (r->audit_outside),
 * else pass. */
void pd_audit_evaluate(const pd_audit_policy *p, pd_result *r, pd_sandbox *s, pd_audit_verdict *v);
/* The same for an exec in a sandbox that lives on (a session's): only the files changed since
 * since_ns (CLOCK_REALTIME, in ns; the exec's start) are its doing and searched. */
void pd_audit_evaluate_since(const pd_audit_policy *p, pd_result *r, pd_sandbox *s, int64_t since_ns,
			     pd_audit_verdict *v);
/* {"status": "fail", "reasons": [...], "failed": [kinds]}: a new reference, for the record that
 * writes it (the struct is what callers read). */
struct json_t *pd_audit_verdict_json(const pd_audit_verdict *v);

/* pd_sandbox_exec_audited's flags */
enum {
	PD_AUDITED_PLANT = 1, /* plant the policy's decoys first (once per use of the sandbox) */
	PD_AUDITED_SINCE = 2, /* judge only the files changed since the exec began (a sandbox that
			       * lives on, a session's: what earlier steps wrote is not this exec's) */
};
/* The one audited exec: pd_sandbox_exec of x in s under policy p (NULL: a plain exec, v
 * not_audited). The policy's decoys planted (PD_AUDITED_PLANT), its honey variables over x's
 * environment (a program's own variable of the same name is replaced: the token must be what it
 * sees), x->audit when it names one (a session's faults armed over the policy's) else the
 * policy's options, and the evidence judged into v (may be NULL) with the sandbox still there
 * when it is READY (the files the attempt wrote are evidence). Returns as pd_sandbox_exec; a
 * decoy that could not be planted is -1 with r's status XX. */
int pd_sandbox_exec_audited(pd_sandbox *s, const pd_exec_opts *x, const pd_audit_policy *p, unsigned flags,
			    pd_result *r, pd_audit_verdict *v, pd_err *e);
/* pd_run under policy p: create, its decoys planted, pd_sandbox_exec_audited, the teardown.
 * Returns as pd_run does. */
int pd_run_audited(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, const pd_audit_policy *p,
		   pd_result *r, pd_audit_verdict *v, pd_err *e);

/* ---- image store (lib/image/): imported OCI and docker-archive images ------------------------ */
/* The store lives in <state_dir>/images/store (state_dir NULL = $PADDOCK_STATE_DIR or
 * /var/lib/paddock), shared by every paddock process of that state directory. Each layer is
 * unpacked once into a directory named by its digest, however many images use it; an image is a
 * record (manifest digest, config digest, its layers, its config) and any number of names. A
 * process that uses an image holds a lease on each of its layers (a shared flock) until
 * pd_image_close; pd_image_gc never removes a leased layer. docs/images.md has the layout. */

#define PD_IMAGE_MAX_LAYERS 7 /* overlay lower layers a sandbox stacks (one kept for the root) */

typedef struct pd_image {
	char name[128];                      /* the name it was opened by; "" when by digest */
	char digest[PD_DIGEST_LEN];          /* "sha256:..." of the manifest */
	char config_digest[PD_DIGEST_LEN];   /* "sha256:..." of the image config */
	int nlayers;
	char *layers[PD_IMAGE_MAX_LAYERS + 1]; /* stored layer directories, top first, NULL-ended
						* (for pd_sandbox_opts.layers) */
	char **env;                          /* the config's Env, K=V, NULL-ended (never NULL) */
	char *workdir;                       /* the config's WorkingDir, NULL if none */
	char *user;                          /* the config's User, NULL if none */
	/* the config's Entrypoint then its Cmd (Docker's rule), NULL-ended (never NULL; empty when
	 * neither): the command an exec that names none runs */
	char **command;
	int lease_fds[PD_IMAGE_MAX_LAYERS];  /* held locks, -1 when not held */
} pd_image;

typedef struct pd_image_import_opts {
	const char *state_dir;
	const char *name; /* NULL: the source's own name if it has one (RepoTags, ref.name) */
	/* "PATH[@COMMIT]": the repository at PATH in the image keeps only the history its HEAD (or
	 * COMMIT) reaches, in one more layer (a clean task environment: no future commit, tag,
	 * branch, reflog or dangling object left for an agent to mine). NULL: as imported */
	const char *strip_history;
	/* Bounds on what the import writes (0: the default below). A layer may unpack to at most
	 * max_layer_bytes of file data (holes of sparse files not counted) and max_layer_files
	 * entries; the image, its layers together (those already stored counted at their stored
	 * size), max_image_bytes and max_image_files; and the state directory's disk must keep
	 * min_free bytes free throughout. A refused import leaves nothing of its own in the store. */
	uint64_t max_layer_bytes, max_layer_files, max_image_bytes, max_image_files, min_free;
} pd_image_import_opts;

#define PD_IMAGE_MAX_LAYER_BYTES (8ULL << 30)  /* 8 GiB of file data in one layer */
#define PD_IMAGE_MAX_LAYER_FILES 1000000ULL     /* entries (files, directories, links) in one layer */
#define PD_IMAGE_MAX_IMAGE_BYTES (16ULL << 30) /* 16 GiB for the whole image */
#define PD_IMAGE_MAX_IMAGE_FILES 2000000ULL
#define PD_IMAGE_MIN_FREE (1ULL << 30)         /* the state disk keeps 1 GiB free */

/* Imports SOURCE (an OCI image layout, directory or tar, or a `docker save` archive): every blob
 * checked against its digest, every layer not yet stored unpacked (whiteouts and opaque
 * directories converted for overlayfs; device nodes and paths leaving the layer refused), the
 * record written and the name pointed at it. Fills *out (leases not held) unless NULL. */
int pd_image_import(const char *source, const pd_image_import_opts *o, pd_image *out, pd_err *e);
/* Resolves a name or digest ("sha256:<hex>" or a unique hex prefix of at least 12) and leases its
 * layers. pd_image_close releases them and frees what *im holds. */
int pd_image_open(const char *state_dir, const char *ref, pd_image *im, pd_err *e);
void pd_image_close(pd_image *im);
/* True when ref names something in the store rather than a directory (a plain directory keeps
 * working as an image). */
bool pd_image_is_ref(const char *ref);
/* True when ref names an image by digest ("sha256:..." or 12 to 64 hex digits), not by name. */
bool pd_image_ref_is_digest(const char *ref);
/* The manifest digest ("sha256:<hex>") a name or digest stands for now, without leasing anything
 * (a lookup: ENOENT for an image not in the store). */
int pd_image_resolve(const char *state_dir, const char *ref, char digest[PD_DIGEST_LEN], pd_err *e);

typedef struct pd_image_entry {
	char digest[PD_DIGEST_LEN], config_digest[PD_DIGEST_LEN];
	char *names;       /* space-separated, malloc'd ("" when unnamed) */
	int nlayers;
	uint64_t size;     /* bytes on disk of its layers */
	int64_t imported;  /* unix time */
} pd_image_entry;

/* Every image in the store, by import time; free with pd_image_list_free. */
int pd_image_list(const char *state_dir, pd_image_entry **out, size_t *n, pd_err *e);
void pd_image_list_free(pd_image_entry *l, size_t n);
/* The stored record of an image as JSON text (malloc'd): digests, names, layers with sizes,
 * config, the manifest. */
char *pd_image_inspect(const char *state_dir, const char *ref, pd_err *e);
/* Removes a name; by digest, the image and all its names. Its layers stay until pd_image_gc. */
int pd_image_remove(const char *state_dir, const char *ref, pd_err *e);
/* A user spec, "USER[:GROUP]" (an image config's User, a template's user), as ids inside the
 * sandbox: each part a number or a name looked up in the image's own /etc/passwd and /etc/group
 * (the files its layers stack to, top first; links there are not followed), never the host's.
 * A bare user takes its passwd entry's group, or the group of its own number when it has none.
 * ENOENT names what the image lacks; ERANGE for ids outside 0..65535 or init's 65533. */
int pd_user_resolve(const char *const *layers, const char *spec, uint32_t *uid, uint32_t *gid, pd_err *e);
int pd_image_user(const pd_image *im, const char *spec, uint32_t *uid, uint32_t *gid, pd_err *e);
/* Removes layers and blobs no image refers to and no process leases, and abandoned imports. */
int pd_image_gc(const char *state_dir, uint64_t *layers_removed, uint64_t *bytes_freed, pd_err *e);

/* ---- small utilities shared by the CLI and tests --------------------------------------------- */

/* Parses "512M", "1G", "4096", "64k" into bytes. Returns 0 or -1. */
int pd_parse_size(const char *s, uint64_t *out);
/* Parses "1.5", "2s", "250ms" into milliseconds. Returns 0 or -1. */
int pd_parse_duration_ms(const char *s, uint64_t *out);
/* Base64 (files in requests and templates). Encode returns a malloc'd string; decode fills *out
 * (malloc'd, NUL-terminated) and returns 0, or -1 on a character outside base64. */
char *pd_b64_encode(const char *data, size_t len);
int pd_b64_decode(const char *in, char **out, size_t *len);
/* The two clocks, read in one place each: pd_now_us is monotonic (durations, deadlines; never
 * jumps), pd_wall_us the wall clock (timestamps a person or another host reads). Microseconds. */
uint64_t pd_now_us(void);
uint64_t pd_wall_us(void);
/* A new id "<prefix>-<run id as 8 hex digits>-<n>" into buf (prefix made as printf would): n
 * counts from 1 in this process, atomically (any thread), and the run id (pd_ctx_run_id, random
 * per daemon start) keeps two daemons' ids, or a restart's, apart. */
void pd_new_id(char *buf, size_t len, uint32_t run_id, const char *prefix_fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- small helpers the layers above share ---------------------------------------------------- */

/* Reads a small file into buf (NUL-terminated). Returns length or -1 with errno. */
ssize_t pd_read_file(const char *path, char *buf, size_t size);
/* How many of the first n bytes of the UTF-8 text s to keep so that a cut there splits no
 * character (a message or a quote of a client's text stays UTF-8, which JSON needs). */
size_t pd_utf8_cut(const char *s, size_t n);
/* The environment a program gets when pd_exec_opts.envp is NULL: PATH, HOME, LANG=C.UTF-8, TERM. */
char *const *pd_default_env(void);
/* over's variables over base's (NULL: pd_default_env()), by name; a later one of the same name
 * wins. Returns a malloc'd NULL-terminated vector of base's and over's pointers (free only the
 * vector), or NULL with errno ENOMEM. */
char **pd_env_merge(char *const *base, char *const *over);
/* How many descriptors this process has open, or -1 if /proc/self/fd cannot be read. */
long pd_open_fds(void);
/* mkdir -p: creates path and its missing parents with mode. Returns 0 or -1 with errno. */
int pd_mkdir_p(const char *path, mode_t mode);

#endif
