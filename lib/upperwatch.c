/* upperwatch.c: which reset sandboxes may keep their overlays (the root, the default image's /usr)
 * and their scratch directories.
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
 * ends in the upper one.
 *
 * The scratch directories (/tmp, /work, /dev/shm: binds of one tmpfs) and devpts are watched on
 * the same instance, to the same end, with one difference: a program reads the file the host
 * wrote for it (main.py) and lists its working directory (python puts it on its path), so reads
 * are not watched at all (PD_SCRATCH_EVENTS; the mounts are noatime, so a read changes nothing).
 * What a program could change with no event (inode flags: FS_IOC_SETFLAGS sends none) is looked
 * at by init at the reset (child.c scratch_as_left), with the end state itself. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

struct pd_uwatch {
	pthread_mutex_t mu;
	int fd;
	struct ent {
		int wd;
		bool *dirty;   /* its sandbox's flag (and so its identity), written under mu */
		pd_swatch *sw; /* a scratch directory's or devpts's watch (dirty: &sw->dirty) */
		int dir;       /* which scratch directory (PD_NSCRATCH: devpts) */
	} *ents;
	size_t n, cap;
	/* ents by wd: open addressing, each slot an index + 1 (0: empty); remade after removals.
	 * Every event is looked up here, and a daemon holds several watches per pooled sandbox. */
	size_t *slot;
	size_t nslot; /* a power of two, at least twice n */
};

static size_t hash_wd(const pd_uwatch *w, int wd)
{
	return ((uint32_t)wd * 2654435761u) & (w->nslot - 1);
}

static void index_put(pd_uwatch *w, size_t i)
{
	size_t h = hash_wd(w, w->ents[i].wd);
	while (w->slot[h])
		h = (h + 1) & (w->nslot - 1);
	w->slot[h] = i + 1;
}

/* Remakes the index for the n entries, larger if they need it. Returns -1 if there is no
 * memory (the old index, still right for entries it has, stays when it is large enough). */
static int reindex(pd_uwatch *w)
{
	size_t want = 64;
	while (want < 2 * w->n)
		want *= 2;
	if (want > w->nslot) {
		size_t *s = calloc(want, sizeof *s);
		if (!s)
			return -1;
		free(w->slot);
		w->slot = s;
		w->nslot = want;
	} else {
		memset(w->slot, 0, w->nslot * sizeof *w->slot);
	}
	for (size_t i = 0; i < w->n; i++)
		index_put(w, i);
	return 0;
}

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
	free(w->slot);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

int pd_uwatch_fd(pd_uwatch *w)
{
	return w ? w->fd : -1;
}

/* Whether ev, on e (a scratch directory's watch, PD_SCRATCH_EVENTS: no reads), leaves the
 * directory as it was: only the close of the host's one file there after a write open. The
 * host's own last close can come after the sandbox was armed (init hands the host the file and
 * closes its own descriptor when it runs next); a program's open for writing changes nothing by
 * itself, and what it could write without IN_MODIFY (a shared mapping, AIO) only changes what
 * the next user's host overwrites (O_TRUNC) or what a new scratch replaces; init compares the
 * file's size and blocks with what the host wrote. */
static bool scratch_read(const struct ent *e, const struct inotify_event *ev)
{
	if (e->dir >= PD_NSCRATCH || ev->mask != IN_CLOSE_WRITE || !ev->len)
		return false;
	const pd_swatch *sw = e->sw;
	return sw->nfiles == 1 && sw->file_dir == e->dir && !strncmp(ev->name, sw->file_name, ev->len) &&
	       strlen(sw->file_name) < ev->len;
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
				for (size_t h = w->nslot ? hash_wd(w, ev->wd) : 0; w->nslot && w->slot[h];
				     h = (h + 1) & (w->nslot - 1)) {
					struct ent *e = &w->ents[w->slot[h] - 1];
					if (e->wd != ev->wd)
						continue;
					/* a scratch watch's events count once its sandbox is armed;
					 * a watch the kernel dropped sees nothing more, armed or not */
					if (!e->sw || (ev->mask & (IN_IGNORED | IN_UNMOUNT)) ||
					    (e->sw->armed && !scratch_read(e, ev)))
						*e->dirty = true;
				}
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
		watched = w->ents[i].dirty == dirty && !w->ents[i].sw;
	bool clean = watched && !*dirty;
	pthread_mutex_unlock(&w->mu);
	return clean;
}

/* Files entries for wds (-1: skipped) under sw (NULL: an upper's, for dirty); with mu held, after
 * a drain. Returns -1 (the watches removed) if there is no memory. */
static int add_locked(pd_uwatch *w, bool *dirty, pd_swatch *sw, const int *wds, int n)
{
	if (w->n + (size_t)n > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		while (cap < w->n + (size_t)n)
			cap *= 2;
		struct ent *e = realloc(w->ents, cap * sizeof *e);
		if (!e) {
			for (int i = 0; i < n; i++)
				if (wds[i] >= 0)
					inotify_rm_watch(w->fd, wds[i]);
			return -1;
		}
		w->ents = e;
		w->cap = cap;
	}
	size_t n0 = w->n;
	for (int i = 0; i < n; i++)
		if (wds[i] >= 0)
			w->ents[w->n++] = (struct ent){wds[i], dirty, sw, i};
	if (2 * w->n <= w->nslot) {
		for (size_t i = n0; i < w->n; i++)
			index_put(w, i);
	} else if (reindex(w) < 0) {
		/* no room to find them by: not watched, as if the kernel had refused them */
		for (size_t i = n0; i < w->n; i++)
			inotify_rm_watch(w->fd, w->ents[i].wd);
		w->n = n0;
		return -1;
	}
	return 0;
}

int pd_uwatch_add(pd_uwatch *w, bool *dirty, const int *wds, int n)
{
	if (!w || n <= 0)
		return -1;
	pthread_mutex_lock(&w->mu);
	/* events queued before now are the previous upper's: read them while its wds are still
	 * known as someone else's (or no one's), never as this new watch's */
	drain_locked(w);
	int rc = add_locked(w, dirty, NULL, wds, n);
	if (rc == 0)
		*dirty = false;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* Removes the watches of sw's scratch, or (sw NULL) the upper watches filed under dirty. With mu
 * held. */
static void forget_locked(pd_uwatch *w, bool *dirty, pd_swatch *sw)
{
	for (size_t i = 0; i < w->n;) {
		const struct ent *e = &w->ents[i];
		if (sw ? e->sw != sw : e->dirty != dirty || e->sw) {
			i++;
			continue;
		}
		/* gone already if the kernel dropped it with its tmpfs: EINVAL, harmless */
		inotify_rm_watch(w->fd, e->wd);
		w->ents[i] = w->ents[--w->n];
	}
	reindex(w); /* at most as large as before: cannot fail */
}

void pd_uwatch_forget(pd_uwatch *w, bool *dirty)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	forget_locked(w, dirty, NULL);
	pthread_mutex_unlock(&w->mu);
}

int pd_uwatch_add_scratch(pd_uwatch *w, pd_swatch *sw, const int *wds, int n)
{
	if (!w || n != PD_NSCRATCH + 1)
		return -1;
	pthread_mutex_lock(&w->mu);
	drain_locked(w);
	int rc = add_locked(w, &sw->dirty, sw, wds, n);
	sw->watched = rc == 0;
	sw->armed = sw->dirty = false;
	sw->nfiles = 0;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void pd_uwatch_arm(pd_uwatch *w, pd_swatch *sw)
{
	if (!w || !sw->watched)
		return;
	pthread_mutex_lock(&w->mu);
	/* the host's writes queued their events before this call returns: read them unarmed */
	drain_locked(w);
	sw->armed = true;
	pthread_mutex_unlock(&w->mu);
}

bool pd_uwatch_scratch_clean(pd_uwatch *w, pd_swatch *sw)
{
	if (!w)
		return false;
	pthread_mutex_lock(&w->mu);
	drain_locked(w);
	bool clean = sw->watched && !sw->dirty;
	pthread_mutex_unlock(&w->mu);
	return clean;
}

void pd_uwatch_scratch_next(pd_uwatch *w, pd_swatch *sw)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	sw->armed = sw->dirty = false;
	sw->nfiles = 0;
	pthread_mutex_unlock(&w->mu);
}

void pd_uwatch_forget_scratch(pd_uwatch *w, pd_swatch *sw)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	forget_locked(w, NULL, sw);
	sw->watched = sw->armed = false;
	sw->dirty = true;
	pthread_mutex_unlock(&w->mu);
}
