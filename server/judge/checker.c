/* Built-in checkers: pure functions over the candidate's output and the answer, both arbitrary
 * bytes. They run in the daemon because no one's code runs in them: the candidate's output is read
 * as data, compared, and never interpreted as anything but the tokens, lines or JSON of its mode.
 * Custom checker programs run in their own sandbox (program.c); this file only reads their exit.
 *
 * Whitespace is the six ASCII spaces (" \t\n\r\v\f"); a carriage return before a newline is
 * trailing whitespace, so CRLF output is a line's own. Case folding is ASCII: a checker must not
 * depend on a locale. Messages quote at most 40 bytes of each side, escaped, so that any output
 * (NULs, invalid UTF-8) gives a printable message. */
#define _GNU_SOURCE
#include "judge/judge.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const char *const mode_names[PD_CHK_COUNT] = {
	"lines", "exact", "tokens", "numeric", "yesno", "unordered_lines", "multiset_tokens",
	"json_value", "checker", "interactive",
};

const char *pd_check_mode_name(pd_check_mode m)
{
	return (unsigned)m < PD_CHK_COUNT ? mode_names[m] : "?";
}

int pd_check_mode_parse(const char *name)
{
	for (int i = 0; i < PD_CHK_COUNT; i++)
		if (!strcmp(name, mode_names[i]))
			return i;
	return -1;
}

pd_checker_cfg pd_checker_default(pd_check_mode m)
{
	pd_checker_cfg c;
	memset(&c, 0, sizeof c);
	c.mode = m;
	c.tolerance = PD_TOL_ABS_OR_REL;
	c.abs_tol = 1e-6;
	c.rel_tol = 1e-6;
	return c;
}

static const char *const tstatus_names[PD_T_COUNT] = {"AC", "WA", "PE", "PC", "TO", "ML",
						       "OL", "RE", "SG", "XX", "JE", "skipped"};

const char *pd_tstatus_name(pd_tstatus s)
{
	return (unsigned)s < PD_T_COUNT ? tstatus_names[s] : "?";
}

/* ---- helpers --------------------------------------------------------------------------------- */

static bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static unsigned char fold(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

static int cmp_bytes(const char *a, size_t al, const char *b, size_t bl, bool ci)
{
	size_t n = al < bl ? al : bl;
	for (size_t i = 0; i < n; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
		if (ci) {
			x = fold(x);
			y = fold(y);
		}
		if (x != y)
			return x < y ? -1 : 1;
	}
	return al == bl ? 0 : al < bl ? -1 : 1;
}

/* At most 40 bytes of s, printable: other bytes as \xNN, newline as \n. */
static void quote(char *out, size_t size, const char *s, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < len && i < 40 && k + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\n')
			k += (size_t)snprintf(out + k, size - k, "\\n");
		else if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\')
			k += (size_t)snprintf(out + k, size - k, "\\x%02x", c);
		else
			out[k++] = (char)c;
	}
	if (len > 40 && k + 4 < size)
		k += (size_t)snprintf(out + k, size - k, "...");
	out[k < size ? k : size - 1] = 0;
}

static void verdict(pd_check_result *r, pd_tstatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void verdict(pd_check_result *r, pd_tstatus st, const char *fmt, ...)
{
	r->status = st;
	r->score = st == PD_T_AC ? 1.0 : 0.0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof r->message, fmt, ap);
	va_end(ap);
}

static void differ(pd_check_result *r, const char *what, size_t n, const char *want, size_t wl, const char *got,
		   size_t gl)
{
	char a[200], b[200];
	quote(a, sizeof a, want, wl);
	quote(b, sizeof b, got, gl);
	verdict(r, PD_T_WA, "%s %zu: expected '%s', got '%s'", what, n, a, b);
}

/* A cursor over whitespace-separated tokens. */
typedef struct tok {
	const char *s;
	size_t len, pos;
} tok;

static bool tok_next(tok *t, const char **p, size_t *l)
{
	while (t->pos < t->len && is_ws((unsigned char)t->s[t->pos]))
		t->pos++;
	if (t->pos >= t->len)
		return false;
	size_t b = t->pos;
	while (t->pos < t->len && !is_ws((unsigned char)t->s[t->pos]))
		t->pos++;
	*p = t->s + b;
	*l = t->pos - b;
	return true;
}

/* Lines: without their trailing whitespace, without the empty lines at the end. */
typedef struct span {
	const char *p;
	size_t len;
} span;

static int split_lines(const char *s, size_t len, span **out, size_t *n)
{
	size_t cap = 16, k = 0;
	span *v = malloc(cap * sizeof *v);
	if (!v)
		return -1;
	for (size_t i = 0; i <= len;) {
		const char *nl = i < len ? memchr(s + i, '\n', len - i) : NULL;
		size_t end = nl ? (size_t)(nl - s) : len;
		size_t e = end;
		while (e > i && is_ws((unsigned char)s[e - 1]))
			e--;
		if (k == cap) {
			span *nv = realloc(v, (cap *= 2) * sizeof *v);
			if (!nv) {
				free(v);
				return -1;
			}
			v = nv;
		}
		v[k++] = (span){s + i, e - i};
		if (!nl)
			break;
		i = end + 1;
	}
	while (k && v[k - 1].len == 0)
		k--;
	*out = v;
	*n = k;
	return 0;
}

static int split_tokens(const char *s, size_t len, span **out, size_t *n)
{
	size_t cap = 16, k = 0;
	span *v = malloc(cap * sizeof *v);
	if (!v)
		return -1;
	tok t = {s, len, 0};
	const char *p;
	size_t l;
	while (tok_next(&t, &p, &l)) {
		if (k == cap) {
			span *nv = realloc(v, (cap *= 2) * sizeof *v);
			if (!nv) {
				free(v);
				return -1;
			}
			v = nv;
		}
		v[k++] = (span){p, l};
	}
	*out = v;
	*n = k;
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const span *x = a, *y = b;
	return cmp_bytes(x->p, x->len, y->p, y->len, false);
}

static int span_cmp_ci(const void *a, const void *b)
{
	const span *x = a, *y = b;
	return cmp_bytes(x->p, x->len, y->p, y->len, true);
}

/* ---- modes ----------------------------------------------------------------------------------- */

static void check_exact(const pd_checker_cfg *c, const char *o, size_t ol, const char *a, size_t al,
			pd_check_result *r)
{
	size_t n = ol < al ? ol : al, i = 0;
	for (; i < n; i++) {
		unsigned char x = (unsigned char)o[i], y = (unsigned char)a[i];
		if (c->case_insensitive ? fold(x) != fold(y) : x != y)
			break;
	}
	if (i == n && ol == al) {
		verdict(r, PD_T_AC, "ok: %zu bytes", ol);
		return;
	}
	char w[200], g[200];
	quote(w, sizeof w, a + i, al - i);
	quote(g, sizeof g, o + i, ol - i);
	verdict(r, PD_T_WA, "byte %zu: expected '%s', got '%s'", i, w, g);
}

static int check_lines(const pd_checker_cfg *c, const char *o, size_t ol, const char *a, size_t al,
		       pd_check_result *r)
{
	span *x, *y;
	size_t nx, ny;
	if (split_lines(o, ol, &x, &nx) < 0)
		return -1;
	if (split_lines(a, al, &y, &ny) < 0) {
		free(x);
		return -1;
	}
	size_t n = nx < ny ? nx : ny, i = 0;
	for (; i < n; i++)
		if (cmp_bytes(x[i].p, x[i].len, y[i].p, y[i].len, c->case_insensitive))
			break;
	if (i < n)
		differ(r, "line", i + 1, y[i].p, y[i].len, x[i].p, x[i].len);
	else if (nx != ny)
		verdict(r, PD_T_WA, "expected %zu lines, got %zu", ny, nx);
	else
		verdict(r, PD_T_AC, "ok: %zu lines", ny);
	free(x);
	free(y);
	return 0;
}

static void check_tokens(const pd_checker_cfg *c, const char *o, size_t ol, const char *a, size_t al,
			 pd_check_result *r)
{
	tok to = {o, ol, 0}, ta = {a, al, 0};
	const char *p, *q;
	size_t pl, ql;
	for (size_t i = 1;; i++) {
		bool ho = tok_next(&to, &p, &pl), ha = tok_next(&ta, &q, &ql);
		if (!ho && !ha) {
			verdict(r, PD_T_AC, "ok: %zu tokens", i - 1);
			return;
		}
		if (!ha) {
			verdict(r, PD_T_WA, "expected %zu tokens, got more", i - 1);
			return;
		}
		if (!ho) {
			verdict(r, PD_T_WA, "expected more than %zu tokens", i - 1);
			return;
		}
		if (cmp_bytes(p, pl, q, ql, c->case_insensitive)) {
			differ(r, "token", i, q, ql, p, pl);
			return;
		}
	}
}

/* ---- numbers --------------------------------------------------------------------------------- */

/* [+-]?digits: an integer literal, compared exactly (no double rounding: 2^53+1 differs). */
static bool is_int_lit(const char *p, size_t l)
{
	size_t i = (l && (p[0] == '+' || p[0] == '-')) ? 1 : 0;
	if (i == l)
		return false;
	for (; i < l; i++)
		if (!isdigit((unsigned char)p[i]))
			return false;
	return true;
}

static bool int_equal(const char *a, size_t al, const char *b, size_t bl)
{
	bool na = a[0] == '-', nb = b[0] == '-';
	if (a[0] == '+' || a[0] == '-')
		a++, al--;
	if (b[0] == '+' || b[0] == '-')
		b++, bl--;
	while (al > 1 && a[0] == '0')
		a++, al--;
	while (bl > 1 && b[0] == '0')
		b++, bl--;
	bool za = al == 1 && a[0] == '0', zb = bl == 1 && b[0] == '0';
	if (za && zb)
		return true; /* -0 is 0 */
	return na == nb && al == bl && !memcmp(a, b, al);
}

/* A decimal number (digits, point, exponent) or nan/inf/infinity in any case; hex floats and
 * trailing garbage are not numbers. */
static bool parse_num(const char *p, size_t l, double *out)
{
	char buf[400];
	if (!l || l >= sizeof buf)
		return false;
	memcpy(buf, p, l);
	buf[l] = 0;
	const char *s = buf + ((buf[0] == '+' || buf[0] == '-') ? 1 : 0);
	if (!strcasecmp(s, "nan") || !strcasecmp(s, "inf") || !strcasecmp(s, "infinity")) {
		*out = strtod(buf, NULL);
		return true;
	}
	bool digit = false;
	for (const char *q = s; *q; q++) {
		if (isdigit((unsigned char)*q))
			digit = true;
		else if (*q != '.' && *q != 'e' && *q != 'E' && *q != '+' && *q != '-')
			return false;
	}
	if (!digit)
		return false;
	char *end;
	errno = 0;
	*out = strtod(buf, &end);
	return *end == 0;
}

static bool num_close(const pd_checker_cfg *c, double got, double want)
{
	if (isnan(want) || isnan(got))
		return isnan(want) && isnan(got);
	if (isinf(want) || isinf(got))
		return got == want;
	double d = fabs(got - want);
	/* the slack covers the last bit of a decimal that the tolerance's own decimal rounded */
	bool abs_ok = d <= c->abs_tol * (1 + 1e-9);
	bool rel_ok = d <= c->rel_tol * fabs(want) * (1 + 1e-9);
	switch (c->tolerance) {
	case PD_TOL_ABS: return abs_ok;
	case PD_TOL_REL: return rel_ok;
	default: return abs_ok || rel_ok;
	}
}

static void check_numeric(const pd_checker_cfg *c, const char *o, size_t ol, const char *a, size_t al,
			  pd_check_result *r)
{
	tok to = {o, ol, 0}, ta = {a, al, 0};
	const char *p, *q;
	size_t pl, ql;
	for (size_t i = 1;; i++) {
		bool ho = tok_next(&to, &p, &pl), ha = tok_next(&ta, &q, &ql);
		if (!ho && !ha) {
			verdict(r, PD_T_AC, "ok: %zu tokens", i - 1);
			return;
		}
		if (!ha) {
			verdict(r, PD_T_WA, "expected %zu tokens, got more", i - 1);
			return;
		}
		if (!ho) {
			verdict(r, PD_T_WA, "expected more than %zu tokens", i - 1);
			return;
		}
		double want, got;
		if (!parse_num(q, ql, &want)) { /* a word in the answer: compared as a token */
			if (cmp_bytes(p, pl, q, ql, c->case_insensitive)) {
				differ(r, "token", i, q, ql, p, pl);
				return;
			}
			continue;
		}
		if (is_int_lit(q, ql) && is_int_lit(p, pl)) {
			if (!int_equal(p, pl, q, ql)) {
				differ(r, "integer", i, q, ql, p, pl);
				return;
			}
			continue;
		}
		if (!parse_num(p, pl, &got)) {
			char g[200];
			quote(g, sizeof g, p, pl);
			verdict(r, PD_T_WA, "token %zu: expected a number, got '%s'", i, g);
			return;
		}
		if (!num_close(c, got, want)) {
			verdict(r, PD_T_WA, "number %zu: expected %.17g, got %.17g (difference %.3g)", i, want, got,
				fabs(got - want));
			return;
		}
	}
}

static void check_yesno(const char *o, size_t ol, const char *a, size_t al, pd_check_result *r)
{
	tok to = {o, ol, 0}, ta = {a, al, 0};
	const char *p, *q;
	size_t pl, ql;
	for (size_t i = 1;; i++) {
		bool ho = tok_next(&to, &p, &pl), ha = tok_next(&ta, &q, &ql);
		if (!ho && !ha) {
			verdict(r, PD_T_AC, "ok: %zu answers", i - 1);
			return;
		}
		if (!ha || !ho) {
			verdict(r, PD_T_WA, "expected %s answers", !ha ? "fewer" : "more");
			return;
		}
		bool yes = pl == 3 && !cmp_bytes(p, 3, "yes", 3, true), no = pl == 2 && !cmp_bytes(p, 2, "no", 2, true);
		if (!yes && !no) {
			char g[200];
			quote(g, sizeof g, p, pl);
			verdict(r, PD_T_WA, "answer %zu: expected yes or no, got '%s'", i, g);
			return;
		}
		if (cmp_bytes(p, pl, q, ql, true)) {
			differ(r, "answer", i, q, ql, p, pl);
			return;
		}
	}
}

static int check_sorted(const pd_checker_cfg *c, bool lines, const char *o, size_t ol, const char *a, size_t al,
			pd_check_result *r)
{
	span *x, *y;
	size_t nx, ny;
	int (*split)(const char *, size_t, span **, size_t *) = lines ? split_lines : split_tokens;
	if (split(o, ol, &x, &nx) < 0)
		return -1;
	if (split(a, al, &y, &ny) < 0) {
		free(x);
		return -1;
	}
	const char *what = lines ? "lines" : "tokens";
	if (nx != ny) {
		verdict(r, PD_T_WA, "expected %zu %s, got %zu", ny, what, nx);
	} else {
		int (*cmp)(const void *, const void *) = c->case_insensitive ? span_cmp_ci : span_cmp;
		qsort(x, nx, sizeof *x, cmp);
		qsort(y, ny, sizeof *y, cmp);
		size_t i = 0;
		while (i < nx && !cmp(&x[i], &y[i]))
			i++;
		if (i < nx) {
			char w[200];
			/* the first in sorted order that differs: one side has it, the other not */
			bool missing = cmp(&y[i], &x[i]) < 0;
			span s = missing ? y[i] : x[i];
			quote(w, sizeof w, s.p, s.len);
			verdict(r, PD_T_WA, "%s '%s' %s", lines ? "line" : "token", w,
				missing ? "is missing (or appears fewer times)" : "is not expected (or appears more times)");
		} else {
			verdict(r, PD_T_AC, "ok: %zu %s in any order", nx, what);
		}
	}
	free(x);
	free(y);
	return 0;
}

/* ---- JSON values ----------------------------------------------------------------------------- */

/* An integer and a double are equal as Python's == has them: exactly, the double integral and of
 * the same value. No rounding either way: 9007199254740993 (2^53+1) is not 9007199254740992.0,
 * which a conversion of the integer to double would call equal. Every double at or past 2^63 in
 * magnitude is out of a json_int_t's range (the range's ends are powers of two, exact). */
static bool int_is_double(json_int_t i, double d)
{
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != trunc(d))
		return false;
	return (json_int_t)d == i;
}

/* ---- integers past 64 bits ------------------------------------------------------------------
 * jansson reads integers as 64-bit and refuses a longer one, but Python's have no bound: an answer
 * (or an output) may hold 2**70. Before loading, each integer literal of 19 digits or more (outside
 * strings) becomes a string marked with a tag no output can forge (a random nonce per check), and
 * is compared by its decimal text. */
#define BIG_DIGITS 19

typedef struct bigtag {
	char json[48]; /* as written in the text: "\u0001bigint-<16 hex>:" */
	char val[40];  /* as loaded: "\x01bigint-<16 hex>:" */
	size_t jlen, vlen;
} bigtag;

static void bigtag_init(bigtag *t)
{
	unsigned long long r = 0;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = (unsigned long long)pd_now_us() * 0x9e3779b97f4a7c15ull ^ (unsigned long long)(uintptr_t)t;
	t->jlen = (size_t)snprintf(t->json, sizeof t->json, "\\u0001bigint-%016llx:", r);
	t->vlen = (size_t)snprintf(t->val, sizeof t->val, "\001bigint-%016llx:", r);
}

/* s with its long integer literals as marked strings (malloc'd), or NULL (out of memory) */
static char *mark_bigints(const char *s, size_t len, const bigtag *t, size_t *out_len)
{
	size_t cap = len + (len / BIG_DIGITS + 1) * (t->jlen + 2) + 1, k = 0;
	char *o = malloc(cap);
	if (!o)
		return NULL;
	bool in_str = false;
	for (size_t i = 0; i < len;) {
		char c = s[i];
		if (in_str || c == '"') {
			o[k++] = s[i++];
			if (in_str && c == '\\' && i < len)
				o[k++] = s[i++];
			else if (c == '"')
				in_str = !in_str;
			continue;
		}
		if (c != '-' && !isdigit((unsigned char)c)) {
			o[k++] = s[i++];
			continue;
		}
		size_t d = i + (c == '-'), j = d;
		while (j < len && isdigit((unsigned char)s[j]))
			j++;
		bool more = j < len && (s[j] == '.' || s[j] == 'e' || s[j] == 'E');
		/* a leading zero stays: "0123" is not JSON, and must not become a valid string */
		if (j - d >= BIG_DIGITS && !more && s[d] != '0') {
			o[k++] = '"';
			memcpy(o + k, t->json, t->jlen);
			k += t->jlen;
			memcpy(o + k, s + i, j - i);
			k += j - i;
			o[k++] = '"';
			i = j;
			continue;
		}
		/* the whole number (a fraction's digits are not an integer of their own) */
		while (j < len && (isdigit((unsigned char)s[j]) || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				   ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E'))))
			j++;
		memcpy(o + k, s + i, j - i);
		k += j - i;
		i = j;
	}
	o[k] = 0;
	*out_len = k;
	return o;
}

/* the decimal text of a marked integer, or NULL */
static const char *big_of(json_t *v, const bigtag *t)
{
	if (!json_is_string(v) || json_string_length(v) <= t->vlen)
		return NULL;
	const char *s = json_string_value(v);
	return memcmp(s, t->val, t->vlen) ? NULL : s + t->vlen;
}

/* A double and a long integer's text: equal when the double is integral and its exact decimal
 * (glibc prints an integral double exactly) is the same text. */
static bool big_is_double(const char *digits, double d)
{
	if (!isfinite(d) || d != trunc(d))
		return false;
	char buf[400];
	snprintf(buf, sizeof buf, "%.0f", d);
	return !strcmp(buf, digits);
}

static bool float_close(double x, double y)
{
	return x == y || fabs(x - y) <= 1e-9 * (1 + fabs(y));
}

/* got against want (the answer): where the answer is an integer, exactly whatever the output's
 * number is; tolerance only where the answer is a float */
static bool json_same(json_t *a, json_t *b, const bigtag *t)
{
	const char *ba = big_of(a, t), *bb = big_of(b, t);
	if (bb) /* a long integer answer: the same text, or an integral float of that exact value */
		return ba ? !strcmp(ba, bb) : json_is_real(a) && big_is_double(bb, json_real_value(a));
	if (ba) /* a long integer output: never a 64-bit integer answer (shorter); near a float one */
		return json_is_real(b) && float_close(strtod(ba, NULL), json_real_value(b));
	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(b))
			return json_is_integer(a) ? json_integer_value(a) == json_integer_value(b)
						  : int_is_double(json_integer_value(b), json_real_value(a));
		return float_close(json_number_value(a), json_number_value(b));
	}
	if (json_typeof(a) != json_typeof(b))
		return (json_is_boolean(a) && json_is_boolean(b)) ? json_is_true(a) == json_is_true(b) : false;
	switch (json_typeof(a)) {
	case JSON_ARRAY: {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!json_same(json_array_get(a, i), json_array_get(b, i), t))
				return false;
		return true;
	}
	case JSON_OBJECT: {
		if (json_object_size(a) != json_object_size(b))
			return false;
		const char *k;
		json_t *v;
		json_object_foreach(a, k, v) {
			json_t *w = json_object_get(b, k);
			if (!w || !json_same(v, w, t))
				return false;
		}
		return true;
	}
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
	default:
		return true; /* null, true, false: the type says it all */
	}
}

/* a dump of a value with its marked integers as plain numbers again ("\"<tag>123\"" -> 123) */
static void unmark(char *s, const bigtag *t)
{
	char *p;
	while (s && (p = strstr(s, t->json))) {
		char *q = p > s && p[-1] == '"' ? p - 1 : p, *end = p + t->jlen;
		size_t n = strspn(end, "-0123456789");
		memmove(q, end, n);
		char *rest = end + n + (end[n] == '"');
		memmove(q + n, rest, strlen(rest) + 1);
	}
}

static json_t *load_any(const char *s, size_t len, const bigtag *t)
{
	json_error_t je;
	size_t ml;
	char *m = mark_bigints(s, len, t, &ml);
	json_t *v = m ? json_loadb(m, ml, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je) : NULL;
	free(m);
	return v;
}

static void check_json(const char *o, size_t ol, const char *a, size_t al, pd_check_result *r)
{
	bigtag t;
	bigtag_init(&t);
	json_t *want = load_any(a, al, &t);
	if (!want) {
		verdict(r, PD_T_JE, "the answer is not JSON");
		return;
	}
	json_t *got = load_any(o, ol, &t);
	if (!got) {
		char g[200];
		quote(g, sizeof g, o, ol);
		verdict(r, PD_T_WA, "the output is not one JSON value: '%s'", g);
	} else if (json_same(got, want, &t)) {
		verdict(r, PD_T_AC, "ok: the same JSON value");
	} else {
		char *gs = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY), *ws = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
		unmark(gs, &t);
		unmark(ws, &t);
		char g[200], w[200];
		quote(g, sizeof g, gs ? gs : "", gs ? strlen(gs) : 0);
		quote(w, sizeof w, ws ? ws : "", ws ? strlen(ws) : 0);
		verdict(r, PD_T_WA, "expected %s, got %s", w, g);
		free(gs);
		free(ws);
	}
	json_decref(got);
	json_decref(want);
}

int pd_check(const pd_checker_cfg *c, const char *out, size_t out_len, const char *ans, size_t ans_len,
	     pd_check_result *r, pd_err *e)
{
	memset(r, 0, sizeof *r);
	out = out ? out : "";
	ans = ans ? ans : "";
	switch (c->mode) {
	case PD_CHK_EXACT:
		check_exact(c, out, out_len, ans, ans_len, r);
		return 0;
	case PD_CHK_LINES:
		if (check_lines(c, out, out_len, ans, ans_len, r) < 0)
			return pd_fail(e, ENOMEM, "checker: lines");
		return 0;
	case PD_CHK_TOKENS:
		check_tokens(c, out, out_len, ans, ans_len, r);
		return 0;
	case PD_CHK_NUMERIC:
		check_numeric(c, out, out_len, ans, ans_len, r);
		return 0;
	case PD_CHK_YESNO:
		check_yesno(out, out_len, ans, ans_len, r);
		return 0;
	case PD_CHK_UNORDERED_LINES:
	case PD_CHK_MULTISET_TOKENS:
		if (check_sorted(c, c->mode == PD_CHK_UNORDERED_LINES, out, out_len, ans, ans_len, r) < 0)
			return pd_fail(e, ENOMEM, "checker: %s", pd_check_mode_name(c->mode));
		return 0;
	case PD_CHK_JSON_VALUE:
		check_json(out, out_len, ans, ans_len, r);
		return 0;
	default:
		return pd_fail(e, EINVAL, "checker: mode %s is not built in", pd_check_mode_name(c->mode));
	}
}

/* ---- checker programs ------------------------------------------------------------------------ */

/* The score of a testlib partial verdict: the first number of the text (after an optional
 * "points"), as a fraction in [0,1]. */
static bool first_number(const char *s, size_t len, double *out)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (isdigit(ch) || ((ch == '.' || ch == '-') && i + 1 < len && isdigit((unsigned char)s[i + 1]))) {
			char buf[64];
			size_t k = 0;
			while (i < len && k < sizeof buf - 1 && !is_ws((unsigned char)s[i]))
				buf[k++] = s[i++];
			buf[k] = 0;
			char *end;
			double v = strtod(buf, &end);
			if (end == buf)
				return false;
			*out = v;
			return true;
		}
		if (!is_ws(ch) && !isalpha(ch) && ch != ':')
			return false;
	}
	return false;
}

static void words(char *out, size_t size, const pd_output *o)
{
	size_t n = o->head_len;
	while (n && is_ws((unsigned char)o->head[n - 1]))
		n--;
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < size; i++) {
		unsigned char c = (unsigned char)o->head[i];
		out[k++] = c == '\n' || c == '\t' ? ' ' : (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	out[k] = 0;
}

void pd_check_program_verdict(pd_convention conv, const pd_result *r, const char *feedback, pd_check_result *out)
{
	memset(out, 0, sizeof *out);
	char said[240];
	if (feedback && *feedback) {
		pd_output f = {.head = (char *)feedback, .head_len = strlen(feedback)};
		words(said, sizeof said, &f);
	} else {
		words(said, sizeof said, r->err.head_len ? &r->err : &r->out);
	}
	if (r->status != PD_OK && r->status != PD_RE) {
		verdict(out, PD_T_JE, "checker %s%s%s", pd_status_name(r->status), r->error[0] ? ": " : "", r->error);
		return;
	}
	int code = r->exit_code;
	if (conv == PD_CONV_KATTIS) {
		if (code == 42)
			verdict(out, PD_T_AC, "%s", said[0] ? said : "accepted");
		else if (code == 43)
			verdict(out, PD_T_WA, "%s", said[0] ? said : "wrong answer");
		else
			verdict(out, PD_T_JE, "checker exited %d (Kattis checkers exit 42 or 43): %s", code, said);
		return;
	}
	switch (code) {
	case 0: verdict(out, PD_T_AC, "%s", said[0] ? said : "ok"); return;
	case 1:
	case 4: verdict(out, PD_T_WA, "%s", said[0] ? said : "wrong answer"); return;
	case 2:
	case 8: verdict(out, PD_T_PE, "%s", said[0] ? said : "presentation error"); return;
	case 3: verdict(out, PD_T_JE, "checker said fail: %s", said); return;
	case 7: {
		double s;
		if (!first_number(r->out.head, r->out.head_len, &s) && !first_number(r->err.head, r->err.head_len, &s)) {
			verdict(out, PD_T_JE, "checker exited 7 (partial) without a score");
			return;
		}
		if (!(s >= 0 && s <= 1)) {
			verdict(out, PD_T_JE, "checker's partial score %g is not in [0,1]", s);
			return;
		}
		verdict(out, s >= 1 ? PD_T_AC : s <= 0 ? PD_T_WA : PD_T_PC, "%s", said[0] ? said : "partial");
		out->score = s;
		return;
	}
	default: verdict(out, PD_T_JE, "checker exited %d: %s", code, said); return;
	}
}
