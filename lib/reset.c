/* A sandbox's reset: back to what a fresh sandbox of the same options is, or it fails and the
 * caller destroys it. init kills every process and rewinds the pids; the cgroup, init's OOM
 * score and the network namespace are checked; the root is rebuilt by a helper (pd_reset_root),
 * or kept when its watches prove it untouched (upperwatch.c), and the scratch with it when the last
 * user only read it (scratch.c); the cgroup's memory is brought down and the limits put back.
 * docs/design/reset.md tells the whole of it. */
#define _GNU_SOURCE
#include "audit.h"
#include "initmsg.h"
#include "sandbox.h"
#include "tier.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/mount.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

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
		int n = pd_sb_recv_msg(s->sock, buf, sizeof buf,
				 now < deadline_us ? (int)((deadline_us - now) / 1000 + 1) : 0, NULL);
		if (n < 0)
			return pd_fail(e, errno, "sandbox %s: no answer from init in time", s->id);
		pd_init_msg m;
		int t = pd_init_msg_decode(buf, n, &m);
		if (t < 0)
			return pd_fail(e, EPROTO, "sandbox %s: a malformed message from init", s->id);
		if (t != MSG_RESET_DONE)
			continue; /* the report of a program that ended before: nobody waits for it */
		/* a reset's init enters a new IPC namespace: the programs need its mqueue root */
		if (((const struct msg_hdr *)msg)->type == MSG_RESET) {
			s->mq_stale = true;
			pd_sb_mq_refresh(s, false);
		}
		if (m.err)
			return pd_fail(e, m.err, "sandbox %s: %s", s->id, m.what);
		if (scratch)
			*scratch = m.scratch;
		return 0;
	}
}

int pd_ct_rewind_pids(pd_sandbox *s, pd_err *e)
{
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

/* ---- descriptors kept between uses ---------------------------------------------------------- */

/* What one sandbox keeps: its cgroup's stat files (7 on v1, fewer on v2) and its network views. */
#define KEPT_FDS (8 + PD_NETNS_PROBES)
/* below this soft limit nothing is kept: a daemon run under a low limit keeps its descriptors
 * for connections, as before */
#define KEEP_MIN_LIMIT 4096
static _Atomic long kept_total; /* descriptors the keeping sandboxes of the process may hold */

bool pd_sb_keep_fds(pd_sandbox *s)
{
	if (s->fds_kept)
		return s->fds_kept > 0;
	struct rlimit rl;
	long cap = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= KEEP_MIN_LIMIT)
		cap = rl.rlim_cur > (1u << 30) ? (1l << 28) : (long)(rl.rlim_cur / 4);
	if (atomic_fetch_add(&kept_total, KEPT_FDS) + KEPT_FDS <= cap) {
		s->fds_kept = 1;
		return true;
	}
	atomic_fetch_sub(&kept_total, KEPT_FDS);
	s->fds_kept = -1;
	return false;
}

void pd_sb_drop_fds(pd_sandbox *s)
{
	for (int i = 0; i < PD_NETNS_PROBES; i++) {
		if (s->net_fds[i] >= 0)
			close(s->net_fds[i]);
		s->net_fds[i] = -1;
	}
	if (s->fds_kept > 0)
		atomic_fetch_sub(&kept_total, KEPT_FDS);
	s->fds_kept = 0;
}

/* ---- the old mqueue mounts ------------------------------------------------------------------- */

/* The last reference to a detached mount (an fsmount descriptor) gone, the kernel unmounts it, and
 * every unmount waits for an expedited RCU grace period (namespace_unlock), which interrupts every
 * CPU: per reset, measured ~13 us of the caller's CPU and ~80 us of its time. So the mqueue mount a
 * reset replaces (pd_sb_mq_refresh) is moved onto a detached tmpfs, the park, which is dropped
 * whole, one grace period, every PARK_MAX mounts. Only an empty one: a parked mount keeps its
 * superblock and so whatever queues the last user left in it (their messages charged to the
 * sandbox's memory, their bytes to its user's RLIMIT_MSGQUEUE), which must go at once, as before.
 * Nobody is left in its IPC namespace to make one after the look (init has a new one, the
 * programs are dead). */
#define PARK_MAX 32
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static int park_fd = -1;
static unsigned parked;
static _Atomic uint64_t parked_total;

uint64_t pd_sb_mq_parked(void)
{
	return atomic_load(&parked_total);
}

/* Whether the mqueue root at fd (an fsmount descriptor) has no queue. */
static bool mq_empty(int fd)
{
	int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return false;
	char buf[512];
	bool empty = true;
	long n;
	while (empty && (n = syscall(SYS_getdents64, d, buf, sizeof buf)) > 0)
		for (long off = 0; off < n;) {
			const char *name = buf + off + 19; /* struct linux_dirent64's d_name */
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof reclen);
			if (strcmp(name, ".") && strcmp(name, ".."))
				empty = false;
			off += reclen;
		}
	if (n < 0)
		empty = false;
	close(d);
	return empty;
}

static int park_new(void)
{
	int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	int m = syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0
			? -1
			: (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	close(fs);
	return m;
}

bool pd_sb_mq_park(int fd)
{
	if (fd < 0 || !mq_empty(fd))
		return false;
	pthread_mutex_lock(&park_mu);
	if (park_fd < 0)
		park_fd = park_new();
	bool moved = park_fd >= 0 && syscall(SYS_move_mount, fd, "", park_fd, "",
					     MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == 0;
	if (moved)
		atomic_fetch_add(&parked_total, 1);
	if (moved && ++parked >= PARK_MAX) {
		close(park_fd); /* the park and every mount on it: one grace period */
		park_fd = -1;
		parked = 0;
	}
	pthread_mutex_unlock(&park_mu);
	return moved;
}

/* What a reset leaves charged to a sandbox's memory cgroup at most: an eighth of its limit,
 * between 8 and 64 MiB. Enough for the page cache a program of the default image first reads
 * (python's start: ~8 MiB; g++ on <iostream>: ~44 MiB), little against the limit. */
static uint64_t reset_keep(uint64_t limit)
{
	uint64_t k = limit ? limit / 8 : UINT64_MAX;
	return k < (8u << 20) ? (8u << 20) : k > (64u << 20) ? (64u << 20) : k;
}

/* What a reset cannot prove clean, refused before it starts (the sandbox is then destroyed). */
static int reset_refused(const pd_sandbox *s, pd_err *e)
{
	for (size_t i = 0; i < s->opts.nbinds; i++)
		if (s->opts.binds[i].rw)
			return pd_fail(e, EPERM,
				       "sandbox %s has a writable bind mount (%s): what was written there "
				       "would stay, so it is not reset",
				       s->id, s->opts.binds[i].dst);
	if (!s->netns)
		return pd_fail(e, EPERM,
			       "sandbox %s uses the host's network, which a reset cannot prove clean", s->id);
	return 0;
}

/* Steps 2 and 3: the cgroup agrees that init is all that is left, init's OOM score is as created
 * (its /proc files are briefly its uid's while a program starts, and a program of the last user
 * could have raised it), and the network namespace reads as a fresh one (no socket, no traffic). */
static int reset_checks(pd_sandbox *s, pd_err *e)
{
	pd_ctx *c = s->ctx;
	uint64_t tasks = c->cg.ops->tasks(s->cg);
	bool keep = pd_sb_keep_fds(s);
	if (!keep)
		c->cg.ops->rest(s->cg);
	if (tasks > 1)
		return pd_fail(e, EBUSY, "sandbox %s: %" PRIu64 " tasks left after the reset", s->id, tasks - 1);
	if (pd_sb_read_oom_adj(s->pid) != s->init_oom_adj)
		return pd_fail(e, EPERM, "sandbox %s: init's oom_score_adj was changed", s->id);
	if (!pd_netns_fresh(c->net, s->netns, s->pid, keep ? s->net_fds : NULL))
		return pd_fail(e, EADDRINUSE,
			       "sandbox %s: its network namespace differs from a fresh one (traffic or sockets "
			       "left), so it is not reused",
			       s->id);
	return 0;
}

/* Step 4: a fresh root, new scratch mounts and devpts; new overlays (their upper tmpfs too) unless
 * keep (the last user provably did not touch them: upperwatch.c), the new uppers' descriptor and
 * watches taken. */
static int rebuild_root(pd_sandbox *s, bool keep, pd_err *e)
{
	pd_ctx *c = s->ctx;
	int fds[PD_MAX_LAYERS + PD_MAX_BINDS], nfds = 0, rc = -1;
	child_cfg *cfg = calloc(1, sizeof *cfg);
	if (!cfg)
		return pd_fail(e, ENOMEM, "reset");
	if (keep) {
		pd_scratch_keep_root_cfg(s, cfg);
	} else {
		pd_uwatch_forget(c->uwatch, &s->upper_dirty);
		pd_layer layers[PD_MAX_LAYERS];
		int nlayers = 0;
		if (pd_sb_resolve_layout(c, &s->opts, s->lim.disk_bytes, cfg, layers, &nlayers, e) < 0 ||
		    pd_sb_layout_fds(&s->opts, layers, nlayers, s->pid, fds, &nfds, e) < 0)
			goto out;
		cfg->has_sysfs = true; /* a sandbox with its own network namespace has /sys (create) */
		cfg->uwatch_fd = pd_uwatch_fd(c->uwatch);
	}
	pd_reset_report rep;
	if (pd_reset_root(cfg, s->pidfd, fds, &rep) < 0) {
		if (rep.upper_fd >= 0)
			close(rep.upper_fd);
		rep.what[sizeof rep.what - 1] = 0;
		pd_fail(e, rep.err, "sandbox %s: reset: %s", s->id, rep.what);
		goto out;
	}
	if (keep) {
		s->resets_kept++;
	} else {
		memcpy(s->scr, rep.scr, sizeof s->scr);
		s->nlayers = cfg->nlayers;
		/* the old uppers go with the old root now, not when the next audit looks; the new
		 * descriptor in the old one's number: a reset leaves the caller's table as it was */
		if (s->upper_fd >= 0 && rep.upper_fd >= 0) {
			if (dup3(rep.upper_fd, s->upper_fd, O_CLOEXEC) < 0) {
				close(s->upper_fd);
				s->upper_fd = -1;
			}
			close(rep.upper_fd);
		} else {
			if (s->upper_fd >= 0)
				close(s->upper_fd);
			s->upper_fd = rep.upper_fd;
		}
		if (rep.nwd > 0)
			pd_uwatch_add(c->uwatch, &s->upper_dirty, rep.wd, rep.nwd);
	}
	pd_scratch_new(s, &rep);
	rc = 0;
out:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	free(cfg);
	return rc;
}

/* Steps 5 and 6: what the last user left charged to the cgroup (its old root's memory is gone with
 * that root now: this is page cache of image files it was first to read, and kernel objects)
 * brought down to a small share of the limit, coldest first, so the page cache the next programs
 * of every sandbox want stays (peaks are counted from what an exec starts with: cgroup.c); the
 * limits as created (a request may have changed the memory limit). */
static int reclaim_memory(pd_sandbox *s, pd_err *e)
{
	uint64_t kept = reset_keep(s->opts.limits.memory_bytes);
	uint64_t left = s->ctx->cg.ops->reclaim(s->cg, kept);
	if (left > kept + (16u << 20))
		return pd_fail(e, EBUSY, "sandbox %s: %llu KiB still charged to its memory cgroup after reclaim", s->id,
			       (unsigned long long)(left >> 10));
	if (s->lim.memory_bytes != s->opts.limits.memory_bytes &&
	    pd_sb_apply_memory(s, s->opts.limits.memory_bytes, e) < 0)
		return -1;
	return 0;
}

int pd_ct_reset(pd_sandbox *s, pd_err *e)
{
	pd_ctx *c = s->ctx;
	if (reset_refused(s, e) < 0)
		return -1;
	uint64_t t0 = pd_now_us();
	uint64_t td = s->opts.teardown_timeout_ms ? s->opts.teardown_timeout_ms : 10000;
	s->state = PD_RECLAIMING;
	/* 0. the egress relay goes (its connections, listener and threads): the next user gets a
	 * new one of the sandbox's own allowlist, never this user's (a session may have switched
	 * it), nor its connections or events */
	if (pd_sb_net_restore(s, e) < 0)
		goto fail;
	/* 1. init kills and reaps every process, takes a new IPC namespace, rewinds the pids, and
	 * looks whether the scratch directories are as the host left them (when they may be kept:
	 * watched, with one file of the host's at most) */
	struct msg_reset rm;
	bool scratch_ok = pd_scratch_request(s, &rm);
	uint32_t scratch_as_left = 0;
	if (init_request(s, &rm, sizeof rm, t0 + td * 1000, &scratch_as_left, e) < 0 || reset_checks(s, e) < 0)
		goto fail;
	scratch_ok = scratch_ok && scratch_as_left;
	/* 4. A sandbox with binds always gets new overlays: a bind's missing parent directories are
	 * in the root's upper, where writes below them are not watched, and one under /tmp or /work
	 * goes with the scratch. */
	bool keep = !s->opts.nbinds && pd_uwatch_clean(c->uwatch, &s->upper_dirty);
	/* 4a. and the scratch directories and devpts too when the last user only read them: no
	 * mount to make, none to take off (each unmount waits for a grace period of RCU that
	 * interrupts every CPU); the host's file stays for the next user's to overwrite */
	if (keep && scratch_ok && pd_scratch_keep(s))
		s->resets_kept++;
	else if (rebuild_root(s, keep, e) < 0)
		goto fail;
	if (reclaim_memory(s, e) < 0 || pd_sb_net_reopen(s, e) < 0)
		goto fail;
	s->resets++;
	pd_scratch_reset_done(s);
	/* every process ended and the image's names back: what the audit kept is true again, unless
	 * it was turned off (a name removed, renamed or linked since), which ends here */
	pd_audit_names_reset(s->names);
	/* the next use's readiness is this reset; its owner notes its own preparation again */
	s->ready_cost_us = pd_now_us() - t0;
	s->ready_by_reset = true;
	s->prepare_us = 0;
	s->state = PD_READY;
	return 0;
fail:
	s->state = PD_FAILED; /* destroy it */
	return -1;
}
