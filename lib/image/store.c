/* The image store: records, names, leases, listing, removal and garbage collection.
 *
 * Layout under <state_dir>/images/store:
 *   lock                     flock: shared by imports and opens, exclusive by rm and gc, so gc
 *                            never sees a layer an import has unpacked but not yet recorded
 *   layers/sha256/<hex>/     a layer, named by its blob's digest (one copy however many images)
 *   layers/sha256/<hex>.lock a process using the layer holds a shared flock on it (its lease)
 *   layers/sha256/<hex>.size its bytes on disk
 *   layers/chain/<hex>/      a layer that needed files of the layers below it (a hard link to an
 *                            earlier layer's file): named by the digests of its whole chain
 *   blobs/sha256/<hex>       manifests and configs, as imported
 *   images/<hex>.json        the record of the image whose manifest digest is sha256:<hex>
 *   names/<name>             the digest a name points at ('/' in a name kept as '+')
 *   layers/flat/<hex>/       the lowest layers of an image with more than a sandbox stacks,
 *                            merged (flatten.c): named by the hash of their directories
 *   tmp/                     imports under way; what is left there after a crash, gc removes
 * The store is 0700: layers keep the owners and modes of the image (a setuid file owned by root,
 * say), which must be reachable only through a sandbox's nosuid, id-mapped mount. */
#define _GNU_SOURCE
#include "imgstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int imgs_begin(imgs *st, const char *state_dir, bool exclusive, pd_err *e)
{
	const char *sd = state_dir ? state_dir : getenv("PADDOCK_STATE_DIR");
	char want[PD_PATH];
	if (snprintf(want, sizeof want, "%s/images/store", sd && *sd ? sd : "/var/lib/paddock") >=
	    (int)sizeof want)
		return pd_fail(e, ENAMETOOLONG, "state directory %s", sd);
	static const char *const sub[] = {"layers/sha256", "layers/chain", "layers/flat", "blobs/sha256", "images",
					  "names", "tmp", NULL};
	char p[PD_PATH + 32];
	/* the state directory and images/ as the context makes them; the store alone is private */
	char *slash = strrchr(want, '/');
	*slash = 0;
	int made = pd_mkdir_p(want, 0755);
	*slash = '/';
	if (made < 0 || (mkdir(want, 0700) < 0 && errno != EEXIST))
		return pd_fail(e, errno, "image store %s", want);
	/* no symlink may lie on the path the unpacker writes through */
	char *real = realpath(want, NULL);
	if (!real)
		return pd_fail(e, errno, "image store %s", want);
	int toolong = snprintf(st->root, sizeof st->root, "%s", real) >= (int)sizeof st->root - 160;
	free(real);
	if (toolong)
		return pd_fail(e, ENAMETOOLONG, "image store %s", want);
	chmod(st->root, 0700);
	for (int i = 0; sub[i]; i++) {
		snprintf(p, sizeof p, "%s/%s", st->root, sub[i]);
		if (pd_mkdir_p(p, 0700) < 0)
			return pd_fail(e, errno, "image store %s", p);
	}
	snprintf(p, sizeof p, "%s/lock", st->root);
	st->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (st->lock_fd < 0)
		return pd_fail(e, errno, "image store lock %s", p);
	int r;
	do
		r = flock(st->lock_fd, exclusive ? LOCK_EX : LOCK_SH);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		int err = errno;
		close(st->lock_fd);
		return pd_fail(e, err, "image store lock %s", p);
	}
	return 0;
}

void imgs_end(imgs *st)
{
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	st->lock_fd = -1;
}

int imgs_path(const imgs *st, char *out, const char *a, const char *b, pd_err *e)
{
	if (snprintf(out, PD_PATH, "%s/%s%s", st->root, a, b ? b : "") >= PD_PATH)
		return pd_fail(e, ENAMETOOLONG, "image store path %s%s", a, b ? b : "");
	return 0;
}

const char *imgs_digest_hex(const char *d)
{
	if (!d || strncmp(d, "sha256:", 7) || strlen(d + 7) != 64 ||
	    strspn(d + 7, "0123456789abcdef") != 64)
		return NULL;
	return d + 7;
}

int imgs_slurp(const char *path, size_t max, char **out, size_t *len, pd_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return pd_fail(e, errno, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		close(fd);
		return pd_fail(e, EFBIG, "%s: not a regular file of at most %zu bytes", path, max);
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	ssize_t n = 0;
	while (buf && got < (size_t)st.st_size && (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (!buf || n < 0 || got != (size_t)st.st_size) {
		free(buf);
		return pd_fail(e, buf ? EIO : ENOMEM, "read %s", path);
	}
	buf[got] = 0;
	*out = buf;
	if (len)
		*len = got;
	return 0;
}

int imgs_write_atomic(const char *path, const char *data, size_t len, pd_err *e)
{
	char tmp[PD_PATH + 32];
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return pd_fail(e, errno, "write %s", tmp);
	size_t off = 0;
	ssize_t n = 0;
	while (off < len && (n = write(fd, data + off, len - off)) > 0)
		off += (size_t)n;
	int err = off == len ? 0 : n < 0 ? errno : EIO;
	if (close(fd) < 0 && !err)
		err = errno;
	if (!err && rename(tmp, path) < 0)
		err = errno;
	if (err) {
		unlink(tmp);
		return pd_fail(e, err, "write %s", path);
	}
	return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)f;
	return (flag == FTW_DP ? rmdir(p) : unlink(p)) < 0 && errno != ENOENT ? -1 : 0;
}

int imgs_rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static uint64_t du_total;
static pthread_mutex_t du_lock = PTHREAD_MUTEX_INITIALIZER;

static int du_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)p;
	(void)flag;
	(void)f;
	/* a file linked n times within the tree is counted an nth at each of its names */
	du_total += (uint64_t)sb->st_blocks * 512 / (sb->st_nlink && !S_ISDIR(sb->st_mode) ? sb->st_nlink : 1);
	return 0;
}

uint64_t imgs_disk_usage(const char *path)
{
	pthread_mutex_lock(&du_lock); /* nftw has no argument for its callback */
	du_total = 0;
	nftw(path, du_one, 32, FTW_PHYS | FTW_MOUNT);
	uint64_t t = du_total;
	pthread_mutex_unlock(&du_lock);
	return t;
}

bool imgs_name_ok(const char *n)
{
	size_t len = strlen(n);
	return len && len < 128 && n[0] != '.' && n[0] != '/' && n[0] != '-' && !strstr(n, "..") &&
	       strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/@-") == len;
}

int imgs_name_path(const imgs *st, const char *name, char *out, pd_err *e)
{
	if (!imgs_name_ok(name))
		return pd_fail(e, EINVAL, "image name '%s': 1-127 characters of A-Z a-z 0-9 _ . : / @ -, "
				       "not starting with . / -", name);
	char enc[128];
	snprintf(enc, sizeof enc, "%s", name);
	for (char *c = enc; *c; c++)
		if (*c == '/')
			*c = '+';
	return imgs_path(st, out, "names/", enc, e);
}

void pd_image_note(pd_result *r, const pd_sandbox_opts *o, const char *default_id)
{
	const pd_image *im = o->imported;
	if (im) {
		snprintf(r->image_name, sizeof r->image_name, "%s", im->name);
		snprintf(r->image_digest, sizeof r->image_digest, "%s", im->digest);
		snprintf(r->image_config_digest, sizeof r->image_config_digest, "%s", im->config_digest);
	} else {
		snprintf(r->image_name, sizeof r->image_name, "%s",
			 o->image ? o->image : o->layers && o->layers[0] ? o->layers[0] : "host");
		/* the host image has an id of its own; another directory has none */
		if (!o->image && !(o->layers && o->layers[0]) && default_id)
			snprintf(r->image_digest, sizeof r->image_digest, "%s", default_id);
	}
}

bool pd_image_is_ref(const char *ref)
{
	return ref && *ref && ref[0] != '/' && strncmp(ref, "./", 2) && strncmp(ref, "../", 3) &&
	       strcmp(ref, ".") && strcmp(ref, "..");
}

/* A reference by digest rather than by name: "sha256:..." or 12 to 64 hex digits. */
static bool by_digest(const char *ref)
{
	size_t n = strlen(ref);
	return !strncmp(ref, "sha256:", 7) || (n >= 12 && n <= 64 && strspn(ref, "0123456789abcdef") == n);
}

/* The hex digest a reference means: a name, "sha256:<hex>", or a unique hex prefix (>= 12). */
static int resolve(const imgs *st, const char *ref, char hex[65], pd_err *e)
{
	char p[PD_PATH];
	if (!strncmp(ref, "sha256:", 7)) {
		const char *h = imgs_digest_hex(ref);
		if (!h)
			return pd_fail(e, EINVAL, "image digest '%s': want sha256:<64 hex digits>", ref);
		snprintf(hex, 65, "%s", h);
	} else if (by_digest(ref)) {
		if (imgs_path(st, p, "images", NULL, e) < 0)
			return -1;
		DIR *d = opendir(p);
		if (!d)
			return pd_fail(e, errno, "%s", p);
		int found = 0;
		struct dirent *de;
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, ref, strlen(ref)) && strlen(de->d_name) == 69 &&
			    !strcmp(de->d_name + 64, ".json")) {
				found++;
				snprintf(hex, 65, "%.64s", de->d_name);
			}
		closedir(d);
		if (found != 1)
			return pd_fail(e, found ? EINVAL : ENOENT, "image '%s': %s", ref,
				       found ? "ambiguous digest prefix" : "no such image in the store");
		return 0;
	} else {
		char *txt;
		if (imgs_name_path(st, ref, p, e) < 0)
			return -1;
		if (imgs_slurp(p, 256, &txt, NULL, e) < 0)
			return pd_fail(e, ENOENT, "image '%s': no such image in the store (paddock image ls)", ref);
		txt[strcspn(txt, "\n")] = 0;
		const char *h = imgs_digest_hex(txt);
		if (h)
			snprintf(hex, 65, "%s", h);
		free(txt);
		if (!h)
			return pd_fail(e, EINVAL, "image name '%s': its file %s is damaged", ref, p);
	}
	if (imgs_path(st, p, "images/", hex, e) < 0 || strlen(p) + 6 > sizeof p)
		return -1;
	strcat(p, ".json");
	if (access(p, F_OK) < 0)
		return pd_fail(e, ENOENT, "image '%s': no such image in the store (paddock image ls)", ref);
	return 0;
}

static json_t *load_record(const imgs *st, const char *hex, pd_err *e)
{
	char p[PD_PATH];
	if (imgs_path(st, p, "images/", hex, e) < 0)
		return NULL;
	strncat(p, ".json", sizeof p - strlen(p) - 1);
	char *txt;
	if (imgs_slurp(p, IMGS_MAX_JSON, &txt, NULL, e) < 0)
		return NULL;
	json_error_t je;
	json_t *j = json_loads(txt, 0, &je);
	free(txt);
	if (!json_is_object(j)) {
		json_decref(j);
		pd_fail(e, EINVAL, "image record %s: %s", p, je.text);
		return NULL;
	}
	return j;
}

static char *dup_or_null(json_t *v)
{
	return json_is_string(v) && *json_string_value(v) ? strdup(json_string_value(v)) : NULL;
}

int imgs_load(const imgs *st, const char *hex, pd_image *im, pd_err *e)
{
	memset(im, 0, sizeof *im);
	for (int i = 0; i < PD_IMAGE_MAX_LAYERS; i++)
		im->lease_fds[i] = -1;
	json_t *j = load_record(st, hex, e);
	if (!j)
		return -1;
	snprintf(im->digest, sizeof im->digest, "sha256:%s", hex);
	snprintf(im->config_digest, sizeof im->config_digest, "%s",
		 json_string_value(json_object_get(j, "config_digest")) ?: "");
	/* "stack": what a sandbox stacks, bottom first (the layers, or a flattened one and the top) */
	json_t *layers = json_object_get(j, "stack"), *cfg = json_object_get(j, "config");
	size_t n = json_array_size(layers);
	int rc = 0;
	if (n > PD_IMAGE_MAX_LAYERS) {
		rc = pd_fail(e, E2BIG, "image sha256:%s: %zu layers", hex, n);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		/* the record lists them bottom first; a sandbox stacks them top first */
		const char *dir = json_string_value(json_array_get(layers, i));
		char p[PD_PATH];
		if (!dir || strstr(dir, "..") || imgs_path(st, p, "layers/", dir, e) < 0) {
			rc = pd_fail(e, EINVAL, "image sha256:%s: layer %zu", hex, i);
			goto out;
		}
		if (!(im->layers[n - 1 - i] = strdup(p))) {
			rc = pd_fail(e, ENOMEM, "image");
			goto out;
		}
	}
	im->nlayers = (int)n;
	json_t *env = json_object_get(cfg, "Env");
	im->env = calloc(json_array_size(env) + 1, sizeof *im->env);
	if (!im->env) {
		rc = pd_fail(e, ENOMEM, "image");
		goto out;
	}
	size_t k = 0, i;
	json_t *v;
	json_array_foreach(env, i, v) if (json_is_string(v) && strchr(json_string_value(v), '=') &&
					  json_string_value(v)[0] != '=')
		im->env[k++] = strdup(json_string_value(v));
	im->workdir = dup_or_null(json_object_get(cfg, "WorkingDir"));
	im->user = dup_or_null(json_object_get(cfg, "User"));
	json_t *ep = json_object_get(cfg, "Entrypoint"), *cmd = json_object_get(cfg, "Cmd");
	im->command = calloc(json_array_size(ep) + json_array_size(cmd) + 1, sizeof *im->command);
	if (!im->command) {
		rc = pd_fail(e, ENOMEM, "image");
		goto out;
	}
	k = 0;
	json_t *parts[] = {ep, cmd};
	for (int p = 0; p < 2; p++)
		json_array_foreach(parts[p], i, v) if (json_is_string(v) && (im->command[k] = strdup(json_string_value(v))))
			k++;
out:
	json_decref(j);
	if (rc < 0)
		pd_image_close(im);
	return rc;
}

bool pd_image_ref_is_digest(const char *ref)
{
	return ref && by_digest(ref);
}

int pd_image_resolve(const char *state_dir, const char *ref, char digest[PD_DIGEST_LEN], pd_err *e)
{
	imgs st;
	if (!pd_image_is_ref(ref))
		return pd_fail(e, EINVAL, "image '%s': not an imported image's name or digest", ref ? ref : "");
	if (imgs_begin(&st, state_dir, false, e) < 0)
		return -1;
	char hex[65];
	int rc = resolve(&st, ref, hex, e);
	imgs_end(&st);
	if (rc == 0)
		snprintf(digest, PD_DIGEST_LEN, "sha256:%s", hex);
	return rc;
}

int pd_image_open(const char *state_dir, const char *ref, pd_image *im, pd_err *e)
{
	imgs st;
	memset(im, 0, sizeof *im);
	for (int i = 0; i < PD_IMAGE_MAX_LAYERS; i++)
		im->lease_fds[i] = -1;
	if (imgs_begin(&st, state_dir, false, e) < 0)
		return -1;
	char hex[65];
	int rc = resolve(&st, ref, hex, e);
	if (rc == 0)
		rc = imgs_load(&st, hex, im, e);
	/* the leases are taken under the store's lock, so gc cannot remove a layer in between */
	for (int i = 0; rc == 0 && i < im->nlayers; i++) {
		char p[PD_PATH + 8];
		snprintf(p, sizeof p, "%s.lock", im->layers[i]);
		im->lease_fds[i] = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (im->lease_fds[i] < 0 || flock(im->lease_fds[i], LOCK_SH) < 0)
			rc = pd_fail(e, errno, "lease on layer %s", im->layers[i]);
		else if (access(im->layers[i], F_OK) < 0)
			rc = pd_fail(e, errno, "image '%s': layer %s", ref, im->layers[i]);
	}
	imgs_end(&st);
	if (rc < 0) {
		pd_image_close(im);
		return -1;
	}
	if (by_digest(ref))
		im->name[0] = 0;
	else
		snprintf(im->name, sizeof im->name, "%s", ref);
	return 0;
}

void pd_image_close(pd_image *im)
{
	for (int i = 0; i < PD_IMAGE_MAX_LAYERS; i++) {
		free(im->layers[i]);
		im->layers[i] = NULL;
		if (im->lease_fds[i] >= 0)
			close(im->lease_fds[i]);
		im->lease_fds[i] = -1;
	}
	for (size_t i = 0; im->env && im->env[i]; i++)
		free(im->env[i]);
	free(im->env);
	for (size_t i = 0; im->command && im->command[i]; i++)
		free(im->command[i]);
	free(im->command);
	im->command = NULL;
	free(im->workdir);
	free(im->user);
	im->env = NULL;
	im->workdir = im->user = NULL;
	im->nlayers = 0;
}

/* Every name, as (name, hex) pairs: calls f for each. */
static void each_name(const imgs *st, void (*f)(const char *name, const char *hex, void *arg), void *arg)
{
	char p[PD_PATH];
	if (imgs_path(st, p, "names", NULL, NULL) < 0)
		return;
	DIR *d = opendir(p);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp"))
			continue;
		char f_path[PD_PATH + 256], *txt, name[256];
		snprintf(f_path, sizeof f_path, "%s/%s", p, de->d_name);
		if (imgs_slurp(f_path, 256, &txt, NULL, NULL) < 0)
			continue;
		txt[strcspn(txt, "\n")] = 0;
		snprintf(name, sizeof name, "%s", de->d_name);
		for (char *c = name; *c; c++)
			if (*c == '+')
				*c = '/';
		if (imgs_digest_hex(txt))
			f(name, imgs_digest_hex(txt), arg);
		free(txt);
	}
	closedir(d);
}

typedef struct names_of {
	const char *hex;
	char *list;
} names_of;

static void add_name(const char *name, const char *hex, void *arg)
{
	names_of *n = arg;
	if (strcmp(hex, n->hex))
		return;
	char *s;
	if (asprintf(&s, "%s%s%s", n->list ? n->list : "", n->list && *n->list ? " " : "", name) < 0)
		return;
	free(n->list);
	n->list = s;
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of an image, sorted, space-separated (malloc'd). */
static char *names_for(const imgs *st, const char *hex)
{
	names_of n = {hex, NULL};
	each_name(st, add_name, &n);
	if (!n.list)
		return strdup("");
	size_t need = strlen(n.list) + 1;
	char *w[256];
	size_t k = 0;
	for (char *s = NULL, *t = strtok_r(n.list, " ", &s); t && k < 256; t = strtok_r(NULL, " ", &s))
		w[k++] = t;
	qsort(w, k, sizeof *w, by_str);
	char *out = malloc(need);
	if (out) {
		out[0] = 0;
		for (size_t i = 0; i < k; i++) {
			if (i)
				strcat(out, " ");
			strcat(out, w[i]);
		}
	}
	free(n.list);
	return out;
}

static int by_time(const void *a, const void *b)
{
	const pd_image_entry *x = a, *y = b;
	return x->imported < y->imported ? -1 : x->imported > y->imported ? 1 : strcmp(x->digest, y->digest);
}

int pd_image_list(const char *state_dir, pd_image_entry **out, size_t *n, pd_err *e)
{
	imgs st;
	*out = NULL;
	*n = 0;
	if (imgs_begin(&st, state_dir, false, e) < 0)
		return -1;
	char p[PD_PATH];
	DIR *d = imgs_path(&st, p, "images", NULL, e) < 0 ? NULL : opendir(p);
	if (!d) {
		imgs_end(&st);
		return pd_fail(e, errno, "%s", p);
	}
	size_t cap = 0;
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		if (strlen(de->d_name) != 69 || strcmp(de->d_name + 64, ".json"))
			continue;
		char hex[65];
		snprintf(hex, sizeof hex, "%.64s", de->d_name);
		json_t *j = load_record(&st, hex, NULL);
		if (!j)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			pd_image_entry *q = realloc(*out, cap * sizeof **out);
			if (!q) {
				json_decref(j);
				rc = pd_fail(e, ENOMEM, "image list");
				break;
			}
			*out = q;
		}
		pd_image_entry *x = &(*out)[(*n)++];
		memset(x, 0, sizeof *x);
		snprintf(x->digest, sizeof x->digest, "sha256:%s", hex);
		snprintf(x->config_digest, sizeof x->config_digest, "%s",
			 json_string_value(json_object_get(j, "config_digest")) ?: "");
		x->nlayers = (int)json_array_size(json_object_get(j, "layers"));
		x->size = (uint64_t)json_integer_value(json_object_get(j, "size"));
		x->imported = (int64_t)json_integer_value(json_object_get(j, "imported"));
		x->names = names_for(&st, hex);
		json_decref(j);
	}
	closedir(d);
	imgs_end(&st);
	if (*n)
		qsort(*out, *n, sizeof **out, by_time);
	return rc;
}

void pd_image_list_free(pd_image_entry *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i].names);
	free(l);
}

char *pd_image_inspect(const char *state_dir, const char *ref, pd_err *e)
{
	imgs st;
	if (imgs_begin(&st, state_dir, false, e) < 0)
		return NULL;
	char hex[65], *txt = NULL;
	json_t *j = resolve(&st, ref, hex, e) < 0 ? NULL : load_record(&st, hex, e);
	if (j) {
		char *names = names_for(&st, hex);
		json_t *arr = json_array();
		for (char *save = NULL, *t = strtok_r(names, " ", &save); t; t = strtok_r(NULL, " ", &save))
			json_array_append_new(arr, json_string(t));
		free(names);
		json_object_set_new(j, "names", arr);
		/* the manifest as imported, for what the record does not repeat */
		char p[PD_PATH], *m;
		if (imgs_path(&st, p, "blobs/sha256/", hex, e) == 0 && imgs_slurp(p, IMGS_MAX_JSON, &m, NULL, NULL) == 0) {
			json_t *mj = json_loads(m, 0, NULL);
			if (mj)
				json_object_set_new(j, "manifest", mj);
			free(m);
		}
		txt = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		json_decref(j);
		if (!txt)
			pd_fail(e, ENOMEM, "inspect");
	}
	imgs_end(&st);
	return txt;
}

typedef struct drop_names {
	const imgs *st;
	const char *hex;
	int left;
} drop_names;

static void drop_name(const char *name, const char *hex, void *arg)
{
	drop_names *d = arg;
	char p[PD_PATH];
	if (strcmp(hex, d->hex))
		return;
	if (d->st && imgs_name_path(d->st, name, p, NULL) == 0)
		unlink(p);
	else
		d->left++;
}

int pd_image_remove(const char *state_dir, const char *ref, pd_err *e)
{
	imgs st;
	if (imgs_begin(&st, state_dir, true, e) < 0)
		return -1;
	char hex[65], p[PD_PATH];
	int rc = resolve(&st, ref, hex, e);
	bool by_name = !by_digest(ref);
	if (rc == 0 && by_name) {
		if (imgs_name_path(&st, ref, p, e) < 0 || unlink(p) < 0)
			rc = pd_fail(e, errno, "remove name %s", ref);
		drop_names count = {NULL, hex, 0};
		each_name(&st, drop_name, &count);
		if (count.left) {
			imgs_end(&st);
			return rc; /* other names still point at it */
		}
	} else if (rc == 0) {
		drop_names all = {&st, hex, 0};
		each_name(&st, drop_name, &all);
	}
	if (rc == 0 && imgs_path(&st, p, "images/", hex, e) == 0) {
		strncat(p, ".json", sizeof p - strlen(p) - 1);
		if (unlink(p) < 0)
			rc = pd_fail(e, errno, "remove %s", p);
	}
	imgs_end(&st);
	return rc;
}

/* gc's set of what the records refer to: layer directories and blob hexes, as strings. */
typedef struct refset {
	char **v;
	size_t n, cap;
} refset;

static void refs_add(refset *r, const char *s)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		char **q = realloc(r->v, cap * sizeof *q);
		if (!q)
			return;
		r->v = q;
		r->cap = cap;
	}
	if ((r->v[r->n] = strdup(s)))
		r->n++;
}

static bool refs_has(const refset *r, const char *s)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->v[i], s))
			return true;
	return false;
}

/* Removes the unreferenced, unleased entries of one layers/ or blobs/ directory. */
static void sweep(const imgs *st, const char *sub, const refset *keep, bool layers, uint64_t *removed,
		  uint64_t *freed)
{
	char dir[PD_PATH];
	if (imgs_path(st, dir, sub, NULL, NULL) < 0)
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) != 64 || strspn(de->d_name, "0123456789abcdef") != 64)
			continue;
		char key[PD_PATH], p[PD_PATH + 80];
		snprintf(key, sizeof key, "%s/%s", layers ? sub + 7 : "", de->d_name);
		if (refs_has(keep, layers ? key : de->d_name))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		if (!layers) {
			if (unlink(p) == 0)
				(*removed)++;
			continue;
		}
		char lock[PD_PATH + 96];
		snprintf(lock, sizeof lock, "%s.lock", p);
		int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (fd >= 0)
				close(fd);
			continue; /* a sandbox still uses it */
		}
		/* out of sight first, so no one finds it half removed */
		char gone[PD_PATH + 96];
		snprintf(gone, sizeof gone, "%s/tmp/gc.%s.%d", st->root, de->d_name, (int)getpid());
		uint64_t bytes = imgs_disk_usage(p);
		if (rename(p, gone) == 0 && imgs_rm_rf(gone) == 0) {
			(*removed)++;
			*freed += bytes;
			snprintf(lock, sizeof lock, "%s.size", p);
			unlink(lock);
			snprintf(lock, sizeof lock, "%s.lock", p);
			unlink(lock);
		}
		close(fd);
	}
	closedir(d);
}

int pd_image_gc(const char *state_dir, uint64_t *layers_removed, uint64_t *bytes_freed, pd_err *e)
{
	imgs st;
	*layers_removed = *bytes_freed = 0;
	if (imgs_begin(&st, state_dir, true, e) < 0)
		return -1;
	refset layers = {0}, blobs = {0};
	char p[PD_PATH];
	int rc = imgs_path(&st, p, "images", NULL, e);
	DIR *d = rc < 0 ? NULL : opendir(p);
	if (!d)
		rc = pd_fail(e, errno, "%s", p);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strlen(de->d_name) != 69 || strcmp(de->d_name + 64, ".json"))
			continue;
		char hex[65];
		snprintf(hex, sizeof hex, "%.64s", de->d_name);
		json_t *j = load_record(&st, hex, NULL);
		if (!j) {
			rc = pd_fail(e, EINVAL, "image record %s is unreadable: nothing removed", de->d_name);
			break;
		}
		refs_add(&blobs, hex);
		const char *c = imgs_digest_hex(json_string_value(json_object_get(j, "config_digest")));
		if (c)
			refs_add(&blobs, c);
		size_t i;
		json_t *l;
		json_array_foreach(json_object_get(j, "layers"), i, l)
			if (json_is_string(json_object_get(l, "dir")))
				refs_add(&layers, json_string_value(json_object_get(l, "dir")));
		json_array_foreach(json_object_get(j, "stack"), i, l)
			if (json_is_string(l))
				refs_add(&layers, json_string_value(l));
		json_decref(j);
	}
	if (d)
		closedir(d);
	if (rc == 0) {
		uint64_t nblobs = 0, nb = 0;
		sweep(&st, "layers/sha256", &layers, true, layers_removed, bytes_freed);
		sweep(&st, "layers/chain", &layers, true, layers_removed, bytes_freed);
		sweep(&st, "layers/flat", &layers, true, layers_removed, bytes_freed);
		sweep(&st, "blobs/sha256", &blobs, false, &nblobs, &nb);
		/* under the exclusive lock no import runs: what tmp/ holds was abandoned */
		if (imgs_path(&st, p, "tmp", NULL, e) == 0 && (d = opendir(p))) {
			while ((de = readdir(d)))
				if (de->d_name[0] != '.') {
					char t[PD_PATH + 256];
					snprintf(t, sizeof t, "%s/%s", p, de->d_name);
					imgs_rm_rf(t);
				}
			closedir(d);
		}
	}
	for (size_t i = 0; i < layers.n; i++)
		free(layers.v[i]);
	for (size_t i = 0; i < blobs.n; i++)
		free(blobs.v[i]);
	free(layers.v);
	free(blobs.v);
	imgs_end(&st);
	return rc;
}
