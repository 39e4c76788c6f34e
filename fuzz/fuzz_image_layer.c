/* Fuzzes the image store's layer unpacker (lib/image/layer.c) through pd_image_import: the input
 * is the bytes of a layer blob (a tar, maybe gzip or zstd), wrapped in an OCI layout whose manifest
 * names it by its true digest, imported into a store in a scratch directory.
 *
 * Beyond "no crash, no leak, no undefined behaviour":
 *  - nothing is written outside the store: the scratch directory holds only the layout and the
 *    state directory, and the store's layers/sha256 only the layer directories and their files;
 *  - a refusal leaves no record and nothing in the store's tmp/;
 *  - an accepted layer opens (pd_image_open) with one layer, and gc removes it after rm. */
#include "fuzz_common.h"

#include <dirent.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[] = "/tmp/paddock-fuzz-image-XXXXXX";
static char src[256], state[256];

static void digest(const void *d, size_t n, char out[72])
{
	unsigned char h[32];
	unsigned int hl = 0;
	EVP_Digest(d, n, h, &hl, EVP_sha256(), NULL);
	strcpy(out, "sha256:");
	for (int i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", h[i]);
}

static void put(const char *name, const void *d, size_t n)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", src, name);
	FILE *f = fopen(p, "w");
	FUZZ_CHECK(f && fwrite(d, 1, n, f) == n, "write %s", p);
	fclose(f);
}

static void put_blob(const void *d, size_t n, char out[72])
{
	char name[128];
	digest(d, n, out);
	snprintf(name, sizeof name, "blobs/sha256/%s", out + 7);
	put(name, d, n);
}

/* Entries of dir other than those allowed (a NULL-ended list; "*" = a name of 64 hex digits). */
static int strays(const char *dir, const char *const *allowed)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		bool ok = false;
		for (int i = 0; allowed[i] && !ok; i++)
			ok = !strcmp(allowed[i], "*") ? strspn(de->d_name, "0123456789abcdef") == 64 :
						      !strcmp(allowed[i], de->d_name);
		if (!ok) {
			fprintf(stderr, "stray %s/%s\n", dir, de->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!src[0]) {
		FUZZ_CHECK(mkdtemp(root), "mkdtemp");
		snprintf(src, sizeof src, "%s/src", root);
		snprintf(state, sizeof state, "%s/state", root);
		char p[300];
		snprintf(p, sizeof p, "%s/blobs", src);
		FUZZ_CHECK(mkdir(src, 0755) == 0 && mkdir(p, 0755) == 0, "mkdir %s", p);
		snprintf(p, sizeof p, "%s/blobs/sha256", src);
		FUZZ_CHECK(mkdir(p, 0755) == 0, "mkdir %s", p);
		put("oci-layout", "{}", 2);
	}
	char layer[72], cfg[72], man[72];
	put_blob(data, size, layer);
	const char *c = "{\"config\":{},\"rootfs\":{\"diff_ids\":[]}}";
	put_blob(c, strlen(c), cfg);
	char m[512], idx[256];
	snprintf(m, sizeof m, "{\"schemaVersion\":2,\"config\":{\"digest\":\"%s\"},\"layers\":[{\"digest\":\"%s\"}]}",
		 cfg, layer);
	put_blob(m, strlen(m), man);
	snprintf(idx, sizeof idx, "{\"manifests\":[{\"digest\":\"%s\"}]}", man);
	put("index.json", idx, strlen(idx));

	pd_err e = {0};
	/* small bounds, so that inputs reach the refusals of a bomb (and their clean-up) too */
	pd_image_import_opts o = {.state_dir = state, .name = "fz", .max_layer_bytes = 16 << 20, .max_layer_files = 4096};
	int rc = pd_image_import(src, &o, NULL, &e);
	static const char *const top[] = {"src", "state", NULL};
	static const char *const st[] = {"images", "stage", NULL};
	char p[300];
	FUZZ_CHECK(strays(root, top) == 0, "a file outside the store");
	FUZZ_CHECK(strays(state, st) == 0, "a file in the state directory");
	snprintf(p, sizeof p, "%s/images/store/layers/sha256", state);
	DIR *d = opendir(p);
	struct dirent *de;
	while (d && (de = readdir(d)))
		FUZZ_CHECK(de->d_name[0] == '.' || strspn(de->d_name, "0123456789abcdef") == 64,
			   "stray layer entry %s", de->d_name);
	if (d)
		closedir(d);
	snprintf(p, sizeof p, "%s/images/store/tmp", state);
	static const char *const none[] = {NULL};
	FUZZ_CHECK(strays(p, none) == 0, "leftovers in tmp/ (import %s)", rc ? e.msg : "ok");
	if (rc == 0) {
		pd_image im;
		FUZZ_CHECK(pd_image_open(state, "fz", &im, &e) == 0 && im.nlayers == 1, "open: %s", e.msg);
		pd_image_close(&im);
		FUZZ_CHECK(pd_image_remove(state, "fz", &e) == 0, "rm: %s", e.msg);
	} else {
		FUZZ_CHECK(e.msg[0], "a refusal without a message");
	}
	uint64_t n, b;
	FUZZ_CHECK(pd_image_gc(state, &n, &b, &e) == 0, "gc: %s", e.msg);
	snprintf(p, sizeof p, "%s/blobs/sha256/%s", src, layer + 7);
	unlink(p);
	return 0;
}
