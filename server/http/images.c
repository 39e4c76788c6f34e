/* A request's "image" at the edge: the operator's allowlist (serve --images) and the store decide
 * before anything is queued, so an image that is unknown or not allowed is the client's error
 * (403, 404), never a run; a host path was refused by the parser already (server/api/). */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

/* Whether one allowlist entry admits the image ref (resolved to digest). */
static bool entry_allows(pd_server *s, const char *entry, const char *ref, const char *digest)
{
	if (!strcmp(entry, "*"))
		return true;
	if (!strcmp(entry, digest))
		return true;
	size_t n = strlen(entry);
	if (n >= 12 && n <= 64 && strspn(entry, "0123456789abcdef") == n)
		return !strncmp(entry, digest + 7, n); /* a hex prefix of the digest */
	if (!strncmp(entry, "sha256:", 7))
		return false;
	bool by_name = !pd_image_ref_is_digest(ref);
	if (by_name && fnmatch(entry, ref, 0) == 0)
		return true;
	/* a literal name also admits its image by digest: the same bytes */
	if (!by_name && !strpbrk(entry, "*?[")) {
		char d[PD_DIGEST_LEN];
		return pd_image_resolve(pd_ctx_state_dir(s->ctx), entry, d, NULL) == 0 && !strcmp(d, digest);
	}
	return false;
}

/* Each entry of the list, trimmed, to fn; true as soon as fn admits. */
static bool any_entry(pd_server *s, const char *list, const char *ref, const char *digest,
		      bool (*fn)(pd_server *, const char *, const char *, const char *))
{
	char entry[256];
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		const char *q = p;
		while (len && *q == ' ') /* "a, b" as well as "a,b" */
			q++, len--;
		while (len && q[len - 1] == ' ')
			len--;
		if (len && len < sizeof entry) {
			memcpy(entry, q, len);
			entry[len] = 0;
			if (fn(s, entry, ref, digest))
				return true;
		}
		p += strcspn(p, ",");
		if (*p)
			p++;
	}
	return false;
}

/* Before the store is asked: could an entry admit this name? (so that a client learns nothing of
 * the images it may not use, not even whether they exist) */
static bool name_may_pass(pd_server *s, const char *entry, const char *ref, const char *digest)
{
	(void)s;
	(void)digest;
	return !strcmp(entry, "*") || fnmatch(entry, ref, 0) == 0;
}

int images_check(pd_server *s, const char *ref, char digest[PD_DIGEST_LEN], pd_err *e)
{
	const char *list = s->o.images;
	if (!list || !*list) {
		pd_refuse(e, "image: this server lets no request name an image (the operator allows some with "
			     "serve --images)");
		return 403;
	}
	bool by_name = !pd_image_ref_is_digest(ref);
	if (by_name && !any_entry(s, list, ref, "", name_may_pass))
		goto refused;
	pd_err re = {0};
	if (pd_image_resolve(pd_ctx_state_dir(s->ctx), ref, digest, &re) < 0) {
		pd_refuse(e, "image: %s", PD_ERR_STR(&re));
		return re.code == ENOENT ? 404 : 400;
	}
	if (by_name || any_entry(s, list, ref, digest, entry_allows))
		return 0;
refused:
	pd_refuse(e, "image: '%s' is not among the images this server allows (serve --images)", ref);
	return 403;
}
