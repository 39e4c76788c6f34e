/* paddock bench: what our sandboxes leave on the host after a phase, told apart from the
 * sandboxes of others on a shared host. */
#define _GNU_SOURCE
#include "bench_case.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The host uids of sandbox slots (lib/internal/internal.h: PD_UID_BASE, PD_UID_RANGE, PD_UID_SLOTS). A
 * context keeps every slot it used locked until it is freed, so while ours lives, a process under
 * the uids of one of our slots can only be a leftover of ours; other sandboxes on a shared host
 * run in the same range and must not be taken for ours. */
#define SB_UID_BASE  0x40000000u
#define SB_UID_RANGE 65536u
#define SB_SLOTS     16384u

static uint64_t our_slots[SB_SLOTS / 64]; /* a bit per slot one of our sandboxes had */
static char our_prefix[24];		  /* "sb-<run id>-": our sandbox ids and cgroup names */
static bool our_prefix_set;
static pthread_mutex_t our_prefix_lock = PTHREAD_MUTEX_INITIALIZER;

void bench_note_sandbox(const pd_sandbox *s)
{
	uint32_t base = pd_sandbox_uid_base(s);
	if (base >= SB_UID_BASE && (base - SB_UID_BASE) / SB_UID_RANGE < SB_SLOTS) {
		uint32_t k = (base - SB_UID_BASE) / SB_UID_RANGE;
		__atomic_fetch_or(&our_slots[k / 64], 1ull << (k % 64), __ATOMIC_RELAXED);
	}
	if (__atomic_load_n(&our_prefix_set, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&our_prefix_lock);
	const char *id = pd_sandbox_id(s);
	const char *dash = strncmp(id, "sb-", 3) ? NULL : strchr(id + 3, '-');
	if (!our_prefix_set && dash && (size_t)(dash - id) + 1 < sizeof our_prefix) {
		memcpy(our_prefix, id, (size_t)(dash - id) + 1);
		our_prefix[dash - id + 1] = 0;
		__atomic_store_n(&our_prefix_set, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&our_prefix_lock);
}

/* Host processes (and zombies) whose real uid lies in the sandbox range: ours, and others'. */
static void count_slot_procs(leftovers *l)
{
	DIR *d = opendir("/proc");
	if (!d) {
		l->procs = l->others = -1;
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char path[300], buf[4096];
		snprintf(path, sizeof path, "/proc/%s/status", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* it ended meanwhile */
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		const char *u = strstr(buf, "\nUid:");
		unsigned long uid;
		if (!u || sscanf(u + 5, "%lu", &uid) != 1)
			continue;
		if (uid < SB_UID_BASE || uid >= SB_UID_BASE + (uint64_t)SB_SLOTS * SB_UID_RANGE)
			continue;
		uint32_t k = (uint32_t)((uid - SB_UID_BASE) / SB_UID_RANGE);
		if (__atomic_load_n(&our_slots[k / 64], __ATOMIC_RELAXED) & (1ull << (k % 64)))
			l->procs++;
		else
			l->others++;
	}
	closedir(d);
}

/* Sandbox cgroups named after our context, under <every cgroup mount>/paddock (v1 and v2). */
static void count_our_cgroups(leftovers *l)
{
	if (!__atomic_load_n(&our_prefix_set, __ATOMIC_ACQUIRE))
		return;
	FILE *f = fopen("/proc/self/mounts", "re");
	if (!f) {
		l->cgroups = -1;
		return;
	}
	char line[1024];
	size_t plen = strlen(our_prefix);
	while (fgets(line, sizeof line, f)) {
		char mnt[512], type[32];
		if (sscanf(line, "%*s %511s %31s", mnt, type) != 2 ||
		    (strcmp(type, "cgroup") && strcmp(type, "cgroup2")))
			continue;
		char dir[600];
		snprintf(dir, sizeof dir, "%s/paddock", mnt);
		DIR *d = opendir(dir);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, our_prefix, plen))
				l->cgroups++;
		closedir(d);
	}
	fclose(f);
}

void bench_count_leftovers(leftovers *l)
{
	memset(l, 0, sizeof *l);
	count_slot_procs(l);
	count_our_cgroups(l);
}

uint64_t bench_leftovers_bad(const leftovers *l)
{
	return (uint64_t)(l->procs > 0 ? l->procs : 0) +
	       (uint64_t)(l->cgroups > 0 ? l->cgroups : 0);
}
