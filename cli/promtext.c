/* The Prometheus text format read back (see promtext.h). Only what paddock top needs: samples with
 * labels and values; HELP/TYPE comments are skipped, as are timestamps. */
#define _GNU_SOURCE
#include "promtext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

static void sample_free(prom_sample *s)
{
	free(s->name);
	for (size_t i = 0; i < s->nlabels; i++) {
		free(s->labels[i].key);
		free(s->labels[i].value);
	}
	free(s->labels);
}

/* A label value from just after its opening quote: unescapes \\, \" and \n; *p ends after the
 * closing quote. NULL when the value is unterminated (or memory runs out). */
static char *label_value(const char **p, const char *end)
{
	const char *q = *p;
	char *v = malloc((size_t)(end - q) + 1), *w = v;
	if (!v)
		return NULL;
	while (q < end && *q != '"') {
		if (*q == '\\') {
			if (++q >= end)
				break;
			*w++ = *q == 'n' ? '\n' : *q;
			q++;
		} else {
			*w++ = *q++;
		}
	}
	if (q >= end) {
		free(v);
		return NULL;
	}
	*w = 0;
	*p = q + 1;
	return v;
}

/* One line (without its newline) into s; false when it is not a sample. */
static bool parse_line(const char *p, const char *end, prom_sample *s)
{
	memset(s, 0, sizeof *s);
	if (p >= end || !name_start(*p))
		return false;
	const char *n0 = p;
	while (p < end && name_char(*p))
		p++;
	s->name = strndup(n0, (size_t)(p - n0));
	if (!s->name)
		return false;
	if (p < end && *p == '{') {
		p++;
		for (;;) {
			while (p < end && *p == ' ')
				p++;
			if (p < end && *p == '}') {
				p++;
				break;
			}
			const char *k0 = p; /* a label name: a metric name without ':' */
			while (p < end && name_char(*p) && *p != ':')
				p++;
			if (p == k0 || !name_start(*k0) || p + 1 >= end || p[0] != '=' || p[1] != '"')
				goto bad;
			char *key = strndup(k0, (size_t)(p - k0));
			p += 2;
			char *val = label_value(&p, end);
			prom_label *nl = key && val ? realloc(s->labels, (s->nlabels + 1) * sizeof *nl) : NULL;
			if (!nl) {
				free(key);
				free(val);
				goto bad;
			}
			s->labels = nl;
			s->labels[s->nlabels++] = (prom_label){key, val};
			while (p < end && *p == ' ')
				p++;
			if (p < end && *p == ',')
				p++;
			else if (p < end && *p == '}') {
				p++;
				break;
			} else
				goto bad;
		}
	}
	if (p >= end || (*p != ' ' && *p != '\t'))
		goto bad;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	char num[64];
	size_t k = 0;
	while (p < end && *p != ' ' && *p != '\t' && k < sizeof num - 1)
		num[k++] = *p++;
	num[k] = 0;
	if (!k || (p < end && *p != ' ' && *p != '\t'))
		goto bad;
	/* then at most a timestamp (integer milliseconds), which is not kept */
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p < end && *p == '-')
		p++;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	if (p < end)
		goto bad;
	if (!strcmp(num, "+Inf"))
		s->value = INFINITY;
	else if (!strcmp(num, "-Inf"))
		s->value = -INFINITY;
	else if (!strcmp(num, "NaN"))
		s->value = NAN;
	else {
		char *e;
		s->value = strtod(num, &e);
		/* strtod takes "inf", "nan" and hex too; the format has only the three spellings above */
		if (*e || strpbrk(num, "xXiInN"))
			goto bad;
	}
	return true;
bad:
	sample_free(s);
	memset(s, 0, sizeof *s);
	return false;
}

int prom_parse(const char *text, size_t len, prom_set *out)
{
	memset(out, 0, sizeof *out);
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *q = p;
		while (q < le && (*q == ' ' || *q == '\t'))
			q++;
		if (q < le && *q != '#') {
			prom_sample s;
			if (memchr(q, 0, (size_t)(le - q)) || !parse_line(q, le, &s)) {
				out->bad++;
			} else {
				if (out->n == out->cap) {
					size_t nc = out->cap ? 2 * out->cap : 256;
					prom_sample *ns = realloc(out->s, nc * sizeof *ns);
					if (!ns) {
						sample_free(&s);
						prom_free(out);
						return -1;
					}
					out->s = ns;
					out->cap = nc;
				}
				out->s[out->n++] = s;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

void prom_free(prom_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		sample_free(&set->s[i]);
	free(set->s);
	memset(set, 0, sizeof *set);
}

const char *prom_label_of(const prom_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].value;
	return NULL;
}

static bool matches(const prom_sample *s, const char *name, const char *key, const char *val)
{
	if (strcmp(s->name, name))
		return false;
	if (!key)
		return true;
	const char *v = prom_label_of(s, key);
	return v && (!val || !strcmp(v, val));
}

double prom_sum(const prom_set *set, const char *name, const char *key, const char *val, bool *found)
{
	double sum = 0;
	bool any = false;
	for (size_t i = 0; set && i < set->n; i++)
		if (matches(&set->s[i], name, key, val)) {
			sum += set->s[i].value;
			any = true;
		}
	if (found)
		*found = any;
	return sum;
}

typedef struct bucket {
	double le, cum;
} bucket;

static int by_le(const void *a, const void *b)
{
	double x = ((const bucket *)a)->le, y = ((const bucket *)b)->le;
	return x < y ? -1 : x > y;
}

/* The buckets of base (summed over the series that match key=val), sorted by their bound. */
static bucket *buckets(const prom_set *set, const char *bname, const char *key, const char *val, size_t *nb)
{
	bucket *b = NULL;
	size_t n = 0;
	for (size_t i = 0; set && i < set->n; i++) {
		const prom_sample *s = &set->s[i];
		if (!matches(s, bname, key, val))
			continue;
		const char *les = prom_label_of(s, "le");
		if (!les)
			continue;
		char *e;
		double le = !strcmp(les, "+Inf") ? INFINITY : strtod(les, &e);
		if (!isinf(le) && (*e || !isfinite(le) || strpbrk(les, "xXiInN")))
			continue; /* not a bound: a bucket without one cannot be placed */
		size_t j = 0;
		while (j < n && b[j].le != le)
			j++;
		if (j == n) {
			bucket *nb2 = realloc(b, (n + 1) * sizeof *b);
			if (!nb2)
				break;
			b = nb2;
			b[n++] = (bucket){le, 0};
		}
		b[j].cum += s->value;
	}
	if (n)
		qsort(b, n, sizeof *b, by_le);
	*nb = n;
	return b;
}

double prom_quantile(const prom_set *cur, const prom_set *prev, const char *base, const char *key, const char *val,
		     double q, double *count)
{
	char bname[256];
	snprintf(bname, sizeof bname, "%s_bucket", base);
	size_t nc = 0, np = 0;
	bucket *c = buckets(cur, bname, key, val, &nc), *p = prev ? buckets(prev, bname, key, val, &np) : NULL;
	/* the interval's counts: a bucket missing before (or a daemon restarted, counts lower) counts whole */
	for (size_t i = 0; i < nc; i++)
		for (size_t j = 0; j < np; j++)
			if (p[j].le == c[i].le && p[j].cum <= c[i].cum)
				c[i].cum -= p[j].cum;
	free(p);
	double total = nc ? c[nc - 1].cum : 0, r = NAN;
	if (count)
		*count = total;
	if (nc && total > 0 && isinf(c[nc - 1].le)) {
		double rank = q * total, lo = 0, below = 0;
		for (size_t i = 0; i < nc; i++) {
			if (c[i].cum >= rank) {
				if (isinf(c[i].le))
					r = i ? c[i - 1].le : 0; /* past the last bound: its bound, like histogram_quantile */
				else {
					double in = c[i].cum - below;
					r = lo + (c[i].le - lo) * (in > 0 ? (rank - below) / in : 1);
				}
				break;
			}
			lo = c[i].le;
			below = c[i].cum;
		}
	}
	free(c);
	return r;
}
