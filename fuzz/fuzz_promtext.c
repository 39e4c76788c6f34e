/* Fuzzes the Prometheus text parser of paddock top (cli/promtext.c): the input is a whole /metrics
 * answer, which paddock top reads from whatever listens at --url.
 *
 * Beyond "no crash, no leak, no undefined behaviour":
 *  - every sample's name is a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), every label key a label name,
 *    and both are NUL-free strings as long as strlen says;
 *  - every non-comment, non-blank line is either a sample or counted as malformed: samples + bad
 *    equals those lines;
 *  - prom_sum over a name equals the sum of its samples, and says found exactly when one exists;
 *  - a quantile of the input against itself (an interval with nothing in it) is NaN with a count of
 *    0; against nothing, it is NaN or within [min(0, the bounds), max(0, the bounds)]. */
#include "fuzz_common.h"

#include "promtext.h"

#include <math.h>

static int is_name(const char *s, int colon)
{
	if (!*s)
		return 0;
	for (const char *p = s; *p; p++) {
		int alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || (colon && *p == ':');
		if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
			return 0;
	}
	return 1;
}

/* the lines a parser must account for: not blank, not a comment (after leading blanks) */
static size_t sample_lines(const uint8_t *d, size_t n)
{
	size_t lines = 0, i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && d[j] != '\n')
			j++;
		size_t k = i;
		while (k < j && (d[k] == ' ' || d[k] == '\t'))
			k++;
		if (k < j && d[k] != '#')
			lines++;
		i = j + 1;
	}
	return lines;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	prom_set set;
	if (prom_parse((const char *)data, size, &set) < 0)
		return 0;
	FUZZ_CHECK(set.n + set.bad == sample_lines(data, size), "samples %zu + bad %zu != lines %zu", set.n, set.bad,
	      sample_lines(data, size));
	double maxle = 0, minle = 0;
	for (size_t i = 0; i < set.n; i++) {
		prom_sample *s = &set.s[i];
		FUZZ_CHECK(is_name(s->name, 1), "bad metric name '%s'", s->name);
		for (size_t j = 0; j < s->nlabels; j++)
			FUZZ_CHECK(is_name(s->labels[j].key, 0), "bad label name '%s'", s->labels[j].key);
		const char *le = prom_label_of(s, "le");
		if (le && strcmp(le, "+Inf")) {
			double v = strtod(le, NULL);
			if (isfinite(v) && v > maxle)
				maxle = v;
			if (isfinite(v) && v < minle)
				minle = v;
		}
		bool found;
		double sum = 0, got = prom_sum(&set, s->name, NULL, NULL, &found);
		for (size_t j = 0; j < set.n; j++)
			if (!strcmp(set.s[j].name, s->name))
				sum += set.s[j].value;
		FUZZ_CHECK(found, "prom_sum did not find '%s'", s->name);
		FUZZ_CHECK((isnan(sum) && isnan(got)) || sum == got, "prom_sum %g != %g", got, sum);
	}
	bool found;
	prom_sum(&set, "no such metric", NULL, NULL, &found);
	FUZZ_CHECK(!found, "prom_sum found a name that cannot be");
	if (set.n) {
		const char *base = set.s[0].name;
		char b[256];
		snprintf(b, sizeof b, "%s", base);
		size_t bl = strlen(b);
		if (bl > 7 && !strcmp(b + bl - 7, "_bucket"))
			b[bl - 7] = 0;
		double count = -1, q = prom_quantile(&set, &set, b, NULL, NULL, 0.5, &count);
		FUZZ_CHECK(isnan(q) && count == 0, "an empty interval gave %g over %g", q, count);
		q = prom_quantile(&set, NULL, b, NULL, NULL, 0.9, &count);
		FUZZ_CHECK(isnan(q) || (q >= minle && q <= maxle), "quantile %g outside [%g, %g]", q, minle, maxle);
	}
	prom_free(&set);
	return 0;
}
