/* A container sandbox's birth and death on the host side (the container tier's row, tier.c,
 * routes pd_sandbox_create and pd_sandbox_destroy here): create (clone3 into new namespaces, map
 * uids, hand over id-mapped layers, wait for init's READY) and destroy (kill, reap, remove the
 * cgroup, check what is left), with the helpers exec and reset use again (sandbox.h). The rest of
 * its life is in exec.c, files.c, scratch.c and reset.c; the context it belongs to in context.c. */
#define _GNU_SOURCE
#include "audit.h"
#include "sandbox.h"
#include "tier.h"
#include "ucounts.h"

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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* ---- create ---------------------------------------------------------------------------------- */

const char *pd_sandbox_id(const pd_sandbox *s)
{
	return s->id;
}

/* The I/O limits on the disks behind the image's layers, the binds and the state directory. A
 * sandbox none of whose files are on a disk (all tmpfs or overlay) cannot have its I/O limited,
 * and is refused rather than run unlimited. */
static int set_io_limits(pd_ctx *c, const pd_sandbox_opts *o, const pd_layer *layers, int nlayers, pd_sandbox *s,
			 pd_err *e)
{
	const char *paths[PD_MAX_LAYERS + PD_MAX_BINDS + 2];
	size_t np = 0;
	for (int i = 0; i < nlayers; i++)
		paths[np++] = layers[i].src;
	for (size_t i = 0; i < o->nbinds && i < PD_MAX_BINDS; i++)
		paths[np++] = o->binds[i].src;
	if (o->top_layer)
		paths[np++] = o->top_layer;
	paths[np++] = pd_ctx_state_dir(c);
	pd_iodev devs[PD_MAX_IODEVS];
	size_t n = pd_io_devices(paths, np, devs, PD_MAX_IODEVS);
	if (!n)
		return pd_fail(e, EINVAL, "I/O limits: no disk backs the image, the binds or the state directory "
				   "(tmpfs or overlay only), so there is nothing the limits could apply to");
	return c->cg.ops->set_io(s->cg, devs, n, &s->lim, e);
}

void pd_sandbox_use_id(const pd_sandbox *s, char *buf, size_t len)
{
	/* resets counts the successful ones; a failed reset ends the sandbox, so no use repeats */
	snprintf(buf, len, "%s.%" PRIu32, s->id, s->resets + 1);
}

uint64_t pd_sandbox_created_us(const pd_sandbox *s)
{
	return s->created_us;
}

void pd_sandbox_use_costs(const pd_sandbox *s, pd_use_costs *out)
{
	out->ready_us = s->ready_cost_us;
	out->by_reset = s->ready_by_reset;
	out->prepare_us = s->prepare_us;
}

void pd_sandbox_note_prepare(pd_sandbox *s, uint64_t us)
{
	s->prepare_us = us;
}

pd_state pd_sandbox_state(const pd_sandbox *s)
{
	/* atomic: a session's info is read while another thread runs its exec (lib/exec.c's
	 * set_state; make tsan, stream.t) */
	return __atomic_load_n(&s->state, __ATOMIC_RELAXED);
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

int pd_sb_apply_memory(pd_sandbox *s, uint64_t bytes, pd_err *e)
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
	return pd_sb_apply_memory(s, bytes, e);
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

int pd_sb_recv_msg(int sock, void *buf, size_t len, int timeout_ms, int *fd)
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
	int nfd = 0;
	ssize_t n = pd_recv_fds(sock, buf, len, fd, fd ? &nfd : NULL, fd ? 1 : 0);
	if (fd && nfd == 0)
		*fd = -1;
	if (n <= 0) {
		if (fd && *fd >= 0)
			close(*fd);
		return errno = n == 0 ? ECONNRESET : errno, -1;
	}
	return (int)n;
}

void pd_sb_mq_refresh(pd_sandbox *s, bool last)
{
	if (!s->ctx->landlock_abi)
		return;
	int m = pd_landlock_mqueue_root(s->pidfd);
	if (m >= 0 && s->mq_fd >= 0) {
		pd_sb_mq_park(s->mq_fd); /* the old one's unmount batched */
		int d = dup3(m, s->mq_fd, O_CLOEXEC);
		close(m);
		m = d < 0 ? -1 : s->mq_fd;
	}
	if (m >= 0) {
		s->mq_fd = m;
		s->mq_stale = false;
	} else if (last && s->mq_fd >= 0) {
		close(s->mq_fd);
		s->mq_fd = -1;
		s->mq_stale = false;
	}
}

void pd_sb_kill_init(pd_sandbox *s)
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

int pd_sb_read_oom_adj(pid_t pid)
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

int pd_sb_resolve_layout(pd_ctx *c, const pd_sandbox_opts *o, uint64_t disk_bytes, child_cfg *cfg,
			 pd_layer *layers, int *nlayers_out, pd_err *e)
{
	int nlayers = 0;
	if (o->uid >= PD_UID_RANGE || o->gid >= PD_UID_RANGE || o->uid == PD_INIT_UID)
		return pd_fail(e, EINVAL, "sandbox user %u:%u: ids must be below %u and not %u (init's)", o->uid,
			       o->gid, PD_UID_RANGE, PD_INIT_UID);
	cfg->uid = o->uid;
	cfg->landlock_abi = c->landlock_abi;
	cfg->gid = o->gid;
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
	if (o->top_layer) {
		/* over the image's layers at "/": what was under /work, /tmp... when a session's
		 * snapshot was taken, read-only below the sandbox's own writable layer */
		struct stat tst;
		if (nlayers >= PD_MAX_LAYERS - 1)
			return pd_fail(e, E2BIG, "at most %d image layers", PD_MAX_LAYERS - 1);
		if (stat(o->top_layer, &tst) < 0 || !S_ISDIR(tst.st_mode))
			return pd_fail(e, errno ? errno : ENOTDIR, "top layer %s", o->top_layer);
		memmove(layers + 1, layers, (size_t)nlayers * sizeof *layers);
		snprintf(layers[0].src, PD_PATH, "%s", o->top_layer);
		snprintf(layers[0].dst, PD_PATH, "/");
		nlayers++;
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
		cfg->bind_rw[i] = o->binds[i].rw;
		snprintf(cfg->bind_dst[i], PD_PATH, "%s", o->binds[i].dst);
	}
	cfg->nbinds = (int)o->nbinds;
	cfg->nlayers = nlayers;
	for (int i = 0; i < nlayers; i++)
		snprintf(cfg->layer_dst[i], PD_PATH, "%s", layers[i].dst);
	if (cfg->landlock_abi)
		pd_landlock_top(cfg, layers, nlayers);
	snprintf(cfg->stage, sizeof cfg->stage, "%s", c->stage_dir);
	cfg->net = o->net;
	cfg->disk_bytes = disk_bytes;
	cfg->uwatch_fd = -1;
	*nlayers_out = nlayers;
	return 0;
}

int pd_sb_layout_fds(const pd_sandbox_opts *o, const pd_layer *layers, int nlayers, pid_t pid,
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

/* A new sandbox record for o (its id, limits, the audit's name table), CREATING; NULL on a bad
 * option or no memory. */
static pd_sandbox *sb_new(pd_ctx *c, const pd_sandbox_opts *o, uint64_t t0, pd_err *e)
{
	if (o->nbinds > PD_MAX_BINDS) {
		pd_fail(e, E2BIG, "at most %d bind mounts", PD_MAX_BINDS);
		return NULL;
	}
	if (o->hostname && (strlen(o->hostname) > 64 || !*o->hostname)) {
		pd_fail(e, EINVAL, "hostname must have 1 to 64 characters");
		return NULL;
	}
	pd_sandbox *s = calloc(1, sizeof *s);
	pd_audit_names *names = pd_audit_names_new(o->binds, o->nbinds);
	if (!s || !names) {
		free(s);
		pd_audit_names_free(names);
		pd_fail(e, ENOMEM, "sandbox");
		return NULL;
	}
	s->ctx = c;
	s->names = names;
	s->state = PD_CREATING;
	s->pidfd = s->sock = s->upper_fd = s->mq_fd = -1;
	for (int i = 0; i < PD_NETNS_PROBES; i++)
		s->net_fds[i] = -1;
	s->opts = *o;
	s->lim = o->limits;
	s->created_us = t0;
	if (!s->lim.disk_bytes)
		s->lim.disk_bytes = 256ull << 20;
	pthread_mutex_lock(&c->lock);
	uint64_t seq = ++c->seq;
	pthread_mutex_unlock(&c->lock);
	snprintf(s->id, sizeof s->id, "sb-%08" PRIx32 "-%" PRIu64, c->run_id, seq);
	return s;
}

/* init: clone3 into new user, mount, pid, IPC and UTS namespaces, born in the sandbox's cgroup
 * (where the kernel can) and in its network namespace, its user namespace owned by the slot's uid.
 * Its pid in s->pid, its pidfd in s->pidfd; *sysfs_fd: the namespace's sysfs, for init to mount.
 * Does not return in the child. */
static int clone_init(pd_sandbox *s, child_cfg *cfg, int *cgfd_out, int *sysfs_fd, pd_err *e)
{
	pd_ctx *c = s->ctx;
	struct clone_args ca;
	memset(&ca, 0, sizeof ca);
	/* no CLONE_NEWNET: the child starts in the namespace this thread enters just before */
	ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)&s->pidfd;
	ca.exit_signal = 0; /* no SIGCHLD to the embedding application; we reap with __WALL */
	int cgfd = *cgfd_out = c->cg.ops->clone_fd(s->cg);
	if (cgfd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgfd;
	}
	if (s->netns) {
		if (pd_netns_enter(s->netns, e) < 0)
			return -1;
		*sysfs_fd = pd_netns_sysfs(e);
		if (*sysfs_fd < 0) {
			pd_netns_leave(c->net, NULL);
			return -1;
		}
	}
	/* the sandbox's user namespace owned by its slot's uid, not root (ucounts.c) */
	pd_ucounts_owner own;
	if (pd_ucounts_owner_enter(pd_sandbox_uid_base(s), &own, e) < 0) {
		if (s->netns)
			pd_netns_leave(c->net, NULL);
		return -1;
	}
	long pid = syscall(SYS_clone3, &ca, sizeof ca);
	if (pid == 0)
		pd_child_main(cfg); /* never returns */
	int cerr = errno;
	pd_ucounts_owner_leave(&own);
	if (pid > 0)
		s->pid = (pid_t)pid;
	if (s->netns && pd_netns_leave(c->net, e) < 0)
		return -1;
	if (s->netns && pid > 0)
		pd_netns_detach(s->netns);
	if (pid < 0)
		return pd_fail(e, cerr, "clone3 into new namespaces");
	return 0;
}

/* init's word after GO: READY by the create's deadline (counted from its start, CREATING), or why
 * not (its setup's error, its end, the deadline). */
static int wait_ready(pd_sandbox *s, uint64_t t0, pd_err *e)
{
	const pd_sandbox_opts *o = &s->opts;
	union {
		struct msg_hdr h;
		struct msg_error err;
	} m;
	int setup_ms = o->setup_timeout_ms ? (int)(o->setup_timeout_ms > 600000 ? 600000 : o->setup_timeout_ms)
					    : 30000;
	uint64_t ready_by = t0 + (uint64_t)setup_ms * 1000, now_us = pd_now_us();
	int left_ms = ready_by > now_us ? (int)((ready_by - now_us + 999) / 1000) : 0;
	/* Past the deadline already (this thread was slow to get here): a timeout, even if READY is
	 * waiting, or whether a create missed its deadline would depend on when we looked. */
	int got = left_ms > 0 ? pd_sb_recv_msg(s->sock, &m, sizeof m, left_ms, &s->upper_fd) : (errno = ETIMEDOUT, -1);
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
			return pd_fail(e, err, "sandbox %s: its init %s %d during setup", s->id,
				       si.si_code == CLD_EXITED ? "exited with status" : "was killed by signal",
				       si.si_status);
		return pd_fail(e, err, "sandbox %s did not become ready within %d ms", s->id, setup_ms);
	}
	if (m.h.type == MSG_ERROR) {
		m.err.what[sizeof m.err.what - 1] = 0;
		return pd_fail(e, m.err.err, "sandbox setup: %s", m.err.what);
	}
	if (m.h.type != MSG_READY)
		return pd_fail(e, EPROTO, "sandbox %s: unexpected message %u", s->id, m.h.type);
	return 0;
}

/* The uid maps, init's OOM exemption, its cgroup (when clone3 could not place it), then GO with the
 * id-mapped layers and binds (and the sysfs): init builds the root from them. */
static int start_init(pd_sandbox *s, int cgfd, const int *joinfd, int njoin, const pd_layer *layers,
		      int nlayers, int *sysfs_fd, pd_err *e)
{
	pd_ctx *c = s->ctx;
	int layer_fds[PD_MAX_PASS_FDS], nfds = 0, rc = -1;
	if (write_maps(s->pid, s->slot, e) < 0)
		goto out;
	/* init must not be the task the memory cgroup's OOM killer takes (it is a copy of this
	 * process: by size it could be): exempt it where we may (CAP_SYS_RESOURCE, which some
	 * containers withhold); programs raise themselves to +1000 before their execve anyway */
	s->init_oom_adj = pd_sb_read_oom_adj(s->pid);
	if (set_oom_adj(s->pid, -1000) == 0)
		s->init_oom_adj = -1000;
	if (cgfd < 0 && !njoin && c->cg.ops->attach(s->cg, s->pid, e) < 0)
		goto out;
	if (pd_sb_layout_fds(&s->opts, layers, nlayers, s->pid, layer_fds, &nfds, e) < 0)
		goto out;
	if (*sysfs_fd >= 0) {
		layer_fds[nfds++] = *sysfs_fd;
		*sysfs_fd = -1;
	}
	/* init joins its cgroups first thing after GO, before it allocates anything of its setup */
	for (int i = 0; i < njoin; i++)
		layer_fds[nfds++] = joinfd[i];
	njoin = 0;
	struct msg_hdr go = {MSG_GO};
	if (pd_send_fds(s->sock, &go, sizeof go, layer_fds, nfds) < 0) {
		pd_fail(e, errno, "start sandbox");
		goto out;
	}
	rc = 0;
out:
	for (int i = 0; i < nfds; i++)
		close(layer_fds[i]);
	for (int i = 0; i < njoin; i++) /* not handed over */
		close(joinfd[i]);
	return rc;
}

pd_sandbox *pd_ct_create(pd_ctx *c, const pd_sandbox_opts *o, pd_err *e)
{
	uint64_t t0 = pd_now_us();
	if (__atomic_load_n(&c->nstuck, __ATOMIC_RELAXED))
		pd_ctx_reap_stuck(c);
	pd_sandbox *s = sb_new(c, o, t0, e);
	if (!s)
		return NULL;
	child_cfg *cfg = calloc(1, sizeof *cfg);
	int sv[2] = {-1, -1}, sysfs_fd = -1, cgfd = -1, joinfd[5], njoin = 0;
	pd_layer layers[PD_MAX_LAYERS];
	int nlayers = 0;
	if (!cfg) {
		pd_fail(e, ENOMEM, "sandbox");
		goto fail;
	}
	if (pd_sb_resolve_layout(c, o, s->lim.disk_bytes, cfg, layers, &nlayers, e) < 0)
		goto fail;
	snprintf(cfg->hostname, sizeof cfg->hostname, "%s", o->hostname ? o->hostname : "sandbox");
	cfg->bpf_base = &c->bpf_base;
	cfg->bpf_audit = &c->bpf_audit;

	if (pd_slot_get(c->slots, &s->slot, e) < 0)
		goto fail;
	s->has_slot = true;
	if (c->cg.ops->create(&c->cg, s->id, &s->lim, &s->cg, e) < 0)
		goto fail;
	__atomic_add_fetch(&c->cg_open, 1, __ATOMIC_RELAXED);
	if (pd_limits_have_io(&s->lim) && set_io_limits(c, o, layers, nlayers, s, e) < 0)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		pd_fail(e, errno, "socketpair");
		goto fail;
	}
	cfg->sock = sv[1];
	if (o->net != PD_NET_HOST) {
		s->netns = pd_netns_get(c->net, o->net == PD_NET_LOOPBACK || o->net == PD_NET_ALLOWLIST, e);
		if (!s->netns)
			goto fail;
	}
	cfg->has_sysfs = s->netns != NULL;
	/* v1: init moves itself into its cgroups (join_fds); v2: clone3 places it */
	if ((njoin = c->cg.ops->join_fds(s->cg, joinfd, 5, e)) < 0) {
		njoin = 0;
		goto fail;
	}
	cfg->njoin = njoin;
	if (clone_init(s, cfg, &cgfd, &sysfs_fd, e) < 0)
		goto fail;
	close(sv[1]);
	sv[1] = -1;
	s->sock = sv[0];
	sv[0] = -1;
	int sent = start_init(s, cgfd, joinfd, njoin, layers, nlayers, &sysfs_fd, e);
	njoin = 0; /* start_init closed them */
	if (sent < 0 || wait_ready(s, t0, e) < 0 ||
	    pd_sb_net_created(s, e) < 0)
		goto fail;
	pd_sb_mq_refresh(s, false);
	free(cfg);
	pd_scratch_created(s);
	s->ready_cost_us = pd_now_us() - t0;
	s->state = PD_READY;
	return s;
fail:
	if (sysfs_fd >= 0)
		close(sysfs_fd);
	while (njoin > 0)
		close(joinfd[--njoin]);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	free(cfg);
	s->state = PD_FAILED;
	pd_ct_destroy(s, NULL, 0);
	return NULL;
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

int pd_ct_destroy(pd_sandbox *s, char *residue, size_t residue_len)
{
	if (residue && residue_len)
		snprintf(residue, residue_len, "clean");
	int dirty = 0;
	pd_ctx *c = s->ctx;
	if (s->state != PD_FAILED)
		s->state = PD_RECLAIMING;
	/* first: its connections and listener hold the namespace, its threads the daemon */
	pd_sb_relay_off(s);
	if (s->netns && s->pid > 0 && !s->reaped)
		pd_netns_reattach(s->netns, s->pid);
	pd_sb_kill_init(s);
	if (s->upper_fd >= 0)
		close(s->upper_fd);
	s->upper_fd = -1;
	if (s->mq_fd >= 0)
		close(s->mq_fd);
	s->mq_fd = -1;
	pd_sb_drop_fds(s);
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
		} else {
			__atomic_sub_fetch(&c->cg_open, 1, __ATOMIC_RELAXED);
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
	pd_scratch_forget(s);
	pd_audit_names_free(s->names);
	free(s);
	return dirty ? -1 : 0;
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
