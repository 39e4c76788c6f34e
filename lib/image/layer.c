/* Unpacking a layer: a tar (plain, gzip, zstd...: libarchive's filters) written into a new
 * directory of the store, in one pass that also hashes the blob's bytes, so a layer whose bytes
 * do not match its digest is thrown away before anything uses it.
 *
 * The directory is an overlayfs lower layer, so OCI's whiteout files become what overlayfs reads
 * as whiteouts: ".wh.NAME" a character device 0/0 named NAME, ".wh..wh..opq" the xattr
 * user.overlay.opaque=y on its directory (the sandbox mounts its overlays with userxattr, so
 * overlay reads the user.overlay.* names, never trusted.overlay.*).
 *
 * Nothing may land outside dest: absolute paths and ".." components are refused here, writing
 * through a symlink (one planted earlier in the same layer) is refused by libarchive's
 * SECURE_SYMLINKS check, and device nodes are refused (a sandbox could not open them anyway,
 * its layers are mounted nodev, but the host could). Owners are kept as numbers: the layers are
 * id-mapped into each sandbox's user namespace, so uid 0 in the layer is the sandbox's root; an
 * owner above 65535 (outside a sandbox's range) becomes 65534, nobody. Only user.* xattrs are
 * kept, user.overlay.* excepted (an image must not forge overlay's metadata). */
#define _GNU_SOURCE
#include "imgstore.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define OPAQUE_XATTR "user.overlay.opaque"

/* ---- hashing reader ---------------------------------------------------------------------- */

typedef struct hreader {
	int fd;
	pd_sha256 md;
	char buf[1 << 16];
	int err;
} hreader;

static la_ssize_t hread(struct archive *a, void *arg, const void **buf)
{
	(void)a;
	hreader *h = arg;
	ssize_t n;
	do
		n = read(h->fd, h->buf, sizeof h->buf);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		h->err = errno;
		return -1;
	}
	pd_sha256_add(&h->md, h->buf, (size_t)n);
	*buf = h->buf;
	return n;
}

/* The rest of the blob (what follows the tar's end blocks) goes into the hash too. */
static int drain(hreader *h, char out[PD_DIGEST_LEN])
{
	ssize_t n;
	while ((n = read(h->fd, h->buf, sizeof h->buf)) > 0)
		pd_sha256_add(&h->md, h->buf, (size_t)n);
	if (n < 0)
		return -1;
	strcpy(out, "sha256:");
	if (pd_sha256_end_hex(&h->md, out + 7) < 0)
		return -1; /* errno ENOMEM */
	return 0;
}

void imgs_sha256(const void *data, size_t len, char out[PD_DIGEST_LEN])
{
	strcpy(out, "sha256:");
	if (pd_sha256_of(data, len, out + 7) < 0)
		out[0] = 0; /* no digest: never equal to one, so never taken for the blob's */
}

int imgs_verify_blob(const char *blob, const char *want, pd_err *e)
{
	hreader *h = calloc(1, sizeof *h);
	if (!h || pd_sha256_init(&h->md) < 0) {
		free(h);
		return pd_fail(e, ENOMEM, "sha256");
	}
	int rc = 0;
	char got[PD_DIGEST_LEN];
	h->fd = open(blob, O_RDONLY | O_CLOEXEC);
	if (h->fd < 0 || drain(h, got) < 0)
		rc = pd_fail(e, errno, "layer blob %s", blob);
	else if (strcmp(got, want))
		rc = pd_fail(e, EBADMSG, "refused: layer %s is corrupted: its content hashes to %s", want, got);
	if (h->fd >= 0)
		close(h->fd);
	pd_sha256_free(&h->md);
	free(h);
	return rc;
}

/* ---- paths ----------------------------------------------------------------------------------- */

/* An entry's path made relative and clean ("./a//b/" -> "a/b"); -1 if absolute or with "..". */
static int clean_path(const char *p, char *out, size_t size)
{
	if (!p || p[0] == '/')
		return -1;
	size_t o = 0;
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -1;
		if (n && !(n == 1 && p[0] == '.')) {
			if (o + n + 2 > size)
				return -1;
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
	}
	out[o] = 0;
	return 0;
}

/* Opens rel (a clean relative path) under rootfd as O_PATH, no symlink followed on the way or at
 * the end; -1 with errno (ENOENT when something is missing). */
static int open_beneath(int rootfd, const char *rel);

/* Opens directory rel under rootfd (no symlink followed, nothing above root), making what is
 * missing when create. */
static int open_dir_in(int rootfd, const char *rel, bool create)
{
	int fd = (int)openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char buf[PD_PATH];
	snprintf(buf, sizeof buf, "%s", rel);
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
		if (create && mkdirat(fd, c, 0755) < 0 && errno != EEXIST) {
			int err = errno;
			close(fd);
			return errno = err, -1;
		}
		/* one clean component at a time (no "..": clean_path refused it), none followed if
		 * a symlink: O_NOFOLLOW with O_DIRECTORY fails on one */
		int next = openat(fd, c, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		int err = errno;
		close(fd);
		fd = next;
		errno = err;
	}
	return fd;
}

static void split(const char *rel, char *dir, size_t size, const char **base);

static int open_beneath(int rootfd, const char *rel)
{
	char dir[PD_PATH];
	const char *base;
	split(rel, dir, sizeof dir, &base);
	int dfd = open_dir_in(rootfd, dir, false);
	if (dfd < 0)
		return -1;
	int fd = openat(dfd, base, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	int err = errno;
	close(dfd);
	errno = err;
	return fd;
}

static void split(const char *rel, char *dir, size_t size, const char **base)
{
	const char *slash = strrchr(rel, '/');
	snprintf(dir, size, "%.*s", slash ? (int)(slash - rel) : 0, rel);
	*base = slash ? slash + 1 : rel;
}

/* A whiteout: what overlayfs reads as "NAME is deleted in the layers below". */
static int whiteout(int rootfd, const char *rel, const char *name, pd_err *e)
{
	char dir[PD_PATH];
	const char *base;
	split(rel, dir, sizeof dir, &base);
	int dfd = open_dir_in(rootfd, dir, true);
	if (dfd < 0)
		return pd_fail(e, errno, "whiteout %s: its directory", name);
	int real = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(dfd);
	if (real < 0)
		return pd_fail(e, errno, "whiteout %s", name);
	/* an entry of the same name earlier in this layer is replaced, as a later tar entry would */
	if (unlinkat(real, base + 4, 0) < 0 && errno == EISDIR)
		unlinkat(real, base + 4, AT_REMOVEDIR);
	int rc = mknodat(real, base + 4, S_IFCHR | 0600, makedev(0, 0));
	int err = errno;
	close(real);
	return rc < 0 ? pd_fail(e, err, "whiteout %s", name) : 0;
}

static int opaque(int rootfd, const char *dir, pd_err *e)
{
	int dfd = open_dir_in(rootfd, dir, true);
	if (dfd < 0)
		return pd_fail(e, errno, "opaque directory '%s'", dir);
	int real = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(dfd);
	int rc = real < 0 ? -1 : fsetxattr(real, OPAQUE_XATTR, "y", 1, 0);
	int err = errno;
	if (real >= 0)
		close(real);
	return rc < 0 ? pd_fail(e, err, "mark '%s' opaque (%s)", dir, OPAQUE_XATTR) : 0;
}

/* Keeps the user.* xattrs but overlay's own. */
static void filter_xattrs(struct archive_entry *ent)
{
	if (archive_entry_xattr_reset(ent) == 0)
		return;
	struct kept {
		char *name;
		void *value;
		size_t size;
	} k[64];
	int n = 0;
	const char *name;
	const void *value;
	size_t size;
	while (archive_entry_xattr_next(ent, &name, &value, &size) == ARCHIVE_OK && n < 64) {
		if (strncmp(name, "user.", 5) || !strncmp(name, "user.overlay.", 13))
			continue;
		k[n].name = strdup(name);
		k[n].value = malloc(size ? size : 1);
		if (!k[n].name || !k[n].value) {
			free(k[n].name);
			free(k[n].value);
			continue;
		}
		memcpy(k[n].value, value, size);
		k[n++].size = size;
	}
	archive_entry_xattr_clear(ent);
	for (int i = 0; i < n; i++) {
		archive_entry_xattr_add_entry(ent, k[i].name, k[i].value, k[i].size);
		free(k[i].name);
		free(k[i].value);
	}
}

/* A hard link whose target an earlier layer holds: the target's bytes, found through the layers
 * below (top first; a whiteout there ends the search), become this layer's file. */
typedef struct unpack unpack;
static int take(unpack *u, uint64_t bytes, uint64_t files, const char *at, pd_err *e);

static int link_from_lower(unpack *u, struct archive *ext, struct archive_entry *ent, const char *target,
			   const char *const *lowers, pd_err *e)
{
	for (int i = 0; lowers && lowers[i]; i++) {
		struct stat st;
		int lfd = open(lowers[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (lfd < 0)
			continue;
		int pfd = open_beneath(lfd, target);
		close(lfd);
		if (pfd < 0)
			continue;
		if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(pfd);
			break; /* whited out (a 0/0 device), or not a file */
		}
		char fdp[64];
		snprintf(fdp, sizeof fdp, "/proc/self/fd/%d", pfd);
		int fd = open(fdp, O_RDONLY | O_CLOEXEC);
		close(pfd);
		if (fd < 0)
			break;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			break;
		}
		archive_entry_set_hardlink(ent, NULL);
		archive_entry_set_filetype(ent, AE_IFREG);
		archive_entry_set_perm(ent, st.st_mode & 07777);
		archive_entry_set_uid(ent, st.st_uid);
		archive_entry_set_gid(ent, st.st_gid);
		archive_entry_set_size(ent, st.st_size);
		int rc = 0;
		if (archive_write_header(ext, ent) != ARCHIVE_OK) {
			rc = pd_fail(e, EIO, "write %s: %s", target, archive_error_string(ext));
		} else {
			char buf[65536];
			ssize_t n;
			while (rc == 0 && (n = read(fd, buf, sizeof buf)) > 0)
				if (take(u, (uint64_t)n, 0, target, e) < 0)
					rc = -1;
				else if (archive_write_data(ext, buf, (size_t)n) != n)
					rc = pd_fail(e, EIO, "copy %s: %s", target, archive_error_string(ext));
			if (rc == 0 && archive_write_finish_entry(ext) != ARCHIVE_OK)
				rc = pd_fail(e, EIO, "copy %s: %s", target, archive_error_string(ext));
		}
		close(fd);
		return rc;
	}
	return pd_fail(e, ENOENT, "hard link to '%s': no such file in this layer or below", target);
}

/* ---- the budget ------------------------------------------------------------------------------ */

/* How often the disk is looked at: a statvfs per 8 MiB written costs nothing next to the writes,
 * and the floor is overshot by at most that much. An entry counts as 512 bytes (its inode and
 * name), so a layer of a million empty files is looked at too. */
#define LOOK_EVERY (8u << 20)
#define ENTRY_COST 512

int imgs_budget_disk(imgs_budget *b, uint64_t more, pd_err *e)
{
	struct statvfs sv;
	b->since_look = 0;
	if (!b->disk || statvfs(b->disk, &sv) < 0)
		return 0; /* nothing to look at: a write to a full disk still fails on its own */
	uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (avail < b->min_free + more)
		return pd_fail_as(e, ENOSPC,
				  "refused: the state directory's disk (%s) has %llu bytes free, and an import must "
				  "leave %llu (--min-free)",
				  b->disk, (unsigned long long)avail, (unsigned long long)(b->min_free + more));
	return 0;
}

/* Counts bytes of file data and entries about to be written into the layer (layer_bytes and
 * layer_files: the layer's own so far) and the image; refuses the one past a bound. */
static int budget_take(imgs_budget *b, uint64_t *layer_bytes, uint64_t *layer_files, uint64_t bytes,
		       uint64_t files, const char *want, const char *at, pd_err *e)
{
	*layer_bytes += bytes;
	*layer_files += files;
	b->bytes += bytes;
	b->files += files;
	if (*layer_bytes > b->layer_bytes)
		return pd_fail_as(e, EFBIG, "refused: layer %s unpacks to more than %llu bytes (at '%s'; --max-layer-bytes)",
				  want, (unsigned long long)b->layer_bytes, at);
	if (*layer_files > b->layer_files)
		return pd_fail_as(e, EFBIG, "refused: layer %s holds more than %llu entries (at '%s'; --max-layer-files)",
				  want, (unsigned long long)b->layer_files, at);
	if (b->bytes > b->image_bytes)
		return pd_fail_as(e, EFBIG, "refused: the image unpacks to more than %llu bytes (at '%s' in %s; "
					    "--max-image-bytes)",
				  (unsigned long long)b->image_bytes, at, want);
	if (b->files > b->image_files)
		return pd_fail_as(e, EFBIG, "refused: the image holds more than %llu entries (at '%s' in %s; "
					    "--max-image-files)",
				  (unsigned long long)b->image_files, at, want);
	b->since_look += bytes + files * ENTRY_COST;
	return b->since_look >= LOOK_EVERY ? imgs_budget_disk(b, 0, e) : 0;
}

/* ---- the unpacker ---------------------------------------------------------------------------- */

struct unpack {
	struct archive *in, *ext;
	hreader h;
	const char *dest, *want;
	int rootfd;
	char (*opq)[PD_PATH];
	size_t nopq, capopq;
	imgs_budget *b;
	uint64_t bytes, files; /* this layer's */
};

static int take(unpack *u, uint64_t bytes, uint64_t files, const char *at, pd_err *e)
{
	return budget_take(u->b, &u->bytes, &u->files, bytes, files, u->want, at, e);
}

static int copy_data(unpack *u, const char *rel, pd_err *e)
{
	const void *buf;
	size_t size;
	la_int64_t off;
	int r;
	/* counted before it is written: a bomb is stopped at its bound, not after it filled the disk */
	while ((r = archive_read_data_block(u->in, &buf, &size, &off)) == ARCHIVE_OK)
		if (take(u, size, 0, rel, e) < 0)
			return -1;
		else if (archive_write_data_block(u->ext, buf, size, off) != ARCHIVE_OK)
			return pd_fail(e, EIO, "write %s: %s", rel, archive_error_string(u->ext));
	if (r != ARCHIVE_EOF)
		return pd_fail(e, EIO, "read %s: %s", rel, archive_error_string(u->in));
	return 0;
}

static int one_entry(unpack *u, struct archive_entry *ent, const char *const *lowers, bool *used_lowers,
		     pd_err *e)
{
	/* a copy: the entry's own string is freed when its path is set below */
	char raw[PD_PATH];
	const char *name = archive_entry_pathname(ent);
	if (!name || snprintf(raw, sizeof raw, "%s", name) >= (int)sizeof raw)
		return pd_fail(e, ENAMETOOLONG, "refused: a path longer than %d bytes, or none", PD_PATH - 1);
	char rel[PD_PATH], full[PD_PATH * 2];
	if (clean_path(raw, rel, sizeof rel) < 0)
		return pd_fail(e, EPERM, "refused: path '%s' leaves the layer", raw);
	if (!rel[0])
		return 0; /* the layer's root: the directory we made */
	if (take(u, 0, 1, raw, e) < 0)
		return -1;
	char dir[PD_PATH];
	const char *base;
	split(rel, dir, sizeof dir, &base);
	if (!strcmp(base, ".wh..wh..opq")) {
		if (u->nopq == u->capopq) {
			size_t cap = u->capopq ? 2 * u->capopq : 16;
			void *q = realloc(u->opq, cap * sizeof *u->opq);
			if (!q)
				return pd_fail(e, ENOMEM, "opaque directories");
			u->opq = q;
			u->capopq = cap;
		}
		snprintf(u->opq[u->nopq++], PD_PATH, "%s", dir);
		return 0;
	}
	if (!strncmp(base, ".wh.", 4))
		return whiteout(u->rootfd, rel, raw, e);
	/* libarchive, told to unlink what is in the way, would replace a symlink on the path by a
	 * directory; a layer that writes through its own symlink is refused instead */
	if (dir[0]) {
		int dfd = open_dir_in(u->rootfd, dir, false);
		if (dfd < 0 && errno != ENOENT)
			return pd_fail(e, EPERM, "refused: '%s' goes through a symlink or a file of the layer", raw);
		if (dfd >= 0)
			close(dfd);
	}
	mode_t type = archive_entry_filetype(ent);
	if (type == AE_IFCHR || type == AE_IFBLK)
		return pd_fail(e, EPERM, "refused: device node '%s' (an image may not carry devices)", raw);
	if (type == AE_IFSOCK)
		return 0;
	if (archive_entry_uid(ent) > 65535)
		archive_entry_set_uid(ent, 65534);
	if (archive_entry_gid(ent) > 65535)
		archive_entry_set_gid(ent, 65534);
	archive_entry_acl_clear(ent);
	filter_xattrs(ent);
	snprintf(full, sizeof full, "%s/%s", u->dest, rel);
	archive_entry_set_pathname(ent, full);
	const char *hl = archive_entry_hardlink(ent);
	if (hl) {
		char hrel[PD_PATH], hfull[PD_PATH * 2];
		if (clean_path(hl, hrel, sizeof hrel) < 0 || !hrel[0])
			return pd_fail(e, EPERM, "refused: hard link '%s' to '%s' leaves the layer", raw, hl);
		struct stat st;
		snprintf(hfull, sizeof hfull, "%s/%s", u->dest, hrel);
		int t = open_beneath(u->rootfd, hrel);
		if (t < 0) {
			if (errno != ENOENT)
				return pd_fail(e, EPERM, "refused: hard link '%s' to '%s' through a symlink", raw, hl);
			*used_lowers = true;
			return link_from_lower(u, u->ext, ent, hrel, lowers, e);
		}
		int ok = fstat(t, &st) == 0 && !S_ISDIR(st.st_mode);
		close(t);
		if (!ok)
			return pd_fail(e, EPERM, "refused: hard link '%s' to a directory", raw);
		archive_entry_set_hardlink(ent, hfull);
	}
	if (archive_write_header(u->ext, ent) != ARCHIVE_OK)
		return pd_fail(e, EPERM, "refused: '%s': %s", raw, archive_error_string(u->ext));
	if (archive_entry_size(ent) > 0 && copy_data(u, raw, e) < 0)
		return -1;
	if (archive_write_finish_entry(u->ext) != ARCHIVE_OK)
		return pd_fail(e, EIO, "write %s: %s", raw, archive_error_string(u->ext));
	return 0;
}

int imgs_unpack_layer(const char *blob, const char *want, const char *dest, const char *const *lowers,
		      bool *used_lowers, imgs_budget *b, uint64_t *files, pd_err *e)
{
	unpack u = {0};
	u.dest = dest;
	u.want = want;
	u.b = b;
	u.rootfd = -1;
	*used_lowers = false;
	u.h.fd = open(blob, O_RDONLY | O_CLOEXEC);
	if (u.h.fd < 0)
		return pd_fail(e, errno, "layer blob %s", blob);
	if (pd_sha256_init(&u.h.md) < 0) {
		close(u.h.fd);
		return pd_fail(e, ENOMEM, "sha256");
	}
	int rc = -1;
	if (mkdir(dest, 0755) < 0) {
		pd_fail(e, errno, "mkdir %s", dest);
		goto out;
	}
	u.rootfd = open(dest, O_PATH | O_DIRECTORY | O_CLOEXEC);
	u.in = archive_read_new();
	u.ext = archive_write_disk_new();
	if (u.rootfd < 0 || !u.in || !u.ext) {
		pd_fail(e, errno ? errno : ENOMEM, "unpack %s", dest);
		goto out;
	}
	archive_read_support_filter_all(u.in);
	archive_read_support_format_tar(u.in);
	archive_read_support_format_gnutar(u.in);
	archive_write_disk_set_options(u.ext, ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM |
						  ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_XATTR |
						  ARCHIVE_EXTRACT_SPARSE | ARCHIVE_EXTRACT_UNLINK |
						  ARCHIVE_EXTRACT_SECURE_SYMLINKS |
						  ARCHIVE_EXTRACT_SECURE_NODOTDOT);
	if (archive_read_open(u.in, &u.h, NULL, hread, NULL) != ARCHIVE_OK) {
		pd_fail(e, EINVAL, "layer %s: %s", want, archive_error_string(u.in));
		goto check;
	}
	struct archive_entry *ent;
	int r;
	rc = 0;
	while (rc == 0 && (r = archive_read_next_header(u.in, &ent)) != ARCHIVE_EOF) {
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			rc = pd_fail(e, EINVAL, "layer %s: %s", want, archive_error_string(u.in));
			break;
		}
		rc = one_entry(&u, ent, lowers, used_lowers, e);
	}
	for (size_t i = 0; rc == 0 && i < u.nopq; i++)
		rc = opaque(u.rootfd, u.opq[i], e);
check:;
	/* a corrupted blob reports as one, whatever the tar reader made of its bytes */
	char got[PD_DIGEST_LEN];
	if (drain(&u.h, got) < 0) {
		rc = pd_fail(e, errno, "read layer %s", blob);
	} else if (strcmp(got, want)) {
		rc = pd_fail(e, EBADMSG, "refused: layer %s is corrupted: its content hashes to %s", want, got);
	} else if (rc == 0 && archive_write_close(u.ext) != ARCHIVE_OK) {
		rc = pd_fail(e, EIO, "layer %s: %s", want, archive_error_string(u.ext));
	}
out:
	if (u.in)
		archive_read_free(u.in);
	if (u.ext)
		archive_write_free(u.ext);
	if (u.rootfd >= 0)
		close(u.rootfd);
	close(u.h.fd);
	pd_sha256_free(&u.h.md);
	free(u.opq);
	*files = u.files;
	return rc;
}

/* dir/link resolved within the archive ("a/../b" allowed, leaving the root not): 0 or -1. */
static int resolve_within(const char *dir, const char *link, char *out, size_t size)
{
	if (!link || link[0] == '/' || strlen(dir) + strlen(link) + 2 > size)
		return -1;
	char buf[PD_PATH * 2];
	snprintf(buf, sizeof buf, "%s%s%s", dir, *dir ? "/" : "", link);
	size_t o = 0;
	out[0] = 0;
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			if (!o)
				return -1;
			char *slash = strrchr(out, '/');
			o = slash ? (size_t)(slash - out) : 0;
			out[o] = 0;
			continue;
		}
		o += (size_t)snprintf(out + o, size - o, "%s%s", o ? "/" : "", c);
	}
	return o ? 0 : -1;
}

/* A `docker save` archive stores a layer shared by two images once and points at it from the
 * other's directory ("<id>/layer.tar -> ../<other>/layer.tar"): such links, and tar hard links,
 * become hard links between the unpacked files once all are written. */
typedef struct alias {
	char path[PD_PATH], target[PD_PATH];
} alias;

int imgs_unpack_source(const char *tarball, const char *dest, imgs_budget *b, pd_err *e)
{
	/* the archive's copy is bounded as the image is (it holds the image's blobs), but counted
	 * apart: it is removed once the import is done */
	imgs_budget sb = *b;
	sb.bytes = sb.files = 0;
	sb.layer_bytes = sb.layer_files = UINT64_MAX;
	uint64_t nb = 0, nf = 0;
	alias *al = NULL;
	size_t nal = 0;
	struct archive *in = archive_read_new(), *ext = archive_write_disk_new();
	int rc = 0;
	if (!in || !ext) {
		rc = pd_fail(e, ENOMEM, "unpack %s", tarball);
		goto out;
	}
	if (mkdir(dest, 0700) < 0) {
		rc = pd_fail(e, errno, "mkdir %s", dest);
		goto out;
	}
	archive_read_support_filter_all(in);
	archive_read_support_format_tar(in);
	archive_read_support_format_gnutar(in);
	archive_write_disk_set_options(ext, ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
	if (archive_read_open_filename(in, tarball, 1 << 16) != ARCHIVE_OK) {
		rc = pd_fail(e, EINVAL, "%s: %s", tarball, archive_error_string(in));
		goto out;
	}
	struct archive_entry *ent;
	int r;
	while (rc == 0 && (r = archive_read_next_header(in, &ent)) != ARCHIVE_EOF) {
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			rc = pd_fail(e, EINVAL, "%s: %s", tarball, archive_error_string(in));
			break;
		}
		char rel[PD_PATH], full[PD_PATH * 2];
		char raw[PD_PATH]; /* a copy: the entry's own string is freed when its path is set */
		const char *name = archive_entry_pathname(ent);
		if (!name || snprintf(raw, sizeof raw, "%s", name) >= (int)sizeof raw ||
		    clean_path(raw, rel, sizeof rel) < 0) {
			rc = pd_fail(e, EPERM, "refused: %s: path '%s' leaves the archive or is too long", tarball,
				     name ? name : "");
			break;
		}
		mode_t type = archive_entry_filetype(ent);
		const char *hl = archive_entry_hardlink(ent);
		if (rel[0] && (hl || type == AE_IFLNK)) {
			char dir[PD_PATH], tgt[PD_PATH];
			const char *base;
			split(rel, dir, sizeof dir, &base);
			int bad = hl ? clean_path(hl, tgt, sizeof tgt) : resolve_within(dir, archive_entry_symlink(ent),
											    tgt, sizeof tgt);
			alias *q = bad ? NULL : realloc(al, (nal + 1) * sizeof *al);
			if (!q) {
				rc = pd_fail(e, EPERM, "refused: %s: link '%s' leaves the archive", tarball, raw);
				break;
			}
			al = q;
			snprintf(al[nal].path, PD_PATH, "%s", rel);
			snprintf(al[nal++].target, PD_PATH, "%s", tgt);
			continue;
		}
		/* the blobs and the few JSON files an image archive holds; nothing else is needed */
		if (!rel[0] || (type != AE_IFREG && type != AE_IFDIR))
			continue;
		if ((rc = budget_take(&sb, &nb, &nf, 0, 1, tarball, raw, e)) < 0)
			break;
		snprintf(full, sizeof full, "%s/%s", dest, rel);
		archive_entry_set_pathname(ent, full);
		archive_entry_set_perm(ent, type == AE_IFDIR ? 0700 : 0600);
		archive_entry_xattr_clear(ent);
		if (archive_write_header(ext, ent) != ARCHIVE_OK) {
			rc = pd_fail(e, EPERM, "refused: %s: '%s': %s", tarball, raw, archive_error_string(ext));
			break;
		}
		const void *buf;
		size_t size;
		la_int64_t off;
		while ((r = archive_read_data_block(in, &buf, &size, &off)) == ARCHIVE_OK)
			if ((rc = budget_take(&sb, &nb, &nf, size, 0, tarball, raw, e)) < 0 ||
			    archive_write_data_block(ext, buf, size, off) != ARCHIVE_OK)
				break;
		if (rc < 0)
			break;
		if (r != ARCHIVE_EOF || archive_write_finish_entry(ext) != ARCHIVE_OK)
			rc = pd_fail(e, EIO, "%s: '%s': %s", tarball, raw,
				     r != ARCHIVE_EOF ? archive_error_string(in) : archive_error_string(ext));
	}
	for (size_t i = 0; rc == 0 && i < nal; i++) {
		/* both are clean paths inside dest, which holds nothing but files and directories */
		char from[PD_PATH * 2], to[PD_PATH * 2];
		snprintf(from, sizeof from, "%s/%s", dest, al[i].target);
		snprintf(to, sizeof to, "%s/%s", dest, al[i].path);
		struct stat st;
		if (lstat(from, &st) < 0 || !S_ISREG(st.st_mode) || link(from, to) < 0)
			rc = pd_fail(e, errno ? errno : EINVAL, "%s: link '%s' to '%s'", tarball, al[i].path,
				     al[i].target);
	}
out:
	free(al);
	if (in)
		archive_read_free(in);
	if (ext)
		archive_write_free(ext);
	return rc;
}
