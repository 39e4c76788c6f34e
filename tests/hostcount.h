/* Host-side counts of what sandboxes could leave behind: processes in this process's sandbox
 * uid ranges, threads, fds, mounts, cgroups, staging files, namespaces. Shared by the residue test
 * and the soak. */
#ifndef PADDOCK_HOSTCOUNT_H
#define PADDOCK_HOSTCOUNT_H

#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline int count_dir(const char *path)
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

static inline int count_lines(const char *path)
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

/* the uid slots this process holds: its open lock files under <run dir>/uid-slots/ */
static inline int held_slots(unsigned *slots, int max)
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
static inline int sandbox_processes(void)
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

/* Live objects of a kernel slab cache (namespaces are freed asynchronously, after RCU).
 * /proc/slabinfo counts every object of a per-CPU slab as active, so its figure drifts by whole
 * slabs with unrelated activity (a CI run saw user_namespace at 156 with none alive). SLUB's
 * sysfs gives the exact figure: `shrink` first returns per-CPU partial slabs to the node lists,
 * then `objects` counts the objects in use. /proc/slabinfo is the fallback. */
static inline long slab_objects(const char *name)
{
	char p[128];
	snprintf(p, sizeof p, "/sys/kernel/slab/%s/shrink", name);
	FILE *f = fopen(p, "we");
	if (f) {
		fputs("1", f);
		fclose(f);
	}
	snprintf(p, sizeof p, "/sys/kernel/slab/%s/objects", name);
	char buf[256];
	if (pd_read_file(p, buf, sizeof buf) > 0)
		return strtol(buf, NULL, 10);
	f = fopen("/proc/slabinfo", "re");
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

static inline int paddock_cgroups(const pd_ctx *c)
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
	int fds, slot_locks, threads, mounts, cgroups, procs, stage;
	long netns, pidns, userns;
	long netns_idle; /* kept by the context for reuse (lib/netns.c), each with NETNS_IDLE_FDS fds */
} snap;

/* an idle network namespace holds its nsfs fd (lib/netns.c) */
#define NETNS_IDLE_FDS 1

/* fds of this process other than its uid-slot locks (slots are kept and recycled by design) */
static inline int count_fds(int *slot_locks)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0, locks = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[64], t[PD_PATH];
		snprintf(p, sizeof p, "/proc/self/fd/%s", de->d_name);
		ssize_t k = readlink(p, t, sizeof t - 1);
		t[k > 0 ? k : 0] = 0;
		if (strstr(t, "/uid-slots/"))
			locks++;
		else
			n++;
	}
	if (d)
		closedir(d);
	if (slot_locks)
		*slot_locks = locks;
	return n;
}

static inline void take(const pd_ctx *c, snap *s)
{
	s->fds = count_fds(&s->slot_locks);
	s->threads = count_dir("/proc/self/task");
	s->mounts = count_lines("/proc/self/mountinfo");
	s->cgroups = paddock_cgroups(c);
	s->procs = sandbox_processes();
	s->stage = count_dir(c->stage_dir);
	s->netns = slab_objects("net_namespace");
	s->pidns = slab_objects("pid_namespace");
	s->userns = slab_objects("user_namespace");
	pd_netns_stats ns;
	pd_ctx_netns_stats((pd_ctx *)c, &ns);
	s->netns_idle = (long)ns.idle;
}

/* fds of this process, the idle network namespaces' excepted */
static inline long own_fds(const snap *s)
{
	return s->fds - NETNS_IDLE_FDS * s->netns_idle;
}


/* Namespaces still held by something outside paddock (a concurrent test, a host service) move
 * the count a little; a leak of N sandboxes shows as +N, far beyond this. */
#define NS_SLACK 8

/* Waits (up to ~120 s: the kernel frees network namespaces in a worker, in batches, later still
 * on a loaded machine) for asynchronously freed things to settle back to `before`. */
static inline void settle(const pd_ctx *c, const snap *before, snap *after)
{
	for (int wait = 0; wait < 1200; wait++) {
		take(c, after);
		if (after->procs <= before->procs &&
		    after->netns <= before->netns + after->netns_idle + NS_SLACK &&
		    after->pidns <= before->pidns + NS_SLACK && after->userns <= before->userns + NS_SLACK)
			return;
		usleep(100000);
	}
}

#endif
