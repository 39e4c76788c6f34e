/* digest.c: the trajectories' SHA-256 (pool/digest.c, written from FIPS 180-4) against the
 * standard's test vectors, whole and fed in pieces across block boundaries. */
#define _GNU_SOURCE
#include "trajectory.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void vec(const char *in, size_t len, const char *want, const char *what)
{
	char hex[PD_DIGEST_HEX];
	pd_digest_of(in, len, hex);
	is_str(hex, want, "%s: whole", what);
	pd_digest d;
	pd_digest_init(&d);
	for (size_t i = 0; i < len; i += 7)
		pd_digest_add(&d, in + i, len - i < 7 ? len - i : 7);
	pd_digest_hex(&d, hex);
	is_str(hex, want, "%s: in pieces of 7 bytes", what);
}

int main(void)
{
	plan(8);
	vec("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty");
	vec("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	vec(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "448 bits");
	char *m = malloc(1000000);
	memset(m, 'a', 1000000);
	vec(m, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "a million a");
	free(m);
	return done();
}
