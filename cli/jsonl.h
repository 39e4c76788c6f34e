/* The request lines of paddock batch and paddock run (cli/jsonl.c): JSON objects, one a line.
 * Parsed apart from the pools and the scheduler, so that the commands and the fuzzer
 * (fuzz/fuzz_cli_jsonl.c) run the same code. */
#ifndef PADDOCK_CLI_JSONL_H
#define PADDOCK_CLI_JSONL_H

#include "server.h"
#include "intake.h"

#include <jansson.h>
#include <stdio.h>

enum { CLI_LINE_EOF = 0, CLI_LINE_OK = 1, CLI_LINE_NOT_JSON = -1, CLI_LINE_NOT_OBJECT = -2 };

/* The next request of in: blank lines are skipped, *lineno counts every line read. CLI_LINE_OK
 * with *out the object (caller decrefs); CLI_LINE_NOT_JSON (je says why) or CLI_LINE_NOT_OBJECT
 * for a line that is not a request; CLI_LINE_EOF at the end. *line and *cap: getline's buffer. */
int cli_jsonl_next(FILE *in, char **line, size_t *cap, int *lineno, json_t **out, json_error_t *je);

/* ---- paddock batch ------------------------------------------------------------------------- */

#define CLI_BATCH_MAX_ARGV 256

typedef struct cli_batch_req {
	json_t *id;                /* echoed in the result line as given (any JSON); NULL when none */
	const char *template_name; /* "bash" when none */
	char *argv[CLI_BATCH_MAX_ARGV + 1];
	pd_exec_opts x;            /* argv, stdin, wall and cpu limits, cwd (NULL: the template's) */
	json_t *files;             /* object of path: text, or NULL */
} cli_batch_req;

/* A request line: {"id", "template", "cmd" | "shell", "files", "stdin", "wall_time", "cpu_time",
 * "cwd"}. Every value is taken whole or refused (err says why, in UTF-8; -1): strings with a NUL
 * byte, cmd and shell together, a stdin, cwd or limit of the wrong type, files that are not an
 * object of path (1 to 1023 bytes) to text. Strings point into j. */
int cli_batch_parse(json_t *j, cli_batch_req *r, char *err, size_t errlen);

/* The result line of a request that could not run (no newline). malloc'd. */
char *cli_batch_error_line(int line, json_t *id, const char *msg);

/* ---- paddock run --------------------------------------------------------------------------- */

/* The job of a request line, parsed only (no rule of the intake applied: paddock run --cluster's
 * nodes apply them): SandboxFusion's /run_code when "schema" is "run_code" (or, without a schema,
 * when it has one of run_code's own fields), else native; "schema" is removed from o. NULL when
 * refused: e says why. */
pd_job *cli_run_job(json_t *o, bool *run_code, pd_err *e);
/* The API of a request line (its row: server/intake.h), as cli_run_job picks it; "schema" is
 * removed from o. paddock run puts the line through the intake with it. */
const pd_api *cli_run_api(json_t *o);

/* The result line of a line refused as a request (malformed, a bad field): {"line", "task_id"
 * when known, "refused": "bad_request", "error"}, no status or failure class, as it is no attempt.
 * No newline; malloc'd. */
char *cli_run_refusal(int line, const char *task_id, const char *msg);
/* The result line of a valid request that never ran: status XX and failure class f (queue_timeout
 * when its deadline could not be met, internal_error when the infrastructure could not take it),
 * with "error" saying why. No newline; malloc'd. */
char *cli_run_unrun(int line, const char *task_id, pd_failure f, const char *msg);

#endif
