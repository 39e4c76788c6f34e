/* A template checked against its image (pd_template_check): an imported image resolved and its
 * layers leased, the user named resolved in its /etc/passwd, the programs it requires looked for,
 * and its version computed from what its sandboxes are made of; and the sandbox options it gives. */
#define _GNU_SOURCE
#include "pools.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The two users a template names by keyword, whatever the image's passwd says. */
int pd_user_keyword(const char *s, uint32_t *uid, uint32_t *gid)
{
	if (!strcmp(s, "root"))
		*uid = *gid = 0;
	else if (!strcmp(s, "sandbox"))
		*uid = *gid = PD_USER_SANDBOX;
	else
		return -1;
	return 0;
}

/* The imported image a template names, leased for the template's life: its layers become the
 * template's, its Env and WorkingDir the template's defaults. */
static int resolve_image(pd_ctx *c, pd_template *t)
{
	if (t->image)
		return 0;
	pd_image *im = calloc(1, sizeof *im);
	pd_err e = {0};
	if (!im || pd_image_open(pd_ctx_state_dir(c), t->image_ref, im, &e) < 0) {
		snprintf(t->missing, sizeof t->missing, "image %s: %s", t->image_ref, im ? PD_ERR_STR(&e) : "no memory");
		free(im);
		return -1;
	}
	for (int k = 0; k < PD_TPL_MAX_LAYERS && t->layers[k]; k++) {
		free(t->layers[k]);
		t->layers[k] = NULL;
	}
	bool bad = im->nlayers > PD_TPL_MAX_LAYERS;
	for (int k = 0; k < im->nlayers && !bad; k++)
		bad = !(t->layers[k] = strdup(im->layers[k]));
	if (!t->env[0])
		for (int k = 0, n = 0; im->env[k] && n < PD_TPL_MAX_ENV && !bad; k++)
			bad = !(t->env[n++] = strdup(im->env[k]));
	if (!t->cwd && im->workdir && im->workdir[0] == '/' && !bad)
		bad = !(t->cwd = strdup(im->workdir));
	t->image = im;
	if (bad)
		snprintf(t->missing, sizeof t->missing, "image %s: too many layers, or no memory", t->image_ref);
	return bad ? -1 : 0;
}

/* The template's user, or else its imported image's config User: names from the image's own
 * /etc/passwd and /etc/group (a directory image's too), never the host's. */
static int resolve_user(pd_template *t)
{
	const char *spec = t->user[0] ? t->user : t->image && t->image->user && *t->image->user ? t->image->user : NULL;
	t->uid = t->gid = 0;
	if (!spec || pd_user_keyword(t->user, &t->uid, &t->gid) == 0)
		return 0;
	pd_err e = {0};
	if (pd_user_resolve(t->layers[0] ? (const char *const *)t->layers : NULL, spec, &t->uid, &t->gid, &e) < 0) {
		snprintf(t->missing, sizeof t->missing, "%s %s: %s", t->user[0] ? "user" : "the image's User", spec,
			 e.msg);
		t->uid = t->gid = 0;
		return -1;
	}
	return 0;
}

/* A growing text for the version's digest; b NULL once out of memory. */
typedef struct vbuf {
	char *b;
	size_t len, cap;
} vbuf;

static void put(vbuf *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(vbuf *v, const char *fmt, ...)
{
	for (int tries = 0; v->b && tries < 2; tries++) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(v->b + v->len, v->cap - v->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < v->cap - v->len) {
			v->len += (size_t)n;
			return;
		}
		char *nb = realloc(v->b, v->cap = (v->cap + (size_t)n) * 2);
		if (!nb)
			free(v->b);
		v->b = nb;
	}
}

/* The computed version: a digest of the recipe as pd_template_check leaves it (the image by its
 * digest, so a name re-pointed at another image is another version). */
static void compute_version(pd_template *t)
{
	if (t->version_given)
		return;
	vbuf v = {malloc(4096), 0, 4096};
	bool digested = true;
	put(&v, "language=%s\n", t->language);
	if (t->image)
		put(&v, "image=%s\n", t->image->digest);
	else
		for (int k = 0; t->layers[k]; k++)
			put(&v, "layer=%s\n", t->layers[k]);
	for (int k = 0; t->env[k]; k++)
		put(&v, "env=%s\n", t->env[k]);
	put(&v, "cwd=%s\n", t->cwd ? t->cwd : "");
	if (t->uid || t->gid) /* root's recipes keep the versions they had */
		put(&v, "user=%u:%u\n", t->uid, t->gid);
	for (size_t k = 0; k < t->nfiles; k++) {
		char h[65];
		digested &= pd_sha256_of(t->files[k].data, t->files[k].len, h) == 0;
		put(&v, "file=%s %o %s\n", t->files[k].path, (unsigned)t->files[k].mode, h);
	}
	for (int k = 0; t->requires[k]; k++)
		put(&v, "requires=%s\n", t->requires[k]);
	for (int k = 0; t->warmup[k]; k++)
		put(&v, "warmup=%s\n", t->warmup[k]);
	const pd_limits *l = &t->limits;
	put(&v, "limits=%llu %u %llu %llu %u %llu %llu %llu %u %llu %llu\nnet=%d\naudit=%s\n",
	    (unsigned long long)l->memory_bytes, l->pids, (unsigned long long)l->cpu_ms, (unsigned long long)l->wall_ms,
	    l->cpu_millicores, (unsigned long long)l->disk_bytes, (unsigned long long)l->output_bytes,
	    (unsigned long long)l->output_kill_bytes, l->nofile, (unsigned long long)l->fsize_bytes,
	    (unsigned long long)l->stack_bytes, (int)t->net, t->audit_digest);
	for (int k = 0; t->egress_allow && t->egress_allow[k]; k++)
		put(&v, "egress=%s\n", t->egress_allow[k]);
	if (t->egress_allow)
		put(&v, "egress_bounds=%u %llu %llu\n", t->egress.max_conns, (unsigned long long)t->egress.max_bytes,
		    (unsigned long long)t->egress.idle_ms);
	/* the container tier, the default, adds nothing: the versions of templates that predate
	 * the field stay as they were */
	if (t->isolation != PD_ISO_CONTAINER)
		put(&v, "isolation=%s\n", pd_isolation_name(t->isolation));
	t->version[0] = 0;
	if (v.b) {
		/* no version rather than a wrong one when a digest could not be made */
		char h[65];
		if (digested && pd_sha256_of(v.b, v.len, h) == 0)
			snprintf(t->version, sizeof t->version, "sha256:%.16s", h);
		free(v.b);
	}
}

bool pd_template_has_program(const pd_template *t, const char *prog)
{
	static const char *const bins[] = {"usr/local/bin", "usr/bin", "bin", "usr/sbin", "sbin", NULL};
	/* the default image's programs are the host's /usr */
	const char *roots_default[] = {"/", NULL};
	const char *const *roots = t->layers[0] ? (const char *const *)t->layers : roots_default;
	for (int l = 0; roots[l]; l++)
		for (int b = 0; bins[b]; b++) {
			char p[1024];
			snprintf(p, sizeof p, "%s/%s/%s", roots[l], bins[b], prog);
			if (access(p, X_OK) == 0)
				return true;
		}
	return false;
}

void pd_template_check(pd_ctx *c, pd_template *t)
{
	t->available = true;
	t->missing[0] = 0;
	if (t->image_ref && resolve_image(c, t) < 0) {
		t->available = false;
		compute_version(t);
		return;
	}
	if (resolve_user(t) < 0) {
		t->available = false;
		compute_version(t);
		return;
	}
	for (int r = 0; t->requires[r]; r++) {
		if (!pd_template_has_program(t, t->requires[r])) {
			size_t len = strlen(t->missing);
			snprintf(t->missing + len, sizeof t->missing - len, "%s%s", len ? " " : "",
				 t->requires[r]);
			t->available = false;
		}
	}
	compute_version(t);
}

void pd_template_sandbox_opts(const pd_template *t, pd_sandbox_opts *o)
{
	memset(o, 0, sizeof *o);
	o->layers = t->layers[0] ? (const char *const *)t->layers : NULL;
	o->imported = t->image;
	o->net = t->net;
	o->egress = t->egress_allow ? &t->egress : NULL;
	o->limits = t->limits;
	o->uid = t->uid;
	o->gid = t->gid;
	o->isolation = t->isolation;
}
