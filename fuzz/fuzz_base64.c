/* Fuzzes pd_b64_encode / pd_b64_decode (lib/util.c), which decode the "files_base64" of native
 * requests, SandboxFusion's "files", Piston's base64 files and templates' "content_base64", and
 * encode fetched files in the responses.
 *
 * Properties beyond "no crash, no leak, no undefined behaviour":
 *  - round trip: decode(encode(x)) == x for any bytes x, with the output NUL-terminated;
 *  - the encoding is canonical: 4 x ceil(n / 3) characters of the standard alphabet, '=' only as
 *    the final padding; its URL-safe spelling (- and _) decodes to the same bytes;
 *  - decoding any text (the input up to its first NUL): accepted exactly when every character is
 *    in the standard or URL-safe alphabet, '=', CR or LF; yields floor(6 x symbols / 8) bytes, the
 *    same as an independent reference decoder written here; re-encoding those bytes and decoding
 *    again gives them back. */
#include "fuzz_common.h"

static const char std_alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Reference: the bits of each symbol, most significant first, packed into bytes; the last
 * incomplete byte is dropped. '=', CR and LF are skipped anywhere. */
static int ref_decode(const char *in, char **out, size_t *len)
{
	size_t n = strlen(in), nbits = 0;
	char *o = calloc(n + 1, 1);
	for (size_t i = 0; i < n; i++) {
		const char *p = strchr(std_alpha, in[i]);
		int v = in[i] == '-' ? 62 : in[i] == '_' ? 63 : p && in[i] ? (int)(p - std_alpha) : -1;
		if (in[i] == '=' || in[i] == '\r' || in[i] == '\n')
			continue;
		if (v < 0) {
			free(o);
			return -1;
		}
		for (int b = 5; b >= 0; b--, nbits++)
			if (v >> b & 1)
				o[nbits / 8] |= (char)(0x80 >> (nbits % 8));
	}
	*len = nbits / 8;
	o[*len] = 0;
	*out = o;
	return 0;
}

static void round_trip(const uint8_t *data, size_t size)
{
	char *enc = pd_b64_encode((const char *)data, size);
	FUZZ_CHECK(enc != NULL, "encode");
	size_t el = strlen(enc), pad = (3 - size % 3) % 3;
	FUZZ_CHECK(el == (size + 2) / 3 * 4, "encoding of %zu bytes has %zu characters", size, el);
	for (size_t i = 0; i < el; i++)
		FUZZ_CHECK(i >= el - pad ? enc[i] == '=' : enc[i] && strchr(std_alpha, enc[i]) != NULL,
			   "bad character %02x at %zu of %zu", (unsigned char)enc[i], i, el);
	char *dec = NULL;
	size_t dl = 0;
	FUZZ_CHECK(pd_b64_decode(enc, &dec, &dl) == 0, "own encoding refused");
	FUZZ_CHECK(dl == size && !memcmp(dec, data, size), "decode(encode(x)) != x (%zu -> %zu bytes)", size, dl);
	FUZZ_CHECK(dec[dl] == 0, "not NUL-terminated");
	free(dec);
	/* the URL-safe spelling is the same data */
	for (size_t i = 0; i < el; i++)
		enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
	FUZZ_CHECK(pd_b64_decode(enc, &dec, &dl) == 0 && dl == size && !memcmp(dec, data, size), "URL-safe");
	free(dec);
	FUZZ_CHECK(ref_decode(enc, &dec, &dl) == 0 && dl == size && !memcmp(dec, data, size), "reference decoder");
	free(dec);
	free(enc);
}

static void decode_text(const uint8_t *data, size_t size)
{
	char *s = fz_cstr(data, size);
	if (!s)
		return;
	size_t n = strlen(s), sym = 0;
	int valid = 1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '=' || s[i] == '\r' || s[i] == '\n')
			continue;
		if (strchr(std_alpha, s[i]) || s[i] == '-' || s[i] == '_')
			sym++;
		else
			valid = 0;
	}
	char *d1 = NULL, *d2 = NULL;
	size_t l1 = 0, l2 = 0;
	int r1 = pd_b64_decode(s, &d1, &l1), r2 = ref_decode(s, &d2, &l2);
	FUZZ_CHECK(r1 == r2, "pd_b64_decode says %d, the reference %d", r1, r2);
	FUZZ_CHECK((r1 == 0) == valid, "decoder %s a text that %s base64", r1 ? "refused" : "accepted",
		   valid ? "is" : "is not");
	if (r1 == 0) {
		FUZZ_CHECK(l1 == sym * 6 / 8, "%zu symbols gave %zu bytes", sym, l1);
		FUZZ_CHECK(l1 == l2 && !memcmp(d1, d2, l1), "pd_b64_decode and the reference disagree");
		FUZZ_CHECK(d1[l1] == 0, "not NUL-terminated");
		char *enc = pd_b64_encode(d1, l1), *d3 = NULL;
		size_t l3 = 0;
		FUZZ_CHECK(enc && pd_b64_decode(enc, &d3, &l3) == 0 && l3 == l1 && !memcmp(d3, d1, l1), "re-encoding");
		free(enc);
		free(d3);
	}
	free(d1);
	free(d2);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	round_trip(data, size);
	decode_text(data, size);
	return 0;
}
