/* cgroup_v1.c: the v1 backend on this machine's real hierarchies (memory, pids, cpu, cpuacct):
 * limits land in the kernel's files, a process is attached and counted, killed, and the
 * directories go away. Skipped where there is no cgroup v1 memory hierarchy. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static pd_cgroups cg;
static const char *g_cold, *g_hot; /* files the "cache" child reads once and three times */

static const char *rd(const char *dir, const char *file)
{
	static char buf[4][256];
	static int k;
	char p[PD_PATH * 2];
	char *b = buf[k++ % 4];
	snprintf(p, sizeof p, "%s/%s", dir, file);
	if (pd_read_file(p, b, 256) < 0)
		snprintf(b, 256, "(missing: %s)", strerror(errno));
	b[strcspn(b, "\n")] = 0;
	return b;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool all_dirs(const char *name, bool want)
{
	for (int c = 0; c < 4; c++) {
		char p[PD_PATH * 2];
		snprintf(p, sizeof p, "%s/%s", cg.v1_dirs[c], name);
		if (is_dir(p) != want)
			return false;
	}
	return true;
}

static bool procs_has(const char *dir, pid_t pid)
{
	char p[PD_PATH * 2], b[4096];
	snprintf(p, sizeof p, "%s/cgroup.procs", dir);
	if (pd_read_file(p, b, sizeof b) < 0)
		return false;
	for (char *q = b; *q;) {
		long v = strtol(q, &q, 10);
		if (v == pid)
			return true;
		if (!v)
			break;
		while (*q == '\n')
			q++;
	}
	return false;
}

/* A child that waits for a byte on `go`, then runs prog (sleep, or a memory hog). */
static pid_t spawn(int *go_w, int *exec_r, const char *mode)
{
	int go[2], ex[2];
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ex, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		if (!strcmp(mode, "sleep")) {
			execlp("sleep", "sleep", "1000", (char *)NULL);
			_exit(127);
		}
		close(ex[1]);
		if (!strcmp(mode, "cache")) {
			/* page cache charged to this cgroup: the cold file read once, the hot one
			 * three times (the kernel moves pages read again to its active list) */
			static char b[1 << 16];
			for (int round = 0; round < 4; round++) {
				int fd = open(round ? g_hot : g_cold, O_RDONLY);
				while (fd >= 0 && read(fd, b, sizeof b) > 0) {
				}
				close(fd);
			}
			_exit(0);
		}
		/* touch far more memory than the limit */
		for (int i = 0; i < 64; i++) {
			char *m = malloc(1 << 20);
			if (m)
				memset(m, i + 1, 1 << 20);
		}
		_exit(0);
	}
	close(go[0]);
	close(ex[1]);
	*go_w = go[1];
	*exec_r = ex[0];
	return pid;
}

/* Waits until pid runs sleep and is asleep in it: it has been switched out at least once, so the
 * scheduler has charged its CPU time to the cgroup. Gives up after 5 s. */
static bool wait_sleeping(pid_t pid)
{
	for (int i = 0; i < 5000; i++) {
		char p[64], b[256];
		snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
		if (pd_read_file(p, b, sizeof b) > 0 && strstr(b, "(sleep) S "))
			return true;
		usleep(1000);
	}
	return false;
}

/* Removes whatever a failed test left under this test's own parents, then the parents. */
/* A file of mb MiB not in the page cache, so that the first to read it is charged for it. */
static char *uncached_file(int mb)
{
	char *p = strdup("/var/tmp/pd-cg-cache-XXXXXX");
	int fd = p ? mkstemp(p) : -1;
	if (fd < 0)
		return NULL;
	static char b[1 << 20];
	memset(b, 'x', sizeof b);
	bool okw = true;
	for (int i = 0; i < mb; i++)
		okw &= write(fd, b, sizeof b) == (ssize_t)sizeof b;
	okw &= fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
	close(fd);
	if (!okw) {
		unlink(p);
		free(p);
		return NULL;
	}
	return p;
}

/* Share of a file's pages in the page cache, 0..1. */
static double resident(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !st.st_size)
		return -1;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	size_t pages = ((size_t)st.st_size + 4095) / 4096, in = 0;
	unsigned char *v = malloc(pages);
	if (v && mincore(m, (size_t)st.st_size, v) == 0)
		for (size_t i = 0; i < pages; i++)
			in += v[i] & 1;
	free(v);
	munmap(m, (size_t)st.st_size);
	return (double)in / (double)pages;
}

static void test_reclaim(const pd_cg_ops *ops)
{
	char *cold = uncached_file(40), *hot = uncached_file(12);
	pd_limits lr;
	memset(&lr, 0, sizeof lr);
	lr.memory_bytes = 256ull << 20;
	pd_cg *gr = NULL;
	pd_err e = {0};
	if (!ok(cold && hot && ops->create(&cg, "sb-cache", &lr, &gr, &e) == 0,
		"files of 40 and 12 MiB out of the page cache, and a cgroup of 256 MiB (%s)", e.msg)) {
		for (int i = 0; i < 6; i++)
			ok(0, "skipped: no cgroup or files for the reclaim test");
		goto out;
	}
	char memd[PD_PATH * 2];
	snprintf(memd, sizeof memd, "%s/sb-cache", cg.v1_dirs[0]);
	g_cold = cold;
	g_hot = hot;
	int go = -1, ex = -1;
	pid_t kid = spawn(&go, &ex, "cache");
	ok(kid > 0 && ops->attach(gr, kid, &e) == 0, "attach a reader of both files (%s)", e.msg);
	if (write(go, "x", 1) != 1)
		printf("# could not start the reader\n");
	close(go);
	close(ex);
	int ws = 0;
	waitpid(kid, &ws, 0);
	uint64_t usage = strtoull(rd(memd, "memory.usage_in_bytes"), NULL, 10);
	ok(WIFEXITED(ws) && usage >= (48ull << 20),
	   "the reader is gone and its page cache stays charged (%llu KiB)", (unsigned long long)(usage >> 10));
	pd_cg_stats s;
	ops->reset_peaks(gr);
	ops->stats(gr, &s);
	ok(s.mem_peak < (1u << 20), "the next exec's peak does not count it (%llu bytes)",
	   (unsigned long long)s.mem_peak);
	is_int(ops->reclaim(gr, 64ull << 20), usage, "under what may stay (64 MiB) nothing is reclaimed");
	uint64_t left = ops->reclaim(gr, 24ull << 20);
	ok(left <= (25ull << 20), "over what may stay (24 MiB) the rest is reclaimed (%llu KiB left)",
	   (unsigned long long)(left >> 10));
	is_str(rd(memd, "memory.limit_in_bytes"), "268435456", "the limit is put back");
	double rh = resident(hot), rc = resident(cold);
	ok(rh >= 0.9 && rc <= 0.5,
	   "coldest first: the file read three times stays cached (%.0f%%), the one read once goes "
	   "(%.0f%% left)",
	   rh * 100, rc * 100);
	ops->destroy(gr, NULL);
out:
	if (cold)
		unlink(cold);
	if (hot)
		unlink(hot);
	free(cold);
	free(hot);
}

static void cleanup_root(void)
{
	for (int c = 4; c >= 0; c--) {
		if (!cg.v1_dirs[c][0])
			continue;
		DIR *d = opendir(cg.v1_dirs[c]);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_type != DT_DIR || de->d_name[0] == '.')
				continue;
			char p[PD_PATH * 2];
			snprintf(p, sizeof p, "%s/%s", cg.v1_dirs[c], de->d_name);
			printf("# removing leftover %s\n", p);
			rmdir(p);
		}
		if (d)
			closedir(d);
		rmdir(cg.v1_dirs[c]);
	}
}

int main(void)
{
	if (access("/sys/fs/cgroup/memory", F_OK) < 0 || geteuid() != 0) {
		printf("1..0 # SKIP no cgroup v1 (or not root)\n");
		return 0;
	}
	plan(61);
	char rootname[64];
	snprintf(rootname, sizeof rootname, "paddock-unit-%d", (int)getpid());
	pd_err e = {0};
	int rc = pd_cgroups_init(&cg, 1, rootname, false, &e);
	ok(rc == 0, "init v1 with root %s (%s)", rootname, e.msg);
	if (rc < 0)
		return done();
	bool blkio = access("/sys/fs/cgroup/blkio", F_OK) == 0;
	ok(cg.ops && !strcmp(cg.ops->name, "v1") && cg.version == 1 && cg.v1_n == (blkio ? 5 : 4),
	   "backend v1, 4 controllers (and blkio where it is mounted: %d)", cg.v1_n);
	int dirs = 0;
	for (int c = 0; c < 4; c++)
		dirs += is_dir(cg.v1_dirs[c]) && strstr(cg.v1_dirs[c], rootname) != NULL;
	is_int(dirs, 4, "a parent directory per controller");
	ok(strstr(cg.v1_dirs[0], "memory") && strstr(cg.v1_dirs[1], "pids") && strstr(cg.v1_dirs[2], "cpu") &&
		   strstr(cg.v1_dirs[3], "cpuacct"),
	   "memory, pids, cpu, cpuacct in that order (%s, %s, %s, %s)", cg.v1_dirs[0], cg.v1_dirs[1],
	   cg.v1_dirs[2], cg.v1_dirs[3]);
	const pd_cg_ops *ops = cg.ops;
	const char *mem = cg.v1_dirs[0], *pids = cg.v1_dirs[1], *cpu = cg.v1_dirs[2];
	char memd[PD_PATH * 2], pidsd[PD_PATH * 2], cpud[PD_PATH * 2], acctd[PD_PATH * 2];
	snprintf(memd, sizeof memd, "%s/sb-1", mem);
	snprintf(pidsd, sizeof pidsd, "%s/sb-1", pids);
	snprintf(cpud, sizeof cpud, "%s/sb-1", cpu);
	snprintf(acctd, sizeof acctd, "%s/sb-1", cg.v1_dirs[3]);

	/* ---- create with limits ---- */
	pd_limits l;
	memset(&l, 0, sizeof l);
	l.memory_bytes = 64ull << 20;
	l.pids = 32;
	l.cpu_millicores = 1500;
	pd_cg *g = NULL;
	memset(&e, 0, sizeof e);
	rc = ops->create(&cg, "sb-1", &l, &g, &e);
	ok(rc == 0 && g, "create sb-1 (%s)", e.msg);
	if (rc < 0) {
		cleanup_root();
		return done();
	}
	ok(all_dirs("sb-1", true), "a directory in every hierarchy");
	is_str(rd(memd, "memory.limit_in_bytes"), "67108864", "memory.limit_in_bytes = 64 MiB");
	const char *memsw = rd(memd, "memory.memsw.limit_in_bytes");
	ok(!strncmp(memsw, "(missing", 8) || !strcmp(memsw, "67108864"), "memsw limit equals the memory limit where it exists (%s)", memsw);
	is_str(rd(memd, "memory.swappiness"), "0", "memory.swappiness = 0");
	is_str(rd(pidsd, "pids.max"), "32", "pids.max = 32");
	is_str(rd(cpud, "cpu.cfs_quota_us"), "150000", "cpu.cfs_quota_us = 150000 (1.5 cores)");
	is_str(rd(cpud, "cpu.cfs_period_us"), "100000", "cpu.cfs_period_us = 100000");
	ok(ops->exists(g), "exists()");
	is_int(ops->clone_fd(g), -1, "v1 has no CLONE_INTO_CGROUP fd");

	/* ---- the same name again ---- */
	pd_cg *dup = NULL;
	memset(&e, 0, sizeof e);
	rc = ops->create(&cg, "sb-1", &l, &dup, &e);
	ok(rc == -1 && dup == NULL && e.code == EEXIST, "a second create of sb-1 fails with EEXIST (%s)", e.msg);
	ok(all_dirs("sb-1", true) && !strcmp(rd(memd, "memory.limit_in_bytes"), "67108864") &&
		   !strcmp(rd(pidsd, "pids.max"), "32"),
	   "... and the first is intact");

	/* ---- attach a process, count it, kill it ---- */
	int go = -1, ex = -1;
	pid_t kid = spawn(&go, &ex, "sleep");
	memset(&e, 0, sizeof e);
	ok(kid > 0 && ops->attach(g, kid, &e) == 0, "attach a forked child (%s)", e.msg);
	if (write(go, "x", 1) != 1)
		printf("# could not start the child\n");
	char c;
	ok(read(ex, &c, 1) == 0 && wait_sleeping(kid), "the child exec'd sleep and sleeps");
	close(go);
	close(ex);
	ok(procs_has(memd, kid) && procs_has(pidsd, kid) && procs_has(cpud, kid) && procs_has(acctd, kid),
	   "the child is in every hierarchy's cgroup.procs");
	pd_cg_stats s;
	memset(&s, 0, sizeof s);
	ok(ops->stats(g, &s) == 0, "stats");
	is_int(s.pids_current, 1, "pids_current 1");
	/* newer kernels have pids.peak on v1 as well: then the peak is exact */
	char pk[PD_PATH * 2];
	snprintf(pk, sizeof pk, "%s/pids.peak", pidsd);
	bool kernel_peak = access(pk, F_OK) == 0;
	ok(s.pids_peak == 1 && s.pids_peak_exact == kernel_peak, "pids_peak 1, %s", kernel_peak ? "exact (pids.peak)" : "sampled");
	ok(s.mem_peak > 0, "memory peak counted (%llu bytes)", (unsigned long long)s.mem_peak);
	ok(s.cpu_us > 0, "cpu usage counted (%llu us)", (unsigned long long)s.cpu_us);
	is_int(s.oom_kills, 0, "no OOM kill yet");
	ok(ops->kill_all(g) == 0, "kill_all");
	int ws = 0;
	ok(waitpid(kid, &ws, 0) == kid && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "the child died of SIGKILL");
	ops->stats(g, &s);
	is_int(s.pids_current, 0, "pids_current 0 after the kill");
	ok(s.pids_peak >= 1, "the sampled peak is kept until a reset");
	ops->reset_peaks(g);
	ops->stats(g, &s);
	/* the kernel's pids.peak (if any) cannot be reset, so it is not this exec's any more */
	ok(s.pids_peak == 0 && !s.pids_peak_exact,
	   "after reset_peaks the peak is the new exec's (0, sampled), not the cgroup's lifetime high");
	ok(s.mem_peak < (1u << 20), "reset_peaks resets memory.max_usage_in_bytes (%llu)", (unsigned long long)s.mem_peak);

	/* ---- an OOM kill is counted ---- */
	pd_limits lo;
	memset(&lo, 0, sizeof lo);
	lo.memory_bytes = 16ull << 20;
	pd_cg *go_cg = NULL;
	ok(ops->create(&cg, "sb-oom", &lo, &go_cg, &e) == 0, "create sb-oom with 16 MiB (%s)", e.msg);
	kid = spawn(&go, &ex, "hog");
	ok(kid > 0 && go_cg && ops->attach(go_cg, kid, &e) == 0, "attach a memory hog");
	if (write(go, "x", 1) != 1)
		printf("# could not start the hog\n");
	close(go);
	close(ex);
	ws = 0;
	waitpid(kid, &ws, 0);
	ok(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "the hog was killed (status 0x%x)", ws);
	memset(&s, 0, sizeof s);
	if (go_cg)
		ops->stats(go_cg, &s);
	ok(s.oom_kills >= 1, "oom_kills counted (%llu)", (unsigned long long)s.oom_kills);
	ok(s.mem_peak >= (15ull << 20) && s.mem_peak <= (16ull << 20), "memory peak at the limit (%llu)",
	   (unsigned long long)s.mem_peak);
	ok(go_cg && ops->destroy(go_cg, &e) == 0 && all_dirs("sb-oom", false), "destroy sb-oom");

	/* ---- reclaim: what is over what may stay goes, coldest first, and the limit is kept ---- */
	test_reclaim(ops);

	/* ---- destroy ---- */
	memset(&e, 0, sizeof e);
	ok(ops->destroy(g, &e) == 0, "destroy sb-1 (%s)", e.msg);
	ok(all_dirs("sb-1", false), "every hierarchy's directory is gone");

	/* ---- names ---- */
	char lname[600];
	memset(lname, 'n', sizeof lname - 1);
	lname[sizeof lname - 1] = 0;
	pd_cg *gl = NULL;
	memset(&e, 0, sizeof e);
	rc = ops->create(&cg, lname, &l, &gl, &e);
	ok(rc == -1 && e.code == ENAMETOOLONG, "a 599-character name: ENAMETOOLONG (%s)", e.msg);
	ok(gl == NULL, "... and no cgroup is handed out");

	/* ---- a failure half-way through leaves nothing ---- */
	char blocker[PD_PATH * 2];
	snprintf(blocker, sizeof blocker, "%s/sb-half", pids);
	ok(mkdir(blocker, 0755) == 0, "pre-create sb-half in the pids hierarchy only");
	pd_cg *gh = NULL;
	memset(&e, 0, sizeof e);
	rc = ops->create(&cg, "sb-half", &l, &gh, &e);
	ok(rc == -1 && e.code == EEXIST, "create sb-half fails on the pids hierarchy");
	char p[PD_PATH * 2];
	snprintf(p, sizeof p, "%s/sb-half", mem);
	ok(!is_dir(p), "the memory directory it made first was removed");
	ok(is_dir(blocker), "the directory it did not make is left alone");
	rmdir(blocker);

	/* a cpu quota under the kernel's 1 ms minimum */
	pd_limits lc;
	memset(&lc, 0, sizeof lc);
	lc.cpu_millicores = 5;
	pd_cg *gc = NULL;
	memset(&e, 0, sizeof e);
	rc = ops->create(&cg, "sb-cpu", &lc, &gc, &e);
	ok(rc == -1 && e.code == EINVAL && all_dirs("sb-cpu", false),
	   "0.005 cores (quota 500 us < 1 ms) is refused with EINVAL and nothing left (%s)", e.msg);
	if (rc == 0)
		ops->destroy(gc, NULL);

	/* I/O limits: only such a sandbox joins blkio; its throttles name the disk; destroy removes it */
	if (blkio) {
		pd_limits lio;
		memset(&lio, 0, sizeof lio);
		lio.io_read_bps = 1 << 20;
		lio.io_write_iops = 100;
		pd_cg *gi = NULL;
		memset(&e, 0, sizeof e);
		ok(ops->create(&cg, "sb-io", &lio, &gi, &e) == 0, "create sb-io (%s)", e.msg);
		char bp[PD_PATH * 2], buf[256] = "";
		snprintf(bp, sizeof bp, "%s/sb-io", cg.v1_dirs[4]);
		ok(!is_dir(bp), "create alone does not join blkio");
		struct stat rs;
		stat("/", &rs);
		pd_iodev dev = {major(rs.st_dev), minor(rs.st_dev)};
		if (dev.maj == 0)
			dev = (pd_iodev){7, 0}; /* any block device the kernel knows will do for the files */
		ok(ops->set_io(gi, &dev, 1, &lio, &e) == 0 && is_dir(bp), "set_io joins blkio (%s)", e.msg);
		snprintf(bp, sizeof bp, "%s/sb-io/blkio.throttle.read_bps_device", cg.v1_dirs[4]);
		pd_read_file(bp, buf, sizeof buf);
		char want[64];
		snprintf(want, sizeof want, "%u:%u 1048576", dev.maj, dev.min);
		ok(!strncmp(buf, want, strlen(want)), "read_bps_device: '%s' (want '%s')", strtok(buf, "\n"), want);
		snprintf(bp, sizeof bp, "%s/sb-io/blkio.throttle.write_iops_device", cg.v1_dirs[4]);
		pd_read_file(bp, buf, sizeof buf);
		snprintf(want, sizeof want, "%u:%u 100", dev.maj, dev.min);
		ok(!strncmp(buf, want, strlen(want)), "write_iops_device: '%s'", strtok(buf, "\n"));
		ops->destroy(gi, NULL);
		snprintf(bp, sizeof bp, "%s/sb-io", cg.v1_dirs[4]);
		ok(!is_dir(bp), "destroy removes the blkio directory too");
	} else {
		for (int i = 0; i < 6; i++)
			ok(1, "# skip: blkio is not mounted");
	}

	cleanup_root();
	int left = 0;
	for (int i = 0; i < cg.v1_n; i++)
		left += is_dir(cg.v1_dirs[i]);
	is_int(left, 0, "the test's parent directories are removed");
	return done();
}
