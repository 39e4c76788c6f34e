/* result.c: the result record as one line of JSON, valid for any program output. Each record is
 * written to a file and checked by python3: one line, strict UTF-8, valid JSON without duplicate
 * keys, and a Python expression over the parsed record `d`. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp[] = "/tmp/paddock-unit-result-XXXXXX";
static char script[PD_PATH], jsonfile[PD_PATH];

/* One python3 process checks every record: it reads "file<TAB>expression" lines and answers
 * "ok" or "fail <why>" (one process, not one per check: the suite must stay fast). */
static const char checker[] =
	"import json, sys\n"
	"def check(path, expr):\n"
	"    raw = open(path, 'rb').read()\n"
	"    if not raw.endswith(b'\\n') or raw.count(b'\\n') != 1:\n"
	"        return 'not exactly one line: %r' % raw[:200]\n"
	"    try:\n"
	"        text = raw.decode('utf-8')\n"
	"    except UnicodeDecodeError as e:\n"
	"        return 'not valid UTF-8: %s, near %r' % (e, raw[max(0, e.start - 20):e.end + 20])\n"
	"    dup = []\n"
	"    def pairs(kv):\n"
	"        keys = [k for k, _ in kv]\n"
	"        if len(keys) != len(set(keys)):\n"
	"            dup.append(keys)\n"
	"        return dict(kv)\n"
	"    try:\n"
	"        d = json.loads(text, object_pairs_hook=pairs)\n"
	"    except ValueError as e:\n"
	"        return 'not valid JSON: %s' % e\n"
	"    if dup:\n"
	"        return 'duplicate keys: %r' % dup[0]\n"
	"    try:\n"
	"        good = eval(expr, {'d': d})\n"
	"    except Exception as e:\n"
	"        return 'error %r in: %s  record: %s' % (e, expr, json.dumps(d)[:400])\n"
	"    return None if good else 'false: %s  record: %s' % (expr, json.dumps(d)[:400])\n"
	"for line in sys.stdin:\n"
	"    path, expr = line.rstrip('\\n').split('\\t', 1)\n"
	"    msg = check(path, expr)\n"
	"    print('ok' if msg is None else 'fail ' + msg.replace('\\n', '\\\\n')[:700], flush=True)\n";

static FILE *py_in, *py_out;

static int start_python(void)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
		execlp(py, py, script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	py_in = fdopen(in[1], "w");
	py_out = fdopen(out[0], "r");
	return py_in && py_out ? 0 : -1;
}

static int python(const char *expr)
{
	char line[1024];
	if (!py_in || fprintf(py_in, "%s\t%s\n", jsonfile, expr) < 0 || fflush(py_in) != 0 ||
	    !fgets(line, sizeof line, py_out)) {
		printf("#   the python3 checker is gone\n");
		return -1;
	}
	if (!strncmp(line, "ok", 2))
		return 0;
	printf("#   %s", line + 5);
	return 1;
}

/* Writes r as JSON into jsonfile and checks it with expr. */
static void check(const pd_result *r, bool with_output, const char *expr, const char *desc)
{
	int fd = open(jsonfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc = fd < 0 ? -1 : pd_result_write_json(r, fd, with_output);
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		ok(0, "%s (write_json failed: %s)", desc, strerror(errno));
		return;
	}
	ok(python(expr) == 0, "%s", desc);
}

static void set_out(pd_output *o, const char *head, size_t hl, const char *tail, size_t tl, uint64_t total)
{
	o->head = (char *)head;
	o->head_len = hl;
	o->tail = (char *)tail;
	o->tail_len = tl;
	o->total = total;
	o->truncated = total > hl + tl;
}

static pd_result base(void)
{
	pd_result r;
	memset(&r, 0, sizeof r);
	snprintf(r.sandbox_id, sizeof r.sandbox_id, "sb-0000abcd-7");
	snprintf(r.residue, sizeof r.residue, "clean");
	return r;
}

static void test_normal(void)
{
	pd_result r = base();
	r.status = PD_OK;
	r.wall_ms = 12;
	r.cpu_ms = 7;
	r.cpu_user_ms = 5;
	r.cpu_sys_ms = 2;
	r.memory_peak_bytes = 1048576;
	r.pids_peak = 3;
	r.setup_us = 1500;
	r.exec_us = 2250;
	r.teardown_us = 1;
	set_out(&r.out, "hello\n", 6, NULL, 0, 6);
	set_out(&r.err, "warn\n", 5, NULL, 0, 5);
	check(&r, true,
	      "d['sandbox_id'] == 'sb-0000abcd-7' and d['status'] == 'OK' and d['exit_code'] == 0 and "
	      "d['signal'] == 0 and d['error'] == '' and d['stdout'] == 'hello\\n' and d['stderr'] == 'warn\\n'",
	      "normal record: ids, status, output");
	check(&r, true,
	      "d['wall_ms'] == 12 and d['cpu_ms'] == 7 and d['cpu_user_ms'] == 5 and d['cpu_sys_ms'] == 2 and "
	      "d['memory_peak_bytes'] == 1048576 and d['pids_peak'] == 3 and d['oom_killed'] is False and "
	      "d['stdout_bytes'] == 6 and d['stderr_bytes'] == 5 and d['stdout_truncated'] is False and "
	      "d['stderr_truncated'] is False",
	      "normal record: figures");
	check(&r, true,
	      "abs(d['setup_ms'] - 1.5) < 1e-9 and abs(d['exec_ms'] - 2.25) < 1e-9 and "
	      "abs(d['teardown_ms'] - 0.001) < 1e-9 and d['residue'] == 'clean' and d['audit'] is None and "
	      "d['audit_file_events'] == 0 and d['audit_net_events'] == 0 and d['audit_denied'] == 0",
	      "normal record: timings, residue, no audit (null)");
	check(&r, false, "'stdout' not in d and 'stderr' not in d and d['stdout_bytes'] == 6 and d['stderr_truncated'] is False",
	      "without output: counts but no bytes");
	r.residue[0] = 0;
	check(&r, true, "d['residue'] == 'unchecked'", "an empty residue is written as unchecked");

	/* times are written as the decimals they are (whole microseconds), not as jansson's 17 digits
	 * of the nearest double (0.23899999999999999) */
	r.setup_us = 239;
	r.exec_us = 1000322;
	r.teardown_us = 1140;
	int fd = open(jsonfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool wrote = fd >= 0 && pd_result_write_json(&r, fd, false) == 0;
	if (fd >= 0)
		close(fd);
	char text[4096] = "";
	FILE *tf = wrote ? fopen(jsonfile, "re") : NULL;
	if (tf) {
		text[fread(text, 1, sizeof text - 1, tf)] = 0;
		fclose(tf);
	}
	ok(strstr(text, "\"setup_ms\":0.239,") && strstr(text, "\"exec_ms\":1000.322,") &&
		   strstr(text, "\"teardown_ms\":1.14,"),
	   "times print as their decimals: %.200s", strstr(text, "\"setup_ms\"") ? strstr(text, "\"setup_ms\"") : text);
	json_t *sum = json_pack("{s:f}", "x", 0.1 + 0.2);
	char *st = pd_json_dumps(sum, JSON_COMPACT);
	is_str(st ? st : "", "{\"x\":0.3}", "pd_json_dumps: a computed real at 15 digits");
	free(st);
	json_decref(sum);

	pd_result z;
	memset(&z, 0, sizeof z);
	check(&z, true, "d['sandbox_id'] == '' and d['stdout'] == '' and d['stderr'] == '' and d['status'] == 'OK'",
	      "an all-zero result is valid JSON");
}

static void test_status(void)
{
	static const char *const names[] = {"OK", "RE", "SG", "TO", "ML", "OL", "XX"};
	int good = 0;
	for (int s = PD_OK; s <= PD_XX; s++)
		good += !strcmp(pd_status_name((pd_status)s), names[s]);
	is_int(good, 7, "pd_status_name: OK RE SG TO ML OL XX");
	is_str(pd_status_name((pd_status)99), "XX", "an unknown status is named XX");
	for (int s = PD_OK; s <= PD_XX; s++) {
		pd_result r = base();
		r.status = (pd_status)s;
		r.exit_code = s == PD_RE ? 3 : 0;
		r.signal = s == PD_SG || s == PD_TO || s == PD_ML ? 9 : 0;
		/* a program that did not exit (a signal, a limit's kill, a sandbox fault) has no exit
		 * code: null, never a 0 that reads as a success (issue 39) */
		char code[16];
		snprintf(code, sizeof code, "%d", r.exit_code);
		bool exited = !r.signal && s != PD_XX;
		char expr[200], desc[96];
		snprintf(expr, sizeof expr, "d['status'] == '%s' and d['exit_code'] == %s and d['signal'] == %d",
			 names[s], exited ? code : "None", r.signal);
		snprintf(desc, sizeof desc, "status %s round-trips with its exit code (%s) and signal", names[s],
			 exited ? code : "null");
		check(&r, true, expr, desc);
	}
	{
		/* the session step of issue 39: a time-out said exit_code 0 */
		pd_result t = base();
		t.status = PD_TO;
		t.signal = 9;
		check(&t, true, "d['exit_code'] is None and d['signal'] == 9", "a timed-out program: exit_code null, signal 9");
		ok(!pd_result_exited(&t), "pd_result_exited: false for a time-out");
	}
	pd_result r = base();
	r.status = PD_RE;
	r.exit_code = -1;
	r.signal = 0;
	check(&r, true, "d['exit_code'] == -1", "negative exit code");
	r.exit_code = 255;
	r.memory_peak_bytes = UINT64_MAX;
	r.pids_peak = UINT32_MAX;
	r.cpu_ms = UINT64_MAX;
	r.audit_denied = UINT64_MAX;
	/* JSON integers of the record are signed 64-bit (jansson's): past that a count saturates
	 * rather than wrapping to a negative number */
	check(&r, true,
	      "d['exit_code'] == 255 and d['memory_peak_bytes'] == 2**63 - 1 and d['pids_peak'] == 2**32 - 1 and "
	      "d['cpu_ms'] == 2**63 - 1 and d['audit_denied'] == 2**63 - 1",
	      "largest values: 32-bit exact, 64-bit saturated at 2**63 - 1, never negative");
	r.memory_peak_bytes = INT64_MAX;
	check(&r, true, "d['memory_peak_bytes'] == 2**63 - 1", "2**63 - 1 is written exactly");
	r.oom_killed = true;
	check(&r, true, "d['oom_killed'] is True", "oom_killed true");
}

static void test_bytes(void)
{
	pd_result r = base();
	set_out(&r.out, "a\0b\0", 4, NULL, 0, 4);
	set_out(&r.err, "\0", 1, NULL, 0, 1);
	check(&r, true, "d['stdout'] == 'a\\x00b\\x00' and d['stderr'] == '\\x00'", "NUL bytes survive as \\u0000");

	char ctl[40];
	size_t n = 0;
	for (int c = 1; c < 32; c++)
		ctl[n++] = (char)c;
	ctl[n++] = 0x7f;
	set_out(&r.out, ctl, n, NULL, 0, n);
	set_out(&r.err, NULL, 0, NULL, 0, 0);
	check(&r, true, "d['stdout'] == ''.join(map(chr, range(1, 32))) + '\\x7f'", "control characters round-trip");

	static const char q[] = "say \"hi\" \\ and \\\" and \\\\\" end";
	set_out(&r.out, q, strlen(q), NULL, 0, strlen(q));
	snprintf(r.error, sizeof r.error, "bad \"path\" C:\\x\n\ttab");
	snprintf(r.sandbox_id, sizeof r.sandbox_id, "id\"with\\quote");
	snprintf(r.residue, sizeof r.residue, "cgroup,\"x\"");
	check(&r, true,
	      "d['stdout'] == 'say \"hi\" \\\\ and \\\\\" and \\\\\\\\\" end' and "
	      "d['error'] == 'bad \"path\" C:\\\\x\\n\\ttab' and d['sandbox_id'] == 'id\"with\\\\quote' and "
	      "d['residue'] == 'cgroup,\"x\"'",
	      "quotes and backslashes in output, error, id and residue round-trip");

	r = base();
	static const char utf8[] = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf";
	set_out(&r.out, utf8, strlen(utf8), NULL, 0, strlen(utf8));
	check(&r, true, "d['stdout'] == 'caf\\u00e9 \\u20ac \\U0001f600 \\U0010ffff'", "valid UTF-8 passes unchanged");

	static const struct {
		const char *bytes, *want, *what;
	} bad[] = {
		{"A\xff" "B", "A\\ufffdB", "a lone 0xff"},
		{"A\x80" "B", "A\\ufffdB", "a lone continuation byte"},
		{"A\xc0\xaf" "B", "A\\ufffd\\ufffdB", "an overlong 2-byte form"},
		{"A\xe0\x80\xaf" "B", "A\\ufffd\\ufffd\\ufffdB", "an overlong 3-byte form"},
		{"A\xed\xa0\x80" "B", "A\\ufffd\\ufffd\\ufffdB", "a UTF-16 surrogate"},
		{"A\xf4\x90\x80\x80" "B", "A\\ufffd\\ufffd\\ufffd\\ufffdB", "a code point past U+10FFFF"},
		{"A\xe2\x82", "A\\ufffd\\ufffd", "a sequence cut by the end"},
		{"A\xe2(B", "A\\ufffd(B", "a sequence cut by ASCII"},
		{"A\xf5\x80\x80\x80" "B", "A\\ufffd\\ufffd\\ufffd\\ufffdB", "lead byte 0xf5"},
		{"A\xf8\x80\x80" "B", "A\\ufffd\\ufffd\\ufffdB", "lead byte 0xf8 (old 5-byte form)"},
		{"A\xfe\xbf\xbf" "B", "A\\ufffd\\ufffd\\ufffdB", "lead byte 0xfe"},
		{"A\xff\xbf\xbf" "B", "A\\ufffd\\ufffd\\ufffdB", "0xff followed by continuation bytes"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		set_out(&r.out, bad[i].bytes, strlen(bad[i].bytes), NULL, 0, strlen(bad[i].bytes));
		char expr[160], desc[128];
		snprintf(expr, sizeof expr, "d['stdout'] == '%s'", bad[i].want);
		snprintf(desc, sizeof desc, "invalid UTF-8, %s: valid JSON, U+FFFD per bad byte", bad[i].what);
		check(&r, true, expr, desc);
	}
}

static void test_truncated(void)
{
	pd_result r = base();
	set_out(&r.out, "HEAD", 4, "TAIL", 4, 1000);
	check(&r, true,
	      "d['stdout'] == 'HEAD\\n[... 992 bytes omitted ...]\\nTAIL' and d['stdout_bytes'] == 1000 and "
	      "d['stdout_truncated'] is True and d['stderr_truncated'] is False",
	      "truncated output: head, marker with the omitted count, tail");
	set_out(&r.out, "HE", 2, "AD", 2, 4);
	check(&r, true, "d['stdout'] == 'HEAD' and d['stdout_truncated'] is False and 'omitted' not in d['stdout']",
	      "head and tail that join up: no marker");
	set_out(&r.out, "abc", 3, NULL, 0, 10);
	check(&r, true, "d['stdout'] == 'abc' and d['stdout_truncated'] is True and d['stdout_bytes'] == 10",
	      "truncated with no tail: the head, flagged truncated");
	/* a tail that cuts a UTF-8 sequence in half is still valid JSON */
	set_out(&r.out, "x\xe2\x82", 3, "\xac" "y", 2, 50);
	set_out(&r.err, "\xe2\x82", 2, "\xac", 1, 3);
	check(&r, true,
	      "d['stdout'] == 'x\\ufffd\\ufffd\\n[... 45 bytes omitted ...]\\n\\ufffdy' and d['stderr'] == '\\u20ac'",
	      "the marker splits a sequence (replaced); a joined head and tail re-form it");

	/* a large record: 1 MiB of awkward bytes in each stream */
	size_t big = 1 << 20;
	char *b = malloc(big);
	for (size_t i = 0; i < big; i++)
		b[i] = (char)("a\0\"\\\n\xff\xc3\xa9"[i % 8]);
	set_out(&r.out, b, big - 100, b + big - 100, 100, 5000000);
	set_out(&r.err, b, big, NULL, 0, big);
	check(&r, true,
	      "d['stderr_bytes'] == 1048576 and len(d['stderr']) == 1048576 // 8 * 7 and "
	      "d['stdout'].count('bytes omitted') == 1 and d['stdout_truncated'] is True",
	      "1 MiB per stream of NULs, quotes, newlines, bad and good UTF-8: valid JSON");
	free(b);
}

static void test_audit(void)
{
	pd_result r = base();
	pd_audit_event ev[3];
	memset(ev, 0, sizeof ev);
	ev[0].t_us = 1500;
	snprintf(ev[0].kind, sizeof ev[0].kind, "judge_material");
	snprintf(ev[0].op, sizeof ev[0].op, "open");
	snprintf(ev[0].mode, sizeof ev[0].mode, "r");
	snprintf(ev[0].target, sizeof ev[0].target, "/judge/\"answers\"\\x.txt");
	ev[0].denied = true;
	ev[0].pid = 4242;
	ev[1].t_us = 2000000;
	snprintf(ev[1].kind, sizeof ev[1].kind, "egress");
	snprintf(ev[1].op, sizeof ev[1].op, "connect");
	snprintf(ev[1].mode, sizeof ev[1].mode, "out");
	snprintf(ev[1].target, sizeof ev[1].target, "10.0.0.1:80");
	ev[1].pid = 7;
	ev[2].t_us = 1;
	snprintf(ev[2].kind, sizeof ev[2].kind, "read_outside");
	snprintf(ev[2].op, sizeof ev[2].op, "exec");
	snprintf(ev[2].mode, sizeof ev[2].mode, "x");
	snprintf(ev[2].target, sizeof ev[2].target, "/tmp/bad\xff\x01name");
	r.audit = ev;
	r.audit_len = 3;
	r.audit_cap = 3;
	r.audit_files = 10;
	r.audit_net = 1;
	r.audit_denied = 1;
	check(&r, true,
	      "len(d['audit']['events']) == 3 and d['audit']['dropped'] == 0 and "
	      "d['audit']['counts']['judge_material'] == 0 and d['audit_file_events'] == 10 and "
	      "d['audit_net_events'] == 1 and d['audit_denied'] == 1",
	      "audit: events and counts");
	check(&r, true,
	      "d['audit']['events'][0] == {'time': 1.5, 'kind': 'judge_material', 'op': 'open', 'mode': 'r', "
	      "'path': '/judge/\"answers\"\\\\x.txt', 'denied': True, 'pid': 4242}",
	      "audit: first event round-trips (quotes and backslash escaped)");
	check(&r, true,
	      "d['audit']['events'][1] == {'time': 2000.0, 'kind': 'egress', 'op': 'connect', 'mode': 'out', "
	      "'address': '10.0.0.1:80', 'denied': False, 'pid': 7} and "
	      "d['audit']['events'][2]['path'] == '/tmp/bad\\ufffd\\x01name' and "
	      "abs(d['audit']['events'][2]['time'] - 0.001) < 1e-9",
	      "audit: network event, bad bytes in a target");
}

static void test_fds(void)
{
	pd_result r = base();
	set_out(&r.out, "pipe\n", 5, NULL, 0, 5);
	int p[2];
	if (pipe(p) < 0)
		return;
	int rc = pd_result_write_json(&r, p[1], true);
	close(p[1]);
	char buf[4096];
	ssize_t n = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	buf[n > 0 ? n : 0] = 0;
	ok(rc == 0 && n > 0 && buf[n - 1] == '\n' && strstr(buf, "\"stdout\":\"pipe\\n\""), "written to a pipe: one line");
	errno = 0;
	ok(pd_result_write_json(&r, -1, true) == -1 && errno == EBADF, "bad fd: -1, EBADF");

	/* a reader that went away: an error, not a SIGPIPE that ends the caller */
	if (pipe(p) < 0)
		return;
	close(p[0]);
	struct sigaction sa = {0}, old;
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old);
	errno = 0;
	ok(pd_result_write_json(&r, p[1], true) == -1 && errno == EPIPE, "closed pipe (SIGPIPE ignored): -1, EPIPE");
	sigaction(SIGPIPE, &old, NULL);
	close(p[1]);

	/* pd_result_free frees and clears, and may be called twice */
	pd_result f = base();
	f.out.head = malloc(3);
	f.out.head_len = 3;
	f.err.tail = malloc(5);
	f.audit = calloc(2, sizeof *f.audit);
	f.audit_len = f.audit_cap = 2;
	pd_result_free(&f);
	ok(!f.out.head && !f.err.tail && !f.audit && !f.audit_len && !f.out.head_len, "pd_result_free clears");
	pd_result_free(&f);
	ok(1, "pd_result_free twice is harmless");
}

int main(void)
{
	if (system("python3 -c 'import json' >/dev/null 2>&1") != 0) {
		printf("1..0 # SKIP python3 is needed to validate JSON\n");
		return 0;
	}
	plan(52);
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(script, sizeof script, "%s/check.py", tmp);
	snprintf(jsonfile, sizeof jsonfile, "%s/r.json", tmp);
	FILE *f = fopen(script, "w");
	fputs(checker, f);
	fclose(f);
	signal(SIGPIPE, SIG_IGN); /* a dead checker must fail the checks, not end the test */
	if (start_python() < 0)
		printf("# could not start python3\n");
	test_normal();
	test_status();
	test_bytes();
	test_truncated();
	test_audit();
	test_fds();
	if (py_in)
		fclose(py_in);
	if (py_out)
		fclose(py_out);
	wait(NULL);
	unlink(script);
	unlink(jsonfile);
	rmdir(tmp);
	return done();
}
