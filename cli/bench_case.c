/* paddock bench: the failures of a worker and of a case, recorded where the report finds them
 * (bench_case.h holds what a case and a worker are). */
#include "bench_case.h"

#include <stdarg.h>
#include <stdio.h>

int bench_record_failure(worker *w, const char *fmt, ...)
{
	w->failed++;
	if (!w->error[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->error, sizeof w->error, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A failure of a case as a whole (its pools would not start, its residue), not of one worker. */
int bench_case_failure(bench_case *bc, const char *fmt, ...)
{
	bc->failed++;
	if (!bc->error[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(bc->error, sizeof bc->error, fmt, ap);
		va_end(ap);
	}
	return -1;
}
