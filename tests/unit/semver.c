/* semver.c: Piston's version matching (node-semver's satisfies), case by case from node-semver's
 * documented desugaring: X-ranges, ~, ^, comparators, hyphen ranges, ||, and invalid input. */
#define _GNU_SOURCE
#include "server.h"
#include "tap.h"

static const struct {
	const char *version, *range;
	int want;
} cases[] = {
	{"3.11.2", "*", 1},           {"3.11.2", "x", 1},          {"3.11.2", "", 1},
	{"3.11.2", "3.11.2", 1},      {"3.11.2", "=3.11.2", 1},    {"3.11.2", "v3.11.2", 1},
	{"3.11.2", "3.11.3", 0},      {"3.11.2", "3", 1},          {"3.11.2", "3.x", 1},
	{"3.11.2", "3.11", 1},        {"3.11.2", "3.11.x", 1},     {"3.11.2", "3.10", 0},
	{"3.11.2", "4", 0},           {"3.11.2", "~3.11.0", 1},    {"3.11.2", "~3.11.3", 0},
	{"3.11.2", "~3.10.0", 0},     {"3.11.2", "~3", 1},         {"3.11.2", "~>3.11", 1},
	{"3.11.2", "^3.1.0", 1},      {"3.11.2", "^3.12.0", 0},    {"3.11.2", "^2.9", 0},
	{"0.2.5", "^0.2.3", 1},       {"0.3.0", "^0.2.3", 0},      {"0.0.3", "^0.0.3", 1},
	{"0.0.4", "^0.0.3", 0},       {"0.0.9", "^0.0", 1},        {"0.1.0", "^0.0", 0},
	{"0.9.0", "^0.x", 1},         {"1.0.0", "^0.x", 0},        {"3.11.2", ">3.11.1", 1},
	{"3.11.2", ">3.11.2", 0},     {"3.11.2", ">3.10", 1},      {"3.11.2", ">3.11", 0},
	{"3.11.2", ">=3.11.2", 1},    {"3.11.2", ">=3.12", 0},     {"3.11.2", "<3.11.2", 0},
	{"3.11.2", "<3.12", 1},       {"3.11.2", "<=3.11", 1},     {"3.11.2", "<=3.10", 0},
	{"3.11.2", "<= 3.11.2", 1},   {"3.11.2", ">=3.10 <4", 1},  {"3.11.2", ">=3.12 <4", 0},
	{"3.11.2", "1.x || 3.x", 1},  {"3.11.2", "1.x || 2.x", 0}, {"3.11.2", "3.0.0 - 3.11.2", 1},
	{"3.11.2", "3.0 - 3.11", 1},  {"3.11.2", "3.0 - 3.10", 0}, {"3.11.2", "3.12 - 4", 0},
	{"3.11.2", ">*", 0},          {"3.11.2", ">=*", 1},        {"3.11.2", "3.11.2-rc1", 0},
	{"3.11.2", "latest", -1},     {"3.11.2", "3.", -1},        {"3.11.2", "3.x.y.z", -1},
	{"3.11.2", ">=3.1.", -1},     {"3.11.2", "3.11.2 -", -1},  {"3.11", "*", -1},
	{"x.y.z", "*", -1},           {"3.11.2", ">=3.11.2-rc1", 1}, {"3.11.2", "<3.11.2-rc1", 0},
	{"3.11.2-rc1", "3.11.2-rc1", 1}, {"3.11.2-rc1", "<3.11.2", 1}, {"3.11.2", "3.11.2+build7", 1},
};

int main(void)
{
	size_t n = sizeof cases / sizeof cases[0];
	plan((int)n + 6);
	for (size_t i = 0; i < n; i++)
		is_int(pd_semver_satisfies(cases[i].version, cases[i].range), cases[i].want, "'%s' satisfies '%s': %d",
		       cases[i].version, cases[i].range, cases[i].want);
	/* without the daemon's probe, versions are the table's, as MAJOR.MINOR.PATCH */
	is_str(pd_language_version(pd_language_find("nodejs")), "20.0.0", "node's table version 20 reads 20.0.0");
	is_str(pd_language_version(pd_language_find("python")), "3.11.0", "python's table version reads 3.11.0");
	const pd_runtime *rt = pd_piston_match("cpp", "12");
	ok(rt && !strcmp(rt->language, "c++") && !strcmp(rt->paddock, "cpp"), "cpp is an alias of c++, 12 matches");
	ok(!pd_piston_match("cpp", "13"), "c++ 12.2.0 does not satisfy 13");
	rt = pd_piston_match("js", ">=18");
	ok(rt && !strcmp(rt->language, "javascript"), "js is an alias of javascript");
	ok(!pd_piston_match("python2", "*"), "python2 is not an alias");
	return done();
}
