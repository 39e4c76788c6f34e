/* The OCI bundle of a gvisor run: the same template a container sandbox gets, as config.json.
 *
 * The root is the image read-only: runsc's --overlay2=root:memory keeps the program's writes in
 * the sandbox's memory, so nothing reaches the image and nothing is left to clean. /tmp, /work
 * and /dev/shm are tmpfs of the disk size, as in a container sandbox. */
#define _GNU_SOURCE
#include "gvisor.h"
#include "../internal/ucounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *strv(char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; a && v && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *rlimit(const char *type, uint64_t v)
{
	return json_pack("{s:s,s:I,s:I}", "type", type, "hard", (json_int_t)v, "soft", (json_int_t)v);
}

static void add_mount(json_t *mounts, const char *dst, const char *type, const char *src, const char *opts)
{
	json_t *m = json_pack("{s:s,s:s,s:s}", "destination", dst, "type", type, "source", src);
	if (m && opts) {
		json_t *o = json_array();
		char buf[256];
		snprintf(buf, sizeof buf, "%s", opts);
		for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
			json_array_append_new(o, json_string(t));
		json_object_set_new(m, "options", o);
	}
	json_array_append_new(mounts, m);
}

/* The mount points no entry of the spec's mounts names: the layer's own root, and /sys, which
 * runsc mounts unasked */
static const char *const mount_points[] = {"/", "/sys"};

/* Removes name (under parent) and what is under it: the mount points' layer (directories and
 * empty files paddock made), a dead owner's scratch directory once unmounted. Never follows a
 * symbolic link; a mount in it leaves it there. */
static void rmdir_tree(int parent, const char *name, int depth)
{
	int fd = depth < 64 ? openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (de->d_type == DT_DIR)
				rmdir_tree(dirfd(d), de->d_name, depth + 1);
			else
				unlinkat(dirfd(d), de->d_name, 0);
		}
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	unlinkat(parent, name, AT_REMOVEDIR);
}

/* path (absolute inside the sandbox) made under pts: a directory, or with file an empty file */
static int make_point(const char *pts, const char *path, bool file, pd_err *e)
{
	if (path[0] != '/' || strstr(path, "/.."))
		return 0; /* runsc refuses such a destination itself */
	char d[PD_PATH + 16];
	if ((size_t)snprintf(d, sizeof d, "%s%s", pts, path) >= sizeof d)
		return pd_fail(e, ENAMETOOLONG, "mount point %s", path);
	if (!file)
		return pd_mkdir_p(d, 0755) < 0 ? pd_fail(e, errno, "mkdir %s", d) : 0;
	char *slash = strrchr(d, '/');
	*slash = 0;
	int rc = pd_mkdir_p(d, 0755);
	*slash = '/';
	int fd = rc < 0 ? -1 : open(d, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return pd_fail(e, errno, "mount point %s", d);
	close(fd);
	return 0;
}

/* The root: the image (a directory, with the default image's host /usr binds added to mounts, or
 * layers) under a top layer of paddock's own holding every mount point of mounts and the
 * program's cwd, stacked read-only with overlayfs on the host.
 *
 * Why the top layer: runsc makes a missing mount point in the root it is given, as the host's
 * root, before its in-memory overlay (--overlay2=root:memory) is there. Given the image itself,
 * a gvisor run with --bind SRC:/data left /data in the shared default image for every later
 * sandbox of either tier (found by tests/unit/reset, whose "mkdir /data" then failed). Given a
 * read-only overlay without them, runsc cannot start at all (exit 128, "cannot read client sync
 * file") where the program's cwd is missing (an image built FROM scratch lacks /tmp and
 * /work). Empty directories merge with the image's own of the same name. */
static int make_root(pd_gv_bundle *b, const pd_sandbox_opts *o, const char *cwd, const char *default_image,
		     json_t *mounts, pd_err *e)
{
	const char *lowers[PD_MAX_LAYERS + 2];
	size_t n = 0;
	if (o->layers && o->layers[0]) {
		while (o->layers[n] && n < PD_MAX_LAYERS)
			lowers[n] = o->layers[n], n++;
	} else {
		const char *dir = o->image ? o->image : default_image;
		pd_layer layers[PD_MAX_LAYERS];
		int nl = 0;
		if (pd_image_layers(dir, !o->image, layers, &nl, e) < 0)
			return -1;
		lowers[n++] = dir;
		for (int i = 1; i < nl; i++)
			add_mount(mounts, layers[i].dst, "bind", layers[i].src, "rbind,ro");
	}
	char pts[PD_PATH + 16];
	snprintf(pts, sizeof pts, "%s/points", b->dir);
	for (size_t i = 0; i < sizeof mount_points / sizeof *mount_points; i++)
		if (make_point(pts, mount_points[i], false, e) < 0)
			return -1;
	for (size_t i = 0; i < json_array_size(mounts); i++) {
		json_t *m = json_array_get(mounts, i);
		const char *dst = json_string_value(json_object_get(m, "destination"));
		const char *src = json_string_value(json_object_get(m, "source"));
		struct stat st;
		bool file = src && !strcmp(json_string_value(json_object_get(m, "type")) ?: "", "bind") &&
			    stat(src, &st) == 0 && !S_ISDIR(st.st_mode);
		if (dst && make_point(pts, dst, file, e) < 0)
			return -1;
	}
	if (cwd && cwd[1] && make_point(pts, cwd, false, e) < 0)
		return -1;
	snprintf(b->rootfs, sizeof b->rootfs, "%s/rootfs", b->dir);
	if (mkdir(b->rootfs, 0755) < 0)
		return pd_fail(e, errno, "mkdir %s", b->rootfs);
	size_t len = strlen(pts) + 16;
	for (size_t i = 0; i < n; i++)
		len += strlen(lowers[i]) + 1;
	char *data = malloc(len);
	if (!data)
		return pd_fail(e, ENOMEM, "gvisor root");
	snprintf(data, len, "lowerdir=%s", pts);
	for (size_t i = 0; i < n; i++) {
		strcat(data, ":");
		strcat(data, lowers[i]);
	}
	int rc = mount("overlay", b->rootfs, "overlay", MS_RDONLY, data);
	int err = errno;
	free(data);
	if (rc < 0)
		return pd_fail(e, err, "mount the image at %s", b->rootfs);
	b->rootfs_mounted = true;
	return 0;
}

json_t *pd_gv_process_json(const pd_exec_opts *x, const pd_limits *lim, uint32_t uid, uint32_t gid)
{
	json_t *rl = json_array();
	json_array_append_new(rl, rlimit("RLIMIT_NOFILE", lim->nofile ? lim->nofile : 256));
	/* as a container sandbox's program has them (lib/child.c, lib/ucounts.c): no core dumps, and
	 * the same signal, message-queue and locked-memory budgets, so that a program cannot tell the
	 * tiers apart by its rlimits (tests/isolation/limits.t, hostobjects.t) */
	json_array_append_new(rl, rlimit("RLIMIT_CORE", 0));
	json_array_append_new(rl, rlimit("RLIMIT_SIGPENDING", PD_RL_SIGPENDING));
	json_array_append_new(rl, rlimit("RLIMIT_MSGQUEUE", PD_RL_MSGQUEUE));
	json_array_append_new(rl, rlimit("RLIMIT_MEMLOCK", PD_RL_MEMLOCK));
	if (lim->stack_bytes)
		json_array_append_new(rl, rlimit("RLIMIT_STACK", lim->stack_bytes));
	if (lim->fsize_bytes)
		json_array_append_new(rl, rlimit("RLIMIT_FSIZE", lim->fsize_bytes));
	bool own = x->uid || x->gid; /* else the sandbox's user (uid, gid) */
	/* oomScoreAdj 1000: the host's OOM killer takes the sandbox first, as a container program
	 * (lib/child.c); runsc gives it to its sandbox process and shows it inside */
	return json_pack("{s:{s:i,s:i},s:o,s:o,s:s,s:b,s:o,s:{},s:i}", "user", "uid", (int)(own ? x->uid : uid), "gid",
			 (int)(own ? x->gid : gid),
			 "args", strv(x->argv), "env", strv(x->envp ? x->envp : pd_default_env()), "cwd",
			 x->cwd ? x->cwd : "/", "noNewPrivileges", 1, "rlimits", rl, "capabilities", "oomScoreAdj", 1000);
}

int pd_gv_bundle_make(pd_gv_bundle *b, const char *parent, const pd_sandbox_opts *o, const pd_exec_opts *x,
		      const pd_limits *lim, const char *cgroup_path, const char *default_image, const char *scratch, pd_err *e)
{
	memset(b, 0, sizeof *b);
	/* named by the sandbox (sb-OWNER-gN, the cgroup's last part): a dead owner's are swept */
	const char *sb = strrchr(cgroup_path, '/');
	sb = sb ? sb + 1 : cgroup_path;
	if (snprintf(b->dir, sizeof b->dir, "%s/bundle-%s", parent, sb) >= (int)sizeof b->dir)
		return pd_fail(e, ENAMETOOLONG, "gvisor bundle under %s", parent);
	if (pd_mkdir_p(parent, 0700) < 0 || mkdir(b->dir, 0700) < 0)
		return pd_fail(e, errno, "gvisor bundle %s", b->dir);
	json_t *mounts = json_array();
	add_mount(mounts, "/proc", "proc", "proc", NULL);
	add_mount(mounts, "/dev", "tmpfs", "tmpfs", "nosuid,mode=755");
	char size[64];
	snprintf(size, sizeof size, "nosuid,nodev,mode=1777,size=%llu", (unsigned long long)lim->disk_bytes);
	/* /work belongs to the sandbox's user (pd_sandbox_opts.uid), as in a container sandbox */
	char wsize[128];
	if (o->uid || o->gid)
		snprintf(wsize, sizeof wsize, "nosuid,nodev,mode=755,uid=%u,gid=%u,size=%llu", o->uid, o->gid,
			 (unsigned long long)lim->disk_bytes);
	else
		snprintf(wsize, sizeof wsize, "%s", size);
	if (scratch) {
		/* a kept sandbox's: the host's own tmpfs of the disk size (sandbox.c), which the host
		 * reaches for the file operations of sessions and pools */
		static const char *const dirs[][2] = {{"/tmp", "tmp"}, {"/work", "work"}, {"/dev/shm", "shm"}};
		for (int i = 0; i < 3; i++) {
			char src[PD_PATH + 8];
			snprintf(src, sizeof src, "%s/%s", scratch, dirs[i][1]);
			add_mount(mounts, dirs[i][0], "bind", src, "rbind,rw");
		}
	} else {
		add_mount(mounts, "/tmp", "tmpfs", "tmpfs", size);
		add_mount(mounts, "/work", "tmpfs", "tmpfs", wsize);
		add_mount(mounts, "/dev/shm", "tmpfs", "tmpfs", size);
	}
	for (size_t i = 0; i < o->nbinds; i++)
		add_mount(mounts, o->binds[i].dst, "bind", o->binds[i].src, o->binds[i].rw ? "rbind,rw" : "rbind,ro");
	if (make_root(b, o, x ? x->cwd : NULL, default_image, mounts, e) < 0) {
		json_decref(mounts);
		pd_gv_bundle_remove(b);
		return -1;
	}
	const char *root = b->rootfs;

	json_t *proc = pd_gv_process_json(x, lim, o->uid, o->gid);
	json_t *res = json_object();
	/* the limits are on the cgroup already (paddock's backend made it): runsc joins it */
	json_t *ns = json_pack("[{s:s},{s:s},{s:s},{s:s},{s:s}]", "type", "pid", "type", "network", "type", "ipc",
			       "type", "uts", "type", "mount");
	json_t *cfg = json_pack("{s:s,s:o,s:{s:s,s:b},s:s,s:o,s:{s:o,s:s,s:o}}", "ociVersion", "1.0.0", "process",
				proc, "root", "path", root, "readonly", 0, "hostname",
				o->hostname ? o->hostname : "sandbox", "mounts", mounts, "linux", "namespaces", ns,
				"cgroupsPath", cgroup_path, "resources", res);
	char path[PD_PATH + 16];
	snprintf(path, sizeof path, "%s/config.json", b->dir);
	if (!cfg || json_dump_file(cfg, path, JSON_COMPACT) < 0) {
		json_decref(cfg);
		pd_gv_bundle_remove(b);
		return pd_fail(e, EIO, "write %s", path);
	}
	json_decref(cfg);
	return 0;
}

void pd_gv_bundle_remove(pd_gv_bundle *b)
{
	if (!b->dir[0])
		return;
	if (b->rootfs_mounted && umount2(b->rootfs, MNT_DETACH) == 0)
		b->rootfs_mounted = false;
	char path[PD_PATH + 16];
	snprintf(path, sizeof path, "%s/config.json", b->dir);
	unlink(path);
	/* a kept sandbox's last exec's process spec (sandbox.c) */
	snprintf(path, sizeof path, "%s/process.json", b->dir);
	unlink(path);
	if (b->rootfs[0] && !b->rootfs_mounted)
		rmdir(b->rootfs);
	snprintf(path, sizeof path, "%s/points", b->dir);
	rmdir_tree(AT_FDCWD, path, 0);
	rmdir(b->dir);
	b->dir[0] = 0;
}

/* Whose sandbox a name ending in sb-OWNER-gN is: OWNER (8 hex digits) into owner, or false */
static bool owner_of(const char *name, const char *prefix, char owner[9])
{
	size_t l = strlen(prefix);
	if (strncmp(name, prefix, l) || strncmp(name + l, "sb-", 3) || strlen(name + l) < 13 || name[l + 11] != '-' ||
	    name[l + 12] != 'g')
		return false;
	memcpy(owner, name + l + 3, 8);
	owner[8] = 0;
	return true;
}

void pd_gv_state_sweep(const char *gvdir, bool (*is_dead)(const char *owner, void *arg), void *arg)
{
	DIR *d = opendir(gvdir);
	if (!d)
		return;
	struct dirent *de;
	char owner[9], path[PD_PATH + 320];
	while ((de = readdir(d))) {
		if (owner_of(de->d_name, "bundle-", owner) && is_dead(owner, arg)) {
			pd_gv_bundle b = {0};
			snprintf(b.dir, sizeof b.dir, "%s/%s", gvdir, de->d_name);
			snprintf(b.rootfs, sizeof b.rootfs, "%s/rootfs", b.dir);
			b.rootfs_mounted = true; /* if it was: detached; if not, EINVAL and on */
			pd_gv_bundle_remove(&b);
		} else if (owner_of(de->d_name, "scratch-", owner) && is_dead(owner, arg)) {
			snprintf(path, sizeof path, "%s/%s", gvdir, de->d_name);
			umount2(path, MNT_DETACH);
			rmdir_tree(AT_FDCWD, path, 0);
		}
	}
	closedir(d);
	/* runsc's own state of the dead owner's sandboxes (container ids paddock-OWNER-N): its
	 * processes went with their cgroups (pd_gvisor_sweep) */
	snprintf(path, sizeof path, "%s/runsc", gvdir);
	int rfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *r = rfd >= 0 ? fdopendir(rfd) : NULL;
	if (!r) {
		if (rfd >= 0)
			close(rfd);
		return;
	}
	while ((de = readdir(r))) {
		if (strncmp(de->d_name, "paddock-", 8) || strlen(de->d_name) < 17 || de->d_name[16] != '-')
			continue;
		memcpy(owner, de->d_name + 8, 8);
		owner[8] = 0;
		if (de->d_type == DT_REG && is_dead(owner, arg))
			unlinkat(dirfd(r), de->d_name, 0);
	}
	closedir(r);
}
