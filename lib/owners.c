/* The owner registry: one file per paddock process under <run_dir>/owners, flocked while it
 * lives, so that a later paddock (or this one's sweeps) can tell a dead owner's leftover cgroups,
 * gvisor state and uid slots from a live one's. Below the context (context.c) and the tiers'
 * sweeps (lib/gvisor/run.c), which ask it who is dead. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* An owner is dead when nobody holds the flock on its file in <state>/owners. */
bool pd_owner_dead(const char *owner, void *arg)
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

int pd_owner_lock(pd_ctx *c, pd_err *e)
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

bool pd_ctx_run_alive(const pd_ctx *c, uint32_t run_id)
{
	if (run_id == c->run_id)
		return true;
	char p[PD_PATH];
	snprintf(p, sizeof p, "%s/owners/%08" PRIx32, c->run_dir, run_id);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool alive = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return alive;
}
