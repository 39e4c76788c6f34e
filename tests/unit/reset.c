/* reset.c: a reset sandbox is indistinguishable from a fresh one. Each dirty workload (files
 * everywhere, deleted and re-moded image files, fifos, links, a full disk, daemons that ignore
 * signals, stopped and orphaned processes, SysV and POSIX IPC objects, an OOM kill, a process
 * flood, a listening socket, a changed memory limit) runs in a sandbox; the sandbox is reset;
 * then a program prints everything a user can see of its sandbox (VIEW) and the result must
 * equal, byte for byte, what the same program prints in a fresh sandbox, and its result record
 * must agree (status, OOM flag, memory peak within a margin). Workloads that leave network
 * state, and sandboxes that timed out or share writable binds, must be refused. */
#define _GNU_SOURCE
#include "resetview.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <linux/landlock.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

struct workload {
	const char *name;
	const char *script;
	uint32_t uid;
	pd_status want; /* the workload's own status */
};

#define PY "python3 -c "

static const struct workload WORK[] = {
	{"files everywhere: /, /etc, /tmp, /var/tmp, /root, /dev/shm; image files changed, deleted, "
	 "re-moded; fifo, hard and symbolic links, a directory made opaque; hostname attempts",
	 "set -e; echo pwned >> /etc/passwd; echo x > /etc/new; mkdir -p /opt/a/b; echo y > /opt/a/b/c;"
	 " echo t > /tmp/a; ln /tmp/a /tmp/hard; ln -s /etc/shadow /tmp/link; mkfifo /tmp/fifo;"
	 " echo v > /var/tmp/v; echo r > /root/.profile; echo s > /dev/shm/seg;"
	 " rm -f /usr/bin/ls; chmod 700 /usr/share; rm -rf /usr/lib/python3/dist-packages;"
	 " mkdir /usr/lib/python3/dist-packages; touch /usr/lib/python3/dist-packages/evil.py;"
	 " rm -rf /tmp/gone; mkdir /tmp/gone; cd /; chmod 700 /tmp; chmod 700 /;"
	 " hostname evil 2>/dev/null || true; domainname evil 2>/dev/null || true",
	 0, PD_OK},
	{"the same as an unprivileged user (uid 1000): /tmp, /dev/shm, /var/tmp",
	 "echo a > /tmp/u; echo b > /dev/shm/u; echo c > /var/tmp/u; mkdir /tmp/ud; chmod 777 /tmp/ud",
	 1000, PD_OK},
	{"the disk filled to ENOSPC (tmpfs) and /dev/shm filled too",
	 "dd if=/dev/zero of=/tmp/fill bs=1M 2>/dev/null; dd if=/dev/zero of=/dev/shm/fill bs=1M 2>/dev/null;"
	 " df -k / | tail -1; true",
	 0, PD_OK},
	{"daemons left running: setsid, double fork, SIGTERM/SIGHUP ignored, a stopped process",
	 "setsid sh -c 'trap \"\" TERM HUP INT; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 &"
	 " (sh -c 'sleep 1000 & exit 0' &) ; sleep 999 </dev/null >/dev/null 2>&1 & kill -STOP $!;"
	 " nohup sleep 998 >/dev/null 2>&1 & sleep 0.2",
	 0, PD_OK},
	{"200 sleeping processes", "for i in $(seq 200); do sleep 1000 & done; sleep 0.2", 0, PD_OK},
	{"SysV shared memory, message queue and semaphore set; a POSIX message queue",
	 PY "'import ctypes\nc=ctypes.CDLL(None,use_errno=True)\nr=ctypes.CDLL(\"librt.so.1\",use_errno=True)\n"
	 "assert c.shmget(1234,65536,0o1666)>=0\nassert c.msgget(4321,0o1666)>=0\n"
	 "assert c.semget(5678,4,0o1666)>=0\nassert r.mq_open(b\"/pd-dirty\",0o102,0o666,None)>=0\n"
	 "for i in range(5): c.shmget(0,4096,0o600); c.msgget(0,0o600)'",
	 0, PD_OK},
	{"init tampered with: prlimit on pid 1 (nofile, address space, processes), 300 SIGCHLDs to it",
	 "prlimit --pid 1 --nofile=3:3 --as=100000000 --nproc=0:0 2>/dev/null;"
	 " for i in $(seq 300); do kill -CHLD 1 2>/dev/null; done; true",
	 0, PD_OK},
	{"kernel memory charged to the sandbox: 300,000 lookups of missing names in the image",
	 PY "'import os\nfor i in range(300000): os.path.exists(\"/usr/lib/pd-missing-%d\" % i)'", 0, PD_OK},
	{"memory over the limit (OOM kill)",
	 PY "'x=bytearray(400<<20); print(len(x))'", 0, PD_ML},
	{"page cache and a listening socket, no traffic",
	 "cat /usr/bin/* > /dev/null 2>&1; " PY
	 "'import socket,os,time;s=socket.socket();s.bind((\"0.0.0.0\",80));s.listen()\n"
	 "if os.fork()==0: time.sleep(1000)'",
	 0, PD_OK},
};
#define NWORK (sizeof WORK / sizeof WORK[0])

static void test_workloads(const struct view *fresh)
{
	for (size_t i = 0; i < NWORK; i++) {
		pd_sandbox *s = make();
		if (!s) {
			ok(0, "%s: sandbox", WORK[i].name);
			ok(0, "skipped");
			ok(0, "skipped");
			continue;
		}
		pd_result r;
		if (sh(s, WORK[i].script, WORK[i].uid, &r) == 0) {
			if (r.status != WORK[i].want) {
				char *err = dup_out(&r.err);
				printf("#   workload status %s exit %d: %.300s\n", pd_status_name(r.status), r.exit_code,
				       err);
				free(err);
			}
			pd_result_free(&r);
		}
		pd_err e = {0};
		uint64_t t0 = pd_now_us();
		int rc = pd_sandbox_reset(s, &e);
		uint64_t took = pd_now_us() - t0;
		if (!ok(rc == 0, "%s: reset (%.2f ms)", WORK[i].name, (double)took / 1000))
			printf("#   %s\n", e.msg);
		if (rc == 0) {
			struct view v = look(s);
			check_against(fresh, &v, WORK[i].name);
			view_free(&v);
		} else {
			ok(0, "skipped");
			ok(0, "skipped");
		}
		char residue[128];
		if (pd_sandbox_destroy(s, residue, sizeof residue) != 0)
			printf("#   residue: %s\n", residue);
	}
}

/* A sandbox is reset many times over, with a dirty workload each time: nothing accumulates. */
static void test_repeated(const struct view *fresh)
{
	pd_sandbox *s = make();
	int fails = 0;
	for (int i = 0; s && i < 20; i++) {
		pd_result r;
		if (sh(s, WORK[i % 2 ? 0 : 5].script, 0, &r) == 0)
			pd_result_free(&r);
		pd_err e = {0};
		if (pd_sandbox_reset(s, &e) < 0) {
			printf("#   reset %d: %s\n", i, e.msg);
			fails++;
			break;
		}
	}
	ok(s && fails == 0 && pd_sandbox_resets(s) == 20, "20 dirty uses and resets of one sandbox");
	if (s && !fails) {
		struct view v = look(s);
		check_against(fresh, &v, "20 resets");
		view_free(&v);
	} else {
		ok(0, "skipped");
		ok(0, "skipped");
	}
	char residue[128] = "";
	ok(s && pd_sandbox_destroy(s, residue, sizeof residue) == 0, "then it is destroyed clean (%s)", residue);
}

/* Network state a fresh namespace does not have makes the reset refuse. */
static void test_refused(void)
{
	pd_sandbox *s = make();
	pd_result r;
	pd_err e = {0};
	if (s && sh(s, PY "'import socket;s=socket.socket();s.bind((\"127.0.0.1\",0));s.listen();"
			"c=socket.create_connection(s.getsockname());a,_=s.accept();c.send(b\"x\");a.recv(1);"
			"c.close();a.close()'",
		    0, &r) == 0)
		pd_result_free(&r);
	int rc = s ? pd_sandbox_reset(s, &e) : 0;
	ok(s && rc < 0 && pd_sandbox_state(s) == PD_FAILED, "traffic on lo (TIME_WAIT): reset refused (%s)",
	   e.msg);
	char residue[128] = "";
	ok(s && pd_sandbox_destroy(s, residue, sizeof residue) == 0, "and the sandbox is destroyed clean (%s)",
	   residue);

	s = make();
	static char sl[] = "/bin/sleep", ten[] = "10";
	char *argv[] = {sl, ten, NULL};
	pd_exec_opts x = {.argv = argv, .stdin_fd = -1, .wall_ms = 100};
	if (s && pd_sandbox_exec(s, &x, &r, &e) == 0)
		pd_result_free(&r);
	rc = s ? pd_sandbox_reset(s, &e) : 0;
	ok(s && rc < 0, "a sandbox whose exec timed out is not reset (%s)", e.msg);
	ok(s && pd_sandbox_destroy(s, NULL, 0) == 0, "and is destroyed clean");

	pd_bind b = {.src = "/tmp", .dst = "/mnt/rw", .rw = true};
	pd_sandbox_opts so = {.limits = pd_limits_default(), .binds = &b, .nbinds = 1};
	s = pd_sandbox_create(ctx, &so, &e);
	rc = s ? pd_sandbox_reset(s, &e) : 0;
	ok(s && rc < 0 && pd_sandbox_state(s) == PD_READY, "a sandbox with a writable bind is not reset (%s)",
	   e.msg);
	ok(s && pd_sandbox_destroy(s, NULL, 0) == 0, "and is destroyed clean");
}

/* A memory limit a request changed is back to the sandbox's own after a reset. */
static void test_memory_limit(void)
{
	pd_err e = {0};
	pd_result r;
	int st1 = -1, st2 = -1;
	const char *hog = PY "'x=bytearray(100<<20); print(len(x))'";
	/* the lowered limit applies (the OOM killer may pick init, a copy of this process, when
	 * this process is the bigger one, as under ASan: then the exec ends XX) */
	pd_sandbox *s = make();
	if (s && pd_sandbox_set_memory(s, 32u << 20, &e) == 0 && sh(s, hog, 0, &r) == 0) {
		st1 = r.status;
		pd_result_free(&r);
	}
	if (s)
		pd_sandbox_destroy(s, NULL, 0);
	s = make();
	if (s && pd_sandbox_set_memory(s, 32u << 20, &e) == 0 && pd_sandbox_reset(s, &e) == 0 &&
	    sh(s, hog, 0, &r) == 0) {
		st2 = r.status;
		pd_result_free(&r);
	}
	ok((st1 == PD_ML || st1 == PD_XX) && st2 == PD_OK,
	   "a lowered memory limit (32 MiB: %s for 100 MB) is restored by the reset (then %s)",
	   st1 >= 0 ? pd_status_name((pd_status)st1) : "?", st2 >= 0 ? pd_status_name((pd_status)st2) : e.msg);
	if (s)
		pd_sandbox_destroy(s, NULL, 0);
}

/* Share of the pages of the image's python sources in the page cache, 0..1; with drop, evicted
 * first (the files are not mapped by anyone, so fadvise takes them out). */
static double py_sources(bool drop)
{
	glob_t g;
	if (glob("/usr/lib/python3*/*.py", 0, NULL, &g) != 0)
		return -1;
	size_t pages = 0, in = 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		int fd = open(g.gl_pathv[i], O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || !st.st_size) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (drop)
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			continue;
		size_t n = ((size_t)st.st_size + 4095) / 4096;
		unsigned char *v = malloc(n);
		if (v && mincore(m, (size_t)st.st_size, v) == 0) {
			for (size_t k = 0; k < n; k++)
				in += v[k] & 1;
			pages += n;
		}
		free(v);
		munmap(m, (size_t)st.st_size);
	}
	globfree(&g);
	return pages ? (double)in / (double)pages : -1;
}

/* What a user was first to read of the image stays in the page cache across the reset (evicting
 * it made every next program read it from disk again), and the next exec's memory peak does not
 * count it; what one user read beyond an eighth of the limit is reclaimed. */
static void test_page_cache(void)
{
	pd_sandbox *s = make();
	double before = py_sources(true);
	pd_result r;
	int st = -1;
	if (s && sh(s, "cat /usr/lib/python3*/*.py > /dev/null", 0, &r) == 0) {
		st = r.status;
		pd_result_free(&r);
	}
	double read = py_sources(false);
	pd_err e = {0};
	bool reset = s && pd_sandbox_reset(s, &e) == 0;
	double after = py_sources(false);
	ok(st == PD_OK && before < 0.2 && read > 0.9 && reset && after > 0.9,
	   "the image's files a user read first stay cached across the reset (%.0f%% before, "
	   "%.0f%% read, %.0f%% after) %s",
	   before * 100, read * 100, after * 100, reset ? "" : e.msg);
	uint64_t peak = UINT64_MAX;
	if (reset && sh(s, "true", 0, &r) == 0) {
		peak = r.memory_peak_bytes;
		pd_result_free(&r);
	}
	ok(peak < (2u << 20), "and the next exec's memory peak does not count them (%llu KiB)",
	   (unsigned long long)(peak >> 10));
	/* 80 MiB of the image's files read once: over the eighth of 256 MiB that may stay */
	static const char big[] = "find /usr/lib -type f -size +100k | head -400 | xargs cat |"
				  " head -c 80M > /dev/null";
	st = -1;
	if (reset && sh(s, big, 0, &r) == 0) {
		st = r.status;
		pd_result_free(&r);
	}
	reset = st == PD_OK && pd_sandbox_reset(s, &e) == 0;
	/* the sandbox's memory cgroup, v1 or v2, as this machine has it */
	char p1[256], p2[256], b[64] = "";
	if (reset) {
		const char *id = pd_sandbox_id(s);
		snprintf(p1, sizeof p1, "/sys/fs/cgroup/memory/paddock/%s/memory.usage_in_bytes", id);
		snprintf(p2, sizeof p2, "/sys/fs/cgroup/paddock/%s/memory.current", id);
		if (pd_read_file(p1, b, sizeof b) <= 0)
			pd_read_file(p2, b, sizeof b);
	}
	/* 32 MiB, and what the kernel's per-CPU charge batches hold */
	uint64_t left = strtoull(b, NULL, 10);
	ok(reset && b[0] && left <= (34u << 20),
	   "a user who read 80 MiB of the image: the reset leaves at most an eighth of the limit "
	   "charged (%llu KiB; %s)",
	   (unsigned long long)(left >> 10), reset ? "reset" : e.msg);
	if (s)
		pd_sandbox_destroy(s, NULL, 0);
}

/* The overlay of /usr (the default image's layer mounted elsewhere than "/") is kept by a reset
 * when the last user did not touch it, and rebuilt when it did anything there, reading the
 * directory or opening it included: each case is reset, then /usr's device number (its overlay
 * superblock) says which happened. A kept one must leave a view equal to a fresh sandbox's. */
/* The devices of "/" and /usr: an overlay rebuilt is a new device. */
static char *root_dev(pd_sandbox *s)
{
	pd_result r;
	if (sh(s, "stat -c %d / /usr | paste -sd/", 0, &r) < 0)
		return strdup("?");
	char *t = dup_out(&r.out);
	pd_result_free(&r);
	return t;
}

/* Whether programs run under Landlock (lib/landlock.c), known before the context is made: the
 * plan depends on it. */
static bool landlock_on(void)
{
	const char *v = getenv("PADDOCK_LANDLOCK");
	return !(v && !strcmp(v, "off")) &&
	       syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) > 0;
}

static void test_kept(const struct view *fresh)
{
	static struct {
		const char *name, *script;
		bool keeps;
	} CASES[] = {
		{"reads only (python imports, cat of /usr files, stat of /usr)",
		 "cd /work; " PY "'import json, email.parser'; cat /usr/bin/env > /dev/null; stat /usr > /dev/null", true},
		{"a program run from /work, files left in /tmp, /work and /dev/shm, a pty opened",
		 "printf 'import os\\nprint(os.getcwd())\\n' > /work/main.py && cd /work && python3 main.py &&"
		 " echo t > /tmp/t && mkdir /tmp/d && echo s > /dev/shm/s && chmod 700 /tmp /work &&"
		 " python3 -c 'import os; os.openpty()' && cat /etc/passwd /etc/hostname > /dev/null",
		 true},
		{"a file written to /etc", "echo x >> /etc/passwd", false},
		{"a file written to /root (the image's, not scratch)", "echo x > /root/.profile", false},
		{"a file written to /var/tmp", "echo x > /var/tmp/x", false},
		{"/ listed", "ls / > /dev/null", false},
		{"/ chmod'ed to its own mode", "chmod 755 /", false},
		/* Landlock refuses it (no new entry directly in /: landlock.c), so nothing changed */
		{"a directory made at the top of /", "mkdir /data", false},
		{"a file created and deleted in /usr (its tmpfs counts inodes)", "touch /usr/x; rm /usr/x", false},
		{"/usr listed", "ls /usr > /dev/null", false},
		{"/usr opened only (as an ioctl on it needs)", "exec 3</usr", false},
		{"/usr chmod'ed to its own mode", "chmod 755 /usr", false},
		{"/usr's access time set", "touch -a -d @1000 /usr", false},
		{"a file written deep under /usr", "echo x > /usr/lib/pd-new", false},
		{"an image file deleted", "rm -f /usr/bin/env", false},
		{"nothing at all", "true", true},
	};
	for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
		if (landlock_on() && !strcmp(CASES[i].script, "mkdir /data"))
			CASES[i].keeps = true;
	pd_err e = {0};
	pd_sandbox *s = make();
	/* the first reset builds the watched overlay (creation's is not watched) */
	bool first = s && pd_sandbox_reset(s, &e) == 0 && pd_sandbox_resets_kept(s) == 0;
	ok(first, "the first reset rebuilds / and /usr, watched from then on (%s)", first ? "ok" : e.msg);
	for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
		pd_result r;
		char *before = s ? root_dev(s) : strdup("?");
		uint32_t kept0 = s ? pd_sandbox_resets_kept(s) : 0;
		if (s && sh(s, CASES[i].script, 0, &r) == 0)
			pd_result_free(&r);
		int rc = s ? pd_sandbox_reset(s, &e) : -1;
		char *after = s && rc == 0 ? root_dev(s) : strdup("?");
		bool kept = s && rc == 0 && pd_sandbox_resets_kept(s) == kept0 + 1;
		bool same = !strcmp(before, after);
		/* a kept overlay keeps its devices; a rebuilt one gets new ones, except that the
		 * kernel hands out the lowest free anonymous device numbers, so a rebuild whose old
		 * superblocks went first may get the very same numbers (seen under load): then the
		 * reset's own count is the evidence */
		ok(rc == 0 && kept == CASES[i].keeps && (CASES[i].keeps ? same : !kept),
		   "%s: / and /usr %s (devices %s -> %s)", CASES[i].name, CASES[i].keeps ? "kept" : "rebuilt",
		   strtok(before, "\n") ? before : "?", strtok(after, "\n") ? after : "?");
		free(before);
		free(after);
		if (CASES[i].keeps && s && rc == 0) {
			/* the pids as a fresh sandbox's: the view's shell must be pid 2 again */
			pd_sandbox_rewind_pids(s, &e);
			struct view v = look(s); /* lists / and /usr: the next reset rebuilds */
			check_against(fresh, &v, CASES[i].name);
			view_free(&v);
			if (pd_sandbox_reset(s, &e) < 0)
				break;
		}
	}
	ok(s && pd_sandbox_destroy(s, NULL, 0) == 0, "and the sandbox is destroyed clean");
}

/* This process's descriptors, each as "number -> target", one per line. */
static char *fd_table(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	for (int fd = 0; fd < 4096; fd++) {
		char p[64], t[512];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(p, t, sizeof t - 1);
		if (n < 0)
			continue;
		t[n] = 0;
		fprintf(f, "%d -> %s\n", fd, t);
	}
	fclose(f);
	return text;
}

static cpu_set_t cpus_at_start; /* this thread's CPUs before any reset (main) */

/* A reset's helper runs in this process's descriptor table (a copy would cost a dup and a close
 * of every descriptor the daemon holds), pinned to this thread's CPU: resets must leave both the
 * table, descriptor for descriptor, and the thread's CPUs as they found them. */
static void test_kept_fds(void)
{
	cpu_set_t cpus1;
	CPU_ZERO(&cpus1);
	pd_err e = {0};
	pd_sandbox *s = make();
	/* the first reset builds the watched overlay; the first exec opens what a sandbox keeps
	 * between uses when the process has descriptors to spare (pd_sb_keep_fds) */
	pd_result r0;
	bool first = s && pd_sandbox_reset(s, &e) == 0 && sh(s, "true", 0, &r0) == 0;
	if (first)
		pd_result_free(&r0);
	first = first && pd_sandbox_reset(s, &e) == 0;
	char *before = fd_table();
	int kept = 0, fails = 0;
	for (int i = 0; first && i < 20; i++) {
		pd_result r;
		if (sh(s, "echo x > /tmp/x; true", 0, &r) == 0)
			pd_result_free(&r);
		uint32_t k0 = pd_sandbox_resets_kept(s);
		if (pd_sandbox_reset(s, &e) < 0) {
			printf("#   reset %d: %s\n", i, e.msg);
			fails++;
			break;
		}
		kept += pd_sandbox_resets_kept(s) == k0 + 1;
	}
	char *after = fd_table();
	sched_getaffinity(0, sizeof cpus1, &cpus1);
	ok(first && !fails && kept == 20, "20 resets that keep the root (%d kept, %s)", kept,
	   first ? "ok" : e.msg);
	/* every reset pins this thread to its CPU while its helper runs (pd_reset_root) */
	ok(CPU_EQUAL(&cpus_at_start, &cpus1),
	   "and this thread may run on the same %d CPUs as before any reset (now %d)",
	   CPU_COUNT(&cpus_at_start), CPU_COUNT(&cpus1));
	ok(before && after && !strcmp(before, after),
	   "and this process's descriptors are the same before and after (%zu bytes of listing)",
	   before ? strlen(before) : 0);
	if (before && after && strcmp(before, after))
		printf("# before:\n%s# after:\n%s", before, after);
	free(before);
	free(after);
	ok(s && pd_sandbox_destroy(s, NULL, 0) == 0, "and the sandbox is destroyed clean");
}

/* Resets s with exactly `free_fds` descriptors free in this process; the limit as before after.
 * Returns what pd_sandbox_reset returned, -2 if the shortage could not be arranged. */
static int reset_short(pd_sandbox *s, int free_fds, pd_err *e)
{
	char *t = fd_table();
	int hi = -1;
	for (const char *l = t; l && *l; l = strchr(l, '\n') + 1)
		hi = atoi(l) > hi ? atoi(l) : hi;
	free(t);
	struct rlimit was;
	int lim = hi + 1 + free_fds;
	if (hi < 0 || getrlimit(RLIMIT_NOFILE, &was) < 0 || was.rlim_cur < (rlim_t)lim)
		return -2;
	/* every number below the new limit taken, then free_fds of them given back */
	struct rlimit low = {(rlim_t)lim, was.rlim_max};
	int *fill = calloc((size_t)lim, sizeof *fill), nfill = 0, rc = -2;
	if (fill && setrlimit(RLIMIT_NOFILE, &low) == 0) {
		int fd;
		while (nfill < lim && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
			fill[nfill++] = fd;
		for (int k = 0; k < free_fds && nfill > 0; k++)
			close(fill[--nfill]);
		rc = pd_sandbox_reset(s, e);
		while (nfill > 0)
			close(fill[--nfill]);
		setrlimit(RLIMIT_NOFILE, &was);
	}
	free(fill);
	return rc;
}

/* The same when a reset runs short of descriptors anywhere, host side or helper: with 1, 2, ...
 * free, each reset fails or succeeds, and this process's table is as before either way. Resets
 * that rebuild the root (a sandbox's first) and that keep it; the helper opens up to a few at a
 * time, all closed by die() on failure (childrt.c pd_ch_hold/pd_ch_drop). */
static void test_short_fds(bool keep)
{
	char outcomes[1024] = "";
	size_t on = 0;
	bool same = true, helper_failed = false, succeeded = false;
	for (int k = 1; k <= 12 && !succeeded; k++) {
		pd_err e = {0};
		pd_sandbox *s = make();
		pd_result r;
		bool ready = s && (!keep || pd_sandbox_reset(s, &e) == 0);
		/* a write in /tmp: the reset keeps the root but needs the helper for new scratch */
		if (ready && keep && sh(s, "touch /tmp/x", 0, &r) == 0)
			pd_result_free(&r);
		char *before = fd_table();
		int rc = ready ? reset_short(s, k, &e) : -2;
		char *after = fd_table();
		bool eq = before && after && !strcmp(before, after);
		if (!eq) {
			printf("# %d free: before:\n%s# after:\n%s", k, before ? before : "",
			       after ? after : "");
			same = false;
		}
		free(before);
		free(after);
		if (rc == -2) {
			same = false;
			printf("# %d free: could not arrange it (%s)\n", k,
			       s ? e.msg : "no sandbox");
		}
		succeeded = rc == 0 && (!keep || pd_sandbox_resets_kept(s) == 1);
		const char *at = strstr(e.msg, "reset: ");
		helper_failed |= rc == -1 && at;
		const char *what = rc == 0 ? "ok" : at ? at + 7 : rc == -1 ? "host side" : "?";
		on += (size_t)snprintf(outcomes + on, sizeof outcomes - on, "%s%d: %s",
				       k > 1 ? "; " : "", k, what);
		if (on >= sizeof outcomes)
			on = sizeof outcomes - 1;
		if (s)
			pd_sandbox_destroy(s, NULL, 0);
	}
	ok(same, "resets that %s the root short of descriptors leave the table as it was (%s)",
	   keep ? "keep" : "rebuild", outcomes);
	ok(helper_failed && succeeded, "and the shortage hit the helper, then stopped mattering");
}

/* An image's own /work with files in it stays (in the root overlay, so writes there make the
 * reset rebuild); its own empty /tmp, mode 0770 and owned by uid 1000, becomes the scratch mount
 * with that mode and owner, after resets that rebuild and that keep the root. The image is
 * stacked over the host's "/" (for a shell; from another file system, as overlay wants), its
 * two directories opaque. */
static void test_image_dirs(void)
{
	char dir[] = "/dev/shm/pd-reset-img-XXXXXX", p[128];
	bool made = mkdtemp(dir) != NULL;
	snprintf(p, sizeof p, "%s/work", dir);
	made = made && mkdir(p, 0755) == 0 && chmod(p, 0755) == 0 &&
	       setxattr(p, "user.overlay.opaque", "y", 1, 0) == 0;
	snprintf(p, sizeof p, "%s/work/keep.txt", dir);
	FILE *f = made ? fopen(p, "w") : NULL;
	made = f && fputs("from the image\n", f) >= 0;
	if (f)
		fclose(f);
	snprintf(p, sizeof p, "%s/tmp", dir);
	made = made && mkdir(p, 0770) == 0 && chown(p, 1000, 1000) == 0 && chmod(p, 0770) == 0 &&
	       setxattr(p, "user.overlay.opaque", "y", 1, 0) == 0;
	const char *layers[] = {dir, "/", NULL};
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default(), .layers = layers};
	pd_sandbox *s = made ? pd_sandbox_create(ctx, &so, &e) : NULL;
	if (!made || !s)
		printf("#   image: %s\n", made ? e.msg : strerror(errno));
	static const char PROBE[] =
		"cd /work; stat -c '%a %u %g' /tmp /work; cat /work/keep.txt; ls -A /tmp | wc -l;"
		" grep -c ' /tmp ' /proc/self/mountinfo; grep -c ' /work ' /proc/self/mountinfo";
	static const char WANT[] = "770 1000 1000|755 0 0|from the image|0|1|0|";
	char *fresh = s ? probe(s, PROBE, 0) : strdup("?");
	ok(!strcmp(fresh, WANT), "an image's own /tmp (empty, 0770, uid 1000) is the scratch mount with its mode "
	   "and owner; its /work with files stays: %s", fresh);
	free(fresh);
	/* a rebuild (the first reset), then a reset that keeps the root: a user wrote only to /tmp */
	for (int round = 0; round < 2; round++) {
		uint32_t kept0 = s ? pd_sandbox_resets_kept(s) : 0;
		char *w = s ? probe(s, "echo x > /tmp/x && echo ok", 1000) : strdup("?");
		int rc = s ? pd_sandbox_reset(s, &e) : -1;
		bool kept = s && pd_sandbox_resets_kept(s) == kept0 + 1;
		char *now = s && rc == 0 ? probe(s, PROBE, 0) : strdup("?");
		ok(!strcmp(w, "ok|") && rc == 0 && kept == (round == 1) && !strcmp(now, WANT),
		   "after a reset that %s the root: the same (%s)", round ? "keeps" : "rebuilds", now);
		free(w);
		free(now);
	}
	char residue[128] = "";
	ok(s && pd_sandbox_destroy(s, residue, sizeof residue) == 0, "and the sandbox is destroyed clean (%s)",
	   residue);
	snprintf(p, sizeof p, "rm -rf '%s'", dir);
	if (system(p) != 0)
		printf("#   could not remove %s\n", dir);
}

int main(void)
{
	sched_getaffinity(0, sizeof cpus_at_start, &cpus_at_start);
	plan(2 + (int)NWORK * 3 + 4 + 6 + 1 + 3 + 1 + 16 + (landlock_on() ? 4 : 3) * 2 + 1 + 4 + 2 * 2 + 4);
	pd_err e = {0};
	ctx = pd_ctx_new(NULL, &e);
	if (!ok(ctx != NULL, "context: %s", ctx ? "ok" : e.msg))
		return 1;
	pd_sandbox *s = make();
	struct view fresh = look(s);
	ok(s && fresh.r.status == PD_OK && strstr(fresh.text, "== pid 2\n") && strstr(fresh.text, "== mounts"),
	   "a fresh sandbox's view (%zu bytes; its shell is pid 2)", strlen(fresh.text));
	if (s)
		pd_sandbox_destroy(s, NULL, 0);
	if (getenv("PD_RESET_SHOW"))
		fputs(fresh.text, stderr);
	test_workloads(&fresh);
	test_repeated(&fresh);
	test_refused();
	test_memory_limit();
	test_page_cache();
	test_kept(&fresh);
	test_kept_fds();
	test_short_fds(true);
	test_short_fds(false);
	test_image_dirs();
	view_free(&fresh);
	pd_ctx_free(ctx);
	return done();
}
