/* image.c: the default host image's generated root layer, and the layers of an image. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[] = "/tmp/paddock-unit-image-XXXXXX";
static char img[PD_PATH];

static void rm_rf(const char *path)
{
	char cmd[PD_PATH + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", path);
}

static bool mode_is(const char *rel, mode_t want)
{
	char p[PD_PATH * 2];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", img, rel);
	if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
		printf("#   %s: not a directory\n", rel);
		return false;
	}
	if ((st.st_mode & 07777) != want)
		printf("#   %s: mode %04o, want %04o\n", rel, st.st_mode & 07777, want);
	return (st.st_mode & 07777) == want;
}

static bool file_has(const char *rel, const char *needle)
{
	char p[PD_PATH * 2], b[8192];
	snprintf(p, sizeof p, "%s/%s", img, rel);
	if (pd_read_file(p, b, sizeof b) < 0)
		return false;
	return strstr(b, needle) != NULL;
}

static bool absent(const char *rel)
{
	char p[PD_PATH * 2];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", img, rel);
	return lstat(p, &st) < 0 && errno == ENOENT;
}

/* walk of the image's /etc: copied regular files must be world-readable on the host and here */
static int n_files, n_unreadable, n_host_unreadable, n_special, n_not_from_host, n_new_mtime;
static const char *const generated[] = {"passwd", "group", "hosts", "hostname", "nsswitch.conf",
					"resolv.conf", "machine-id", NULL};

static int visit(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)type;
	(void)f;
	const char *rel = path + strlen(img); /* "/etc/..." */
	if (S_ISREG(st->st_mode)) {
		n_files++;
		if (!(st->st_mode & S_IROTH) || (st->st_mode & (S_ISUID | S_ISGID | S_IWOTH))) {
			n_unreadable++;
			printf("#   %s: mode %04o\n", rel, st->st_mode & 07777);
		}
		bool gen = false;
		for (int i = 0; generated[i]; i++)
			gen |= !strcmp(rel + 5, generated[i]);
		if (!gen) {
			struct stat hs;
			if (stat(rel, &hs) < 0) {
				n_not_from_host++;
				printf("#   %s: not on the host\n", rel);
			} else if (!(hs.st_mode & S_IROTH)) {
				n_host_unreadable++;
				printf("#   %s: not world-readable on the host\n", rel);
			} else if (hs.st_mtim.tv_sec != st->st_mtim.tv_sec ||
				   hs.st_mtim.tv_nsec != st->st_mtim.tv_nsec) {
				n_new_mtime++;
				printf("#   %s: mtime %lld, on the host %lld\n", rel, (long long)st->st_mtim.tv_sec,
				       (long long)hs.st_mtim.tv_sec);
			}
		}
	} else if (!S_ISDIR(st->st_mode) && !S_ISLNK(st->st_mode)) {
		n_special++;
		printf("#   %s: a special file\n", rel);
	}
	return 0;
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

int main(void)
{
	if (geteuid() != 0) {
		printf("1..0 # SKIP building the image needs root (chown)\n");
		return 0;
	}
	plan(50);
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(img, sizeof img, "%s/img", tmp);
	mode_t um = umask(077);
	pd_err e = {0};
	int rc = pd_image_build_default(img, &e);
	ok(rc == 0, "build the default image (%s)", e.msg);
	is_int(umask(um), 077, "the caller's umask is restored");
	if (rc < 0) {
		rm_rf(tmp);
		return done();
	}
	is_int(entries(tmp), 1, "nothing else is left beside the image (no .tmp dir)");
	ok(file_has(".paddock-image", "paddock-image "), "the stamp is there");

	/* directories and modes */
	ok(mode_is("tmp", 01777), "tmp is 1777");
	ok(mode_is("var/tmp", 01777), "var/tmp is 1777");
	ok(mode_is("root", 0700), "root is 0700");
	ok(mode_is("proc", 0555) && mode_is("sys", 0555), "proc and sys are 0555");
	ok(mode_is("usr", 0755) && mode_is("etc", 0755) && mode_is("dev", 0755) && mode_is("home", 0755) &&
		   mode_is("run", 0755) && mode_is("var/lib", 0755),
	   "usr, etc, dev, home, run, var/lib are 0755");
	char p[PD_PATH * 2];
	struct stat st;
	snprintf(p, sizeof p, "%s/home/sandbox", img);
	ok(stat(p, &st) == 0 && st.st_uid == 1000 && st.st_gid == 1000, "home/sandbox belongs to 1000:1000");
	snprintf(p, sizeof p, "%s/usr", img);
	is_int(entries(p), 0, "usr is an empty mount point (the host's /usr is its own layer)");

	/* generated /etc */
	ok(file_has("etc/passwd", "\nroot:x:0:0:") || file_has("etc/passwd", "root:x:0:0:"), "passwd has root");
	ok(file_has("etc/passwd", "\nsandbox:x:1000:1000:"), "passwd has sandbox (1000)");
	ok(file_has("etc/group", "root:x:0:") && file_has("etc/group", "sandbox:x:1000:"), "group has root and sandbox");
	ok(file_has("etc/hosts", "127.0.0.1\tlocalhost") && file_has("etc/hosts", "::1"), "hosts has localhost (v4 and v6)");
	ok(file_has("etc/nsswitch.conf", "passwd: files") && file_has("etc/nsswitch.conf", "hosts: files"),
	   "nsswitch.conf reads files");
	ok(file_has("etc/hostname", "sandbox"), "hostname");
	snprintf(p, sizeof p, "%s/etc/resolv.conf", img);
	ok(access(p, F_OK) == 0, "resolv.conf exists");
	char mid[64] = "", hostmid[64] = "";
	snprintf(p, sizeof p, "%s/etc/machine-id", img);
	pd_read_file(p, mid, sizeof mid);
	bool mid_ok = strlen(mid) == 33 && mid[32] == '\n';
	for (int i = 0; i < 32 && mid_ok; i++)
		mid_ok = (mid[i] >= '0' && mid[i] <= '9') || (mid[i] >= 'a' && mid[i] <= 'f');
	if (!ok(mid_ok, "machine-id is 32 lowercase hex digits and a newline (machine-id(5))"))
		printf("#   got '%s'\n", mid);
	pd_read_file("/etc/machine-id", hostmid, sizeof hostmid);
	ok(!hostmid[0] || strcmp(mid, hostmid), "machine-id is not the host's");

	/* secrets stay out */
	static const char *const secrets[] = {"etc/shadow", "etc/gshadow", "etc/shadow-", "etc/gshadow-",
					      "etc/ssh", "etc/sudoers", "etc/sudoers.d", "etc/ssl/private",
					      "etc/security", "etc/krb5.keytab", "etc/passwd-", NULL};
	int leaked = 0;
	for (int i = 0; secrets[i]; i++)
		if (!absent(secrets[i])) {
			leaked++;
			printf("#   %s was copied\n", secrets[i]);
		}
	is_int(leaked, 0, "no shadow, gshadow, ssh, sudoers, ssl/private, security copied");

	/* everything copied is world-readable, on the host and here; nothing special */
	snprintf(p, sizeof p, "%s/etc", img);
	nftw(p, visit, 16, FTW_PHYS);
	ok(n_files > 7, "the image's /etc has files (%d)", n_files);
	is_int(n_unreadable, 0, "every file is world-readable, none setuid or world-writable");
	is_int(n_host_unreadable, 0, "every copied file is world-readable on the host");
	is_int(n_not_from_host, 0, "every file not generated comes from the host's /etc");
	/* python (and others) check caches against the source's mtime: a .pyc of sitecustomize.py */
	is_int(n_new_mtime, 0, "every copied file keeps its host mtime");
	is_int(n_special, 0, "no device, fifo or socket");

	/* symlinks as on the host */
	static const char *const links[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", NULL};
	int same = 0;
	for (int i = 0; links[i]; i++) {
		char hp[64], t1[PD_PATH] = "", t2[PD_PATH] = "";
		struct stat hs, is;
		bool s;
		snprintf(hp, sizeof hp, "/%s", links[i]);
		snprintf(p, sizeof p, "%s/%s", img, links[i]);
		if (lstat(hp, &hs) < 0) {
			s = lstat(p, &is) < 0;
		} else if (S_ISLNK(hs.st_mode)) {
			ssize_t a = readlink(hp, t1, sizeof t1 - 1), b = readlink(p, t2, sizeof t2 - 1);
			s = a > 0 && a == b && !memcmp(t1, t2, (size_t)a);
		} else {
			s = lstat(p, &is) == 0 && S_ISDIR(is.st_mode) && entries(p) == 0;
		}
		if (!s)
			printf("#   /%s differs from the host\n", links[i]);
		same += s;
	}
	is_int(same, 6, "bin, sbin, lib, lib32, lib64, libx32 as on the host (link, mount point or absent)");
	{
		char t1[PD_PATH], t2[PD_PATH];
		ssize_t a = readlink("/bin", t1, sizeof t1 - 1);
		snprintf(p, sizeof p, "%s/bin", img);
		ssize_t b = readlink(p, t2, sizeof t2 - 1);
		if (a > 0) {
			t1[a] = 0;
			t2[b > 0 ? b : 0] = 0;
			is_str(t2, t1, "bin -> %s as on the host", t1);
		} else {
			ok(b < 0, "bin is not a link, as on the host");
		}
	}
	{
		char t1[PD_PATH], t2[PD_PATH];
		ssize_t a = readlink("/etc/localtime", t1, sizeof t1 - 1);
		snprintf(p, sizeof p, "%s/etc/localtime", img);
		ssize_t b = readlink(p, t2, sizeof t2 - 1);
		t1[a > 0 ? a : 0] = 0;
		t2[b > 0 ? b : 0] = 0;
		if (a > 0)
			is_str(t2, t1, "a symlink in /etc (localtime) stays a symlink");
		else
			ok(b < 0, "/etc/localtime: not a link, as on the host");
	}

	/* building again is a no-op */
	struct stat before, after;
	stat(img, &before);
	snprintf(p, sizeof p, "%s/marker", img);
	int fd = open(p, O_WRONLY | O_CREAT, 0644);
	close(fd);
	memset(&e, 0, sizeof e);
	ok(pd_image_build_default(img, &e) == 0, "build again (%s)", e.msg);
	stat(img, &after);
	ok(access(p, F_OK) == 0 && before.st_ino == after.st_ino, "the second build changed nothing (stamp)");
	is_int(entries(tmp), 1, "and left nothing beside it");

	/* an image of an older format is replaced */
	snprintf(p, sizeof p, "%s/.paddock-image", img);
	fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0 || write(fd, "paddock-image 0\n", 16) != 16)
		printf("# could not rewrite the stamp\n");
	close(fd);
	memset(&e, 0, sizeof e);
	ok(pd_image_build_default(img, &e) == 0, "build over an older format (%s)", e.msg);
	snprintf(p, sizeof p, "%s/marker", img);
	ok(access(p, F_OK) < 0 && !file_has(".paddock-image", "paddock-image 0"), "the old image was replaced");
	ok(file_has("etc/passwd", "sandbox:x:1000"), "the new one is complete");
	is_int(entries(tmp), 1, "no .tmp or .old dir is left");

	/* a missing parent */
	char bad[PD_PATH];
	snprintf(bad, sizeof bad, "%s/no/such/img", tmp);
	memset(&e, 0, sizeof e);
	ok(pd_image_build_default(bad, &e) == -1 && e.code == ENOENT, "build where the parent is missing: ENOENT (%s)", e.msg);
	ok(strstr(e.msg, "/no/such/img") != NULL, "the message names the path");

	/* layers */
	pd_layer ly[PD_MAX_LAYERS];
	int n = -1;
	memset(&e, 0, sizeof e);
	ok(pd_image_layers(img, true, ly, &n, &e) == 0, "layers of the default image");
	int want = 2;
	for (int i = 0; links[i]; i++) {
		char hp[64];
		struct stat hs;
		snprintf(hp, sizeof hp, "/%s", links[i]);
		want += lstat(hp, &hs) == 0 && S_ISDIR(hs.st_mode);
	}
	is_int(n, want, "default: the root layer, /usr, and each of /bin, /lib... that is a real dir");
	ok(n >= 2 && !strcmp(ly[0].src, img) && !strcmp(ly[0].dst, "/"), "default: layer 0 is the generated root at /");
	ok(n >= 2 && !strcmp(ly[1].src, "/usr") && !strcmp(ly[1].dst, "/usr"), "default: layer 1 is the host /usr at /usr");
	bool dirs_ok = true;
	for (int i = 2; i < n; i++)
		dirs_ok &= !strcmp(ly[i].src, ly[i].dst) && ly[i].src[0] == '/';
	ok(dirs_ok, "default: the other layers are host dirs at the same place");

	char plain[PD_PATH];
	snprintf(plain, sizeof plain, "%s/plain", tmp);
	mkdir(plain, 0755);
	n = -1;
	ok(pd_image_layers(plain, false, ly, &n, &e) == 0 && n == 1, "a plain directory: one layer");
	ok(!strcmp(ly[0].src, plain) && !strcmp(ly[0].dst, "/"), "... at /");

	char missing[PD_PATH];
	snprintf(missing, sizeof missing, "%s/missing", tmp);
	memset(&e, 0, sizeof e);
	ok(pd_image_layers(missing, false, ly, &n, &e) == -1, "a missing image dir fails");
	is_int(e.code, ENOENT, "... with ENOENT");
	ok(strstr(e.msg, missing) != NULL, "... naming the path (%s)", e.msg);
	snprintf(p, sizeof p, "%s/etc/passwd", img);
	memset(&e, 0, sizeof e);
	ok(pd_image_layers(p, false, ly, &n, &e) == -1 && e.code == ENOTDIR, "a file as image: ENOTDIR");

	rm_rf(tmp);
	return done();
}
