/* Importing an image: an OCI image layout (a directory, or a tar of one) or a `docker save`
 * archive becomes a record in the store, its layers unpacked once each (layer.c).
 *
 * Every byte used is checked against a digest before it counts: the manifest against the index's
 * descriptor, the config and each layer against the manifest (a docker-archive's layers against
 * the config's diff_ids, its config against its file name). A docker-archive has no manifest
 * blob, so its record is named by the digest of the OCI manifest written for it here, always the
 * same bytes for the same config and layers. The store's shared lock is held throughout, so a gc
 * cannot remove a layer this import found stored and is about to record. */
#define _GNU_SOURCE
#include "imgstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

typedef struct plan {
	char dir[PD_PATH];      /* the layout being read */
	char unpacked[PD_PATH]; /* a tarball's unpacked copy, removed at the end ("" if none) */
	const char *format;
	char name[128];         /* the source's own name for the image, if any */
	char *manifest, *config;
	size_t manifest_len, config_len;
	char manifest_digest[PD_DIGEST_LEN], config_digest[PD_DIGEST_LEN];
	int nlayers;
	char layer_digest[IMGS_MAX_LAYERS][PD_DIGEST_LEN];
	char layer_blob[IMGS_MAX_LAYERS][PD_PATH];
	/* filled while installing */
	char layer_dir[IMGS_MAX_LAYERS][PD_PATH]; /* relative to layers/ */
	char layer_abs[IMGS_MAX_LAYERS][PD_PATH];
	uint64_t layer_size[IMGS_MAX_LAYERS];
	/* what a sandbox stacks, bottom first: the layers, or a flattened one and the top ones */
	char flat_dir[PD_PATH];
	uint64_t flat_size;
	/* --strip-history: the repository and the commit its history was cut at */
	char strip_path[1100], strip_commit[65];
	/* a layer this import unpacked stays in tmp/ (layer_abs names it there) until every layer
	 * was accepted: a refused import then removes what it wrote, and no other import can have
	 * found it stored meanwhile. pending[i]: where it goes ("" once there, or when found stored) */
	char pending[IMGS_MAX_LAYERS][PD_PATH];
	uint64_t layer_files[IMGS_MAX_LAYERS];
	imgs_budget budget;
} plan;

static bool is_clean_rel(const char *p)
{
	return p && *p && p[0] != '/' && !strstr(p, "..");
}

static int rel_path(const plan *p, const char *rel, char *out, pd_err *e)
{
	if (!is_clean_rel(rel))
		return pd_fail(e, EPERM, "refused: path '%s' leaves the image", rel ? rel : "(none)");
	if (snprintf(out, PD_PATH, "%s/%s", p->dir, rel) >= PD_PATH)
		return pd_fail(e, ENAMETOOLONG, "%s", rel);
	return 0;
}

/* A blob of the OCI layout, checked against its digest. */
static int read_blob(const plan *p, const char *digest, char **out, size_t *len, pd_err *e)
{
	const char *hex = imgs_digest_hex(digest);
	if (!hex)
		return pd_fail(e, EINVAL, "refused: digest '%s' is not sha256:<64 hex digits>", digest ? digest : "");
	char rel[80], path[PD_PATH], got[PD_DIGEST_LEN];
	snprintf(rel, sizeof rel, "blobs/sha256/%s", hex);
	if (rel_path(p, rel, path, e) < 0 || imgs_slurp(path, IMGS_MAX_JSON, out, len, e) < 0)
		return -1;
	imgs_sha256(*out, *len, got);
	if (strcmp(got, digest)) {
		free(*out);
		*out = NULL;
		return pd_fail(e, EBADMSG, "refused: blob %s is corrupted: its content hashes to %s", digest, got);
	}
	return 0;
}

static const char *host_arch(void)
{
	struct utsname u;
	if (uname(&u) < 0)
		return "amd64";
	if (!strcmp(u.machine, "x86_64"))
		return "amd64";
	if (!strcmp(u.machine, "aarch64"))
		return "arm64";
	return "unknown";
}

/* The descriptor of an index to use: an image for this host's platform (or one with none). */
static json_t *choose(json_t *index)
{
	json_t *ms = json_object_get(index, "manifests"), *d;
	size_t i;
	json_array_foreach(ms, i, d) {
		json_t *pl = json_object_get(d, "platform");
		if (!pl)
			return d;
		const char *os = json_string_value(json_object_get(pl, "os"));
		const char *arch = json_string_value(json_object_get(pl, "architecture"));
		if (os && arch && !strcmp(os, "linux") && !strcmp(arch, host_arch()))
			return d;
	}
	return NULL;
}

static int parse_config_layers(plan *p, json_t *manifest, pd_err *e)
{
	json_t *cfg = json_object_get(manifest, "config"), *layers = json_object_get(manifest, "layers");
	const char *cd = json_string_value(json_object_get(cfg, "digest"));
	if (!cd || !json_is_array(layers))
		return pd_fail(e, EINVAL, "refused: the manifest has no config or layers");
	snprintf(p->config_digest, sizeof p->config_digest, "%s", cd);
	if (read_blob(p, cd, &p->config, &p->config_len, e) < 0)
		return -1;
	size_t n = json_array_size(layers), i;
	if (n == 0)
		return pd_fail(e, EINVAL, "refused: the image has no layers");
	if (n > IMGS_MAX_LAYERS)
		return pd_fail(e, E2BIG, "refused: the image has %zu layers, more than %d", n, IMGS_MAX_LAYERS);
	json_t *l;
	json_array_foreach(layers, i, l) {
		const char *d = json_string_value(json_object_get(l, "digest"));
		const char *hex = imgs_digest_hex(d);
		if (!hex)
			return pd_fail(e, EINVAL, "refused: layer %zu: digest '%s' is not sha256:<64 hex digits>",
				       i, d ? d : "");
		char rel[80];
		snprintf(p->layer_digest[i], PD_DIGEST_LEN, "%s", d);
		snprintf(rel, sizeof rel, "blobs/sha256/%s", hex);
		if (rel_path(p, rel, p->layer_blob[i], e) < 0)
			return -1;
	}
	p->nlayers = (int)n;
	return 0;
}

static json_t *load_json(const char *path, pd_err *e)
{
	char *txt;
	if (imgs_slurp(path, IMGS_MAX_JSON, &txt, NULL, e) < 0)
		return NULL;
	json_error_t je;
	json_t *j = json_loads(txt, 0, &je);
	free(txt);
	if (!j)
		pd_fail(e, EINVAL, "refused: %s: %s (line %d)", path, je.text, je.line);
	return j;
}

static int plan_oci(plan *p, pd_err *e)
{
	char path[PD_PATH];
	snprintf(path, sizeof path, "%s/index.json", p->dir);
	json_t *index = load_json(path, e);
	if (!index)
		return -1;
	int rc = -1;
	json_t *cur = index, *owned = NULL;
	/* an index may point at an index (a multi-platform image): two levels are enough */
	for (int depth = 0; depth < 3; depth++) {
		json_t *d = choose(cur);
		if (!d) {
			pd_fail(e, ENOENT, "refused: the index has no image for linux/%s", host_arch());
			goto out;
		}
		const char *ref = json_string_value(json_object_get(json_object_get(d, "annotations"),
								     "org.opencontainers.image.ref.name"));
		if (ref && !p->name[0] && imgs_name_ok(ref))
			snprintf(p->name, sizeof p->name, "%s", ref);
		const char *dg = json_string_value(json_object_get(d, "digest"));
		char *blob = NULL;
		size_t len = 0;
		if (read_blob(p, dg, &blob, &len, e) < 0)
			goto out;
		json_error_t je;
		json_t *m = json_loads(blob, 0, &je);
		if (!m) {
			free(blob);
			pd_fail(e, EINVAL, "refused: manifest %s: %s", dg, je.text);
			goto out;
		}
		json_decref(owned);
		owned = cur = m;
		if (json_object_get(m, "manifests")) {
			free(blob);
			continue;
		}
		p->manifest = blob;
		p->manifest_len = len;
		snprintf(p->manifest_digest, sizeof p->manifest_digest, "%s", dg);
		rc = parse_config_layers(p, m, e);
		goto out;
	}
	pd_fail(e, ELOOP, "refused: indexes nested too deep");
out:
	json_decref(owned);
	json_decref(index);
	return rc;
}

/* `docker save` before Docker 25: manifest.json lists the config file and the layer tars, which are
 * uncompressed, so each one's digest is its diff_id in the config. */
static int plan_docker(plan *p, pd_err *e)
{
	char path[PD_PATH];
	snprintf(path, sizeof path, "%s/manifest.json", p->dir);
	json_t *top = load_json(path, e);
	if (!top)
		return -1;
	int rc = -1;
	json_t *m = json_array_get(top, 0), *layers = json_object_get(m, "Layers");
	const char *cfg = json_string_value(json_object_get(m, "Config"));
	const char *tag = json_string_value(json_array_get(json_object_get(m, "RepoTags"), 0));
	json_t *cj = NULL, *man = NULL;
	if (!cfg || !json_is_array(layers)) {
		pd_fail(e, EINVAL, "refused: manifest.json has no Config or Layers");
		goto out;
	}
	if (tag && imgs_name_ok(tag))
		snprintf(p->name, sizeof p->name, "%s", tag);
	if (rel_path(p, cfg, path, e) < 0 || imgs_slurp(path, IMGS_MAX_JSON, &p->config, &p->config_len, e) < 0)
		goto out;
	imgs_sha256(p->config, p->config_len, p->config_digest);
	/* the config's file is named by its digest ("<hex>.json", or blobs/sha256/<hex>) */
	const char *base = strrchr(cfg, '/') ? strrchr(cfg, '/') + 1 : cfg;
	if (strspn(base, "0123456789abcdef") == 64 && strncmp(base, p->config_digest + 7, 64)) {
		pd_fail(e, EBADMSG, "refused: config %s is corrupted: its content hashes to %s", cfg,
			p->config_digest);
		goto out;
	}
	cj = json_loads(p->config, 0, NULL);
	json_t *diffs = json_object_get(json_object_get(cj, "rootfs"), "diff_ids");
	size_t n = json_array_size(layers), i;
	if (n != json_array_size(diffs) || n == 0) {
		pd_fail(e, EINVAL, "refused: %zu layer files but %zu diff_ids in the config", n,
			json_array_size(diffs));
		goto out;
	}
	if (n > IMGS_MAX_LAYERS) {
		pd_fail(e, E2BIG, "refused: the image has %zu layers, more than %d", n, IMGS_MAX_LAYERS);
		goto out;
	}
	man = json_object();
	json_object_set_new(man, "schemaVersion", json_integer(2));
	json_object_set_new(man, "mediaType", json_string("application/vnd.oci.image.manifest.v1+json"));
	json_t *c = json_object(), *ls = json_array();
	json_object_set_new(c, "mediaType", json_string("application/vnd.oci.image.config.v1+json"));
	json_object_set_new(c, "digest", json_string(p->config_digest));
	json_object_set_new(c, "size", json_integer((json_int_t)p->config_len));
	json_object_set_new(man, "config", c);
	for (i = 0; i < n; i++) {
		const char *lp = json_string_value(json_array_get(layers, i));
		const char *d = json_string_value(json_array_get(diffs, i));
		struct stat st;
		if (!imgs_digest_hex(d)) {
			pd_fail(e, EINVAL, "refused: diff_id %zu '%s' is not sha256:<64 hex digits>", i, d ? d : "");
			goto out;
		}
		if (rel_path(p, lp, p->layer_blob[i], e) < 0)
			goto out;
		if (stat(p->layer_blob[i], &st) < 0) {
			pd_fail(e, errno, "refused: layer %s", lp);
			goto out;
		}
		snprintf(p->layer_digest[i], PD_DIGEST_LEN, "%s", d);
		json_t *l = json_object();
		json_object_set_new(l, "mediaType", json_string("application/vnd.oci.image.layer.v1.tar"));
		json_object_set_new(l, "digest", json_string(d));
		json_object_set_new(l, "size", json_integer((json_int_t)st.st_size));
		json_array_append_new(ls, l);
	}
	json_object_set_new(man, "layers", ls);
	p->nlayers = (int)n;
	p->manifest = json_dumps(man, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!p->manifest) {
		pd_fail(e, ENOMEM, "manifest");
		goto out;
	}
	p->manifest_len = strlen(p->manifest);
	imgs_sha256(p->manifest, p->manifest_len, p->manifest_digest);
	rc = 0;
out:
	json_decref(man);
	json_decref(cj);
	json_decref(top);
	return rc;
}

static bool exists(const char *dir, const char *name)
{
	char p[PD_PATH + 64];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A stored layer's <dir>.size: its bytes on disk, then (written since imports are bounded) its
 * entries; files 0 when the file does not say. */
static uint64_t read_size(const char *layer_abs, uint64_t *files)
{
	char p[PD_PATH + 8], b[64];
	snprintf(p, sizeof p, "%s.size", layer_abs);
	*files = 0;
	if (pd_read_file(p, b, sizeof b) > 0) {
		char *end;
		uint64_t n = strtoull(b, &end, 10);
		if (*end == '\n')
			*files = strtoull(end + 1, NULL, 10);
		return n;
	}
	return imgs_disk_usage(layer_abs);
}

/* Layer i, from the store, from an earlier place of this image, or unpacked into tmp/ (pending
 * until commit_layers). */
static int install_layer(const imgs *st, plan *p, int i, pd_err *e)
{
	const char *hex = imgs_digest_hex(p->layer_digest[i]);
	char chain[PD_DIGEST_LEN], buf[PD_PATH * 2];
	/* what a layer that borrowed files from below is named by: its digest and those below */
	snprintf(buf, sizeof buf, "%s %s", i ? p->layer_dir[i - 1] : "", p->layer_digest[i]);
	imgs_sha256(buf, strlen(buf), chain);
	char plain_rel[80], chain_rel[80], plain_abs[PD_PATH], chain_abs[PD_PATH];
	snprintf(plain_rel, sizeof plain_rel, "sha256/%s", hex);
	snprintf(chain_rel, sizeof chain_rel, "chain/%s", chain + 7);
	if (imgs_path(st, plain_abs, "layers/", plain_rel, e) < 0 ||
	    imgs_path(st, chain_abs, "layers/", chain_rel, e) < 0)
		return -1;
	for (int j = 0; j < i; j++)
		if (p->pending[j][0] && (!strcmp(p->layer_dir[j], plain_rel) || !strcmp(p->layer_dir[j], chain_rel))) {
			/* met twice in this image (docker's empty layers): unpacked once */
			memcpy(p->layer_dir[i], p->layer_dir[j], PD_PATH);
			memcpy(p->layer_abs[i], p->layer_abs[j], PD_PATH);
			p->layer_size[i] = p->layer_size[j];
			return 0;
		}
	const char *rel = NULL, *abs = NULL;
	if (is_dir(plain_abs))
		rel = plain_rel, abs = plain_abs;
	else if (is_dir(chain_abs))
		rel = chain_rel, abs = chain_abs;
	if (rel) {
		if (imgs_verify_blob(p->layer_blob[i], p->layer_digest[i], e) < 0)
			return -1;
		snprintf(p->layer_dir[i], PD_PATH, "%s", rel);
		snprintf(p->layer_abs[i], PD_PATH, "%s", abs);
		p->layer_size[i] = read_size(abs, &p->layer_files[i]);
		/* stored already, by an import the bounds of its day let through: counted at its size */
		p->budget.bytes += p->layer_size[i];
		p->budget.files += p->layer_files[i];
		if (p->budget.bytes > p->budget.image_bytes || p->budget.files > p->budget.image_files)
			return pd_fail_as(e, EFBIG,
					  "refused: the image takes more than %llu bytes or %llu entries with layer %s "
					  "(stored already: %llu bytes; --max-image-bytes, --max-image-files)",
					  (unsigned long long)p->budget.image_bytes,
					  (unsigned long long)p->budget.image_files, p->layer_digest[i],
					  (unsigned long long)p->layer_size[i]);
		return 0;
	}
	static unsigned seq;
	char tmp[PD_PATH + 96];
	snprintf(tmp, sizeof tmp, "%s/tmp/layer.%s.%d.%u", st->root, hex, (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	if (strlen(tmp) >= PD_PATH)
		return pd_fail(e, ENAMETOOLONG, "%s", tmp);
	const char *lowers[IMGS_MAX_LAYERS + 1];
	for (int j = 0; j < i; j++)
		lowers[j] = p->layer_abs[i - 1 - j];
	lowers[i] = NULL;
	bool used = false;
	if (imgs_unpack_layer(p->layer_blob[i], p->layer_digest[i], tmp, lowers, &used, &p->budget,
			      &p->layer_files[i], e) < 0) {
		imgs_rm_rf(tmp);
		return -1;
	}
	snprintf(p->layer_dir[i], PD_PATH, "%s", used ? chain_rel : plain_rel);
	snprintf(p->layer_abs[i], PD_PATH, "%s", tmp);
	snprintf(p->pending[i], PD_PATH, "%s", used ? chain_abs : plain_abs);
	p->layer_size[i] = imgs_disk_usage(tmp);
	return 0;
}

/* Every pending layer moved into place, once the whole image was accepted. */
static int commit_layers(plan *p, pd_err *e)
{
	for (int i = 0; i < p->nlayers; i++) {
		if (!p->pending[i][0])
			continue;
		char abs[PD_PATH], tmp[PD_PATH], size[64], sp[PD_PATH + 8];
		memcpy(abs, p->pending[i], sizeof abs);
		memcpy(tmp, p->layer_abs[i], sizeof tmp);
		snprintf(size, sizeof size, "%llu\n%llu\n", (unsigned long long)p->layer_size[i],
			 (unsigned long long)p->layer_files[i]);
		snprintf(sp, sizeof sp, "%s.size", abs);
		if (imgs_write_atomic(sp, size, strlen(size), e) < 0)
			return -1;
		/* another import may have stored the same layer meanwhile: then theirs stands */
		if (rename(tmp, abs) < 0) {
			int err = errno;
			imgs_rm_rf(tmp);
			if (!is_dir(abs))
				return pd_fail(e, err, "store layer %s", abs);
		}
		for (int j = i + 1; j < p->nlayers; j++) /* the same layer met again */
			if (!strcmp(p->layer_abs[j], tmp))
				snprintf(p->layer_abs[j], PD_PATH, "%s", abs);
		snprintf(p->layer_abs[i], PD_PATH, "%s", abs);
		p->pending[i][0] = 0;
	}
	return 0;
}

/* A refused import: what it unpacked goes. */
static void drop_pending(plan *p)
{
	for (int i = 0; i < p->nlayers; i++)
		if (p->pending[i][0]) {
			imgs_rm_rf(p->layer_abs[i]);
			p->pending[i][0] = 0;
		}
}

/* More layers than a sandbox stacks: the lowest merged into layers/flat/<hash of their dirs>, so
 * that the flattened one and the top PD_IMAGE_MAX_LAYERS - 1 make the stack. */
static int install_flat(const imgs *st, plan *p, pd_err *e)
{
	int k = p->nlayers - (PD_IMAGE_MAX_LAYERS - 1);
	char *joined = calloc((size_t)k, PD_PATH + 1), h[PD_DIGEST_LEN], abs[PD_PATH];
	if (!joined)
		return pd_fail(e, ENOMEM, "flatten");
	const char *lower[IMGS_MAX_LAYERS];
	for (int i = 0; i < k; i++) {
		strcat(joined, p->layer_dir[i]);
		strcat(joined, "\n");
		lower[i] = p->layer_abs[i];
	}
	imgs_sha256(joined, strlen(joined), h);
	free(joined);
	snprintf(p->flat_dir, sizeof p->flat_dir, "flat/%s", h + 7);
	if (imgs_path(st, abs, "layers/", p->flat_dir, e) < 0)
		return -1;
	if (!is_dir(abs)) {
		static unsigned seq;
		char tmp[PD_PATH + 96], size[32], sp[PD_PATH + 8];
		snprintf(tmp, sizeof tmp, "%s/tmp/flat.%s.%d.%u", st->root, h + 7, (int)getpid(),
			 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
		if (imgs_flatten(lower, k, tmp, e) < 0) {
			imgs_rm_rf(tmp);
			return -1;
		}
		snprintf(size, sizeof size, "%llu\n", (unsigned long long)imgs_disk_usage(tmp));
		snprintf(sp, sizeof sp, "%s.size", abs);
		if (imgs_write_atomic(sp, size, strlen(size), e) < 0) {
			imgs_rm_rf(tmp);
			return -1;
		}
		if (rename(tmp, abs) < 0) {
			int err = errno;
			imgs_rm_rf(tmp);
			if (!is_dir(abs))
				return pd_fail(e, err, "store flattened layer %s", abs);
		}
	}
	uint64_t files;
	p->flat_size = read_size(abs, &files);
	return 0;
}

/* The image as imported plus one layer: its repository's history cut at the commit (githist.c).
 * The config gets the layer's diff_id and a history entry, the manifest the layer: a new image,
 * with a digest of its own, which the name points at. */
static int strip_history(const imgs *st, plan *p, const char *spec, pd_err *e)
{
	if (p->nlayers >= IMGS_MAX_LAYERS)
		return pd_fail(e, E2BIG, "strip history: the image has %d layers already", p->nlayers);
	char want[80] = "";
	snprintf(p->strip_path, sizeof p->strip_path, "%s", spec);
	char *at = strrchr(p->strip_path, '@');
	if (at) {
		snprintf(want, sizeof want, "%s", at + 1);
		*at = 0;
	}
	static unsigned seq;
	char work[PD_PATH], blob[PD_PATH + 16], digest[PD_DIGEST_LEN];
	snprintf(work, sizeof work, "%s/tmp/strip.%d.%u", st->root, (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	snprintf(blob, sizeof blob, "%s/layer.tar", work);
	const char *layers[IMGS_MAX_LAYERS];
	for (int i = 0; i < p->nlayers; i++)
		layers[i] = p->layer_abs[i];
	json_t *cfg = NULL, *man = NULL;
	int rc = imgs_strip_history(work, layers, p->nlayers, p->strip_path, want, blob, digest, p->strip_commit, e);
	if (rc < 0)
		goto out;
	struct stat bst;
	cfg = json_loads(p->config, 0, NULL);
	man = json_loads(p->manifest, 0, NULL);
	if (stat(blob, &bst) < 0 || !json_is_object(cfg) || !json_is_object(man)) {
		rc = pd_fail(e, EINVAL, "strip history: the image's config or manifest");
		goto out;
	}
	json_t *rootfs = json_object_get(cfg, "rootfs");
	if (json_is_array(json_object_get(rootfs, "diff_ids")))
		json_array_append_new(json_object_get(rootfs, "diff_ids"), json_string(digest));
	if (!json_is_array(json_object_get(cfg, "history")))
		json_object_set_new(cfg, "history", json_array());
	char by[1300];
	snprintf(by, sizeof by, "paddock image import --strip-history %s@%s", p->strip_path, p->strip_commit);
	json_array_append_new(json_object_get(cfg, "history"), json_pack("{s:s}", "created_by", by));
	char *ctext = json_dumps(cfg, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!ctext) {
		rc = pd_fail(e, ENOMEM, "strip history");
		goto out;
	}
	free(p->config);
	p->config = ctext;
	p->config_len = strlen(ctext);
	imgs_sha256(p->config, p->config_len, p->config_digest);
	json_t *c = json_object_get(man, "config");
	json_object_set_new(c, "digest", json_string(p->config_digest));
	json_object_set_new(c, "size", json_integer((json_int_t)p->config_len));
	json_array_append_new(json_object_get(man, "layers"),
			      json_pack("{s:s,s:s,s:I}", "mediaType", "application/vnd.oci.image.layer.v1.tar", "digest",
					digest, "size", (json_int_t)bst.st_size));
	char *mtext = json_dumps(man, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!mtext) {
		rc = pd_fail(e, ENOMEM, "strip history");
		goto out;
	}
	free(p->manifest);
	p->manifest = mtext;
	p->manifest_len = strlen(mtext);
	imgs_sha256(p->manifest, p->manifest_len, p->manifest_digest);
	int i = p->nlayers++;
	snprintf(p->layer_digest[i], PD_DIGEST_LEN, "%s", digest);
	snprintf(p->layer_blob[i], PD_PATH, "%s", blob);
	rc = install_layer(st, p, i, e);
out:
	json_decref(cfg);
	json_decref(man);
	imgs_rm_rf(work);
	return rc;
}

static int write_record(const imgs *st, const plan *p, const char *source, pd_err *e)
{
	char path[PD_PATH];
	/* the manifest and config as imported, for inspect */
	if (imgs_path(st, path, "blobs/sha256/", p->manifest_digest + 7, e) < 0 ||
	    imgs_write_atomic(path, p->manifest, p->manifest_len, e) < 0 ||
	    imgs_path(st, path, "blobs/sha256/", p->config_digest + 7, e) < 0 ||
	    imgs_write_atomic(path, p->config, p->config_len, e) < 0)
		return -1;
	json_t *r = json_object(), *ls = json_array(), *cfg = json_object();
	json_t *cj = json_loads(p->config, 0, NULL);
	json_t *c = json_object_get(cj, "config");
	uint64_t total = 0;
	json_object_set_new(r, "digest", json_string(p->manifest_digest));
	json_object_set_new(r, "config_digest", json_string(p->config_digest));
	json_object_set_new(r, "format", json_string(p->format));
	json_object_set_new(r, "source", json_string(source));
	json_object_set_new(r, "imported", json_integer((json_int_t)time(NULL)));
	if (p->strip_commit[0])
		json_object_set_new(r, "strip_history",
				    json_pack("{s:s,s:s}", "path", p->strip_path, "commit", p->strip_commit));
	for (int i = 0; i < p->nlayers; i++) {
		json_t *l = json_object();
		json_object_set_new(l, "digest", json_string(p->layer_digest[i]));
		json_object_set_new(l, "dir", json_string(p->layer_dir[i]));
		json_object_set_new(l, "size", json_integer((json_int_t)p->layer_size[i]));
		json_array_append_new(ls, l);
		total += p->layer_size[i];
	}
	json_t *stack = json_array();
	int first = 0;
	if (p->flat_dir[0]) {
		json_array_append_new(stack, json_string(p->flat_dir));
		first = p->nlayers - (PD_IMAGE_MAX_LAYERS - 1);
		total += p->flat_size;
	}
	for (int i = first; i < p->nlayers; i++) {
		/* overlayfs refuses a directory twice in one stack; a layer met again higher up does
		 * all the lower occurrence did (its entries, whiteouts and opaque dirs win there too) */
		bool again = false;
		for (int j = i + 1; j < p->nlayers && !again; j++)
			again = !strcmp(p->layer_dir[i], p->layer_dir[j]);
		if (!again)
			json_array_append_new(stack, json_string(p->layer_dir[i]));
	}
	json_object_set_new(r, "size", json_integer((json_int_t)total));
	json_object_set_new(r, "layers", ls);
	json_object_set_new(r, "stack", stack);
	static const char *const keep[] = {"Env", "WorkingDir", "User", "Entrypoint", "Cmd", NULL};
	for (int i = 0; keep[i]; i++)
		if (json_object_get(c, keep[i]) && !json_is_null(json_object_get(c, keep[i])))
			json_object_set(cfg, keep[i], json_object_get(c, keep[i]));
	json_object_set_new(r, "config", cfg);
	json_decref(cj);
	char *txt = json_dumps(r, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(r);
	if (!txt)
		return pd_fail(e, ENOMEM, "image record");
	int rc = imgs_path(st, path, "images/", p->manifest_digest + 7, e);
	if (rc == 0) {
		strncat(path, ".json", sizeof path - strlen(path) - 1);
		rc = imgs_write_atomic(path, txt, strlen(txt), e);
	}
	free(txt);
	return rc;
}

int pd_image_import(const char *source, const pd_image_import_opts *o, pd_image *out, pd_err *e)
{
	pd_image_import_opts none = {0};
	if (!o)
		o = &none;
	if (out) { /* closable whatever happens */
		memset(out, 0, sizeof *out);
		for (int i = 0; i < PD_IMAGE_MAX_LAYERS; i++)
			out->lease_fds[i] = -1;
	}
	if (o->name && !imgs_name_ok(o->name))
		return pd_fail(e, EINVAL, "image name '%s': 1-127 characters of A-Z a-z 0-9 _ . : / @ -, "
				       "not starting with . / -", o->name);
	struct stat sst;
	if (stat(source, &sst) < 0)
		return pd_fail(e, errno, "image source %s", source);
	imgs st;
	if (imgs_begin(&st, o->state_dir, false, e) < 0)
		return -1;
	plan *p = calloc(1, sizeof *p);
	int rc = -1;
	if (!p) {
		pd_fail(e, ENOMEM, "import");
		goto out;
	}
	imgs_budget *b = &p->budget;
	b->layer_bytes = o->max_layer_bytes ? o->max_layer_bytes : PD_IMAGE_MAX_LAYER_BYTES;
	b->layer_files = o->max_layer_files ? o->max_layer_files : PD_IMAGE_MAX_LAYER_FILES;
	b->image_bytes = o->max_image_bytes ? o->max_image_bytes : PD_IMAGE_MAX_IMAGE_BYTES;
	b->image_files = o->max_image_files ? o->max_image_files : PD_IMAGE_MAX_IMAGE_FILES;
	b->min_free = o->min_free ? o->min_free : PD_IMAGE_MIN_FREE;
	b->disk = st.root;
	/* a disk under its floor already takes nothing: not even the source's copy */
	if (imgs_budget_disk(b, 0, e) < 0)
		goto out;
	if (S_ISDIR(sst.st_mode)) {
		snprintf(p->dir, sizeof p->dir, "%s", source);
	} else {
		static unsigned seq;
		snprintf(p->unpacked, sizeof p->unpacked, "%s/tmp/src.%d.%u", st.root, (int)getpid(),
			 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
		snprintf(p->dir, sizeof p->dir, "%s", p->unpacked);
		if (imgs_unpack_source(source, p->unpacked, b, e) < 0)
			goto out;
	}
	if (exists(p->dir, "oci-layout") && exists(p->dir, "index.json")) {
		p->format = "oci";
		rc = plan_oci(p, e);
	} else if (exists(p->dir, "manifest.json")) {
		p->format = "docker-archive";
		rc = plan_docker(p, e);
	} else {
		rc = pd_fail(e, EINVAL, "refused: %s is neither an OCI image layout (oci-layout, index.json) "
					"nor a docker save archive (manifest.json)", source);
	}
	for (int i = 0; rc == 0 && i < p->nlayers; i++)
		rc = install_layer(&st, p, i, e);
	if (rc == 0 && o->strip_history)
		rc = strip_history(&st, p, o->strip_history, e);
	if (rc == 0)
		rc = commit_layers(p, e);
	if (rc == 0 && p->nlayers > PD_IMAGE_MAX_LAYERS)
		rc = install_flat(&st, p, e);
	if (rc == 0)
		rc = write_record(&st, p, source, e);
	const char *name = o->name ? o->name : p->name[0] ? p->name : NULL;
	if (rc == 0 && name) {
		char np[PD_PATH], txt[PD_DIGEST_LEN + 2];
		snprintf(txt, sizeof txt, "%s\n", p->manifest_digest);
		rc = imgs_name_path(&st, name, np, e);
		if (rc == 0)
			rc = imgs_write_atomic(np, txt, strlen(txt), e);
	}
	if (rc == 0 && out) {
		rc = imgs_load(&st, p->manifest_digest + 7, out, e);
		if (rc == 0 && name)
			snprintf(out->name, sizeof out->name, "%s", name);
	}
out:
	if (p) {
		drop_pending(p);
		if (p->unpacked[0])
			imgs_rm_rf(p->unpacked);
		free(p->manifest);
		free(p->config);
		free(p);
	}
	imgs_end(&st);
	return rc;
}
