/* The daemon's log lines (log.h): jansson builds the object, so escaping is jansson's and the
 * UTF-8 repair is the record's (pd_json_bytes); only the timestamp is formatted here, from integers
 * (a double would print 1764840000.1229999). */
#define _GNU_SOURCE
#include "log.h"
#include "paddock.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool log_on = true;

void pd_log_enable(bool on)
{
	__atomic_store_n(&log_on, on, __ATOMIC_RELAXED);
}

/* A value cut to PD_LOG_VALUE_MAX bytes, not inside a UTF-8 sequence, marked with "...". */
static json_t *value_text(const char *s)
{
	size_t n = strlen(s);
	if (n <= PD_LOG_VALUE_MAX)
		return pd_json_bytes(s, n);
	size_t cut = PD_LOG_VALUE_MAX - 3;
	while (cut && ((unsigned char)s[cut] & 0xc0) == 0x80)
		cut--; /* s[cut] starts the next character (or is ASCII): the head ends before it */
	char buf[PD_LOG_VALUE_MAX + 1];
	memcpy(buf, s, cut);
	memcpy(buf + cut, "...", 3);
	return pd_json_bytes(buf, cut + 3);
}

static bool reserved(const json_t *o, const char *key)
{
	return !key || !strcmp(key, "ts") || !strcmp(key, "level") || !strcmp(key, "msg") ||
	       json_object_get(o, key);
}

char *pd_log_line(const char *level, const char *msg, const pd_log_field *f, size_t n)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "level", value_text(level ? level : "info"));
	json_object_set_new(o, "msg", value_text(msg ? msg : ""));
	for (size_t i = 0; i < n; i++) {
		if (reserved(o, f[i].key))
			continue;
		json_t *v = f[i].type == PD_LOG_STR    ? (f[i].s ? value_text(f[i].s) : json_null())
			    : f[i].type == PD_LOG_INT  ? json_integer((json_int_t)f[i].i)
			    : f[i].type == PD_LOG_BOOL ? json_boolean(f[i].u)
			    /* json_int_t is signed: a counter past 2^63 is shown as a real */
			    : f[i].u > INT64_MAX ? json_real((double)f[i].u)
						 : json_integer((json_int_t)f[i].u);
		json_object_set_new(o, f[i].key, v);
	}
	char *body = pd_json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!body)
		return NULL;
	uint64_t ms = pd_wall_us() / 1000;
	/* body is "{...}": the timestamp goes in front of its first member */
	char *line = NULL;
	if (asprintf(&line, "{\"ts\":%llu.%03u,%s\n", (unsigned long long)(ms / 1000), (unsigned)(ms % 1000), body + 1) < 0)
		line = NULL;
	free(body);
	return line;
}

void pd_log_fields(const char *level, const char *msg, const pd_log_field *f, size_t n)
{
	if (!__atomic_load_n(&log_on, __ATOMIC_RELAXED))
		return;
	char *line = pd_log_line(level, msg, f, n);
	if (!line)
		return;
	/* one write per line: lines from many threads never interleave */
	ssize_t w = write(STDERR_FILENO, line, strlen(line));
	(void)w;
	free(line);
}
