/* The built-in checkers on the cases that break graders: trailing spaces and newlines, CRLF, empty
 * output, huge output, NaN/inf, -0, 1e-7 against 0, very long lines, NUL and non-UTF-8 bytes; and
 * the exit conventions of checker programs (testlib, Kattis). */
#define _GNU_SOURCE
#include "judge/judge.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static pd_tstatus chk(pd_checker_cfg c, const char *out, size_t ol, const char *ans, size_t al, char *msg)
{
	pd_check_result r;
	pd_err e = {0};
	if (pd_check(&c, out, ol, ans, al, &r, &e) < 0)
		return PD_T_COUNT;
	if (msg)
		snprintf(msg, 256, "%s", r.message);
	return r.status;
}

#define S(x) x, sizeof(x) - 1
#define IS(mode, out, ans, want, name) is_str(pd_tstatus_name(chk(mode, S(out), S(ans), NULL)), want, name)

static pd_checker_cfg M(pd_check_mode m)
{
	return pd_checker_default(m);
}

static pd_checker_cfg CI(pd_check_mode m)
{
	pd_checker_cfg c = pd_checker_default(m);
	c.case_insensitive = true;
	return c;
}

static void test_exact(void)
{
	IS(M(PD_CHK_EXACT), "3\n", "3\n", "AC", "exact: same bytes");
	IS(M(PD_CHK_EXACT), "3", "3\n", "WA", "exact: a missing final newline differs");
	IS(M(PD_CHK_EXACT), "3 \n", "3\n", "WA", "exact: a trailing space differs");
	IS(M(PD_CHK_EXACT), "3\r\n", "3\n", "WA", "exact: CRLF differs");
	IS(M(PD_CHK_EXACT), "", "", "AC", "exact: empty equals empty");
	IS(M(PD_CHK_EXACT), "Yes\n", "YES\n", "WA", "exact: case counts");
	IS(CI(PD_CHK_EXACT), "Yes\n", "YES\n", "AC", "exact, case-insensitive: Yes = YES");
	IS(M(PD_CHK_EXACT), "a\0b", "a\0c", "WA", "exact: bytes after a NUL are compared");
	IS(M(PD_CHK_EXACT), "a\0b", "a\0b", "AC", "exact: NUL bytes are data");
	IS(M(PD_CHK_EXACT), "\xff\xfe", "\xff\xfe", "AC", "exact: invalid UTF-8 is data");
	char m[256];
	chk(M(PD_CHK_EXACT), S("abc\xff"), S("abd"), m);
	ok(strstr(m, "byte 2") && strstr(m, "\\xff"), "exact: the message names the byte and escapes it: %s", m);
}

static void test_lines(void)
{
	pd_checker_cfg L = M(PD_CHK_LINES);
	IS(L, "1\n2\n", "1\n2\n", "AC", "lines: same");
	IS(L, "1 \n2\t\n", "1\n2\n", "AC", "lines: trailing spaces and tabs ignored");
	IS(L, "1\r\n2\r\n", "1\n2\n", "AC", "lines: CRLF is a line's own ending");
	IS(L, "1\n2", "1\n2\n", "AC", "lines: a missing final newline is fine");
	IS(L, "1\n2\n\n\n", "1\n2\n", "AC", "lines: extra final newlines ignored");
	IS(L, "1\n\n2\n", "1\n2\n", "WA", "lines: an empty line in the middle counts");
	IS(L, " 1\n", "1\n", "WA", "lines: leading whitespace counts");
	IS(L, "1  2\n", "1 2\n", "WA", "lines: inner whitespace counts");
	IS(L, "", "", "AC", "lines: empty equals empty");
	IS(L, "", "\n", "AC", "lines: empty output equals a lone newline");
	IS(L, "", "0\n", "WA", "lines: empty output is not an answer");
	IS(L, "\n\n", "", "AC", "lines: only newlines is empty");
	IS(L, "HELLO\n", "hello\n", "WA", "lines: case counts by default");
	IS(CI(PD_CHK_LINES), "HELLO\n", "hello\n", "AC", "lines, case-insensitive");
	IS(L, "1\n2\n3\n", "1\n2\n", "WA", "lines: an extra line is wrong");
	char m[256];
	chk(L, S("a\nb\nX\n"), S("a\nb\nc\n"), m);
	ok(strstr(m, "line 3") != NULL, "lines: the message names the line: %s", m);
	/* very long lines: 4 MiB each, differing in the last byte */
	size_t n = 4u << 20;
	char *a = malloc(n + 1), *b = malloc(n + 1);
	memset(a, 'x', n);
	memset(b, 'x', n);
	a[n] = b[n] = '\n';
	is_str(pd_tstatus_name(chk(L, a, n + 1, b, n + 1, NULL)), "AC", "lines: a 4 MiB line equals itself");
	b[n - 1] = 'y';
	is_str(pd_tstatus_name(chk(L, a, n + 1, b, n + 1, m)), "WA", "lines: a 4 MiB line differing at the end");
	ok(strlen(m) < 200, "lines: the message stays short (%zu bytes)", strlen(m));
	free(a);
	free(b);
	/* huge output: 1 million lines */
	size_t big = 2000000;
	char *o = malloc(big);
	for (size_t i = 0; i < big; i += 2) {
		o[i] = (char)('0' + (i / 2) % 10);
		o[i + 1] = '\n';
	}
	is_str(pd_tstatus_name(chk(L, o, big, o, big, NULL)), "AC", "lines: a million lines");
	free(o);
}

static void test_tokens(void)
{
	pd_checker_cfg T = M(PD_CHK_TOKENS);
	IS(T, "1 2 3", "1\n2\n3\n", "AC", "tokens: any whitespace separates");
	IS(T, "  1\t2\r\n3  \n\n", "1 2 3", "AC", "tokens: leading, trailing, CR and tabs ignored");
	IS(T, "1 2", "1 2 3", "WA", "tokens: a missing token");
	IS(T, "1 2 3 4", "1 2 3", "WA", "tokens: an extra token");
	IS(T, "", "", "AC", "tokens: empty equals empty");
	IS(T, " \n\t", "", "AC", "tokens: whitespace only is empty");
	IS(T, "abc", "ABC", "WA", "tokens: case counts");
	IS(CI(PD_CHK_TOKENS), "abc", "ABC", "AC", "tokens, case-insensitive");
	IS(T, "1.0", "1", "WA", "tokens: 1.0 is not the token 1");
	IS(T, "\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9", "AC", "tokens: UTF-8 compared as bytes");
	IS(CI(PD_CHK_TOKENS), "\xc3\x89", "\xc3\xa9", "WA", "tokens, case-insensitive: ASCII folding only");
}

static void test_numeric(void)
{
	pd_checker_cfg N = M(PD_CHK_NUMERIC);
	IS(N, "3.1415927", "3.14159265", "AC", "numeric: within 1e-6");
	IS(N, "3.1416", "3.14159265", "WA", "numeric: outside 1e-6");
	IS(N, "1e-7", "0", "AC", "numeric: 1e-7 against 0 is within the absolute tolerance");
	IS(N, "0.000001", "0", "AC", "numeric: exactly the tolerance is accepted");
	IS(N, "0.0000011", "0", "WA", "numeric: just above it is not");
	IS(N, "-0", "0", "AC", "numeric: -0 is 0 (integers)");
	IS(N, "-0.0", "0.0", "AC", "numeric: -0.0 is 0.0");
	IS(N, "nan", "NaN", "AC", "numeric: NaN matches NaN");
	IS(N, "1", "nan", "WA", "numeric: a number does not match NaN");
	IS(N, "nan", "1", "WA", "numeric: NaN does not match a number");
	IS(N, "inf", "Infinity", "AC", "numeric: inf matches Infinity");
	IS(N, "-inf", "inf", "WA", "numeric: -inf is not inf");
	IS(N, "1e308", "inf", "WA", "numeric: a large number is not inf");
	IS(N, "10000000000000000001", "10000000000000000000", "WA",
	   "numeric: integers are exact (a double would call these equal)");
	IS(N, "007", "7", "AC", "numeric: leading zeros of an integer");
	IS(N, "5.0", "5", "AC", "numeric: 5.0 against the integer 5 is a float comparison");
	IS(N, "0x10", "16", "WA", "numeric: hex is not a number here");
	IS(N, "1.5abc", "1.5", "WA", "numeric: trailing garbage is not a number");
	IS(N, "abc", "1.5", "WA", "numeric: a word where a number is expected");
	IS(N, "YES 2.0000001", "YES 2", "AC", "numeric: words compared as tokens, numbers with tolerance");
	IS(N, "1 2", "1 2 3", "WA", "numeric: a missing number");
	IS(N, "", "", "AC", "numeric: empty equals empty");
	pd_checker_cfg A = N;
	A.tolerance = PD_TOL_ABS;
	IS(A, "1000001", "1000000.0", "WA", "numeric, abs: 1 off a million is outside 1e-6 absolute");
	pd_checker_cfg R = N;
	R.tolerance = PD_TOL_REL;
	IS(R, "1000000.5", "1000000.0", "AC", "numeric, rel: 0.5 off a million is within 1e-6 relative");
	IS(R, "1e-7", "0", "WA", "numeric, rel: nothing is relatively close to 0 but 0");
	IS(N, "1000000.5", "1000000.0", "AC", "numeric, abs or rel: the relative one accepts");
	pd_checker_cfg W = N;
	W.abs_tol = W.rel_tol = 0.01;
	IS(W, "3.14", "3.14159", "AC", "numeric: a looser tolerance");
}

static void test_yesno(void)
{
	pd_checker_cfg Y = M(PD_CHK_YESNO);
	IS(Y, "YES\n", "yes\n", "AC", "yesno: any case");
	IS(Y, "Yes\nno\n", "YES NO", "AC", "yesno: several answers");
	IS(Y, "no", "yes", "WA", "yesno: no is not yes");
	IS(Y, "yeah", "yes", "WA", "yesno: only yes or no");
	IS(Y, "", "yes", "WA", "yesno: an empty output");
	IS(Y, "yes yes", "yes", "WA", "yesno: an extra answer");
}

static void test_unordered(void)
{
	pd_checker_cfg U = M(PD_CHK_UNORDERED_LINES);
	IS(U, "b\na\nc\n", "a\nb\nc\n", "AC", "unordered_lines: any order");
	IS(U, "b \r\na\n", "a\nb\n", "AC", "unordered_lines: trailing whitespace ignored");
	IS(U, "a\na\nb\n", "a\nb\nb\n", "WA", "unordered_lines: a multiset, not a set");
	IS(U, "a\n", "a\nb\n", "WA", "unordered_lines: a missing line");
	IS(U, "", "", "AC", "unordered_lines: empty");
	pd_checker_cfg T = M(PD_CHK_MULTISET_TOKENS);
	IS(T, "3 1 2", "1\n2\n3", "AC", "multiset_tokens: any order, any whitespace");
	IS(T, "1 1 2", "1 2 2", "WA", "multiset_tokens: counts matter");
	IS(T, "1 2", "1 2 3", "WA", "multiset_tokens: a missing token");
	IS(CI(PD_CHK_MULTISET_TOKENS), "B a", "A b", "AC", "multiset_tokens, case-insensitive");
	char m[256];
	chk(T, S("1 1 2"), S("1 2 2"), m);
	ok(strstr(m, "'1'") || strstr(m, "'2'"), "multiset_tokens: the message names a token: %s", m);
}

static void test_json(void)
{
	pd_checker_cfg J = M(PD_CHK_JSON_VALUE);
	IS(J, "[1, 2]\n", "[1,2]", "AC", "json_value: whitespace ignored (a tuple prints as a list)");
	IS(J, "{\"b\":1,\"a\":2}", "{\"a\":2,\"b\":1}", "AC", "json_value: key order ignored");
	IS(J, "1.0", "1", "AC", "json_value: 1.0 equals 1");
	IS(J, "[1,2]", "[2,1]", "WA", "json_value: list order counts");
	IS(J, "\"1\"", "1", "WA", "json_value: a string is not a number");
	IS(J, "true", "1", "WA", "json_value: true is not 1");
	IS(J, "null", "null", "AC", "json_value: null");
	IS(J, "", "1", "WA", "json_value: empty output is not a value");
	IS(J, "1 2", "1", "WA", "json_value: two values are not one");
	IS(J, "[1]", "not json", "JE", "json_value: an answer that is not JSON is the judge's failure");
	IS(J, "0.30000000000000004", "0.3", "AC", "json_value: float rounding");
	IS(J, "{\"a\":[1,{\"b\":null}]}", "{\"a\":[1,{\"b\":null}]}", "AC", "json_value: nested");
	IS(J, "{\"a\":1}", "{\"a\":1,\"b\":2}", "WA", "json_value: a missing key");
	/* an integer answer is compared exactly against any number, as Python's == (issue 39) */
	IS(J, "1000000000.0", "999999999", "WA", "json_value: an integer answer: 1e9 as a float is not 999999999");
	IS(J, "9007199254740992.0", "9007199254740993", "WA",
	   "json_value: an integer answer past double precision: 2^53 as a float is not 2^53+1");
	IS(J, "9007199254740992.0", "9007199254740992", "AC", "json_value: an integral float equal to the integer");
	IS(J, "[3.5]", "[3]", "WA", "json_value: a fraction is never an integer answer");
	IS(J, "-0.0", "0", "AC", "json_value: -0.0 equals 0 (as in Python)");
	IS(J, "1e30", "9223372036854775807", "WA", "json_value: a float past 64 bits is not a 64-bit integer");
	IS(J, "9223372036854775807.0", "9223372036854775807", "WA",
	   "json_value: 2^63-1 as a float rounds to 2^63, which is not it");
	IS(J, "999999999", "1000000000.0", "AC", "json_value: a float answer keeps its tolerance");
	/* integers past 64 bits (Python's have no bound): compared by their decimal text */
	IS(J, "[1180591620717411303424]", "[1180591620717411303424]", "AC", "json_value: 2**70 equals itself");
	IS(J, "1180591620717411303425", "1180591620717411303424", "WA", "json_value: 2**70+1 is not 2**70");
	IS(J, "1.180591620717411303424e21", "1180591620717411303424", "AC",
	   "json_value: an integral float of exactly 2**70 equals it (as in Python)");
	IS(J, "1180591620717411303425.0", "1180591620717411303425", "WA",
	   "json_value: 2**70+1 as a float rounds to 2**70, which is not it");
	IS(J, "-99999999999999999999", "-99999999999999999999", "AC", "json_value: a long negative integer");
	IS(J, "99999999999999999999", "-99999999999999999999", "WA", "json_value: its sign counts");
	IS(J, "5", "99999999999999999999", "WA", "json_value: a short integer is not a long one");
	IS(J, "99999999999999999999", "1e20", "AC", "json_value: a long integer output near a float answer");
	IS(J, "[1.2345678901234567890123]", "[1.2345678901234567890123]", "AC",
	   "json_value: a fraction's long digits are not an integer of their own");
	IS(J, "\"1180591620717411303424\"", "1180591620717411303424", "WA", "json_value: a string is not a long integer");
	IS(J, "\"x\"", "\"x\"", "AC", "json_value: strings still compare");
	IS(J, "01180591620717411303424", "1180591620717411303424", "WA", "json_value: a leading zero is not JSON");
	char m[256];
	pd_checker_cfg JC = M(PD_CHK_JSON_VALUE);
	chk(JC, "[1180591620717411303425]", 24, "[1180591620717411303424]", 24, m);
	ok(strstr(m, "[1180591620717411303424]") && strstr(m, "[1180591620717411303425]") && !strstr(m, "bigint"),
	   "json_value: the message shows the long integers as numbers: %s", m);
}

static pd_result res(pd_status st, int code, const char *out, const char *err)
{
	pd_result r;
	memset(&r, 0, sizeof r);
	r.status = st;
	r.exit_code = code;
	r.out.head = (char *)out;
	r.out.head_len = strlen(out);
	r.err.head = (char *)err;
	r.err.head_len = strlen(err);
	return r;
}

static void test_programs(void)
{
	pd_check_result c;
	pd_result r = res(PD_OK, 0, "", "ok 3 numbers\n");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	ok(c.status == PD_T_AC && c.score == 1 && strstr(c.message, "3 numbers"), "testlib 0: accepted, its message kept");
	r = res(PD_RE, 1, "", "wrong answer 2nd number differs");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	ok(c.status == PD_T_WA && c.score == 0, "testlib 1: wrong answer");
	r = res(PD_RE, 2, "", "");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	is_str(pd_tstatus_name(c.status), "PE", "testlib 2: presentation error");
	r = res(PD_RE, 3, "", "FAIL answer file is broken");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	is_str(pd_tstatus_name(c.status), "JE", "testlib 3: the checker failed, a judge error");
	r = res(PD_RE, 7, "0.25\n", "points 0.25");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	ok(c.status == PD_T_PC && c.score == 0.25, "testlib 7: partial, the score from stdout");
	r = res(PD_RE, 7, "", "points 0.5 half");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	ok(c.status == PD_T_PC && c.score == 0.5, "testlib 7: the score from stderr when stdout has none");
	r = res(PD_RE, 7, "1.5", "");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	is_str(pd_tstatus_name(c.status), "JE", "testlib 7: a score outside [0,1] is the checker's failure");
	r = res(PD_RE, 7, "", "");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	is_str(pd_tstatus_name(c.status), "JE", "testlib 7 without a score: judge error");
	r = res(PD_RE, 99, "", "");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	is_str(pd_tstatus_name(c.status), "JE", "an unknown exit code: judge error");
	r = res(PD_TO, 0, "", "");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	is_str(pd_tstatus_name(c.status), "JE", "a checker that times out: judge error, not the model's");
	r = res(PD_SG, 0, "", "");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	is_str(pd_tstatus_name(c.status), "JE", "a checker that crashes: judge error");
	r = res(PD_RE, 42, "", "");
	pd_check_program_verdict(PD_CONV_KATTIS, &r, "all good\n", &c);
	ok(c.status == PD_T_AC && strstr(c.message, "all good"), "Kattis 42: accepted, judgemessage kept");
	r = res(PD_RE, 43, "", "");
	pd_check_program_verdict(PD_CONV_KATTIS, &r, NULL, &c);
	is_str(pd_tstatus_name(c.status), "WA", "Kattis 43: wrong");
	r = res(PD_OK, 0, "", "");
	pd_check_program_verdict(PD_CONV_KATTIS, &r, NULL, &c);
	is_str(pd_tstatus_name(c.status), "JE", "Kattis 0 is not a verdict: judge error");
	r = res(PD_RE, 1, "", "\xff\x01 bad bytes");
	pd_check_program_verdict(PD_CONV_TESTLIB, &r, NULL, &c);
	json_t *s = json_string(c.message);
	ok(s != NULL, "a checker's non-UTF-8 message becomes printable text");
	json_decref(s);
}

static void test_modes(void)
{
	for (int m = 0; m < PD_CHK_COUNT; m++)
		is_int(pd_check_mode_parse(pd_check_mode_name((pd_check_mode)m)), m, "mode %s round-trips",
		       pd_check_mode_name((pd_check_mode)m));
	is_int(pd_check_mode_parse("fuzzy"), -1, "an unknown mode");
	pd_check_result r;
	pd_err e = {0};
	pd_checker_cfg c = M(PD_CHK_PROGRAM);
	ok(pd_check(&c, "", 0, "", 0, &r, &e) < 0, "pd_check refuses a program mode: %s", e.msg);
}

int main(void)
{
	plan(146);
	test_exact();
	test_lines();
	test_tokens();
	test_numeric();
	test_yesno();
	test_unordered();
	test_json();
	test_programs();
	test_modes();
	return done();
}
