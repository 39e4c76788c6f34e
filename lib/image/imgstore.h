/* Internal interfaces of the image store (lib/image/): where things are kept, the digest helper,
 * the layer unpacker and the record reader shared by import and use. */
#ifndef PADDOCK_IMGSTORE_H
#define PADDOCK_IMGSTORE_H

#include "internal.h"

#include <jansson.h>

/* Layers an imported image may have; past PD_IMAGE_MAX_LAYERS the lowest are flattened into one
 * directory for the sandbox's stack (flatten.c). */
#define IMGS_MAX_LAYERS 128

/* Largest manifest, config or index read into memory (real ones are a few KiB). */
#define IMGS_MAX_JSON (4u << 20)

/* The store's directories, under root (<state_dir>/images/store, with no symlink in it: the
 * unpacker refuses to write through symlinks, and checks every component of the path). */
typedef struct imgs {
	char root[PD_PATH];
	int lock_fd; /* store-wide flock: shared by imports and opens, exclusive by rm and gc */
} imgs;

/* Opens (creating) the store of state_dir (NULL = the default) and takes its lock. */
int imgs_begin(imgs *st, const char *state_dir, bool exclusive, pd_err *e);
void imgs_end(imgs *st);
/* "<root>/<a><b>" into out; -1 ENAMETOOLONG. */
int imgs_path(const imgs *st, char *out, const char *a, const char *b, pd_err *e);

/* sha256 of a buffer / a file as "sha256:<hex>". */
void imgs_sha256(const void *data, size_t len, char out[PD_DIGEST_LEN]);
/* "sha256:<64 lowercase hex>": the hex part, or NULL. */
const char *imgs_digest_hex(const char *digest);
/* Reads a whole file of at most max bytes (NUL-terminated, malloc'd). */
int imgs_slurp(const char *path, size_t max, char **out, size_t *len, pd_err *e);
/* Writes data to path atomically (a temporary file renamed over it). */
int imgs_write_atomic(const char *path, const char *data, size_t len, pd_err *e);
/* Removes a tree (no symlink followed). */
int imgs_rm_rf(const char *path);
/* Bytes a tree takes on disk (hard links within it counted once). */
uint64_t imgs_disk_usage(const char *path);

/* What an import may write (pd_image_import_opts' bounds, defaults filled in) and what it wrote
 * so far. Every unpacker counts into it and refuses (EFBIG, ENOSPC) the byte or entry past a
 * bound, or the write that leaves the store's disk under min_free (looked at every few MiB). */
typedef struct imgs_budget {
	uint64_t layer_bytes, layer_files, image_bytes, image_files, min_free; /* the bounds */
	uint64_t bytes, files;   /* the image's so far */
	const char *disk;        /* a path on the store's file system (statvfs) */
	uint64_t since_look;     /* bytes written since the disk was last looked at */
} imgs_budget;
/* The disk under b->disk has less than min_free + more bytes free: -1 ENOSPC (refused). */
int imgs_budget_disk(imgs_budget *b, uint64_t more, pd_err *e);

/* Unpacks one layer blob into dest (created; must not exist), checking the blob's bytes against
 * want ("sha256:..."). lowers: the stored directories of the layers below, top first, NULL-ended,
 * where a hard link to a file of an earlier layer finds it (a copy is made: *used_lowers set).
 * Refuses device nodes and any path that leaves dest, and what exceeds the budget; *files gets
 * the layer's entries. */
int imgs_unpack_layer(const char *blob, const char *want, const char *dest, const char *const *lowers,
		      bool *used_lowers, imgs_budget *b, uint64_t *files, pd_err *e);
/* Checks a blob's bytes against want ("sha256:..."): a layer already stored is used, but the
 * source's copy must still be what its manifest says. */
int imgs_verify_blob(const char *blob, const char *want, pd_err *e);
/* Unpacks an archive of a whole image (an OCI layout or docker-archive tar) into dest: regular
 * files and directories only. */
int imgs_unpack_source(const char *tarball, const char *dest, imgs_budget *b, pd_err *e);

/* Merges layers (stored directories, bottom first) into dest, as overlayfs would show them;
 * files are hard links to the layers' own. */
int imgs_flatten(const char *const *layers, int n, const char *dest, pd_err *e);

/* githist.c: in work (made; the caller removes it), the layers (stored directories, bottom first)
 * merged, the repository at repo (absolute in the image) rebuilt with only what commit (want; NULL
 * or "": its HEAD's) reaches, as a layer whose repo/.git is opaque, written as an uncompressed tar
 * to blob with its digest. commit gets the commit kept. */
int imgs_strip_history(const char *work, const char *const *layers, int n, const char *repo, const char *want,
		       char *blob, char digest[PD_DIGEST_LEN], char commit[65], pd_err *e);

/* Loads the record of image <hex> into *im (no lease). */
int imgs_load(const imgs *st, const char *hex, pd_image *im, pd_err *e);
/* Validates a name: 1-127 characters of [A-Za-z0-9_.:/@-], not starting with '.', '/' or '-'. */
bool imgs_name_ok(const char *name);
/* The file of a name in names/ ('/' is kept as '+', which a name cannot hold). */
int imgs_name_path(const imgs *st, const char *name, char *out, pd_err *e);

#endif
