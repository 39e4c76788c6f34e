/* The host side of a sandbox: create (clone3 into new namespaces, map uids, hand over id-mapped
 * layers), exec (send a request to init, capture output, enforce time and output limits, collect
 * cgroup figures), destroy (kill, reap, remove the cgroup, check what is left). */
#define _GNU_SOURCE
#include "audit.h"
#include "capture.h"
#include "initmsg.h"
#include "proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

struct pd_sandbox {
	pd_ctx *ctx;
	char id[40];
	pd_state state;
	pid_t pid;
	int pidfd;
	int sock;
	bool reaped;
	pd_cg *cg;
	uint32_t slot;
	bool has_slot;
	pd_netns *netns; /* NULL with the host's network */
	pd_sandbox_opts opts;
	pd_limits lim;
	uint64_t created_us;
	uint32_t resets;
	uint32_t resets_kept; /* resets that kept the root and its overlays */
	bool upper_dirty;     /* their watches saw an event (upperwatch.c; under its lock) */
	/* The scratch directories and devpts, kept by a reset when the last user only read them
	 * (upperwatch.c, child.c scratch_as_left). The host's own file there (the program's source)
	 * is what makes that hold: a reset that keeps the scratch leaves it in place (resid) for the
	 * next user's to overwrite, which then has the inode number a fresh sandbox's first file has;
	 * any other use of the sandbox before its first exec replaces the scratch first (so a new
	 * file's inode number, the scratch's free space and its listing are a fresh one's). */
	pd_swatch sw;
	bool setup;       /* no exec since creation or the last reset: what the host does is setup */
	int nhost;        /* the file the host wrote directly in a scratch directory in setup: 0 or 1 */
	bool spoiled;     /* something the next reset cannot account for: it replaces the scratch */
	struct keepfile {
		char path[PD_PATH];
		uint32_t mode; /* as asked (the open's mode) */
		uint32_t st_mode; /* as made (st_mode & 07777) */
		uint64_t ino, size, blocks;
	} host, resid_file; /* that file; the last user's, left in place */
	bool resid;       /* resid_file is there, not yet overwritten by this user's host */
	uint32_t resets_scratch_kept;
	pd_scratch_attr scr[PD_SCRATCH_IMG]; /* /tmp and /work as the last rebuild made them */
	int nlayers;                         /* and how many image layers it attached */
	int init_oom_adj; /* what init's oom_score_adj was set to (checked by a reset) */
	void *user;
};

static const char *const state_names[] = {"CREATING",    "READY",     "RUNNING",  "COLLECTING",
					  "RECLAIMING", "DESTROYED", "FAILED",   "TIMED_OUT",
					  "EXPIRED"};

const char *pd_state_name(pd_state s)
{
	return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "?";
}

const char *pd_status_name(pd_status s)
{
	static const char *const n[] = {"OK", "RE", "SG", "TO", "ML", "OL", "XX"};
	return (unsigned)s < 7 ? n[s] : "XX";
}

pd_limits pd_limits_default(void)
{
	pd_limits l = {
		.memory_bytes = 512ull << 20,
		.pids = 256,
		.cpu_ms = 10000,
		.wall_ms = 20000,
		.cpu_millicores = 1000,
		.disk_bytes = 256ull << 20,
		.output_bytes = 1ull << 20,
		.output_kill_bytes = 64ull << 20,
		.nofile = 256,
		.fsize_bytes = 0, /* none: the disk size bounds files (ENOSPC) */
		.stack_bytes = 8ull << 20,
	};
	return l;
}

/* ---- context --------------------------------------------------------------------------------- */

/* An owner is dead when nobody holds the flock on its file in <state>/owners. */
static bool owner_dead(const char *owner, void *arg)
{
	const pd_ctx *c = arg;
	char self[16];
	snprintf(self, sizeof self, "%08" PRIx32, c->run_id);
	if (!strcmp(owner, self))
		return false;
	char p[PD_PATH];
	snprintf(p, sizeof p, "%s/owners/%s", c->run_dir, owner);
	/* no file: an owner this registry does not know (another run dir, an older paddock). Only
	 * a registered owner whose lock is free is known to be dead: killing a live paddock's
	 * sandboxes is far worse than leaving an empty cgroup behind. */
	int fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool dead = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return dead;
}

/* Forgets dead owners once none of their cgroups is left (the sweep may not remove a cgroup
 * whose tasks are stuck; its owner's file must stay until it can). */
static void prune_owners(pd_ctx *c)
{
	char dir[PD_PATH];
	snprintf(dir, sizeof dir, "%s/owners", c->run_dir);
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strlen(de->d_name) != 8 || strspn(de->d_name, "0123456789abcdef") != 8 ||
		    !owner_dead(de->d_name, c) || pd_cgroups_owned(&c->cg, de->d_name) != 0)
			continue;
		char p[PD_PATH];
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		int fd = open(p, O_RDWR | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlink(p); /* still dead while we hold its lock */
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
}

static int take_owner_lock(pd_ctx *c, pd_err *e)
{
	char p[PD_PATH];
	snprintf(p, sizeof p, "%s/owners", c->run_dir);
	if (pd_mkdir_p(p, 0700) < 0)
		return pd_fail(e, errno, "mkdir %s", p);
	snprintf(p, sizeof p, "%s/owners/%08" PRIx32, c->run_dir, c->run_id);
	c->owner_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (c->owner_fd < 0 || flock(c->owner_fd, LOCK_EX | LOCK_NB) < 0)
		return pd_fail(e, errno, "lock %s", p);
	return 0;
}

pd_ctx *pd_ctx_new(const pd_ctx_opts *o, pd_err *e)
{
	pd_ctx_opts none = {0};
	if (!o)
		o = &none;
	if (geteuid() != 0 && !o->cgroup_fake) {
		pd_fail(e, EPERM, "paddock needs root: it maps uid ranges and manages cgroups");
		return NULL;
	}
	pd_ctx *c = calloc(1, sizeof *c);
	if (!c) {
		pd_fail(e, ENOMEM, "context");
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->owner_fd = -1;
	const char *sd = o->state_dir ? o->state_dir : getenv("PADDOCK_STATE_DIR");
	snprintf(c->state_dir, sizeof c->state_dir, "%s", sd && *sd ? sd : "/var/lib/paddock");
	/* The owner registry and the uid slots must be one per host, not one per state dir: the
	 * cgroup sweep kills the sandboxes of owners it does not find alive, and two state dirs
	 * with their own slots would hand the same host uids to two live sandboxes. */
	const char *rd = o->run_dir ? o->run_dir : getenv("PADDOCK_RUN_DIR");
	snprintf(c->run_dir, sizeof c->run_dir, "%s", rd && *rd ? rd : "/run/paddock");
	snprintf(c->default_image, sizeof c->default_image, "%s/images/host", c->state_dir);
	snprintf(c->stage_dir, sizeof c->stage_dir, "%s/stage", c->state_dir);
	char images[PD_PATH];
	snprintf(images, sizeof images, "%s/images", c->state_dir);
	if (pd_mkdir_p(images, 0755) < 0 || pd_mkdir_p(c->stage_dir, 0700) < 0) {
		pd_fail(e, errno, "create state directory %s", c->state_dir);
		goto fail;
	}
	chmod(c->state_dir, 0755);
	if (getrandom(&c->run_id, sizeof c->run_id, 0) != sizeof c->run_id)
		c->run_id = (uint32_t)getpid() ^ (uint32_t)pd_now_us();
	if (pd_image_build_default(c->default_image, e) < 0)
		goto fail;
	if (pd_cgroups_init(&c->cg, o->cgroup_version, o->cgroup_root, o->cgroup_fake, e) < 0)
		goto fail;
	if (take_owner_lock(c, e) < 0)
		goto fail;
	pd_cgroups_sweep(&c->cg, owner_dead, c);
	prune_owners(c);
	if (pd_seccomp_compile_base(&c->bpf_base, e) < 0 || pd_seccomp_compile_audit(&c->bpf_audit, e) < 0)
		goto fail;
	if (pd_mkdir_p(c->run_dir, 0700) < 0) {
		pd_fail(e, errno, "create %s", c->run_dir);
		goto fail;
	}
	if (pd_slots_init(&c->slots, c->run_dir, e) < 0)
		goto fail;
	if (pd_netpool_init(&c->net, e) < 0)
		goto fail;
	c->uwatch = pd_uwatch_new(); /* none (ENOMEM): every reset rebuilds every overlay */
	return c;
fail:
	pd_ctx_free(c);
	return NULL;
}

void pd_ctx_free(pd_ctx *c)
{
	if (!c)
		return;
	for (int i = 0; i < 50 && c->stuck && pd_ctx_reap_stuck(c); i++)
		usleep(20000);
	while (c->stuck) {
		/* still stuck at exit: the kernel reaps them when we are gone */
		pd_stuck *st = c->stuck;
		c->stuck = st->next;
		close(st->pidfd);
		free(st);
	}
	pd_bpf_free(&c->bpf_base);
	pd_bpf_free(&c->bpf_audit);
	pd_slots_free(c->slots);
	pd_netpool_free(c->net);
	pd_uwatch_free(c->uwatch);
	if (c->owner_fd >= 0) {
		char p[PD_PATH], self[16];
		snprintf(self, sizeof self, "%08" PRIx32, c->run_id);
		snprintf(p, sizeof p, "%s/owners/%s", c->run_dir, self);
		/* cgroups of ours still there (sandboxes the caller never destroyed, tasks stuck past
		 * the deadline): keep the registration, unlocked, so the next paddock knows them for
		 * a dead owner's and sweeps them; an unknown owner's are never touched */
		if (pd_cgroups_owned(&c->cg, self) == 0)
			unlink(p);
		close(c->owner_fd);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const char *pd_ctx_cgroup_backend(const pd_ctx *c)
{
	return c->cg.ops ? c->cg.ops->name : "none";
}

void pd_ctx_netns_stats(pd_ctx *c, pd_netns_stats *out)
{
	pd_netpool_stats(c->net, out);
}

void pd_ctx_stuck(pd_ctx *c, uint64_t *now, uint64_t *total)
{
	pthread_mutex_lock(&c->lock);
	if (now)
		*now = c->nstuck;
	if (total)
		*total = c->nstuck_total;
	pthread_mutex_unlock(&c->lock);
}

uint64_t pd_ctx_reap_stuck(pd_ctx *c)
{
	pthread_mutex_lock(&c->lock);
	pd_stuck *list = c->stuck;
	c->stuck = NULL;
	pthread_mutex_unlock(&c->lock);
	pd_stuck *keep = NULL;
	uint64_t left = 0;
	while (list) {
		pd_stuck *st = list;
		list = st->next;
		siginfo_t si;
		memset(&si, 0, sizeof si);
		syscall(SYS_pidfd_send_signal, st->pidfd, SIGKILL, NULL, 0);
		if (st->cg)
			c->cg.ops->kill_all(st->cg);
		int r = waitid((idtype_t)P_PIDFD, (id_t)st->pidfd, &si, WEXITED | WNOHANG | __WALL);
		if ((r == 0 && si.si_pid) || (r < 0 && errno == ECHILD)) {
			close(st->pidfd);
			if (st->cg)
				c->cg.ops->destroy(st->cg, NULL);
			free(st);
			continue;
		}
		st->next = keep;
		keep = st;
		left++;
	}
	pthread_mutex_lock(&c->lock);
	while (keep) {
		pd_stuck *st = keep;
		keep = st->next;
		st->next = c->stuck;
		c->stuck = st;
	}
	c->nstuck = left;
	pthread_mutex_unlock(&c->lock);
	return left;
}

const char *pd_ctx_state_dir(const pd_ctx *c)
{
	return c->state_dir;
}

uint32_t pd_ctx_run_id(const pd_ctx *c)
{
	return c->run_id;
}

const char *pd_ctx_default_image(const pd_ctx *c)
{
	return c->default_image;
}

/* ---- create ---------------------------------------------------------------------------------- */

const char *pd_sandbox_id(const pd_sandbox *s)
{
	return s->id;
}

pd_state pd_sandbox_state(const pd_sandbox *s)
{
	return s->state;
}

pid_t pd_sandbox_pid(const pd_sandbox *s)
{
	return s->pid;
}

void pd_sandbox_set_user(pd_sandbox *s, void *user)
{
	s->user = user;
}

void *pd_sandbox_user(const pd_sandbox *s)
{
	return s->user;
}

/* The cgroup's memory limit, and the sandbox's record of it. */
static int apply_memory(pd_sandbox *s, uint64_t bytes, pd_err *e)
{
	if (s->ctx->cg.ops->set_memory(s->cg, bytes, e) < 0)
		return -1;
	s->lim.memory_bytes = bytes;
	return 0;
}

int pd_sandbox_set_memory(pd_sandbox *s, uint64_t bytes, pd_err *e)
{
	if (s->state != PD_READY)
		return pd_fail(e, EINVAL, "sandbox %s is %s, not READY", s->id, pd_state_name(s->state));
	/* a request that asks for the limit the sandbox has (verl sends one with every request)
	 * costs no cgroup writes (three on v1) */
	if (bytes == s->lim.memory_bytes)
		return 0;
	return apply_memory(s, bytes, e);
}

uint32_t pd_sandbox_uid_base(const pd_sandbox *s)
{
	return PD_UID_BASE + s->slot * PD_UID_RANGE;
}

static int write_maps(pid_t pid, uint32_t slot, pd_err *e)
{
	char path[64], map[64];
	snprintf(map, sizeof map, "0 %" PRIu32 " %u\n", PD_UID_BASE + slot * PD_UID_RANGE, PD_UID_RANGE);
	snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
	if (pd_write_file(path, map, e) < 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
	return pd_write_file(path, map, e);
}

/* A detached copy of a host directory, read-only, owned in the sandbox as on the host. */
static int idmapped_tree(const char *src, int userns, bool idmap, bool rdonly, pd_err *e)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0)
		return pd_fail(e, errno, "open_tree %s", src);
	struct mount_attr attr = {0};
	attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	if (rdonly)
		attr.attr_set |= MOUNT_ATTR_RDONLY;
	if (idmap) {
		attr.attr_set |= MOUNT_ATTR_IDMAP;
		attr.userns_fd = (uint64_t)userns;
	}
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
		int err = errno;
		close(fd);
		return pd_fail(e, err, "%s %s", idmap ? "id-map mount of" : "set flags on", src);
	}
	return fd;
}

static int recv_msg(int sock, void *buf, size_t len, int timeout_ms)
{
	struct pollfd pf = {sock, POLLIN, 0};
	int r;
	do
		r = poll(&pf, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return errno = ETIMEDOUT, -1;
	if (r < 0)
		return -1;
	ssize_t n = pd_recv_fds(sock, buf, len, NULL, NULL, 0);
	if (n <= 0)
		return errno = n == 0 ? ECONNRESET : errno, -1;
	return (int)n;
}

static void kill_init(pd_sandbox *s)
{
	if (s->pidfd >= 0 && !s->reaped)
		syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
}

/* Waits up to timeout_ms for init to end (its pid namespace is empty by then) and reaps it.
 * A process stuck in the kernel can outlast SIGKILL: then we give up and report it. */
static void reap(pd_sandbox *s, uint64_t timeout_ms)
{
	if (s->reaped || s->pidfd < 0)
		return;
	uint64_t deadline = pd_now_us() + timeout_ms * 1000;
	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof si);
		int r = waitid((idtype_t)P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOHANG | __WALL);
		if (r == 0 && si.si_pid != 0) {
			s->reaped = true;
			return;
		}
		if (r < 0 && errno != EINTR) {
			s->reaped = errno == ECHILD; /* already reaped elsewhere */
			return;
		}
		uint64_t now = pd_now_us();
		if (now >= deadline)
			return;
		struct pollfd pf = {s->pidfd, POLLIN, 0};
		poll(&pf, 1, (int)((deadline - now) / 1000 + 1));
	}
}

static int read_oom_adj(pid_t pid)
{
	char p[64], b[32];
	snprintf(p, sizeof p, "/proc/%d/oom_score_adj", (int)pid);
	return pd_read_file(p, b, sizeof b) > 0 ? atoi(b) : INT32_MIN;
}

static int set_oom_adj(pid_t pid, int v)
{
	char p[64], b[16];
	snprintf(p, sizeof p, "/proc/%d/oom_score_adj", (int)pid);
	snprintf(b, sizeof b, "%d", v);
	return pd_write_file(p, b, NULL);
}

/* The layers and binds of o, checked, into cfg (what init, or a reset's helper, mounts). */
static int resolve_layout(pd_ctx *c, const pd_sandbox_opts *o, uint64_t disk_bytes, child_cfg *cfg,
			  pd_layer *layers, int *nlayers_out, pd_err *e)
{
	int nlayers = 0;
	if (o->layers && o->layers[0]) {
		for (; o->layers[nlayers]; nlayers++) {
			struct stat lst;
			if (nlayers == PD_MAX_LAYERS - 1)
				return pd_fail(e, E2BIG, "at most %d image layers", PD_MAX_LAYERS - 1);
			int serr = stat(o->layers[nlayers], &lst) < 0 ? errno : S_ISDIR(lst.st_mode) ? 0 : ENOTDIR;
			if (serr)
				return pd_fail(e, serr, "image layer %s", o->layers[nlayers]);
			snprintf(layers[nlayers].src, PD_PATH, "%s", o->layers[nlayers]);
			snprintf(layers[nlayers].dst, PD_PATH, "/");
		}
	} else {
		bool is_default = !o->image;
		if (pd_image_layers(is_default ? c->default_image : o->image, is_default, layers, &nlayers,
				    e) < 0)
			return -1;
	}
	for (size_t i = 0; i < o->nbinds; i++) {
		struct stat st;
		if (!o->binds[i].src || !o->binds[i].dst || o->binds[i].dst[0] != '/' ||
		    strstr(o->binds[i].dst, ".."))
			return pd_fail(e, EINVAL,
				       "bind mount %zu: need a host path and an absolute target without '..'", i);
		if (stat(o->binds[i].src, &st) < 0)
			return pd_fail(e, errno, "bind mount source %s", o->binds[i].src);
		cfg->bind_is_dir[i] = S_ISDIR(st.st_mode);
		snprintf(cfg->bind_dst[i], PD_PATH, "%s", o->binds[i].dst);
	}
	cfg->nbinds = (int)o->nbinds;
	cfg->nlayers = nlayers;
	for (int i = 0; i < nlayers; i++)
		snprintf(cfg->layer_dst[i], PD_PATH, "%s", layers[i].dst);
	snprintf(cfg->stage, sizeof cfg->stage, "%s", c->stage_dir);
	cfg->net = o->net;
	cfg->disk_bytes = disk_bytes;
	cfg->uwatch_fd = -1;
	*nlayers_out = nlayers;
	return 0;
}

/* Detached mounts of the layers, then the binds, id-mapped into the user namespace of pid. */
static int layout_fds(const pd_sandbox_opts *o, const pd_layer *layers, int nlayers, pid_t pid,
		      int *fds, int *nfds, pd_err *e)
{
	char nspath[64];
	snprintf(nspath, sizeof nspath, "/proc/%d/ns/user", (int)pid);
	int userns = open(nspath, O_RDONLY | O_CLOEXEC);
	if (userns < 0)
		return pd_fail(e, errno, "open %s", nspath);
	int rc = 0;
	for (int i = 0; i < nlayers && rc == 0; i++) {
		int fd = idmapped_tree(layers[i].src, userns, true, true, e);
		if (fd < 0)
			rc = -1;
		else
			fds[(*nfds)++] = fd;
	}
	for (size_t i = 0; i < o->nbinds && rc == 0; i++) {
		/* read-only binds show host owners as in the image; writable binds are not id-mapped,
		 * so what the sandbox writes there belongs to its unprivileged host uid, never root */
		int fd = idmapped_tree(o->binds[i].src, userns, !o->binds[i].rw, !o->binds[i].rw, e);
		if (fd < 0)
			rc = -1;
		else
			fds[(*nfds)++] = fd;
	}
	close(userns);
	return rc;
}

pd_sandbox *pd_sandbox_create(pd_ctx *c, const pd_sandbox_opts *o, pd_err *e)
{
	pd_sandbox_opts none = {0};
	if (!o) {
		none.limits = pd_limits_default();
		o = &none;
	}
	if (o->nbinds > PD_MAX_BINDS) {
		pd_fail(e, E2BIG, "at most %d bind mounts", PD_MAX_BINDS);
		return NULL;
	}
	if (o->hostname && (strlen(o->hostname) > 64 || !*o->hostname)) {
		pd_fail(e, EINVAL, "hostname must have 1 to 64 characters");
		return NULL;
	}
	uint64_t t0 = pd_now_us();
	if (__atomic_load_n(&c->nstuck, __ATOMIC_RELAXED))
		pd_ctx_reap_stuck(c);
	pd_sandbox *s = calloc(1, sizeof *s);
	child_cfg *cfg = calloc(1, sizeof *cfg);
	if (!s || !cfg) {
		free(s);
		free(cfg);
		pd_fail(e, ENOMEM, "sandbox");
		return NULL;
	}
	s->ctx = c;
	s->state = PD_CREATING;
	s->pidfd = s->sock = -1;
	s->opts = *o;
	s->lim = o->limits;
	s->created_us = t0;
	if (!s->lim.disk_bytes)
		s->lim.disk_bytes = 256ull << 20;
	pthread_mutex_lock(&c->lock);
	uint64_t seq = ++c->seq;
	pthread_mutex_unlock(&c->lock);
	snprintf(s->id, sizeof s->id, "sb-%08" PRIx32 "-%" PRIu64, c->run_id, seq);

	int sv[2] = {-1, -1}, layer_fds[PD_MAX_LAYERS + PD_MAX_BINDS + 1], nfds = 0;
	int sysfs_fd = -1;
	pd_layer layers[PD_MAX_LAYERS];
	int nlayers = 0;
	if (resolve_layout(c, o, s->lim.disk_bytes, cfg, layers, &nlayers, e) < 0)
		goto fail;
	snprintf(cfg->hostname, sizeof cfg->hostname, "%s", o->hostname ? o->hostname : "sandbox");
	cfg->bpf_base = &c->bpf_base;
	cfg->bpf_audit = &c->bpf_audit;

	if (pd_slot_get(c->slots, &s->slot, e) < 0)
		goto fail;
	s->has_slot = true;
	if (c->cg.ops->create(&c->cg, s->id, &s->lim, &s->cg, e) < 0)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		pd_fail(e, errno, "socketpair");
		goto fail;
	}
	cfg->sock = sv[1];
	if (o->net != PD_NET_HOST) {
		s->netns = pd_netns_get(c->net, o->net == PD_NET_LOOPBACK, e);
		if (!s->netns)
			goto fail;
	}
	cfg->has_sysfs = s->netns != NULL;

	struct clone_args ca;
	memset(&ca, 0, sizeof ca);
	/* no CLONE_NEWNET: the child starts in the namespace this thread enters just before */
	ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
		   CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)&s->pidfd;
	ca.exit_signal = 0; /* no SIGCHLD to the embedding application; we reap with __WALL */
	int cgfd = c->cg.ops->clone_fd(s->cg);
	if (cgfd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgfd;
	}
	if (s->netns) {
		if (pd_netns_enter(s->netns, e) < 0)
			goto fail;
		sysfs_fd = pd_netns_sysfs(e);
		if (sysfs_fd < 0) {
			pd_netns_leave(c->net, NULL);
			goto fail;
		}
	}
	long pid = syscall(SYS_clone3, &ca, sizeof ca);
	if (pid == 0)
		pd_child_main(cfg); /* never returns */
	int cerr = errno;
	if (pid > 0)
		s->pid = (pid_t)pid;
	if (s->netns && pd_netns_leave(c->net, e) < 0)
		goto fail;
	if (s->netns && pid > 0)
		pd_netns_detach(s->netns);
	if (pid < 0) {
		pd_fail(e, cerr, "clone3 into new namespaces");
		goto fail;
	}
	close(sv[1]);
	sv[1] = -1;
	s->sock = sv[0];
	sv[0] = -1;

	if (write_maps(s->pid, s->slot, e) < 0)
		goto fail;
	/* init must not be the task the memory cgroup's OOM killer takes (it is a copy of this
	 * process: by size it could be): exempt it where we may (CAP_SYS_RESOURCE, which some
	 * containers withhold); programs raise themselves to +1000 before their execve anyway */
	s->init_oom_adj = read_oom_adj(s->pid);
	if (set_oom_adj(s->pid, -1000) == 0)
		s->init_oom_adj = -1000;
	if (cgfd < 0 && c->cg.ops->attach(s->cg, s->pid, e) < 0)
		goto fail;
	if (layout_fds(o, layers, nlayers, s->pid, layer_fds, &nfds, e) < 0)
		goto fail;
	if (sysfs_fd >= 0) {
		layer_fds[nfds++] = sysfs_fd;
		sysfs_fd = -1;
	}
	struct msg_hdr go = {MSG_GO};
	if (pd_send_fds(s->sock, &go, sizeof go, layer_fds, nfds) < 0) {
		pd_fail(e, errno, "start sandbox");
		goto fail;
	}
	for (int i = 0; i < nfds; i++)
		close(layer_fds[i]);
	nfds = 0;
	union {
		struct msg_hdr h;
		struct msg_error err;
	} m;
	int setup_ms = o->setup_timeout_ms ? (int)(o->setup_timeout_ms > 600000 ? 600000 : o->setup_timeout_ms)
					    : 30000;
	/* the deadline counts from the start of the create (CREATING), not from the GO message */
	uint64_t ready_by = t0 + (uint64_t)setup_ms * 1000, now_us = pd_now_us();
	int left_ms = ready_by > now_us ? (int)((ready_by - now_us + 999) / 1000) : 0;
	/* Past the deadline already (this thread was slow to get here): a timeout, even if READY is
	 * waiting, or whether a create missed its deadline would depend on when we looked. */
	int got = left_ms > 0 ? recv_msg(s->sock, &m, sizeof m, left_ms) : (errno = ETIMEDOUT, -1);
	/* the wait rounds up to whole milliseconds: READY after the deadline is late all the same */
	if (got >= 0 && pd_now_us() > ready_by) {
		got = -1;
		errno = ETIMEDOUT;
	}
	if (got < 0) {
		int err = errno;
		siginfo_t si;
		memset(&si, 0, sizeof si);
		if (err == ECONNRESET &&
		    waitid((idtype_t)P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOWAIT | __WALL) == 0 && si.si_pid)
			/* it ended without a word: say how, or a kill from outside looks like a bug */
			pd_fail(e, err, "sandbox %s: its init %s %d during setup", s->id,
				si.si_code == CLD_EXITED ? "exited with status" : "was killed by signal",
				si.si_status);
		else
			pd_fail(e, err, "sandbox %s did not become ready within %d ms", s->id, setup_ms);
		goto fail;
	}
	if (m.h.type == MSG_ERROR) {
		m.err.what[sizeof m.err.what - 1] = 0;
		pd_fail(e, m.err.err, "sandbox setup: %s", m.err.what);
		goto fail;
	}
	if (m.h.type != MSG_READY) {
		pd_fail(e, EPROTO, "sandbox %s: unexpected message %u", s->id, m.h.type);
		goto fail;
	}
	free(cfg);
	s->setup = true;
	s->state = PD_READY;
	return s;
fail:
	for (int i = 0; i < nfds; i++)
		close(layer_fds[i]);
	if (sysfs_fd >= 0)
		close(sysfs_fd);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	free(cfg);
	s->state = PD_FAILED;
	pd_sandbox_destroy(s, NULL, 0);
	return NULL;
}

/* ---- exec ------------------------------------------------------------------------------------ */

static char env_path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	    env_home[] = "HOME=/root", env_lang[] = "LANG=C.UTF-8", env_term[] = "TERM=dumb";
static char *const default_env[] = {env_path, env_home, env_lang, env_term, NULL};

static size_t vec_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* Host pid of the sandbox process whose pid in the sandbox is nspid (a child of init). */
static pid_t host_pid_of(pid_t init, pid_t nspid)
{
	char p[96], buf[4096];
	snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)init, (int)init);
	if (pd_read_file(p, buf, sizeof buf) <= 0)
		return -1;
	for (char *q = buf; *q;) {
		long hp = strtol(q, &q, 10);
		if (hp <= 0)
			break;
		char st[2048];
		snprintf(p, sizeof p, "/proc/%ld/status", hp);
		if (pd_read_file(p, st, sizeof st) > 0) {
			char *ns = strstr(st, "NSpid:");
			if (ns) {
				char *eol = strchr(ns, '\n');
				if (eol)
					*eol = 0;
				char *last = strrchr(ns, '\t');
				if (last && atol(last + 1) == nspid)
					return (pid_t)hp;
			}
		}
		while (*q == ' ')
			q++;
	}
	return -1;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

typedef struct exec_run {
	pd_capture cap[2];
	int out[2];     /* read ends of stdout, stderr */
	int in_w;       /* write end of stdin (stdin_data), or -1 */
	size_t in_off;
	bool started, exited, killed_to, killed_ol, init_died;
	int wstatus;
	pd_auditor aud;
	bool aud_on;
	bool spill_failed[2];
	uint64_t spilled[2];
} exec_run;

/* write() that cannot end the embedding process with SIGPIPE: the program may stop reading its
 * stdin at any moment, and a spill fd may be a pipe */
static ssize_t write_nosig(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	ssize_t n = write(fd, buf, len);
	int err = errno;
	if (n < 0 && err == EPIPE && !was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return n;
}

static void drain(exec_run *x, int i, const pd_exec_opts *o)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(x->out[i], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(x->out[i]);
				x->out[i] = -1;
			}
			return;
		}
		size_t live = pd_capture_add(&x->cap[i], buf, (size_t)n);
		if (o->on_output && live)
			o->on_output(o->cb_arg, i + 1, buf, live);
		if (o->spill && o->spill_fd[i] >= 0 && !x->spill_failed[i] && o->spill_max &&
		    x->spilled[i] + (uint64_t)n > o->spill_max)
			x->spill_failed[i] = true; /* a spill that cannot be whole is not written on */
		if (o->spill && o->spill_fd[i] >= 0 && !x->spill_failed[i]) {
			x->spilled[i] += (uint64_t)n;
			/* a full spill file must not stop the run: keep the capture, note the loss */
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write_nosig(o->spill_fd[i], buf + off, (size_t)(n - off));
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0) {
					x->spill_failed[i] = true;
					break;
				}
				off += w;
			}
		}
	}
}

static int build_exec_msg(const pd_sandbox *s, const pd_exec_opts *o, char **out, size_t *len, pd_err *e)
{
	char *const *envp = o->envp ? o->envp : default_env;
	size_t argc = vec_len(o->argv), envc = vec_len(envp);
	if (!argc)
		return pd_fail(e, EINVAL, "exec needs a program");
	if (argc > PD_MAX_ARGS || envc > PD_MAX_ARGS)
		return pd_fail(e, E2BIG, "more than %d arguments or variables", PD_MAX_ARGS);
	const char *cwd = o->cwd && *o->cwd ? o->cwd : "/";
	size_t n = sizeof(struct msg_exec) + strlen(cwd) + 1;
	for (size_t i = 0; i < argc; i++)
		n += strlen(o->argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		n += strlen(envp[i]) + 1;
	if (n > PD_EXEC_MSG_MAX)
		return pd_fail(e, E2BIG, "arguments and environment exceed %d bytes", PD_EXEC_MSG_MAX);
	char *b = calloc(1, n);
	if (!b)
		return pd_fail(e, ENOMEM, "exec request");
	struct msg_exec *x = (struct msg_exec *)b;
	x->type = MSG_EXEC;
	x->argc = (uint32_t)argc;
	x->envc = (uint32_t)envc;
	x->audit = s->opts.audit && s->opts.audit->enabled;
	if (o->uid >= PD_UID_RANGE || o->gid >= PD_UID_RANGE) {
		free(b);
		return pd_fail(e, EINVAL, "uid and gid must be below %u", PD_UID_RANGE);
	}
	if (o->uid == PD_INIT_UID) {
		free(b);
		return pd_fail(e, EINVAL, "uid %u is reserved for the sandbox's init", PD_INIT_UID);
	}
	x->uid = o->uid;
	x->gid = o->gid;
	uint64_t cpu_ms = o->cpu_ms ? o->cpu_ms : s->lim.cpu_ms;
	/* the per-process CPU rlimit is a backstop; the cgroup check ends the sandbox first */
	x->rl_cpu_s = cpu_ms ? cpu_ms / 1000 + 2 : 0;
	x->rl_nofile = s->lim.nofile;
	x->rl_fsize = s->lim.fsize_bytes; /* the disk size already bounds every file: ENOSPC */
	x->rl_stack = s->lim.stack_bytes;
	char *p = b + sizeof *x;
	p = stpcpy(p, cwd) + 1;
	for (size_t i = 0; i < argc; i++)
		p = stpcpy(p, o->argv[i]) + 1;
	for (size_t i = 0; i < envc; i++)
		p = stpcpy(p, envp[i]) + 1;
	*out = b;
	*len = n;
	return 0;
}

static void on_init_msg(pd_sandbox *s, exec_run *x, pd_result *r)
{
	union {
		struct msg_hdr h;
		struct msg_error err;
		struct msg_started st;
		struct msg_exited ex;
	} m;
	ssize_t n = pd_recv_fds(s->sock, &m, sizeof m, NULL, NULL, 0);
	if (n <= 0) {
		x->init_died = true;
		return;
	}
	switch (m.h.type) {
	case MSG_STARTED:
		x->started = true;
		if (m.st.listener_fd >= 0 && s->opts.audit && !x->aud_on) {
			pid_t hp = host_pid_of(s->pid, m.st.pid);
			int pfd = hp > 0 ? (int)syscall(SYS_pidfd_open, hp, 0) : -1;
			int l = pfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pfd, m.st.listener_fd, 0) : -1;
			if (pfd >= 0)
				close(pfd);
			if (l >= 0 && pd_auditor_init(&x->aud, l, s->opts.audit, pd_now_us(), NULL) == 0)
				x->aud_on = true;
			else {
				if (l >= 0)
					close(l);
				/* unaudited is not acceptable when an audit was asked for */
				snprintf(r->error, sizeof r->error, "could not take the audit listener");
				kill_init(s);
			}
		}
		break;
	case MSG_EXEC_FAILED:
		m.err.what[sizeof m.err.what - 1] = 0;
		snprintf(r->error, sizeof r->error, "%s: %s", m.err.what, strerror(m.err.err));
		break;
	case MSG_EXITED:
		x->exited = true;
		x->wstatus = m.ex.wstatus;
		break;
	default:
		break;
	}
}

static uint64_t delta(uint64_t after, uint64_t before)
{
	return after > before ? after - before : 0;
}

static int end_setup(pd_sandbox *s, pd_err *e);

int pd_sandbox_exec(pd_sandbox *s, const pd_exec_opts *o, pd_result *r, pd_err *e)
{
	memset(r, 0, sizeof *r);
	snprintf(r->sandbox_id, sizeof r->sandbox_id, "%s", s->id);
	if (s->state != PD_READY)
		return pd_fail(e, EINVAL, "sandbox %s is %s, not READY", s->id, pd_state_name(s->state));
	if (end_setup(s, e) < 0)
		return -1;
	char *msg = NULL;
	size_t msglen = 0;
	if (build_exec_msg(s, o, &msg, &msglen, e) < 0)
		return -1;
	exec_run x;
	memset(&x, 0, sizeof x);
	x.out[0] = x.out[1] = x.in_w = -1;
	x.aud.listener = -1;
	int pout[2] = {-1, -1}, perr[2] = {-1, -1}, pin[2] = {-1, -1};
	uint64_t keep = s->lim.output_bytes ? s->lim.output_bytes : (1ull << 20);
	uint64_t kill_at = o->output_kill_bytes ? o->output_kill_bytes : s->lim.output_kill_bytes;
	if (pd_capture_init(&x.cap[0], keep) < 0 || pd_capture_init(&x.cap[1], keep) < 0 ||
	    pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0 ||
	    (o->stdin_data && pipe2(pin, O_CLOEXEC) < 0)) {
		pd_fail(e, errno, "exec pipes");
		goto fail_early;
	}
	int fds[3], nfds = 0;
	int stdin_fd = o->stdin_data ? pin[0] : o->stdin_from_fd ? o->stdin_fd : -1;
	if (stdin_fd >= 0) {
		fds[nfds++] = stdin_fd;
		((struct msg_exec *)msg)->has_stdin = 1;
	}
	fds[nfds++] = pout[1];
	fds[nfds++] = perr[1];

	pd_cg_stats before, after;
	s->ctx->cg.ops->reset_peaks(s->cg);
	s->ctx->cg.ops->stats(s->cg, &before);
	uint64_t t0 = pd_now_us();
	s->state = PD_RUNNING;
	if (pd_send_fds(s->sock, msg, msglen, fds, nfds) < 0) {
		pd_fail(e, errno, "send exec request to sandbox %s", s->id);
		s->state = PD_READY;
		goto fail_early;
	}
	free(msg);
	msg = NULL;
	close(pout[1]);
	close(perr[1]);
	if (pin[0] >= 0)
		close(pin[0]);
	x.out[0] = pout[0];
	x.out[1] = perr[0];
	x.in_w = pin[1];
	set_nonblock(x.out[0]);
	set_nonblock(x.out[1]);
	if (x.in_w >= 0)
		set_nonblock(x.in_w);

	uint64_t wall_ms = o->wall_ms ? o->wall_ms : s->lim.wall_ms;
	uint64_t cpu_ms = o->cpu_ms ? o->cpu_ms : s->lim.cpu_ms;
	uint64_t deadline = wall_ms ? t0 + wall_ms * 1000 : UINT64_MAX;
	uint64_t next_check = t0 + 20000;
	while (!x.exited && !x.init_died) {
		struct pollfd pf[5];
		int np = 0, i_sock, i_out[2] = {-1, -1}, i_in = -1, i_aud = -1;
		pf[i_sock = np++] = (struct pollfd){s->sock, POLLIN, 0};
		for (int i = 0; i < 2; i++)
			if (x.out[i] >= 0)
				pf[i_out[i] = np++] = (struct pollfd){x.out[i], POLLIN, 0};
		if (x.in_w >= 0)
			pf[i_in = np++] = (struct pollfd){x.in_w, POLLOUT, 0};
		if (x.aud_on)
			pf[i_aud = np++] = (struct pollfd){x.aud.listener, POLLIN, 0};
		uint64_t now = pd_now_us();
		uint64_t until = next_check < deadline ? next_check : deadline;
		int timeout = until > now ? (int)((until - now + 999) / 1000) : 0;
		int pr = poll(pf, (nfds_t)np, timeout);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr > 0) {
			if (i_aud >= 0 && pf[i_aud].revents) {
				if ((pf[i_aud].revents & (POLLHUP | POLLERR)) || pd_auditor_handle(&x.aud, r) < 0) {
					pd_auditor_close(&x.aud);
					x.aud_on = false;
				}
			}
			for (int i = 0; i < 2; i++)
				if (i_out[i] >= 0 && pf[i_out[i]].revents)
					drain(&x, i, o);
			if (i_in >= 0 && pf[i_in].revents) {
				ssize_t n = pf[i_in].revents & POLLOUT
						    ? write_nosig(x.in_w, o->stdin_data + x.in_off, o->stdin_len - x.in_off)
						    : -1;
				if (n > 0)
					x.in_off += (size_t)n;
				if (n < 0 || x.in_off >= o->stdin_len) {
					close(x.in_w);
					x.in_w = -1;
				}
			}
			if (pf[i_sock].revents)
				on_init_msg(s, &x, r);
		}
		now = pd_now_us();
		if (kill_at && x.cap[0].total + x.cap[1].total > kill_at) {
			x.killed_ol = true;
			kill_init(s);
			break;
		}
		if (now >= deadline) {
			x.killed_to = true;
			kill_init(s);
			break;
		}
		if (now >= next_check) {
			next_check = now + 20000;
			s->ctx->cg.ops->stats(s->cg, &after);
			if (cpu_ms && delta(after.cpu_us, before.cpu_us) > cpu_ms * 1000) {
				x.killed_to = true;
				kill_init(s);
				break;
			}
		}
	}
	uint64_t t1 = pd_now_us();
	s->state = PD_COLLECTING;
	/* what the program wrote before it ended is in the pipes: take it, but do not wait for
	 * writers it left behind */
	for (int i = 0; i < 2; i++)
		if (x.out[i] >= 0) {
			drain(&x, i, o);
			if (x.out[i] >= 0)
				close(x.out[i]);
		}
	if (x.in_w >= 0)
		close(x.in_w);
	if (x.aud_on)
		pd_auditor_close(&x.aud);
	s->ctx->cg.ops->stats(s->cg, &after);
	s->ctx->cg.ops->rest(s->cg);

	r->wall_ms = (t1 - t0) / 1000;
	r->exec_us = t1 - t0;
	r->cpu_ms = delta(after.cpu_us, before.cpu_us) / 1000;
	r->cpu_user_ms = delta(after.cpu_user_us, before.cpu_user_us) / 1000;
	r->cpu_sys_ms = delta(after.cpu_sys_us, before.cpu_sys_us) / 1000;
	r->memory_peak_bytes = after.mem_peak;
	r->pids_peak = (uint32_t)(after.pids_peak > after.pids_current ? after.pids_peak : after.pids_current);
	r->oom_killed = after.oom_kills > before.oom_kills;
	pd_capture_finish(&x.cap[0], &r->out);
	pd_capture_finish(&x.cap[1], &r->err);
	r->spill_lost[0] = o->spill && x.spill_failed[0];
	r->spill_lost[1] = o->spill && x.spill_failed[1];
	/* the live callback saw the heads; a tail that joins its head (nothing dropped) is the rest */
	if (o->on_output && r->out.tail_len && !r->out.truncated)
		o->on_output(o->cb_arg, 1, r->out.tail, r->out.tail_len);
	if (o->on_output && r->err.tail_len && !r->err.truncated)
		o->on_output(o->cb_arg, 2, r->err.tail, r->err.tail_len);

	bool killed_by_us = x.killed_to || x.killed_ol;
	if (x.exited) {
		if (WIFEXITED(x.wstatus))
			r->exit_code = WEXITSTATUS(x.wstatus);
		else if (WIFSIGNALED(x.wstatus))
			r->signal = WTERMSIG(x.wstatus);
	}
	if (killed_by_us || (x.init_died && !x.exited))
		r->signal = r->signal ? r->signal : SIGKILL;
	if (x.killed_ol)
		r->status = PD_OL;
	else if (x.killed_to)
		r->status = PD_TO;
	else if (!x.exited) {
		r->status = PD_XX;
		if (!r->error[0])
			snprintf(r->error, sizeof r->error, "sandbox init ended before the program did");
	} else if (r->oom_killed && (r->signal || r->exit_code))
		r->status = PD_ML;
	else if (WIFSIGNALED(x.wstatus))
		r->status = WTERMSIG(x.wstatus) == SIGXCPU ? PD_TO : PD_SG;
	else if (r->exit_code)
		r->status = PD_RE;
	else
		r->status = PD_OK;
	if (r->status == PD_OK && (r->out.truncated || r->err.truncated))
		r->status = PD_OL;
	/* a limit kill ends the sandbox; so does an init that died under us */
	if (killed_by_us || x.init_died)
		s->state = killed_by_us ? PD_TIMED_OUT : PD_FAILED;
	else
		s->state = PD_READY;
	return 0;
fail_early:
	free(msg);
	for (int i = 0; i < 2; i++) {
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
		if (pin[i] >= 0)
			close(pin[i]);
	}
	pd_capture_free(&x.cap[0]);
	pd_capture_free(&x.cap[1]);
	return -1;
}

/* The control socket, for file operations, while the sandbox is READY. */
int pd_sandbox_ctl(pd_sandbox *s, pd_err *e);
int pd_sandbox_ctl(pd_sandbox *s, pd_err *e)
{
	if (s->state != PD_READY)
		return pd_fail(e, EINVAL, "sandbox %s is %s, not READY", s->id, pd_state_name(s->state));
	return s->sock;
}

/* ---- the scratch directories across resets ------------------------------------------------- */

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
static void new_scratch(pd_sandbox *s, const pd_reset_report *rep)
{
	pd_uwatch *w = s->ctx->uwatch;
	pd_uwatch_forget_scratch(w, &s->sw);
	if (rep->nswd == PD_NSCRATCH + 1)
		pd_uwatch_add_scratch(w, &s->sw, rep->swd, rep->nswd);
	s->nhost = 0;
	s->resid = false;
	s->spoiled = false;
}

/* The helper's configuration for a reset that keeps the root: new scratch mounts and devpts,
 * watched, laid out as the last rebuild laid the staging tmpfs out. */
static void keep_root_cfg(const pd_sandbox *s, child_cfg *cfg)
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
	keep_root_cfg(s, cfg);
	pd_reset_report rep;
	int rc = pd_reset_root(cfg, s->pidfd, NULL, &rep);
	free(cfg);
	if (rc < 0) {
		rep.what[sizeof rep.what - 1] = 0;
		return pd_fail(e, rep.err, "sandbox %s: new scratch directories: %s", s->id, rep.what);
	}
	new_scratch(s, &rep);
	return 0;
}

/* Setup ends with the first exec: from then on a program may have run, so the scratch watches'
 * events count. The last user's file, if this user's host did not overwrite it, goes first. */
static int end_setup(pd_sandbox *s, pd_err *e)
{
	if (!s->setup)
		return 0;
	if (s->resid && replace_scratch(s, e) < 0)
		return -1;
	pd_uwatch_arm(s->ctx->uwatch, &s->sw);
	s->setup = false;
	return 0;
}

/* files.c, before a file operation (op, path, flags, mode as asked, use): *reuse when it is
 * pd_sandbox_write_file's open of the last user's file to overwrite it in place (as it was made:
 * O_CREAT | O_TRUNC, no O_EXCL, the same path and mode); any other operation during setup
 * replaces that scratch first. */
int pd_sandbox_fileop_begin(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode,
			    pd_fop_use use, bool *reuse, pd_err *e);
int pd_sandbox_fileop_begin(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode,
			    pd_fop_use use, bool *reuse, pd_err *e)
{
	*reuse = false;
	if (!s->setup || !s->resid)
		return 0;
	if (use == PD_FOP_WRITE && op == FILEOP_OPEN && (flags & O_CREAT) && (flags & O_TRUNC) &&
	    !(flags & (O_EXCL | O_TMPFILE)) && (flags & O_ACCMODE) != O_RDONLY &&
	    !strcmp(path, s->resid_file.path) && (uint32_t)mode == s->resid_file.mode) {
		*reuse = true;
		return 0;
	}
	return replace_scratch(s, e);
}

/* files.c, when the open that was to overwrite the last user's file failed. */
int pd_sandbox_fileop_unreuse(pd_sandbox *s, pd_err *e);
int pd_sandbox_fileop_unreuse(pd_sandbox *s, pd_err *e)
{
	return replace_scratch(s, e);
}

/* files.c, after a file operation that succeeded. What the next reset may keep must be only what
 * it can account for: a descriptor handed to the caller could still read (or write) the host's
 * file when the next user's host has overwritten it, and during setup, when the watches do not
 * count the host's own events, a directory made or an entry removed or any other file made
 * moves the tmpfs's inode counter. Either spoils the scratch until the next one is made. */
void pd_sandbox_fileop_done(pd_sandbox *s, uint32_t op, int flags, pd_fop_use use);
void pd_sandbox_fileop_done(pd_sandbox *s, uint32_t op, int flags, pd_fop_use use)
{
	if (use == PD_FOP_HANDED)
		s->spoiled = true;
	if (!s->setup || use == PD_FOP_WRITE)
		return; /* armed: the watches see it; a write: pd_sandbox_host_wrote */
	bool reads = op == FILEOP_OPEN && !(flags & (O_CREAT | O_TRUNC | O_TMPFILE)) &&
		     ((flags & O_PATH) || (flags & O_ACCMODE) == O_RDONLY);
	if (!reads)
		s->spoiled = true;
}

/* files.c, after pd_sandbox_write_file wrote a file (st: its fstat then): during setup, the one
 * file the host makes directly in a scratch directory, which the program may then read and the
 * next reset keep; anything else it cannot account for spoils the scratch. Its open took the
 * last user's file when resid was still set (pd_sandbox_fileop_begin): that must be the file left. */
void pd_sandbox_host_wrote(pd_sandbox *s, const char *path, mode_t mode, const struct stat *st);
void pd_sandbox_host_wrote(pd_sandbox *s, const char *path, mode_t mode, const struct stat *st)
{
	if (s->resid) {
		s->resid = false;
		if (st->st_ino != s->resid_file.ino || st->st_nlink != 1) {
			s->spoiled = true;
			return;
		}
	}
	if (!s->setup)
		return;
	const char *name;
	int d = scratch_child(s, path, &name);
	/* elsewhere, a second file (one at most is looked at), or one too large to leave charged to
	 * the sandbox's memory until the next user's overwrites it */
	if (d < 0 || !S_ISREG(st->st_mode) || st->st_nlink != 1 || (s->nhost && st->st_ino != s->host.ino) ||
	    (uint64_t)st->st_size > PD_KEEP_FILE_MAX) {
		s->spoiled = true;
		return;
	}
	s->nhost = 1;
	snprintf(s->host.path, sizeof s->host.path, "%s", path);
	s->host.mode = (uint32_t)mode;
	s->host.st_mode = st->st_mode & 07777;
	s->host.ino = st->st_ino;
	s->host.size = (uint64_t)st->st_size;
	s->host.blocks = (uint64_t)st->st_blocks;
	/* unarmed during setup: upperwatch.c reads none of these until pd_uwatch_arm */
	s->sw.file_dir = d;
	snprintf(s->sw.file_name, sizeof s->sw.file_name, "%s", name);
	s->sw.nfiles = 1;
}

/* ---- reset ----------------------------------------------------------------------------------- */

/* Sends a request (MSG_RESET or MSG_REWIND: len bytes at msg) to init and waits for its
 * RESET_DONE (skipping reports of programs that ended before), until deadline_us; *scratch (if
 * not NULL) gets its verdict on the scratch directories. */
static int init_request(pd_sandbox *s, const void *msg, size_t len, uint64_t deadline_us,
			uint32_t *scratch, pd_err *e)
{
	if (send(s->sock, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
		return pd_fail(e, errno, "sandbox %s: send a request to init", s->id);
	for (;;) {
		char buf[sizeof(struct msg_reset_done) + 16];
		uint64_t now = pd_now_us();
		int n = recv_msg(s->sock, buf, sizeof buf,
				 now < deadline_us ? (int)((deadline_us - now) / 1000 + 1) : 0);
		if (n < 0)
			return pd_fail(e, errno, "sandbox %s: no answer from init in time", s->id);
		pd_init_msg m;
		int t = pd_init_msg_decode(buf, n, &m);
		if (t < 0)
			return pd_fail(e, EPROTO, "sandbox %s: a malformed message from init", s->id);
		if (t != MSG_RESET_DONE)
			continue; /* the report of a program that ended before: nobody waits for it */
		if (m.err)
			return pd_fail(e, m.err, "sandbox %s: %s", s->id, m.what);
		if (scratch)
			*scratch = m.scratch;
		return 0;
	}
}

int pd_sandbox_rewind_pids(pd_sandbox *s, pd_err *e)
{
	if (s->state != PD_READY)
		return pd_fail(e, EINVAL, "sandbox %s is %s, not READY", s->id, pd_state_name(s->state));
	struct msg_hdr h = {MSG_REWIND};
	return init_request(s, &h, sizeof h, pd_now_us() + 10000000u, NULL, e);
}

uint32_t pd_sandbox_resets(const pd_sandbox *s)
{
	return s->resets;
}

uint32_t pd_sandbox_resets_kept(const pd_sandbox *s)
{
	return s->resets_kept;
}

uint32_t pd_sandbox_resets_scratch_kept(const pd_sandbox *s)
{
	return s->resets_scratch_kept;
}

/* What a reset leaves charged to a sandbox's memory cgroup at most: an eighth of its limit,
 * between 8 and 64 MiB. Enough for the page cache a program of the default image first reads
 * (python's start: ~8 MiB; g++ on <iostream>: ~44 MiB), little against the limit. */
static uint64_t reset_keep(uint64_t limit)
{
	uint64_t k = limit ? limit / 8 : UINT64_MAX;
	return k < (8u << 20) ? (8u << 20) : k > (64u << 20) ? (64u << 20) : k;
}

/* The reset's request to init, with what the scratch directories should hold if they may be
 * kept: returns whether they may (watched, no event that counts so far, at most one file of
 * the host's, the last user's left in place if this one's host made none). */
static bool scratch_request(pd_sandbox *s, struct msg_reset *m)
{
	memset(m, 0, sizeof *m);
	m->type = MSG_RESET;
	if (s->spoiled || (s->nhost && s->resid) || !pd_uwatch_scratch_clean(s->ctx->uwatch, &s->sw))
		return false;
	for (int i = 0; i < PD_NSCRATCH; i++) {
		bool img = i < PD_SCRATCH_IMG;
		m->dir[i].on = img ? s->scr[i].on : true;
		/* /dev/shm as make_scratch makes it, by uid 0 */
		m->dir[i].mode = img ? s->scr[i].mode : 01777;
		m->dir[i].uid = img ? s->scr[i].uid : 0;
		m->dir[i].gid = img ? s->scr[i].gid : 0;
	}
	const struct keepfile *f = s->nhost == 1 ? &s->host : s->resid ? &s->resid_file : NULL;
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

int pd_sandbox_reset(pd_sandbox *s, pd_err *e)
{
	pd_ctx *c = s->ctx;
	if (s->state != PD_READY)
		return pd_fail(e, EINVAL, "sandbox %s is %s, not READY", s->id, pd_state_name(s->state));
	for (size_t i = 0; i < s->opts.nbinds; i++)
		if (s->opts.binds[i].rw)
			return pd_fail(e, EPERM,
				       "sandbox %s has a writable bind mount (%s): what was written there "
				       "would stay, so it is not reset",
				       s->id, s->opts.binds[i].dst);
	if (!s->netns)
		return pd_fail(e, EPERM,
			       "sandbox %s uses the host's network, which a reset cannot prove clean", s->id);
	uint64_t t0 = pd_now_us();
	uint64_t td = s->opts.teardown_timeout_ms ? s->opts.teardown_timeout_ms : 10000;
	child_cfg *cfg = NULL;
	int fds[PD_MAX_LAYERS + PD_MAX_BINDS], nfds = 0;
	s->state = PD_RECLAIMING;

	/* 1. init kills and reaps every process, takes a new IPC namespace, rewinds the pids, and
	 * looks whether the scratch directories are as the host left them (when they may be kept:
	 * watched, with one file of the host's at most) */
	struct msg_reset rm;
	bool scratch_ok = scratch_request(s, &rm);
	uint32_t scratch_as_left = 0;
	if (init_request(s, &rm, sizeof rm, t0 + td * 1000, &scratch_as_left, e) < 0)
		goto fail;
	scratch_ok = scratch_ok && scratch_as_left;
	/* 2. the cgroup agrees that init is all that is left */
	uint64_t tasks = c->cg.ops->tasks(s->cg);
	c->cg.ops->rest(s->cg);
	if (tasks > 1) {
		pd_fail(e, EBUSY, "sandbox %s: %" PRIu64 " tasks left after the reset", s->id, tasks - 1);
		goto fail;
	}
	/* init's OOM score is as created (its /proc files are briefly its uid's while a program
	 * starts, and a program of the last user could have raised it) */
	if (read_oom_adj(s->pid) != s->init_oom_adj) {
		pd_fail(e, EPERM, "sandbox %s: init's oom_score_adj was changed", s->id);
		goto fail;
	}
	/* 3. the network namespace reads as a fresh one (no socket, no traffic left) */
	if (!pd_netns_fresh(c->net, s->netns, s->pid)) {
		pd_fail(e, EADDRINUSE,
			"sandbox %s: its network namespace differs from a fresh one (traffic or sockets "
			"left), so it is not reused",
			s->id);
		goto fail;
	}
	/* 4. a fresh root: new scratch mounts and devpts; new overlays, with their upper tmpfs,
	 * unless the last user provably did not touch them (upperwatch.c). A sandbox with binds
	 * always gets new ones: a bind's missing parent directories are in the root's upper, where
	 * writes below them are not watched, and one under /tmp or /work goes with the scratch. */
	cfg = calloc(1, sizeof *cfg);
	if (!cfg) {
		pd_fail(e, ENOMEM, "reset");
		goto fail;
	}
	bool keep = !s->opts.nbinds && pd_uwatch_clean(c->uwatch, &s->upper_dirty);
	/* 4a. and the scratch directories and devpts too when the last user only read them: no
	 * mount to make, none to take off (each unmount waits for a grace period of RCU that
	 * interrupts every CPU); the host's file stays for the next user's to overwrite */
	if (keep && scratch_ok && pd_uwatch_scratch_clean(c->uwatch, &s->sw)) {
		if (s->nhost == 1) {
			s->resid_file = s->host;
			s->resid = true;
		}
		s->nhost = 0;
		pd_uwatch_scratch_next(c->uwatch, &s->sw);
		s->resets_kept++;
		s->resets_scratch_kept++;
		free(cfg);
		cfg = NULL;
		goto reclaim;
	}
	if (keep) {
		keep_root_cfg(s, cfg);
	} else {
		pd_uwatch_forget(c->uwatch, &s->upper_dirty);
		pd_layer layers[PD_MAX_LAYERS];
		int nlayers = 0;
		if (resolve_layout(c, &s->opts, s->lim.disk_bytes, cfg, layers, &nlayers, e) < 0 ||
		    layout_fds(&s->opts, layers, nlayers, s->pid, fds, &nfds, e) < 0)
			goto fail;
		cfg->has_sysfs = true; /* a sandbox with its own network namespace has /sys (create) */
		cfg->uwatch_fd = pd_uwatch_fd(c->uwatch);
	}
	pd_reset_report rep;
	if (pd_reset_root(cfg, s->pidfd, fds, &rep) < 0) {
		rep.what[sizeof rep.what - 1] = 0;
		pd_fail(e, rep.err, "sandbox %s: reset: %s", s->id, rep.what);
		goto fail;
	}
	if (keep) {
		s->resets_kept++;
	} else {
		memcpy(s->scr, rep.scr, sizeof s->scr);
		s->nlayers = cfg->nlayers;
		if (rep.nwd > 0)
			pd_uwatch_add(c->uwatch, &s->upper_dirty, rep.wd, rep.nwd);
	}
	new_scratch(s, &rep);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	nfds = 0;
	free(cfg);
	cfg = NULL;
reclaim:;
	/* 5. what the last user left charged to the cgroup (its old root's memory is gone with that
	 * root now: this is page cache of image files it was first to read, and kernel objects)
	 * is brought down to a small share of the limit, coldest first, so the page cache the
	 * next programs of every sandbox want stays; peaks are counted from what an exec starts
	 * with (cgroup.c), so the next user's figures do not include it */
	uint64_t kept = reset_keep(s->opts.limits.memory_bytes);
	uint64_t left = c->cg.ops->reclaim(s->cg, kept);
	if (left > kept + (16u << 20)) {
		pd_fail(e, EBUSY, "sandbox %s: %llu KiB still charged to its memory cgroup after reclaim",
			s->id, (unsigned long long)(left >> 10));
		goto fail;
	}
	/* 6. limits as created (a request may have changed the memory limit) */
	if (s->lim.memory_bytes != s->opts.limits.memory_bytes &&
	    apply_memory(s, s->opts.limits.memory_bytes, e) < 0)
		goto fail;
	s->resets++;
	s->setup = true;
	s->state = PD_READY;
	return 0;
fail:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	free(cfg);
	s->state = PD_FAILED; /* destroy it */
	return -1;
}

/* ---- destroy --------------------------------------------------------------------------------- */

static void add_residue(char *buf, size_t len, const char *what)
{
	if (!buf || !len)
		return;
	size_t n = strlen(buf);
	if (!strcmp(buf, "clean"))
		n = 0, buf[0] = 0;
	snprintf(buf + n, len - n, "%s%s", n ? "," : "", what);
}

int pd_sandbox_destroy(pd_sandbox *s, char *residue, size_t residue_len)
{
	if (!s)
		return 0;
	if (residue && residue_len)
		snprintf(residue, residue_len, "clean");
	int dirty = 0;
	pd_ctx *c = s->ctx;
	if (s->state != PD_FAILED)
		s->state = PD_RECLAIMING;
	if (s->netns && s->pid > 0 && !s->reaped)
		pd_netns_reattach(s->netns, s->pid);
	kill_init(s);
	if (s->cg)
		c->cg.ops->kill_all(s->cg);
	uint64_t td = s->opts.teardown_timeout_ms ? s->opts.teardown_timeout_ms : 10000;
	reap(s, td);
	if (!s->reaped && s->cg) {
		/* forced: kill whatever the cgroup still holds and wait once more */
		c->cg.ops->kill_all(s->cg);
		reap(s, td);
	}
	if (s->sock >= 0)
		close(s->sock);
	if (s->pidfd >= 0 && !s->reaped) {
		/* a task outlived SIGKILL past the deadline: park it with its cgroup for a later reap */
		add_residue(residue, residue_len, "init-not-reaped");
		dirty = 1;
		pd_stuck *st = calloc(1, sizeof *st);
		if (st) {
			st->pidfd = s->pidfd;
			st->cg = s->cg;
			snprintf(st->id, sizeof st->id, "%s", s->id);
			s->pidfd = -1;
			s->cg = NULL;
			pthread_mutex_lock(&c->lock);
			st->next = c->stuck;
			c->stuck = st;
			c->nstuck++;
			c->nstuck_total++;
			pthread_mutex_unlock(&c->lock);
		}
	}
	if (s->pidfd >= 0)
		close(s->pidfd);
	if (s->cg) {
		pd_err ce;
		if (c->cg.ops->destroy(s->cg, &ce) < 0) {
			add_residue(residue, residue_len, "cgroup");
			dirty = 1;
		}
		s->cg = NULL;
	}
	/* nothing is ever mounted in the host's namespace: the staging dir must still be a plain
	 * directory on its parent's filesystem */
	struct stat a, b;
	char parent[PD_PATH];
	snprintf(parent, sizeof parent, "%s/..", c->stage_dir);
	if (stat(c->stage_dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev) {
		add_residue(residue, residue_len, "host-mount");
		dirty = 1;
	}
	/* reused only if no process of the sandbox can still be in it: init reaped (a pid namespace
	 * empties before its init can be reaped), or the child never started */
	if (s->netns)
		pd_netns_put(c->net, s->netns, s->reaped || s->pid == 0);
	if (s->has_slot)
		pd_slot_put(c->slots, s->slot);
	s->state = PD_DESTROYED;
	pd_uwatch_forget(c->uwatch, &s->upper_dirty);
	pd_uwatch_forget_scratch(c->uwatch, &s->sw);
	free(s);
	return dirty ? -1 : 0;
}

int pd_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e)
{
	uint64_t t0 = pd_now_us();
	pd_sandbox *s = pd_sandbox_create(c, o, e);
	if (!s) {
		memset(r, 0, sizeof *r);
		r->status = PD_XX;
		snprintf(r->error, sizeof r->error, "%s", e ? e->msg : "sandbox setup failed");
		r->setup_us = pd_now_us() - t0;
		snprintf(r->residue, sizeof r->residue, "not-created");
		return -1;
	}
	uint64_t t1 = pd_now_us();
	if (pd_sandbox_exec(s, x, r, e) < 0) {
		pd_sandbox_destroy(s, NULL, 0);
		return -1;
	}
	r->setup_us = t1 - t0;
	uint64_t t2 = pd_now_us();
	pd_sandbox_destroy(s, r->residue, sizeof r->residue);
	r->teardown_us = pd_now_us() - t2;
	return 0;
}

void pd_result_free(pd_result *r)
{
	free(r->out.head);
	free(r->out.tail);
	free(r->err.head);
	free(r->err.tail);
	free(r->audit);
	memset(&r->out, 0, sizeof r->out);
	memset(&r->err, 0, sizeof r->err);
	r->audit = NULL;
	r->audit_len = r->audit_cap = 0;
}
