/* Internals shared by the pool layer's files (pool.c, reclaim.c, session*.c, ...): on pool/internal, so only they see it. */
#ifndef PADDOCK_POOLS_H
#define PADDOCK_POOLS_H

#include "pool.h"

#include <pthread.h>

#define POOL_PATH 512 /* a session's directory and its spill files */

typedef struct pd_pool pd_pool;

/* What a pool is, set where it is made: a template's own (plain, pd_pools_new), or derived from
 * another pool on first use, an image's (imgpool.c) or a tier's (tierpool.c). A derived pool is
 * sized from zero and retired when idle to make room for another; its name brings it back. */
typedef enum { PD_POOL_PLAIN, PD_POOL_IMAGE, PD_POOL_TIER } pd_pool_kind;

#define PD_IMAGE_HEX 24 /* digits of the digest in an image pool's name: 96 bits, and room for the template's */

typedef struct pd_entry {
	pd_sandbox *sb;
	pd_pool *pool;
	uint64_t since;
	bool no_reuse; /* expired surplus: destroy, never reset */
	struct pd_entry *next;
} pd_entry;

struct pd_pool {
	pd_template t;
	pd_sandbox_opts sopts;
	pd_entry *ready; /* READY sandboxes, newest first */
	uint32_t nready, in_use, creating, nreclaiming, target;
	uint64_t win_start, win_peak, prev_win_peak;
	uint64_t retry_at;
	char last_error[256];
	pd_pool_stats st;
	/* a slot of the array: the templates' pools are live for the pools' life; a derived pool
	 * (an image's or a tier's) is live from its first use until retired idle to make room */
	bool live;
	pd_pool_kind kind;
	uint32_t nsessions; /* open sessions on it (session.c): a derived pool with one is never retired */
	bool evicting; /* an image pool giving its slot up: no READY sandbox built or kept */
	uint64_t last_acquire_us;
	uint64_t win_acquires, prev_win_acquires; /* demand per window: which image pools are hottest */
};

struct pd_pools {
	pd_ctx *ctx;
	pd_pool *pools;
	size_t n;     /* slots in use: the templates' pools, then image pools (some retired) */
	size_t nbase; /* the templates' pools, pools[0..nbase) */
	size_t cap;   /* slots allocated: nbase + opts.image_pools (the array never moves) */
	pd_pools_opts opts;
	pthread_mutex_t mu;
	pthread_cond_t cv_builder, cv_reclaimer, cv_ready;
	pthread_t builder;
	/* reclaimer threads: resets and teardowns are mostly waits (RCU grace periods in the
	 * unmounts, init's reply: several times their CPU time in wall time), so one thread keeps up
	 * with a few CPUs' worth of releases, not with a large machine's */
	pthread_t reclaimers[16];
	unsigned nreclaimers, reclaimer_ids;
	unsigned long ncpu; /* online CPUs when the pools started (get_nprocs reads sysfs) */
	bool threads_ok, stop;
	pd_entry *reclaim, *reclaim_tail; /* sandboxes waiting to be destroyed, oldest first */
	uint32_t nreclaim;
	struct pd_session *sessions; /* open sessions, for their deadlines */
	uint64_t session_seq;
};

/* ---- pool.c: the toolbox every other file uses; calls none of them ---- */
/* Deep copy of a template (the image's lease not copied: pd_template_check takes its own). */
int pd_template_clone(pd_template *dst, const pd_template *src);
void pd_template_release(pd_template *t);
/* template_check.c: the users a template names by keyword ("root", "sandbox"); -1 for another */
int pd_user_keyword(const char *s, uint32_t *uid, uint32_t *gid);
/* egress.c: a template's "egress" field; its deep copy (0 or -1) */
int pd_template_parse_egress(struct json_t *v, const char *where, pd_template *t, pd_err *e);
int pd_egress_clone(pd_template *dst, const pd_template *src);
/* A live pool of that name, or NULL: a lookup, never a make. Called with the lock held. */
pd_pool *pd_pool_find_locked(pd_pools *p, const char *name);
pd_pool *pd_pool_of(pd_pools *p, pd_sandbox *s);
void pd_sandbox_set_owner(pd_sandbox *s, pd_pool *pl);
/* Files t (taken) as a live pool of that kind (a derived one) in a free slot, retiring the least
 * recently used idle derived pool if need be; waits a few seconds for a slot being drained.
 * Called with the lock held (dropped while waiting). */
int pd_pool_install_locked(pd_pools *p, pd_template *t, pd_pool_kind kind, pd_err *e);
/* Creates a sandbox for the template and places what the template puts in it before use. */
pd_sandbox *pd_pool_make(pd_pools *p, pd_pool *pl, pd_err *e);
/* A fork's sandbox (snapshot.c): the template's, with top_layer over its image; owned by no pool */
pd_sandbox *pd_pool_make_fork(pd_pools *p, pd_pool *pl, const char *top_layer, pd_err *e);
/* Resets a sandbox of pl's template to its fresh state, as for reuse (no warm-up exec). */
int pd_pool_reset(pd_pool *pl, pd_sandbox *s, pd_err *e);
typedef enum { PD_WARM_NONE, PD_WARM_TRUE, PD_WARM_TEMPLATE } pd_warm;
/* The template's cwd and files put in s, then a warm-up exec: the template's own (a new sandbox),
 * /bin/true (a reset one), or none. Without the lock. */
int pd_pool_prepare(pd_pool *pl, pd_sandbox *s, pd_warm warm, pd_err *e);
/* The rest with the lock held. Sandboxes held by all pools (READY, in use, being made or
 * reclaimed): the memory budget's count */
uint64_t pd_pools_held_locked(const pd_pools *p);
/* How many READY sandboxes pl should keep now; how many it lacks against target */
uint32_t pd_pool_target_of(pd_pools *p, pd_pool *pl);
int64_t pd_pool_deficit(const pd_pool *pl, uint32_t target);
/* The demand windows moved on to now and the in-use peak noted */
void pd_pool_note_demand(pd_pools *p, pd_pool *pl, uint64_t now);
/* Files s (its entry en) as READY in pl and wakes a waiting acquire */
void pd_pool_file_ready_locked(pd_pools *p, pd_pool *pl, pd_entry *en, pd_sandbox *s);
void pd_pools_wake_builder_locked(pd_pools *p);
/* Queues s for a reclaimer to reset for reuse or destroy; discard: to destroy, never reset. */
void pd_pool_reclaim_locked(pd_pools *p, pd_pool *pl, pd_sandbox *s);
void pd_pool_discard_locked(pd_pools *p, pd_pool *pl, pd_sandbox *s);
/* A destroyed sandbox's lifetime (born: pd_sandbox_created_us) into pl's histogram */
void pd_pool_lifetime_locked(pd_pool *pl, uint64_t born);
/* The calling thread at background CPU and I/O priority (builder and reclaimers) */
void pd_pool_background_priority(void);

/* ---- reclaim.c: a released sandbox reset for reuse or destroyed ---- */
/* Resets for reuse, or destroys, the oldest sandbox waiting for reclaim; drops the lock meanwhile.
 * False if there was none. */
bool pd_pools_reclaim_one_locked(pd_pools *p);

/* ---- the kinds of derived pool: their recipes, from the parent's template t (a clone, taken;
 * renamed to name here). Without the lock. 0, or -1 with e (t released). ---- */
/* imgpool.c: t on the image of that digest, with the image's Env and WorkingDir */
int pd_image_recipe(pd_pools *p, pd_template *t, const char *name, const char *digest, pd_err *e);
/* tierpool.c: t under isolation tier */
int pd_tier_recipe(pd_pools *p, pd_template *t, const char *name, int tier, pd_err *e);
/* tierpool.c: 0 when bt (the pool named base; NULL: none) allows tier and the tier offers what
 * it needs, else -1 with e */
int pd_tier_allowed(const pd_template *bt, const char *base, int tier, pd_err *e);

/* ---- acquire.c: the pool a name stands for, found or made in one pass; acquire, release ---- */
/* The live pool of that name, or the derived pool it names made again (lock dropped meanwhile). */
pd_pool *pd_pool_named(pd_pools *p, const char *name);

/* ---- sessions (session.c, session_lost.c), called by the pools' lifecycle (lifecycle.c) ---- */
void pd_sessions_expire_locked(pd_pools *p, uint64_t now);
void pd_sessions_free_all(pd_pools *p);
/* session_lost.c: sessions a dead daemon left open are closed as lost (pd_pools_new) */
void pd_sessions_recover(pd_pools *p);

#endif
