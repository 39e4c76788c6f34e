/* breaker.c: the scheduler's circuit breaker (server/breaker.c) as a state machine. What once
 * refused an idle daemon — a flood of abandoned and timed-out work, then quiet, then "circuit
 * breaker open" for the next request — cannot happen: load and the model's time-outs are not
 * infrastructure failures, and an idle daemon always admits (as a probe when open). Failures of
 * sandbox creation trip it; the cooldown leads to one half-open probe; the probe's success closes
 * it, its failure reopens it. */
#include "breaker.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

#define S 1000000u

int main(void)
{
	plan(17);
	pd_breaker b;
	bool probe;
	uint64_t t = 100 * S;

	/* a flood: 200 jobs that time out or whose clients left, none an infrastructure failure */
	pd_breaker_init(&b, 0.5, 8, 5 * S);
	for (int i = 0; i < 200; i++)
		pd_breaker_outcome(&b, t + (uint64_t)i * 1000, false, false);
	ok(!pd_breaker_refusing(&b, t + 3 * S), "after a flood of time-outs and abandoned work, not refusing");
	ok(pd_breaker_admit(&b, t + 3 * S, true, &probe) && !probe, "3 s later, idle: the next request is admitted");
	is_int(b.trips, 0, "the flood never tripped it");

	/* sandbox creation failing: trips once the window holds enough of them */
	pd_breaker_init(&b, 0.5, 8, 5 * S);
	for (int i = 0; i < 7; i++)
		pd_breaker_outcome(&b, t, true, false);
	ok(!pd_breaker_refusing(&b, t), "7 failures: fewer than the 8 outcomes the ratio needs");
	pd_breaker_outcome(&b, t, true, false);
	ok(pd_breaker_refusing(&b, t), "8 start failures of 8: open");
	is_int(b.trips, 1, "one trip");
	ok(!pd_breaker_admit(&b, t + S, false, &probe), "open, busy, within the cooldown: refused");
	is_int(pd_breaker_retry_after(&b, t + S), 5, "Retry-After: the cooldown left, rounded up");
	ok(pd_breaker_admit(&b, t + S, true, &probe) && probe, "open but idle: admitted, as the probe");
	ok(!pd_breaker_admit(&b, t + S, false, &probe), "while the probe runs, others are refused");
	pd_breaker_outcome(&b, t + 2 * S, true, true);
	ok(pd_breaker_refusing(&b, t + 2 * S), "the probe failed: open again");
	is_int(b.trips, 1, "a reopening is not a new trip");
	ok(pd_breaker_admit(&b, t + 8 * S, false, &probe) && probe, "after the cooldown, busy: one probe admitted");
	pd_breaker_outcome(&b, t + 9 * S, false, true);
	ok(!pd_breaker_refusing(&b, t + 9 * S) && b.state == BREAKER_CLOSED, "the probe succeeded: closed");
	/* the outage's failures are forgotten: one more failure does not reopen it */
	pd_breaker_outcome(&b, t + 9 * S, true, false);
	ok(!pd_breaker_refusing(&b, t + 9 * S), "closed with the outage forgotten: one failure does not reopen");

	/* a probe that never ran (its client left) lets the next one probe */
	pd_breaker_init(&b, 0.5, 8, 5 * S);
	for (int i = 0; i < 8; i++)
		pd_breaker_outcome(&b, t, true, false);
	pd_breaker_admit(&b, t + 6 * S, false, &probe);
	pd_breaker_probe_dropped(&b);
	ok(pd_breaker_admit(&b, t + 6 * S, false, &probe) && probe, "a dropped probe: the next request probes");

	/* a mix under the ratio stays closed */
	pd_breaker_init(&b, 0.5, 8, 5 * S);
	for (int i = 0; i < 64; i++)
		pd_breaker_outcome(&b, t, i % 3 == 0, false);
	ok(!pd_breaker_refusing(&b, t), "a third of the jobs failing to start: under the ratio, closed");
	return done();
}
