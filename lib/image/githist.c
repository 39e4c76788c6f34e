/* Clean task environments: a repository of an image with its history stripped beyond the task's
 * commit (pd_image_import_opts.strip_history). An agent must not find the fix in a future commit
 * (`git log --all`, a tag, a remote branch, the reflog, ORIG_HEAD, a dangling object): the new
 * repository holds the objects reachable from the commit and nothing else, as one more layer on
 * top of the image whose <repo>/.git is an opaque directory. The work tree is left as it is.
 *
 * The host's git does the object work, on a new repository of paddock's own: the image's objects
 * are read through GIT_ALTERNATE_OBJECT_DIRECTORIES (data only: the image's config, hooks and
 * alternates are never read by a host process), after its .git is checked to hold no symlink
 * (which would make the host's git read host files) and no alternates of its own. The image's
 * config, index and info/ are copied in after git is done with the new repository. */
#define _GNU_SOURCE
#include "imgstore.h"

#include "dl_archive.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include "dl_crypto.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs git with argv (git's own arguments) in a clean environment: no system or user config, the
 * repository gitdir, objects borrowed from alt (or none). 0 when it exits 0. */
static int git(const char *gitdir, const char *alt, const char *const *args, pd_err *e)
{
	char *argv[16];
	int n = 0;
	argv[n++] = (char *)"git";
	argv[n++] = (char *)"-c";
	argv[n++] = (char *)"pack.threads=1"; /* the same pack for the same objects */
	argv[n++] = (char *)"-c";
	argv[n++] = (char *)"core.hooksPath=/dev/null";
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	char e_dir[PD_PATH * 2 + 16], e_alt[PD_PATH * 2 + 48];
	snprintf(e_dir, sizeof e_dir, "GIT_DIR=%s", gitdir ? gitdir : "");
	snprintf(e_alt, sizeof e_alt, "GIT_ALTERNATE_OBJECT_DIRECTORIES=%s", alt ? alt : "");
	/* init takes its directory as an argument (gitdir NULL): no GIT_DIR then */
	char *envp[] = {gitdir ? e_dir : (char *)"GIT_PADDOCK=1", alt ? e_alt : (char *)"GIT_PADDOCK_ALT=0",
			(char *)"GIT_CONFIG_NOSYSTEM=1",
			(char *)"GIT_CONFIG_GLOBAL=/dev/null", (char *)"HOME=/nonexistent",
			(char *)"PATH=/usr/local/bin:/usr/bin:/bin", (char *)"LC_ALL=C", (char *)"GIT_TERMINAL_PROMPT=0",
			NULL};
	pid_t pid = fork();
	if (pid < 0)
		return pd_fail(e, errno, "fork git");
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execve("/usr/bin/git", argv, envp);
		execve("/usr/local/bin/git", argv, envp);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return pd_fail(e, errno, "wait for git");
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		errno = 0;
		return pd_fail(e, WIFEXITED(st) && WEXITSTATUS(st) == 127 ? ENOENT : EIO,
			       "strip history: git %s failed (exit %d)%s", args[0], WIFEXITED(st) ? WEXITSTATUS(st) : -1,
			       WIFEXITED(st) && WEXITSTATUS(st) == 127 ? ": no git on this host" : "");
	}
	return 0;
}

static int no_symlink(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)p;
	(void)sb;
	(void)f;
	return flag == FTW_SL || flag == FTW_SLN ? 1 : 0;
}

static bool is_hex(const char *s, size_t n)
{
	return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

/* The commit HEAD names: a detached one, a loose ref or a packed one. branch gets the branch's
 * name ("" when detached). */
static int head_commit(const char *gitdir, char commit[65], char branch[256], pd_err *e)
{
	char p[PD_PATH + 300], *txt = NULL;
	snprintf(p, sizeof p, "%s/HEAD", gitdir);
	if (imgs_slurp(p, 4096, &txt, NULL, e) < 0)
		return -1;
	txt[strcspn(txt, "\r\n")] = 0;
	branch[0] = 0;
	if (is_hex(txt, 40) || is_hex(txt, 64)) {
		snprintf(commit, 65, "%s", txt);
		free(txt);
		return 0;
	}
	int rc = -1;
	const char *ref = !strncmp(txt, "ref: refs/heads/", 16) ? txt + 5 : NULL;
	if (!ref || strstr(ref, "..") || strlen(ref + 11) >= 256) {
		pd_fail(e, EINVAL, "strip history: HEAD is '%s', not a branch or a commit", txt);
		goto out;
	}
	snprintf(branch, 256, "%s", ref + 11);
	char *val = NULL;
	snprintf(p, sizeof p, "%s/%s", gitdir, ref);
	if (imgs_slurp(p, 256, &val, NULL, NULL) == 0) {
		val[strcspn(val, "\r\n")] = 0;
		if (is_hex(val, 40) || is_hex(val, 64)) {
			snprintf(commit, 65, "%s", val);
			rc = 0;
		}
		free(val);
		if (rc == 0)
			goto out;
	}
	snprintf(p, sizeof p, "%s/packed-refs", gitdir);
	if (imgs_slurp(p, 64u << 20, &val, NULL, NULL) == 0) {
		for (char *line = strtok(val, "\n"); line && rc < 0; line = strtok(NULL, "\n")) {
			char *sp = strchr(line, ' ');
			if (sp && !strcmp(sp + 1, ref) && (sp - line == 40 || sp - line == 64)) {
				snprintf(commit, 65, "%.*s", (int)(sp - line), line);
				rc = 0;
			}
		}
		free(val);
	}
	if (rc < 0)
		pd_fail(e, ENOENT, "strip history: HEAD's branch %s has no commit", branch);
out:
	free(txt);
	return rc;
}

static int copy_file(const char *from, const char *to)
{
	char *data;
	size_t len;
	if (imgs_slurp(from, 1u << 30, &data, &len, NULL) < 0)
		return errno == ENOENT ? 0 : -1;
	int rc = imgs_write_atomic(to, data, len, NULL);
	free(data);
	chmod(to, 0644);
	return rc;
}

static uid_t own_uid;
static gid_t own_gid;
static int chown_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	return lchown(p, own_uid, own_gid) < 0 ? -1 : 0;
}

/* The layer directory as an uncompressed tar at blob (numeric owners, times 0: the same
 * repository gives the same bytes), hashed as it is written. */
typedef struct tarsink {
	int fd;
	EVP_MD_CTX *md;
} tarsink;

static la_ssize_t sink_write(struct archive *a, void *arg, const void *buf, size_t n)
{
	(void)a;
	tarsink *s = arg;
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(s->fd, (const char *)buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	EVP_DigestUpdate(s->md, buf, n);
	return (la_ssize_t)n;
}

static int tar_layer(const char *dir, const char *blob, char digest[PD_DIGEST_LEN], pd_err *e)
{
	tarsink s = {open(blob, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), EVP_MD_CTX_new()};
	struct archive *w = archive_write_new(), *d = archive_read_disk_new();
	struct archive_entry *ent = NULL;
	int rc = -1;
	if (s.fd < 0 || !s.md || !w || !d || !EVP_DigestInit_ex(s.md, EVP_sha256(), NULL) ||
	    archive_write_set_format_pax_restricted(w) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w, 1) != ARCHIVE_OK ||
	    archive_write_open(w, &s, NULL, sink_write, NULL) != ARCHIVE_OK ||
	    archive_read_disk_set_symlink_physical(d) != ARCHIVE_OK ||
	    archive_read_disk_set_behavior(d, ARCHIVE_READDISK_NO_XATTR | ARCHIVE_READDISK_NO_ACL |
						  ARCHIVE_READDISK_NO_FFLAGS) != ARCHIVE_OK ||
	    archive_read_disk_open(d, dir) != ARCHIVE_OK) {
		pd_fail(e, EIO, "strip history: write the layer %s", blob);
		goto out;
	}
	size_t dlen = strlen(dir);
	for (;;) {
		ent = archive_entry_new();
		int r = archive_read_next_header2(d, ent);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK) {
			pd_fail(e, EIO, "strip history: read %s: %s", dir, archive_error_string(d));
			goto out;
		}
		archive_read_disk_descend(d);
		const char *path = archive_entry_pathname(ent);
		if (!path || strlen(path) <= dlen + 1) { /* the layer's root itself */
			archive_entry_free(ent);
			continue;
		}
		char rel[PD_PATH];
		snprintf(rel, sizeof rel, "%s", path + dlen + 1);
		archive_entry_set_pathname(ent, rel);
		archive_entry_set_mtime(ent, 0, 0);
		archive_entry_unset_atime(ent);
		archive_entry_unset_ctime(ent);
		archive_entry_unset_birthtime(ent);
		archive_entry_set_uname(ent, NULL);
		archive_entry_set_gname(ent, NULL);
		if (archive_write_header(w, ent) != ARCHIVE_OK) {
			pd_fail(e, EIO, "strip history: %s: %s", rel, archive_error_string(w));
			goto out;
		}
		if (archive_entry_filetype(ent) == AE_IFREG && archive_entry_size(ent) > 0) {
			const void *buf;
			size_t n;
			int64_t off;
			while ((r = archive_read_data_block(d, &buf, &n, &off)) == ARCHIVE_OK)
				if (archive_write_data(w, buf, n) != (la_ssize_t)n)
					break;
			if (r != ARCHIVE_EOF) {
				pd_fail(e, EIO, "strip history: %s: %s", rel, archive_error_string(d));
				goto out;
			}
		}
		archive_entry_free(ent);
	}
	if (archive_write_close(w) != ARCHIVE_OK) {
		pd_fail(e, EIO, "strip history: write the layer %s", blob);
		goto out;
	}
	unsigned char md[32];
	unsigned int ml = 0;
	EVP_DigestFinal_ex(s.md, md, &ml);
	strcpy(digest, "sha256:");
	for (int i = 0; i < 32; i++)
		snprintf(digest + 7 + 2 * i, 3, "%02x", md[i]);
	rc = 0;
out:
	archive_entry_free(ent);
	if (d)
		archive_read_free(d);
	if (w)
		archive_write_free(w);
	EVP_MD_CTX_free(s.md);
	if (s.fd >= 0)
		close(s.fd);
	return rc;
}

int imgs_strip_history(const char *work, const char *const *layers, int n, const char *repo, const char *want,
		       char *blob, char digest[PD_DIGEST_LEN], char commit[65], pd_err *e)
{
	char flat[PD_PATH], gitdir[PD_PATH * 2], ldir[PD_PATH], newgit[PD_PATH * 2], p[PD_PATH * 2], q[PD_PATH * 2];
	if (pd_dl_load(&pd_dla_lib, e) < 0 || pd_dl_load(&pd_dlc_lib, e) < 0)
		return -1;
	if (!repo || repo[0] != '/' || strstr(repo, "..") || strlen(repo) > 1024)
		return pd_fail(e, EINVAL, "strip history: '%s' must be an absolute path in the image", repo ? repo : "");
	if (want && *want && !is_hex(want, 40) && !is_hex(want, 64))
		return pd_fail(e, EINVAL, "strip history: commit '%s' must be 40 or 64 hex digits", want);
	snprintf(flat, sizeof flat, "%s/flat", work);
	snprintf(ldir, sizeof ldir, "%s/layer", work);
	if (mkdir(work, 0700) < 0 || imgs_flatten(layers, n, flat, e) < 0 || mkdir(ldir, 0755) < 0)
		return e && e->code ? -1 : pd_fail(e, errno, "strip history: %s", work);
	/* each component of the repository's path a directory, as a sandbox would resolve it only
	 * within its root: here a symlink would lead into the host */
	char rel[1100];
	snprintf(rel, sizeof rel, "%s/.git", repo);
	for (char *c = rel + 1;; c++) {
		bool end = !*c;
		if (*c != '/' && !end)
			continue;
		char keep = *c;
		*c = 0;
		struct stat st;
		snprintf(p, sizeof p, "%s%s", flat, rel);
		snprintf(q, sizeof q, "%s%s", ldir, rel);
		if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
			return pd_fail(e, ENOENT, "strip history: %s is not a repository's directory in the image (%s%s)", repo,
				       rel, S_ISLNK(st.st_mode) ? " is a symlink" : " is missing or not a directory");
		}
		/* the layer's directories as the image has them: overlayfs shows the upper one's owner
		 * and mode for a directory both layers hold */
		if ((mkdir(q, st.st_mode & 07777) < 0 && errno != EEXIST) ||
		    lchown(q, st.st_uid, st.st_gid) < 0 || chmod(q, st.st_mode & 07777) < 0)
			return pd_fail(e, errno, "strip history: %s", q);
		*c = keep;
		if (end)
			break;
	}
	snprintf(gitdir, sizeof gitdir, "%s%s/.git", flat, repo);
	snprintf(newgit, sizeof newgit, "%s%s/.git", ldir, repo);
	struct stat gst;
	lstat(gitdir, &gst);
	if (nftw(gitdir, no_symlink, 32, FTW_PHYS) != 0)
		return pd_fail(e, EPERM, "strip history: %s/.git holds a symlink: refused (the host's git would follow it)",
			       repo);
	snprintf(p, sizeof p, "%s/objects/info/alternates", gitdir);
	if (access(p, F_OK) == 0)
		return pd_fail(e, EPERM, "strip history: %s/.git borrows objects from elsewhere (objects/info/alternates): "
					 "refused", repo);
	char *cfg = NULL;
	snprintf(p, sizeof p, "%s/config", gitdir);
	if (imgs_slurp(p, 1u << 20, &cfg, NULL, NULL) == 0) {
		bool reftable = strcasestr(cfg, "refstorage") != NULL;
		free(cfg);
		if (reftable)
			return pd_fail(e, ENOTSUP, "strip history: %s/.git keeps its refs in a reftable: not supported", repo);
	}
	char branch[256] = "";
	if (head_commit(gitdir, commit, branch, e) < 0)
		return -1;
	if (want && *want)
		snprintf(commit, 65, "%s", want);
	/* a new repository: only the objects the commit reaches are copied into its one pack */
	char objs[PD_PATH * 2 + 16], refname[300], spec[80];
	snprintf(objs, sizeof objs, "%s/objects", gitdir);
	snprintf(spec, sizeof spec, "%s^{commit}", commit);
	snprintf(refname, sizeof refname, "refs/heads/%s", branch[0] ? branch : "main");
	const char *init[] = {"init", "-q", "--bare", "--template=", newgit, NULL, NULL};
	if (strlen(commit) == 64) {
		init[4] = "--object-format=sha256";
		init[5] = newgit;
	}
	const char *check[] = {"cat-file", "-e", spec, NULL};
	const char *upd[] = {"update-ref", refname, commit, NULL};
	const char *pack[] = {"repack", "-a", "-d", "-q", NULL};
	snprintf(p, sizeof p, "%s/shallow", gitdir);
	snprintf(q, sizeof q, "%s/shallow", newgit);
	if (git(NULL, NULL, init, e) < 0 || copy_file(p, q) < 0)
		return -1;
	if (git(newgit, objs, check, NULL) < 0)
		return pd_fail(e, ENOENT, "strip history: commit %s is not in %s", commit, repo);
	if (git(newgit, objs, upd, e) < 0 || git(newgit, objs, pack, e) < 0)
		return -1;
	/* what an agent's git sees next: the image's config, index and excludes, HEAD as it was
	 * (or detached at a commit asked for that is not its branch's), no hooks, no logs */
	snprintf(p, sizeof p, "%s/hooks", newgit);
	imgs_rm_rf(p);
	snprintf(p, sizeof p, "%s/description", newgit);
	unlink(p);
	static const char *const keep[] = {"config", "index", "info/exclude", NULL};
	for (int i = 0; keep[i]; i++) {
		snprintf(p, sizeof p, "%s/%s", gitdir, keep[i]);
		snprintf(q, sizeof q, "%s/%s", newgit, keep[i]);
		if (copy_file(p, q) < 0)
			return pd_fail(e, errno, "strip history: copy %s", keep[i]);
	}
	char head[300];
	snprintf(head, sizeof head, "ref: %s\n", refname);
	snprintf(p, sizeof p, "%s/HEAD", newgit);
	snprintf(q, sizeof q, "%s/.wh..wh..opq", newgit); /* the image's .git is hidden whole */
	if (imgs_write_atomic(p, head, strlen(head), e) < 0 || imgs_write_atomic(q, "", 0, e) < 0)
		return -1;
	chmod(p, 0644);
	own_uid = gst.st_uid;
	own_gid = gst.st_gid;
	if (nftw(newgit, chown_one, 32, FTW_PHYS) != 0)
		return pd_fail(e, errno, "strip history: chown %s", newgit);
	chmod(newgit, gst.st_mode & 07777);
	return tar_layer(ldir, blob, digest, e);
}
