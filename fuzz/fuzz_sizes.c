/* Fuzzes pd_parse_size and pd_parse_duration_ms (lib/util.c): the input, up to its first NUL, is a
 * size or duration as given on the command line, in a templates file ("memory": "512M") or in a
 * native request ("limits": {"memory": "256M"}).
 *
 * Beyond "no crash, no undefined behaviour" (UBSan catches double -> integer overflow):
 *  - sizes: only the documented grammar is accepted,
 *        DIGITS [ "." DIGITS ] | "." DIGITS,  then  nothing | b | (k|m|g|t) [i] [b]  (any case)
 *    (no sign, space, exponent, hex, inf or nan); a whole number gives exactly whole x unit; a
 *    fraction gives whole x unit <= value <= (whole + 1) x unit; nothing wraps around 2^64; and every
 *    text of the grammar whose value fits is accepted;
 *  - durations: only decimal numbers (an exponent is tolerated) with no unit, s, ms, m or min are
 *    accepted: no hex ("0x10" would be 16 s), no sign, inf or nan; whole numbers give exact
 *    milliseconds; nothing above 10^15 ms. */
#include "fuzz_common.h"

#include <ctype.h>
#include <math.h>

static size_t digits(const char *s)
{
	size_t i = 0;
	while (isdigit((unsigned char)s[i]))
		i++;
	return i;
}

/* Reference grammar of sizes; *whole (if it fits), *frac_digits, *shift. Returns 1 if s matches. */
static int size_grammar(const char *s, unsigned __int128 *whole, size_t *nfrac, int *shift)
{
	size_t d = digits(s), i = d, f = 0;
	size_t z = 0;
	while (z < d && s[z] == '0')
		z++;
	*whole = 0;
	for (size_t k = z; k < d && k < z + 25; k++)
		*whole = *whole * 10 + (unsigned)(s[k] - '0');
	if (d - z > 25)
		*whole = (unsigned __int128)1 << 80; /* too big for 64 bits, small enough to shift by 40 */
	if (s[i] == '.') {
		f = digits(s + i + 1);
		if (!f)
			return 0;
		i += 1 + f;
	}
	if (!d && !f)
		return 0;
	*nfrac = f;
	*shift = 0;
	char u = (char)tolower((unsigned char)s[i]);
	const char *units = "kmgt";
	const char *p = u ? strchr(units, u) : NULL;
	if (p) {
		*shift = 10 * (int)(p - units + 1);
		i++;
		if (s[i] == 'i' || s[i] == 'I')
			i++;
		if (s[i] == 'b' || s[i] == 'B')
			i++;
	} else if (u == 'b') {
		i++;
	}
	return s[i] == 0;
}

static void check_size(const char *s)
{
	uint64_t v = 0xdeadbeef;
	int rc = pd_parse_size(s, &v);
	unsigned __int128 whole;
	size_t nfrac;
	int shift;
	int ok = size_grammar(s, &whole, &nfrac, &shift);
	FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
	if (rc == 0)
		FUZZ_CHECK(ok, "pd_parse_size accepted '%s', which is not a size of the grammar (gave %llu)", s,
			   (unsigned long long)v);
	if (!ok)
		return;
	unsigned __int128 lo = whole << shift, hi = lo + ((unsigned __int128)1 << shift);
	if (rc == 0) {
		if (!nfrac)
			FUZZ_CHECK(v == lo, "'%s' gave %llu, not %llu", s, (unsigned long long)v, (unsigned long long)lo);
		else
			/* <= hi: strtod may round .99999999999999999 up to 1 */
			FUZZ_CHECK(v >= lo && v <= hi, "'%s' gave %llu, outside [%llu, %llu]", s,
				   (unsigned long long)v, (unsigned long long)lo, (unsigned long long)hi);
	} else {
		/* refused: only if it does not fit (with a fraction, near the top it may go either way) */
		FUZZ_CHECK(nfrac ? hi > (unsigned __int128)UINT64_MAX - 4096 : lo > UINT64_MAX,
			   "pd_parse_size refused '%s', a size of the grammar that fits", s);
	}
}

/* Reference grammar of durations: decimal, optional exponent, unit. Returns the unit in ms, 0 if
 * s does not match. */
static double duration_grammar(const char *s, int *plain)
{
	size_t d = digits(s), i = d, f = 0;
	*plain = 0;
	if (s[i] == '.') {
		f = digits(s + i + 1);
		i += 1 + f;
	}
	if (!d && !f)
		return 0;
	int expo = 0;
	if (s[i] == 'e' || s[i] == 'E') {
		size_t j = i + 1;
		if (s[j] == '+' || s[j] == '-')
			j++;
		size_t x = digits(s + j);
		if (x) {
			i = j + x;
			expo = 1;
		}
	}
	*plain = !expo && s[d] != '.';
	const char *u = s + i;
	if (!*u || !strcmp(u, "s"))
		return 1000;
	if (!strcmp(u, "ms"))
		return 1;
	if (!strcmp(u, "m") || !strcmp(u, "min"))
		return 60000;
	return 0;
}

static void check_duration(const char *s)
{
	uint64_t v = 0xdeadbeef;
	int rc = pd_parse_duration_ms(s, &v);
	int plain;
	double unit = duration_grammar(s, &plain);
	FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
	if (rc != 0)
		return;
	FUZZ_CHECK(unit > 0, "pd_parse_duration_ms accepted '%s', which is not a decimal duration (gave %llu ms)",
		   s, (unsigned long long)v);
	FUZZ_CHECK(v <= 1000000000000000ull + 1, "'%s' gave %llu ms, above the 10^15 cap", s, (unsigned long long)v);
	if (plain && digits(s) <= 9) {
		uint64_t n = strtoull(s, NULL, 10);
		FUZZ_CHECK(v == n * (uint64_t)unit, "'%s' gave %llu ms, not %llu", s, (unsigned long long)v,
			   (unsigned long long)(n * (uint64_t)unit));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fz_cstr(data, size); /* up to the first NUL, as a C caller passes it */
	if (!s)
		return 0;
	check_size(s);
	check_duration(s);
	FUZZ_CHECK(pd_parse_size(NULL, &(uint64_t){0}) == -1 && pd_parse_duration_ms(NULL, &(uint64_t){0}) == -1,
		   "NULL");
	free(s);
	return 0;
}
