/* The encoded spellings of a string (internal/encforms.h). Not every encoding: a cipher of the
 * program's own is beyond a search, and a honey token stays evidence, not a wall. */
#define _GNU_SOURCE
#include "internal/encforms.h"

#include <stdlib.h>
#include <string.h>

bool pd_enc_forms(const char *s, size_t n, unsigned flags, bool (*each)(const char *form, size_t len, void *arg),
		  void *arg)
{
	static const char *const hexd[2] = {"0123456789abcdef", "0123456789ABCDEF"};
	static const char *const b64[2] = {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
					   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"};
	const unsigned char *u = (const unsigned char *)s;
	if (!n)
		return false;
	/* the longest form is the percent-encoded one; pad holds s after up to 2 other bytes, and a
	 * 3-byte group's tail past it */
	char *f = malloc(3 * n + 1);
	unsigned char *pad = calloc(1, n + 5);
	bool found = false;
	if (!f || !pad)
		goto out;
	for (size_t i = 0; i < n; i++)
		f[i] = s[n - 1 - i];
	if ((found = each(f, n, arg)))
		goto out;
	bool differs = false;
	for (size_t i = 0; i < n; i++) {
		f[i] = s[i] >= 'a' && s[i] <= 'z' ? (char)(s[i] - 32) : s[i];
		differs |= f[i] != s[i];
	}
	if (differs && (found = each(f, n, arg)))
		goto out;
	for (int c = 0; c < 2; c++) {
		for (size_t i = 0; i < n; i++) {
			f[2 * i] = hexd[c][u[i] >> 4];
			f[2 * i + 1] = hexd[c][u[i] & 15];
		}
		if ((found = each(f, 2 * n, arg)))
			goto out;
	}
	for (int c = 0; c < 2 && (flags & PD_ENC_PERCENT); c++) {
		for (size_t i = 0; i < n; i++) {
			f[3 * i] = '%';
			f[3 * i + 1] = hexd[c][u[i] >> 4];
			f[3 * i + 2] = hexd[c][u[i] & 15];
		}
		if ((found = each(f, 3 * n, arg)))
			goto out;
	}
	for (size_t k = 0; k < 3; k++) {
		/* k bytes of something else first: the characters j whose bits [6j, 6j+6) all lie in
		 * s's [8k, 8(k+n)) */
		memset(pad, 0, n + 5);
		memcpy(pad + k, s, n);
		size_t lo = (8 * k + 5) / 6, hi = 8 * (k + n) / 6;
		for (int a = 0; a < 2 && hi > lo + 8; a++) {
			for (size_t j = lo; j < hi; j++) {
				size_t bit = 6 * j, byte = bit / 8, sh = bit % 8;
				unsigned v = ((unsigned)pad[byte] << 8 | pad[byte + 1]) >> (10 - sh) & 63;
				f[j - lo] = b64[a][v];
			}
			if ((found = each(f, hi - lo, arg)))
				goto out;
		}
	}
out:
	free(f);
	free(pad);
	return found;
}
