/* Output capture in bounded memory: `yes` may write gigabytes, we keep at most `keep` bytes. */
#include "capture.h"

#include <stdlib.h>
#include <string.h>

int pd_capture_init(pd_capture *c, uint64_t keep)
{
	memset(c, 0, sizeof *c);
	if (keep > (1ull << 30))
		keep = 1ull << 30;
	c->head_cap = (size_t)(keep - keep / 4);
	c->ring_cap = (size_t)(keep / 4);
	/* the head grows as output arrives and the ring is allocated only once the head is full:
	 * most programs print a few bytes, and a ring of 256 KiB per stream per exec is an mmap
	 * and an munmap (with its TLB shootdown across the process's threads) every time */
	return 0;
}

static int grow_head(pd_capture *c, size_t need)
{
	size_t cap = c->head_len + need;
	size_t alloc = 4096;
	while (alloc < cap)
		alloc *= 2;
	if (alloc > c->head_cap)
		alloc = c->head_cap;
	char *p = realloc(c->head, alloc ? alloc : 1);
	if (!p)
		return -1;
	c->head = p;
	return 0;
}

size_t pd_capture_add(pd_capture *c, const char *buf, size_t len)
{
	c->total += len;
	size_t to_head = 0;
	if (c->head_len < c->head_cap) {
		to_head = c->head_cap - c->head_len;
		if (to_head > len)
			to_head = len;
		if (grow_head(c, to_head) < 0)
			to_head = 0; /* out of memory: count, keep nothing more */
		else {
			memcpy(c->head + c->head_len, buf, to_head);
			c->head_len += to_head;
		}
	}
	buf += to_head;
	len -= to_head;
	if (!c->ring_cap || !len)
		return to_head;
	if (!c->ring && !(c->ring = malloc(c->ring_cap))) {
		c->ring_cap = 0; /* out of memory: count the rest, keep nothing more */
		return to_head;
	}
	if (len >= c->ring_cap) {
		memcpy(c->ring, buf + len - c->ring_cap, c->ring_cap);
		c->ring_pos = 0;
		c->ring_len = c->ring_cap;
		return to_head;
	}
	size_t first = c->ring_cap - c->ring_pos;
	if (first > len)
		first = len;
	memcpy(c->ring + c->ring_pos, buf, first);
	memcpy(c->ring, buf + first, len - first);
	c->ring_pos = (c->ring_pos + len) % c->ring_cap;
	c->ring_len = c->ring_len + len > c->ring_cap ? c->ring_cap : c->ring_len + len;
	return to_head;
}

void pd_capture_finish(pd_capture *c, pd_output *out)
{
	memset(out, 0, sizeof *out);
	out->head = c->head;
	out->head_len = c->head_len;
	out->total = c->total;
	if (c->ring_len) {
		out->tail = malloc(c->ring_len);
		if (out->tail) {
			/* oldest byte first: once the ring has wrapped, it sits at ring_pos */
			if (c->ring_len < c->ring_cap) {
				memcpy(out->tail, c->ring, c->ring_len);
			} else {
				size_t first = c->ring_cap - c->ring_pos;
				memcpy(out->tail, c->ring + c->ring_pos, first);
				memcpy(out->tail + first, c->ring, c->ring_pos);
			}
			out->tail_len = c->ring_len;
		}
	}
	out->truncated = out->total > out->head_len + out->tail_len;
	free(c->ring);
	memset(c, 0, sizeof *c);
}

void pd_capture_free(pd_capture *c)
{
	free(c->head);
	free(c->ring);
	memset(c, 0, sizeof *c);
}
