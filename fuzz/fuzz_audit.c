/* Fuzzes the audit's judgement of the file paths a sandboxed program passes to open and exec
 * (lib/audit.c): the bytes come from the program's memory, the most hostile input paddock reads.
 * pd_auditor_handle reads the path argument into a PD_AUDIT_READ-byte buffer, and for a relative
 * path readlink()s the process's cwd (or the dirfd) into another, then calls pd_audit_judge_path;
 * this harness does the same with the cwd and the path taken from the input:
 *   [0] bit0: readlink failed (the cwd is unknown to the host; a process can make its cwd deeper
 *       than readlink's buffer, or than a page);
 *   [1..] the cwd (an absolute path, up to its NUL), then the path argument's bytes, as they are in
 *       the program's memory (up to the end of the input, NUL or not).
 * The deny list is /secret and /etc/shadow, the allow list /work.
 *
 * The reference is what the kernel opens: the path up to its NUL (none within PATH_MAX bytes: the
 * call fails, ENAMETOOLONG), a relative one from the true cwd, ".." and "." resolved lexically (as
 * the audit says it does; symlinks are its documented limit), ".." at the root staying there.
 *
 * Properties beyond "no crash, no undefined behaviour":
 *  - deny: whenever the kernel would open a path under a deny prefix, the call is refused (a
 *    padded or deep path must not slip past the tripwire); when the host knows the whole path, it
 *    is refused exactly then;
 *  - report: whenever the kernel would open a path outside the image and the allow list, the
 *    access is recorded;
 *  - the recorded target is NUL-terminated in its buffer;
 *  - pd_path_under agrees with the reference for every path the host sees. */
#include "fuzz_common.h"

#include "audit.h"

#include <limits.h>

static const char *const deny_list[] = {"/secret", "/etc/shadow", NULL};
static const char *const allow_list[] = {"/work", NULL};
/* audit.c's builtin_allow, the image and the process's own view of itself (the specification) */
static const char *const image[] = {
	"/usr", "/etc", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/dev/null", "/dev/zero",
	"/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/pts", "/dev/ptmx",
	"/proc/self", "/proc/thread-self", "/proc/filesystems", "/proc/meminfo", "/proc/cpuinfo",
	"/proc/stat", "/proc/loadavg", "/proc/uptime", "/sys/devices/system/cpu",
	"/sys/devices/system/node", "/sys/fs/cgroup", NULL,
};

/* the components of an absolute path, resolved lexically, joined again ("/" for none) */
static char *ref_normalize(const char *p)
{
	size_t n = strlen(p);
	char *out = malloc(n + 2), *tmp = strdup(p);
	size_t o = 0;
	size_t *starts = malloc((n / 2 + 2) * sizeof *starts), depth = 0;
	char *save = NULL;
	for (char *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			if (depth)
				o = starts[--depth];
			continue;
		}
		starts[depth++] = o;
		out[o++] = '/';
		memcpy(out + o, c, strlen(c));
		o += strlen(c);
	}
	if (!o)
		out[o++] = '/';
	out[o] = 0;
	free(tmp);
	free(starts);
	return out;
}

/* a normalized path is under a prefix: the prefix's components begin it */
static int ref_under(const char *norm, const char *const *list)
{
	for (int i = 0; list[i]; i++) {
		char *pre = ref_normalize(list[i]);
		size_t pl = strlen(pre);
		int under = !strcmp(pre, "/") || (!strncmp(norm, pre, pl) && (norm[pl] == 0 || norm[pl] == '/'));
		free(pre);
		if (under)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	bool cwd_unknown = data[0] & 1;
	const char *cwd0 = (const char *)data + 1;
	const char *z = memchr(cwd0, 0, size - 1);
	if (!z)
		return 0;
	char *cwd = strndup(cwd0, (size_t)(z - cwd0));
	const char *raw = z + 1;
	size_t rawlen = size - 1 - (size_t)(z - cwd0) - 1;
	/* a cwd is absolute, and what readlink gives has no NUL */
	if (cwd[0] != '/') {
		free(cwd);
		return 0;
	}

	/* what pd_auditor_handle gives pd_audit_judge_path */
	size_t n = rawlen < PD_AUDIT_READ ? rawlen : PD_AUDIT_READ;
	if (!n) {
		free(cwd);
		return 0; /* peek read nothing: "(unreadable path)" */
	}
	char rbuf[PD_AUDIT_READ];
	memcpy(rbuf, raw, n);
	ssize_t blen = -1;
	if (rbuf[0] != '/' && !cwd_unknown)
		blen = (ssize_t)(strlen(cwd) < PD_AUDIT_READ ? strlen(cwd) : PD_AUDIT_READ); /* readlink cuts */
	pd_audit_opts o = {.enabled = true, .allow = allow_list, .deny = deny_list};
	char target[4096 * 3];
	memset(target, 0x5a, sizeof target);
	bool deny = false, report = false;
	/* (pd_auditor_handle's target is 512 bytes: the record keeps 255 of them) */
	pd_audit_judge_path(rbuf, n, cwd, blen, &o, target, 512, &deny, &report);
	FUZZ_CHECK(memchr(target, 0, 512), "target not NUL-terminated in its buffer");

	/* pd_path_under against the reference, on what the host saw */
	if (target[0] == '/') {
		char *tn = ref_normalize(target);
		FUZZ_CHECK(pd_path_under(target, deny_list) == ref_under(tn, deny_list),
			   "pd_path_under('%.200s') disagrees (normalized '%.200s')", target, tn);
		FUZZ_CHECK(pd_path_under(target, image) == ref_under(tn, image), "pd_path_under image '%.200s'", target);
		free(tn);
	}

	/* what the kernel opens */
	const char *nul = memchr(raw, 0, rawlen < PATH_MAX ? rawlen : PATH_MAX);
	if (nul && nul != raw) {
		size_t kl = (size_t)(nul - raw);
		char *kpath = malloc(strlen(cwd) + kl + 3);
		if (raw[0] == '/')
			snprintf(kpath, kl + 1, "%s", raw);
		else
			sprintf(kpath, "%s/%.*s", cwd, (int)kl, raw);
		char *kn = ref_normalize(kpath);
		/* pd_path_under on the whole path, as the judge gives it (up to a cwd, '/', a path) */
		static const char *const root[] = {"/", NULL};
		if (strlen(kpath) <= 2 * PD_AUDIT_READ) {
			FUZZ_CHECK(pd_path_under(kpath, root), "'%.100s' (%zu bytes) not under /", kpath, strlen(kpath));
			FUZZ_CHECK(pd_path_under(kpath, deny_list) == ref_under(kn, deny_list), "pd_path_under(%.100s)", kpath);
		}
		bool kdeny = ref_under(kn, deny_list), kreport = !ref_under(kn, image) && !ref_under(kn, allow_list);
		FUZZ_CHECK(!kdeny || deny, "the kernel opens '%.120s' (under the deny list), the audit lets it: host saw '%.120s'",
			   kn, target);
		FUZZ_CHECK(!kreport || report, "the kernel opens '%.120s' (not allowed), the audit does not report it: host saw '%.120s'",
			   kn, target);
		bool known = raw[0] == '/' || (!cwd_unknown && strlen(cwd) < PD_AUDIT_READ);
		if (known)
			FUZZ_CHECK(deny == kdeny, "'%.200s' denied %d, the kernel's path '%.200s' is under the deny list: %d",
				   target, deny, kn, kdeny);
		free(kn);
		free(kpath);
	}
	free(cwd);
	return 0;
}
