/* cgroup_v2.c: the v2 backend over a fake cgroupfs (a plain directory). This is how the v2 logic is
 * tested on machines whose kernel gives the controllers to v1: limits become the right interface
 * file values, stats parse what the kernel would write, and the lifecycle leaves nothing behind. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp[] = "/tmp/paddock-unit-cgv2-XXXXXX";
static char root[PD_PATH];

static const char *rd(const char *name, const char *file)
{
	static char buf[4][256];
	static int k;
	char p[PD_PATH * 2];
	char *b = buf[k++ % 4];
	snprintf(p, sizeof p, "%s/%s/%s", root, name, file);
	if (pd_read_file(p, b, 256) < 0)
		snprintf(b, 256, "(missing: %s)", strerror(errno));
	b[strcspn(b, "\n")] = 0;
	return b;
}

static void wr(const char *name, const char *file, const char *text)
{
	char p[PD_PATH * 2];
	snprintf(p, sizeof p, "%s/%s/%s", root, name, file);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		printf("# could not write %s\n", p);
	if (fd >= 0)
		close(fd);
}

static bool dir_exists(const char *name)
{
	char p[PD_PATH * 2];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", root, name);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void rm_rf(const char *path)
{
	char cmd[PD_PATH + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", path);
}

static int sweep_calls;

static bool dead_owner(const char *owner, void *arg)
{
	(void)arg;
	sweep_calls++;
	return !strcmp(owner, "deadbeef");
}

static pd_limits lim(uint64_t mem, uint32_t pids, uint32_t millicores)
{
	pd_limits l;
	memset(&l, 0, sizeof l);
	l.memory_bytes = mem;
	l.pids = pids;
	l.cpu_millicores = millicores;
	return l;
}

/* The memory peak stats reports once sb-1's memory.peak reads peak (and memory.events events,
 * if given). */
static uint64_t peak_read(const pd_cg_ops *ops, pd_cg *g, const char *peak, const char *events)
{
	char b[64];
	snprintf(b, sizeof b, "%s\n", peak);
	wr("sb-1", "memory.peak", b);
	if (events)
		wr("sb-1", "memory.events", events);
	pd_cg_stats st;
	ops->stats(g, &st);
	return st.mem_peak;
}

int main(void)
{
	plan(92);
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(root, sizeof root, "%s/fs/paddock", tmp);
	pd_cgroups cg;
	pd_err e = {0};
	ok(pd_cgroups_init(&cg, 2, root, true, &e) == 0, "init fake v2 over %s (%s)", root, e.msg);
	ok(cg.version == 2 && cg.fake && cg.ops && !strcmp(cg.ops->name, "v2"), "backend is v2, fake");
	struct stat st;
	ok(stat(root, &st) == 0 && S_ISDIR(st.st_mode), "init creates the root (and its parents)");
	const pd_cg_ops *ops = cg.ops;

	/* ---- create with limits ---- */
	pd_cg *g = NULL;
	pd_limits l = lim(256ull << 20, 64, 1500);
	memset(&e, 0, sizeof e);
	ok(ops->create(&cg, "sb-1", &l, &g, &e) == 0 && g, "create sb-1 (%s)", e.msg);
	ok(dir_exists("sb-1"), "sb-1 is a directory under the root");
	is_str(rd("sb-1", "memory.max"), "268435456", "memory.max = 256 MiB in bytes");
	is_str(rd("sb-1", "memory.swap.max"), "0", "memory.swap.max = 0 (no swap)");
	is_str(rd("sb-1", "pids.max"), "64", "pids.max = 64");
	is_str(rd("sb-1", "cpu.max"), "150000 100000", "1.5 cores: cpu.max = 150000 100000");
	static const char *const files[] = {"cgroup.procs", "cgroup.kill", "memory.peak", "memory.events",
					    "pids.current", "pids.peak", "cpu.stat", "cgroup.events", NULL};
	int have = 0;
	for (int i = 0; files[i]; i++)
		have += strncmp(rd("sb-1", files[i]), "(missing", 8) != 0;
	is_int(have, 8, "fake mode makes the other interface files the kernel would");
	ok(ops->exists(g), "exists() is true after create");
	is_int(ops->clone_fd(g), -1, "fake mode: no fd for CLONE_INTO_CGROUP");

	/* ---- a second create with the same name ---- */
	pd_cg *dup = NULL;
	memset(&e, 0, sizeof e);
	int rc = ops->create(&cg, "sb-1", &l, &dup, &e);
	ok(rc == -1 && dup == NULL, "a second create of sb-1 fails");
	is_int(e.code, EEXIST, "... with EEXIST");
	ok(strstr(e.msg, "sb-1") != NULL, "... and a message naming it (%s)", e.msg);
	ok(dir_exists("sb-1") && !strcmp(rd("sb-1", "memory.max"), "268435456") &&
		   !strcmp(rd("sb-1", "pids.max"), "64") && !strcmp(rd("sb-1", "cpu.max"), "150000 100000"),
	   "... and leaves the first intact");
	ok(ops->exists(g), "the first still exists");

	/* ---- cpu quota values ---- */
	static const struct {
		uint32_t mc;
		const char *want;
	} cpus[] = {{1000, "100000 100000"}, {500, "50000 100000"}, {250, "25000 100000"},
		    {2000, "200000 100000"}, {10, "1000 100000"},   {64000, "6400000 100000"},
		    {50000000, "5000000000 100000"}};
	for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++) {
		char name[32];
		snprintf(name, sizeof name, "cpu-%u", cpus[i].mc);
		pd_limits lc = lim(0, 0, cpus[i].mc);
		pd_cg *gc = NULL;
		if (ops->create(&cg, name, &lc, &gc, &e) < 0) {
			ok(0, "create %s: %s", name, e.msg);
			continue;
		}
		is_str(rd(name, "cpu.max"), cpus[i].want, "%u millicores: cpu.max = %s", cpus[i].mc, cpus[i].want);
		ops->destroy(gc, NULL);
	}

	/* ---- unlimited ---- */
	pd_cg *g0 = NULL;
	pd_limits l0 = lim(0, 0, 0);
	ok(ops->create(&cg, "sb-0", &l0, &g0, &e) == 0, "create sb-0 without limits");
	is_str(rd("sb-0", "memory.max"), "max", "unlimited memory: memory.max = max");
	ok(strcmp(rd("sb-0", "memory.swap.max"), "0") != 0, "unlimited memory: swap is not forced to 0");
	const char *pm = rd("sb-0", "pids.max"), *cm = rd("sb-0", "cpu.max");
	ok(!*pm || !strcmp(pm, "max"), "unlimited pids: pids.max not limited ('%s')", pm);
	ok(!*cm || !strncmp(cm, "max", 3), "unlimited cpu: cpu.max not limited ('%s')", cm);

	pd_cg *gm = NULL;
	pd_limits lm = lim(4096, 0, 0);
	ok(ops->create(&cg, "sb-m", &lm, &gm, &e) == 0, "create with only a memory limit");
	ok(!strcmp(rd("sb-m", "memory.max"), "4096") && !strcmp(rd("sb-m", "memory.swap.max"), "0"),
	   "memory only: memory.max 4096, swap 0");
	ops->destroy(gm, NULL);
	ok(!dir_exists("sb-m"), "destroyed");

	/* ---- I/O limits: one io.max line per disk, "max" for what is not limited ---- */
	pd_cg *gi = NULL;
	pd_limits lio = lim(0, 0, 0);
	lio.io_read_bps = 1 << 20;
	lio.io_write_iops = 200;
	ok(ops->create(&cg, "sb-io", &lio, &gi, &e) == 0, "create sb-io");
	pd_iodev devs[] = {{254, 0}, {8, 16}};
	memset(&e, 0, sizeof e);
	ok(ops->set_io(gi, devs, 1, &lio, &e) == 0, "set_io on one disk (%s)", e.msg);
	is_str(rd("sb-io", "io.max"), "254:0 rbps=1048576 wbps=max riops=max wiops=200", "io.max names the disk and each limit");
	ok(ops->set_io(gi, devs, 2, &lio, &e) == 0, "set_io on two disks");
	/* the kernel keeps a line per device; the fake file keeps the last write, which is the second's */
	is_str(rd("sb-io", "io.max"), "8:16 rbps=1048576 wbps=max riops=max wiops=200", "a line is written per disk");
	ops->destroy(gi, NULL);
	ok(!dir_exists("sb-io"), "sb-io destroyed");

	/* ---- stats ---- */
	pd_cg_stats s;
	memset(&s, 0xff, sizeof s);
	ok(ops->stats(g, &s) == 0, "stats of fresh (empty) files succeed");
	ok(s.cpu_us == 0 && s.cpu_user_us == 0 && s.cpu_sys_us == 0 && s.mem_peak == 0 && s.oom_kills == 0 &&
		   s.pids_current == 0 && s.pids_peak == 0,
	   "empty files read as zero");
	wr("sb-1", "cpu.stat",
	   "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\ncore_sched.force_idle_usec 0\n"
	   "nr_periods 10\nnr_throttled 2\nthrottled_usec 500\nnr_bursts 0\nburst_usec 0\n");
	wr("sb-1", "memory.peak", "268430000\n");
	wr("sb-1", "memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 1\n");
	wr("sb-1", "pids.current", "3\n");
	wr("sb-1", "pids.peak", "17\n");
	memset(&s, 0, sizeof s);
	ok(ops->stats(g, &s) == 0, "stats with kernel-like contents");
	is_int(s.cpu_us, 123456, "cpu.stat usage_usec");
	is_int(s.cpu_user_us, 100000, "cpu.stat user_usec");
	is_int(s.cpu_sys_us, 23456, "cpu.stat system_usec");
	is_int(s.mem_peak, 268430000, "memory.peak");
	is_int(s.oom_kills, 2, "memory.events oom_kill (not oom, not oom_group_kill)");
	is_int(s.pids_current, 3, "pids.current");
	is_int(s.pids_peak, 17, "pids.peak");
	ok(s.pids_peak_exact, "v2 pids peak is exact");

	/* the same figures in another order, with tabs, and the line-prefix traps first */
	wr("sb-1", "cpu.stat", "nr_periods 1\nsystem_usec\t7\nuser_usec_extra 99\nuser_usec 5\nusage_usec 12\n");
	wr("sb-1", "memory.events", "oom_group_kill 9\noom 4\noom_kill 1\n");
	memset(&s, 0, sizeof s);
	ops->stats(g, &s);
	ok(s.cpu_us == 12 && s.cpu_user_us == 5 && s.cpu_sys_us == 7 && s.oom_kills == 1,
	   "keys are matched whole, in any order");
	wr("sb-1", "memory.peak", "18446744073709551615\n");
	ops->stats(g, &s);
	ok(s.mem_peak == UINT64_MAX, "a u64-max peak is read exactly");

	/* ---- reset_peaks ---- */
	ops->reset_peaks(g);
	is_str(rd("sb-1", "memory.peak"), "reset", "reset_peaks writes 'reset' to memory.peak");

	/* the peak is reported over what the cgroup held at the reset (page cache an earlier user
	 * was first to read), unless the exec reached the limit ("max" events) */
	wr("sb-1", "memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\n");
	wr("sb-1", "memory.current", "6000000\n");
	ops->reset_peaks(g);
	is_int(peak_read(ops, g, "9000000", NULL), 3000000,
	       "the peak counts from the usage at reset_peaks (9000000 - 6000000)");
	is_int(peak_read(ops, g, "5000000", NULL), 5000000,
	       "a peak under that base (cache reclaimed meanwhile) is read whole");
	is_int(peak_read(ops, g, "268435456", "low 0\nhigh 0\nmax 13\noom 3\noom_kill 2\n"), 268435456,
	       "an exec that reached the limit gets the whole peak");
	wr("sb-1", "memory.current", "0\n");
	ops->reset_peaks(g);
	is_int(peak_read(ops, g, "268435456", NULL), 268435456,
	       "with nothing held at the reset the peak is read as it is");

	/* ---- reclaim: only what is over what may stay ---- */
	wr("sb-1", "memory.reclaim", "");
	wr("sb-1", "memory.current", "1000000\n");
	is_int(ops->reclaim(g, 8u << 20), 1000000, "reclaim under what may stay returns the usage");
	is_str(rd("sb-1", "memory.reclaim"), "", "... and reclaims nothing");
	wr("sb-1", "memory.current", "100000000\n");
	ops->reclaim(g, 64u << 20);
	is_str(rd("sb-1", "memory.reclaim"), "32891136", "over it: memory.reclaim asks for the excess only");

	/* ---- attach and kill_all ---- */
	pid_t kids[2];
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			for (;;)
				pause();
		}
	}
	memset(&e, 0, sizeof e);
	ok(ops->attach(g, kids[0], &e) == 0, "attach writes the pid (%s)", e.msg);
	char want[32];
	snprintf(want, sizeof want, "%d", (int)kids[0]);
	is_str(rd("sb-1", "cgroup.procs"), want, "cgroup.procs holds the attached pid");
	char procs[64];
	snprintf(procs, sizeof procs, "%d\n%d\n", (int)kids[0], (int)kids[1]);
	wr("sb-1", "cgroup.procs", procs);
	ok(ops->kill_all(g) == 0, "kill_all");
	int killed = 0;
	for (int i = 0; i < 2; i++) {
		int ws;
		if (waitpid(kids[i], &ws, 0) == kids[i] && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL)
			killed++;
		else
			kill(kids[i], SIGKILL);
	}
	is_int(killed, 2, "both processes listed in cgroup.procs were SIGKILLed");
	is_str(rd("sb-1", "cgroup.kill"), "", "fake mode does not use cgroup.kill");
	wr("sb-1", "cgroup.procs", "");
	ok(ops->kill_all(g) == 0, "kill_all of an empty cgroup");

	/* ---- destroy ---- */
	memset(&e, 0, sizeof e);
	ok(ops->destroy(g, &e) == 0, "destroy sb-1 (%s)", e.msg);
	ok(!dir_exists("sb-1"), "the directory is gone, files and all");
	ok(dir_exists("sb-0"), "another sandbox's cgroup is untouched");
	pd_cg *again = NULL;
	ok(ops->create(&cg, "sb-1", &l, &again, &e) == 0 && ops->exists(again), "the name can be used again");

	/* exists() follows the directory; destroy of a vanished cgroup is not an error */
	char p[PD_PATH * 2];
	snprintf(p, sizeof p, "%s/sb-1", root);
	rm_rf(p);
	ok(!ops->exists(again), "exists() is false once the directory is gone");
	ok(ops->destroy(again, &e) == 0, "destroy of a cgroup already removed succeeds");

	/* ---- names ---- */
	int before = entries(root);
	char lname[600];
	memset(lname, 'n', sizeof lname - 1);
	lname[sizeof lname - 1] = 0;
	pd_cg *gl = NULL;
	memset(&e, 0, sizeof e);
	rc = ops->create(&cg, lname, &l, &gl, &e);
	ok(rc == -1 && gl == NULL, "a 599-character name is refused");
	is_int(e.code, ENAMETOOLONG, "... with ENAMETOOLONG");
	is_int(entries(root), before, "... and nothing is created");
	lname[300] = 0;
	memset(&e, 0, sizeof e);
	rc = ops->create(&cg, lname, &l, &gl, &e);
	ok(rc == -1 && e.code == ENAMETOOLONG, "a 300-character name (over NAME_MAX) is refused: %s", e.msg);
	is_int(entries(root), before, "... and nothing is created");

	/* a root so deep that the cgroup directory fits in PD_PATH but its longer files do not */
	char deep[PD_PATH];
	int n = snprintf(deep, sizeof deep, "%s/", tmp);
	while (n < 496 - 40) {
		int k = 496 - 40 - n > 200 ? 200 : 496 - 40 - n;
		memset(deep + n, 'd', (size_t)k);
		n += k;
		deep[n++] = '/';
	}
	deep[--n] = 0;
	pd_cgroups cgd;
	if (pd_cgroups_init(&cgd, 2, deep, true, &e) < 0) {
		ok(0, "init deep root: %s", e.msg);
		ok(0, "skipped");
		ok(0, "skipped");
	} else {
		char dname[64];
		int dl = 496 - n - 1;
		memset(dname, 'x', (size_t)dl);
		dname[dl] = 0;
		pd_cg *gd = NULL;
		memset(&e, 0, sizeof e);
		rc = cgd.ops->create(&cgd, dname, &l, &gd, &e);
		ok(rc == -1, "a cgroup dir of 496 characters (memory.swap.max would not fit) is refused");
		ok(rc == 0 || e.code != 0, "... and the failure fills pd_err (code %d, msg '%s')", e.code, e.msg);
		is_int(entries(deep), 0, "... and nothing is left under the root");
		if (rc == 0)
			cgd.ops->destroy(gd, NULL);
	}

	/* ---- a missing root ---- */
	pd_cgroups cgm;
	char mroot[PD_PATH];
	snprintf(mroot, sizeof mroot, "%s/vanishing", tmp);
	pd_cgroups_init(&cgm, 2, mroot, true, &e);
	rmdir(mroot);
	pd_cg *gv = NULL;
	memset(&e, 0, sizeof e);
	ok(cgm.ops->create(&cgm, "sb-x", &l, &gv, &e) == -1 && e.code == ENOENT, "create under a missing root: ENOENT");

	/* ---- several at once ---- */
	pd_cg *many[5];
	int made = 0;
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof name, "multi-%d", i);
		pd_limits li = lim((uint64_t)(i + 1) << 20, (uint32_t)(i + 10), 0);
		made += ops->create(&cg, name, &li, &many[i], NULL) == 0;
	}
	is_int(made, 5, "five cgroups side by side");
	ok(!strcmp(rd("multi-3", "memory.max"), "4194304") && !strcmp(rd("multi-3", "pids.max"), "13"),
	   "each has its own limits");
	int gone = 0;
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof name, "multi-%d", i);
		gone += ops->destroy(many[i], NULL) == 0 && !dir_exists(name);
	}
	is_int(gone, 5, "all five destroyed");

	/* ---- sweep: cgroups of dead owners go, the rest stay ---- */
	{
		static const char *const names[] = {"sb-deadbeef-1", "sb-deadbeef-22", "sb-0000a11e-1",
						    "sb-short", "other-dir"};
		pd_cg *sw[5];
		int made5 = 0;
		pd_limits ls = lim(1 << 20, 0, 0);
		for (int i = 0; i < 5; i++)
			made5 += ops->create(&cg, names[i], &ls, &sw[i], NULL) == 0;
		is_int(made5, 5, "sweep: five cgroups made");
		pid_t kid = fork();
		if (kid == 0) {
			for (;;)
				pause();
		}
		char pid_s[32];
		snprintf(pid_s, sizeof pid_s, "%d\n", (int)kid);
		wr("sb-deadbeef-22", "cgroup.procs", pid_s);
		sweep_calls = 0;
		int removed = pd_cgroups_sweep(&cg, dead_owner, &cg);
		is_int(removed, 2, "sweep removes the two cgroups of the dead owner");
		ok(!dir_exists("sb-deadbeef-1") && !dir_exists("sb-deadbeef-22"), "... they are gone");
		ok(dir_exists("sb-0000a11e-1") && dir_exists("sb-short") && dir_exists("other-dir") && dir_exists("sb-0"),
		   "... a live owner's, a malformed name and a foreign dir stay");
		is_int(sweep_calls, 2, "the owner check sees only well-formed names, once per owner (deadbeef, 0000a11e)");
		int ws = 0;
		ok(waitpid(kid, &ws, 0) == kid && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL,
		   "a process left in a swept cgroup is killed");
		int fine = 0;
		for (int i = 0; i < 5; i++) /* the first two were swept: only their handles are left */
			fine += ops->destroy(sw[i], NULL) == 0;
		is_int(fine, 5, "destroying the handles of swept cgroups is fine");
	}

	ok(ops->destroy(g0, &e) == 0, "destroy sb-0");
	is_int(entries(root), 0, "the root is empty at the end");
	rm_rf(tmp);
	return done();
}
