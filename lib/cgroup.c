/* cgroups: one small backend table, two implementations: v2 here, v1 in cgroup_v1.c, the files'
 * helpers they share and the host's discovery of its hierarchies here too. The rest of the
 * runtime calls through pd_cg_ops.
 *
 * v2: one directory <root>/<name> with memory.max, pids.max, cpu.max; CLONE_INTO_CGROUP places the
 *     sandbox's init atomically; cgroup.kill ends everything at once.
 * v1: one directory per hierarchy (memory, pids, cpu, cpuacct; blkio only for a sandbox with I/O
 *     limits); the pid is written to each.
 *
 * The v2 backend can run over a plain directory ("fake" mode) so its logic is tested on machines
 * whose kernel gives the controllers to v1: then the interface files are created by us. */
#define _GNU_SOURCE
#include "internal.h"
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>


void cg_stats_init(pd_cg *g)
{
	for (int i = 0; i < CGF_N; i++)
		g->sfd[i] = -1;
}

void cg_stats_close(pd_cg *g)
{
	for (int i = 0; i < CGF_N; i++) {
		if (g->sfd[i] >= 0)
			close(g->sfd[i]);
		g->sfd[i] = -1;
	}
}

int cg_stat_fd(pd_cg *g, int slot, const char *dir, const char *file, int flags)
{
	if (g->sfd[slot] == -1) {
		char p[PD_PATH];
		int n = snprintf(p, sizeof p, "%s/%s", dir, file);
		int fd = n < (int)sizeof p ? open(p, flags | O_CLOEXEC) : -1;
		g->sfd[slot] = fd >= 0 ? fd : -2;
	}
	return g->sfd[slot];
}

ssize_t cg_pread(pd_cg *g, int slot, const char *dir, const char *file, char *buf, size_t size)
{
	int fd = cg_stat_fd(g, slot, dir, file, slot == CGF_MEM_PEAK ? O_RDWR : O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n;
	do
		n = pread(fd, buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EBADF || errno == EINVAL)) {
		/* opened read-write where the file is read-only (fake cgroupfs, older kernels) */
		close(fd);
		g->sfd[slot] = -1;
		fd = cg_stat_fd(g, slot, dir, file, O_RDONLY);
		n = fd < 0 ? -1 : pread(fd, buf, size - 1, 0);
	}
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

uint64_t cg_pread_u64(pd_cg *g, int slot, const char *dir, const char *file)
{
	char b[64];
	if (cg_pread(g, slot, dir, file, b, sizeof b) <= 0)
		return 0;
	if (!strncmp(b, "max", 3))
		return UINT64_MAX;
	return strtoull(b, NULL, 10);
}

static int cg_path(char *out, const char *dir, const char *file)
{
	int n = snprintf(out, PD_PATH, "%s/%s", dir, file);
	return n >= PD_PATH ? -1 : 0;
}

int cg_write(const char *dir, const char *file, const char *val, pd_err *e)
{
	char p[PD_PATH];
	if (cg_path(p, dir, file) < 0)
		return pd_fail(e, ENAMETOOLONG, "cgroup path %s/%s", dir, file);
	return pd_write_file(p, val, e);
}

int cg_write_u64(const char *dir, const char *file, uint64_t v, pd_err *e)
{
	char b[32];
	snprintf(b, sizeof b, "%" PRIu64, v);
	return cg_write(dir, file, b, e);
}

ssize_t cg_read(const char *dir, const char *file, char *buf, size_t size)
{
	char p[PD_PATH];
	if (cg_path(p, dir, file) < 0)
		return -1;
	return pd_read_file(p, buf, size);
}

/* rmdir of a cgroup whose last task just died can race the kernel's bookkeeping: retry briefly. */
int cg_rmdir(const char *dir, bool fake)
{
	if (fake) {
		DIR *d = opendir(dir);
		if (d) {
			struct dirent *de;
			while ((de = readdir(d)))
				if (de->d_name[0] != '.')
					unlinkat(dirfd(d), de->d_name, 0);
			closedir(d);
		}
	}
	/* EBUSY while the last tasks finish exiting after their init was reaped: usually within a
	 * millisecond, but on a loaded machine a dying task's exit (unmapping its memory) can take
	 * longer than the 0.2 s this once allowed, and the cgroup was then left behind as residue.
	 * So up to ~2 s: 2 ms in 100 us steps, 0.1 s in 1 ms steps, then 10 ms steps. */
	for (int i = 0; i < 330; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -1;
		usleep(i < 20 ? 100 : i < 120 ? 1000 : 10000);
	}
	return -1;
}

/* ---------------------------------------------------------------------------------------------- */
/* v2 */

static const char *const v2_files[] = {"cgroup.procs", "cgroup.kill", "memory.max", "memory.swap.max",
				       "memory.peak", "memory.events", "memory.current",
				       "memory.reclaim", "pids.max", "pids.current",
				       "pids.peak", "cpu.max", "cpu.stat", "cgroup.events", "io.max", NULL};

/* A cgroup name is one path component of our own making; refuse anything else. */
int cg_bad_name(const char *name, pd_err *e)
{
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return pd_fail(e, EINVAL, "cgroup name '%s'", name);
	return 0;
}

/* pids.peak is the cgroup's lifetime high, and no write resets it: it is this exec's peak only
 * if the exec set a new high (above what it was when the exec began, which for a sandbox
 * reset for a new user may be the last user's); otherwise the highest pids.current we read. */
void cg_pids_peak_since_reset(pd_cg *g, pd_cg_stats *st, uint64_t lifetime)
{
	if (st->pids_current > g->pids_peak_sampled)
		g->pids_peak_sampled = st->pids_current;
	st->pids_peak_exact = lifetime > g->pids_peak_base;
	st->pids_peak = st->pids_peak_exact ? lifetime : g->pids_peak_sampled;
}

uint64_t cg_mem_peak_since_reset(const pd_cg *g, uint64_t peak, uint64_t hits)
{
	if (hits > g->mem_hits_base || peak < g->mem_base)
		return peak;
	return peak - g->mem_base;
}

static int v2_create(pd_cgroups *root, const char *name, const pd_limits *l, pd_cg **out, pd_err *e)
{
	if (cg_bad_name(name, e) < 0)
		return -1;
	pd_cg *g = calloc(1, sizeof *g);
	if (!g)
		return pd_fail(e, ENOMEM, "cgroup");
	g->root = root;
	g->ndirs = 1;
	g->dirfd = -1;
	cg_stats_init(g);
	if (snprintf(g->dirs[0], PD_PATH, "%s/%s", root->v2_root, name) >= PD_PATH) {
		free(g);
		return pd_fail(e, ENAMETOOLONG, "cgroup name %s", name);
	}
	if (mkdir(g->dirs[0], 0755) < 0) {
		pd_fail(e, errno, "mkdir cgroup %s", g->dirs[0]);
		free(g);
		return -1;
	}
	if (root->fake) {
		/* a plain directory: make the files the kernel would */
		for (int i = 0; v2_files[i]; i++) {
			char p[PD_PATH];
			if (cg_path(p, g->dirs[0], v2_files[i]) < 0)
				continue; /* the write below reports it */
			int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (fd >= 0)
				close(fd);
		}
	}
	char b[64];
	int rc = 0;
	rc |= cg_write(g->dirs[0], "memory.max", "max", e);
	if (l->memory_bytes) {
		rc |= cg_write_u64(g->dirs[0], "memory.max", l->memory_bytes, e);
		/* no swap: a memory hog must hit ML, not crawl */
		pd_err se;
		if (cg_write(g->dirs[0], "memory.swap.max", "0", &se) < 0 && se.code != ENOENT) {
			if (e)
				*e = se;
			rc = -1;
		}
	}
	if (l->pids)
		rc |= cg_write_u64(g->dirs[0], "pids.max", l->pids, e);
	if (l->cpu_millicores) {
		snprintf(b, sizeof b, "%" PRIu64 " 100000", (uint64_t)l->cpu_millicores * 100u);
		rc |= cg_write(g->dirs[0], "cpu.max", b, e);
	}
	if (rc) {
		cg_rmdir(g->dirs[0], root->fake);
		free(g);
		return -1;
	}
	g->dirfd = open(g->dirs[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*out = g;
	return 0;
}

static int v2_clone_fd(pd_cg *g)
{
	return g->root->fake ? -1 : g->dirfd;
}

static int v2_attach(pd_cg *g, pid_t pid, pd_err *e)
{
	return cg_write_u64(g->dirs[0], "cgroup.procs", (uint64_t)pid, e);
}

static int v2_stats(pd_cg *g, pd_cg_stats *st)
{
	char b[1024];
	memset(st, 0, sizeof *st);
	const char *d = g->dirs[0];
	if (cg_pread(g, CGF_CPU_STAT, d, "cpu.stat", b, sizeof b) < 0)
		return -1;
	st->cpu_us = pd_keyed_u64(b, "usage_usec");
	st->cpu_user_us = pd_keyed_u64(b, "user_usec");
	st->cpu_sys_us = pd_keyed_u64(b, "system_usec");
	uint64_t peak = cg_pread_u64(g, CGF_MEM_PEAK, d, "memory.peak"), hits = 0;
	if (cg_pread(g, CGF_MEM_EVENTS, d, "memory.events", b, sizeof b) >= 0) {
		st->oom_kills = pd_keyed_u64(b, "oom_kill");
		hits = pd_keyed_u64(b, "max");
	}
	st->mem_limit_hits = hits;
	st->mem_peak = cg_mem_peak_since_reset(g, peak, hits);
	st->pids_current = cg_pread_u64(g, CGF_PIDS, d, "pids.current");
	cg_pids_peak_since_reset(g, st, cg_pread_u64(g, CGF_PIDS_PEAK, d, "pids.peak"));
	return 0;
}

static uint64_t v2_sample(pd_cg *g)
{
	char b[1024];
	const char *d = g->dirs[0];
	uint64_t cpu = cg_pread(g, CGF_CPU_STAT, d, "cpu.stat", b, sizeof b) >= 0 ? pd_keyed_u64(b, "usage_usec") : 0;
	uint64_t cur = cg_pread_u64(g, CGF_PIDS, d, "pids.current");
	if (cur > g->pids_peak_sampled)
		g->pids_peak_sampled = cur;
	return cpu;
}

static void v2_reset_peaks(pd_cg *g)
{
	g->pids_peak_base = cg_pread_u64(g, CGF_PIDS_PEAK, g->dirs[0], "pids.peak");
	g->pids_peak_sampled = 0;
	char b[1024];
	g->mem_base = 0;
	g->mem_hits_base = cg_pread(g, CGF_MEM_EVENTS, g->dirs[0], "memory.events", b, sizeof b) >= 0
				   ? pd_keyed_u64(b, "max")
				   : 0;
	/* memory.peak accepts a reset since 6.12, for later reads through the same descriptor
	 * (the peak then starts at the usage of that moment, the base); older kernels keep the
	 * sandbox-wide peak, which is reported whole */
	int fd = cg_stat_fd(g, CGF_MEM_PEAK, g->dirs[0], "memory.peak", O_RDWR);
	if (fd < 0)
		return;
	/* a fake cgroupfs is plain files: a write replaces them only if they are emptied first */
	if (g->root->fake && ftruncate(fd, 0) < 0)
		return;
	if (pwrite(fd, "reset", 5, 0) == 5)
		g->mem_base = cg_pread_u64(g, CGF_MEM_USAGE, g->dirs[0], "memory.current");
}

int cg_kill_procs_in(const char *dir)
{
	char b[8192];
	if (cg_read(dir, "cgroup.procs", b, sizeof b) < 0)
		return -1;
	int n = 0;
	for (char *p = b; *p;) {
		long pid = strtol(p, &p, 10);
		if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
			n++;
		while (*p == '\n')
			p++;
		if (!pid)
			break;
	}
	return n;
}

static int v2_kill_all(pd_cg *g)
{
	if (!g->root->fake && cg_write(g->dirs[0], "cgroup.kill", "1", NULL) == 0)
		return 0;
	return cg_kill_procs_in(g->dirs[0]) < 0 ? -1 : 0;
}

static int v2_destroy(pd_cg *g, pd_err *e)
{
	int rc = 0;
	cg_stats_close(g);
	if (g->dirfd >= 0)
		close(g->dirfd);
	if (cg_rmdir(g->dirs[0], g->root->fake) < 0)
		rc = pd_fail(e, errno, "rmdir cgroup %s", g->dirs[0]);
	free(g);
	return rc;
}

static bool v2_exists(pd_cg *g)
{
	return access(g->dirs[0], F_OK) == 0;
}

static int v2_set_memory(pd_cg *g, uint64_t bytes, pd_err *e)
{
	if (!bytes)
		return cg_write(g->dirs[0], "memory.max", "max", e);
	return cg_write_u64(g->dirs[0], "memory.max", bytes, e);
}

/* Reclaiming walks the shrinkers (milliseconds, whatever there is to free), so it runs only when
 * the cgroup holds more than keep. What a sandbox holds after its old root is gone is mostly
 * page cache of image files (python's standard library, a compiler, node) that it was the first
 * to read: every sandbox shares it, and evicting it makes the next program of any sandbox read
 * it from disk again (python's print(1) in /run_code: 24 requests/s against 57 when it stays).
 * So only the excess goes, coldest first, as the kernel's LRU lists order it: what one program
 * read once before what every program reads. */
static uint64_t v2_reclaim(pd_cg *g, uint64_t keep)
{
	char b[64];
	uint64_t usage = cg_read(g->dirs[0], "memory.current", b, sizeof b) > 0 ? strtoull(b, NULL, 10) : 0;
	if (usage <= keep)
		return usage;
	/* EAGAIN when it cannot free that much: the usage read after says how far it got */
	cg_write_u64(g->dirs[0], "memory.reclaim", usage - keep, NULL);
	return cg_read(g->dirs[0], "memory.current", b, sizeof b) > 0 ? strtoull(b, NULL, 10) : 0;
}

static uint64_t v2_tasks(pd_cg *g)
{
	return cg_pread_u64(g, CGF_PIDS, g->dirs[0], "pids.current");
}

/* One throttle value as the files take it: a number, or v2's "max" for none. */
static void io_value(char *b, size_t n, uint64_t v)
{
	if (v)
		snprintf(b, n, "%" PRIu64, v);
	else
		snprintf(b, n, "max");
}

static int v2_set_io(pd_cg *g, const pd_iodev *devs, size_t n, const pd_limits *l, pd_err *e)
{
	if (!g->root->v2_io && !g->root->fake)
		return pd_fail(e, EOPNOTSUPP, "I/O limits: the io controller is not delegated to %s (not in "
				   "its parent's cgroup.controllers)", g->root->v2_root);
	for (size_t i = 0; i < n; i++) {
		char line[160], rb[24], wb[24], ri[24], wi[24];
		io_value(rb, sizeof rb, l->io_read_bps);
		io_value(wb, sizeof wb, l->io_write_bps);
		io_value(ri, sizeof ri, l->io_read_iops);
		io_value(wi, sizeof wi, l->io_write_iops);
		/* one device per write: the file takes one line at a time */
		snprintf(line, sizeof line, "%u:%u rbps=%s wbps=%s riops=%s wiops=%s", devs[i].maj, devs[i].min, rb, wb,
			 ri, wi);
		if (cg_write(g->dirs[0], "io.max", line, e) < 0)
			return -1;
	}
	return 0;
}

static int v2_join_fds(pd_cg *g, int *fds, int max, pd_err *e)
{
	(void)g, (void)fds, (void)max, (void)e;
	return 0; /* CLONE_INTO_CGROUP places init; else v2_attach */
}

static const pd_cg_ops v2_ops = {"v2",         v2_create,  v2_clone_fd, v2_attach,
				  v2_stats,     v2_reset_peaks, v2_kill_all, v2_destroy,
				  v2_exists,    v2_set_memory,  cg_stats_close, v2_reclaim,
				  v2_tasks,     v2_set_io,      v2_sample,      v2_join_fds};

/* ---------------------------------------------------------------------------------------------- */

/* /proc/self/mountinfo, read once for the five controllers (each read costs the kernel a walk of
 * every mount); NULL if unreadable. */
static char *read_mountinfo(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (len < cap - 1)
			break;
		char *more = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
		if (!more) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = more;
		cap *= 2;
	}
	fclose(f);
	if (buf)
		buf[len] = 0;
	return buf;
}

/* Finds the v1 mount of a controller in mountinfo (super options list controllers). */
static int v1_mount_of(const char *mountinfo, const char *ctrl, char *out)
{
	if (!mountinfo)
		return -1;
	char line[2048];
	int found = -1;
	for (const char *p = mountinfo; *p;) {
		size_t ll = strcspn(p, "\n");
		size_t cl = ll < sizeof line - 1 ? ll : sizeof line - 1;
		memcpy(line, p, cl);
		line[cl] = 0;
		p += ll + (p[ll] == '\n');
		char *sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup ", 7))
			continue;
		char mnt[PD_PATH];
		if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1)
			continue;
		char *opts = strrchr(sep, ' ');
		if (!opts)
			continue;
		opts++;
		opts[strcspn(opts, "\n")] = 0;
		for (char *tok = strtok(opts, ","); tok; tok = strtok(NULL, ","))
			if (!strcmp(tok, ctrl)) {
				snprintf(out, PD_PATH, "%s", mnt);
				found = 0;
			}
		if (!found)
			break;
	}
	return found;
}

/* Whether the blank-separated list has the word (strstr would find "cpu" in "cpuset"). */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
}

/* Delegates memory, pids and cpu to dir's children (an error if it cannot), and io when dir has
 * it to give (*io says whether it did: I/O limits need it, nothing else does). */
static int enable_v2_controllers(const char *dir, bool *io, pd_err *e)
{
	char b[256], have[256];
	if (cg_read(dir, "cgroup.subtree_control", b, sizeof b) < 0)
		return pd_fail(e, errno, "read %s/cgroup.subtree_control", dir);
	*io = has_word(b, "io");
	if (!*io && cg_read(dir, "cgroup.controllers", have, sizeof have) >= 0 && has_word(have, "io"))
		*io = cg_write(dir, "cgroup.subtree_control", "+io", NULL) == 0;
	const char *need[] = {"memory", "pids", "cpu"};
	for (int i = 0; i < 3; i++) {
		if (has_word(b, need[i]))
			continue;
		char w[32];
		snprintf(w, sizeof w, "+%s", need[i]);
		if (cg_write(dir, "cgroup.subtree_control", w, e) < 0)
			return -1;
	}
	return 0;
}

int pd_cgroups_init(pd_cgroups *cg, int version, const char *root, bool fake, pd_err *e)
{
	memset(cg, 0, sizeof *cg);
	cg->fake = fake;
	if (!version) {
		struct statfs sf;
		if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
			version = 2;
		else
			version = 1;
	}
	cg->version = version;
	if (version == 2) {
		cg->ops = &v2_ops;
		snprintf(cg->v2_root, PD_PATH, "%s", root ? root : "/sys/fs/cgroup/paddock");
		if (pd_mkdir_p(cg->v2_root, 0755) < 0)
			return pd_fail(e, errno, "mkdir %s", cg->v2_root);
		if (fake)
			return 0;
		/* the parent must delegate the controllers to its children; it holds no task itself */
		char parent[PD_PATH];
		snprintf(parent, sizeof parent, "%s", cg->v2_root);
		char *slash = strrchr(parent, '/');
		bool io_parent = true;
		if (slash && slash != parent) {
			*slash = 0;
			if (enable_v2_controllers(parent, &io_parent, e) < 0)
				return -1;
		}
		bool io = false;
		int rc = enable_v2_controllers(cg->v2_root, &io, e);
		cg->v2_io = io_parent && io;
		return rc;
	}
	cg->ops = &pd_cg_v1_ops;
	const char *ctrls[4] = {"memory", "pids", "cpu", "cpuacct"};
	char *mi = read_mountinfo();
	for (int c = 0; c < 4; c++) {
		char m[PD_PATH];
		int rc = 0;
		if (v1_mount_of(mi, ctrls[c], m) < 0)
			rc = pd_fail(e, ENOENT, "cgroup v1 controller '%s' is not mounted", ctrls[c]);
		else if (snprintf(cg->v1_dirs[c], PD_PATH, "%s/%s", m, root ? root : "paddock") >= PD_PATH)
			rc = pd_fail(e, ENAMETOOLONG, "cgroup path");
		else if (pd_mkdir_p(cg->v1_dirs[c], 0755) < 0)
			rc = pd_fail(e, errno, "mkdir %s", cg->v1_dirs[c]);
		if (rc < 0) {
			free(mi);
			return -1;
		}
	}
	cg->v1_n = 4;
	/* blkio is optional: only a sandbox with I/O limits needs it, and says so if it is missing */
	char m[PD_PATH];
	if (v1_mount_of(mi, "blkio", m) == 0 &&
	    snprintf(cg->v1_dirs[V1_BLKIO], PD_PATH, "%s/%s", m, root ? root : "paddock") < PD_PATH &&
	    pd_mkdir_p(cg->v1_dirs[V1_BLKIO], 0755) == 0)
		cg->v1_n = 5;
	free(mi);
	return 0;
}

/* A paddock process killed with SIGKILL cannot remove its sandboxes' cgroups (their processes die
 * with the sandbox's init, the directories stay). The next context removes them. */
int pd_cgroups_sweep(pd_cgroups *cg, bool (*is_dead)(const char *owner, void *arg), void *arg)
{
	int removed = 0;
	int n = cg->version == 2 ? 1 : cg->v1_n;
	/* each owner is asked once: another live paddock may hold hundreds of cgroups here */
	enum { SEEN = 32 };
	struct {
		char owner[9];
		bool dead;
	} seen[SEEN];
	int nseen = 0;
	for (int i = 0; i < n; i++) {
		const char *parent = cg->version == 2 ? cg->v2_root : cg->v1_dirs[i];
		DIR *d = opendir(parent);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			char owner[16];
			if (strncmp(de->d_name, "sb-", 3) || strlen(de->d_name) < 12 || de->d_name[11] != '-')
				continue;
			memcpy(owner, de->d_name + 3, 8);
			owner[8] = 0;
			int k = 0;
			while (k < nseen && strcmp(seen[k].owner, owner))
				k++;
			bool dead;
			if (k < nseen) {
				dead = seen[k].dead;
			} else {
				dead = is_dead(owner, arg);
				if (nseen < SEEN) {
					memcpy(seen[nseen].owner, owner, 9);
					seen[nseen++].dead = dead;
				}
			}
			if (!dead)
				continue;
			char dir[PD_PATH];
			if (snprintf(dir, sizeof dir, "%s/%s", parent, de->d_name) >= (int)sizeof dir)
				continue;
			cg_kill_procs_in(dir);
			if (cg_rmdir(dir, cg->fake) == 0)
				removed++;
		}
		if (d)
			closedir(d);
	}
	return removed;
}

int pd_cgroups_owned(pd_cgroups *cg, const char *owner)
{
	char prefix[32];
	snprintf(prefix, sizeof prefix, "sb-%s-", owner);
	size_t pl = strlen(prefix);
	int n = 0, ndirs = cg->version == 2 ? 1 : cg->v1_n;
	for (int i = 0; i < ndirs; i++) {
		DIR *d = opendir(cg->version == 2 ? cg->v2_root : cg->v1_dirs[i]);
		struct dirent *de;
		while (d && (de = readdir(d)))
			n += !strncmp(de->d_name, prefix, pl);
		if (d)
			closedir(d);
	}
	return n;
}
