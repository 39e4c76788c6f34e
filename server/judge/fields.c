/* The judge's digests are SHA-256 (lib/sha256.c): the problem digest and the verdict cache's key
 * need a hash whose collisions nobody can make on purpose (a cached verdict handed to a different
 * submission would be a reward for code that never ran). What goes into them is framed here:
 * numbers as 8 bytes, texts with their length first, so that "ab"+"c" and "a"+"bc" differ. */
#include "judge/judge.h"

#include <string.h>

void pd_sha256_u64(pd_sha256 *c, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (56 - 8 * i));
	pd_sha256_add(c, b, 8);
}

void pd_sha256_field(pd_sha256 *c, const void *data, size_t len)
{
	pd_sha256_u64(c, len);
	pd_sha256_add(c, data, len);
}

void pd_sha256_str(pd_sha256 *c, const char *s)
{
	pd_sha256_field(c, s ? s : "", s ? strlen(s) : 0);
}
