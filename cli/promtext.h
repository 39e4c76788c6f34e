/* cli/promtext.c: the Prometheus text exposition format (version 0.0.4) read back into samples, for
 * paddock top. It reads what a daemon answered on /metrics, so every line is checked: a line that is
 * not "name[{labels}] value [timestamp]" is skipped and counted, never trusted. */
#ifndef PADDOCK_PROMTEXT_H
#define PADDOCK_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct prom_label {
	char *key, *value; /* value unescaped */
} prom_label;

typedef struct prom_sample {
	char *name;
	prom_label *labels;
	size_t nlabels;
	double value; /* NaN and ±Inf as written */
} prom_sample;

typedef struct prom_set {
	prom_sample *s;
	size_t n, cap;
	size_t bad; /* lines skipped as malformed */
} prom_set;

/* Parses len bytes of exposition text into *out (zeroed first). -1 only when memory runs out. */
int prom_parse(const char *text, size_t len, prom_set *out);
void prom_free(prom_set *set);

/* The value of label key of s, or NULL. */
const char *prom_label_of(const prom_sample *s, const char *key);
/* The sum of the samples called name whose label key is val (key NULL: all of them); *found says
 * whether any matched (NULL allowed). */
double prom_sum(const prom_set *set, const char *name, const char *key, const char *val, bool *found);

/* The q-quantile (0..1) of a histogram called base (its base_bucket samples, cumulative per "le"),
 * restricted to label key=val when key is given, from the difference of two scrapes (prev may be
 * NULL: since the daemon started). Interpolates linearly inside the bucket, as Prometheus'
 * histogram_quantile does; *count gets the observations the estimate rests on. NaN when there are
 * none. */
double prom_quantile(const prom_set *cur, const prom_set *prev, const char *base, const char *key, const char *val,
		     double q, double *count);

#endif
