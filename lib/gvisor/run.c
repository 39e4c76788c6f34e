/* The gvisor tier: one program run under gVisor's runsc, supervised like a container sandbox's.
 *
 * paddock's own cgroup backend makes and limits the cgroup (memory, pids, CPU quota) and runsc is
 * told to join it (cgroupsPath), so the sandbox's Sentry, gofer and everything they run are
 * charged and counted where paddock reads its stats, and killing the cgroup's tasks ends the run
 * whatever state runsc is in. The wall and CPU limits and the output limit are watched here;
 * a kill for them is the verdict (TO, OL), an OOM kill in the cgroup is ML. */
#define _GNU_SOURCE
#include "../tier.h"
#include "capture.h"
#include "gvisor.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUNSC "/usr/bin/runsc"

bool pd_gvisor_available(char *msg, size_t len)
{
	if (access(RUNSC, X_OK) == 0)
		return true;
	snprintf(msg, len, "%s is not installed (scripts/install-deps.sh installs runsc)", RUNSC);
	return false;
}

static const char *platform_of(const pd_sandbox_opts *o)
{
	if (o->gvisor_platform && *o->gvisor_platform)
		return o->gvisor_platform;
	const char *env = getenv("PADDOCK_GVISOR_PLATFORM");
	return env && *env ? env : "ptrace";
}

/* The cgroup's path relative to its hierarchy's root, as runsc's cgroupsPath wants it. */
static int cgroup_rel(const pd_cgroups *cg, const char *name, char *out, size_t len, pd_err *e)
{
	const char *p = cg->version == 2 ? cg->v2_root : cg->v1_dirs[0];
	static const char mnt[] = "/sys/fs/cgroup";
	if (strncmp(p, mnt, sizeof mnt - 1) || cg->fake)
		return pd_fail(e, ENOTSUP, "gvisor: cgroups under %s, not %s", p, mnt);
	p += sizeof mnt - 1;
	if (cg->version == 1) /* past the hierarchy's own directory (memory, pids...) */
		p = strchr(p + 1, '/');
	if (!p)
		return pd_fail(e, ENOTSUP, "gvisor: cgroup root %s", cg->v1_dirs[0]);
	snprintf(out, len, "%s/%s", p, name);
	return 0;
}

/* Runs runsc with args (NULL-ended after the global flags), waits for it; its output dropped. */
static int runsc_quiet(const char *root, const char *const *args)
{
	const char *argv[16] = {RUNSC, "--root", root};
	int n = 3;
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
		execv(RUNSC, (char *const *)argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

typedef enum { KILL_NONE, KILL_TIME, KILL_OUTPUT } kill_why;

int pd_gvisor_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e)
{
	uint64_t t0 = pd_now_us();
	memset(r, 0, sizeof *r);
	r->status = PD_XX;
	snprintf(r->residue, sizeof r->residue, "not-created");
	pd_image_note(r, o);
	char why[200];
	if (!pd_gvisor_available(why, sizeof why)) {
		snprintf(r->error, sizeof r->error, "%s", why);
		return pd_fail(e, ENOENT, "%s", why);
	}
	if (o->net == PD_NET_HOST || o->net == PD_NET_ALLOWLIST || o->top_layer || (o->audit && o->audit->enabled) || pd_limits_have_io(&o->limits)) {
		/* I/O limits: the sentry's own reads would be charged too, and nothing here measured how */
		const char *what = o->net == PD_NET_HOST ? "the host's network"
				   : o->net == PD_NET_ALLOWLIST ? "an allowlist network (its relay)"
				   : o->top_layer	 ? "a session snapshot"
				   : pd_limits_have_io(&o->limits) ? "I/O limits"
								   : "an audit";
		snprintf(r->error, sizeof r->error, "isolation gvisor does not offer %s", what);
		return pd_fail(e, ENOTSUP, "isolation gvisor does not offer %s", what);
	}
	pd_limits lim = o->limits;
	if (!lim.disk_bytes)
		lim.disk_bytes = 256ull << 20;
	uint64_t wall_ms = x->wall_ms ? x->wall_ms : lim.wall_ms;
	uint64_t cpu_ms = x->cpu_ms ? x->cpu_ms : lim.cpu_ms;
	uint64_t kill_bytes = x->output_kill_bytes ? x->output_kill_bytes : lim.output_kill_bytes;
	uint64_t keep = lim.output_bytes ? lim.output_bytes : 1 << 20;

	pthread_mutex_lock(&c->lock);
	uint64_t seq = ++c->seq;
	pthread_mutex_unlock(&c->lock);
	/* the cgroup's name is the container tier's with a g: the dead-owner sweep covers both */
	char name[48], id[48], cgpath[PD_PATH], root[PD_PATH + 16], gvdir[PD_PATH + 16];
	snprintf(name, sizeof name, "sb-%08" PRIx32 "-g%" PRIu64, c->run_id, seq);
	snprintf(id, sizeof id, "paddock-%08" PRIx32 "-%" PRIu64, c->run_id, seq);
	snprintf(r->sandbox_id, sizeof r->sandbox_id, "%s", name);
	snprintf(gvdir, sizeof gvdir, "%s/gvisor", c->state_dir);
	snprintf(root, sizeof root, "%s/gvisor/runsc", c->state_dir);
	if (cgroup_rel(&c->cg, name, cgpath, sizeof cgpath, e) < 0 || pd_mkdir_p(root, 0700) < 0) {
		if (!e || !e->code) /* cgroup_rel filed nothing: the mkdir failed */
			pd_fail(e, errno, "mkdir %s", root);
		snprintf(r->error, sizeof r->error, "%s", e ? PD_ERR_STR(e) : "gvisor setup");
		return -1;
	}
	pd_cg *g = NULL;
	if (c->cg.ops->create(&c->cg, name, &lim, &g, e) < 0) {
		snprintf(r->error, sizeof r->error, "%s", e ? PD_ERR_STR(e) : "cgroup");
		return -1;
	}
	pd_gv_bundle b;
	if (pd_gv_bundle_make(&b, gvdir, o, x, &lim, cgpath, c->default_image, e) < 0) {
		c->cg.ops->destroy(g, NULL);
		snprintf(r->error, sizeof r->error, "%s", e ? PD_ERR_STR(e) : "gvisor bundle");
		return -1;
	}

	int in = -1, outp[2] = {-1, -1}, errp[2] = {-1, -1};
	if (x->stdin_data) {
		in = memfd_create("paddock-stdin", MFD_CLOEXEC);
		if (in >= 0 && (write(in, x->stdin_data, x->stdin_len) != (ssize_t)x->stdin_len ||
				lseek(in, 0, SEEK_SET) < 0)) {
			close(in);
			in = -1;
		}
	} else if (x->stdin_from_fd)
		in = dup(x->stdin_fd);
	else
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	char plat[80], net[32];
	snprintf(plat, sizeof plat, "--platform=%s", platform_of(o));
	/* runsc's "none" network is a sandbox with only its loopback interface: loopback and none
	 * both get that (gVisor has no lo-down mode; docs/isolation.md) */
	snprintf(net, sizeof net, "--network=none");
	const char *argv[] = {RUNSC, "--root", root, "--rootless=false", net, plat, "--overlay2=root:memory",
			      "run", "--bundle", b.dir, id, NULL};
	pid_t pid = -1;
	if (in >= 0 && pipe2(outp, O_CLOEXEC) == 0 && pipe2(errp, O_CLOEXEC) == 0)
		pid = fork();
	if (pid == 0) {
		dup2(in, 0), dup2(outp[1], 1), dup2(errp[1], 2);
		setpgid(0, 0);
		execv(RUNSC, (char *const *)argv);
		_exit(127);
	}
	int saved = errno;
	if (in >= 0)
		close(in);
	if (outp[1] >= 0)
		close(outp[1]);
	if (errp[1] >= 0)
		close(errp[1]);
	if (pid < 0) {
		if (outp[0] >= 0)
			close(outp[0]);
		if (errp[0] >= 0)
			close(errp[0]);
		pd_gv_bundle_remove(&b);
		c->cg.ops->destroy(g, NULL);
		snprintf(r->error, sizeof r->error, "start runsc: %s", strerror(saved));
		return pd_fail(e, saved, "start runsc");
	}
	uint64_t t1 = pd_now_us();
	r->setup_us = t1 - t0;

	pd_capture cap[2];
	pd_capture_init(&cap[0], keep);
	pd_capture_init(&cap[1], keep);
	struct pollfd pf[2] = {{outp[0], POLLIN, 0}, {errp[0], POLLIN, 0}};
	kill_why killed = KILL_NONE;
	uint64_t deadline = wall_ms ? t1 + wall_ms * 1000 : 0;
	char buf[65536];
	pd_cg_stats st = {0};
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		int timeout = 50; /* CPU time is polled: the cgroup has no limit for it */
		if (poll(pf, 2, timeout) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(pf[i].fd, buf, sizeof buf);
			if (n <= 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
				continue;
			}
			size_t head = pd_capture_add(&cap[i], buf, (size_t)n);
			if (x->on_output && head)
				x->on_output(x->cb_arg, i + 1, buf, head);
			if (x->spill && x->spill_fd[i] >= 0 && write(x->spill_fd[i], buf, (size_t)n) != n)
				r->spill_lost[i] = true;
		}
		if (killed)
			continue;
		uint64_t now = pd_now_us();
		if (kill_bytes && cap[0].total + cap[1].total > kill_bytes)
			killed = KILL_OUTPUT;
		else if (deadline && now >= deadline)
			killed = KILL_TIME;
		else if (cpu_ms && c->cg.ops->stats(g, &st) == 0 && st.cpu_us / 1000 >= cpu_ms)
			killed = KILL_TIME;
		if (killed)
			c->cg.ops->kill_all(g);
	}
	int ws = 0;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	uint64_t t2 = pd_now_us();
	r->exec_us = t2 - t1;
	r->wall_ms = (t2 - t1) / 1000;
	c->cg.ops->stats(g, &st);
	c->cg.ops->rest(g);
	r->cpu_ms = st.cpu_us / 1000;
	r->cpu_user_ms = st.cpu_user_us / 1000;
	r->cpu_sys_ms = st.cpu_sys_us / 1000;
	r->memory_peak_bytes = st.mem_peak;
	r->pids_peak = (uint32_t)st.pids_peak;
	r->oom_killed = st.oom_kills > 0;
	pd_capture_finish(&cap[0], &r->out);
	pd_capture_finish(&cap[1], &r->err);

	int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	/* runsc exits with the program's status, or 128 + the signal that killed it; its own
	 * failures (the program not found, a bad bundle) are 128 with "running container:" */
	bool runsc_failed = code == 128 && r->err.head && memmem(r->err.head, r->err.head_len, "running container:", 18);
	if (killed == KILL_TIME)
		r->status = PD_TO, r->signal = SIGKILL;
	else if (killed == KILL_OUTPUT)
		r->status = PD_OL, r->signal = SIGKILL;
	else if (r->oom_killed)
		r->status = PD_ML, r->signal = SIGKILL;
	else if (runsc_failed && memmem(r->err.head, r->err.head_len, "failed to load", 14)) {
		r->status = PD_RE, r->exit_code = 127;
		snprintf(r->error, sizeof r->error, "cannot execute %s", x->argv[0]);
	} else if (runsc_failed || code < 0) {
		r->status = PD_XX;
		snprintf(r->error, sizeof r->error, "runsc failed (%s)", code < 0 ? "killed" : "exit 128");
	} else if (code > 128 && code < 128 + 65)
		r->status = PD_SG, r->signal = code - 128;
	else
		r->status = code ? PD_RE : PD_OK, r->exit_code = code;

	/* a killed runsc may leave its container's state behind: delete it */
	if (killed || code < 0 || runsc_failed)
		runsc_quiet(root, (const char *const[]){"delete", "-force", id, NULL});
	pd_gv_bundle_remove(&b);
	pd_err de = {0};
	bool cg_left = c->cg.ops->destroy(g, &de) < 0;
	snprintf(r->residue, sizeof r->residue, "%s", cg_left ? "cgroup" : b.rootfs_mounted ? "rootfs" : "clean");
	r->teardown_us = pd_now_us() - t2;
	return 0;
}
