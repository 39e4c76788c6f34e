/* gvisor_sandbox.c: the gvisor tier's kept sandbox (lib/gvisor/sandbox.c) through the public
 * pd_sandbox calls pools and sessions use: several execs in one sandbox with env, cwd, stdin and
 * exit statuses, files the host writes and reads at /work and /tmp (and refused elsewhere), a
 * step's time limit with step_kill (the sandbox stays READY) and without (TIMED_OUT), the reset
 * refused (the tier's reuse rule is none), and a destroy that leaves nothing behind. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ARGV(...) ((char *const *)(const char *const[]){__VA_ARGS__, NULL})
#define NTESTS 27 /* of test_sandbox */

static pd_ctx *ctx;

static char out_buf[4][4096];
static int out_k;

static const char *text(const pd_output *o)
{
	char *b = out_buf[out_k++ % 4];
	size_t n = o->head_len < sizeof out_buf[0] - 1 ? o->head_len : 0;
	memcpy(b, o->head ? o->head : "", n);
	b[n] = 0;
	return b;
}

static int run(pd_sandbox *s, pd_exec_opts *x, pd_result *r)
{
	pd_err e = {0};
	int rc = pd_sandbox_exec(s, x, r, &e);
	if (rc < 0)
		printf("#   exec refused: %s\n", PD_ERR_STR(&e));
	return rc;
}

/* entries of the state directory's gvisor/ whose name starts with prefix */
static int count_in_state(const char *prefix)
{
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/gvisor", pd_ctx_state_dir(ctx));
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += !strncmp(de->d_name, prefix, strlen(prefix));
	if (d)
		closedir(d);
	return n;
}

/* pid's parent from /proc/PID/status, -1 if it is gone */
static int ppid_of(int pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	int ppid = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "PPid: %d", &ppid) == 1)
			break;
	if (f)
		fclose(f);
	return ppid;
}

/* processes whose parent is this process (with grand: whose parent's parent is) */
static int descendants(bool grand)
{
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		int pid = atoi(de->d_name), ppid = pid > 0 ? ppid_of(pid) : -1;
		if (ppid > 0)
			n += (grand ? ppid_of(ppid) : ppid) == getpid();
	}
	if (d)
		closedir(d);
	return n;
}

static void test_sandbox(void)
{
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default(), .isolation = PD_ISO_GVISOR};
	/* the state directory is the host's default, which other runs use too: what this one adds */
	int scratch0 = count_in_state("scratch-"), bundle0 = count_in_state("bundle-");
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	ok(s != NULL, "create a gvisor sandbox (%s)", PD_ERR_STR(&e));
	if (!s) {
		for (int i = 1; i < NTESTS; i++)
			ok(0, "no sandbox");
		return;
	}
	ok(pd_sandbox_state(s) == PD_READY && !strncmp(pd_sandbox_id(s), "sb-", 3), "READY, id %s",
	   pd_sandbox_id(s));
	/* runsc create leaves the Sentry and gofer as orphans: adopted by the host's init, runsc
	 * delete waited for init's reaping (1.8 s a sandbox here) */
	int kept = descendants(true);
	ok(descendants(false) == 1 && kept >= 1,
	   "the sandbox's host processes are adopted by paddock's own reaper, not the host's init (%d)", kept);

	pd_result r;
	pd_exec_opts x = {.argv = ARGV("sh", "-c", "echo hello > /tmp/f; echo one; echo err >&2; exit 3")};
	ok(run(s, &x, &r) == 0 && r.status == PD_RE && r.exit_code == 3, "exec 1: RE 3 (%s)", pd_status_name(r.status));
	ok(!strcmp(text(&r.out), "one\n") && !strcmp(text(&r.err), "err\n"), "stdout and stderr apart");
	is_str(r.isolation, "gvisor", "the result names its isolation");
	char use[64];
	pd_sandbox_use_id(s, use, sizeof use);
	ok(!strcmp(r.sandbox_id, pd_sandbox_id(s)) && !strcmp(r.use_id, use), "sandbox and use ids (%s)", r.use_id);
	pd_result_free(&r);
	ok(pd_sandbox_state(s) == PD_READY, "READY again after the exec");

	x = (pd_exec_opts){.argv = ARGV("sh", "-c", "cat /tmp/f; pwd; echo \"$FOO\"; cat")};
	x.envp = ARGV("PATH=/usr/bin:/bin", "FOO=bar");
	x.cwd = "/work";
	x.stdin_data = "in\n";
	x.stdin_len = 3;
	run(s, &x, &r);
	is_str(text(&r.out), "hello\n/work\nbar\nin\n", "exec 2 sees exec 1's file; env, cwd and stdin as given");
	pd_result_free(&r);

	/* files: the host's at /work and /tmp, seen inside and back */
	ok(pd_sandbox_mkdir(s, "/work/a/b", 0755, &e) == 0, "mkdir /work/a/b (%s)", PD_ERR_STR(&e));
	ok(pd_sandbox_write_file(s, "/work/a/b/in.txt", "data\n", 5, 0644, &e) == 0, "write /work/a/b/in.txt (%s)",
	   PD_ERR_STR(&e));
	x = (pd_exec_opts){.argv = ARGV("sh", "-c", "cat /work/a/b/in.txt; echo made > /work/out; ln -s /etc/passwd /work/l")};
	run(s, &x, &r);
	is_str(text(&r.out), "data\n", "the program reads the file the host wrote");
	pd_result_free(&r);
	char *buf = NULL;
	size_t len = 0;
	ok(pd_sandbox_read_file(s, "/work/out", 100, &buf, &len, &e) == 0 && len == 5 && !memcmp(buf, "made\n", 5),
	   "the host reads the file the program wrote");
	free(buf);
	buf = NULL;
	/* the link resolves inside /work (whose root is the directory), never to the host's file */
	ok(pd_sandbox_read_file(s, "/work/l", 1 << 20, &buf, &len, &e) < 0, "a planted link does not lead out (%s)",
	   PD_ERR_STR(&e));
	free(buf);
	ok(pd_sandbox_write_file(s, "/etc/x", "x", 1, 0644, &e) < 0 && e.code == ENOTSUP,
	   "a path outside /work, /tmp, /dev/shm is refused (%s)", PD_ERR_STR(&e));
	ok(pd_sandbox_remove(s, "/work/out", &e) == 0 && pd_sandbox_remove(s, "/work/a/b/in.txt", &e) == 0 &&
	   pd_sandbox_remove(s, "/work/a/b", &e) == 0,
	   "remove a file and a directory");

	/* a step's time limit: step_kill keeps the sandbox, its background processes gone */
	x = (pd_exec_opts){.argv = ARGV("sh", "-c", "sleep 300 & sleep 300"), .wall_ms = 500, .step_kill = true};
	run(s, &x, &r);
	ok(r.status == PD_TO, "wall 500 ms, step_kill: TO (%s)", pd_status_name(r.status));
	pd_result_free(&r);
	ok(pd_sandbox_state(s) == PD_READY, "... and the sandbox is READY");
	x = (pd_exec_opts){.argv = ARGV("sh", "-c", "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done | grep -c '^sleep 300' || true")};
	run(s, &x, &r);
	is_str(text(&r.out), "0\n", "... and no sleep of the killed step runs");
	pd_result_free(&r);

	e = (pd_err){0};
	ok(pd_sandbox_reset(s, &e) < 0 && e.code == ENOTSUP, "the reset is refused: never reused (%s)", PD_ERR_STR(&e));

	x = (pd_exec_opts){.argv = ARGV("sleep", "300"), .wall_ms = 300};
	run(s, &x, &r);
	ok(r.status == PD_TO && pd_sandbox_state(s) == PD_TIMED_OUT, "without step_kill a TO ends the sandbox (%s)",
	   pd_state_name(pd_sandbox_state(s)));
	pd_result_free(&r);
	ok(pd_sandbox_exec(s, &x, &r, &e) < 0, "... which takes no further exec");

	char res[128], id[64];
	snprintf(id, sizeof id, "%s", pd_sandbox_id(s));
	ok(pd_sandbox_destroy(s, res, sizeof res) == 0, "destroy");
	is_str(res, "clean", "... residue clean");
	char pat[160];
	snprintf(pat, sizeof pat, "/sys/fs/cgroup/*/paddock/%s", id);
	glob_t gl;
	ok(glob(pat, GLOB_NOSORT, NULL, &gl) == GLOB_NOMATCH, "no cgroup of it is left in any hierarchy (%s)", pat);
	if (gl.gl_pathc)
		globfree(&gl);
	ok(count_in_state("scratch-") == scratch0 && count_in_state("bundle-") == bundle0, "no scratch or bundle left");
	ok(descendants(false) == 0, "the reaper ended with the sandbox's processes (no child of this process left)");
}

static void test_refused(void)
{
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default(), .isolation = PD_ISO_GVISOR, .net = PD_NET_HOST};
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	ok(!s && e.code == ENOTSUP, "the host's network is refused (%s)", PD_ERR_STR(&e));
	so.net = PD_NET_LOOPBACK;
	so.limits.memory_bytes = 256 << 20;
	s = pd_sandbox_create(ctx, &so, &e);
	pd_result r;
	pd_exec_opts x = {.argv = ARGV("python3", "-c", "x = b'1' * (400 << 20)")};
	ok(s && run(s, &x, &r) == 0 && r.status == PD_ML, "a 256 MB sandbox allocating 400 MB: ML (%s)",
	   s ? pd_status_name(r.status) : PD_ERR_STR(&e));
	if (s)
		pd_result_free(&r);
	char res[128] = "";
	pd_sandbox_destroy(s, res, sizeof res);
	is_str(s ? res : "clean", "clean", "... and its destroy is clean");
}

int main(void)
{
	if (geteuid() != 0) {
		printf("1..0 # SKIP the runtime needs root\n");
		return 0;
	}
	if (access("/usr/bin/runsc", X_OK) != 0) {
		printf("1..0 # SKIP runsc is not installed\n");
		return 0;
	}
	plan(NTESTS + 4);
	pd_err e = {0};
	ctx = pd_ctx_new(NULL, &e);
	ok(ctx != NULL, "pd_ctx_new (%s)", PD_ERR_STR(&e));
	if (!ctx)
		return done();
	test_sandbox();
	test_refused();
	pd_ctx_free(ctx);
	return done();
}
