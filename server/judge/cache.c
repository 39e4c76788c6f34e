/* The execution-fingerprint cache: identical judged work (the same problem version and content,
 * submission, language, limits, checker and template identity) answers with the stored verdict
 * instead of running again. GRPO groups often hold identical completions; judging each again only
 * burns CPU, and a deterministic judge would give the same verdict.
 *
 * Only verdicts that a rerun would reproduce are stored: never a time-out (TO depends on the
 * machine's load), a sandbox fault (XX), a judge error or any infrastructure failure. A problem or
 * template change changes the key (the problem's digest, the template's layers and limits), so old
 * entries are never hit again and age out. The store is in memory, bounded, oldest first out. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
	unsigned char key[32];
	pd_judged d; /* tests malloc'd */
	uint64_t seq;
	bool used;
} entry;

struct pd_jcache {
	pthread_mutex_t mu;
	entry *e;
	size_t cap;
	uint64_t seq;
	uint64_t hits, misses, saved_ms, entries;
};

pd_jcache *pd_jcache_new(size_t max_entries)
{
	pd_jcache *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->cap = max_entries ? max_entries : 4096;
	c->e = calloc(c->cap, sizeof *c->e);
	if (!c->e) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

void pd_jcache_free(pd_jcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		pd_judged_free(&c->e[i].d);
	free(c->e);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static void tpl_identity(pd_sha256 *h, const pd_template *t)
{
	if (!t) {
		pd_sha256_str(h, "");
		return;
	}
	pd_sha256_str(h, t->name);
	for (int i = 0; i < PD_TPL_MAX_LAYERS && t->layers[i]; i++)
		pd_sha256_str(h, t->layers[i]);
	for (int i = 0; i < PD_TPL_MAX_ENV && t->env[i]; i++)
		pd_sha256_str(h, t->env[i]);
	pd_sha256_str(h, t->cwd);
	for (size_t i = 0; i < t->nfiles; i++) {
		pd_sha256_str(h, t->files[i].path);
		pd_sha256_field(h, t->files[i].data, t->files[i].len);
	}
	const pd_limits *l = &t->limits;
	uint64_t v[] = {l->memory_bytes, l->pids, l->cpu_ms, l->wall_ms, l->cpu_millicores, l->disk_bytes,
			l->output_bytes, l->output_kill_bytes, l->nofile, l->fsize_bytes, l->stack_bytes, t->net,
			l->io_read_bps, l->io_write_bps, l->io_read_iops, l->io_write_iops};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		pd_sha256_u64(h, v[i]);
}

bool pd_jcache_key(const pd_problem *p, const char *language, const char *code, size_t code_len,
		   const pd_template *tpl, const pd_template *judge_tpl, bool stop_at_first, const pd_audit_policy *audit,
		   unsigned char key[32])
{
	pd_sha256 h;
	pd_sha256_init(&h);
	pd_sha256_str(&h, "paddock-judge-cache-1");
	pd_sha256_str(&h, p->id);
	pd_sha256_str(&h, p->version);
	pd_sha256_add(&h, p->digest, 32); /* limits, checker, tests: the content, not just the name */
	pd_sha256_str(&h, language);
	pd_sha256_field(&h, code, code_len);
	tpl_identity(&h, tpl);
	tpl_identity(&h, judge_tpl);
	pd_sha256_u64(&h, stop_at_first);
	/* an audited verdict is not an unaudited one, and two policies judge the same run apart:
	 * the normalized policy is part of the key */
	char *pj = audit ? pd_audit_policy_json(audit) : NULL;
	pd_sha256_str(&h, audit ? (pj ? pj : "?") : "");
	free(pj);
	return pd_sha256_end(&h, key) == 0;
}

bool pd_jcache_cacheable(const pd_judged *d)
{
	if (pd_failure_is_infra(d->v.failure) || d->judge_errors || d->v.output == PD_LV_NOT_JUDGED)
		return false;
	for (size_t i = 0; i < d->ntests; i++)
		if (d->tests[i].status == PD_T_TO || d->tests[i].status == PD_T_XX || d->tests[i].status == PD_T_JE)
			return false;
	return true;
}

static entry *find(pd_jcache *c, const unsigned char key[32])
{
	for (size_t i = 0; i < c->cap; i++)
		if (c->e[i].used && !memcmp(c->e[i].key, key, 32))
			return &c->e[i];
	return NULL;
}

int pd_judged_copy(pd_judged *dst, const pd_judged *src)
{
	*dst = *src;
	dst->tests = NULL;
	dst->audit = NULL;
	if (src->ntests) {
		dst->tests = malloc(src->ntests * sizeof *dst->tests);
		if (!dst->tests)
			return -1;
		memcpy(dst->tests, src->tests, src->ntests * sizeof *dst->tests);
		bool ok = true;
		for (size_t i = 0; i < src->ntests; i++) {
			pd_jtest_result *t = &dst->tests[i];
			t->stderr_tail = t->stderr_tail && ok ? strdup(t->stderr_tail) : NULL;
			t->harness = t->harness && ok ? strdup(t->harness) : NULL;
			ok = ok && (!src->tests[i].stderr_tail || t->stderr_tail) && (!src->tests[i].harness || t->harness);
		}
		if (!ok) {
			pd_judged_free(dst);
			return -1;
		}
	}
	if (src->audit_len) {
		dst->audit = malloc(src->audit_len * sizeof *dst->audit);
		if (!dst->audit) {
			pd_judged_free(dst);
			return -1;
		}
		memcpy(dst->audit, src->audit, src->audit_len * sizeof *dst->audit);
	}
	return 0;
}

static int copy(pd_judged *dst, const pd_judged *src)
{
	return pd_judged_copy(dst, src);
}

bool pd_jcache_get(pd_jcache *c, const unsigned char key[32], pd_judged *out)
{
	pthread_mutex_lock(&c->mu);
	entry *x = find(c, key);
	bool hit = x && copy(out, &x->d) == 0;
	if (hit) {
		c->hits++;
		c->saved_ms += x->d.cpu_ms;
		x->seq = ++c->seq;
	} else {
		c->misses++;
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void pd_jcache_put(pd_jcache *c, const unsigned char key[32], const pd_judged *d)
{
	if (!pd_jcache_cacheable(d))
		return;
	pthread_mutex_lock(&c->mu);
	entry *x = find(c, key);
	if (!x) { /* a free slot, else the least recently used */
		x = &c->e[0];
		for (size_t i = 0; i < c->cap; i++) {
			if (!c->e[i].used) {
				x = &c->e[i];
				break;
			}
			if (c->e[i].seq < x->seq)
				x = &c->e[i];
		}
	}
	if (!x->used)
		c->entries++;
	pd_judged_free(&x->d);
	memset(x, 0, sizeof *x);
	if (copy(&x->d, d) == 0) {
		memcpy(x->key, key, 32);
		x->used = true;
		x->seq = ++c->seq;
	} else {
		c->entries--;
	}
	pthread_mutex_unlock(&c->mu);
}

void pd_jcache_stats(pd_jcache *c, uint64_t *hits, uint64_t *misses, uint64_t *entries, uint64_t *cpu_ms_saved)
{
	pthread_mutex_lock(&c->mu);
	*hits = c->hits;
	*misses = c->misses;
	*entries = c->entries;
	*cpu_ms_saved = c->saved_ms;
	pthread_mutex_unlock(&c->mu);
}
