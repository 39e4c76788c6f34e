/* log.c: the daemon's log lines (server/log.c). Hostile values (quotes, backslashes, control
 * characters, bytes that are not UTF-8, 4 KiB strings) go through pd_log with stderr redirected
 * to a file; every line read back must be one JSON object with exactly the keys written, each
 * string value as given (repaired, cut) and nothing else. */
#define _GNU_SOURCE
#include "server.h"
#include "tap.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static char path[] = "/tmp/paddock-unit-log-XXXXXX";

/* The lines written to the file since the last call, split; *n of them. */
static char **read_lines(int fd, size_t *n)
{
	static off_t off;
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap + 1);
	ssize_t r;
	while ((r = pread(fd, buf + len, cap - len, off + (off_t)len)) > 0)
		len += (size_t)r;
	buf[len] = 0;
	off += (off_t)len;
	char **v = calloc(len + 2, sizeof *v);
	*n = 0;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		v[(*n)++] = strdup(l);
	free(buf);
	return v;
}

/* One line: valid JSON, an object whose keys are exactly want (in any order), no others. */
static json_t *parse_exact(const char *line, const char *const *want, size_t nwant, const char *what)
{
	json_error_t je;
	json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &je);
	if (!ok(o && json_is_object(o), "%s: the line is one JSON object", what)) {
		printf("#   %s\n#   line: %.300s\n", je.text, line);
		return NULL;
	}
	bool exact = json_object_size(o) == nwant;
	for (size_t i = 0; i < nwant; i++)
		exact &= json_object_get(o, want[i]) != NULL;
	if (!ok(exact, "%s: exactly the keys written (%zu)", what, nwant))
		printf("#   line: %.300s\n", line);
	return o;
}

int main(void)
{
	plan(27);
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	unlink(path);
	int saved = dup(2);
	dup2(fd, 2);

	static const char forged[] = "x\",\"level\":\"error\",\"msg\":\"forged";
	static const char slashes[] = "a\\\"b\\\\c\\";
	static const char controls[] = "tab\there\nnewline\rcr\x01\x1b[31mesc\x7f";
	static const char bad_utf8[] = "ok \xc3 half \xff\xfe bytes \xe2\x82 end \xed\xa0\x80 surrogate";
	static const char good_utf8[] = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8e";
	char *big = malloc(4097);
	memset(big, 'A', 4096);
	big[4096] = 0;
	/* a 4 KiB value of 2-byte characters: the cut must not split one */
	char *big2 = malloc(4097);
	for (int i = 0; i < 4096; i += 2)
		memcpy(big2 + i, "\xc3\xa9", 2);
	big2[4096] = 0;

	pd_log("info", "hostile", PD_LS("task_id", forged), PD_LS("slashes", slashes),
	       PD_LS("controls", controls), PD_LS("bad_utf8", bad_utf8), PD_LS("good", good_utf8),
	       PD_LS("big", big), PD_LS("big2", big2), PD_LU("n", 18446744073709551615ull),
	       PD_LI("neg", -5), PD_LB("flag", true), PD_LS("none", NULL));
	/* the level and msg are escaped too, and a field may not replace ts, level or msg */
	pd_log(forged, controls, PD_LS("level", "forged"), PD_LS("msg", "forged"), PD_LS("ts", "0"),
	       PD_LS("task_id", "one"), PD_LS("task_id", "two"));
	pd_log("info", "no fields");
	pd_log_enable(false);
	pd_log("info", "not written", PD_LS("k", "v"));
	pd_log_enable(true);

	dup2(saved, 2);
	size_t n;
	char **lines = read_lines(fd, &n);
	is_int(n, 3, "three lines: one per pd_log while enabled, none split by a value's newline");

	static const char *const k1[] = {"ts",   "level", "msg", "task_id", "slashes", "controls", "bad_utf8",
					 "good", "big",   "big2", "n",      "neg",     "flag",     "none"};
	json_t *o = n > 0 ? parse_exact(lines[0], k1, sizeof k1 / sizeof k1[0], "hostile values") : NULL;
	if (!o)
		o = json_object();
	is_str(json_string_value(json_object_get(o, "level")), "info", "level is the one written, not forged");
	is_str(json_string_value(json_object_get(o, "msg")), "hostile", "msg is the one written, not forged");
	is_str(json_string_value(json_object_get(o, "task_id")), forged, "task_id: quotes survive as text");
	is_str(json_string_value(json_object_get(o, "slashes")), slashes, "backslashes survive as text");
	is_str(json_string_value(json_object_get(o, "controls")), controls, "control characters survive as text");
	is_str(json_string_value(json_object_get(o, "bad_utf8")),
	       "ok \xef\xbf\xbd half \xef\xbf\xbd\xef\xbf\xbd bytes \xef\xbf\xbd\xef\xbf\xbd end "
	       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd surrogate",
	       "invalid UTF-8: each bad byte is U+FFFD");
	is_str(json_string_value(json_object_get(o, "good")), good_utf8, "valid UTF-8 passes unchanged");
	const char *b = json_string_value(json_object_get(o, "big"));
	ok(b && strlen(b) <= PD_LOG_VALUE_MAX && !strncmp(b, "AAAA", 4) && !strcmp(b + strlen(b) - 3, "..."),
	   "a 4 KiB value is cut to %d bytes and marked (%zu)", PD_LOG_VALUE_MAX, b ? strlen(b) : 0);
	const char *b2 = json_string_value(json_object_get(o, "big2"));
	bool whole = b2 && strlen(b2) <= PD_LOG_VALUE_MAX && !strstr(b2, "\xef\xbf\xbd");
	for (size_t i = 0; whole && i + 3 < strlen(b2); i += 2)
		whole = !memcmp(b2 + i, "\xc3\xa9", 2);
	ok(whole, "a 4 KiB value of 2-byte characters is cut between characters");
	ok(json_is_real(json_object_get(o, "n")) || json_is_integer(json_object_get(o, "n")),
	   "an unsigned past 2^63 is a number");
	is_int(json_integer_value(json_object_get(o, "neg")), -5, "a negative integer");
	ok(json_is_true(json_object_get(o, "flag")), "a boolean");
	ok(json_is_null(json_object_get(o, "none")), "a NULL string is null");
	ok(json_is_number(json_object_get(o, "ts")), "ts is a number");
	json_decref(o);

	static const char *const k2[] = {"ts", "level", "msg", "task_id"};
	o = n > 1 ? parse_exact(lines[1], k2, 4, "reserved and repeated keys") : NULL;
	if (!o)
		o = json_object();
	is_str(json_string_value(json_object_get(o, "level")), forged, "a hostile level is one escaped value");
	is_str(json_string_value(json_object_get(o, "msg")), controls, "a hostile msg is one escaped value");
	is_str(json_string_value(json_object_get(o, "task_id")), "one", "a repeated key: the first kept");
	ok(json_is_number(json_object_get(o, "ts")), "a field named ts does not replace the timestamp");
	json_decref(o);

	static const char *const k3[] = {"ts", "level", "msg"};
	o = n > 2 ? parse_exact(lines[2], k3, 3, "no fields") : NULL;
	json_decref(o);

	/* pd_log_line: the same text, one line ending in a newline */
	char *line = pd_log_line("warn", "m", (pd_log_field[]){PD_LS("a", "\n\n")}, 1);
	ok(line && strchr(line, '\n') == line + strlen(line) - 1, "pd_log_line: one line, newline-terminated");
	free(line);
	ok(n == 3 && !strstr(lines[2], "not written"), "pd_log_enable(false) writes nothing");

	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	free(big);
	free(big2);
	close(fd);
	return done();
}
