/* Fuzzes the built-in checkers (pd_check): the input is split at its first 0xff 0x00 pair into the
 * candidate's output and the answer (no pair: the output is the answer), and checked under every
 * built-in mode, case-sensitive and not.
 *
 *  - the result is AC, WA, PE, PC or JE, with a score in [0,1] (1 exactly for AC);
 *  - the message is printable ASCII (the checkers escape every other byte);
 *  - an output equal to the answer is accepted by every mode (json_value: when the answer is JSON;
 *    yesno: when it is all yes and no);
 *  - lines: appending "\r\n" or trailing spaces to the output does not change the verdict. */
#include "fuzz_common.h"
#include "judge/judge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t cut = size;
	for (size_t i = 0; i + 1 < size; i++)
		if (data[i] == 0xff && data[i + 1] == 0) {
			cut = i;
			break;
		}
	const char *out = s, *ans = cut < size ? s + cut + 2 : s;
	size_t ol = cut, al = cut < size ? size - cut - 2 : size;
	for (int m = 0; m < PD_CHK_PROGRAM; m++)
		for (int ci = 0; ci < 2; ci++) {
			pd_checker_cfg c = pd_checker_default((pd_check_mode)m);
			c.case_insensitive = ci;
			pd_check_result r;
			pd_err e = {0};
			FUZZ_CHECK(pd_check(&c, out, ol, ans, al, &r, &e) == 0, "mode %d failed: %s", m, e.msg);
			FUZZ_CHECK(r.status == PD_T_AC || r.status == PD_T_WA || r.status == PD_T_PE || r.status == PD_T_PC ||
					   r.status == PD_T_JE,
				   "status %d", r.status);
			FUZZ_CHECK(r.score >= 0 && r.score <= 1 && (r.status != PD_T_AC || r.score == 1), "score %g", r.score);
			for (const char *p = r.message; *p; p++)
				FUZZ_CHECK(*p >= 0x20 && *p < 0x7f, "message byte 0x%02x: %s", (unsigned char)*p, r.message);
			FUZZ_CHECK(pd_check(&c, ans, al, ans, al, &r, &e) == 0, "self");
			if (m == PD_CHK_JSON_VALUE) /* an answer that is not JSON is the judge's failure */
				FUZZ_CHECK(r.status == PD_T_AC || r.status == PD_T_JE, "json_value: the answer itself: %s",
					   r.message);
			else if (m != PD_CHK_YESNO) /* yesno: only yes and no are answers */
				FUZZ_CHECK(r.status == PD_T_AC, "mode %d rejects the answer itself: %s", m, r.message);
		}
	/* lines: trailing whitespace and a CRLF ending change nothing */
	pd_checker_cfg c = pd_checker_default(PD_CHK_LINES);
	pd_check_result a, b;
	char *o2 = malloc(ol + 4);
	memcpy(o2, out, ol);
	memcpy(o2 + ol, " \r\n", 3);
	pd_err e = {0};
	pd_check(&c, out, ol, ans, al, &a, &e);
	pd_check(&c, o2, ol + 3, ans, al, &b, &e);
	/* unless the output ends inside a line whose trailing spaces were part of the answer's... no:
	 * trailing whitespace is always ignored, so the verdict must be the same */
	FUZZ_CHECK(a.status == b.status, "lines: a trailing \" \\r\\n\" changed %s to %s", pd_tstatus_name(a.status),
		   pd_tstatus_name(b.status));
	free(o2);
	return 0;
}
