/* A small HTTP/1.0 client for the commands that talk to a daemon (replay, export): one request
 * per connection, the whole answer read to EOF (HTTP/1.0: the daemon neither chunks nor keeps the
 * connection), loopback or a named host, plain http only. */
#define _GNU_SOURCE
#include "httpc.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int dial(const char *base, char *host, size_t hlen, char *err, size_t errlen)
{
	const char *p = base;
	if (!strncmp(p, "http://", 7))
		p += 7;
	else if (strstr(p, "://")) {
		snprintf(err, errlen, "%s: only http:// URLs", base);
		return -1;
	}
	char h[256], port[16] = "80";
	size_t n = strcspn(p, ":/");
	if (!n || n >= sizeof h) {
		snprintf(err, errlen, "%s: no host", base);
		return -1;
	}
	memcpy(h, p, n);
	h[n] = 0;
	if (p[n] == ':') {
		size_t m = strcspn(p + n + 1, "/");
		if (!m || m >= sizeof port) {
			snprintf(err, errlen, "%s: bad port", base);
			return -1;
		}
		memcpy(port, p + n + 1, m);
		port[m] = 0;
	}
	snprintf(host, hlen, "%s", h);
	struct addrinfo hints = {0}, *ai = NULL;
	hints.ai_socktype = SOCK_STREAM;
	int g = getaddrinfo(h, port, &hints, &ai);
	if (g) {
		snprintf(err, errlen, "%s: %s", base, gai_strerror(g));
		return -1;
	}
	int fd = -1;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		snprintf(err, errlen, "connect to %s: %s", base, strerror(errno));
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static const char *set_token; /* a command's own, over the environment's */

void httpc_set_token(const char *token)
{
	set_token = token;
}

int httpc_call(const char *base, const char *method, const char *path, const char *body, size_t len,
	       const char *headers, httpc_resp *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	char host[256];
	int fd = dial(base, host, sizeof host, err, errlen);
	if (fd < 0)
		return -1;
	/* a step may run up to its own time limit, a tar a few minutes */
	struct timeval tv = {900, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	const char *token = set_token ? set_token : getenv("PADDOCK_TOKEN");
	if (token && !*token)
		token = NULL;
	char *head = NULL;
	int hn = asprintf(&head,
			  "%s %s HTTP/1.0\r\nHost: %s\r\nContent-Length: %zu\r\n%s%s%s%s%s\r\n", method, path, host,
			  body ? len : 0, body ? "Content-Type: application/json\r\n" : "", token ? "Authorization: Bearer " : "",
			  token ? token : "", token ? "\r\n" : "", headers ? headers : "");
	if (hn < 0 || send_all(fd, head, (size_t)hn) < 0 || (body && len && send_all(fd, body, len) < 0)) {
		snprintf(err, errlen, "%s %s: send: %s", method, path, strerror(errno));
		free(head);
		close(fd);
		return -1;
	}
	free(head);
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (!buf) {
			snprintf(err, errlen, "out of memory");
			close(fd);
			return -1;
		}
		if (n == cap) {
			char *nb = realloc(buf, cap * 2 + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
				continue;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t got = recv(fd, buf + n, cap - n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			snprintf(err, errlen, "%s %s: receive: %s", method, path, strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	buf[n] = 0;
	char *eoh = strstr(buf, "\r\n\r\n");
	if (!eoh || sscanf(buf, "HTTP/%*s %d", &r->status) != 1) {
		snprintf(err, errlen, "%s %s: not an HTTP answer", method, path);
		free(buf);
		return -1;
	}
	size_t off = (size_t)(eoh + 4 - buf);
	memmove(buf, buf + off, n - off + 1);
	r->body = buf;
	r->len = n - off;
	return 0;
}

json_t *httpc_json(const char *base, const char *method, const char *path, json_t *body, const char *headers,
		   int *status, char *err, size_t errlen)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	httpc_resp r;
	int rc = httpc_call(base, method, path, text, text ? strlen(text) : 0, headers, &r, err, errlen);
	free(text);
	if (rc < 0)
		return NULL;
	*status = r.status;
	json_t *o = json_loadb(r.body, r.len, 0, NULL);
	if (!o)
		snprintf(err, errlen, "%s %s: %d, not JSON: %.200s", method, path, r.status, r.body);
	free(r.body);
	return o;
}
