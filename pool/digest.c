/* SHA-256 (FIPS 180-4) for the trajectories: digests of files a step changed, of stdin and of
 * the environment, so a replay can compare them. Written from the standard. */
#define _GNU_SOURCE
#include "trajectory.h"

#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void block(pd_digest *d, const unsigned char *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
		       (uint32_t)p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = d->h[0], b = d->h[1], c = d->h[2], e4 = d->h[3], e = d->h[4], f = d->h[5], g = d->h[6],
		 h = d->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g;
		g = f;
		f = e;
		e = e4 + t1;
		e4 = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	d->h[0] += a;
	d->h[1] += b;
	d->h[2] += c;
	d->h[3] += e4;
	d->h[4] += e;
	d->h[5] += f;
	d->h[6] += g;
	d->h[7] += h;
}

void pd_digest_init(pd_digest *d)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(d->h, h0, sizeof h0);
	d->n = 0;
	d->len = 0;
}

void pd_digest_add(pd_digest *d, const void *data, size_t len)
{
	const unsigned char *p = data;
	d->len += len;
	while (len) {
		size_t take = 64 - d->n < len ? 64 - d->n : len;
		memcpy(d->buf + d->n, p, take);
		d->n += take;
		p += take;
		len -= take;
		if (d->n == 64) {
			block(d, d->buf);
			d->n = 0;
		}
	}
}

void pd_digest_hex(pd_digest *d, char out[PD_DIGEST_HEX])
{
	uint64_t bits = d->len * 8;
	unsigned char pad = 0x80, zero = 0;
	pd_digest_add(d, &pad, 1);
	while (d->n != 56)
		pd_digest_add(d, &zero, 1);
	unsigned char lb[8];
	for (int i = 0; i < 8; i++)
		lb[i] = (unsigned char)(bits >> (56 - 8 * i));
	pd_digest_add(d, lb, 8);
	static const char hx[] = "0123456789abcdef";
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 4; j++) {
			unsigned char byte = (unsigned char)(d->h[i] >> (24 - 8 * j));
			out[8 * i + 2 * j] = hx[byte >> 4];
			out[8 * i + 2 * j + 1] = hx[byte & 15];
		}
	out[64] = 0;
}

void pd_digest_of(const void *data, size_t len, char out[PD_DIGEST_HEX])
{
	pd_digest d;
	pd_digest_init(&d);
	pd_digest_add(&d, data, len);
	pd_digest_hex(&d, out);
}
