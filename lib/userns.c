/* uid slots: each live sandbox maps its uids 0..65535 onto a host range no other live sandbox on
 * this host uses, so two sandboxes can never signal, ptrace or share files with each other through
 * a common host uid. A slot is taken by flock() on a per-slot file: the lock is shared by every
 * paddock process on the host and vanishes with the process that held it, so a crash frees its
 * slots. Slots this process has locked are kept in a free list and reused without a syscall. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

struct pd_slots {
	pthread_mutex_t lock;
	char dir[PD_PATH];
	int *fds;          /* lock fd per slot we hold, -1 otherwise */
	uint32_t *free;    /* slots held and idle */
	uint32_t nfree;
	uint32_t next;     /* where to start probing for a new slot */
};

int pd_slots_init(pd_slots **out, const char *state_dir, pd_err *e)
{
	pd_slots *s = calloc(1, sizeof *s);
	if (!s)
		return pd_fail(e, ENOMEM, "uid slots");
	s->fds = malloc(sizeof(int) * PD_UID_SLOTS);
	s->free = malloc(sizeof(uint32_t) * PD_UID_SLOTS);
	if (!s->fds || !s->free) {
		pd_slots_free(s);
		return pd_fail(e, ENOMEM, "uid slots");
	}
	for (uint32_t i = 0; i < PD_UID_SLOTS; i++)
		s->fds[i] = -1;
	pthread_mutex_init(&s->lock, NULL);
	snprintf(s->dir, sizeof s->dir, "%s/uid-slots", state_dir);
	if (pd_mkdir_p(s->dir, 0700) < 0) {
		int saved = errno;
		pd_slots_free(s);
		return pd_fail(e, saved, "mkdir %s/uid-slots", state_dir);
	}
	/* start probing at a pid-dependent place so concurrent processes rarely collide */
	s->next = ((uint32_t)getpid() * 64u) % PD_UID_SLOTS;
	*out = s;
	return 0;
}

void pd_slots_free(pd_slots *s)
{
	if (!s)
		return;
	if (s->fds)
		for (uint32_t i = 0; i < PD_UID_SLOTS; i++)
			if (s->fds[i] >= 0)
				close(s->fds[i]);
	free(s->fds);
	free(s->free);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int pd_slot_get(pd_slots *s, uint32_t *slot, pd_err *e)
{
	pthread_mutex_lock(&s->lock);
	if (s->nfree) {
		*slot = s->free[--s->nfree];
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	for (uint32_t k = 0; k < PD_UID_SLOTS; k++) {
		uint32_t i = (s->next + k) % PD_UID_SLOTS;
		if (s->fds[i] >= 0)
			continue; /* ours and in use */
		char p[PD_PATH];
		snprintf(p, sizeof p, "%s/%u", s->dir, i);
		int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			pthread_mutex_unlock(&s->lock);
			return pd_fail(e, errno, "open %s", p);
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			continue; /* another process holds it */
		}
		s->fds[i] = fd;
		s->next = (i + 1) % PD_UID_SLOTS;
		*slot = i;
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	pthread_mutex_unlock(&s->lock);
	return pd_fail(e, EAGAIN, "all %u uid slots are in use", PD_UID_SLOTS);
}

void pd_slot_put(pd_slots *s, uint32_t slot)
{
	pthread_mutex_lock(&s->lock);
	/* a slot put twice would be handed to two live sandboxes: refuse the second */
	bool listed = false;
	for (uint32_t i = 0; i < s->nfree && !listed; i++)
		listed = s->free[i] == slot;
	if (slot < PD_UID_SLOTS && s->fds[slot] >= 0 && !listed && s->nfree < PD_UID_SLOTS)
		s->free[s->nfree++] = slot;
	pthread_mutex_unlock(&s->lock);
}
