/* Results larger than the broker carries, by reference: the executing node puts the whole
 * answer in the broker's object stream (objects.c: "ref": {"object", "bytes"}), which any node
 * reads, this one gone or not; when the broker does not take it, the node keeps it in a file of
 * its own (<state>/cluster-results/<token>.json, the token being the
 * attempt's mark in its claim) and claims the request with a small value that says where it is
 * ({"status", "node", "token", "ref": {"address", "bytes"}}); the origin fetches it from that
 * node over HTTP (GET /v1/cluster/results/<token>) when it answers its client. The files are
 * kept for the duplicate window, as the bucket keeps its values, and then removed. */
#define _GNU_SOURCE
#include "cluster.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REF_DIR "cluster-results"

static int ref_dir(pd_cluster *c, char *dir, size_t len)
{
	int n = snprintf(dir, len, "%s/" REF_DIR, pd_ctx_state_dir(c->ctx));
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* A token names a file: it must be one (a node id, hex digits, '-', '_', and the id's dots: never
 * first, so never "." or ".." nor a hidden name). */
static bool token_ok(const char *t)
{
	if (!*t || strlen(t) >= 96 || t[0] == '.' || strstr(t, ".."))
		return false;
	for (const char *p = t; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_' || *p == '.'))
			return false;
	return true;
}

/* The claim's value for an answer kept in the broker's object stream: any node reads it, this
 * one gone or not. NULL when the broker did not take it. */
static char *keep_as_object(pd_cluster *c, int status, const char *token, const char *value, size_t len,
			    size_t *out_len)
{
	char name[160];
	snprintf(name, sizeof name, "res-%s", token);
	pd_err e = {0};
	if (cl_obj_put(c, name, value, len, &e) < 0) {
		pd_log("warn", "cluster: a large result not put in the object stream; kept on this node",
		       PD_LS("error", PD_ERR_STR(&e)));
		return NULL;
	}
	json_t *v = json_pack("{s:i,s:s,s:s,s:{s:s,s:I}}", "status", status, "node", c->node, "token", token, "ref",
			      "object", name, "bytes", (json_int_t)len);
	char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
	json_decref(v);
	if (text) {
		pthread_mutex_lock(&c->mu);
		c->results_by_ref++;
		pthread_mutex_unlock(&c->mu);
		*out_len = strlen(text);
	}
	return text;
}

char *cl_ref_keep(pd_cluster *c, int status, const char *token, const char *value, size_t len, size_t *out_len)
{
	char dir[PATH_MAX], path[PATH_MAX + 128], tmp[PATH_MAX + 160];
	char *obj = keep_as_object(c, status, token, value, len, out_len);
	if (obj)
		return obj;
	if (!token_ok(token) || ref_dir(c, dir, sizeof dir) < 0)
		return NULL;
	snprintf(path, sizeof path, "%s/%s.json", dir, token);
	snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, token);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, value + off, len - off);
		if (w <= 0 && errno != EINTR)
			break;
		if (w > 0)
			off += (size_t)w;
	}
	/* whole or not at all: the claim that names it commits with the record */
	if (off != len || fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
		if (off != len)
			close(fd);
		unlink(tmp);
		return NULL;
	}
	json_t *v = json_pack("{s:i,s:s,s:s,s:{s:s,s:I}}", "status", status, "node", c->node, "token", token, "ref",
			      "address", c->address, "bytes", (json_int_t)len);
	char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
	json_decref(v);
	if (!text) {
		unlink(path);
		return NULL;
	}
	pthread_mutex_lock(&c->mu);
	c->results_by_ref++;
	pthread_mutex_unlock(&c->mu);
	*out_len = strlen(text);
	return text;
}

void cl_ref_drop(pd_cluster *c, const char *token)
{
	char dir[PATH_MAX], path[PATH_MAX + 128];
	if (!token_ok(token) || ref_dir(c, dir, sizeof dir) < 0)
		return;
	snprintf(path, sizeof path, "%s/%s.json", dir, token);
	unlink(path);
}

void cl_ref_expire(pd_cluster *c)
{
	char dir[PATH_MAX];
	if (ref_dir(c, dir, sizeof dir) < 0)
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] == '.' && (!de->d_name[1] || de->d_name[1] == '.'))
			continue;
		/* nodes on one host share the directory: each removes only what the window let go */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    now - st.st_mtime > (time_t)c->o.window_s)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

int pd_cluster_result_file(pd_cluster *c, const char *token, char **text, size_t *len, pd_err *e)
{
	char dir[PATH_MAX], path[PATH_MAX + 128];
	if (!token_ok(token))
		return pd_refuse(e, "not a result token: '%.100s'", token);
	if (ref_dir(c, dir, sizeof dir) < 0) {
		pd_fail(e, errno ? errno : EIO, "the results directory");
		if (e)
			e->code = EIO; /* the node's own failure (500), whatever its cause */
		return -1;
	}
	snprintf(path, sizeof path, "%s/%s.json", dir, token);
	FILE *f = fopen(path, "re");
	if (!f)
		return pd_fail(e, errno, "result %s", token);
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	char chunk[65536];
	size_t r;
	while (m && (r = fread(chunk, 1, sizeof chunk, f)) > 0)
		fwrite(chunk, 1, r, m);
	bool bad = ferror(f);
	fclose(f);
	if (!m || fclose(m) != 0 || bad) {
		free(buf);
		return pd_fail(e, EIO, "result %s: read", token);
	}
	*text = buf;
	*len = n;
	return 0;
}

/* The answer a claim by reference names, fetched from the node that has it; *val becomes the
 * whole value ({"status", "node", "token", "body"}), or an error answer saying what failed. */
void cl_ref_fetch(pd_cluster *c, json_t *ref, const char *node, const char *token, int status, char **val,
		  size_t *len)
{
	const char *object = json_string_value(json_object_get(ref, "object"));
	if (object) {
		pd_err oe = {0};
		if (cl_obj_get(c, object, val, len, &oe) == 0) {
			pthread_mutex_lock(&c->mu);
			c->refs_fetched++;
			pthread_mutex_unlock(&c->mu);
			return;
		}
		pthread_mutex_lock(&c->mu);
		c->ref_failures++;
		pthread_mutex_unlock(&c->mu);
		json_t *v = json_pack("{s:i,s:s,s:s,s:{s:s,s:s,s:i}}", "status", 502, "node", node ? node : "", "token",
				      token, "body", "error",
				      "the result is larger than the broker's messages and its copy in the object "
				      "stream could not be read",
				      "detail", PD_ERR_STR(&oe), "status", status);
		*val = v ? json_dumps(v, JSON_COMPACT) : NULL;
		*len = *val ? strlen(*val) : 0;
		json_decref(v);
		return;
	}
	const char *addr = json_string_value(json_object_get(ref, "address"));
	char target[256], headers[1200] = "";
	snprintf(target, sizeof target, "/v1/cluster/results/%s", token);
	if (c->o.token && *c->o.token)
		snprintf(headers, sizeof headers, "Authorization: Bearer %.1000s\r\n", c->o.token);
	int code = 0;
	char *ctype = NULL, *resp = NULL;
	size_t rlen = 0;
	pd_err e = {0};
	int rc = addr && *addr ? pd_http_call(addr, "GET", target, headers, NULL, 0, 60000, &code, &ctype, &resp, &rlen, &e)
			       : pd_fail(&e, EINVAL, "no address");
	free(ctype);
	if (rc == 0 && code == 200) {
		pthread_mutex_lock(&c->mu);
		c->refs_fetched++;
		pthread_mutex_unlock(&c->mu);
		*val = resp;
		*len = rlen;
		return;
	}
	char msg[600];
	if (rc == 0)
		snprintf(msg, sizeof msg, "answered %d: %.300s", code, resp ? resp : "");
	else
		snprintf(msg, sizeof msg, "%s", PD_ERR_STR(&e));
	free(resp);
	pthread_mutex_lock(&c->mu);
	c->ref_failures++;
	pthread_mutex_unlock(&c->mu);
	json_t *v = json_pack("{s:i,s:s,s:s,s:{s:s,s:s,s:i}}", "status", 502, "node", node ? node : "", "token",
			      token, "body", "error",
			      "the result is larger than the broker carries and stays on the node that ran it, "
			      "which did not give it",
			      "detail", msg, "status", status);
	*val = v ? json_dumps(v, JSON_COMPACT) : NULL;
	*len = *val ? strlen(*val) : 0;
	json_decref(v);
}
