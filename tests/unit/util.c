/* util.c: size and duration parsing, keyed files, mkdir -p, small file I/O, fd passing, pd_fail,
 * the clocks and the id counter. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmp[] = "/tmp/paddock-unit-util-XXXXXX";

static void rm_rf(const char *path)
{
	char cmd[PD_PATH + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", path);
}

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 0xdeadbeef;
	int rc = pd_parse_size(s, &v);
	if (!ok(rc == 0 && v == want, "pd_parse_size(\"%s\") = %llu", s, (unsigned long long)want))
		printf("#   rc %d, got %llu\n", rc, (unsigned long long)v);
}

static void size_bad(const char *s)
{
	uint64_t v = 0xdeadbeef;
	int rc = pd_parse_size(s, &v);
	if (!ok(rc == -1 && v == 0xdeadbeef, "pd_parse_size(\"%s\") is refused and leaves *out alone", s))
		printf("#   rc %d, got %llu\n", rc, (unsigned long long)v);
}

static void dur_ok(const char *s, uint64_t want)
{
	uint64_t v = 0xdeadbeef;
	int rc = pd_parse_duration_ms(s, &v);
	if (!ok(rc == 0 && v == want, "pd_parse_duration_ms(\"%s\") = %llu ms", s, (unsigned long long)want))
		printf("#   rc %d, got %llu\n", rc, (unsigned long long)v);
}

static void dur_bad(const char *s)
{
	uint64_t v = 0xdeadbeef;
	int rc = pd_parse_duration_ms(s, &v);
	if (!ok(rc == -1 && v == 0xdeadbeef, "pd_parse_duration_ms(\"%s\") is refused", s))
		printf("#   rc %d, got %llu\n", rc, (unsigned long long)v);
}

static void test_parse(void)
{
	size_ok("0", 0);
	size_ok("4096", 4096);
	size_ok("1b", 1);
	size_ok("64k", 64ull << 10);
	size_ok("64K", 64ull << 10);
	size_ok("512M", 512ull << 20);
	size_ok("1G", 1ull << 30);
	size_ok("2T", 2ull << 40);
	size_ok("1KiB", 1024);
	size_ok("3MiB", 3ull << 20);
	size_ok("1MB", 1ull << 20);
	size_ok("2gb", 2ull << 30);
	size_ok("1.5G", 3ull << 29);
	size_ok("0.5k", 512);
	/* a plain byte count must be exact, also past 2^53 where a double loses integers */
	size_ok("9007199254740993", 9007199254740993ull);
	size_bad("");
	size_bad("-1");
	size_bad("-0");
	size_bad("12x");
	size_bad("1kk");
	size_bad("1iB");
	size_bad("k");
	size_bad("12 ");
	size_bad("100000000T"); /* 1e8 TiB > 2^64 */
	size_bad("99999999999999999999");
	size_bad("inf");
	size_bad("nan");
	size_bad("1.5e3"); /* an exponent applied to the fraction alone gave 1 + 1500 */
	size_bad("1.0e3k");
	size_ok("18446744073709551615", UINT64_MAX);
	uint64_t v = 0;
	ok(pd_parse_size(NULL, &v) == -1, "pd_parse_size(NULL) is refused");

	dur_ok("1.5", 1500);
	dur_ok("2", 2000);
	dur_ok("2s", 2000);
	dur_ok("250ms", 250);
	dur_ok("0.25s", 250);
	dur_ok("1m", 60000);
	dur_ok("2min", 120000);
	dur_ok("0", 0);
	dur_bad("");
	dur_bad("-1");
	dur_bad("abc");
	dur_bad("5h");
	dur_bad("1 s");
	dur_bad("ms");
	dur_bad("1sec");
	dur_bad("nan");
	dur_bad("inf");
	dur_bad("1e300");
	dur_bad("0x10"); /* strtod reads hex: this was 16 s */
	dur_bad("0x1p3");
	ok(pd_parse_duration_ms(NULL, &v) == -1, "pd_parse_duration_ms(NULL) is refused");
}

static void test_keyed(void)
{
	const char *t = "usage_usec 123456\nuser_usec 100000\nsystem_usec\t23456\n"
			"nr_periods 7\nuser 9\n";
	is_int(pd_keyed_u64(t, "usage_usec"), 123456, "keyed: first line");
	is_int(pd_keyed_u64(t, "user_usec"), 100000, "keyed: middle line");
	is_int(pd_keyed_u64(t, "system_usec"), 23456, "keyed: tab separator");
	is_int(pd_keyed_u64(t, "user"), 9, "keyed: a key that is a prefix of another key");
	is_int(pd_keyed_u64(t, "usage"), 0, "keyed: a prefix of a key is not the key");
	is_int(pd_keyed_u64(t, "sec"), 0, "keyed: a suffix of a key is not the key");
	is_int(pd_keyed_u64(t, "nope"), 0, "keyed: absent key gives 0");
	is_int(pd_keyed_u64("a 1\nb 18446744073709551615", "b"), UINT64_MAX, "keyed: last line without newline, u64 max");
	is_int(pd_keyed_u64("", "a"), 0, "keyed: empty text");
	is_int(pd_keyed_u64(NULL, "a"), 0, "keyed: NULL text");
	is_int(pd_keyed_u64("x a 5\na 6\n", "a"), 6, "keyed: only matches at the start of a line");
}

static void test_files(void)
{
	char p[PD_PATH], q[PD_PATH];
	struct stat st;
	mode_t old = umask(0);
	snprintf(p, sizeof p, "%s/a/b/c", tmp);
	ok(pd_mkdir_p(p, 0700) == 0 && stat(p, &st) == 0 && S_ISDIR(st.st_mode), "mkdir_p creates nested dirs");
	is_int(st.st_mode & 07777, 0700, "mkdir_p uses the mode");
	snprintf(q, sizeof q, "%s/a", tmp);
	ok(stat(q, &st) == 0 && (st.st_mode & 07777) == 0700, "mkdir_p gives intermediate dirs the mode");
	ok(pd_mkdir_p(p, 0700) == 0, "mkdir_p of an existing dir succeeds");
	snprintf(p, sizeof p, "%s/x/y/", tmp);
	ok(pd_mkdir_p(p, 0755) == 0 && stat(p, &st) == 0 && S_ISDIR(st.st_mode), "mkdir_p with a trailing slash");
	umask(old);

	char big[PD_PATH + 10];
	memset(big, 'a', sizeof big - 1);
	big[0] = '/';
	big[sizeof big - 1] = 0;
	errno = 0;
	ok(pd_mkdir_p(big, 0755) == -1 && errno == ENAMETOOLONG, "mkdir_p of a too long path: ENAMETOOLONG");

	snprintf(p, sizeof p, "%s/file", tmp);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	snprintf(q, sizeof q, "%s/file/sub", tmp);
	errno = 0;
	ok(pd_mkdir_p(q, 0755) == -1 && errno == ENOTDIR, "mkdir_p through a regular file fails with ENOTDIR");
	errno = 0;
	int rc = pd_mkdir_p(p, 0755);
	if (!ok(rc == -1, "mkdir_p of a path that is a regular file fails (not a directory)"))
		printf("#   rc %d errno %d: the caller is told a directory exists where there is a file\n", rc, errno);

	pd_err e = {0};
	ok(pd_write_file(p, "hello world", &e) == 0 && e.code == 0, "write_file to an existing file");
	char buf[64];
	is_int(pd_read_file(p, buf, sizeof buf), 11, "read_file returns the length");
	is_str(buf, "hello world", "read_file reads what write_file wrote");
	ok(pd_write_file(p, "bye", &e) == 0, "write_file again");
	pd_read_file(p, buf, sizeof buf);
	is_str(buf, "bye", "write_file truncates the previous content");
	is_int(pd_read_file(p, buf, 3), 2, "read_file into a small buffer keeps size-1 bytes");
	is_str(buf, "by", "read_file NUL-terminates a cut read");
	ok(pd_write_u64(p, 18446744073709551615ull, &e) == 0 && pd_read_file(p, buf, sizeof buf) == 20 &&
		   !strcmp(buf, "18446744073709551615"),
	   "write_u64 writes decimal");

	snprintf(q, sizeof q, "%s/missing", tmp);
	memset(&e, 0, sizeof e);
	ok(pd_write_file(q, "x", &e) == -1 && e.code == ENOENT, "write_file never creates: ENOENT");
	ok(strstr(e.msg, q) != NULL, "write_file error names the path (%s)", e.msg);
	ok(access(q, F_OK) < 0, "no file was created");
	errno = 0;
	ok(pd_read_file(q, buf, sizeof buf) == -1 && errno == ENOENT, "read_file of a missing file: -1, ENOENT");
	ok(pd_write_file("/proc/self/status", "x", NULL) == -1, "write_file to a read-only file fails, NULL pd_err is fine");

	/* a large file: reads until the buffer is full */
	fd = open(p, O_WRONLY | O_TRUNC);
	char chunk[4096];
	memset(chunk, 'z', sizeof chunk);
	for (int i = 0; i < 4; i++)
		if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk)
			break;
	close(fd);
	char *large = malloc(20000);
	is_int(pd_read_file(p, large, 20000), 16384, "read_file reads a file larger than one read");
	free(large);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void test_fds(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		ok(0, "socketpair: %s", strerror(errno));
		return;
	}
	int p1[2], p2[2];
	if (pipe(p1) < 0 || pipe(p2) < 0)
		return;
	int base = (int)pd_open_fds();

	/* three fds and a payload */
	int send3[3] = {p1[1], p2[1], p1[0]};
	ok(pd_send_fds(sv[0], "abc", 3, send3, 3) == 0, "send 3 fds");
	char buf[16] = {0};
	int got[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, n = -1;
	ssize_t r = pd_recv_fds(sv[1], buf, sizeof buf, got, &n, 8);
	ok(r == 3 && !memcmp(buf, "abc", 3), "payload arrives");
	is_int(n, 3, "3 fds arrive");
	ok(n == 3 && same_file(got[0], p1[1]) && same_file(got[1], p2[1]) && same_file(got[2], p1[0]),
	   "each received fd is the file that was sent, in order");
	ok(n >= 1 && write(got[0], "Z", 1) == 1 && read(p1[0], buf, 1) == 1 && buf[0] == 'Z',
	   "a received pipe end works");
	ok(n >= 1 && (fcntl(got[0], F_GETFD) & FD_CLOEXEC), "received fds are close-on-exec");
	for (int i = 0; i < n; i++)
		close(got[i]);
	is_int((int)pd_open_fds(), base, "closing the received fds restores the fd count");

	/* more fds than the receiver asks for: the extra ones are closed, not leaked */
	int send5[5] = {p1[0], p1[1], p2[0], p2[1], sv[0]};
	ok(pd_send_fds(sv[0], "x", 1, send5, 5) == 0, "send 5 fds");
	r = pd_recv_fds(sv[1], buf, sizeof buf, got, &n, 2);
	ok(r == 1 && n == 2, "receiver with maxfds 2 gets 2 (n=%d)", n);
	ok(n == 2 && same_file(got[0], p1[0]) && same_file(got[1], p1[1]), "the first 2 are kept");
	for (int i = 0; i < n; i++)
		close(got[i]);
	is_int((int)pd_open_fds(), base, "the 3 extra fds were closed");

	ok(pd_send_fds(sv[0], "y", 1, send3, 3) == 0, "send 3 fds to a receiver that wants none");
	r = pd_recv_fds(sv[1], buf, sizeof buf, NULL, NULL, 0);
	is_int(r, 1, "payload still arrives");
	is_int((int)pd_open_fds(), base, "unwanted fds are all closed");

	ok(pd_send_fds(sv[0], "z", 1, send3, 3) == 0, "send 3 fds, receive with nfds but maxfds 0");
	n = 99;
	r = pd_recv_fds(sv[1], buf, sizeof buf, got, &n, 0);
	ok(r == 1 && n == 0, "nfds is 0");
	is_int((int)pd_open_fds(), base, "no fd kept");

	/* no fds at all */
	ok(pd_send_fds(sv[0], "plain", 5, NULL, 0) == 0, "send without fds");
	n = 99;
	r = pd_recv_fds(sv[1], buf, sizeof buf, got, &n, 8);
	ok(r == 5 && n == 0, "receive without fds: nfds 0");

	int many[PD_MAX_PASS_FDS + 1];
	for (int i = 0; i <= PD_MAX_PASS_FDS; i++)
		many[i] = p1[0];
	errno = 0;
	ok(pd_send_fds(sv[0], "m", 1, many, PD_MAX_PASS_FDS + 1) == -1 && errno == EINVAL,
	   "sending more than %d fds (layers, binds, sysfs): EINVAL", PD_MAX_PASS_FDS);
	ok(pd_send_fds(sv[0], "m", 1, many, 16) == 0, "sending 16 fds works");
	r = pd_recv_fds(sv[1], buf, sizeof buf, got, &n, 4);
	ok(r == 1 && n == 4, "received 4 of 16");
	for (int i = 0; i < n; i++)
		close(got[i]);
	is_int((int)pd_open_fds(), base, "the other 12 were closed");

	/* a raw sender passing more fds than the receive buffer holds: the kernel drops the rest */
	{
		int twenty[20];
		for (int i = 0; i < 20; i++)
			twenty[i] = p2[0];
		union {
			char b[CMSG_SPACE(sizeof twenty)];
			struct cmsghdr align;
		} u;
		memset(&u, 0, sizeof u);
		struct iovec iov = {.iov_base = (void *)"r", .iov_len = 1};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
				   .msg_controllen = sizeof u.b};
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof twenty);
		memcpy(CMSG_DATA(c), twenty, sizeof twenty);
		ok(sendmsg(sv[0], &m, 0) == 1, "raw send of 20 fds");
		r = pd_recv_fds(sv[1], buf, sizeof buf, got, &n, 8);
		ok(r == 1 && n == 8, "received 8 of 20");
		for (int i = 0; i < n; i++)
			close(got[i]);
		is_int((int)pd_open_fds(), base, "none of the 20 leaked");
	}

	/* the peer is gone */
	close(sv[0]);
	n = 99;
	r = pd_recv_fds(sv[1], buf, sizeof buf, got, &n, 8);
	ok(r == 0 && n == 0, "recv after the peer closed: 0 bytes, no fds");
	errno = 0;
	ok(pd_send_fds(sv[1], "q", 1, NULL, 0) == -1 && errno == EPIPE,
	   "send to a closed peer: -1, EPIPE, and no SIGPIPE kills us");
	close(sv[1]);
	close(p1[0]);
	close(p1[1]);
	close(p2[0]);
	close(p2[1]);
}

static void test_fail(void)
{
	pd_err e = {0};
	char t[PD_ERR_TEXT_SIZE];
	errno = 0;
	int rc = pd_fail(&e, ENOENT, "open %s", "/x/y");
	ok(rc == -1, "pd_fail returns -1");
	is_int(e.code, ENOENT, "pd_fail sets the code");
	is_int(e.cause, ENOENT, "... and the cause");
	is_str(e.msg, "open /x/y", "the message is the context alone: no strerror baked in");
	is_str(pd_err_text(&e, t, sizeof t), "open /x/y: No such file or directory",
	       "pd_err_text renders the context and strerror of the cause");
	is_int(errno, ENOENT, "pd_fail sets errno");

	memset(&e, 0, sizeof e);
	rc = pd_fail(&e, 0, "no cause %d", 42);
	ok(rc == -1 && e.code == EIO && e.cause == 0 && errno == EIO, "code 0 becomes EIO, with no cause");
	is_str(PD_ERR_STR(&e), "no cause 42", "no cause: rendered without a strerror suffix");

	memset(&e, 0, sizeof e);
	is_str(PD_ERR_STR(&e), "", "an empty error renders as nothing");
	is_str(pd_err_text(NULL, t, sizeof t), "", "a NULL error too");
	e.cause = EPERM;
	is_str(PD_ERR_STR(&e), "Operation not permitted", "a cause without context: strerror alone, no ': '");

	errno = 0;
	ok(pd_fail(NULL, EPERM, "nobody listens") == -1 && errno == EPERM, "NULL pd_err: -1 and errno");

	char lng[700];
	memset(lng, 'q', sizeof lng - 1);
	lng[sizeof lng - 1] = 0;
	rc = pd_fail(&e, EACCES, "%s", lng);
	ok(rc == -1 && strlen(e.msg) == sizeof e.msg - 1, "a long message is cut to the buffer and terminated");
	is_int(e.code, EACCES, "long message: code kept");
	const char *lt = PD_ERR_STR(&e);
	ok(strlen(lt) == strlen(e.msg) + strlen(": Permission denied") && strstr(lt, ": Permission denied"),
	   "a full message still renders its cause (the render buffer holds both)");
	char small[8];
	is_str(pd_err_text(&e, small, sizeof small), "qqqqqqq", "rendered into a small buffer: cut, terminated");

	/* cut inside a UTF-8 character: the partial character goes, so the text stays UTF-8 (JSON) */
	char u8[700] = "ab";
	for (int i = 0; i < 300; i++)
		strcat(u8, "\xc3\xa9");
	pd_fail(&e, 0, "%s", u8);
	ok(strlen(e.msg) == sizeof e.msg - 2 && (unsigned char)e.msg[strlen(e.msg) - 1] == 0xa9,
	   "a message cut inside a UTF-8 character drops the partial character");
	char u8t[6];
	pd_fail(&e, 0, "ab\xc3\xa9\xc3\xa9");
	is_str(pd_err_text(&e, u8t, sizeof u8t), "ab\xc3\xa9", "the renderer's cut drops a partial character too");

	/* the message may quote the previous error in the same pd_err, rendered */
	pd_fail(&e, ENOENT, "inner");
	char prev[PD_ERR_TEXT_SIZE];
	pd_err_text(&e, prev, sizeof prev);
	pd_fail(&e, EIO, "outer (%s)", prev);
	is_str(PD_ERR_STR(&e), "outer (inner: No such file or directory): Input/output error", "nested message");

	/* more context in front keeps the error's data: its class survives, its cause is rendered once */
	pd_fail(&e, ENOENT, "open /w/main.py");
	e.kind = PD_EK_DEPENDENCY;
	ok(pd_err_prefix(&e, "compile %s: ", "main") == -1, "pd_err_prefix returns -1");
	ok(e.code == ENOENT && e.cause == ENOENT && e.kind == PD_EK_DEPENDENCY,
	   "pd_err_prefix keeps code, cause and kind as data");
	is_str(PD_ERR_STR(&e), "compile main: open /w/main.py: No such file or directory",
	       "the prefixed error renders context, then the cause once");
	ok(pd_err_prefix(NULL, "x") == -1, "pd_err_prefix of NULL: -1");
	pd_fail(&e, 0, "%s", lng);
	pd_err_prefix(&e, "ab\xc3\xa9");
	ok(strlen(e.msg) == sizeof e.msg - 1 && !strncmp(e.msg, "ab\xc3\xa9q", 5), "a prefix over a full message: cut to the buffer");
}

/* The UTF-8 cut, the default environment and its merge, the descriptor count: one copy each. */
static void test_helpers(void)
{
	const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
	size_t want[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10};
	bool all = true;
	for (size_t n = 0; n <= 10; n++)
		all &= pd_utf8_cut(s, n) == want[n];
	ok(all, "pd_utf8_cut never splits a 2-, 3- or 4-byte character and keeps whole ones");
	is_int((int)pd_utf8_cut("abc", 2), 2, "pd_utf8_cut: ASCII is cut where asked");

	char *const *d = pd_default_env();
	ok(d && d[0] && !strncmp(d[0], "PATH=", 5) && d[4] == NULL, "the default environment: 4 variables, PATH first");
	char **m = pd_env_merge(NULL, NULL);
	ok(m && m[4] == NULL && !strcmp(m[1], "HOME=/root"), "no variables over the defaults: the defaults");
	free(m);
	char *over[] = {(char *)"HOME=/work", (char *)"X=1", (char *)"X=2", (char *)"PATHX=3", NULL};
	m = pd_env_merge(NULL, over);
	ok(m && !strncmp(m[0], "PATH=/", 6) && !strcmp(m[1], "LANG=C.UTF-8") && !strcmp(m[2], "TERM=dumb") &&
		   !strcmp(m[3], "HOME=/work") && !strcmp(m[4], "X=2") && !strcmp(m[5], "PATHX=3") && !m[6],
	   "pd_env_merge: a variable replaces the default of its name only, a later one of a name wins");
	free(m);
	char *base[] = {(char *)"A=1", (char *)"B=2", NULL}, *o2[] = {(char *)"B=3", NULL};
	m = pd_env_merge(base, o2);
	ok(m && !strcmp(m[0], "A=1") && !strcmp(m[1], "B=3") && !m[2], "pd_env_merge over a given base");
	free(m);

	long n0 = pd_open_fds();
	int p[2];
	ok(n0 > 0 && pipe(p) == 0 && pd_open_fds() == n0 + 2, "pd_open_fds counts a pipe's two descriptors");
	close(p[0]);
	close(p[1]);
	ok(pd_open_fds() == n0, "and not the directory it reads");
}

#define ID_THREADS 4
#define ID_EACH 2000
static char ids[ID_THREADS * ID_EACH][48];

static void *make_ids(void *arg)
{
	char(*mine)[48] = arg;
	for (int i = 0; i < ID_EACH; i++)
		pd_new_id(mine[i], sizeof mine[i], 0xabcdef01u, "x-%s", "node");
	return NULL;
}

static int id_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The one wall clock, the one monotonic clock, and the one id counter (issue 38). */
static void test_ids_and_clocks(void)
{
	uint64_t wall = pd_wall_us(), secs = (uint64_t)time(NULL);
	ok(wall / 1000000 + 1 >= secs && wall / 1000000 <= secs + 1, "pd_wall_us reads the wall clock (%llu s)",
	   (unsigned long long)(wall / 1000000));
	uint64_t a = pd_now_us(), b = pd_now_us();
	ok(b >= a && a < wall, "pd_now_us is the monotonic clock: never back, and not the wall clock");

	char id[64], id2[64];
	pd_new_id(id, sizeof id, 0x0000beefu, "t");
	pd_new_id(id2, sizeof id2, 0x0000beefu, "t");
	unsigned long long n1 = 0, n2 = 0;
	ok(sscanf(id, "t-0000beef-%llu", &n1) == 1 && sscanf(id2, "t-0000beef-%llu", &n2) == 1 && n2 == n1 + 1,
	   "pd_new_id: <prefix>-<run id>-<n>, n counting up (%s, %s)", id, id2);
	pd_new_id(id, sizeof id, 1, "r-%s", "node-a");
	ok(!strncmp(id, "r-node-a-00000001-", 18), "the prefix is made as printf would (%s)", id);
	char small[12];
	memset(small, 'z', sizeof small);
	pd_new_id(small, sizeof small, 0x12345678u, "prefix");
	ok(memchr(small, 0, sizeof small) && !strncmp(small, "prefix-1234", 11), "a short buffer is cut, terminated (%s)",
	   small);

	pthread_t th[ID_THREADS];
	bool started = true;
	for (int t = 0; t < ID_THREADS; t++)
		started = pthread_create(&th[t], NULL, make_ids, ids[t * ID_EACH]) == 0 && started;
	for (int t = 0; t < ID_THREADS; t++)
		pthread_join(th[t], NULL);
	qsort(ids, ID_THREADS * ID_EACH, sizeof ids[0], id_cmp);
	size_t same = 0;
	for (size_t i = 1; i < ID_THREADS * ID_EACH; i++)
		same += !strcmp(ids[i - 1], ids[i]);
	ok(started && same == 0 && !strncmp(ids[0], "x-node-abcdef01-", 16),
	   "%d threads make %d ids at once: all different (%zu the same)", ID_THREADS, ID_THREADS * ID_EACH, same);
}

int main(void)
{
	plan(151);
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	test_parse();
	test_keyed();
	test_files();
	test_fds();
	test_fail();
	test_helpers();
	test_ids_and_clocks();
	rm_rf(tmp);
	return done();
}
