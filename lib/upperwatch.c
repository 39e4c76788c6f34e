/* upperwatch.c: which reset sandboxes may keep their non-root overlays (the default image's /usr).
 *
 * A reset builds a new root overlay, since every run writes somewhere (its program, /tmp). An image
 * layer mounted elsewhere (/usr) is another matter: most runs never write there, and rebuilding
 * its overlay costs a mount and the old one's teardown, and the next program pays every lookup
 * in it cold (python: ~300). Such an overlay is kept when its writable half, a tmpfs of its own
 * (so its inode numbers and free space are a fresh one's when kept), provably saw nothing: one
 * inotify instance per context watches each kept-able upper directory and its overlay's work
 * directory for every event, opens and reads included. Any event, or a lost one (queue
 * overflow), or no watch yet (a sandbox's first reset) means rebuild. Through the overlay, the
 * upper directory is /usr itself: listing /usr, or even opening it (which any ioctl on it needs)
 * is an event; so is anything written below it, whose copy-up starts in the work directory and
 * ends in the upper one. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

struct pd_uwatch {
	pthread_mutex_t mu;
	int fd;
	struct ent {
		int wd;
		bool *dirty; /* its sandbox's flag (and so its identity), written under mu */
	} *ents;
	size_t n, cap;
};

pd_uwatch *pd_uwatch_new(void)
{
	pd_uwatch *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	pthread_mutex_init(&w->mu, NULL);
	/* made now, so that a context's descriptors are all there from its start (none: every
	 * reset rebuilds, as when the limit on inotify instances is reached) */
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	return w;
}

void pd_uwatch_free(pd_uwatch *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	free(w->ents);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

int pd_uwatch_fd(pd_uwatch *w)
{
	return w ? w->fd : -1;
}

/* Reads every queued event and marks the sandboxes they concern. Called with mu held. */
static void drain_locked(pd_uwatch *w)
{
	if (w->fd < 0)
		return;
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		for (char *p = buf; p + sizeof(struct inotify_event) <= buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW) {
				for (size_t i = 0; i < w->n; i++)
					*w->ents[i].dirty = true;
			} else {
				for (size_t i = 0; i < w->n; i++)
					if (w->ents[i].wd == ev->wd)
						*w->ents[i].dirty = true;
			}
			p += sizeof *ev + ev->len;
		}
	}
}

bool pd_uwatch_clean(pd_uwatch *w, bool *dirty)
{
	if (!w)
		return false;
	pthread_mutex_lock(&w->mu);
	drain_locked(w);
	bool watched = false;
	for (size_t i = 0; i < w->n && !watched; i++)
		watched = w->ents[i].dirty == dirty;
	bool clean = watched && !*dirty;
	pthread_mutex_unlock(&w->mu);
	return clean;
}

int pd_uwatch_add(pd_uwatch *w, bool *dirty, const int *wds, int n)
{
	if (!w || n <= 0)
		return -1;
	pthread_mutex_lock(&w->mu);
	/* events queued before now are the previous upper's: read them while its wds are still
	 * known as someone else's (or no one's), never as this new watch's */
	drain_locked(w);
	if (w->n + (size_t)n > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		while (cap < w->n + (size_t)n)
			cap *= 2;
		struct ent *e = realloc(w->ents, cap * sizeof *e);
		if (!e) {
			pthread_mutex_unlock(&w->mu);
			for (int i = 0; i < n; i++)
				inotify_rm_watch(w->fd, wds[i]);
			return -1;
		}
		w->ents = e;
		w->cap = cap;
	}
	for (int i = 0; i < n; i++)
		w->ents[w->n++] = (struct ent){wds[i], dirty};
	*dirty = false;
	pthread_mutex_unlock(&w->mu);
	return 0;
}

void pd_uwatch_forget(pd_uwatch *w, bool *dirty)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < w->n;) {
		if (w->ents[i].dirty != dirty) {
			i++;
			continue;
		}
		/* gone already if the kernel dropped it with its tmpfs: EINVAL, harmless */
		inotify_rm_watch(w->fd, w->ents[i].wd);
		w->ents[i] = w->ents[--w->n];
	}
	pthread_mutex_unlock(&w->mu);
}
