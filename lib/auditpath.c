/* auditpath.c: what object a path names, and what the audit makes of an access to it.
 *
 * The red team's lesson: a rule on the spelling of a path is no rule. "/proc/self/root/secret",
 * "/proc/self/cwd/flag" after a chdir, "/dev/fd/../root/secret" and any symlink the program made
 * all name /secret without starting with it. So a path is resolved here as the kernel resolves it
 * for the calling process: from its root (the sandbox's, reached from the host as
 * /proc/PID/root) or its cwd or dirfd, component by component, each symlink followed (a final
 * one only where the call follows it), ".." taken on the resolved path. /proc needs care: the
 * sandbox's procfs answers "self" for the reader, and the host reader is not in the sandbox's pid
 * namespace, so "self" and "thread-self" become the caller's own numbers first; the per-process
 * links (root, cwd, exe, fd/N, map_files) are "magic": readlink gives where they lead (a path in
 * the sandbox, the process's root being the sandbox's own since chroot is denied) or an object
 * with no path ("pipe:[123]"), which no path rule concerns.
 *
 * What the kernel then opens can still differ: another thread may swap a link between our walk
 * and the kernel's (the caveat in audit.c). The writable layer's diff after the run (tamper.c)
 * is exact for changes; for reads, material that must not be read must not be in the sandbox. */
#define _GNU_SOURCE
#include "audit.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t normalize(const char *in, char *out, size_t size);

static const char *const kind_names[PD_AK_N] = {
	[PD_AK_READ_OUTSIDE] = "read_outside", [PD_AK_JUDGE] = "judge_material",
	[PD_AK_TRAP] = "trap_read",            [PD_AK_TAMPER] = "tamper",
	[PD_AK_ENV_PROBE] = "env_probe",       [PD_AK_EGRESS] = "egress",
	[PD_AK_HARNESS_PROBE] = "harness_probe",
};

const char *pd_audit_kind_name(pd_audit_kind k)
{
	return (unsigned)k < PD_AK_N ? kind_names[k] : "unknown";
}

int pd_audit_kind_parse(const char *name)
{
	for (int i = 0; i < PD_AK_N; i++)
		if (name && !strcmp(name, kind_names[i]))
			return i;
	return -1;
}

/* readable without an event: the image's system files and the process's view of the machine
 * (/proc/PID of the caller itself is matched apart: "self" is resolved to a number) */
static const char *const builtin_allow[] = {
	"/usr", "/etc", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/dev/null", "/dev/zero",
	"/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/pts", "/dev/ptmx",
	"/proc/self", "/proc/thread-self", "/proc/filesystems", "/proc/meminfo", "/proc/cpuinfo",
	"/proc/stat", "/proc/loadavg", "/proc/uptime", "/sys/devices/system/cpu",
	"/sys/devices/system/node", "/sys/fs/cgroup", NULL,
};

/* the attempt's own: the scratch directories, the pseudo-devices, and /proc (writes there reach
 * only the caller, or fail) */
static const char *const builtin_scratch[] = {
	"/tmp", "/work", "/dev/shm", "/proc", "/dev/null", "/dev/zero", "/dev/full", "/dev/tty",
	"/dev/pts", "/dev/ptmx", NULL,
};

static const char *const default_protect[] = {"/", NULL};

/* "/a//b/./c/../d" -> "/a/b/d", as the kernel walks it (".." at the root stays there). Lexical:
 * a symlink in the path is not followed. Returns 0 when the result does not fit. */
size_t pd_audit_normalize(const char *in, char *out, size_t size)
{
	return normalize(in, out, size);
}

static size_t normalize(const char *in, char *out, size_t size)
{
	size_t n = 0;
	out[n++] = '/';
	for (const char *p = in; *p;) {
		while (*p == '/')
			p++;
		const char *q = p;
		while (*q && *q != '/')
			q++;
		size_t len = (size_t)(q - p);
		if (!len)
			break;
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 1 && out[n - 1] != '/')
				n--;
			if (n > 1)
				n--;
		} else if (!(len == 1 && p[0] == '.')) {
			if (n + (n > 1) + len + 1 > size) /* separator, component, NUL */
				return 0;
			if (n > 1)
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p = q;
	}
	out[n] = 0;
	return n;
}

/* The length of the longest prefix in list that covers the normalized path norm, plus one (so
 * that "/" counts), or 0 when none does. */
static size_t longest_under(const char *norm, const char *const *list)
{
	size_t best = 0;
	for (int i = 0; list && list[i]; i++) {
		const char *pre = list[i];
		size_t n = strlen(pre);
		if (!n || pre[0] != '/') /* no path at all: covers nothing */
			continue;
		while (n > 1 && pre[n - 1] == '/')
			n--;
		if ((n == 1 || (!strncmp(norm, pre, n) && (norm[n] == 0 || norm[n] == '/'))) && n + 1 > best)
			best = n + 1;
	}
	return best;
}

bool pd_path_under(const char *path, const char *const *prefixes)
{
	char norm[PD_AUDIT_MAX];
	if (!path || path[0] != '/' || !normalize(path, norm, sizeof norm))
		return false;
	return longest_under(norm, prefixes) > 0;
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h | 1; /* 0 marks a free slot */
}

/* What c holds of path (PD_NAME_*, with *link where a link leads), or 0: unknown, or c is off. */
static int name_known(pd_audit_names *c, const char *path, const char **link)
{
	if (!c || atomic_load_explicit(&c->off, memory_order_acquire))
		return 0;
	uint64_t h = path_hash(path);
	for (size_t i = 0, k = h % PD_AUDIT_NAMES; i < 8; i++, k = (k + 1) % PD_AUDIT_NAMES) {
		if (!c->hash[k])
			return 0;
		if (c->hash[k] == h && !strcmp(c->path[k], path)) {
			*link = c->link[k];
			return c->what[k];
		}
	}
	return 0;
}

/* Not kept: /proc's entries; what is under the scratch directories (each user's own files, gone
 * at the reset: kept, they would only fill the table before the image's names do); what is under
 * a bind mount (a host directory, which the host or another sandbox may change unseen). */
static bool name_kept(const pd_audit_names *c, const char *path)
{
	static const char *const under[] = {"/proc/", "/tmp/", "/work/", "/dev/shm/"};
	for (size_t i = 0; i < sizeof under / sizeof under[0]; i++)
		if (!strncmp(path, under[i], strlen(under[i])))
			return false;
	return !c->binds || !pd_path_under(path, (const char *const *)c->binds);
}

static void name_note(pd_audit_names *c, const char *path, int what, const char *link)
{
	if (!c || atomic_load_explicit(&c->off, memory_order_acquire) || !name_kept(c, path))
		return;
	uint64_t h = path_hash(path);
	for (size_t i = 0, k = h % PD_AUDIT_NAMES; i < 8; i++, k = (k + 1) % PD_AUDIT_NAMES)
		if (!c->hash[k]) {
			atomic_store_explicit(&c->any, true, memory_order_relaxed);
			c->path[k] = strdup(path);
			c->link[k] = link ? strdup(link) : NULL;
			if (c->path[k] && (!link || c->link[k])) {
				c->hash[k] = h;
				c->what[k] = (uint8_t)what;
			} else {
				free(c->path[k]);
				free(c->link[k]);
				c->path[k] = c->link[k] = NULL;
			}
			return;
		}
}

void pd_audit_names_clear(pd_audit_names *c)
{
	/* every reset after a run not audited in full clears: walking 1024 empty entries each time
	 * was a reset's cost for an audit the run did not use (issue 42) */
	bool any = c && atomic_exchange_explicit(&c->any, false, memory_order_acq_rel);
	for (size_t k = 0; any && k < PD_AUDIT_NAMES; k++) {
		free(c->path[k]);
		free(c->link[k]);
		c->path[k] = c->link[k] = NULL;
		c->hash[k] = 0;
	}
	if (c) {
		/* a reset may mount the root anew: its mount is found again at the first lookup */
		atomic_store_explicit(&c->root_mnt, 0, memory_order_release);
		atomic_store_explicit(&c->off, false, memory_order_release);
	}
}

pd_audit_names *pd_audit_names_new(const pd_bind *binds, size_t nbinds)
{
	pd_audit_names *c = calloc(1, sizeof *c);
	if (!c || !nbinds)
		return c;
	c->binds = calloc(nbinds + 1, sizeof *c->binds);
	for (size_t i = 0; c->binds && i < nbinds; i++)
		if (binds[i].dst && !(c->binds[i] = strdup(binds[i].dst))) {
			pd_audit_names_free(c);
			return NULL;
		}
	if (!c->binds) {
		free(c);
		return NULL;
	}
	return c;
}

void pd_audit_names_free(pd_audit_names *c)
{
	if (!c)
		return;
	pd_audit_names_clear(c);
	for (size_t i = 0; c->binds && c->binds[i]; i++)
		free(c->binds[i]);
	free(c->binds);
	free(c);
}

void pd_audit_names_reset(pd_audit_names *c)
{
	if (c && atomic_load_explicit(&c->off, memory_order_acquire))
		pd_audit_names_clear(c);
}

void pd_audit_names_off(pd_audit_names *c)
{
	if (c)
		atomic_store_explicit(&c->off, true, memory_order_release);
}

/* Whether a name (st, or else the path rel from the root, "" for the root itself) is on the
 * sandbox root's own mount, the only one whose names are kept. False when it cannot tell. */
static bool on_root_mount(const pd_audit_view *v, const char *rel, const struct statx *st)
{
	pd_audit_names *c = v->names;
	if (!c || atomic_load_explicit(&c->off, memory_order_acquire))
		return false;
	uint64_t root = atomic_load_explicit(&c->root_mnt, memory_order_acquire);
	struct statx rs;
	if (!root) {
		if (statx(v->rootfd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &rs) < 0 ||
		    !(rs.stx_mask & STATX_MNT_ID) || !rs.stx_mnt_id)
			return false;
		root = rs.stx_mnt_id;
		atomic_store_explicit(&c->root_mnt, root, memory_order_release);
	}
	if (!st) {
		if (statx(v->rootfd, rel, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | (*rel ? 0 : AT_EMPTY_PATH),
			  STATX_MNT_ID, &rs) < 0)
			return false;
		st = &rs;
	}
	return (st->stx_mask & STATX_MNT_ID) && st->stx_mnt_id == root;
}

/* Is the resolved path cur (length cl) a per-process magic link of /proc: /proc/N/{root,cwd,exe},
 * /proc/N/fd/M, /proc/N/map_files/X, also under /proc/N/task/T? */
static bool is_magic(const char *cur)
{
	if (strncmp(cur, "/proc/", 6))
		return false;
	const char *p = cur + 6;
	for (int level = 0; level < 2; level++) {
		const char *q = p;
		while (*q >= '0' && *q <= '9')
			q++;
		if (q == p || *q != '/')
			return false;
		p = q + 1;
		if (!strcmp(p, "root") || !strcmp(p, "cwd") || !strcmp(p, "exe"))
			return true;
		if (!strncmp(p, "fd/", 3) || !strncmp(p, "map_files/", 10))
			return !strchr(strchr(p, '/') + 1, '/');
		if (level == 0 && !strncmp(p, "task/", 5))
			p += 5;
		else
			return false;
	}
	return false;
}

int pd_audit_resolve(const pd_audit_view *v, const char *base, const char *path, bool follow_last, char *out,
		     size_t size)
{
	return pd_audit_resolve_in(v, NULL, base, path, follow_last, out, size);
}

/* The start of a resolution: the root it cannot leave (top, rootlen: none is "" and 0) and where
 * it begins (cur, cl: the root for an absolute path, else the base, which must be inside the
 * root). -1: no such call (a relative root or base, a base outside the root). */
static int resolve_start(const char *root, const char *base, const char *path, char top[PD_AUDIT_MAX],
			 size_t *rootlen_out, char cur[PD_AUDIT_MAX], size_t *cl_out)
{
	size_t cl = 0, rootlen = 0;
	if (root) {
		if (root[0] != '/')
			return -1;
		size_t n = normalize(root, top, PD_AUDIT_MAX);
		if (!n)
			return -1;
		rootlen = n == 1 ? 0 : n;
		top[rootlen] = 0;
		if (!base)
			base = root;
	}
	if (path[0] != '/') {
		if (!base || base[0] != '/')
			return -1;
		size_t n = normalize(base, cur, PD_AUDIT_MAX);
		if (!n)
			return -1;
		cl = n == 1 ? 0 : n; /* cur holds no trailing "/": the root is "" */
		if (cl < rootlen || strncmp(cur, top, rootlen) || (cur[rootlen] && cur[rootlen] != '/'))
			return -1; /* a base outside the root: no such call */
	} else {
		memcpy(cur, top, rootlen + 1);
		cl = rootlen;
	}
	cur[cl] = 0;
	*rootlen_out = rootlen;
	*cl_out = cl;
	return 0;
}

/* What cur (a path in the sandbox's root, pl the length of its parent) is: a link's target into
 * tgt (tgtsize bytes) and its length; 0 when it is no link, is not there or cannot be read. What
 * is found is kept in the view's names where it cannot change unseen (audit.h). */
static ssize_t link_at(const pd_audit_view *v, char *cur, size_t pl, char *tgt, size_t tgtsize)
{
	const char *kept = NULL;
	int known = name_known(v->names, cur, &kept);
	if (known == PD_NAME_THERE || known == PD_NAME_NONE)
		return 0;
	if (known == PD_NAME_LINK) {
		size_t n = strlen(kept);
		memcpy(tgt, kept, n + 1);
		return (ssize_t)n;
	}
	struct statx st;
	if (statx(v->rootfd, cur + 1, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MNT_ID, &st) < 0) {
		/* a missing component: the rest is taken as spelled (kept only when nothing is there:
		 * a name we may not look at may be there for the caller), and only in a directory of
		 * the root's own mount */
		if (errno == ENOENT || errno == ENOTDIR) {
			cur[pl] = 0;
			bool keep = on_root_mount(v, pl ? cur + 1 : "", NULL);
			cur[pl] = '/';
			if (keep)
				name_note(v->names, cur, PD_NAME_NONE, NULL);
		}
		return 0;
	}
	/* a name on another mount (a bind of a host directory, however its destination was spelled,
	 * or a mount the image has there) may change unseen: never kept */
	bool keep = on_root_mount(v, NULL, &st);
	if (!S_ISLNK(st.stx_mode)) {
		if (keep)
			name_note(v->names, cur, PD_NAME_THERE, NULL);
		return 0;
	}
	ssize_t n = readlinkat(v->rootfd, cur + 1, tgt, tgtsize - 1);
	if (n <= 0)
		return 0;
	tgt[n] = 0;
	if (keep)
		name_note(v->names, cur, PD_NAME_LINK, tgt);
	return n;
}

int pd_audit_resolve_in(const pd_audit_view *v, const char *root, const char *base, const char *path,
			bool follow_last, char *out, size_t size)
{
	char cur[PD_AUDIT_MAX], rest[PD_AUDIT_MAX], tgt[PD_AUDIT_READ], top[PD_AUDIT_MAX] = "";
	/* rootlen: the length of the root the resolution cannot leave ("" for the sandbox's own; for
	 * openat2's RESOLVE_IN_ROOT, its dirfd: "/" and ".." stop there, as the kernel's do) */
	size_t cl = 0, rootlen = 0;
	if (resolve_start(root, base, path, top, &rootlen, cur, &cl) < 0)
		return -1;
	if (v && v->via)
		v->via[0] = 0;
	if (snprintf(rest, sizeof rest, "%s", path) >= (int)sizeof rest)
		return -1;
	int links = 0;
	size_t pos = 0;
	for (;;) {
		while (rest[pos] == '/')
			pos++;
		if (!rest[pos])
			break;
		size_t start = pos;
		while (rest[pos] && rest[pos] != '/')
			pos++;
		size_t len = pos - start;
		size_t after = pos;
		while (rest[after] == '/')
			after++;
		bool last = !rest[after];
		if (len == 1 && rest[start] == '.')
			continue;
		if (len == 2 && rest[start] == '.' && rest[start + 1] == '.') {
			while (cl > rootlen && cur[cl - 1] != '/')
				cl--;
			if (cl > rootlen)
				cl--;
			cur[cl] = 0;
			continue;
		}
		/* /proc/self and /proc/thread-self name the reader: the caller's numbers instead */
		const char *comp = rest + start;
		char sub[48];
		if (v && v->self[0] && cl == 5 && !strcmp(cur, "/proc")) {
			if (len == 4 && !strncmp(comp, "self", 4))
				snprintf(sub, sizeof sub, "%s", v->self), comp = sub, len = strlen(sub);
			else if (len == 11 && !strncmp(comp, "thread-self", 11))
				snprintf(sub, sizeof sub, "%s/task/%s", v->self, v->tid[0] ? v->tid : v->self),
					comp = sub, len = strlen(sub);
		}
		if (cl + 1 + len + 1 > sizeof cur)
			return -1;
		cur[cl] = '/';
		memcpy(cur + cl + 1, comp, len);
		size_t pl = cl; /* the parent, if a relative link must go back to it */
		cl += 1 + len;
		cur[cl] = 0;
		if (!v || v->rootfd < 0 || (last && !follow_last))
			continue;
		ssize_t n = link_at(v, cur, pl, tgt, sizeof tgt);
		if (n <= 0)
			continue;
		if (++links > 40)
			return -1; /* ELOOP for the kernel too */
		bool magic = is_magic(cur);
		if (magic && rootlen)
			return -1; /* a jump out of the root: the kernel refuses it, or we cannot tell */
		if (magic && v->via) /* the last component: the object is the link's (else a path below it) */
			snprintf(v->via, PD_AUDIT_VIA, "%s", rest[after] ? "" : cur + 1);
		if (magic) {
			/* a file unlinked since: the object is still the one that was there */
			size_t tl = (size_t)n;
			if (tl > 10 && !strcmp(tgt + tl - 10, " (deleted)"))
				tgt[tl - 10] = 0;
			if (tgt[0] != '/') {
				snprintf(out, size, "%s", tgt); /* a pipe, a socket, an anonymous inode */
				return 0;
			}
		}
		/* the link's target replaces it, the rest of the path follows */
		char tmp[PD_AUDIT_MAX];
		if (snprintf(tmp, sizeof tmp, "%s/%s", tgt, rest + after) >= (int)sizeof tmp)
			return -1;
		memcpy(rest, tmp, strlen(tmp) + 1);
		pos = 0;
		if (tgt[0] == '/')
			cl = rootlen;
		else
			cl = pl;
		cur[cl] = 0;
	}
	if (snprintf(out, size, "%s", cl ? cur : "/") >= (int)size)
		return -1;
	return 1;
}

/* /proc/N/... of a process: N, and the file below it (after task/T), or false */
static bool proc_file(const char *p, long *pid, const char **file)
{
	if (strncmp(p, "/proc/", 6))
		return false;
	char *end;
	*pid = strtol(p + 6, &end, 10);
	if (end == p + 6 || *end != '/')
		return false;
	p = end + 1;
	if (!strncmp(p, "task/", 5)) {
		strtol(p + 5, &end, 10);
		if (*end != '/')
			return false;
		p = end + 1;
	}
	*file = p;
	return true;
}

bool pd_audit_protected(const pd_audit_opts *o, const char *norm)
{
	size_t lp = longest_under(norm, o->protect ? o->protect : default_protect);
	size_t lw = longest_under(norm, o->writable), ls = longest_under(norm, builtin_scratch);
	return lp && lp >= lw && lp > ls;
}

int pd_audit_classify(const pd_audit_opts *o, const char *path, pd_audit_mode m, const char *self, bool *deny)
{
	*deny = false;
	char norm[PD_AUDIT_MAX];
	if (path[0] != '/' || !normalize(path, norm, sizeof norm))
		return -1; /* no path: a pipe or a socket */
	bool reads = m == PD_AM_READ || m == PD_AM_RW || m == PD_AM_EXEC;
	long pid;
	const char *file;
	if (proc_file(norm, &pid, &file)) {
		bool own = self && self[0] && pid == atol(self);
		/* another process's memory or maps; anyone's environment (a program has its own in
		 * memory: reading it back from /proc is harvesting) */
		if (!strcmp(file, "environ"))
			return PD_AK_ENV_PROBE;
		static const char *const mem[] = {"mem", "maps", "smaps", "smaps_rollup", "pagemap",
						  "numa_maps", "auxv", NULL};
		for (int i = 0; !own && mem[i]; i++)
			if (!strcmp(file, mem[i]) || !strncmp(file, "map_files", 9))
				return PD_AK_ENV_PROBE;
		if (own)
			return -1;
	}
	if (longest_under(norm, o->judge) || longest_under(norm, o->deny)) {
		*deny = true;
		return PD_AK_JUDGE;
	}
	/* reaching for a decoy: reading it, or linking to it (an output that is the decoy) */
	if ((reads || m == PD_AM_META) && longest_under(norm, o->traps))
		return PD_AK_TRAP;
	if (!reads || m == PD_AM_RW)
		if (pd_audit_protected(o, norm))
			return PD_AK_TAMPER;
	if (reads && !longest_under(norm, builtin_allow) && !longest_under(norm, o->allow) &&
	    !longest_under(norm, builtin_scratch) && !longest_under(norm, o->writable))
		return PD_AK_READ_OUTSIDE;
	return -1;
}

/* Whether an entry of list is the normalized path norm or lies under it. */
static bool covers(const char *norm, const char *const *list)
{
	size_t n = strlen(norm);
	for (int i = 0; list && list[i]; i++) {
		char e[PD_AUDIT_MAX];
		if (list[i][0] != '/' || !normalize(list[i], e, sizeof e))
			continue;
		if (n == 1 || (!strncmp(e, norm, n) && (e[n] == 0 || e[n] == '/')))
			return true;
	}
	return false;
}

int pd_audit_classify_move(const pd_audit_opts *o, const char *path, bool *deny)
{
	*deny = false;
	char norm[PD_AUDIT_MAX];
	if (path[0] != '/' || !normalize(path, norm, sizeof norm))
		return -1;
	if (covers(norm, o->judge) || covers(norm, o->deny)) {
		*deny = true;
		return PD_AK_JUDGE;
	}
	if (covers(norm, o->traps))
		return PD_AK_TRAP;
	/* the default "/" covers only a rename of "/" itself, which the kernel refuses */
	if (covers(norm, o->protect))
		return PD_AK_TAMPER;
	return -1;
}

const char *pd_audit_mode_name(pd_audit_mode m)
{
	static const char *const names[] = {"r", "w", "rw", "x", "create", "delete", "meta"};
	return (unsigned)m < sizeof names / sizeof names[0] ? names[m] : "?";
}

/* The lexical judgement that the audit made before it resolved paths, kept for callers that
 * have no process to resolve against (and its fuzzer): the path whole or not at all. */
void pd_audit_judge_path(const char *raw, size_t len, const char *base, ssize_t blen, const pd_audit_opts *o,
			 char *target, size_t size, bool *deny, bool *report)
{
	/* Judged whole or not at all: a path cut to a buffer, or joined with a cut cwd, is another
	 * path. "/" x 600 + "etc/passwd" read as 511 slashes was "/", and so not under a deny prefix,
	 * while the kernel opened /etc/passwd. The kernel takes a path up to its NUL within PATH_MAX
	 * bytes (PD_AUDIT_READ): without a NUL in what was read, the call fails there too. */
	const char *nul = memchr(raw, 0, len);
	size_t pl = nul ? (size_t)(nul - raw) : len;
	bool rel = !pl || raw[0] != '/';
	/* readlink fills its buffer when the directory's path is longer (or fails: a process can make
	 * its cwd deeper than a page): then where a relative path leads is unknown */
	bool base_ok = blen > 0 && blen < PD_AUDIT_READ && base[0] == '/';
	char full[PD_AUDIT_MAX];
	if (rel && base_ok)
		snprintf(full, sizeof full, "%.*s%s%.*s", (int)blen, base, base[blen - 1] == '/' ? "" : "/", (int)pl,
			 raw);
	else
		snprintf(full, sizeof full, "%.*s", (int)pl, raw);
	snprintf(target, size, "%s", full); /* for the record: it keeps the head */
	if (!nul || (rel && !base_ok)) {
		/* cannot tell what the kernel opens: refused where a deny list is set, and reported */
		bool any_deny = false;
		for (int i = 0; o->deny && o->deny[i]; i++)
			any_deny |= o->deny[i][0] == '/';
		*deny = any_deny;
		*report = true;
		return;
	}
	*deny = pd_path_under(full, o->deny);
	*report = *deny || !(pd_path_under(full, builtin_allow) || pd_path_under(full, o->allow));
}
