/* paddock doctor: does this host have what paddock needs? Each prerequisite is looked at the way
 * paddock uses it (a user namespace made, an overlay mounted inside one, the state directory
 * reached from one as a sandbox's root reaches it), and reported with the feature that needs it.
 * The core features (every sandbox: exec, run, serve, pools, sessions) need the core checks; the
 * others (the audit, gVisor, cluster mode) are reported as missing without failing. Last, one real
 * sandbox runs /bin/true: whatever the checks missed, it finds, and where a check failed, its
 * error is the one every sandbox would end with.
 *
 * The probes that need a user namespace run in a forked child (this process has no other thread
 * yet) whose root is mapped to one host uid below paddock's uid band, so it can never be a live
 * sandbox's. */
#define _GNU_SOURCE
#include "cli.h"

#include <jansson.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CGROUP2_MAGIC 0x63677270
#define CGROUP1_MAGIC 0x27e0eb
/* one host uid below paddock's band (PD_UID_BASE, 0x40000000): the probes' root */
#define PROBE_UID 0x3fff0000u
/* free space under which the state directory fails the core check, and under which it warns
 * (image imports keep 1 GiB free by default: PD_IMAGE_MIN_FREE) */
#define DISK_FAIL (256ull << 20)
#define DISK_WARN PD_IMAGE_MIN_FREE

typedef enum { CK_OK, CK_WARN, CK_MISSING, CK_FAIL } ck_level;
static const char *const level_name[] = {"ok", "warn", "missing", "FAIL"};

typedef struct check {
	const char *name, *needed_by;
	bool core;
	ck_level level;
	char detail[600];
} check;

#define MAX_CHECKS 20
typedef struct doctor {
	check c[MAX_CHECKS];
	int n;
	char state[PATH_MAX];
} doctor;

static check *add(doctor *d, const char *name, const char *needed_by, bool core)
{
	check *c = &d->c[d->n++];
	c->name = name;
	c->needed_by = needed_by;
	c->core = core;
	c->level = CK_OK;
	return c;
}

__attribute__((format(printf, 3, 4))) static void say(check *c, ck_level l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof c->detail, fmt, ap);
	va_end(ap);
	/* a core prerequisite that is absent fails; an optional one is missing */
	c->level = l == CK_MISSING && c->core ? CK_FAIL : l == CK_FAIL && !c->core ? CK_MISSING : l;
}

static long read_long(const char *path)
{
	char b[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	if (n <= 0)
		return -1;
	b[n] = 0;
	return strtol(b, NULL, 10);
}

/* ---- what a child in a user namespace finds --------------------------------------------------- */

typedef struct probe {
	int userns;       /* errno of unshare(CLONE_NEWUSER | CLONE_NEWNS), 0 ok */
	int maps;         /* errno of the parent's uid_map/gid_map writes */
	int state;        /* errno of reaching the state directory as the namespace's root */
	char state_at[PATH_MAX]; /* the directory reached (the nearest that exists) */
	int tmpfs;        /* errno of mounting a tmpfs */
	int overlay;      /* errno of mounting an overlay with userxattr, or EIO if it shows wrong */
} probe;

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int rc = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : errno ? errno : EIO;
	close(fd);
	return rc;
}

/* The nearest existing directory at or above path (what the state directory's creation would
 * start from). */
static void nearest(const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s", path);
	struct stat st;
	while (stat(out, &st) < 0 && strcmp(out, "/")) {
		char *slash = strrchr(out, '/');
		if (slash == out)
			out[1] = 0;
		else if (slash)
			*slash = 0;
		else
			break;
	}
}

static void child_probe(probe *p, int go_fd)
{
	char c;
	if (read(go_fd, &c, 1) != 1 || c != 'g') /* the parent wrote the maps (or gave up) */
		_exit(1);
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
		p->state = p->tmpfs = p->overlay = errno;
		return;
	}
	int fd = open(p->state_at, O_PATH | O_DIRECTORY | O_CLOEXEC);
	p->state = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") < 0) {
		p->tmpfs = p->overlay = errno;
		return;
	}
	p->tmpfs = 0;
	int f = -1;
	if (mkdir("/tmp/l", 0755) < 0 || mkdir("/tmp/u", 0755) < 0 || mkdir("/tmp/w", 0755) < 0 ||
	    mkdir("/tmp/m", 0755) < 0 || (f = open("/tmp/l/f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0) {
		p->overlay = errno;
		return;
	}
	close(f);
	if (mount("overlay", "/tmp/m", "overlay", 0, "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w,userxattr") < 0)
		p->overlay = errno;
	else if (access("/tmp/m/f", F_OK) < 0 || mknod("/tmp/m/g", S_IFREG | 0644, 0) < 0 ||
		 access("/tmp/u/g", F_OK) < 0)
		p->overlay = EIO; /* mounted, but does not show its layers as an overlay would */
	else
		p->overlay = 0;
}

/* Forks the probe child: it unshares its user and mount namespaces, the parent maps its root to
 * PROBE_UID, and it reports what it could do through a shared page. */
static void run_probe(probe *out)
{
	probe *p = mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		out->userns = errno;
		return;
	}
	memcpy(p, out, sizeof *p);
	p->state = p->tmpfs = p->overlay = -1; /* not tried (the child sets what it tried) */
	int ready[2], go[2];
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
		out->userns = errno;
		munmap(p, sizeof *p);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		p->userns = unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 ? errno : 0;
		if (write(ready[1], "r", 1) != 1 || p->userns)
			_exit(0);
		child_probe(p, go[0]);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	char c;
	if (pid > 0 && read(ready[0], &c, 1) == 1 && !p->userns) {
		char path[64], map[64];
		snprintf(map, sizeof map, "0 %u 1\n", PROBE_UID);
		snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
		p->maps = write_str(path, map);
		snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
		if (!p->maps)
			p->maps = write_str(path, map);
		if (write(go[1], p->maps ? "x" : "g", 1) != 1 && !p->maps)
			p->maps = errno;
	}
	close(ready[0]);
	close(go[1]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	else
		p->userns = errno;
	memcpy(out, p, sizeof *out);
	munmap(p, sizeof *p);
}

/* ---- the checks ---------------------------------------------------------------------------- */

static void check_userns(doctor *d, const probe *p)
{
	check *c = add(d, "user namespaces", "every sandbox", true);
	long max = read_long("/proc/sys/user/max_user_namespaces");
	if (max == 0)
		say(c, CK_FAIL, "user.max_user_namespaces is 0: sysctl -w user.max_user_namespaces=65536");
	else if (p->userns)
		say(c, CK_FAIL, "unshare(CLONE_NEWUSER): %s (a seccomp filter or LSM of a container runtime may "
				"forbid it)", strerror(p->userns));
	else if (p->maps)
		say(c, CK_FAIL, "writing a user namespace's uid_map: %s (paddock maps its sandboxes' root to host "
				"uids from 1073741824)", strerror(p->maps));
	else
		say(c, CK_OK, "one made, its root mapped to host uid %u", PROBE_UID);
}

/* Each live sandbox holds one namespace of each kind (and the pools keep idle network ones). */
static void check_ns_limits(doctor *d)
{
	check *c = add(d, "namespace limits", "sandboxes at once", true);
	static const char *const kinds[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};
	char buf[400] = "";
	long low = -1;
	const char *lowk = NULL;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		char path[80];
		snprintf(path, sizeof path, "/proc/sys/user/max_%s_namespaces", kinds[i]);
		long v = read_long(path);
		size_t o = strlen(buf);
		snprintf(buf + o, sizeof buf - o, "%s%s %ld", o ? ", " : "", kinds[i], v);
		if (v >= 0 && (low < 0 || v < low))
			low = v, lowk = kinds[i];
	}
	if (low == 0)
		say(c, CK_FAIL, "max_%s_namespaces is 0: no sandbox can be made (%s)", lowk, buf);
	else if (low > 0 && low < 1024)
		say(c, CK_WARN, "at most %ld sandboxes at once (max_%s_namespaces; %s): raise it with sysctl", low,
		    lowk, buf);
	else
		say(c, CK_OK, "%s", buf);
}

static bool fs_is(const char *path, long magic)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && (long)sf.f_type == magic;
}

static void check_cgroups(doctor *d)
{
	check *c = add(d, "cgroup controllers", "limits on every sandbox (memory, processes, CPU)", true);
	if (fs_is("/sys/fs/cgroup", CGROUP2_MAGIC)) {
		char have[256] = "";
		FILE *f = fopen("/sys/fs/cgroup/cgroup.controllers", "re");
		if (!f || !fgets(have, sizeof have, f))
			have[0] = 0;
		if (f)
			fclose(f);
		have[strcspn(have, "\n")] = 0;
		char missing[64] = "";
		static const char *const want[] = {"memory", "pids", "cpu"};
		for (int i = 0; i < 3; i++) {
			char w[16];
			snprintf(w, sizeof w, " %s ", want[i]);
			char padded[260];
			snprintf(padded, sizeof padded, " %s ", have);
			if (!strstr(padded, w))
				snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", want[i]);
		}
		if (missing[0])
			say(c, CK_FAIL, "cgroup v2 without%s (controllers: %s)", missing, have);
		else if (access("/sys/fs/cgroup", W_OK) < 0)
			say(c, CK_FAIL, "cgroup v2, but /sys/fs/cgroup is not writable here (%s): paddock makes "
					"/sys/fs/cgroup/paddock", strerror(errno));
		else
			say(c, CK_OK, "cgroup v2: %s", have);
		return;
	}
	static const char *const v1[][2] = {{"memory", "/sys/fs/cgroup/memory"},
					     {"pids", "/sys/fs/cgroup/pids"},
					     {"cpu", "/sys/fs/cgroup/cpu"}};
	char missing[64] = "";
	for (int i = 0; i < 3; i++)
		if (!fs_is(v1[i][1], CGROUP1_MAGIC))
			snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", v1[i][0]);
	if (missing[0])
		say(c, CK_FAIL, "neither cgroup v2 nor the v1 hierarchies: missing%s under /sys/fs/cgroup", missing);
	else
		say(c, CK_OK, "cgroup v1: memory, pids and cpu mounted");
}

static void check_overlay(doctor *d, const probe *p)
{
	check *c = add(d, "overlayfs in a user namespace", "every sandbox's root", true);
	if (p->userns || p->maps || p->tmpfs < 0)
		say(c, CK_FAIL, "not tried: no user namespace");
	else if (p->tmpfs)
		say(c, CK_FAIL, "mounting a tmpfs inside one: %s", strerror(p->tmpfs));
	else if (p->overlay == EIO)
		say(c, CK_FAIL, "an overlay mounted inside one does not show its layers as overlayfs does");
	else if (p->overlay)
		say(c, CK_FAIL, "mounting an overlay (userxattr) inside one: %s (Linux 5.11 or later)",
		    strerror(p->overlay));
	else
		say(c, CK_OK, "tmpfs and overlay (userxattr) mounted by a user namespace's root");
}

/* Every directory above the state directory must let others search it: a sandbox's root, an
 * unprivileged host uid, mounts its skeleton tmpfs under it ("mount skeleton tmpfs: Permission
 * denied" otherwise). */
static void check_state_perms(doctor *d, const probe *p)
{
	check *c = add(d, "state directory permissions", "every sandbox (its root is built under the state directory)",
		       true);
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s", p->state_at);
	/* the state directory itself is paddock's to make searchable (it sets it 0755 at start);
	 * the ones above it, or the nearest that exists, are the operator's */
	bool up = !strcmp(path, d->state);
	for (;;) {
		struct stat st;
		if (up) {
			char *slash = strrchr(path, '/');
			if (!slash || !strcmp(path, "/"))
				break;
			if (slash == path)
				slash[1] = 0;
			else
				*slash = 0;
		}
		up = true;
		if (stat(path, &st) == 0 && !(st.st_mode & S_IXOTH)) {
			say(c, CK_FAIL, "%s is %04o: others cannot search it, so no sandbox can reach %s (each fails "
					"with 'mount skeleton tmpfs: Permission denied'); chmod o+x %s, or set "
					"PADDOCK_STATE_DIR elsewhere",
			    path, (unsigned)(st.st_mode & 07777), d->state, path);
			return;
		}
	}
	if (p->state > 0)
		say(c, CK_FAIL, "a user namespace's root cannot reach %s: %s", p->state_at, strerror(p->state));
	else if (p->state < 0)
		say(c, CK_OK, "every directory above %s is searchable by others (not tried from a user namespace)",
		    d->state);
	else
		say(c, CK_OK, "%s is reached from a user namespace (every directory above it searchable)", p->state_at);
}

static void check_disk(doctor *d, const probe *p)
{
	check *c = add(d, "free disk in the state directory",
		       "the results store, images, sessions' spilled output (image imports keep 1 GiB free)", true);
	struct statvfs sv;
	if (statvfs(p->state_at, &sv) < 0) {
		say(c, CK_FAIL, "statvfs %s: %s", p->state_at, strerror(errno));
		return;
	}
	unsigned long long avail = (unsigned long long)sv.f_bavail * sv.f_frsize;
	double mib = (double)avail / (1 << 20);
	if (avail < DISK_FAIL)
		say(c, CK_FAIL, "%.0f MiB free on %s (under %llu MiB: the store refuses runs when it cannot write)",
		    mib, p->state_at, DISK_FAIL >> 20);
	else if (avail < DISK_WARN)
		say(c, CK_WARN, "%.0f MiB free on %s: image imports refuse to leave less than 1 GiB (--min-free)",
		    mib, p->state_at);
	else
		say(c, CK_OK, "%.1f GiB free on %s", mib / 1024, p->state_at);
}

static void check_seccomp(doctor *d)
{
	check *c = add(d, "seccomp", "every sandbox (its system call filter)", true);
	uint32_t act = SECCOMP_RET_KILL_PROCESS;
	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) < 0)
		say(c, CK_FAIL, "seccomp(SECCOMP_GET_ACTION_AVAIL, KILL_PROCESS): %s (CONFIG_SECCOMP_FILTER)",
		    strerror(errno));
	else
		say(c, CK_OK, "filters with KILL_PROCESS");
	c = add(d, "seccomp notify", "the audit (audit: true, judged submissions' process level)", false);
	act = SECCOMP_RET_USER_NOTIF;
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) < 0)
		say(c, CK_MISSING, "SECCOMP_RET_USER_NOTIF: %s (Linux 5.0 or later)", strerror(errno));
	else if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
		say(c, CK_MISSING, "SECCOMP_GET_NOTIF_SIZES: %s", strerror(errno));
	else
		say(c, CK_OK, "SECCOMP_RET_USER_NOTIF available");
}

static void check_pidfd(doctor *d)
{
	check *c = add(d, "pidfd", "every sandbox (clone3 with CLONE_PIDFD, pidfd_open)", true);
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (fd < 0) {
		say(c, CK_FAIL, "pidfd_open: %s (Linux 5.3 or later)", strerror(errno));
		return;
	}
	close(fd);
	say(c, CK_OK, "pidfd_open works");
}

static void check_kvm(doctor *d)
{
	check *c = add(d, "/dev/kvm", "gVisor's kvm platform (--gvisor-platform kvm); ptrace works without it", false);
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		say(c, CK_MISSING, "%s", strerror(errno));
		return;
	}
	close(fd);
	say(c, CK_OK, "opened read-write");
}

/* The first line a program prints for ARG (its version), or "" */
static void first_line(const char *prog, const char *arg, char *out, size_t len)
{
	out[0] = 0;
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "timeout 10 %s %s 2>&1", prog, arg);
	FILE *f = popen(cmd, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	while (fgetc(f) != EOF)
		;
	pclose(f);
}

/* A program in PATH (or at an absolute path): its path into out, or false. */
static bool find_prog(const char *name, char *out, size_t len)
{
	if (name[0] == '/') {
		snprintf(out, len, "%s", name);
		return access(name, X_OK) == 0;
	}
	const char *path = getenv("PATH");
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
	for (char *save = NULL, *dir = strtok_r(buf, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", dir, name);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

static void check_programs(doctor *d)
{
	char path[PATH_MAX], ver[160];
	/* the gVisor tier runs this one path (lib/gvisor/gvisor.h: PD_RUNSC) */
	check *c = add(d, "runsc", "the gVisor tier (isolation: gvisor)", false);
	if (access("/usr/bin/runsc", X_OK) < 0) {
		say(c, CK_MISSING, "/usr/bin/runsc: %s (scripts/install-deps.sh installs it)", strerror(errno));
	} else {
		first_line("/usr/bin/runsc", "--version", ver, sizeof ver);
		say(c, CK_OK, "/usr/bin/runsc: %s", ver);
	}
	/* cluster mode loads libnats at run time (server/cluster/nats_dl.h) */
	c = add(d, "libnats", "cluster mode (serve --cluster)", false);
	void *h = dlopen("libnats.so.3.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		say(c, CK_MISSING, "libnats.so.3.4 does not load (apt-get install libnats3.4)");
	} else {
		dlclose(h);
		say(c, CK_OK, "libnats.so.3.4 loads");
	}
	c = add(d, "nats-server", "a cluster's broker on this host (and the cluster tests)", false);
	if (!find_prog("nats-server", path, sizeof path)) {
		say(c, CK_MISSING, "not in PATH (apt-get install nats-server; a broker elsewhere does as well)");
	} else {
		first_line(path, "--version", ver, sizeof ver);
		say(c, CK_OK, "%s: %s", path, ver);
	}
}

/* The end to end: one sandbox of the default image runs /bin/true, as paddock exec would. */
static void check_sandbox(doctor *d)
{
	check *c = add(d, "a sandbox", "every sandbox: exec, run, serve, pools, sessions", true);
	/* tried whatever the checks above found: its error is what every sandbox would say */
	pd_err e = {0};
	pd_ctx *ctx = pd_ctx_new(NULL, &e);
	if (!ctx) {
		say(c, CK_FAIL, "%s", PD_ERR_STR(&e));
		return;
	}
	char prog[] = "/bin/true";
	char *argv[] = {prog, NULL};
	pd_sandbox_opts so = {0};
	pd_exec_opts xo = {.argv = argv, .wall_ms = 20000};
	pd_result r;
	int rc = pd_run(ctx, &so, &xo, &r, &e);
	if (rc < 0 && r.status != PD_XX)
		say(c, CK_FAIL, "%s", PD_ERR_STR(&e));
	else if (r.status != PD_OK)
		say(c, CK_FAIL, "/bin/true ended %s: %s", pd_status_name(r.status), r.error[0] ? r.error : PD_ERR_STR(&e));
	else
		say(c, CK_OK, "/bin/true ran: setup %.1f ms, teardown %.1f ms (cgroup %s), residue %s",
		    (double)r.setup_us / 1000, (double)r.teardown_us / 1000, pd_ctx_cgroup_backend(ctx), r.residue);
	if (rc == 0 || r.status == PD_XX)
		pd_result_free(&r);
	pd_ctx_free(ctx);
}

/* ---- the command ----------------------------------------------------------------------------- */

static void doctor_usage(FILE *f)
{
	fputs("usage: paddock doctor [--json]\n"
	      "\n"
	      "Checks this host's prerequisites, each the way paddock uses it, and says what is missing\n"
	      "and which feature needs it: user namespaces and their limits, cgroup controllers (v1 or\n"
	      "v2), overlayfs inside a user namespace, seccomp and its user notification, pidfd, the\n"
	      "state directory ($PADDOCK_STATE_DIR, default /var/lib/paddock: the directories above it\n"
	      "searchable by others, its free disk), /dev/kvm, runsc, libnats and nats-server; then one\n"
	      "sandbox runs /bin/true (making the state directory and its default image if missing).\n"
	      "Run it as the user paddock runs as (root).\n"
	      "\n"
	      "  --json   one JSON object: {\"state_dir\", \"core_ok\", \"checks\": [{\"name\", \"status\",\n"
	      "           \"core\", \"needed_by\", \"detail\"}]}; status is ok, warn, missing (an optional\n"
	      "           feature's prerequisite) or fail (a core one)\n"
	      "\n"
	      "exit status: 0 the core features (sandboxes: exec, run, serve, pools, sessions) can run,\n"
	      "whatever optional one is missing; 1 they cannot (a core check failed); 64 bad usage.\n",
	      f);
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	bool json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h') {
			doctor_usage(stdout);
			return 0;
		} else
			return cli_bad_option("doctor", "doctor", NULL, c, argv, opts);
	}
	if (!cli_no_operand("doctor", argc, argv, optind))
		return EXIT_USAGE;
	doctor *d = calloc(1, sizeof *d);
	if (!d) {
		cli_error("out of memory");
		return EXIT_PADDOCK_FAILED;
	}
	const char *sd = getenv("PADDOCK_STATE_DIR");
	snprintf(d->state, sizeof d->state, "%s", sd && *sd ? sd : "/var/lib/paddock");
	probe p = {0};
	nearest(d->state, p.state_at, sizeof p.state_at);
	run_probe(&p);
	check_userns(d, &p);
	check_ns_limits(d);
	check_cgroups(d);
	check_overlay(d, &p);
	check_seccomp(d);
	check_pidfd(d);
	check_state_perms(d, &p);
	check_disk(d, &p);
	check_kvm(d);
	check_programs(d);
	check_sandbox(d);
	bool core_ok = true;
	for (int i = 0; i < d->n; i++)
		core_ok &= d->c[i].level != CK_FAIL;
	if (json) {
		json_t *arr = json_array();
		for (int i = 0; i < d->n; i++) {
			static const char *const status[] = {"ok", "warn", "missing", "fail"};
			const char *st = status[d->c[i].level];
			json_array_append_new(arr, json_pack("{s:s,s:s,s:b,s:s,s:s}", "name", d->c[i].name, "status", st,
							     "core", d->c[i].core, "needed_by", d->c[i].needed_by,
							     "detail", d->c[i].detail));
		}
		json_t *o = json_pack("{s:s,s:b,s:o}", "state_dir", d->state, "core_ok", core_ok, "checks", arr);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		printf("paddock doctor: this host's prerequisites (state directory %s)\n\n", d->state);
		for (int i = 0; i < d->n; i++)
			printf("  %-7s %-34s %s\n  %-7s %-34s needed by: %s%s\n", level_name[d->c[i].level], d->c[i].name,
			       d->c[i].detail, "", "", d->c[i].needed_by, d->c[i].core ? " (core)" : "");
		char missing[512] = "", optional[512] = "";
		for (int i = 0; i < d->n; i++) {
			char *to = d->c[i].level == CK_FAIL ? missing : d->c[i].level == CK_MISSING ? optional : NULL;
			if (to)
				snprintf(to + strlen(to), 512 - strlen(to), "%s%s", to[0] ? ", " : "", d->c[i].name);
		}
		printf("\ncore features (sandboxes: exec, run, serve, pools, sessions): %s%s%s\n",
		       core_ok ? "can run" : "CANNOT run, missing: ", core_ok ? "" : missing, "");
		if (optional[0])
			printf("optional features missing a prerequisite: %s\n", optional);
	}
	free(d);
	return core_ok ? 0 : 1;
}
