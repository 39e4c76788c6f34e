/* mountorder.c: the mount table a program reads (/proc/self/mountinfo: order, options, sources;
 * mount ids aside, which a host-wide counter assigns) is the same whatever the last user of a
 * reset sandbox did: wrote in the root (the reset builds a new one), only in /tmp (the root kept,
 * the scratch replaced), nothing (everything kept), or opened a pty. */
#define _GNU_SOURCE
#include "output.h"
#include "paddock.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static char *run(pd_sandbox *s, const char *script)
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
	pd_result_free(&r);
	return t;
}

static const char VIEW[] = "awk '{$1=$2=$3=\"\"; print}' /proc/self/mountinfo";

static const struct {
	const char *name, *script;
} USERS[] = {
	{"wrote in /etc (new root)", "echo x > /etc/pd-x"},
	{"wrote only in /tmp (root kept, scratch replaced)", "echo x > /tmp/x"},
	{"only read (everything kept)", "cat /etc/hostname > /dev/null"},
	{"wrote in /usr (new root)", "echo x > /usr/pd-x"},
	{"opened a pty", "python3 -c 'import os; os.openpty()'"},
	{"wrote in /dev/shm", "echo x > /dev/shm/x"},
	{"did nothing", "true"},
	{"wrote in /etc again", "echo y > /etc/pd-y"},
};
#define NUSERS (sizeof USERS / sizeof USERS[0])

int main(void)
{
	plan(2 + (int)NUSERS + 1);
	pd_err e = {0};
	pd_ctx *ctx = pd_ctx_new(NULL, &e);
	if (!ok(ctx != NULL, "context: %s", ctx ? "ok" : e.msg))
		return 1;
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	char *fresh = s ? run(s, VIEW) : strdup("");
	ok(s && strstr(fresh, " /dev/pts ") && strstr(fresh, " /dev/shm "), "a fresh sandbox's mount table (%zu bytes)",
	   strlen(fresh));
	for (size_t i = 0; i < NUSERS; i++) {
		if (!s) {
			ok(0, "%s: no sandbox", USERS[i].name);
			continue;
		}
		free(run(s, USERS[i].script));
		bool reset = pd_sandbox_reset(s, &e) == 0;
		char *v = reset ? run(s, VIEW) : strdup("");
		if (!ok(reset && !strcmp(v, fresh), "after a user who %s: the same mount table, in the same order",
			USERS[i].name))
			first_difference(fresh, v, "now");
		free(v);
	}
	ok(s && pd_sandbox_destroy(s, NULL, 0) == 0, "the sandbox is destroyed clean");
	free(fresh);
	pd_ctx_free(ctx);
	return done();
}
