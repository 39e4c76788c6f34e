/* slots.c: uid slots are exclusive per host (flock), reused within a process, and freed when the
 * holding process ends, however it ends.
 *
 * A process starts probing at slot (pid * 64) % PD_UID_SLOTS. To make another process probe
 * exactly the slots this one holds, the test forks children at chosen pids (clone3 with set_tid,
 * which root may do), so every cross-process check below is deterministic. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp[] = "/tmp/paddock-unit-slots-XXXXXX";

static void rm_rf(const char *path)
{
	char cmd[PD_PATH + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", path);
}

/* Forks a child whose pid makes pd_slots start probing at `start` (a multiple of 64). */
static pid_t fork_at(uint32_t start)
{
	long pid_max = 32768;
	char b[32];
	if (pd_read_file("/proc/sys/kernel/pid_max", b, sizeof b) > 0)
		pid_max = atol(b);
	uint32_t per = PD_UID_SLOTS / 64; /* pids that start at the same slot are this far apart */
	for (long p = (pid_max / 2 / per) * per + start / 64; p < pid_max; p += per) {
		pid_t want = (pid_t)p;
		struct clone_args ca;
		memset(&ca, 0, sizeof ca);
		ca.exit_signal = SIGCHLD;
		ca.set_tid = (uint64_t)(uintptr_t)&want;
		ca.set_tid_size = 1;
		fflush(stdout);
		long r = syscall(SYS_clone3, &ca, sizeof ca);
		if (r >= 0)
			return (pid_t)r;
		if (errno != EEXIST)
			return -1;
	}
	errno = EAGAIN;
	return -1;
}

/* A child at `start` takes one slot with its own pd_slots, reports it, then waits for a byte on
 * hold (if >= 0) and ends without freeing anything, like a crash. Returns the slot or -1. */
static int hold_w = -1; /* the write end of the holder's pipe: children must not keep it open */

static long child_get(uint32_t start, int hold, pid_t *pid_out)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork_at(start);
	if (pid == 0) {
		close(p[0]);
		if (hold_w >= 0)
			close(hold_w);
		pd_slots *s;
		uint32_t slot = UINT32_MAX;
		if (pd_slots_init(&s, tmp, NULL) < 0 || pd_slot_get(s, &slot, NULL) < 0)
			slot = UINT32_MAX;
		ssize_t w = write(p[1], &slot, sizeof slot);
		(void)w;
		char c;
		if (hold >= 0)
			w = read(hold, &c, 1);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0) {
		printf("# clone3 with set_tid: %s\n", strerror(errno));
		close(p[0]);
		return -1;
	}
	uint32_t slot = UINT32_MAX;
	ssize_t n = read(p[0], &slot, sizeof slot);
	close(p[0]);
	if (pid_out)
		*pid_out = pid;
	else
		waitpid(pid, NULL, 0);
	return n == sizeof slot && slot != UINT32_MAX ? (long)slot : -1;
}

typedef struct grab {
	pd_slots *s;
	uint32_t got[100];
	int n;
} grab;

static void *grabber(void *arg)
{
	grab *g = arg;
	for (int i = 0; i < 100; i++)
		if (pd_slot_get(g->s, &g->got[g->n], NULL) == 0)
			g->n++;
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	if (geteuid() != 0) {
		printf("1..0 # SKIP choosing child pids needs root\n");
		return 0;
	}
	plan(21);
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	pd_slots *s = NULL;
	pd_err e = {0};
	ok(pd_slots_init(&s, tmp, &e) == 0 && s, "init slots in %s (%s)", tmp, e.msg);
	char dir[PD_PATH];
	struct stat st;
	snprintf(dir, sizeof dir, "%s/uid-slots", tmp);
	ok(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700, "uid-slots dir, mode 0700");

	uint32_t a = UINT32_MAX, b = UINT32_MAX;
	ok(pd_slot_get(s, &a, &e) == 0 && pd_slot_get(s, &b, &e) == 0, "two gets");
	ok(a != b && a < PD_UID_SLOTS && b < PD_UID_SLOTS, "two different slots (%u, %u)", a, b);
	uint32_t start = ((uint32_t)getpid() * 64u) % PD_UID_SLOTS;
	ok(a == start && b == (start + 1) % PD_UID_SLOTS, "a private state dir: slots are taken from this process's start (%u)", start);

	pd_slot_put(s, b);
	uint32_t c = UINT32_MAX;
	ok(pd_slot_get(s, &c, &e) == 0 && c == b, "put then get reuses the slot (%u)", c);
	pd_slot_put(s, c);
	pd_slot_put(s, PD_UID_SLOTS + 5); /* not a slot: ignored */
	uint32_t d = UINT32_MAX;
	ok(pd_slot_get(s, &d, &e) == 0 && d == c, "a put of a bogus slot number is ignored");

	/* another process cannot take a slot this one holds, and takes the next free one */
	long other = child_get(a, -1, NULL);
	ok(other >= 0, "a child probing from slot %u gets a slot", a);
	ok(other != a && other != b, "... not one this process holds (%ld)", other);
	is_int(other, (a + 2) % PD_UID_SLOTS, "... but the next free one");
	long again = child_get(a, -1, NULL);
	is_int(again, other, "the child's slot was freed when it ended");

	/* a holder that ends without cleaning up (a crash) frees its slots too */
	uint32_t far = (a + PD_UID_SLOTS / 2) % PD_UID_SLOTS;
	int hold[2];
	if (pipe(hold) < 0)
		return 1;
	hold_w = hold[1];
	pid_t holder = -1;
	long held = child_get(far, hold[0], &holder);
	is_int(held, far, "a holder process takes slot %u", far);
	long blocked = child_get(far, -1, NULL);
	ok(blocked >= 0 && blocked != held, "while it lives, another process cannot take it (got %ld)", blocked);
	close(hold[1]); /* the holder reads EOF and _exits */
	hold_w = -1;
	int ws = 0;
	ok(holder > 0 && waitpid(holder, &ws, 0) == holder, "the holder ended");
	close(hold[0]);
	long freed = child_get(far, -1, NULL);
	is_int(freed, far, "after it ended, its slot is free again");

	/* threads: 200 gets from two threads give 200 different slots */
	grab g1 = {s, {0}, 0}, g2 = {s, {0}, 0};
	pthread_t t1, t2;
	pthread_create(&t1, NULL, grabber, &g1);
	pthread_create(&t2, NULL, grabber, &g2);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	uint32_t all[203];
	int n = 0;
	for (int i = 0; i < g1.n; i++)
		all[n++] = g1.got[i];
	for (int i = 0; i < g2.n; i++)
		all[n++] = g2.got[i];
	all[n++] = a;
	all[n++] = d;
	qsort(all, (size_t)n, sizeof all[0], cmp_u32);
	int dups = 0;
	for (int i = 1; i < n; i++)
		dups += all[i] == all[i - 1];
	ok(g1.n == 100 && g2.n == 100, "two threads got 100 slots each");
	is_int(dups, 0, "no slot was handed out twice");
	for (int i = 0; i < g1.n; i++)
		pd_slot_put(s, g1.got[i]);
	for (int i = 0; i < g2.n; i++)
		pd_slot_put(s, g2.got[i]);

	/* a put keeps the lock: another process still cannot take the slot */
	pd_slot_put(s, a);
	pd_slot_put(s, d);
	long after_put = child_get(a, -1, NULL);
	bool among = false;
	for (int i = 0; i < n; i++)
		among |= after_put == (long)all[i];
	ok(after_put >= 0 && !among, "slots put back stay locked by this process (another got %ld)", after_put);

	/* pd_slots_free releases every lock */
	pd_slots_free(s);
	long reuse = child_get(a, -1, NULL);
	is_int(reuse, a, "after pd_slots_free, another process takes slot %u", a);

	/* the state dir may not be usable */
	char bad[PD_PATH];
	snprintf(bad, sizeof bad, "%s/file", tmp);
	int fd = open(bad, O_WRONLY | O_CREAT, 0644);
	close(fd);
	pd_slots *s2 = NULL;
	memset(&e, 0, sizeof e);
	ok(pd_slots_init(&s2, bad, &e) == -1 && e.code == ENOTDIR, "a state dir that is a file: ENOTDIR (%s)", e.msg);
	ok(strstr(e.msg, bad) != NULL, "... naming it");
	rm_rf(tmp);
	return done();
}
