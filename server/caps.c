/* Per-problem submission caps (issue 22, docs/audit.md "Submission caps"): at most max judged
 * submissions of one problem in a fixed window of window_s seconds that starts with the window's
 * first submission. A submission past the cap is refused (429 with Retry-After: the seconds until
 * its problem's window ends) and counted. A policy that is flooding one problem (probing the
 * checker, mining the tests by submission) is slowed down without touching the other problems.
 *
 * The windows are kept for CAP_SLOTS problems at once; an ended window's slot is reused. With
 * more problems than that inside one window, the one whose window started first is forgotten
 * (its count starts again): the cap is on the problems being flooded now, and a flood of
 * thousands of distinct problems is the scheduler's admission control's to refuse. */
#define _GNU_SOURCE
#include "server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP_SLOTS 4096

typedef struct cap_slot {
	char problem[128];
	uint64_t start_us;
	unsigned n;
} cap_slot;

struct pd_caps {
	pthread_mutex_t mu;
	unsigned max;
	uint64_t window_us;
	cap_slot *slots;
	uint64_t refused;
};

pd_caps *pd_caps_new(unsigned max, unsigned window_s)
{
	pd_caps *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->slots = calloc(CAP_SLOTS, sizeof *c->slots);
	if (!c->slots) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->max = max;
	c->window_us = (uint64_t)(window_s ? window_s : 60) * 1000000u;
	return c;
}

void pd_caps_free(pd_caps *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->mu);
	free(c->slots);
	free(c);
}

/* The problem's slot with its window current (a new one if it had none). Lock held. */
static cap_slot *slot_of(pd_caps *c, const char *problem, uint64_t now)
{
	cap_slot *free_slot = NULL, *oldest = &c->slots[0];
	for (size_t i = 0; i < CAP_SLOTS; i++) {
		cap_slot *s = &c->slots[i];
		bool ended = !s->problem[0] || now >= s->start_us + c->window_us;
		if (s->problem[0] && !strcmp(s->problem, problem)) {
			if (ended) {
				s->start_us = now;
				s->n = 0;
			}
			return s;
		}
		if (ended && !free_slot)
			free_slot = s;
		if (s->start_us < oldest->start_us)
			oldest = s;
	}
	cap_slot *s = free_slot ? free_slot : oldest;
	snprintf(s->problem, sizeof s->problem, "%s", problem);
	s->start_us = now;
	s->n = 0;
	return s;
}

bool pd_caps_take(pd_caps *c, const char *problem, unsigned n, unsigned *retry_after_s)
{
	*retry_after_s = 0;
	if (!c || !c->max || !problem[0])
		return true;
	uint64_t now = pd_now_us();
	pthread_mutex_lock(&c->mu);
	cap_slot *s = slot_of(c, problem, now);
	bool ok = s->n + n <= c->max && s->n + n >= s->n;
	if (ok) {
		s->n += n;
	} else {
		c->refused += n;
		uint64_t left = s->start_us + c->window_us > now ? s->start_us + c->window_us - now : 0;
		*retry_after_s = (unsigned)((left + 999999) / 1000000);
		if (!*retry_after_s)
			*retry_after_s = 1;
	}
	pthread_mutex_unlock(&c->mu);
	return ok;
}

void pd_caps_give_back(pd_caps *c, const char *problem, unsigned n)
{
	if (!c || !c->max || !problem[0])
		return;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < CAP_SLOTS; i++)
		if (!strcmp(c->slots[i].problem, problem)) {
			c->slots[i].n -= n < c->slots[i].n ? n : c->slots[i].n;
			break;
		}
	pthread_mutex_unlock(&c->mu);
}

unsigned pd_caps_max(const pd_caps *c)
{
	return c ? c->max : 0;
}

unsigned pd_caps_window_s(const pd_caps *c)
{
	return c ? (unsigned)(c->window_us / 1000000u) : 0;
}

uint64_t pd_caps_refused(pd_caps *c)
{
	if (!c)
		return 0;
	pthread_mutex_lock(&c->mu);
	uint64_t n = c->refused;
	pthread_mutex_unlock(&c->mu);
	return n;
}
