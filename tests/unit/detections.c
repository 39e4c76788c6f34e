/* detections.c: the cheat-detection counters (server/detections.c). An audited job counts under
 * paddock_audited_attempts_total{template,problem} and, when its process level failed, under
 * paddock_audit_detections_total for each kind that failed it; a job not audited counts nowhere.
 * Problem ids are request fields: past 256 distinct ones (and for a client's "none" or "other")
 * they count under problem="other", so a flood of inline problems cannot grow /metrics without
 * bound, and nothing is lost from the totals. */
#define _GNU_SOURCE
#include "server.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *render(pd_detect *d)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	pd_detect_render(d, f);
	fclose(f);
	return out;
}

/* the value of the sample line that starts with key + " " (-1: none) */
static long long value(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return atoll(p + n + 1);
	return -1;
}

static int count_lines(const char *text, const char *prefix)
{
	int n = 0;
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		n += !strncmp(p, prefix, strlen(prefix));
	return n;
}

static void job(pd_detect *d, const char *tpl, const char *prob, pd_process_status st, uint32_t kinds)
{
	pd_job j;
	memset(&j, 0, sizeof j);
	snprintf(j.template_name, sizeof j.template_name, "%s", tpl);
	snprintf(j.problem_id, sizeof j.problem_id, "%s", prob);
	j.verdict.status = st;
	j.verdict.failed_kinds = kinds;
	pd_detect_job(d, &j);
}

int main(void)
{
	plan(10);
	pd_detect *d = pd_detect_new();
	job(d, "python", "sum", PD_PROCESS_PASS, 0);
	job(d, "python", "sum", PD_PROCESS_FAIL, 1u << PD_AK_TAMPER | 1u << PD_AK_TRAP);
	job(d, "python", "sum", PD_PROCESS_NOT_AUDITED, 0);
	job(d, "bash", "", PD_PROCESS_FAIL, 1u << PD_AK_EGRESS);
	char *t = render(d);
	is_int(value(t, "paddock_audited_attempts_total{template=\"python\",problem=\"sum\"}"), 2,
	       "two audited attempts of sum (the one not audited is not counted)");
	is_int(value(t, "paddock_audit_detections_total{kind=\"tamper\",template=\"python\",problem=\"sum\"}"), 1,
	       "one tamper detection");
	is_int(value(t, "paddock_audit_detections_total{kind=\"trap_read\",template=\"python\",problem=\"sum\"}"), 1,
	       "the same attempt counts under each kind that failed it");
	is_int(value(t, "paddock_audit_detections_total{kind=\"egress\",template=\"python\",problem=\"sum\"}"), 0,
	       "a kind never detected has its series at 0");
	is_int(value(t, "paddock_audit_detections_total{kind=\"egress\",template=\"bash\",problem=\"none\"}"), 1,
	       "a run without a problem_id counts under problem=\"none\"");
	free(t);

	/* 400 more distinct problems, each with one detected attempt; and a client naming "other" */
	for (int i = 0; i < 400; i++) {
		char id[32];
		snprintf(id, sizeof id, "inline-%d", i);
		job(d, "python", id, PD_PROCESS_FAIL, 1u << PD_AK_TAMPER);
	}
	job(d, "python", "other", PD_PROCESS_FAIL, 1u << PD_AK_TAMPER);
	t = render(d);
	int series = count_lines(t, "paddock_audited_attempts_total{");
	ok(series <= 258 + 2, "402 problems: %d series of paddock_audited_attempts_total (bounded)", series);
	is_int(value(t, "paddock_audited_attempts_total{template=\"python\",problem=\"inline-254\"}"), 1,
	       "the 256th problem seen still has its own label");
	is_int(value(t, "paddock_audited_attempts_total{template=\"python\",problem=\"inline-255\"}"), -1,
	       "the 257th has none");
	/* sum took one label, inline-0..254 the 255 left: inline-255..399 and the client's "other" fold */
	is_int(value(t, "paddock_audit_detections_total{kind=\"tamper\",template=\"python\",problem=\"other\"}"), 146,
	       "the later ones (and a client's \"other\") count under problem=\"other\"");
	long long total = 0;
	for (const char *p = t; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, "paddock_audit_detections_total{kind=\"tamper\",template=\"python\"", 62))
			total += atoll(strrchr(strndupa(p, strcspn(p, "\n")), ' ') + 1);
	is_int(total, 402, "nothing is lost: the tamper detections of python add up to 402");
	free(t);
	pd_detect_free(d);
	return done();
}
