/* The daemon's log: one JSON object per line on stderr, {"ts", "level", "msg", <fields>}.
 *
 * Fields are typed key/value pairs, never a printf fragment: every string value is escaped (quotes,
 * backslashes, control characters), bytes that are not UTF-8 become U+FFFD and long values are cut,
 * so a client's text (a task_id, a path, an error quoting either) can never add or change a field
 * of the line. Keys are the program's own constants.
 *
 *   pd_log("info", "session opened", PD_LS("session_id", id), PD_LU("attempt", n));
 */
#ifndef PADDOCK_SERVER_LOG_H
#define PADDOCK_SERVER_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { PD_LOG_STR, PD_LOG_INT, PD_LOG_UINT, PD_LOG_BOOL } pd_log_type;

typedef struct pd_log_field {
	const char *key;
	pd_log_type type;
	const char *s; /* NULL: written as null */
	int64_t i;
	uint64_t u;
} pd_log_field;

#define PD_LS(k, v) ((pd_log_field){.key = (k), .type = PD_LOG_STR, .s = (v)})
#define PD_LI(k, v) ((pd_log_field){.key = (k), .type = PD_LOG_INT, .i = (int64_t)(v)})
#define PD_LU(k, v) ((pd_log_field){.key = (k), .type = PD_LOG_UINT, .u = (uint64_t)(v)})
#define PD_LB(k, v) ((pd_log_field){.key = (k), .type = PD_LOG_BOOL, .u = (v) ? 1 : 0})

/* A string value longer than this is cut (at a character boundary) and ends with "...": a line
 * stays one write(2), and a 4 KiB id cannot push the line's other fields out. */
#define PD_LOG_VALUE_MAX 512

/* Whether pd_log writes (default yes; the batch runner turns it off unless asked). */
void pd_log_enable(bool on);
/* Writes one line to fd 2 in one write(2) (lines of many threads never interleave). A field whose
 * key is ts, level or msg, or repeats an earlier key, is dropped: the line has exactly one of each. */
void pd_log_fields(const char *level, const char *msg, const pd_log_field *f, size_t n);
/* The same line as a malloc'd string with its newline (NULL when out of memory): what pd_log_fields
 * writes, for tests. */
char *pd_log_line(const char *level, const char *msg, const pd_log_field *f, size_t n);

#define pd_log(level, msg, ...)                                                                 \
	do {                                                                                    \
		const pd_log_field pd_log_f_[] = {{.key = NULL}, __VA_ARGS__};                  \
		pd_log_fields((level), (msg), pd_log_f_ + 1, sizeof pd_log_f_ / sizeof pd_log_f_[0] - 1); \
	} while (0)

#endif
