/* Fuzzes pd_job_from_piston: the input is a Piston /api/v2/execute request body.
 *
 * Beyond "no crash, no leak, no undefined behaviour" (ASan, LSan, UBSan incl. float-cast-overflow):
 *  - a refused request has an error message that is valid UTF-8, so the 400 the server sends
 *    carries it (jansson drops a non-UTF-8 string and the client would get "{}");
 *  - an accepted request is a runnable job: a template, a NULL-terminated run argv, absolute file
 *    paths with NUL-terminated data, K=V env entries, an absolute cwd, a memory limit of 0 or at
 *    least 4 MiB;
 *  - the job renders through pd_job_to_json, pd_job_to_run_code and pd_job_to_piston into JSON that
 *    re-parses and has every field of its schema (no field silently dropped);
 *  - pd_job_free releases everything (LSan), on the error paths too. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_request(data, size, pd_job_from_piston, 0);
}
