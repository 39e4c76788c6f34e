/* A small blocking HTTP/1.0 client: one request on its own connection, the answer read until
 * the peer closes (HTTP/1.0: no chunking, no keep-alive to manage). Used to forward a session's
 * request to the node that holds it, and by paddock run --cluster. Answers up to 1 GiB. */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define ANSWER_MAX (1ull << 30)

static int connect_to(const char *hostport, int timeout_ms, pd_err *e)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	if (!colon || colon == hostport || (size_t)(colon - hostport) >= sizeof host)
		return pd_fail_as(e, EINVAL, "address %s: not HOST:PORT", hostport);
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = 0;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc)
		return pd_fail(e, EHOSTUNREACH, "address %s: %s", hostport, gai_strerror(rc));
	int fd = -1, err = ECONNREFUSED;
	for (struct addrinfo *p = ai; p && fd < 0; p = p->ai_next) {
		fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		if (connect(fd, p->ai_addr, p->ai_addrlen) < 0 && errno != EINPROGRESS) {
			err = errno;
			close(fd);
			fd = -1;
			continue;
		}
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		int so = 0;
		socklen_t sl = sizeof so;
		if (poll(&pf, 1, timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) < 0 || so) {
			err = so ? so : ETIMEDOUT;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return pd_fail(e, err, "connect to %s", hostport);
	return fd;
}

static int send_all(int fd, const char *p, size_t n, int timeout_ms, pd_err *e)
{
	while (n) {
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		if (poll(&pf, 1, timeout_ms) != 1)
			return pd_fail(e, ETIMEDOUT, "send");
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w < 0)
			return pd_fail(e, errno, "send");
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int pd_http_call(const char *hostport, const char *method, const char *target, const char *headers,
		 const char *body, size_t len, int timeout_ms, int *status, char **ctype, char **resp,
		 size_t *resp_len, pd_err *e)
{
	*resp = NULL;
	*resp_len = 0;
	if (ctype)
		*ctype = NULL;
	int fd = connect_to(hostport, timeout_ms, e);
	if (fd < 0)
		return -1;
	char *head = NULL;
	int hn = asprintf(&head, "%s %s HTTP/1.0\r\nHost: %s\r\nContent-Length: %zu\r\n%s\r\n", method, target,
			  hostport, len, headers ? headers : "");
	if (hn < 0) {
		close(fd);
		return pd_fail(e, ENOMEM, "request");
	}
	int rc = send_all(fd, head, (size_t)hn, timeout_ms, e);
	free(head);
	if (rc == 0 && len)
		rc = send_all(fd, body, len, timeout_ms, e);
	char *buf = NULL;
	size_t n = 0, cap = 0;
	while (rc == 0) {
		if (n + 65536 + 1 > cap) {
			size_t nc = cap ? cap * 2 : 131072;
			char *p = nc <= ANSWER_MAX ? realloc(buf, nc) : NULL;
			if (!p) {
				rc = pd_fail(e, EFBIG, "answer from %s: too large", hostport);
				break;
			}
			buf = p;
			cap = nc;
		}
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, timeout_ms) != 1) {
			rc = pd_fail(e, ETIMEDOUT, "answer from %s", hostport);
			break;
		}
		ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0) {
			rc = pd_fail(e, errno, "answer from %s", hostport);
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (rc < 0) {
		free(buf);
		return -1;
	}
	if (!buf) {
		return pd_fail(e, EPROTO, "no answer from %s", hostport);
	}
	buf[n] = 0;
	char *end = strstr(buf, "\r\n\r\n");
	int code = 0;
	if (!end || sscanf(buf, "HTTP/%*d.%*d %d", &code) != 1) {
		free(buf);
		return pd_fail(e, EPROTO, "answer from %s: not HTTP", hostport);
	}
	*end = 0;
	if (ctype)
		for (char *l = strstr(buf, "\r\n"); l; l = strstr(l + 2, "\r\n"))
			if (!strncasecmp(l + 2, "Content-Type:", 13)) {
				char *v = l + 15;
				while (*v == ' ')
					v++;
				*ctype = strndup(v, strcspn(v, "\r\n"));
				break;
			}
	size_t blen = n - (size_t)(end + 4 - buf);
	memmove(buf, end + 4, blen);
	buf[blen] = 0;
	*status = code;
	*resp = buf;
	*resp_len = blen;
	return 0;
}
