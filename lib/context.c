/* The context: one per embedding process. It owns what every sandbox shares (the cgroup backend,
 * the compiled seccomp filters, the uid slots, the network namespace pool, the scratch watches),
 * registers this process as an owner of sandbox cgroups (so a later paddock can sweep a dead
 * one's), and keeps the sandboxes whose init outlived the teardown deadline (the stuck list). */
#define _GNU_SOURCE
#include "sandbox.h"
#include "tier.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- context --------------------------------------------------------------------------------- */

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
		    !pd_owner_dead(de->d_name, c) || pd_cgroups_owned(&c->cg, de->d_name) != 0)
			continue;
		/* a dead owner about to be forgotten: what runsc left of its gvisor sandboxes is swept
		 * first, while the owner is still known for dead (a context that never uses the tier
		 * otherwise sweeps it only here, when someone died) */
		pd_ctx_gvisor_sweep_once(c);
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
	/* records name the host image by this digest; none (null) rather than a start refused */
	pd_image_default_id(c->default_image, c->default_image_id);
	if (pd_cgroups_init(&c->cg, o->cgroup_version, o->cgroup_root, o->cgroup_fake, e) < 0)
		goto fail;
	if (pd_owner_lock(c, e) < 0)
		goto fail;
	/* a dead owner's cgroups in paddock's hierarchies, gvisor sandboxes' too: their tasks are
	 * killed here; what else runsc left is swept before this context's first gvisor sandbox */
	pd_cgroups_sweep(&c->cg, pd_owner_dead, c);
	prune_owners(c);
	int abi = pd_landlock_abi();
	const char *ll = getenv("PADDOCK_LANDLOCK");
	c->landlock_abi = abi > 0 && !(ll && !strcmp(ll, "off")) ? abi : 0;
	if (abi <= 0)
		snprintf(c->landlock_why, sizeof c->landlock_why, "the kernel has none (%s)",
			 abi == -EOPNOTSUPP ? "disabled at boot" : strerror(-abi));
	else if (!c->landlock_abi)
		snprintf(c->landlock_why, sizeof c->landlock_why, "PADDOCK_LANDLOCK=off");
	if (pd_mkdir_p(c->run_dir, 0700) < 0) {
		pd_fail(e, errno, "create %s", c->run_dir);
		goto fail;
	}
	if (pd_seccomp_policy(PD_SECCOMP_BASE, c->run_dir, &c->bpf_base, e) < 0 ||
	    pd_seccomp_policy(PD_SECCOMP_AUDIT, c->run_dir, &c->bpf_audit, e) < 0)
		goto fail;
	if (pd_slots_init(&c->slots, c->run_dir, e) < 0)
		goto fail;
	/* one sandbox per process (paddock exec): its network namespace comes from, and goes back
	 * to, the slots kept between processes (netns.c) */
	char pins[PD_PATH];
	snprintf(pins, sizeof pins, "%s", o->netns_dir ? o->netns_dir : "");
	if (!pins[0])
		snprintf(pins, sizeof pins, "%s/netns", c->run_dir);
	if (pd_netpool_init(&c->net, !o->one_sandbox, o->one_sandbox ? pins : NULL, e) < 0)
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
		if ((!c->cg_open && !c->cg_other) || pd_cgroups_owned(&c->cg, self) == 0)
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

int pd_ctx_landlock(const pd_ctx *c, const char **why)
{
	if (why)
		*why = c->landlock_why;
	return c->landlock_abi;
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
			if (st->cg && c->cg.ops->destroy(st->cg, NULL) == 0)
				__atomic_sub_fetch(&c->cg_open, 1, __ATOMIC_RELAXED);
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

const char *pd_ctx_default_image_id(const pd_ctx *c)
{
	return c->default_image_id;
}
