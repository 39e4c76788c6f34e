/* The values of the command line, one parser per kind (count, size, duration, decimal), shared by
 * every subcommand and by `paddock serve --config`: a value is accepted or refused by the same
 * rule wherever it is written, and a refusal names where it came from. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("paddock: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

bool cli_bad(const char *what, const char *arg, const char *want)
{
	cli_error("%s: '%s' is not %s", what, arg, want);
	return false;
}

int cli_bad_option(const char *cmd, const char *help, const char *takes, int c, char **argv,
		   const struct option *opts)
{
	/* glibc has moved optind past a long option (and past a short one ending its cluster) when it
	 * fails, so argv[optind - 1] is the long option as typed; a short one is optopt */
	const char *given = optind > 0 ? argv[optind - 1] : "";
	char name[64];
	bool lng = !strncmp(given, "--", 2);
	snprintf(name, sizeof name, "%.*s", (int)strcspn(given, "="), given);
	char what[160];
	if (c == ':' && lng)
		snprintf(what, sizeof what, "option '%s' needs a value", name);
	else if (c == ':')
		snprintf(what, sizeof what, "option '-%c' needs a value", optopt);
	else if (optopt == 0) {
		/* an unknown name, or the start of several (glibc takes a unique prefix) */
		size_t n = strlen(name + 2), matches = 0;
		for (const struct option *o = opts; o && o->name; o++)
			matches += n && !strncmp(o->name, name + 2, n);
		snprintf(what, sizeof what, "%s option '%s'", matches > 1 ? "ambiguous" : "unknown", name);
	} else {
		/* a short option it does not know, or a long one given a value it does not take */
		bool valued = false;
		for (const struct option *o = opts; lng && given[strlen(name)] == '=' && o && o->name; o++)
			valued |= o->has_arg == no_argument && o->val == optopt && !strncmp(o->name, name + 2, strlen(name + 2));
		if (valued)
			snprintf(what, sizeof what, "option '%s' takes no value", name);
		else if (optopt > ' ' && optopt < 127)
			snprintf(what, sizeof what, "unknown option '-%c'", optopt);
		else
			snprintf(what, sizeof what, "unknown option '%s'", given);
	}
	fprintf(stderr, "paddock %s: %s (%s%s%ssee 'paddock %s --help')\n", cmd, what, takes ? "it takes " : "",
		takes ? takes : "", takes ? "; " : "", help);
	return EXIT_USAGE;
}

bool cli_no_operand(const char *cmd, int argc, char **argv, int optind_)
{
	if (optind_ >= argc)
		return true;
	cli_error("%s: unexpected argument '%s' (see 'paddock %s --help')", cmd, argv[optind_], cmd);
	return false;
}

/* Only decimal digits: strtol alone would also take leading blanks, a sign and, past the
 * digits, nothing at all ("" is 0). */
static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

bool cli_count(const char *what, const char *arg, long lo, long hi, long *out)
{
	errno = 0;
	long v = all_digits(arg) ? strtol(arg, NULL, 10) : -1;
	if (errno || v < lo || v > hi) {
		char want[96];
		snprintf(want, sizeof want, "a count from %ld to %ld", lo, hi);
		return cli_bad(what, arg, want);
	}
	*out = v;
	return true;
}

/* A size the way it is written on the command line: whole units when they are whole. */
static void size_text(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "kMGT";
	int u = -1;
	while (u < 3 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64 " bytes", v);
	else
		snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
}

static void time_text(uint64_t ms, char *buf, size_t len)
{
	if (ms % 1000)
		snprintf(buf, len, "%" PRIu64 "ms", ms);
	else
		snprintf(buf, len, "%" PRIu64 "s", ms / 1000);
}

bool cli_size(const char *what, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v;
	if (pd_parse_size(arg, &v) == 0 && v >= lo && v <= hi) {
		*out = v;
		return true;
	}
	char want[96], a[32], b[32];
	size_text(lo, a, sizeof a);
	size_text(hi, b, sizeof b);
	if (hi == UINT64_MAX)
		snprintf(want, sizeof want, lo > 1 ? "a size of at least %s" : lo ? "a positive size" : "a size", a);
	else
		snprintf(want, sizeof want, "a size from %s to %s", a, b);
	return cli_bad(what, arg, want);
}

bool cli_duration_ms(const char *what, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v;
	if (pd_parse_duration_ms(arg, &v) == 0 && v >= lo && v <= hi) {
		*out = v;
		return true;
	}
	char want[96], a[32], b[32];
	time_text(lo, a, sizeof a);
	time_text(hi, b, sizeof b);
	if (hi == UINT64_MAX && lo <= 1)
		snprintf(want, sizeof want, lo ? "a positive time" : "a time");
	else if (hi == UINT64_MAX)
		snprintf(want, sizeof want, "a time of at least %s", a);
	else if (lo <= 1)
		snprintf(want, sizeof want, "a %stime up to %s", lo ? "positive " : "", b);
	else
		snprintf(want, sizeof want, "a time from %s to %s", a, b);
	return cli_bad(what, arg, want);
}

bool cli_decimal(const char *what, const char *arg, double lo, double hi, double *out)
{
	/* digits with at most one point: strtod would also take "nan", "inf", hex and exponents,
	 * and NaN passes every range check */
	size_t whole = strspn(arg, "0123456789"), frac = 0;
	if (arg[whole] == '.')
		frac = strspn(arg + whole + 1, "0123456789");
	bool form = (whole || frac) && strlen(arg) == whole + (arg[whole] == '.' ? 1 + frac : 0);
	double v = form && whole < 16 ? strtod(arg, NULL) : -1;
	if (!form || v < lo || v > hi) {
		char want[96];
		snprintf(want, sizeof want, "a number from %g to %g", lo, hi);
		return cli_bad(what, arg, want);
	}
	*out = v;
	return true;
}
