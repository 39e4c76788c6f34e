/* HTTPS for the S3 backend (s3.c), through libcurl loaded on first use: the cluster's own HTTP
 * client (httpc.c) has no TLS, and an S3 store beyond a private network (AWS itself) is reached
 * only over TLS. As libnats (nats_dl.h says why), libcurl is not linked: only a node given an
 * https:// endpoint loads it (Debian's libcurl4, present wherever curl is), and says so when it
 * cannot. The prototypes are curl.h's own (__typeof__), so every call is checked; curl.h's
 * type-checking macros are off, since they would take the table's members for the functions. */
#define _GNU_SOURCE
#define CURL_DISABLE_TYPECHECK
#include "cluster.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CURL_SONAME "libcurl.so.4"
#define ANSWER_MAX (1ull << 30)

#define PD_CURL_FUNCS(X)                                                                         \
	X(curl_global_init)                                                                      \
	X(curl_easy_init)                                                                        \
	X(curl_easy_setopt)                                                                      \
	X(curl_easy_perform)                                                                     \
	X(curl_easy_getinfo)                                                                     \
	X(curl_easy_cleanup)                                                                     \
	X(curl_easy_strerror)                                                                    \
	X(curl_slist_append)                                                                     \
	X(curl_slist_free_all)

static struct {
#define PD_CURL_FIELD(name) __typeof__(name) *name;
	PD_CURL_FUNCS(PD_CURL_FIELD)
#undef PD_CURL_FIELD
} C;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[256] = "libcurl not loaded";

static void load(void)
{
	void *h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_error, sizeof load_error, "load %s (install libcurl4 for an https:// S3 endpoint): %s",
			 CURL_SONAME, dlerror());
		return;
	}
#define PD_CURL_SYM(name)                                                                        \
	if (!(*(void **)&C.name = dlsym(h, #name))) {                                            \
		snprintf(load_error, sizeof load_error, "%s lacks %s", CURL_SONAME, #name);        \
		return;                                                                          \
	}
	PD_CURL_FUNCS(PD_CURL_SYM)
#undef PD_CURL_SYM
	/* once, before any handle: the node's threads make handles at once afterwards */
	if (C.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(load_error, sizeof load_error, "%s: curl_global_init failed", CURL_SONAME);
		return;
	}
	load_error[0] = 0;
}

int cl_https_load(pd_err *e)
{
	pthread_once(&once, load);
	if (load_error[0])
		return pd_fail_as(e, ELIBACC, "%s", load_error);
	return 0;
}

typedef struct answer {
	char *buf;
	size_t n, cap;
	bool too_big;
} answer;

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	answer *a = arg;
	size_t len = size * nmemb;
	if (a->n + len + 1 > a->cap) {
		size_t nc = a->cap ? a->cap : 65536;
		while (nc < a->n + len + 1)
			nc *= 2;
		char *b = nc <= ANSWER_MAX ? realloc(a->buf, nc) : NULL;
		if (!b) {
			a->too_big = true;
			return 0; /* curl stops: CURLE_WRITE_ERROR */
		}
		a->buf = b;
		a->cap = nc;
	}
	memcpy(a->buf + a->n, p, len);
	a->n += len;
	return len;
}

int cl_https_call(const char *url, const char *method, const char *headers, const void *body, size_t len,
		  const char *ca_file, int timeout_ms, int *status, char **resp, size_t *resp_len, pd_err *e)
{
	*resp = NULL;
	*resp_len = 0;
	if (cl_https_load(e) < 0)
		return -1;
	CURL *h = C.curl_easy_init();
	if (!h)
		return pd_fail(e, ENOMEM, "https %s", url);
	/* headers: "Name: value\r\n" lines, as httpc.c takes them; no Expect (a PUT's body goes at
	 * once) and a type for the body (curl would call it a form) */
	struct curl_slist *hl = C.curl_slist_append(NULL, "Expect:");
	hl = hl ? C.curl_slist_append(hl, "Content-Type: application/octet-stream") : NULL;
	char *copy = strdup(headers ? headers : "");
	for (char *save = NULL, *l = copy ? strtok_r(copy, "\r\n", &save) : NULL; l && hl;
	     l = strtok_r(NULL, "\r\n", &save))
		hl = C.curl_slist_append(hl, l);
	free(copy);
	answer a = {0};
	if (!hl) {
		C.curl_easy_cleanup(h);
		return pd_fail(e, ENOMEM, "https %s", url);
	}
	C.curl_easy_setopt(h, CURLOPT_URL, url);
	C.curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
	C.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	C.curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	C.curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	C.curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	if (!strcmp(method, "PUT")) {
		C.curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
		C.curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	if (ca_file)
		C.curl_easy_setopt(h, CURLOPT_CAINFO, ca_file);
	C.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	C.curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
	CURLcode rc = C.curl_easy_perform(h);
	long code = 0;
	C.curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	C.curl_easy_cleanup(h);
	C.curl_slist_free_all(hl);
	if (rc != CURLE_OK || (!a.buf && !(a.buf = malloc(1)))) {
		free(a.buf);
		if (a.too_big)
			return pd_fail_as(e, EFBIG, "answer from %s: too large", url);
		return pd_fail_as(e, EIO, "https %s: %s", url, C.curl_easy_strerror(rc));
	}
	a.buf[a.n] = 0;
	*status = (int)code;
	*resp = a.buf;
	*resp_len = a.n;
	return 0;
}
