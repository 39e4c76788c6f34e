/* Shared by the three run APIs (server/api/native.c, sandboxfusion.c, piston.c; api_common.c
 * defines these) and by job.c, which frees what they allocate. Internal to server/. */
#ifndef PADDOCK_SERVER_API_H
#define PADDOCK_SERVER_API_H

#include "server.h"

void api_free_vec(char **v);
/* prefix + the request's args (non-strings as ""), NULL-terminated */
char **api_run_argv(const char *const *prefix, json_t *args);
/* sh -c CMD, the request's args as $1... */
char **api_sh_argv(const char *cmd, json_t *args);
/* Adds a file to write before the run (a relative path is under /work). */
int api_add_file(pd_job *j, const char *path, const char *data, size_t len);
/* "<name>.<key>" naming a field in an error message, cut at a character boundary. */
void api_field_name(char *out, size_t size, const char *name, const char *key);
int api_check_path(const char *field, const char *p, pd_err *e);
/* The language's template, source file, compile and run steps. */
int api_set_language(pd_job *j, const char *lang, const char *code, size_t code_len, json_t *args, pd_err *e);
/* "stdin": a string fed to the run step (null or absent: none). */
int api_parse_stdin(pd_job *j, json_t *in, pd_err *e);
/* An object of path: base64 content (native files_base64, SandboxFusion files). */
int api_parse_b64_files(pd_job *j, json_t *files, const char *name, bool null_ok, pd_err *e);
/* "fetch_files": paths to return after the run. */
int api_parse_fetch(pd_job *j, json_t *fetch, pd_err *e);
/* o[key] as seconds (0 to 86400) into *ms; absent or null leaves *ms. */
int api_get_seconds(json_t *o, const char *key, const char *field, uint64_t *ms, pd_err *e);
char **api_str_array(json_t *a, const char *field, size_t max, pd_err *e);
/* task_id, problem_id, problem_version, priority, deadline_ms; and "audit" (true, false, null,
 * or a policy object: lib/auditpolicy.c, docs/audit.md), the same in every API. */
int api_common_ids(pd_job *j, json_t *req, pd_err *e);
/* "image": an imported image's name or digest (every API; a path is refused). */
int api_parse_image(pd_job *j, json_t *req, pd_err *e);
/* The tier a job ran under (its run's, else its compile's, else the one asked for, else
 * "container"): every API's record names it. */
const char *api_isolation_of(const pd_job *j);
/* "isolation" (v, may be NULL): a tier's name into out, or "" when not given; 400 otherwise */
int api_parse_isolation(json_t *v, char *out, size_t len, pd_err *e);
/* "network": none, loopback, allowlist or host (which of them the daemon allows: netmodes.c) */
int api_parse_network(pd_job *j, json_t *req, pd_err *e);
/* The result record's stdout or stderr text (a new reference; "" if absent). */
json_t *api_record_text(json_t *rec, const char *stream);
/* The fetched files: path -> base64, null for one that could not be read. */
json_t *api_files_json(const pd_job *j);
/* The job's audit: {"events": [...], "dropped": N, "counts": {kind: N}} over its steps, or null
 * when it was not audited. */
json_t *api_audit_json(const pd_job *j);
/* The process level: {"status": "pass"|"fail"|"not_audited", "reasons": [...], "failed": [...]}. */
json_t *api_process_json(const pd_job *j);

#endif
