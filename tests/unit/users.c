/* users.c: the sandbox's user through the library. pd_user_resolve reads names from the image's
 * own stacked /etc/passwd and /etc/group (top layer first, whiteouts and links respected) and
 * refuses what it cannot map; a sandbox created with pd_sandbox_opts uid/gid runs its programs as
 * that user, owns /work, and the host's file operations (pd_sandbox_write_file, mkdir, open)
 * act with its ids: what they place is its own, and root's files stay out of their reach. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* a test that cannot run here counts as passed, saying why */
#define skip(why) ok(1, "# SKIP %s", why)
#define ARGV(...) ((char *const *)(const char *const[]){__VA_ARGS__, NULL})

static char tmp[] = "/tmp/pd-users-XXXXXX";

static void put(const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", tmp, rel);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void mk(const char *rel)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", tmp, rel);
	mkdir(p, 0755);
}

static void test_resolve(void)
{
	mk("top");
	mk("top/etc");
	mk("low");
	mk("low/etc");
	put("low/etc/passwd", "root:x:0:0::/root:/bin/sh\napp:x:2000:2001::/home/app:/bin/sh\nold:x:3000:3000::/:/bin/sh\n");
	put("low/etc/group", "root:x:0:\napp:x:2001:\nstaff:x:50:app\n");
	/* the top layer's passwd hides the lower one; its group is deleted (a whiteout) */
	put("top/etc/passwd", "root:x:0:0::/root:/bin/sh\napp:x:2100:2101::/home/app:/bin/sh\n");
	char wo[512];
	snprintf(wo, sizeof wo, "%s/top/etc/group", tmp);
	int wrc = mknod(wo, S_IFCHR | 0000, makedev(0, 0));
	char top[512], low[512];
	snprintf(top, sizeof top, "%s/top", tmp);
	snprintf(low, sizeof low, "%s/low", tmp);
	const char *both[] = {top, low, NULL};
	const char *lowonly[] = {low, NULL};
	uint32_t u = 9, g = 9;
	pd_err e = {0};
	ok(pd_user_resolve(lowonly, "app", &u, &g, &e) == 0 && u == 2000 && g == 2001,
	   "a name: its passwd entry's uid and gid");
	ok(pd_user_resolve(lowonly, "app:staff", &u, &g, &e) == 0 && u == 2000 && g == 50,
	   "name:group from the image's /etc/group");
	ok(pd_user_resolve(lowonly, "3000", &u, &g, &e) == 0 && u == 3000 && g == 3000, "a bare uid takes its entry's group");
	ok(pd_user_resolve(lowonly, "1234:77", &u, &g, &e) == 0 && u == 1234 && g == 77, "numbers need no passwd");
	ok(pd_user_resolve(NULL, "4000", &u, &g, &e) == 0 && u == 4000 && g == 4000, "a bare uid with no passwd: the same gid");
	ok(pd_user_resolve(both, "app", &u, &g, &e) == 0 && u == 2100 && g == 2101, "the top layer's passwd wins");
	ok(pd_user_resolve(both, "old", &u, &g, &e) < 0 && e.code == ENOENT, "a name only the hidden passwd has is unknown (%s)", e.msg);
	if (wrc == 0)
		ok(pd_user_resolve(both, "app:staff", &u, &g, &e) < 0 && e.code == ENOENT,
		   "a group file deleted by a whiteout: the group is unknown (%s)", e.msg);
	else
		skip("mknod of a whiteout refused here");
	ok(pd_user_resolve(lowonly, "nosuch", &u, &g, &e) < 0 && e.code == ENOENT && strstr(e.msg, "/etc/passwd"),
	   "a name the image lacks: ENOENT naming /etc/passwd (%s)", e.msg);
	ok(pd_user_resolve(NULL, "65533", &u, &g, &e) < 0 && e.code == ERANGE, "init's uid 65533 refused");
	ok(pd_user_resolve(NULL, "70000", &u, &g, &e) < 0 && e.code == ERANGE, "a uid past 65535 refused");
	/* a link in the image's /etc is not followed: it would be the host's file */
	mk("link");
	mk("link/etc");
	char lk[512];
	snprintf(lk, sizeof lk, "%s/link/etc/passwd", tmp);
	int lrc = symlink("/etc/passwd", lk);
	char ld[512];
	snprintf(ld, sizeof ld, "%s/link", tmp);
	const char *linked[] = {ld, NULL};
	ok(lrc == 0 && pd_user_resolve(linked, "root", &u, &g, &e) < 0 && e.code == ELOOP,
	   "a symlinked /etc/passwd is refused, not followed (%s)", e.msg);
}

static void test_sandbox(pd_ctx *ctx)
{
	pd_err e = {0};
	pd_sandbox_opts so = {.uid = 1000, .gid = 1001};
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	ok(s != NULL, "a sandbox whose user is 1000:1001");
	if (!s) {
		for (int i = 0; i < 7; i++)
			skip("no sandbox");
		return;
	}
	ok(pd_sandbox_write_file(s, "/work/placed.txt", "hi", 2, 0644, &e) == 0, "the host places /work/placed.txt");
	struct stat st;
	ok(pd_sandbox_stat(s, "/work/placed.txt", &st, &e) == 0 && st.st_uid == 1000 && st.st_gid == 1001,
	   "what the host placed belongs to the user");
	ok(pd_sandbox_stat(s, "/work", &st, &e) == 0 && st.st_uid == 1000 && st.st_gid == 1001, "/work is the user's");
	ok(pd_sandbox_write_file(s, "/etc/planted", "x", 1, 0644, &e) < 0 && e.code == EACCES,
	   "the host's write into root's /etc acts as the user: refused");
	ok(pd_sandbox_mkdir(s, "/work/d", 0755, &e) == 0 && pd_sandbox_stat(s, "/work/d", &st, &e) == 0 && st.st_uid == 1000,
	   "mkdir: the user's directory");
	pd_exec_opts x = {.argv = ARGV("sh", "-c", "echo $(id -u) $(id -g) $(cat /work/placed.txt) > /work/out; echo more >> /work/placed.txt"),
			  .stdin_fd = -1};
	pd_result r;
	memset(&r, 0, sizeof r);
	char *out = NULL;
	size_t n = 0;
	bool ran = pd_sandbox_exec(s, &x, &r, &e) == 0 && r.status == PD_OK;
	ok(ran && pd_sandbox_read_file(s, "/work/out", 4096, &out, &n, &e) == 0 && out && !strcmp(out, "1000 1001 hi\n"),
	   "the program runs as 1000:1001, reads and appends to the placed file");
	free(out);
	pd_result_free(&r);
	char residue[256];
	pd_sandbox_destroy(s, residue, sizeof residue);
	so.uid = 65533;
	s = pd_sandbox_create(ctx, &so, &e);
	ok(!s && e.code == EINVAL, "init's uid 65533 as the sandbox's user: refused (%s)", e.msg);
	if (s)
		pd_sandbox_destroy(s, residue, sizeof residue);
}

int main(void)
{
	plan(20);
	if (!mkdtemp(tmp))
		return 1;
	test_resolve();
	if (geteuid() != 0) {
		for (int i = 0; i < 8; i++)
			skip("the runtime needs root");
	} else {
		pd_err e = {0};
		pd_ctx *ctx = pd_ctx_new(NULL, &e);
		if (ctx) {
			test_sandbox(ctx);
			pd_ctx_free(ctx);
		} else {
			for (int i = 0; i < 8; i++)
				skip("pd_ctx_new failed");
		}
	}
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmp);
	return done();
}
