/* Fuzzes what the session API takes from a request's target (server/session_req.c): the input is
 * the target as a client sends it, "/v1/sessions/<id>/<op>?path=...&dir=...". It goes through what
 * libmicrohttpd 0.9.75 does before paddock sees it (the path and each argument %-decoded, '+' a
 * space in arguments, a key without '=' has no value, MHD_lookup_connection_value_n finds the first
 * argument of a key, compared without case) and then exactly through server/http/ (http.c, sessions.c): the path
 * copied into the request's 512-byte url, pd_session_url, and pd_session_query_set for the five
 * keys on_request looks up.
 *
 * Beyond "no crash, no leak, no undefined behaviour":
 *  - pd_session_url: an accepted URL is exactly "/v1/sessions/" id ["/" op], id 1 to 47 bytes and
 *    op at most 31, neither holding '/', a space or a control byte (so the operation the daemon
 *    runs is the one the client named, and a truncated id never names another session); a
 *    refused one leaves both empty;
 *  - the query: path, dir and request_id are either the decoded value, whole (not cut to fit a
 *    buffer, not cut at a %00) or refused with a message; stream is stdout or stderr and list 1,
 *    true, 0, false or empty, anything else refused (not silently read as stdout or false); the
 *    refusal message is UTF-8 (the 400 carries it). */
#include "fuzz_common.h"

#include <ctype.h>

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : isxdigit(c) ? tolower(c) - 'a' + 10 : -1;
}

/* MHD_http_unescape: %HH -> the byte; a malformed escape stays as it is */
static size_t unescape(char *s, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] == '%' && i + 2 < n && hexval((unsigned char)s[i + 1]) >= 0 &&
		    hexval((unsigned char)s[i + 2]) >= 0) {
			s[o++] = (char)(hexval((unsigned char)s[i + 1]) << 4 | hexval((unsigned char)s[i + 2]));
			i += 3;
		} else {
			s[o++] = s[i++];
		}
	}
	s[o] = 0;
	return o;
}

typedef struct arg {
	char *key, *val; /* val NULL: no '=' */
	size_t klen, vlen;
} arg;

static int key_is(const arg *a, const char *k)
{
	return a->klen == strlen(k) && !strncasecmp(a->key, k, a->klen);
}

static void check_text(const pd_session_query *q, const arg *a, const char *got, size_t cap, const char *k)
{
	if (!a || !a->val) {
		FUZZ_CHECK(!*got, "%s absent, yet '%s'", k, got);
		return;
	}
	int exact = strlen(got) == a->vlen && !memcmp(got, a->val, a->vlen);
	FUZZ_CHECK(exact || q->error[0], "%s: %zu bytes given, '%.60s' (%zu) taken without a word", k, a->vlen,
		   got, strlen(got));
	FUZZ_CHECK(!exact || a->vlen < cap, "%s", k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *t = fz_cstr(data, size); /* a request line holds no NUL */
	if (!t)
		return 0;
	char *qs = strchr(t, '?');
	if (qs)
		*qs++ = 0;
	unescape(t, strlen(t));

	/* the URL as session_op_main sees it: a copy in req.url */
	char url[512], id[48], op[32];
	snprintf(url, sizeof url, "%s", t);
	memset(id, 'x', sizeof id);
	memset(op, 'x', sizeof op);
	if (pd_session_url(url, id, sizeof id, op, sizeof op) == 0) {
		size_t il = strnlen(id, sizeof id), ol = strnlen(op, sizeof op);
		FUZZ_CHECK(il > 0 && il < sizeof id && ol < sizeof op, "id or op length");
		for (size_t i = 0; i < il; i++)
			FUZZ_CHECK((unsigned char)id[i] > 0x20 && id[i] != 0x7f && id[i] != '/', "id byte %02x",
				   (unsigned char)id[i]);
		for (size_t i = 0; i < ol; i++)
			FUZZ_CHECK((unsigned char)op[i] > 0x20 && op[i] != 0x7f && op[i] != '/', "op byte %02x",
				   (unsigned char)op[i]);
		/* nothing dropped: the url is the prefix, the id, and "" or "/" op */
		const char *rest = strlen(t) >= 13 + il ? t + 13 + il : "";
		int same = strlen(t) >= 13 + il && !strncmp(t, "/v1/sessions/", 13) && !strncmp(t + 13, id, il) &&
			   (*rest ? *rest == '/' && !strcmp(rest + 1, op) : !ol);
		FUZZ_CHECK(same, "url '%.100s' read as session '%s' operation '%s'", t, id, op);
	} else {
		FUZZ_CHECK(!id[0] && !op[0], "refused url, yet id '%.47s' op '%.31s'", id, op);
	}

	/* the query string, as MHD splits and decodes it */
	arg args[64];
	size_t na = 0;
	for (char *p = qs, *next; p && na < 64; p = next) {
		next = strchr(p, '&');
		if (next)
			*next++ = 0;
		arg *a = &args[na++];
		char *eq = strchr(p, '=');
		if (eq)
			*eq++ = 0;
		for (char *c = p; *c; c++)
			if (*c == '+')
				*c = ' ';
		a->key = p;
		a->klen = unescape(p, strlen(p));
		a->val = eq;
		if (eq) {
			for (char *c = eq; *c; c++)
				if (*c == '+')
					*c = ' ';
			a->vlen = unescape(eq, strlen(eq));
		}
	}
	pd_session_query q;
	memset(&q, 0, sizeof q);
	static const char *const keys[] = {"path", "dir", "request_id", "stream", "list"};
	const arg *found[5] = {0};
	for (size_t k = 0; k < 5; k++) {
		for (size_t i = 0; i < na && !found[k]; i++)
			if (key_is(&args[i], keys[k]))
				found[k] = &args[i];
		if (found[k])
			pd_session_query_set(&q, keys[k], found[k]->val, found[k]->vlen);
	}
	size_t el = strnlen(q.error, sizeof q.error);
	FUZZ_CHECK(el < sizeof q.error && fz_utf8_valid(q.error, el), "error message");
	check_text(&q, found[0], q.path, sizeof q.path, "path");
	check_text(&q, found[1], q.dir, sizeof q.dir, "dir");
	check_text(&q, found[2], q.request_id, sizeof q.request_id, "request_id");
	const arg *s = found[3];
	if (s && s->val) {
		int out = s->vlen == 6 && !memcmp(s->val, "stdout", 6), err = s->vlen == 6 && !memcmp(s->val, "stderr", 6);
		FUZZ_CHECK(out || err || q.error[0], "stream '%.40s' taken as %s", s->val, q.stderr_stream ? "stderr" : "stdout");
		FUZZ_CHECK(!err || q.stderr_stream, "stream=stderr read as stdout");
		FUZZ_CHECK(!out || !q.stderr_stream, "stream=stdout read as stderr");
	} else {
		FUZZ_CHECK(!q.stderr_stream, "stream");
	}
	const arg *l = found[4];
	if (l && l->val) {
		int yes = (l->vlen == 1 && l->val[0] == '1') || (l->vlen == 4 && !memcmp(l->val, "true", 4));
		int no = !l->vlen || (l->vlen == 1 && l->val[0] == '0') || (l->vlen == 5 && !memcmp(l->val, "false", 5));
		FUZZ_CHECK(yes || no || q.error[0], "list '%.40s' taken as %d", l->val, q.list);
		FUZZ_CHECK(!yes || q.list, "list=1 not a listing");
		FUZZ_CHECK(!no || !q.list, "list=0 a listing");
	} else {
		FUZZ_CHECK(!q.list, "list");
	}
	free(t);
	return 0;
}
