/* imagestore.c: the image store's library calls without a sandbox (tests/api/image.t runs them
 * through the CLI and sandboxes): an OCI layout written here with libarchive is imported, opened
 * (its layers leased), listed, inspected; gc keeps leased layers and removes them once released;
 * names and digests resolve; a blob changed after its digest was taken is refused. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[] = "/tmp/paddock-unit-imagestore-XXXXXX";
static char state[PD_PATH], src[PD_PATH];

static void rm_rf(const char *path)
{
	char cmd[PD_PATH + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", path);
}

static void digest_of(const void *d, size_t n, char out[PD_DIGEST_LEN])
{
	unsigned char h[32];
	unsigned int hl = 0;
	EVP_Digest(d, n, h, &hl, EVP_sha256(), NULL);
	strcpy(out, "sha256:");
	for (int i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", h[i]);
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0)
		printf("# write %s failed\n", path);
	if (f)
		fclose(f);
}

/* Writes a blob into src/blobs/sha256 and returns its digest in out. */
static void put_blob(const void *d, size_t n, char out[PD_DIGEST_LEN])
{
	char p[PD_PATH * 2];
	digest_of(d, n, out);
	snprintf(p, sizeof p, "%s/blobs/sha256/%s", src, out + 7);
	FILE *f = fopen(p, "w");
	if (!f || fwrite(d, 1, n, f) != n)
		printf("# write %s failed\n", p);
	if (f)
		fclose(f);
}

/* A tar (gzip unless plain) of the given (name, text) files; NULL text = a directory. */
static void *layer_tar(const char *const *names, const char *const *texts, size_t *len, bool plain)
{
	size_t cap = 1 << 16;
	char *buf = malloc(cap);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	if (!plain)
		archive_write_add_filter_gzip(a);
	archive_write_open_memory(a, buf, cap, len);
	for (int i = 0; names[i]; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, names[i]);
		archive_entry_set_filetype(e, texts[i] ? AE_IFREG : AE_IFDIR);
		archive_entry_set_perm(e, texts[i] ? 0644 : 0755);
		archive_entry_set_size(e, texts[i] ? (la_int64_t)strlen(texts[i]) : 0);
		archive_write_header(a, e);
		if (texts[i])
			archive_write_data(a, texts[i], strlen(texts[i]));
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	return buf;
}

static void *layer(const char *const *names, const char *const *texts, size_t *len)
{
	return layer_tar(names, texts, len, false);
}

/* An OCI layout of two layers in src; returns the manifest digest. */
static void make_layout(char manifest_digest[PD_DIGEST_LEN], char top_digest[PD_DIGEST_LEN])
{
	char p[PD_PATH * 2], l1[PD_DIGEST_LEN], l2[PD_DIGEST_LEN], cfg[PD_DIGEST_LEN];
	snprintf(p, sizeof p, "%s/blobs/sha256", src);
	pd_mkdir_p(p, 0755);
	static const char *const n1[] = {"etc", "etc/hello", "etc/old", NULL}, *const t1[] = {NULL, "hi\n", "old\n"};
	static const char *const n2[] = {"etc/.wh.old", "etc/new", NULL}, *const t2[] = {"", "new\n"};
	size_t len;
	void *b = layer(n1, t1, &len);
	put_blob(b, len, l1);
	free(b);
	b = layer(n2, t2, &len);
	put_blob(b, len, l2);
	free(b);
	snprintf(top_digest, PD_DIGEST_LEN, "%s", l2);
	const char *c = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"A=1\"],\"WorkingDir\":\"/etc\","
			"\"User\":\"1000\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}";
	put_blob(c, strlen(c), cfg);
	char *m;
	if (asprintf(&m, "{\"schemaVersion\":2,\"config\":{\"digest\":\"%s\",\"size\":%zu},\"layers\":[{\"digest\":\"%s\"},"
		     "{\"digest\":\"%s\"}]}", cfg, strlen(c), l1, l2) < 0)
		return;
	put_blob(m, strlen(m), manifest_digest);
	free(m);
	char *idx;
	if (asprintf(&idx, "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"%s\"}]}", manifest_digest) < 0)
		return;
	snprintf(p, sizeof p, "%s/index.json", src);
	put_file(p, idx);
	free(idx);
	snprintf(p, sizeof p, "%s/oci-layout", src);
	put_file(p, "{\"imageLayoutVersion\":\"1.0.0\"}");
}

static bool exists(const char *p)
{
	return access(p, F_OK) == 0;
}

int main(void)
{
	plan(23);
	if (!mkdtemp(tmp))
		return 1;
	snprintf(state, sizeof state, "%s/state", tmp);
	snprintf(src, sizeof src, "%s/src", tmp);
	char md[PD_DIGEST_LEN], top[PD_DIGEST_LEN];
	make_layout(md, top);

	pd_err e = {0};
	pd_image_import_opts io = {.state_dir = state, .name = "unit/img:1"};
	pd_image im;
	int rc = pd_image_import(src, &io, &im, &e);
	ok(rc == 0, "import an OCI layout written with libarchive (%s)", e.msg);
	is_str(im.digest, md, "the record is named by the manifest digest");
	is_int(im.nlayers, 2, "two layers");
	char p[PD_PATH * 2];
	snprintf(p, sizeof p, "%s/etc/hello", im.layers[1]);
	ok(exists(p), "the lower layer is the second of the stack (top first)");
	snprintf(p, sizeof p, "%s/etc/old", im.layers[0]);
	struct stat st;
	ok(lstat(p, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == 0, "the top layer's whiteout is a 0/0 device");
	pd_image_close(&im);

	memset(&e, 0, sizeof e);
	ok(pd_image_open(state, "unit/img:1", &im, &e) == 0, "open by name (%s)", e.msg);
	is_str(im.name, "unit/img:1", "the name it was opened by");
	is_str(im.env[0] ? im.env[0] : "", "A=1", "the config's Env");
	is_str(im.workdir ? im.workdir : "", "/etc", "the config's WorkingDir");
	is_str(im.user ? im.user : "", "1000", "the config's User");
	ok(im.lease_fds[0] >= 0 && im.lease_fds[1] >= 0, "its layers are leased");
	pd_image same;
	ok(pd_image_open(state, md + 7, &same, &e) == 0 && !strcmp(same.digest, md) && !same.name[0],
	   "open by digest (hex, no prefix): the same image, no name");
	pd_image_close(&same);
	ok(pd_image_open(state, "no/such", &same, &e) < 0 && e.code == ENOENT, "an unknown name: ENOENT");

	pd_image_entry *l;
	size_t n;
	ok(pd_image_list(state, &l, &n, &e) == 0 && n == 1 && !strcmp(l[0].names, "unit/img:1") &&
	   l[0].nlayers == 2 && l[0].size > 0, "list: one image, its name, layers and size");
	if (n)
		pd_image_list_free(l, n);
	char *txt = pd_image_inspect(state, md, &e);
	json_t *j = txt ? json_loads(txt, 0, NULL) : NULL;
	ok(j && !strcmp(json_string_value(json_object_get(j, "digest")) ?: "", md) &&
	   json_array_size(json_object_get(j, "layers")) == 2, "inspect: the record as JSON");
	json_decref(j);
	free(txt);

	char top_dir[PD_PATH];
	snprintf(top_dir, sizeof top_dir, "%s", im.layers[0]);
	memset(&e, 0, sizeof e);
	ok(pd_image_remove(state, md, &e) == 0, "rm by digest (%s)", e.msg);
	uint64_t removed = 0, bytes = 0;
	rc = pd_image_gc(state, &removed, &bytes, &e);
	ok(rc == 0 && removed == 0 && exists(top_dir), "gc removes no leased layer (removed %llu)",
	   (unsigned long long)removed);
	pd_image_close(&im);
	rc = pd_image_gc(state, &removed, &bytes, &e);
	ok(rc == 0 && removed == 2 && !exists(top_dir), "released, gc removes both layers (removed %llu)",
	   (unsigned long long)removed);

	/* a layer's bytes changed after its digest was taken */
	snprintf(p, sizeof p, "%s/blobs/sha256/%s", src, top + 7);
	int fd = open(p, O_WRONLY);
	ok(fd >= 0 && pwrite(fd, "X", 1, 20) == 1, "corrupt the top layer's blob");
	if (fd >= 0)
		close(fd);
	memset(&e, 0, sizeof e);
	ok(pd_image_import(src, &io, NULL, &e) < 0 && e.code == EBADMSG, "its import is refused: %s", e.msg);
	ok(pd_image_list(state, &l, &n, &e) == 0 && n == 0, "and no record was written");
	pd_image_list_free(l, n);
	rc = pd_image_gc(state, &removed, &bytes, &e);
	ok(rc == 0 && removed == 0, "the good lower layer the refused import had unpacked went with it: gc finds nothing (removed %llu)",
	   (unsigned long long)removed);
	/* a layer cut in the middle of a file's data: refused, the message naming the entry (it
	 * was read after libarchive had freed the entry's path: the fuzzer found it) */
	rm_rf(src);
	make_layout(md, top);
	static char big[20000];
	memset(big, 'x', sizeof big - 1);
	static const char *const nb[] = {"big-file-entry", NULL};
	const char *tb[] = {big};
	size_t blen;
	char *braw = layer_tar(nb, tb, &blen, true), bd[PD_DIGEST_LEN];
	put_blob(braw, 6000, bd);
	free(braw);
	char *m2, mdig[PD_DIGEST_LEN], cdig[PD_DIGEST_LEN];
	const char *c2 = "{\"config\":{},\"rootfs\":{\"diff_ids\":[]}}";
	put_blob(c2, strlen(c2), cdig);
	if (asprintf(&m2, "{\"config\":{\"digest\":\"%s\"},\"layers\":[{\"digest\":\"%s\"}]}", cdig, bd) > 0) {
		put_blob(m2, strlen(m2), mdig);
		free(m2);
	}
	char *idx2;
	if (asprintf(&idx2, "{\"manifests\":[{\"digest\":\"%s\"}]}", mdig) > 0) {
		snprintf(p, sizeof p, "%s/index.json", src);
		put_file(p, idx2);
		free(idx2);
	}
	memset(&e, 0, sizeof e);
	rc = pd_image_import(src, &io, NULL, &e);
	ok(rc < 0 && strstr(e.msg, "big-file-entry"), "a layer cut inside a file: refused, naming it: %s", e.msg);
	rm_rf(tmp);
	return done();
}
