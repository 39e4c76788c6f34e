/* sha256.c: paddock's one SHA-256 (lib/sha256.c, over libcrypto), used by trajectories, the judge
 * and images, against FIPS 180-4's test vectors, whole and fed in pieces across block boundaries;
 * its hex form; the judge's framed fields (server/judge/fields.c) over it. */
#define _GNU_SOURCE
#include "paddock.h"
#include "judge/judge.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void vec(const char *in, size_t len, const char *want, const char *what)
{
	char hex[65];
	is_int(pd_sha256_of(in, len, hex), 0, "%s: computed", what);
	is_str(hex, want, "%s: whole", what);
	pd_sha256 d;
	pd_sha256_init(&d);
	for (size_t i = 0; i < len; i += 7)
		pd_sha256_add(&d, in + i, len - i < 7 ? len - i : 7);
	pd_sha256_end_hex(&d, hex);
	is_str(hex, want, "%s: in pieces of 7 bytes", what);
}

int main(void)
{
	plan(17);
	vec("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty");
	vec("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	vec(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "448 bits");
	char *m = malloc(1000000);
	memset(m, 'a', 1000000);
	vec(m, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "a million a");
	free(m);

	/* the raw form and its hex */
	pd_sha256 c;
	unsigned char d[32];
	char hex[65];
	pd_sha256_init(&c);
	pd_sha256_add(&c, "abc", 3);
	is_int(pd_sha256_end(&c, d), 0, "end: 0");
	pd_sha256_hex(d, hex);
	is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "the digest's hex form");
	/* an ended context is spent: ending it again fails rather than give a digest of nothing */
	ok(pd_sha256_end(&c, d) < 0, "a context ended twice: -1 (never a made-up digest)");

	/* the judge's fields: a length first, so "ab"+"c" and "a"+"bc" differ */
	char h1[65], h2[65];
	pd_sha256_init(&c);
	pd_sha256_str(&c, "ab");
	pd_sha256_str(&c, "c");
	pd_sha256_end_hex(&c, h1);
	pd_sha256_init(&c);
	pd_sha256_str(&c, "a");
	pd_sha256_str(&c, "bc");
	pd_sha256_end_hex(&c, h2);
	ok(strcmp(h1, h2) != 0, "framed fields: \"ab\"+\"c\" and \"a\"+\"bc\" hash apart");
	/* a field is its length as 8 big-endian bytes, then the bytes */
	pd_sha256_init(&c);
	pd_sha256_str(&c, "abc");
	pd_sha256_end_hex(&c, h1);
	pd_sha256_of("\0\0\0\0\0\0\0\3abc", 11, h2);
	is_str(h1, h2, "a field is its 8-byte length and its bytes");
	return done();
}
