/* The S3-compatible backend of the cluster's objects (objects.c chooses it with
 * --cluster-objects s3://BUCKET[/PREFIX]): an object is one key, written with PUT and read with
 * GET, path-style (http://ENDPOINT/BUCKET/KEY, which every S3-compatible store takes: MinIO,
 * Ceph, s3rver), signed with AWS Signature Version 4. An http:// endpoint is called through the
 * cluster's own small client (httpc.c: one connection a call), an https:// one through libcurl
 * (https.c); the signature's hashes are paddock's SHA-256 (libcrypto's) with HMAC built on it.
 * Credentials come from a file (--cluster-s3-credentials, refused when others may read it) or the
 * environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); the secret is never logged nor put in
 * an error.
 * Retention is the bucket's (a lifecycle rule the operator sets): paddock deletes nothing. */
#define _GNU_SOURCE
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S3_TIMEOUT_MS 60000

struct cl_s3 {
	bool tls;           /* https:// (https.c, libcurl's) rather than http:// (httpc.c) */
	char hostport[256]; /* the endpoint's HOST:PORT as given (http:// without one: :80); the
			     * Host header each request sends, and signs */
	const char *ca_file; /* https: the CAs to trust; NULL = the system's */
	char bucket[64];
	char prefix[256]; /* "" or ending in '/' */
	char region[64];
	char key_id[128];
	char secret[256];
};

/* ---- HMAC-SHA256 and the signature ------------------------------------------------------------ */

static int hmac(const void *key, size_t klen, const void *msg, size_t mlen, unsigned char out[32])
{
	unsigned char k[64] = {0}, pad[64], inner[32];
	if (klen > 64) {
		pd_sha256 h;
		pd_sha256_init(&h);
		pd_sha256_add(&h, key, klen);
		if (pd_sha256_end(&h, k) < 0)
			return -1;
	} else {
		memcpy(k, key, klen);
	}
	pd_sha256 h;
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	pd_sha256_init(&h);
	pd_sha256_add(&h, pad, 64);
	pd_sha256_add(&h, msg, mlen);
	if (pd_sha256_end(&h, inner) < 0)
		return -1;
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	pd_sha256_init(&h);
	pd_sha256_add(&h, pad, 64);
	pd_sha256_add(&h, inner, 32);
	return pd_sha256_end(&h, out);
}

char *cl_s3_sign(const char *key_id, const char *secret, const char *region, const char *host, const char *method,
		 const char *path, const char *query, const char *payload, time_t when)
{
	char creq_hash[65], date[17], day[9];
	struct tm tm;
	gmtime_r(&when, &tm);
	strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);
	strftime(day, sizeof day, "%Y%m%d", &tm);
	char *creq = NULL;
	if (asprintf(&creq, "%s\n%s\n%s\nhost:%s\nx-amz-content-sha256:%s\nx-amz-date:%s\n\n"
			    "host;x-amz-content-sha256;x-amz-date\n%s",
		     method, path, query, host, payload, date, payload) < 0)
		return NULL;
	int rc = pd_sha256_of(creq, strlen(creq), creq_hash);
	free(creq);
	if (rc < 0)
		return NULL;
	char scope[160], tosign[400], k0[300];
	snprintf(scope, sizeof scope, "%s/%s/s3/aws4_request", day, region);
	int tl = snprintf(tosign, sizeof tosign, "AWS4-HMAC-SHA256\n%s\n%s\n%s", date, scope, creq_hash);
	int kl = snprintf(k0, sizeof k0, "AWS4%s", secret);
	/* the signing key: the secret through the day, the region, the service and the request */
	unsigned char k[32], k2[32], sig[32];
	const char *steps[] = {day, region, "s3", "aws4_request"};
	rc = hmac(k0, (size_t)kl, steps[0], strlen(steps[0]), k);
	explicit_bzero(k0, sizeof k0);
	for (int i = 1; i < 4 && rc == 0; i++) {
		rc = hmac(k, 32, steps[i], strlen(steps[i]), k2);
		memcpy(k, k2, 32);
	}
	if (rc < 0 || hmac(k, 32, tosign, (size_t)tl, sig) < 0)
		return NULL;
	explicit_bzero(k, sizeof k);
	char sighex[65], *h = NULL;
	pd_sha256_hex(sig, sighex);
	if (asprintf(&h, "x-amz-date: %s\r\nx-amz-content-sha256: %s\r\nAuthorization: AWS4-HMAC-SHA256 "
			 "Credential=%s/%s,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=%s\r\n",
		     date, payload, key_id, scope, sighex) < 0)
		return NULL;
	return h;
}

/* The store's error answer in a few words: its <Code> and <Message>, or the status. */
static void s3_error(int status, const char *body, char *out, size_t len)
{
	const char *c = body ? strstr(body, "<Code>") : NULL, *m = body ? strstr(body, "<Message>") : NULL;
	int cl = c ? (int)strcspn(c + 6, "<") : 0, ml = m ? (int)strcspn(m + 9, "<") : 0;
	if (cl > 60)
		cl = 60;
	if (ml > 200)
		ml = 200;
	if (c)
		snprintf(out, len, "HTTP %d %.*s%s%.*s", status, cl, c + 6, m ? ": " : "", ml, m ? m + 9 : "");
	else
		snprintf(out, len, "HTTP %d", status);
}

/* One signed call: 0 with *status and *resp (malloc'd), or -1 (no answer). */
static int call(const cl_s3 *s, const char *method, const char *key, const char *query, const void *body,
		size_t len, int *status, char **resp, size_t *resp_len, pd_err *e)
{
	char path[700], target[800];
	snprintf(path, sizeof path, "/%s/%s%s", s->bucket, s->prefix, key);
	snprintf(target, sizeof target, "%s%s%s", path, *query ? "?" : "", query);
	char payload[65];
	char *headers = pd_sha256_of(body ? body : "", len, payload) < 0
				? NULL
				: cl_s3_sign(s->key_id, s->secret, s->region, s->hostport, method, path, query, payload,
					     time(NULL));
	if (!headers)
		return pd_fail(e, ENOMEM, "s3: sign %s %s", method, path);
	int rc;
	if (s->tls) {
		char url[1100], *all = NULL;
		snprintf(url, sizeof url, "https://%s%s", s->hostport, target);
		rc = asprintf(&all, "Host: %s\r\n%s", s->hostport, headers) < 0
			     ? pd_fail(e, ENOMEM, "s3: %s %s", method, path)
			     : cl_https_call(url, method, all, body, len, s->ca_file, S3_TIMEOUT_MS, status, resp,
					     resp_len, e);
		free(all);
	} else {
		rc = pd_http_call(s->hostport, method, target, headers, body, len, S3_TIMEOUT_MS, status, NULL, resp,
				  resp_len, e);
	}
	free(headers);
	return rc;
}

/* ---- keys ------------------------------------------------------------------------------------- */

/* An object's key: its name as a result key (broker.c: A-Z a-z 0-9 - _ and =XX) with '.' for '='
 * (no name makes a '.' of its own there): unreserved characters only, nothing to encode. */
static void object_key(const char *name, char *key, size_t len)
{
	cl_result_key(name, key, len);
	for (char *p = key; *p; p++)
		if (*p == '=')
			*p = '.';
}

int cl_s3_put(cl_s3 *s, const char *name, const void *data, size_t len, pd_err *e)
{
	char key[400], why[300];
	object_key(name, key, sizeof key);
	int status = 0;
	char *resp = NULL;
	size_t rl = 0;
	pd_err ce = {0};
	if (call(s, "PUT", key, "", data, len, &status, &resp, &rl, &ce) < 0)
		return pd_fail_as(e, EIO, "cluster: object %s: s3 %s: %s", name, s->hostport, PD_ERR_STR(&ce));
	if (status / 100 != 2) {
		s3_error(status, resp, why, sizeof why);
		free(resp);
		return pd_fail_as(e, EIO, "cluster: object %s: s3 PUT %s/%s%s: %s", name, s->bucket, s->prefix, key,
				  why);
	}
	free(resp);
	return 0;
}

int cl_s3_get(cl_s3 *s, const char *name, char **data, size_t *len, pd_err *e)
{
	char key[400], why[300];
	object_key(name, key, sizeof key);
	int status = 0;
	char *resp = NULL;
	size_t rl = 0;
	pd_err ce = {0};
	if (call(s, "GET", key, "", NULL, 0, &status, &resp, &rl, &ce) < 0)
		return pd_fail_as(e, EIO, "cluster: object %s: s3 %s: %s", name, s->hostport, PD_ERR_STR(&ce));
	if (status == 200) {
		*data = resp; /* NUL-terminated by pd_http_call */
		*len = rl;
		return 0;
	}
	s3_error(status, resp, why, sizeof why);
	bool none = status == 404 && (!resp || strstr(resp, "NoSuchKey") || !strstr(resp, "<Code>"));
	free(resp);
	if (none)
		return pd_fail(e, ENOENT, "no object %s in the cluster", name);
	return pd_fail_as(e, EIO, "cluster: object %s: s3 GET %s/%s%s: %s", name, s->bucket, s->prefix, key, why);
}

/* ---- configuration ---------------------------------------------------------------------------- */

/* Credentials from path: lines KEY = VALUE (aws_access_key_id, aws_secret_access_key, as in
 * ~/.aws/credentials; [section] lines and # comments skipped). The file may be read by its owner
 * only: a secret others can read is refused, as ssh refuses such a key. */
static int read_credentials(cl_s3 *s, const char *path, pd_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		return pd_fail(e, err, "--cluster-s3-credentials %s", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return pd_fail_as(e, EPERM, "--cluster-s3-credentials %s: mode %04o lets others read the secret (chmod 600)",
				  path, (unsigned)(st.st_mode & 07777));
	}
	FILE *f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return pd_fail(e, errno, "--cluster-s3-credentials %s", path);
	}
	char line[512];
	while (fgets(line, sizeof line, f)) {
		char *eq = strchr(line, '=');
		if (!eq || line[0] == '#' || line[0] == '[')
			continue;
		char *k = line, *v = eq + 1, *end = eq;
		while (end > k && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		*end = 0;
		v += strspn(v, " \t");
		v[strcspn(v, " \t\r\n")] = 0;
		if (!strcmp(k, "aws_access_key_id"))
			snprintf(s->key_id, sizeof s->key_id, "%s", v);
		else if (!strcmp(k, "aws_secret_access_key"))
			snprintf(s->secret, sizeof s->secret, "%s", v);
	}
	explicit_bzero(line, sizeof line);
	fclose(f);
	if (!s->key_id[0] || !s->secret[0])
		return pd_fail_as(e, EINVAL, "--cluster-s3-credentials %s: no aws_access_key_id or aws_secret_access_key",
				  path);
	return 0;
}

/* s3://BUCKET[/PREFIX] and http://HOST[:PORT][/] into s. */
static int parse_urls(cl_s3 *s, const char *url, const char *endpoint, pd_err *e)
{
	const char *b = url + 5, *slash = strchr(b, '/');
	size_t bl = slash ? (size_t)(slash - b) : strlen(b);
	if (bl < 3 || bl > 63 || strspn(b, "abcdefghijklmnopqrstuvwxyz0123456789.-") < bl)
		return pd_fail_as(e, EINVAL, "--cluster-objects %s: the bucket is 3 to 63 of a-z 0-9 . -", url);
	memcpy(s->bucket, b, bl);
	const char *p = slash ? slash + 1 : "";
	size_t pl = strlen(p);
	if (pl > 200 || strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") < pl ||
	    strstr(p, "//") || p[0] == '/')
		return pd_fail_as(e, EINVAL, "--cluster-objects %s: the prefix is A-Z a-z 0-9 . _ - and single /", url);
	snprintf(s->prefix, sizeof s->prefix, "%s%s", p, pl && p[pl - 1] != '/' ? "/" : "");
	if (!endpoint || !*endpoint)
		return pd_fail_as(e, EINVAL, "--cluster-objects %s needs --cluster-s3-endpoint http[s]://HOST[:PORT]",
				  url);
	s->tls = !strncmp(endpoint, "https://", 8);
	if (!s->tls && strncmp(endpoint, "http://", 7))
		return pd_fail_as(e, EINVAL, "--cluster-s3-endpoint %s: http://HOST[:PORT] or https://HOST[:PORT]",
				  endpoint);
	const char *h = endpoint + (s->tls ? 8 : 7);
	size_t hl = strcspn(h, "/");
	if (!hl || hl >= sizeof s->hostport - 4 || (h[hl] && strcmp(h + hl, "/")))
		return pd_fail_as(e, EINVAL, "--cluster-s3-endpoint %s: http[s]://HOST[:PORT] (path-style: no path)",
				  endpoint);
	/* httpc.c connects to HOST:PORT and sends that as the Host header: the port is added for it */
	const char *colon = memchr(h, ':', hl);
	snprintf(s->hostport, sizeof s->hostport, "%.*s%s", (int)hl, h, colon || s->tls ? "" : ":80");
	return 0;
}

/* s's settings from o, nothing reached yet: the URLs, the region, the credentials. */
static int configure(cl_s3 *s, const pd_cluster_opts *o, pd_err *e)
{
	if (parse_urls(s, o->objects, o->s3_endpoint, e) < 0)
		return -1;
	s->ca_file = o->s3_ca;
	const char *region = o->s3_region && *o->s3_region ? o->s3_region : getenv("AWS_REGION");
	snprintf(s->region, sizeof s->region, "%s", region && *region ? region : "us-east-1");
	if (o->s3_credentials)
		return read_credentials(s, o->s3_credentials, e);
	const char *k = getenv("AWS_ACCESS_KEY_ID"), *v = getenv("AWS_SECRET_ACCESS_KEY");
	if (!k || !*k || !v || !*v)
		return pd_fail_as(e, EINVAL,
				  "--cluster-objects %s: no credentials (--cluster-s3-credentials FILE, or "
				  "$AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY)",
				  o->objects);
	snprintf(s->key_id, sizeof s->key_id, "%s", k);
	snprintf(s->secret, sizeof s->secret, "%s", v);
	return 0;
}

int pd_cluster_objects_check(const pd_cluster_opts *o, pd_err *e)
{
	if (!o->objects || !strcmp(o->objects, "nats"))
		return 0;
	if (strncmp(o->objects, "s3://", 5))
		return pd_fail_as(e, EINVAL, "--cluster-objects %s: nats or s3://BUCKET[/PREFIX]", o->objects);
	cl_s3 *s = calloc(1, sizeof *s);
	if (!s)
		return pd_fail(e, ENOMEM, "s3");
	int rc = configure(s, o, e);
	cl_s3_free(s);
	return rc;
}

int cl_s3_open(const pd_cluster_opts *o, cl_s3 **out, pd_err *e)
{
	cl_s3 *s = calloc(1, sizeof *s);
	if (!s)
		return pd_fail(e, ENOMEM, "s3");
	int rc = configure(s, o, e);
	if (rc == 0 && s->tls)
		rc = cl_https_load(e);
	/* the bucket read once now (one key listed): wrong credentials, a missing bucket or an
	 * endpoint that is not there stop the node at its start, saying which */
	int status = 0;
	char *resp = NULL, why[300];
	size_t rl = 0;
	pd_err ce = {0};
	if (rc == 0) {
		char saved[256];
		snprintf(saved, sizeof saved, "%s", s->prefix);
		s->prefix[0] = 0; /* the bucket itself: GET /BUCKET/?list-type=2 */
		if (call(s, "GET", "", "list-type=2&max-keys=1", NULL, 0, &status, &resp, &rl, &ce) < 0)
			rc = pd_fail_as(e, EIO, "--cluster-objects %s: s3 endpoint %s: %s", o->objects, s->hostport,
					PD_ERR_STR(&ce));
		else if (status != 200) {
			s3_error(status, resp, why, sizeof why);
			rc = pd_fail_as(e, EACCES, "--cluster-objects %s: s3 endpoint %s refused the bucket's read "
						   "(access key %s): %s",
					o->objects, s->hostport, s->key_id, why);
		}
		free(resp);
		snprintf(s->prefix, sizeof s->prefix, "%s", saved);
	}
	if (rc < 0) {
		explicit_bzero(s, sizeof *s);
		free(s);
		return -1;
	}
	pd_log("info", "cluster: objects in S3", PD_LS("endpoint", s->hostport), PD_LS("bucket", s->bucket),
	       PD_LS("prefix", s->prefix), PD_LS("region", s->region));
	*out = s;
	return 0;
}

void cl_s3_free(cl_s3 *s)
{
	if (!s)
		return;
	explicit_bzero(s, sizeof *s);
	free(s);
}
