/* Output capture: keeps the head and tail of a stream in bounded memory and counts the rest. */
#ifndef PADDOCK_CAPTURE_H
#define PADDOCK_CAPTURE_H

#include "paddock.h"

typedef struct pd_capture {
	char *head;
	size_t head_len, head_cap;
	char *ring; /* the last ring_cap bytes past the head */
	size_t ring_cap, ring_pos, ring_len;
	uint64_t total;
} pd_capture;

/* keep bytes in all: three quarters from the head, the rest from the tail */
int pd_capture_init(pd_capture *c, uint64_t keep);
/* Adds a chunk; returns how many of its bytes went to the head (those are passed through live). */
size_t pd_capture_add(pd_capture *c, const char *buf, size_t len);
/* Moves the kept bytes into out and frees the capture. */
void pd_capture_finish(pd_capture *c, pd_output *out);
void pd_capture_free(pd_capture *c);

#endif
