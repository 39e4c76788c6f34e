/* The egress relay's judgement: what a program's proxy request asks for, and whether the
 * sandbox's allowlist grants it.
 *
 * A program reaches the outside only by asking the relay, by name or by address, for a port.
 * The rules are deliberately literal. A name entry grants that name, resolved by the relay (not
 * by the program) at each connection; an address entry grants that address, however the
 * program spells it (127.1, 0x7f000001 and ::ffff:127.0.0.1 are 127.0.0.1, so an unlisted
 * address cannot slip through as an odd spelling, and a listed one is not refused for one).
 * Neither grants the other: a listed name does not open its addresses to requests by address.
 * A name whose addresses include loopback, link-local (the cloud metadata service lives there),
 * unspecified or multicast ones is refused: a name the attempt can influence (its own DNS
 * record) must not lead into the host or the harness. "localhost" is the one name that may, as
 * it can only mean that. Private ranges (10/8 and so on) are where mirrors live: allowed. */
#define _GNU_SOURCE
#include "relay.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* host (not bracketed) as an address, any spelling the C library would take: true and *a */
static bool host_ip(const char *host, struct in6_addr *a)
{
	struct in_addr v4;
	if (inet_pton(AF_INET6, host, a) == 1)
		return true;
	/* inet_aton: the loose forms (127.1, 0x7f.1, 2130706433) getaddrinfo also accepts */
	if (inet_aton(host, &v4)) {
		memset(a, 0, sizeof *a);
		a->s6_addr[10] = a->s6_addr[11] = 0xff;
		memcpy(&a->s6_addr[12], &v4, 4);
		return true;
	}
	return false;
}

/* A DNS name: labels of letters, digits, '-' and '_', 1-63 bytes, not all digits at the end
 * (that would be an address spelling inet_aton refused, e.g. 1.2.3.4.5). */
static bool host_name_ok(const char *h)
{
	size_t n = strlen(h);
	if (!n || n > 253)
		return false;
	size_t lab = 0;
	bool digits_only = true;
	for (size_t i = 0; i <= n; i++) {
		char c = h[i];
		if (c == '.' || c == 0) {
			if (!lab || lab > 63)
				return false;
			if (c == 0 && digits_only)
				return false;
			lab = 0;
			digits_only = true;
			continue;
		}
		if (!isalnum((unsigned char)c) && c != '-' && c != '_')
			return false;
		if (!isdigit((unsigned char)c))
			digits_only = false;
		lab++;
	}
	return true;
}

/* "host:port" or "[v6]:port" into host (lower case, no brackets, no final dot) and port. */
static int split_hostport(const char *s, size_t len, char *host, size_t hl, unsigned *port, bool need_port)
{
	const char *end = s + len, *hs, *he, *colon;
	if (len && s[0] == '[') {
		he = memchr(s, ']', len);
		if (!he)
			return -1;
		hs = s + 1;
		colon = he + 1 < end ? he + 1 : NULL;
		if (colon && *colon != ':')
			return -1;
	} else {
		hs = s;
		colon = NULL;
		for (const char *p = s; p < end; p++)
			if (*p == ':')
				colon = p;
		he = colon ? colon : end;
		if (memchr(hs, ':', (size_t)(he - hs)))
			return -1; /* an unbracketed IPv6 address: ambiguous */
	}
	size_t n = (size_t)(he - hs);
	if (!n || n >= hl)
		return -1;
	for (size_t i = 0; i < n; i++)
		host[i] = (char)tolower((unsigned char)hs[i]);
	host[n] = 0;
	if (n > 1 && host[n - 1] == '.')
		host[n - 1] = 0;
	if (!colon) {
		if (need_port)
			return -1;
		*port = 0;
		return 0;
	}
	const char *ps = colon + 1;
	if (ps >= end || end - ps > 5)
		return -1;
	unsigned v = 0;
	for (const char *p = ps; p < end; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (!v || v > 65535)
		return -1;
	*port = v;
	return 0;
}

int relay_rule_parse(const char *entry, relay_rule *r, pd_err *e)
{
	memset(r, 0, sizeof *r);
	if (!entry || split_hostport(entry, strlen(entry), r->host, sizeof r->host, &r->port, true) < 0)
		return pd_fail_as(e, EINVAL, "not HOST:PORT (a name, an IPv4 address or [an IPv6 one], and a port 1-65535)");
	r->is_ip = host_ip(r->host, &r->ip);
	if (!r->is_ip && !host_name_ok(r->host))
		return pd_fail_as(e, EINVAL, "'%s' is neither an address nor a host name", r->host);
	return 0;
}

int pd_egress_entry_check(const char *entry, pd_err *e)
{
	relay_rule r;
	return relay_rule_parse(entry, &r, e);
}

const relay_rule *relay_match(const relay_rule *rules, size_t n, const char *host, unsigned port, char *why,
			      size_t wl)
{
	struct in6_addr a;
	bool ip = host_ip(host, &a);
	if (!ip && !host_name_ok(host)) {
		snprintf(why, wl, "not a host name");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (rules[i].port != port || rules[i].is_ip != ip)
			continue;
		if (ip ? !memcmp(&a, &rules[i].ip, sizeof a) : !strcmp(host, rules[i].host))
			return &rules[i];
	}
	snprintf(why, wl, "not on the allowlist");
	return NULL;
}

/* loopback, link-local, unspecified, multicast or broadcast (IPv4 in its mapped, compatible or
 * NAT64 forms too) */
static bool special(const struct in6_addr *a)
{
	const uint8_t *b = a->s6_addr;
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
	static const uint8_t zero[12] = {0};
	if (!memcmp(b, mapped, 12) || !memcmp(b, nat64, 12) || (!memcmp(b, zero, 12) && (b[12] | b[13]))) {
		uint8_t o = b[12];
		return o == 0 || o == 127 || (o == 169 && b[13] == 254) || o >= 224;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_LINKLOCAL(a) ||
	    IN6_IS_ADDR_MULTICAST(a))
		return true;
	return false;
}

int relay_resolve(const relay_rule *r, struct sockaddr_storage *out, int max, char *why, size_t wl)
{
	if (r->is_ip) {
		memset(&out[0], 0, sizeof out[0]);
		if (IN6_IS_ADDR_V4MAPPED(&r->ip)) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&out[0];
			s4->sin_family = AF_INET;
			memcpy(&s4->sin_addr, &r->ip.s6_addr[12], 4);
			s4->sin_port = htons((uint16_t)r->port);
		} else {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out[0];
			s6->sin6_family = AF_INET6;
			s6->sin6_addr = r->ip;
			s6->sin6_port = htons((uint16_t)r->port);
		}
		return 1;
	}
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	char port[8];
	snprintf(port, sizeof port, "%u", r->port);
	int rc = getaddrinfo(r->host, port, &hints, &res);
	if (rc) {
		snprintf(why, wl, "lookup failed: %s", gai_strerror(rc));
		return -1;
	}
	bool local = !strcmp(r->host, "localhost");
	int n = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		struct in6_addr a;
		if (ai->ai_family == AF_INET) {
			memset(&a, 0, sizeof a);
			a.s6_addr[10] = a.s6_addr[11] = 0xff;
			memcpy(&a.s6_addr[12], &((struct sockaddr_in *)(void *)ai->ai_addr)->sin_addr, 4);
		} else if (ai->ai_family == AF_INET6) {
			a = ((struct sockaddr_in6 *)(void *)ai->ai_addr)->sin6_addr;
		} else {
			continue;
		}
		if (!local && special(&a)) {
			/* one such address refuses the name: trying only the others would still let a
			 * name that flips between answers reach the host */
			struct sockaddr_storage ss;
			memset(&ss, 0, sizeof ss);
			memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
			char as[64];
			relay_addr_str(&ss, as, sizeof as);
			snprintf(why, wl, "resolves to %s (loopback, link-local or special)", as);
			freeaddrinfo(res);
			return -1;
		}
		if (n < max && ai->ai_addrlen <= sizeof out[0]) {
			memset(&out[n], 0, sizeof out[n]);
			memcpy(&out[n], ai->ai_addr, ai->ai_addrlen);
			n++;
		}
	}
	freeaddrinfo(res);
	if (!n)
		snprintf(why, wl, "no address");
	return n ? n : -1;
}

void relay_addr_str(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof a);
		snprintf(out, len, "%s:%u", a, ntohs(s4->sin_port));
	} else {
		const struct sockaddr_in6 *s6 = (const void *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof a);
		snprintf(out, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	}
}

/* ---- request heads ---- */

/* the value of header name in the head's lines after the first, or NULL; *vl its length */
static const char *header(const char *head, size_t len, const char *name, size_t *vl)
{
	size_t nl = strlen(name);
	const char *end = head + len;
	const char *p = memchr(head, '\n', len);
	while (p && ++p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break;
		if ((size_t)(eol - p) > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) {
			const char *v = p + nl + 1, *ve = eol;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			*vl = (size_t)(ve - v);
			return v;
		}
		p = eol;
	}
	return NULL;
}

/* the head for the target: the request line in origin form, Connection: close (one request
 * per connection: a second request on it could not name another host, but it must not reuse
 * a granted connection either), no Proxy-* headers */
static char *rewrite(const char *head, size_t len, const char *method, size_t ml, const char *path, size_t pl,
		     const char *version, size_t vl, size_t *outlen)
{
	char *o = malloc(len + 64);
	if (!o)
		return NULL;
	size_t n = 0;
	memcpy(o + n, method, ml), n += ml;
	o[n++] = ' ';
	if (!pl)
		o[n++] = '/';
	memcpy(o + n, path, pl), n += pl;
	o[n++] = ' ';
	memcpy(o + n, version, vl), n += vl;
	memcpy(o + n, "\r\n", 2), n += 2;
	const char *end = head + len;
	const char *p = memchr(head, '\n', len);
	while (p && ++p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break;
		size_t ll = (size_t)(eol - p) + 1;
		bool blank = ll <= 2;
		bool drop = !strncasecmp(p, "proxy-", 6) || !strncasecmp(p, "connection:", 11) ||
			    !strncasecmp(p, "keep-alive:", 11);
		if (blank) {
			memcpy(o + n, "Connection: close\r\n\r\n", 21), n += 21;
			break;
		}
		if (!drop)
			memcpy(o + n, p, ll), n += ll;
		p = eol;
	}
	*outlen = n;
	return o;
}

int relay_parse_head(const char *buf, size_t len, relay_req *q, int *status, char *why, size_t wl)
{
	memset(q, 0, sizeof *q);
	*status = 400;
	const char *eol = memchr(buf, '\n', len);
	if (!eol) {
		snprintf(why, wl, "no request line");
		return -1;
	}
	size_t ll = (size_t)(eol - buf);
	if (ll && buf[ll - 1] == '\r')
		ll--;
	const char *sp1 = memchr(buf, ' ', ll);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(buf + ll - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || (size_t)(buf + ll - sp2 - 1) < 8 || strncmp(sp2 + 1, "HTTP/1.", 7)) {
		snprintf(why, wl, "not an HTTP/1 request line");
		return -1;
	}
	const char *method = buf, *target = sp1 + 1, *version = sp2 + 1;
	size_t ml = (size_t)(sp1 - buf), tl = (size_t)(sp2 - target), vl = (size_t)(buf + ll - version);
	if (ml == 7 && !memcmp(method, "CONNECT", 7)) {
		q->tunnel = true;
		if (split_hostport(target, tl, q->host, sizeof q->host, &q->port, true) < 0) {
			snprintf(why, wl, "CONNECT needs HOST:PORT");
			return -1;
		}
		return 0;
	}
	/* an absolute URI (what a client sends a proxy), else the Host header */
	const char *auth, *path;
	size_t al, pl;
	unsigned defport = 80;
	if (tl > 7 && !strncasecmp(target, "http://", 7)) {
		auth = target + 7;
		const char *slash = memchr(auth, '/', tl - 7);
		al = slash ? (size_t)(slash - auth) : tl - 7;
		path = auth + al;
		pl = tl - 7 - al;
	} else if (tl > 8 && !strncasecmp(target, "https://", 8)) {
		*status = 501;
		snprintf(why, wl, "https:// through a plain request: use CONNECT");
		return -1;
	} else if (tl && target[0] == '/') {
		auth = header(buf, len, "host", &al);
		path = target;
		pl = tl;
		if (!auth) {
			snprintf(why, wl, "no host: neither an absolute URI nor a Host header");
			return -1;
		}
	} else {
		snprintf(why, wl, "unsupported request target");
		return -1;
	}
	if (memchr(auth, '@', al)) {
		snprintf(why, wl, "credentials in the URI");
		return -1;
	}
	if (split_hostport(auth, al, q->host, sizeof q->host, &q->port, false) < 0) {
		snprintf(why, wl, "bad host in the request");
		return -1;
	}
	if (!q->port)
		q->port = defport;
	/* a Host header naming someone else: the target would route on it (a virtual host the
	 * allowlist did not grant) */
	size_t hl;
	const char *h = header(buf, len, "host", &hl);
	if (h) {
		char hh[RELAY_HOST];
		unsigned hp = 0;
		if (split_hostport(h, hl, hh, sizeof hh, &hp, false) < 0 || strcmp(hh, q->host) ||
		    (hp && hp != q->port)) {
			*status = 403;
			snprintf(why, wl, "Host header differs from the request's host");
			return -1;
		}
	}
	/* the body is relayed by its length and nothing after it (a second request on the same
	 * connection would reach the granted address with whatever Host it names) */
	if (header(buf, len, "transfer-encoding", &hl)) {
		*status = 501;
		snprintf(why, wl, "chunked request bodies are not relayed");
		return -1;
	}
	const char *cl = header(buf, len, "content-length", &hl);
	for (size_t i = 0; cl && i < hl; i++) {
		if (cl[i] < '0' || cl[i] > '9' || i >= 15) {
			snprintf(why, wl, "bad Content-Length");
			return -1;
		}
		q->body_len = q->body_len * 10 + (uint64_t)(cl[i] - '0');
	}
	q->fwd = rewrite(buf, len, method, ml, path, pl, version, vl, &q->fwd_len);
	if (!q->fwd) {
		*status = 500;
		snprintf(why, wl, "out of memory");
		return -1;
	}
	return 0;
}

/* ---- TLS server name ---- */

static unsigned be16(const unsigned char *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

void relay_sni(const unsigned char *b, size_t len, char *out, size_t outlen)
{
	out[0] = 0;
	/* record: type 22 (handshake), version, length; handshake: type 1 (ClientHello), length */
	if (len < 9 || b[0] != 22 || b[1] != 3 || b[5] != 1)
		return;
	size_t end = 5 + be16(b + 3);
	if (end > len)
		end = len;
	size_t p = 9 + 2 + 32; /* client version, random */
	if (p >= end)
		return;
	p += 1 + b[p]; /* session id */
	if (p + 2 > end)
		return;
	p += 2 + be16(b + p); /* cipher suites */
	if (p >= end)
		return;
	p += 1 + b[p]; /* compression methods */
	if (p + 2 > end)
		return;
	size_t xend = p + 2 + be16(b + p);
	p += 2;
	if (xend > end)
		xend = end;
	while (p + 4 <= xend) {
		unsigned type = be16(b + p), xl = be16(b + p + 2);
		p += 4;
		if (p + xl > xend)
			return;
		if (type == 0 && xl >= 5 && b[p + 2] == 0) { /* server_name: list, host_name entry */
			size_t nl = be16(b + p + 3);
			if (5 + nl > xl || nl >= outlen)
				return;
			for (size_t i = 0; i < nl; i++)
				out[i] = (char)tolower(b[p + 5 + i]);
			out[nl] = 0;
			if (nl > 1 && out[nl - 1] == '.')
				out[nl - 1] = 0;
			return;
		}
		p += xl;
	}
}
