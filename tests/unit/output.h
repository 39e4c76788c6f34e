/* Test helpers for program output: a result's captured stream as one string, and where two
 * texts that should be equal first differ. */
#ifndef PADDOCK_TEST_OUTPUT_H
#define PADDOCK_TEST_OUTPUT_H

#include "paddock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* head and tail of a captured stream, NUL-terminated, malloc'd */
static inline char *dup_out(const pd_output *o)
{
	char *b = malloc(o->head_len + o->tail_len + 1);
	if (!b)
		abort();
	memcpy(b, o->head ? o->head : "", o->head_len);
	memcpy(b + o->head_len, o->tail ? o->tail : "", o->tail_len);
	b[o->head_len + o->tail_len] = 0;
	return b;
}

/* prints, as TAP comments, the first byte where b differs from the fresh text a, with context */
static inline void first_difference(const char *a, const char *b, const char *b_name)
{
	size_t i = 0;
	while (a[i] && a[i] == b[i])
		i++;
	size_t s = i > 300 ? i - 300 : 0;
	printf("#   first difference at byte %zu:\n#   fresh: ...%.500s\n#   %s: ...%.500s\n", i, a + s,
	       b_name, b + s);
}

#endif
