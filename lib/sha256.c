/* SHA-256, the one paddock uses everywhere: trajectories' digests (pool/), the judge's problem
 * digest and verdict cache key (server/judge/), image blobs and layers (lib/image/). It is
 * libcrypto's (a dependency already for the images): its implementation uses the CPU's SHA
 * instructions where there are any, which matters for gigabytes of layers.
 *
 * libcrypto's digest context is allocated, so starting one can fail (ENOMEM). The failure is kept
 * in the context and reported once, by pd_sha256_end: a caller checks there and never uses a
 * digest that was not computed (a zeroed cache key would match every other failed one). */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include "dl_crypto.h"
#include <stdio.h>
#include <string.h>

int pd_sha256_init(pd_sha256 *c)
{
	c->md = NULL;
	if (pd_dl_load(&pd_dlc_lib, NULL) < 0) {
		errno = ELIBACC; /* end fails, as for ENOMEM */
		return -1;
	}
	c->md = EVP_MD_CTX_new();
	if (c->md && !EVP_DigestInit_ex(c->md, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(c->md);
		c->md = NULL;
	}
	if (!c->md) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void pd_sha256_add(pd_sha256 *c, const void *data, size_t len)
{
	if (c->md && len && !EVP_DigestUpdate(c->md, data, len)) {
		EVP_MD_CTX_free(c->md); /* failed: end says so */
		c->md = NULL;
	}
}

int pd_sha256_end(pd_sha256 *c, unsigned char out[32])
{
	unsigned int n = 0;
	int rc = c->md && EVP_DigestFinal_ex(c->md, out, &n) && n == 32 ? 0 : -1;
	if (c->md) /* none: libcrypto may not even be loaded */
		EVP_MD_CTX_free(c->md);
	c->md = NULL;
	if (rc < 0) {
		memset(out, 0, 32);
		errno = ENOMEM;
	}
	return rc;
}

void pd_sha256_free(pd_sha256 *c)
{
	if (c->md)
		EVP_MD_CTX_free(c->md);
	c->md = NULL;
}

void pd_sha256_hex(const unsigned char d[32], char out[65])
{
	static const char x[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		out[2 * i] = x[d[i] >> 4];
		out[2 * i + 1] = x[d[i] & 15];
	}
	out[64] = 0;
}

int pd_sha256_end_hex(pd_sha256 *c, char out[65])
{
	unsigned char d[32];
	if (pd_sha256_end(c, d) < 0) {
		out[0] = 0;
		return -1;
	}
	pd_sha256_hex(d, out);
	return 0;
}

int pd_sha256_of(const void *data, size_t len, char out[65])
{
	pd_sha256 c;
	pd_sha256_init(&c);
	pd_sha256_add(&c, data, len);
	return pd_sha256_end_hex(&c, out);
}
