/* A kept gvisor sandbox (pools, sessions): `runsc create` + `runsc start` of a sandbox whose only
 * process is `sleep infinity`, one `runsc exec` per pd_sandbox_exec, `runsc delete --force` at
 * the end. It is a pd_sandbox like a container's (id, state, cgroup, limits, use ids), so pools
 * and sessions hold it unchanged; its tier's row (lib/tier.c) routes the public calls here.
 *
 * Why a running sandbox and `runsc exec`: measured on the development machine (docs/benchmarks.md),
 * an exec in a started sandbox costs ~0.03 s where `runsc do` or `runsc run` costs ~0.15-0.2 s; the
 * Sentry's boot is the price, and a pool pays it ahead of the request.
 *
 * The reuse rule: none. A gvisor sandbox is never reset: its root's writes live in the Sentry's
 * memory overlay, its processes and kernel state in the Sentry, none of which the host can
 * inspect to prove a reset clean. So pd_sandbox_reset refuses it, a pool destroys every released
 * one and builds a fresh one ahead of the next user (tests/api/gvisor.t shows two users of a pool
 * never see each other's files or processes).
 *
 * Files: /tmp, /work and /dev/shm are host directories on a tmpfs of the disk size made for the
 * sandbox and bound into it (runsc's gofer serves them, and sees the host's changes), so the
 * host's file operations (a template's files, a session's reads and writes) are done on the host,
 * resolved strictly inside the directory (openat2 RESOLVE_IN_ROOT). Paths elsewhere are in the
 * Sentry's memory and are refused (ENOTSUP). */
#define _GNU_SOURCE
#include "gvisor.h"
#include "proto.h"
#include "sandbox.h"
#include "tier.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct pd_gv_sb {
	pd_gv_bundle b;
	char root[PD_PATH + 16];   /* runsc --root */
	char cid[48];              /* runsc's container id */
	char scratch[PD_PATH + 48]; /* the host tmpfs holding tmp, work, shm */
	bool scratch_mounted, created;
	pid_t reaper;              /* the sandbox processes' subreaper (runsc_cmd), 0 if none */
	int dir_fd[3];             /* tmp, work, shm */
	uint64_t execs;
};

static const char *const scratch_dst[3] = {"/tmp", "/work", "/dev/shm"};
static const char *const scratch_src[3] = {"tmp", "work", "shm"};

/* rc, and on failure the last line runsc wrote to ef (closed) into err */
static int runsc_err(int ef, int rc, char *err, size_t errlen)
{
	char buf[4096];
	off_t end = lseek(ef, 0, SEEK_END);
	off_t from = end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0; /* the reason is last */
	ssize_t k = pread(ef, buf, sizeof buf - 1, from);
	size_t got = k > 0 ? (size_t)k : 0;
	close(ef);
	buf[got] = 0;
	if (rc && err) {
		while (got && buf[got - 1] == '\n')
			buf[--got] = 0;
		char *last = strrchr(buf, '\n');
		snprintf(err, errlen, "%s", last ? last + 1 : buf);
	}
	return rc;
}

/* The reaper's body, in a child of the caller: runsc (argv) as its child, runsc's exit status
 * written to fd 3, then every orphan reaped until none is left.
 *
 * Why: `runsc create` leaves the sandbox's processes (the Sentry, the gofer) behind as orphans,
 * and `runsc delete` waits until they are gone, reaped by whoever adopted them. Adopted by the
 * host's init they wait for its reaping, which on this VM (pid 1 is not a real init) took
 * 1.4-1.8 s per sandbox, and in a container whose pid 1 is paddock itself would never come. A
 * subreaper of their own reaps them at once. Only async-signal-safe calls after the fork: the
 * caller is multi-threaded. */
static _Noreturn void reaper_main(const char *const *argv, int devnull, int ef)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* the daemon's descriptors (connections, the listening socket) must not live on in a
	 * process that outlives this call: only the status pipe (3), /dev/null (4) and runsc's
	 * stderr (5) are kept */
	close_range(6, ~0U, 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(devnull, 0), dup2(devnull, 1), dup2(ef, 2);
		close_range(3, ~0U, 0);
		execv(PD_RUNSC, (char *const *)argv);
		_exit(127);
	}
	close(devnull);
	close(ef);
	close(0), close(1), close(2);
	int st = 0;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int rc = pid < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (write(3, &rc, sizeof rc) != (ssize_t)sizeof rc)
		_exit(1);
	close(3);
	for (;;)
		if (waitpid(-1, &st, __WALL) < 0 && errno != EINTR)
			_exit(0); /* ECHILD: the sandbox's processes are all gone */
}

/* runsc with args after the global flags; its stderr's last line into err on failure. With
 * reaper (`runsc create`) it runs under a subreaper (reaper_main) that stays until the sandbox's
 * processes are gone: its pid in s->gv->reaper, waited for by pd_gv_sandbox_destroy. */
static int runsc_cmd_as(pd_sandbox *s, const char *const *args, bool reaper, char *err, size_t errlen)
{
	struct pd_gv_sb *g = s->gv;
	char plat[80];
	const char *argv[32];
	int n = pd_gv_global_args(argv, g->root, &s->opts, plat);
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	/* stderr into a memory file, not a pipe: `runsc create` leaves the sandbox running with the
	 * descriptors it was given, so a pipe would never reach its end */
	int ef = memfd_create("paddock-runsc-err", MFD_CLOEXEC);
	if (ef < 0)
		return -1;
	int sp[2] = {-1, -1};
	if (reaper && pipe2(sp, O_CLOEXEC) < 0) {
		close(ef);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (reaper) {
			/* 3: the status pipe, 4: /dev/null, 5: the memfd (above any of them: dup
			 * first to high numbers, then down, so that none overwrites another) */
			int a = fcntl(sp[1], F_DUPFD, 64), b = fcntl(fd, F_DUPFD, 64), c = fcntl(ef, F_DUPFD, 64);
			if (a < 0 || b < 0 || c < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0 || dup2(c, 5) < 0)
				_exit(127);
			reaper_main((const char *const *)argv, 4, 5);
		}
		dup2(fd, 0), dup2(fd, 1), dup2(ef, 2);
		execv(PD_RUNSC, (char *const *)argv);
		_exit(127);
	}
	int rc = -1;
	if (reaper) {
		close(sp[1]);
		ssize_t k = -1;
		while (pid > 0 && (k = read(sp[0], &rc, sizeof rc)) < 0 && errno == EINTR)
			;
		close(sp[0]);
		if (k != (ssize_t)sizeof rc)
			rc = -1; /* the reaper died before runsc ended */
		if (pid > 0)
			g->reaper = pid;
	} else {
		int st = 0;
		while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		rc = pid < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	}
	return runsc_err(ef, rc, err, errlen);
}

static int runsc_cmd(pd_sandbox *s, const char *const *args, char *err, size_t errlen)
{
	return runsc_cmd_as(s, args, false, err, errlen);
}

static int make_scratch(pd_sandbox *s, pd_err *e)
{
	struct pd_gv_sb *g = s->gv;
	snprintf(g->scratch, sizeof g->scratch, "%s/gvisor/scratch-%s", s->ctx->state_dir, s->id);
	if (pd_mkdir_p(g->scratch, 0700) < 0)
		return pd_fail(e, errno, "mkdir %s", g->scratch);
	char opts[64];
	snprintf(opts, sizeof opts, "size=%llu,mode=0755", (unsigned long long)s->lim.disk_bytes);
	if (mount("tmpfs", g->scratch, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return pd_fail(e, errno, "mount the scratch tmpfs at %s", g->scratch);
	g->scratch_mounted = true;
	for (int i = 0; i < 3; i++) {
		char p[PD_PATH + 64];
		snprintf(p, sizeof p, "%s/%s", g->scratch, scratch_src[i]);
		/* /work as a container sandbox's (0755), /tmp and /dev/shm sticky and world-writable */
		mode_t m = i == 1 ? 0755 : 01777;
		if (mkdir(p, m) < 0 || chmod(p, m) < 0 ||
		    /* /work is the sandbox's user's, as a one-shot gvisor run's and a container's */
		    (i == 1 && (s->opts.uid || s->opts.gid) && chown(p, s->opts.uid, s->opts.gid) < 0) ||
		    (g->dir_fd[i] = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			return pd_fail(e, errno, "scratch %s", p);
	}
	return 0;
}

static void drop(pd_sandbox *s)
{
	struct pd_gv_sb *g = s->gv;
	for (int i = 0; i < 3; i++)
		if (g->dir_fd[i] >= 0)
			close(g->dir_fd[i]);
	if (g->scratch_mounted && umount2(g->scratch, MNT_DETACH) == 0)
		g->scratch_mounted = false;
	if (g->scratch[0] && !g->scratch_mounted)
		rmdir(g->scratch);
	pd_gv_bundle_remove(&g->b);
	free(g);
	s->gv = NULL;
}

pd_sandbox *pd_gv_sandbox_create(pd_ctx *c, const pd_sandbox_opts *o, pd_err *e)
{
	char why[200];
	if (!pd_gvisor_available(why, sizeof why) || pd_gv_refused(o, why, sizeof why) < 0) {
		pd_fail(e, ENOTSUP, "%s", why);
		return NULL;
	}
	pd_ctx_gvisor_sweep_once(c);
	pd_sandbox *s = calloc(1, sizeof *s);
	struct pd_gv_sb *g = s ? calloc(1, sizeof *g) : NULL;
	if (!g) {
		free(s);
		pd_fail(e, ENOMEM, "gvisor sandbox");
		return NULL;
	}
	s->gv = g;
	g->dir_fd[0] = g->dir_fd[1] = g->dir_fd[2] = -1;
	s->ctx = c;
	s->opts = *o;
	s->lim = o->limits;
	if (!s->lim.disk_bytes)
		s->lim.disk_bytes = 256ull << 20;
	s->pid = 0; /* the Sentry's processes are not the host's: nothing to look into */
	s->pidfd = s->sock = s->upper_fd = -1;
	s->reaped = true;
	s->state = PD_CREATING;
	s->created_us = pd_now_us();
	pthread_mutex_lock(&c->lock);
	uint64_t seq = ++c->seq;
	pthread_mutex_unlock(&c->lock);
	/* the cgroup's name is the container tier's with a g: the dead-owner sweep covers both */
	snprintf(s->id, sizeof s->id, "sb-%08" PRIx32 "-g%" PRIu64, c->run_id, seq);
	snprintf(g->cid, sizeof g->cid, "paddock-%08" PRIx32 "-%" PRIu64, c->run_id, seq);
	snprintf(g->root, sizeof g->root, "%s/gvisor/runsc", c->state_dir);
	char cgpath[PD_PATH], gvdir[PD_PATH + 16];
	snprintf(gvdir, sizeof gvdir, "%s/gvisor", c->state_dir);
	static char t_sleep[] = "sleep", t_inf[] = "infinity";
	char *argv[] = {t_sleep, t_inf, NULL};
	pd_exec_opts x0 = {.argv = argv};
	/* runsc makes cgroups of its own: pd_ctx_free lists them. Atomic: workers and the pools'
	 * builders create gvisor sandboxes at once (make tsan, judge_gvisor.t) */
	__atomic_store_n(&c->cg_other, true, __ATOMIC_RELAXED);
	if (pd_gv_cgroup_rel(&c->cg, s->id, cgpath, sizeof cgpath, e) < 0 || pd_mkdir_p(g->root, 0700) < 0 ||
	    c->cg.ops->create(&c->cg, s->id, &s->lim, &s->cg, e) < 0)
		goto fail;
	if (make_scratch(s, e) < 0 ||
	    pd_gv_bundle_make(&g->b, gvdir, o, &x0, &s->lim, cgpath, c->default_image, g->scratch, e) < 0)
		goto fail;
	char err[256] = "";
	g->created = true;
	if (runsc_cmd_as(s, (const char *const[]){"create", "--bundle", g->b.dir, g->cid, NULL}, true, err, sizeof err) ||
	    runsc_cmd(s, (const char *const[]){"start", g->cid, NULL}, err, sizeof err)) {
		pd_fail(e, EIO, "runsc could not start the sandbox (its image needs sleep): %s", err);
		goto fail;
	}
	s->ready_cost_us = pd_now_us() - s->created_us;
	s->state = PD_READY;
	return s;
fail:;
	char res[128];
	pd_gv_sandbox_destroy(s, res, sizeof res);
	return NULL;
}

typedef struct step_kill_arg {
	pd_sandbox *s;
	bool step;
} step_kill_arg;

/* A limit passed: the whole sandbox (its cgroup's every task), or with step_kill every process
 * but the sandbox's init, from inside (kill -1 spares init and the killer) */
static void kill_on_limit(void *arg)
{
	step_kill_arg *k = arg;
	if (k->step && runsc_cmd(k->s, (const char *const[]){"exec", k->s->gv->cid, "kill", "-KILL", "-1", NULL},
				 NULL, 0) <= 1)
		return; /* kill's 1: something it could not signal (itself, a zombie) */
	k->step = false;
	k->s->ctx->cg.ops->kill_all(k->s->cg);
}

int pd_gv_sandbox_exec(pd_sandbox *s, const pd_exec_opts *x, pd_result *r, pd_err *e)
{
	struct pd_gv_sb *g = s->gv;
	snprintf(r->isolation, sizeof r->isolation, "gvisor");
	r->status = PD_XX;
	if (x->audit && x->audit->enabled)
		return pd_fail(e, ENOTSUP, "isolation gvisor does not offer an audit");
	char spec[PD_PATH + 48];
	snprintf(spec, sizeof spec, "%s/process.json", g->b.dir);
	json_t *proc = pd_gv_process_json(x, &s->lim, s->opts.uid, s->opts.gid);
	if (!proc || json_dump_file(proc, spec, JSON_COMPACT) < 0) {
		json_decref(proc);
		return pd_fail(e, EIO, "write %s", spec);
	}
	json_decref(proc);
	char plat[80];
	const char *argv[32];
	int n = pd_gv_global_args(argv, g->root, &s->opts, plat);
	argv[n++] = "exec";
	argv[n++] = "--process";
	argv[n++] = spec;
	argv[n++] = g->cid;
	argv[n] = NULL;
	step_kill_arg ka = {s, x->step_kill};
	pd_gv_outcome out = {0};
	pd_gv_proc p = {.argv = argv,
			.cg = s->cg,
			.wall_ms = x->wall_ms ? x->wall_ms : s->lim.wall_ms,
			.cpu_ms = x->cpu_ms ? x->cpu_ms : s->lim.cpu_ms,
			.kill_bytes = x->output_kill_bytes ? x->output_kill_bytes : s->lim.output_kill_bytes,
			.keep = s->lim.output_bytes ? s->lim.output_bytes : 1 << 20,
			.kill = kill_on_limit,
			.kill_arg = &ka,
			.result = &out};
	s->state = PD_RUNNING;
	g->execs++;
	if (pd_gv_supervise(s->ctx, &p, x, r, e) < 0) {
		s->state = PD_FAILED;
		return -1;
	}
	/* what the sandbox is after: a limit's kill without step_kill ended it (as a container's);
	 * an OOM kill or runsc's own failure may have taken the Sentry: not used again */
	if (out.killed && !ka.step)
		s->state = PD_TIMED_OUT;
	else if (r->status == PD_ML || r->status == PD_XX || out.code < 0)
		s->state = PD_FAILED;
	else
		s->state = PD_READY;
	return 0;
}

int pd_gv_sandbox_destroy(pd_sandbox *s, char *residue, size_t residue_len)
{
	struct pd_gv_sb *g = s->gv;
	pd_ctx *c = s->ctx;
	char res[128] = "";
	if (s->state != PD_FAILED)
		s->state = PD_RECLAIMING;
	if (g->created)
		runsc_cmd(s, (const char *const[]){"delete", "--force", g->cid, NULL}, NULL, 0);
	if (g->reaper > 0) {
		/* its end is the sandbox processes' end; one still there past the teardown timeout
		 * is counted as residue, the reaper killed (init adopts what is left) and reaped */
		uint64_t td = s->opts.teardown_timeout_ms ? s->opts.teardown_timeout_ms : 10000;
		uint64_t end = pd_now_us() + td * 1000;
		pid_t w;
		while ((w = waitpid(g->reaper, NULL, WNOHANG)) == 0 && pd_now_us() < end)
			usleep(2000);
		if (w == 0) {
			snprintf(res, sizeof res, "runsc-processes");
			kill(g->reaper, SIGKILL);
			while (waitpid(g->reaper, NULL, 0) < 0 && errno == EINTR)
				;
		}
		g->reaper = 0;
	}
	if (s->cg) {
		/* runsc's processes may take a moment to leave the cgroup after the kill: wait for
		 * them (the cgroup's task count), as long as the teardown timeout allows */
		uint64_t td = s->opts.teardown_timeout_ms ? s->opts.teardown_timeout_ms : 10000;
		uint64_t end = pd_now_us() + td * 1000;
		int rc;
		while ((rc = c->cg.ops->destroy(s->cg, NULL)) < 0 && pd_now_us() < end) {
			c->cg.ops->kill_all(s->cg);
			usleep(5000);
		}
		if (rc < 0)
			snprintf(res + strlen(res), sizeof res - strlen(res), "%scgroup", res[0] ? "," : "");
		s->cg = NULL;
	}
	if (pd_gv_cgroup_sweep(c, s->id) < 0 && !strstr(res, "cgroup"))
		snprintf(res + strlen(res), sizeof res - strlen(res), "%scgroup", res[0] ? "," : "");
	char state[PD_PATH + 96];
	snprintf(state, sizeof state, "%s/%s_sandbox:%s.state", g->root, g->cid, g->cid);
	if (g->created && access(state, F_OK) == 0)
		snprintf(res + strlen(res), sizeof res - strlen(res), "%srunsc-state", res[0] ? "," : "");
	drop(s);
	if (!res[0] && residue_len)
		snprintf(res, sizeof res, "clean");
	if (residue && residue_len)
		snprintf(residue, residue_len, "%s", res);
	int dirty = strcmp(res, "clean") != 0;
	free(s);
	return dirty ? -1 : 0;
}

/* ---- files ---- */

/* Which scratch directory path is in (its index) and the rest of it; -1 if none. */
static int scratch_of(const char *path, const char **rest)
{
	for (int i = 0; i < 3; i++) {
		size_t l = strlen(scratch_dst[i]);
		if (!strncmp(path, scratch_dst[i], l) && (path[l] == '/' || !path[l])) {
			*rest = path + l + strspn(path + l, "/");
			return i;
		}
	}
	return -1;
}

static int open_in(int dirfd, const char *rest, int flags, mode_t mode)
{
	/* openat2 takes no flag beside O_PATH but O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC */
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY)),
			       .mode = flags & O_CREAT ? mode : 0,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	return (int)syscall(SYS_openat2, dirfd, *rest ? rest : ".", &how, sizeof how);
}

int pd_gv_fileop(pd_sandbox *s, uint32_t op, const char *path, int flags, mode_t mode, pd_fop_use use,
		 int *fd_out, pd_err *e)
{
	(void)use; /* no scratch kept across uses: a gvisor sandbox is never reset */
	struct pd_gv_sb *g = s->gv;
	if (s->state != PD_READY)
		return pd_fail(e, EINVAL, "sandbox %s is %s, not READY", s->id, pd_state_name(s->state));
	if (!path || path[0] != '/')
		return pd_fail(e, EINVAL, "%s: not an absolute path", path ? path : "");
	const char *rest;
	int i = scratch_of(path, &rest);
	if (i < 0) {
		/* the parents of the scratch directories exist (pd_sandbox_mkdir walks them) */
		if (op == FILEOP_MKDIR && (!strcmp(path, "/") || !strcmp(path, "/dev")))
			return pd_fail(e, EEXIST, "%s", path);
		return pd_fail(e, ENOTSUP,
			       "%s: a gvisor sandbox's files are reachable at /work, /tmp and /dev/shm only "
			       "(the rest is in gVisor's memory)",
			       path);
	}
	if (op == FILEOP_OPEN) {
		int fd = open_in(g->dir_fd[i], rest, flags | O_NONBLOCK, mode);
		if (fd < 0)
			return pd_fail(e, errno, "%s", path);
		struct stat st;
		/* as a container sandbox's: no device or socket (a fifo is refused later where a
		 * regular file is needed) */
		if (fstat(fd, &st) < 0 || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) {
			close(fd);
			return pd_fail(e, EACCES, "%s: not a file or a directory", path);
		}
		*fd_out = fd;
		return 0;
	}
	/* the parent resolved inside, the last component acted on there */
	char parent[4096];
	snprintf(parent, sizeof parent, "%s", rest);
	char *slash = strrchr(parent, '/');
	const char *base = slash ? slash + 1 : parent;
	if (!*rest || !strcmp(base, ".") || !strcmp(base, ".."))
		return pd_fail(e, op == FILEOP_MKDIR ? EEXIST : EBUSY, "%s", path);
	int pfd;
	if (slash) {
		*slash = 0;
		pfd = open_in(g->dir_fd[i], parent, O_PATH | O_DIRECTORY, 0);
	} else
		pfd = fcntl(g->dir_fd[i], F_DUPFD_CLOEXEC, 3);
	if (pfd < 0)
		return pd_fail(e, errno, "%s", path);
	int rc = op == FILEOP_MKDIR    ? mkdirat(pfd, base, mode)
		 : op == FILEOP_RMDIR  ? unlinkat(pfd, base, AT_REMOVEDIR)
		 : op == FILEOP_UNLINK ? unlinkat(pfd, base, 0)
				       : (errno = EINVAL, -1);
	int err = errno;
	close(pfd);
	return rc < 0 ? pd_fail(e, err, "%s", path) : 0;
}
