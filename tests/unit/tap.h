/* Minimal TAP for the unit tests: plan(n), ok(cond, fmt...), is_int, is_str, done(). */
#ifndef PADDOCK_TAP_H
#define PADDOCK_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static inline void plan(int n)
{
	printf("1..%d\n", n);
	fflush(stdout);
}

__attribute__((format(printf, 2, 3))) static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	if (!cond)
		tap_failed++;
	fflush(stdout);
	return cond;
}

#define is_int(got, want, ...)                                                                   \
	do {                                                                                     \
		long long g_ = (long long)(got), w_ = (long long)(want);                         \
		if (!ok(g_ == w_, __VA_ARGS__))                                                  \
			printf("#   got:  %lld\n#   want: %lld\n", g_, w_);                          \
	} while (0)

#define is_str(got, want, ...)                                                                   \
	do {                                                                                     \
		const char *g_ = (got), *w_ = (want);                                            \
		if (!ok(g_ && w_ && !strcmp(g_, w_), __VA_ARGS__))                               \
			printf("#   got:  '%s'\n#   want: '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
	} while (0)

static inline int done(void)
{
	return tap_failed ? 1 : 0;
}

#endif
