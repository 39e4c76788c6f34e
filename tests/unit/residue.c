/* Nothing left behind: counts what a sandbox could leave on the host (processes, threads, fds,
 * mounts, cgroups, namespaces, staging files, uid slots) before and after many sandboxes.
 * PADDOCK_RESIDUE_N sets the count (default 1000). */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int n = 0, ch;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* the uid slots this process holds: its open lock files under <state>/uid-slots/ */
static int held_slots(unsigned *slots, int max)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)) && n < max) {
		char p[64], t[PD_PATH];
		snprintf(p, sizeof p, "/proc/self/fd/%s", de->d_name);
		ssize_t k = readlink(p, t, sizeof t - 1);
		if (k <= 0)
			continue;
		t[k] = 0;
		char *s = strstr(t, "/uid-slots/");
		if (s)
			slots[n++] = (unsigned)strtoul(s + 11, NULL, 10);
	}
	if (d)
		closedir(d);
	return n;
}

/* host processes whose real uid is in one of this process's sandbox uid ranges */
static int sandbox_processes(void)
{
	unsigned slots[256];
	int nslots = held_slots(slots, 256);
	DIR *d = opendir("/proc");
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		char p[64], buf[4096];
		snprintf(p, sizeof p, "/proc/%s/status", de->d_name);
		if (pd_read_file(p, buf, sizeof buf) <= 0)
			continue;
		char *u = strstr(buf, "\nUid:");
		unsigned long long uid = u ? strtoull(u + 5, NULL, 10) : 0;
		for (int i = 0; i < nslots; i++)
			if (uid >= PD_UID_BASE + (unsigned long long)slots[i] * PD_UID_RANGE &&
			    uid < PD_UID_BASE + (unsigned long long)(slots[i] + 1) * PD_UID_RANGE)
				n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* allocated objects of a kernel slab (namespaces are freed asynchronously, after RCU) */
static long slab_objects(const char *name)
{
	FILE *f = fopen("/proc/slabinfo", "re");
	if (!f)
		return -1;
	char line[512];
	long v = -1;
	size_t nl = strlen(name);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, name, nl) && line[nl] == ' ')
			v = strtol(line + nl, NULL, 10);
	fclose(f);
	return v;
}

static int paddock_cgroups(const pd_ctx *c)
{
	int n = 0;
	char prefix[32];
	snprintf(prefix, sizeof prefix, "sb-%08x-", c->run_id);
	int ndirs = c->cg.version == 2 ? 1 : c->cg.v1_n;
	for (int i = 0; i < ndirs; i++) {
		DIR *d = opendir(c->cg.version == 2 ? c->cg.v2_root : c->cg.v1_dirs[i]);
		struct dirent *de;
		while (d && (de = readdir(d)))
			if (!strncmp(de->d_name, prefix, strlen(prefix)))
				n++;
		if (d)
			closedir(d);
	}
	return n;
}

typedef struct snap {
	int fds, threads, mounts, cgroups, procs, stage;
	long netns, pidns, userns;
} snap;

static void take(const pd_ctx *c, snap *s)
{
	s->fds = count_dir("/proc/self/fd");
	s->threads = count_dir("/proc/self/task");
	s->mounts = count_lines("/proc/self/mountinfo");
	s->cgroups = paddock_cgroups(c);
	s->procs = sandbox_processes();
	s->stage = count_dir(c->stage_dir);
	s->netns = slab_objects("net_namespace");
	s->pidns = slab_objects("pid_namespace");
	s->userns = slab_objects("user_namespace");
}

int main(void)
{
	int n = getenv("PADDOCK_RESIDUE_N") ? atoi(getenv("PADDOCK_RESIDUE_N")) : 1000;
	plan(13);
	pd_err e = {0};
	pd_ctx *c = pd_ctx_new(NULL, &e);
	if (!ok(c != NULL, "context: %s", c ? "ok" : e.msg))
		return 1;
	pd_sandbox_opts so = {0};
	so.limits = pd_limits_default();
	/* the program leaves work behind on purpose: a daemon, a file, a shm segment */
	static char sh[] = "/bin/sh", dash_c[] = "-c",
		    script[] = "(setsid sleep 30 &) ; echo x > /tmp/f; : > /dev/shm/s; "
			       "ipcmk -M 4096 >/dev/null 2>&1; true";
	char *argv[] = {sh, dash_c, script, NULL};
	pd_exec_opts xo = {0};
	xo.argv = argv;
	xo.stdin_fd = -1;
	/* one run first so that lazily made things (image, slots, cgroup parents) exist */
	pd_result r;
	pd_run(c, &so, &xo, &r, &e);
	pd_result_free(&r);
	snap before, after;
	take(c, &before);
	int bad = 0, dirty = 0;
	char first_bad[256] = "";
	for (int i = 0; i < n; i++) {
		if (pd_run(c, &so, &xo, &r, &e) < 0 || r.status != PD_OK) {
			if (!bad++)
				snprintf(first_bad, sizeof first_bad, "%s %s", pd_status_name(r.status), r.error);
		}
		if (strcmp(r.residue, "clean")) {
			if (!dirty++ && !first_bad[0])
				snprintf(first_bad, sizeof first_bad, "residue %s", r.residue);
		}
		pd_result_free(&r);
	}
	is_int(bad, 0, "%d sandboxes all ran OK %s", n, first_bad);
	is_int(dirty, 0, "every teardown reported a clean residue");
	/* namespaces and the last sandbox's processes vanish asynchronously: give the kernel time */
	for (int wait = 0; wait < 100; wait++) {
		take(c, &after);
		if (after.procs <= before.procs && after.netns <= before.netns + 2 &&
		    after.pidns <= before.pidns + 2 && after.userns <= before.userns + 2)
			break;
		usleep(100000);
	}
	is_int(after.fds, before.fds, "no parent-side fd left (%d)", after.fds);
	is_int(after.threads, before.threads, "no thread left");
	is_int(after.mounts, before.mounts, "no mount left in the host namespace");
	is_int(after.cgroups, before.cgroups, "no sandbox cgroup left");
	is_int(after.procs, 0, "no process in the sandboxes' uid ranges on the host");
	is_int(after.stage, 0, "the staging directory is empty on the host");
	ok(after.netns <= before.netns + 2, "network namespaces back to %ld (now %ld)", before.netns,
	   after.netns);
	ok(after.pidns <= before.pidns + 2, "pid namespaces back to %ld (now %ld)", before.pidns,
	   after.pidns);
	ok(after.userns <= before.userns + 2, "user namespaces back to %ld (now %ld)", before.userns,
	   after.userns);
	/* the uid slots this process holds are reused, not one per sandbox */
	int slots = count_dir("/proc/self/fd") - before.fds;
	is_int(slots, 0, "uid slots are recycled");
	pd_ctx_free(c);
	return done();
}
