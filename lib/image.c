/* Images: the read-only layers under a sandbox's root.
 *
 * The default image is built from the host with no download: the host's /usr (and /bin, /lib...
 * where they are real directories rather than merged-/usr links), plus a small generated root layer
 * holding the top-level directories and a curated /etc. The curated /etc is an allow-list of what
 * programs and toolchains need (loader cache, alternatives, certificates, language configs); it
 * never includes the host's secrets, and files the host does not let everyone read are skipped
 * even when their directory is on the list. */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 3: copies keep their source's timestamps (python checks a .pyc against its source's mtime: a
 * copied sitecustomize.py with a new mtime was recompiled at every interpreter start) */
#define IMAGE_FORMAT 3

/* top-level entries that are symlinks on merged-/usr hosts and real directories elsewhere */
static const char *const usr_links[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", NULL};

/* what of the host's /etc a sandbox may see */
static const char *const etc_allow[] = {
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl/certs", "ca-certificates",
	"ca-certificates.conf", "localtime", "timezone", "os-release", "debian_version", "protocols",
	"services", "mime.types", "gai.conf", "host.conf", "shells", "magic", "magic.mime",
	"bash.bashrc", "profile", "inputrc", "perl", "python3", "python3.11", "python3.12",
	"java-17-openjdk", "java-21-openjdk", "fonts", "xml", "sgml", "gdb", "gprofng.rc", "papersize",
	NULL,
};

static int copy_tree(const char *src, const char *dst, int depth);

static int copy_file(const char *src, const char *dst, const struct stat *st)
{
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -1;
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return -1;
	}
	/* modes set explicitly: the caller's umask is none of our business (and process-wide) */
	fchmod(out, st->st_mode & 0755);
	char buf[65536];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n) {
			rc = -1;
			break;
		}
	if (n < 0)
		rc = -1;
	const struct timespec times[2] = {st->st_atim, st->st_mtim};
	if (!rc && futimens(out, times) < 0)
		rc = -1;
	close(in);
	if (close(out) < 0)
		rc = -1;
	return rc;
}

static int copy_entry(const char *src, const char *dst, int depth)
{
	struct stat st;
	if (lstat(src, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (S_ISLNK(st.st_mode)) {
		char t[PD_PATH];
		ssize_t n = readlink(src, t, sizeof t - 1);
		if (n < 0)
			return -1;
		t[n] = 0;
		if (symlink(t, dst) < 0 && errno != EEXIST)
			return -1;
		const struct timespec times[2] = {st.st_atim, st.st_mtim};
		utimensat(AT_FDCWD, dst, times, AT_SYMLINK_NOFOLLOW); /* cosmetic: nothing checks them */
		return 0;
	}
	/* default deny: what the host keeps from other users stays out of the sandbox */
	if (!(st.st_mode & S_IROTH))
		return 0;
	if (S_ISDIR(st.st_mode)) {
		if (copy_tree(src, dst, depth + 1) < 0)
			return -1;
		/* after its entries, whose creation moved it */
		const struct timespec times[2] = {st.st_atim, st.st_mtim};
		return utimensat(AT_FDCWD, dst, times, 0);
	}
	if (S_ISREG(st.st_mode))
		return copy_file(src, dst, &st);
	return 0; /* no devices, fifos or sockets */
}

static int copy_tree(const char *src, const char *dst, int depth)
{
	if (depth > 8)
		return 0;
	if ((mkdir(dst, 0755) < 0 && errno != EEXIST) || chmod(dst, 0755) < 0)
		return -1;
	DIR *d = opendir(src);
	if (!d)
		return -1;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char s[PD_PATH], t[PD_PATH];
		if (snprintf(s, sizeof s, "%s/%s", src, de->d_name) >= (int)sizeof s ||
		    snprintf(t, sizeof t, "%s/%s", dst, de->d_name) >= (int)sizeof t)
			continue;
		if (copy_entry(s, t, depth) < 0)
			rc = -1;
	}
	closedir(d);
	return rc;
}

static int put(const char *dir, const char *name, const char *text, mode_t mode)
{
	char p[PD_PATH];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	fchmod(fd, mode);
	size_t len = strlen(text);
	int rc = write(fd, text, len) == (ssize_t)len ? 0 : -1;
	close(fd);
	return rc;
}

static int rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (d) {
			struct dirent *de;
			while ((de = readdir(d))) {
				if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
					continue;
				char p[PD_PATH];
				snprintf(p, sizeof p, "%s/%s", path, de->d_name);
				rm_rf(p);
			}
			closedir(d);
		}
		return rmdir(path);
	}
	return unlink(path);
}

static int build(const char *tmp)
{
	if (mkdir(tmp, 0755) < 0 || chmod(tmp, 0755) < 0)
		return -1;
	static const struct {
		const char *name;
		mode_t mode;
	} dirs[] = {{"usr", 0755}, {"proc", 0555}, {"dev", 0755}, {"sys", 0555}, {"tmp", 01777},
		    {"root", 0700}, {"home", 0755}, {"run", 0755}, {"mnt", 0755}, {"opt", 0755},
		    {"srv", 0755}, {"var", 0755}, {"var/tmp", 01777}, {"var/lib", 0755},
		    {"var/cache", 0755}, {"var/log", 0755}, {"etc", 0755}, {"etc/ssl", 0755},
		    {"home/sandbox", 0755}};
	char p[PD_PATH];
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", tmp, dirs[i].name);
		if (mkdir(p, dirs[i].mode) < 0 || chmod(p, dirs[i].mode) < 0)
			return -1;
	}
	/* the unprivileged user of the image owns its home */
	snprintf(p, sizeof p, "%s/home/sandbox", tmp);
	if (chown(p, 1000, 1000) < 0)
		return -1;
	for (int i = 0; usr_links[i]; i++) {
		char src[PD_PATH], dst[PD_PATH];
		struct stat st;
		snprintf(src, sizeof src, "/%s", usr_links[i]);
		snprintf(dst, sizeof dst, "%s/%s", tmp, usr_links[i]);
		if (lstat(src, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			if (copy_entry(src, dst, 0) < 0)
				return -1;
		} else if (S_ISDIR(st.st_mode) && (mkdir(dst, 0755) < 0 || chmod(dst, 0755) < 0)) {
			return -1; /* a mount point: the host directory is its own layer */
		}
	}
	char etc[PD_PATH];
	snprintf(etc, sizeof etc, "%s/etc", tmp);
	for (int i = 0; etc_allow[i]; i++) {
		char s[PD_PATH], t[PD_PATH];
		snprintf(s, sizeof s, "/etc/%s", etc_allow[i]);
		snprintf(t, sizeof t, "%s/%s", etc, etc_allow[i]);
		if (copy_entry(s, t, 0) < 0)
			return -1;
	}
	if (put(etc, "passwd",
		"root:x:0:0:root:/root:/bin/bash\n"
		"sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/bash\n"
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", 0644) < 0 ||
	    put(etc, "group",
		"root:x:0:\ntty:x:5:\nusers:x:100:\nsandbox:x:1000:\nnogroup:x:65534:\n", 0644) < 0 ||
	    put(etc, "hosts",
		"127.0.0.1\tlocalhost\n127.0.1.1\tsandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		0644) < 0 ||
	    put(etc, "hostname", "sandbox\n", 0644) < 0 ||
	    put(etc, "nsswitch.conf",
		"passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n"
		"protocols: files\nservices: files\nethers: files\nrpc: files\n", 0644) < 0 ||
	    put(etc, "resolv.conf", "", 0644) < 0 ||
	    put(etc, "machine-id", "706164646f636b000000000000000000\n", 0444) < 0)
		return -1;
	char stamp[64];
	snprintf(stamp, sizeof stamp, "paddock-image %d\n", IMAGE_FORMAT);
	return put(tmp, ".paddock-image", stamp, 0644);
}

int pd_image_build_default(const char *dir, pd_err *e)
{
	char stamp[PD_PATH], want[64], have[64];
	snprintf(stamp, sizeof stamp, "%s/.paddock-image", dir);
	snprintf(want, sizeof want, "paddock-image %d\n", IMAGE_FORMAT);
	if (pd_read_file(stamp, have, sizeof have) > 0 && !strcmp(have, want))
		return 0;
	char tmp[PD_PATH];
	if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", dir, (int)getpid()) >= (int)sizeof tmp)
		return pd_fail(e, ENAMETOOLONG, "image path %s", dir);
	rm_rf(tmp);
	int rc = build(tmp);
	if (rc < 0) {
		int saved = errno;
		rm_rf(tmp);
		return pd_fail(e, saved, "build default image in %s", tmp);
	}
	/* another process may have built it meanwhile: then theirs stands */
	if (rename(tmp, dir) < 0) {
		int saved = errno;
		rm_rf(tmp);
		if (pd_read_file(stamp, have, sizeof have) > 0 && !strcmp(have, want))
			return 0;
		if (saved == ENOTEMPTY || saved == EEXIST) {
			/* an older format: replace it */
			char old_dir[PD_PATH];
			snprintf(old_dir, sizeof old_dir, "%s.old.%d", dir, (int)getpid());
			if (rename(dir, old_dir) == 0) {
				rm_rf(old_dir);
				return pd_image_build_default(dir, e);
			}
		}
		return pd_fail(e, saved, "install default image at %s", dir);
	}
	return 0;
}

int pd_image_layers(const char *image_dir, bool is_default, pd_layer *out, int *n, pd_err *e)
{
	struct stat st;
	if (stat(image_dir, &st) < 0)
		return pd_fail(e, errno, "image %s", image_dir);
	if (!S_ISDIR(st.st_mode))
		return pd_fail(e, ENOTDIR, "image %s", image_dir);
	*n = 0;
	snprintf(out[*n].src, PD_PATH, "%s", image_dir);
	snprintf(out[(*n)++].dst, PD_PATH, "/");
	if (!is_default)
		return 0;
	snprintf(out[*n].src, PD_PATH, "/usr");
	snprintf(out[(*n)++].dst, PD_PATH, "/usr");
	for (int i = 0; usr_links[i] && *n < PD_MAX_LAYERS; i++) {
		char src[PD_PATH];
		snprintf(src, sizeof src, "/%s", usr_links[i]);
		if (lstat(src, &st) == 0 && S_ISDIR(st.st_mode)) {
			snprintf(out[*n].src, PD_PATH, "%s", src);
			snprintf(out[(*n)++].dst, PD_PATH, "%s", src);
		}
	}
	return 0;
}
