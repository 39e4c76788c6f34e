/* initstate.c: the file APIs reach only the sandbox's files, never init's /proc entries, sysfs or a
 * device (a planted link included); and nothing a user does to init's process attributes reaches
 * the next user of a reset sandbox. Each hostile first user runs, the sandbox is reset, and the
 * next user's view of every attribute a program inherits from init (timer slack, nice, scheduling
 * policy, CPU affinity, I/O priority, umask, working directory, personality, rlimits, signal mask
 * and dispositions, environment) must equal a fresh sandbox's, or the reset must refuse the
 * sandbox. */
#define _GNU_SOURCE
#include "output.h"
#include "paddock.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static pd_ctx *ctx;

/* one "name=value" line per attribute, in ATTRS' order */
static const char *const ATTRS[] = {"timerslack", "nice",	  "policy", "affinity", "ioprio",
				    "umask",	  "cwd",	  "personality", "limits", "sigmask",
				    "env"};
#define NATTRS (sizeof ATTRS / sizeof ATTRS[0])
static const char VIEW[] =
	"echo timerslack=$(cat /proc/self/timerslack_ns);"
	"python3 -c 'import os, ctypes\n"
	"print(\"nice=%d\" % os.getpriority(os.PRIO_PROCESS, 0))\n"
	"print(\"policy=%d/%d\" % (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority))\n"
	"print(\"affinity=%s\" % sorted(os.sched_getaffinity(0)))\n"
	"print(\"ioprio=%d\" % ctypes.CDLL(None).syscall(252, 1, 0))';"
	"echo umask=$(umask); echo cwd=$(pwd); echo personality=$(cat /proc/self/personality);"
	"echo limits=$(cat /proc/self/limits | md5sum);"
	"echo sigmask=$(grep -E '^Sig(Blk|Ign|Cgt)' /proc/self/status | tr '\\n\\t' '  ');"
	"echo env=$(env | sort | md5sum)";

static char *run(pd_sandbox *s, const char *script, pd_status *st)
{
	static char shp[] = "/bin/sh", dash_c[] = "-c";
	char *argv[] = {shp, dash_c, (char *)script, NULL};
	pd_exec_opts x = {.argv = argv, .stdin_fd = -1};
	pd_result r;
	pd_err e = {0};
	if (pd_sandbox_exec(s, &x, &r, &e) < 0) {
		printf("#   exec failed: %s\n", e.msg);
		return strdup("(exec failed)");
	}
	char *t = dup_out(&r.out);
	if (st)
		*st = r.status;
	pd_result_free(&r);
	return t;
}

static pd_sandbox *make(void)
{
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	if (!s)
		printf("#   create failed: %s\n", e.msg);
	return s;
}

/* the value of attribute a in view v ("" if absent), in buf */
static const char *attr(const char *v, const char *a, char *buf, size_t size)
{
	size_t al = strlen(a);
	buf[0] = 0;
	for (const char *p = v; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len > al && !strncmp(p, a, al) && p[al] == '=') {
			snprintf(buf, size, "%.*s", (int)(len - al - 1), p + al + 1);
			break;
		}
		p = nl ? nl + 1 : NULL;
	}
	return buf;
}

/* ---- the file APIs ------------------------------------------------------------------------------ */

static void test_files(void)
{
	pd_sandbox *s = make();
	pd_err e = {0};
	char *out = NULL;
	size_t len = 0;
	/* what fetch_files does: init's memory map (the daemon's layout) must not come back */
	int rc = s ? pd_sandbox_read_file(s, "/proc/self/maps", 1 << 20, &out, &len, &e) : 0;
	ok(s && rc < 0 && e.code == EACCES, "fetch of /proc/self/maps is refused (%s)", rc < 0 ? e.msg : "read it");
	free(out);
	out = NULL;
	static const char *const reads[] = {"/proc/1/status", "/proc/self/environ", "/sys/class/net/lo/address",
					    "/dev/null", "/dev/pts/ptmx", "/proc"};
	int refused = 0;
	for (size_t i = 0; s && i < sizeof reads / sizeof reads[0]; i++) {
		memset(&e, 0, sizeof e);
		struct stat st;
		if (pd_sandbox_stat(s, reads[i], &st, &e) < 0 && (e.code == EACCES || e.code == ENOENT))
			refused++;
		else
			printf("#   %s was reached\n", reads[i]);
	}
	ok(refused == 6, "stat of /proc, sysfs and device files is refused (%d of 6)", refused);
	/* what "files" does: a write to init's timer slack */
	memset(&e, 0, sizeof e);
	rc = s ? pd_sandbox_write_file(s, "/proc/self/timerslack_ns", "300000000", 9, 0644, &e) : 0;
	ok(s && rc < 0 && e.code == EACCES, "a write of /proc/self/timerslack_ns is refused (%s)", rc < 0 ? e.msg : "written");
	/* a planted link, then the harness's write to it (a session's PUT .../files?path=) */
	char *t = s ? run(s, "ln -s /proc/self/timerslack_ns /tmp/ts; ln -s /etc/hostname /tmp/host; "
			     "ln -s ../../../../proc/self/oom_score_adj /tmp/oom; echo planted",
			  NULL)
		    : strdup("");
	memset(&e, 0, sizeof e);
	int w1 = s ? pd_sandbox_write_file(s, "/tmp/ts", "300000000", 9, 0644, &e) : 0;
	int c1 = e.code;
	memset(&e, 0, sizeof e);
	int w2 = s ? pd_sandbox_write_file(s, "/tmp/oom", "-1000", 5, 0644, &e) : 0;
	ok(!strcmp(t, "planted\n") && w1 < 0 && c1 == EACCES && w2 < 0 && e.code == EACCES,
	   "writes through planted links to /proc/self files are refused (%d %d)", c1, e.code);
	free(t);
	memset(&e, 0, sizeof e);
	rc = s ? pd_sandbox_read_file(s, "/tmp/host", 4096, &out, &len, &e) : -1;
	ok(rc == 0 && len > 0, "a link to a file of the sandbox's is still followed, inside it (%s)", rc ? e.msg : "ok");
	free(out);
	/* the sandbox's own files: write, list, mkdir, remove */
	memset(&e, 0, sizeof e);
	pd_dirent *d = NULL;
	size_t nd = 0;
	bool files = s && pd_sandbox_write_file(s, "/work/a.txt", "hi", 2, 0644, &e) == 0 &&
		     pd_sandbox_write_file(s, "/work/a.txt", "hello", 5, 0644, &e) == 0 &&
		     pd_sandbox_mkdir(s, "/work/x/y", 0755, &e) == 0 && pd_sandbox_list(s, "/work", &d, &nd, &e) == 0 &&
		     nd == 2 && pd_sandbox_remove(s, "/work/x/y", &e) == 0 &&
		     pd_sandbox_read_file(s, "/work/a.txt", 4096, &out, &len, &e) == 0 && len == 5;
	ok(files, "the sandbox's own files: write, rewrite, mkdir, list, remove, read (%s)", files ? "ok" : e.msg);
	free(d);
	free(out);
	t = s ? run(s, VIEW, NULL) : strdup("");
	char b[256];
	is_str(attr(t, "timerslack", b, sizeof b), "50000", "the program's timer slack is the default");
	free(t);
	if (s)
		pd_sandbox_destroy(s, NULL, 0);
}

/* ---- init's attributes across a reset ------------------------------------------------------------ */

struct attack {
	const char *name;
	const char *script;    /* the first user's program */
	const char *host_path; /* and then the harness writes host_data here (or NULL) */
	const char *host_data;
};

#define PY "python3 -c "
static const struct attack ATTACKS[] = {
	{"renice init", PY "'import os; os.setpriority(os.PRIO_PROCESS, 1, 19)'", NULL, NULL},
	{"init to SCHED_IDLE", PY "'import os; os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))'", NULL, NULL},
	{"init's CPU affinity", PY "'import os; os.sched_setaffinity(1, {0})'", NULL, NULL},
	{"init's I/O priority", PY "'import ctypes; ctypes.CDLL(None).syscall(251, 1, 1, (3 << 13) | 0)'", NULL, NULL},
	{"init's rlimits", PY "'import resource as r; r.prlimit(1, r.RLIMIT_NOFILE, (16, 16))'", NULL, NULL},
	{"timer slack through the files API", "true", "/proc/self/timerslack_ns", "300000000"},
	{"timer slack through a planted link", "ln -s /proc/self/timerslack_ns /work/ts", "/work/ts", "300000000"},
	{"personality through a planted link", "ln -s /proc/self/personality /work/p", "/work/p", "8"},
	{"umask, cwd and dispositions of the program's own", "umask 077; cd /tmp; trap '' INT TERM; sleep 0", NULL, NULL},
};
#define NATTACKS (sizeof ATTACKS / sizeof ATTACKS[0])

static void test_attacks(const char *fresh)
{
	int same[NATTRS] = {0};
	for (size_t i = 0; i < NATTACKS; i++) {
		pd_sandbox *s = make();
		if (!s) {
			ok(0, "%s: sandbox", ATTACKS[i].name);
			continue;
		}
		free(run(s, ATTACKS[i].script, NULL));
		if (ATTACKS[i].host_path)
			pd_sandbox_write_file(s, ATTACKS[i].host_path, ATTACKS[i].host_data,
					      strlen(ATTACKS[i].host_data), 0644, NULL);
		pd_err e = {0};
		bool reused = pd_sandbox_reset(s, &e) == 0;
		char *v = reused ? run(s, VIEW, NULL) : strdup(fresh);
		bool all = !strcmp(v, fresh);
		for (size_t a = 0; a < NATTRS; a++) {
			char f[256], n[256];
			bool eq = !strcmp(attr(fresh, ATTRS[a], f, sizeof f), attr(v, ATTRS[a], n, sizeof n));
			same[a] += eq;
			if (!eq)
				printf("#   after %s: %s=%s, fresh %s\n", ATTACKS[i].name, ATTRS[a], n, f);
		}
		ok(all, "%s: %s", ATTACKS[i].name,
		   reused ? "the next user's view equals a fresh sandbox's" : "the sandbox is not reused");
		if (!reused)
			printf("#   reset refused: %s\n", e.msg);
		free(v);
		pd_sandbox_destroy(s, NULL, 0);
	}
	for (size_t a = 0; a < NATTRS; a++)
		ok(same[a] == (int)NATTACKS, "%s: after every hostile user, the next one's is a fresh sandbox's (%d of %zu)",
		   ATTRS[a], same[a], NATTACKS);
}

int main(void)
{
	plan(1 + 7 + 1 + (int)NATTACKS + (int)NATTRS);
	pd_err e = {0};
	ctx = pd_ctx_new(NULL, &e);
	if (!ok(ctx != NULL, "context: %s", ctx ? "ok" : e.msg))
		return 1;
	test_files();
	pd_sandbox *s = make();
	pd_status st = PD_XX;
	char *fresh = s ? run(s, VIEW, &st) : strdup("");
	char b[256];
	ok(st == PD_OK && *attr(fresh, "env", b, sizeof b) && *attr(fresh, "nice", b, sizeof b),
	   "a fresh sandbox's view of its program's attributes");
	for (char *p = fresh, *nl; p && *p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		printf("#   fresh: %.*s\n", nl ? (int)(nl - p) : (int)strlen(p), p);
	}
	if (s)
		pd_sandbox_destroy(s, NULL, 0);
	test_attacks(fresh);
	free(fresh);
	pd_ctx_free(ctx);
	return done();
}
