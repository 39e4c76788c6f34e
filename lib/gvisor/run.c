/* The gvisor tier: one program run under gVisor's runsc, supervised like a container sandbox's.
 *
 * paddock's own cgroup backend makes and limits the cgroup (memory, pids, CPU quota) and runsc is
 * told to join it (cgroupsPath), so the sandbox's Sentry, gofer and everything they run are
 * charged and counted where paddock reads its stats, and killing the cgroup's tasks ends the run
 * whatever state runsc is in. The wall and CPU limits and the output limit are watched here;
 * a kill for them is the verdict (TO, OL), an OOM kill in the cgroup is ML. */
#define _GNU_SOURCE
#include "gvisor.h"
#include "tier.h"

#include <errno.h>
#include <time.h>
#include <glob.h>
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

bool pd_gvisor_available(char *msg, size_t len)
{
	if (access(PD_RUNSC, X_OK) == 0)
		return true;
	snprintf(msg, len, "%s is not installed (scripts/install-deps.sh installs runsc)", PD_RUNSC);
	return false;
}

/* A writable bind is written by runsc's gofer, which runs as the host's root: the sandbox's root
 * would own (write, chmod) the host root's files in it, where a container sandbox's root is an
 * unprivileged host uid that cannot (tests/isolation/filesystem.t). */
static bool has_rw_bind(const pd_sandbox_opts *o)
{
	for (size_t i = 0; i < o->nbinds; i++)
		if (o->binds[i].rw)
			return true;
	return false;
}

int pd_gv_refused(const pd_sandbox_opts *o, char *why, size_t len)
{
	/* I/O limits: the sentry's own reads would be charged too, and nothing here measured how */
	const char *what = o->net == PD_NET_HOST		 ? "the host's network"
			   : o->net == PD_NET_ALLOWLIST		 ? "an allowlist network (its relay)"
			   : o->top_layer			 ? "a session snapshot"
			   : pd_limits_have_io(&o->limits)	 ? "I/O limits"
			   : o->audit && o->audit->enabled ? "an audit"
			   : has_rw_bind(o)			 ? "a writable bind (its gofer writes as the host's root)"
							   : NULL;
	if (what)
		snprintf(why, len, "isolation gvisor does not offer %s", what);
	return what ? -1 : 0;
}

static const char *platform_of(const pd_sandbox_opts *o);

int pd_gv_global_args(const char **argv, const char *root, const pd_sandbox_opts *o, char *plat)
{
	int n = 0;
	argv[n++] = PD_RUNSC;
	argv[n++] = "--root";
	argv[n++] = root;
	argv[n++] = "--rootless=false";
	/* runsc's "none" network is a sandbox with only its loopback interface: loopback and none
	 * both get that (gVisor has no lo-down mode; docs/isolation.md) */
	argv[n++] = "--network=none";
	snprintf(plat, 80, "--platform=%s", platform_of(o));
	argv[n++] = plat;
	argv[n++] = "--overlay2=root:memory";
	return n;
}

static const char *platform_of(const pd_sandbox_opts *o)
{
	if (o->gvisor_platform && *o->gvisor_platform)
		return o->gvisor_platform;
	const char *env = getenv("PADDOCK_GVISOR_PLATFORM");
	return env && *env ? env : "ptrace";
}

/* The cgroup's path relative to its hierarchy's root, as runsc's cgroupsPath wants it. */
int pd_gv_cgroup_rel(const pd_cgroups *cg, const char *name, char *out, size_t len, pd_err *e)
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

int pd_gv_cgroup_sweep(pd_ctx *c, const char *name)
{
	char rel[PD_PATH], pat[PD_PATH + 32];
	if (c->cg.version != 1 || pd_gv_cgroup_rel(&c->cg, name, rel, sizeof rel, NULL) < 0)
		return 0;
	glob_t gl;
	snprintf(pat, sizeof pat, "/sys/fs/cgroup/*%s", rel);
	if (glob(pat, GLOB_NOSORT | GLOB_ONLYDIR, NULL, &gl) != 0)
		return 0;
	/* runsc's sandbox and gofer may still be exiting (a killed sandbox's tasks leave its
	 * cgroups a moment after runsc returns): EBUSY is waited out, up to about 2 s, as
	 * paddock's own cgroups are (cgroup.c) */
	int rc = 0;
	for (int tries = 0; tries < 100; tries++) {
		rc = 0;
		bool busy = false;
		for (size_t i = 0; i < gl.gl_pathc; i++)
			if (rmdir(gl.gl_pathv[i]) < 0 && errno != ENOENT) {
				busy = busy || errno == EBUSY;
				rc = -1;
			}
		if (!busy)
			break;
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	globfree(&gl);
	return rc;
}

/* A paddock killed with SIGKILL leaves its gvisor sandboxes' cgroups in every v1 hierarchy:
 * paddock's own are swept by pd_cgroups_sweep, runsc's others (cpuset, devices, freezer,
 * systemd) here, each named sb-OWNER-gN as pd_gv_cgroup_rel places them. */
static void sweep_cgroups(pd_ctx *c, bool (*is_dead)(const char *owner, void *arg), void *arg)
{
	char rel[PD_PATH], pat[PD_PATH + 32];
	snprintf(pat, sizeof pat, "%s/gvisor", c->state_dir);
	pd_gv_state_sweep(pat, is_dead, arg);
	if (c->cg.version != 1 || pd_gv_cgroup_rel(&c->cg, "sb-*-g*", rel, sizeof rel, NULL) < 0)
		return;
	glob_t gl;
	snprintf(pat, sizeof pat, "/sys/fs/cgroup/*%s", rel);
	if (glob(pat, GLOB_NOSORT | GLOB_ONLYDIR, NULL, &gl) != 0)
		return;
	for (size_t i = 0; i < gl.gl_pathc; i++) {
		const char *name = strrchr(gl.gl_pathv[i], '/') + 1;
		char owner[9];
		if (strlen(name) < 12 || name[11] != '-')
			continue;
		memcpy(owner, name + 3, 8);
		owner[8] = 0;
		if (is_dead(owner, arg))
			pd_gv_cgroup_sweep(c, name); /* all hierarchies of the name; ENOENT once done */
	}
	globfree(&gl);
}

void pd_gvisor_sweep(pd_ctx *c, bool (*is_dead)(const char *owner, void *arg), void *arg)
{
	sweep_cgroups(c, is_dead, arg); /* first: the dead owner's runsc processes go with them */
	char gvdir[PD_PATH + 16];
	snprintf(gvdir, sizeof gvdir, "%s/gvisor", c->state_dir);
	pd_gv_state_sweep(gvdir, is_dead, arg);
}

void pd_ctx_gvisor_sweep_once(pd_ctx *c)
{
	pthread_mutex_lock(&c->lock);
	bool first = !c->gv_swept;
	c->gv_swept = true;
	pthread_mutex_unlock(&c->lock);
	if (first)
		pd_gvisor_sweep(c, pd_owner_dead, c);
}

typedef struct kill_arg {
	pd_ctx *c;
	pd_cg *g;
} kill_arg;

/* a one-shot run's limit: every task of its cgroup, runsc's own included */
static void kill_cgroup(void *arg)
{
	kill_arg *k = arg;
	k->c->cg.ops->kill_all(k->g);
}

int pd_gvisor_run(pd_ctx *c, const pd_sandbox_opts *o, const pd_exec_opts *x, pd_result *r, pd_err *e)
{
	uint64_t t0 = pd_now_us();
	memset(r, 0, sizeof *r);
	r->status = PD_XX;
	snprintf(r->residue, sizeof r->residue, "not-created");
	pd_image_note(r, o, c->default_image_id);
	char why[200];
	if (!pd_gvisor_available(why, sizeof why)) {
		snprintf(r->error, sizeof r->error, "%s", why);
		return pd_fail(e, ENOENT, "%s", why);
	}
	if (pd_gv_refused(o, why, sizeof why) < 0) {
		snprintf(r->error, sizeof r->error, "%s", why);
		return pd_fail(e, ENOTSUP, "%s", why);
	}
	pd_ctx_gvisor_sweep_once(c);
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
	if (pd_gv_cgroup_rel(&c->cg, name, cgpath, sizeof cgpath, e) < 0 || pd_mkdir_p(root, 0700) < 0) {
		if (!e || !e->code)
			pd_fail(e, errno, "mkdir %s", root);
		snprintf(r->error, sizeof r->error, "%s", e ? PD_ERR_STR(e) : "gvisor setup");
		return -1;
	}
	pd_cg *g = NULL;
	/* runsc makes cgroups of its own: pd_ctx_free lists them. Atomic: workers and the pools'
	 * builders create gvisor sandboxes at once (make tsan, judge_gvisor.t) */
	__atomic_store_n(&c->cg_other, true, __ATOMIC_RELAXED);
	if (c->cg.ops->create(&c->cg, name, &lim, &g, e) < 0) {
		snprintf(r->error, sizeof r->error, "%s", e ? PD_ERR_STR(e) : "cgroup");
		return -1;
	}
	pd_gv_bundle b;
	if (pd_gv_bundle_make(&b, gvdir, o, x, &lim, cgpath, c->default_image, NULL, e) < 0) {
		c->cg.ops->destroy(g, NULL);
		snprintf(r->error, sizeof r->error, "%s", e ? PD_ERR_STR(e) : "gvisor bundle");
		return -1;
	}

	char plat[80];
	const char *argv[24];
	int n = pd_gv_global_args(argv, root, o, plat);
	argv[n++] = "run";
	argv[n++] = "--bundle";
	argv[n++] = b.dir;
	argv[n++] = id;
	argv[n] = NULL;
	pd_gv_outcome out = {0};
	kill_arg ka = {c, g};
	pd_gv_proc p = {.argv = argv, .cg = g, .wall_ms = wall_ms, .cpu_ms = cpu_ms, .kill_bytes = kill_bytes,
			.keep = keep, .kill = kill_cgroup, .kill_arg = &ka, .result = &out};
	uint64_t t1 = pd_now_us();
	r->setup_us = t1 - t0;
	if (pd_gv_supervise(c, &p, x, r, e) < 0) {
		pd_gv_bundle_remove(&b);
		c->cg.ops->destroy(g, NULL);
		return pd_fail(e, errno, "%s", r->error);
	}
	uint64_t t2 = pd_now_us();
	bool killed = out.killed != PD_GV_KILL_NONE;
	int code = out.code;
	bool runsc_failed = out.runsc_failed;
	/* a killed runsc may leave its container's state behind: delete it */
	if (killed || code < 0 || runsc_failed)
		pd_gv_runsc_quiet(root, (const char *const[]){"delete", "-force", id, NULL});
	pd_gv_bundle_remove(&b);
	pd_err de = {0};
	bool cg_left = c->cg.ops->destroy(g, &de) < 0;
	cg_left = pd_gv_cgroup_sweep(c, name) < 0 || cg_left;
	snprintf(r->residue, sizeof r->residue, "%s", cg_left ? "cgroup" : b.rootfs_mounted ? "rootfs" : "clean");
	r->teardown_us = pd_now_us() - t2;
	return 0;
}
