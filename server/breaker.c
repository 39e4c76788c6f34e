/* The circuit breaker's state machine; breaker.h says what trips and closes it and why. */
#include "breaker.h"

#include <string.h>

void pd_breaker_init(pd_breaker *b, double fail_ratio, unsigned min_samples, uint64_t cooldown_us)
{
	memset(b, 0, sizeof *b);
	b->fail_ratio = fail_ratio;
	b->min_samples = min_samples ? min_samples : 1;
	if (b->min_samples > BREAKER_WINDOW)
		b->min_samples = BREAKER_WINDOW;
	b->cooldown_us = cooldown_us;
	b->state = BREAKER_CLOSED;
}

static void trip(pd_breaker *b, uint64_t now)
{
	if (b->state == BREAKER_CLOSED)
		b->trips++;
	b->state = BREAKER_OPEN;
	b->open_until = now + b->cooldown_us;
	b->probe_out = false;
}

bool pd_breaker_admit(pd_breaker *b, uint64_t now, bool idle, bool *probe)
{
	*probe = false;
	switch (b->state) {
	case BREAKER_CLOSED:
		return true;
	case BREAKER_OPEN:
		if (now < b->open_until && !idle)
			return false;
		b->state = BREAKER_HALF_OPEN;
		b->probe_out = true;
		*probe = true;
		return true;
	case BREAKER_HALF_OPEN:
		if (b->probe_out && !idle)
			return false;
		b->probe_out = true;
		*probe = true;
		return true;
	}
	return true;
}

void pd_breaker_outcome(pd_breaker *b, uint64_t now, bool infra_failure, bool probe)
{
	if (probe && b->state == BREAKER_HALF_OPEN) {
		if (infra_failure) {
			trip(b, now);
		} else {
			/* recovered: the failures before belong to the outage, not to what comes next */
			b->state = BREAKER_CLOSED;
			b->probe_out = false;
			b->n = 0;
		}
		return;
	}
	if (b->state != BREAKER_CLOSED)
		return; /* jobs admitted before it opened say nothing about the probe */
	b->failed[b->n % BREAKER_WINDOW] = infra_failure;
	b->n++;
	unsigned k = b->n < BREAKER_WINDOW ? b->n : BREAKER_WINDOW, bad = 0;
	for (unsigned i = 0; i < k; i++)
		bad += b->failed[i];
	if (k >= b->min_samples && (double)bad / k > b->fail_ratio)
		trip(b, now);
}

void pd_breaker_probe_dropped(pd_breaker *b)
{
	if (b->state == BREAKER_HALF_OPEN)
		b->probe_out = false;
}

bool pd_breaker_refusing(const pd_breaker *b, uint64_t now)
{
	return (b->state == BREAKER_OPEN && now < b->open_until) || (b->state == BREAKER_HALF_OPEN && b->probe_out);
}

unsigned pd_breaker_retry_after(const pd_breaker *b, uint64_t now)
{
	if (b->state == BREAKER_OPEN && b->open_until > now)
		return (unsigned)((b->open_until - now) / 1000000 + 1);
	return 1;
}
