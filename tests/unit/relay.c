/* relayreq.c: the egress relay's judgement without a sandbox. Allowlist entries, request heads
 * (CONNECT, absolute URIs, Host headers), matching by name or by address whatever its spelling,
 * names resolving to loopback, the TLS server name of a ClientHello. */
#define _GNU_SOURCE
#include "relay.h"
#include "tap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static relay_rule rules[8];
static size_t nrules;

static void rule(const char *entry)
{
	pd_err e;
	if (!ok(relay_rule_parse(entry, &rules[nrules], &e) == 0, "entry %s", entry))
		printf("#   %s\n", e.msg);
	nrules++;
}

static void bad_entry(const char *entry)
{
	relay_rule r;
	pd_err e;
	ok(relay_rule_parse(entry, &r, &e) < 0 && e.code == EINVAL && !strstr(e.msg, "Invalid argument"),
	   "entry '%s' refused (%s)", entry, e.msg);
}

/* what the head asks for: "tunnel host:port", "http host:port", or "STATUS why" */
static const char *ask(const char *head)
{
	static char out[300];
	relay_req q;
	int st;
	char why[128];
	if (relay_parse_head(head, strlen(head), &q, &st, why, sizeof why) < 0)
		snprintf(out, sizeof out, "%d %s", st, why);
	else
		snprintf(out, sizeof out, "%s %s:%u", q.tunnel ? "tunnel" : "http", q.host, q.port);
	free(q.fwd);
	return out;
}

static bool granted(const char *host, unsigned port)
{
	char why[128];
	return relay_match(rules, nrules, host, port, why, sizeof why) != NULL;
}

static void hello_sni(void)
{
	/* a minimal ClientHello: version, random, no session id, one suite, null compression,
	 * one extension (server_name) */
	const char *name = "Mirror.Example.";
	size_t nl = strlen(name);
	unsigned char b[256];
	size_t p = 0;
	unsigned char body[200];
	size_t q = 0;
	body[q++] = 3, body[q++] = 3;
	memset(body + q, 0, 32), q += 32;
	body[q++] = 0;
	body[q++] = 0, body[q++] = 2, body[q++] = 0x13, body[q++] = 1;
	body[q++] = 1, body[q++] = 0;
	size_t xl = 4 + 5 + nl;
	body[q++] = (unsigned char)(xl >> 8), body[q++] = (unsigned char)xl;
	body[q++] = 0, body[q++] = 0; /* server_name */
	body[q++] = 0, body[q++] = (unsigned char)(5 + nl);
	body[q++] = 0, body[q++] = (unsigned char)(3 + nl);
	body[q++] = 0;
	body[q++] = 0, body[q++] = (unsigned char)nl;
	memcpy(body + q, name, nl), q += nl;
	b[p++] = 22, b[p++] = 3, b[p++] = 1;
	b[p++] = (unsigned char)((q + 4) >> 8), b[p++] = (unsigned char)(q + 4);
	b[p++] = 1, b[p++] = 0, b[p++] = (unsigned char)(q >> 8), b[p++] = (unsigned char)q;
	memcpy(b + p, body, q), p += q;
	char sni[128];
	relay_sni(b, p, sni, sizeof sni);
	is_str(sni, "mirror.example", "the ClientHello's server name, lower case, without the final dot");
	relay_sni(b, p - 4, sni, sizeof sni);
	is_str(sni, "", "a ClientHello cut short: no name");
	relay_sni((const unsigned char *)"GET / HTTP/1.1\r\n\r\n", 18, sni, sizeof sni);
	is_str(sni, "", "not TLS: no name");
}

int main(void)
{
	plan(40);
	rule("mirror.example:8080");
	rule("127.0.0.1:9000");
	rule("[::1]:9001");
	rule("localhost:9002");
	rule("LOCALHOST.:9003");
	bad_entry("mirror.example");
	bad_entry("mirror.example:0");
	bad_entry("mirror.example:65536");
	bad_entry("::1:80");
	bad_entry("mir ror:80");
	bad_entry("1.2.3.4.5:80");
	is_int(pd_egress_entry_check("pypi.mirror.local:3141", NULL), 0, "pd_egress_entry_check takes a name:port");

	is_str(ask("CONNECT mirror.example:8080 HTTP/1.1\r\nHost: x\r\n\r\n"), "tunnel mirror.example:8080", "CONNECT");
	is_str(ask("CONNECT [::1]:9001 HTTP/1.1\r\n\r\n"), "tunnel ::1:9001", "CONNECT to an IPv6 address");
	is_str(ask("CONNECT mirror.example HTTP/1.1\r\n\r\n"), "400 CONNECT needs HOST:PORT", "CONNECT without a port");
	is_str(ask("GET http://Mirror.Example/simple/ HTTP/1.1\r\nHost: mirror.example\r\n\r\n"),
	       "http mirror.example:80", "an absolute URI: its host, port 80 by default");
	is_str(ask("GET /x HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n\r\n"), "http 127.0.0.1:9000", "origin form: the Host header");
	is_str(ask("GET http://127.0.0.1:9000/ HTTP/1.1\r\nHost: evil.example\r\n\r\n"),
	       "403 Host header differs from the request's host", "a Host header naming another host");
	is_str(ask("GET http://u@127.0.0.1:9000/ HTTP/1.1\r\n\r\n"), "400 credentials in the URI", "credentials in the URI");
	is_str(ask("GET https://mirror.example/ HTTP/1.1\r\n\r\n"), "501 https:// through a plain request: use CONNECT",
	       "https:// without CONNECT");
	is_str(ask("HELLO\r\n\r\n"), "400 not an HTTP/1 request line", "garbage");

	/* the head sent on: origin form, no Proxy-* headers, one request per connection */
	relay_req q;
	int st;
	char why[128];
	const char *h = "GET http://mirror.example:8080/a?b HTTP/1.1\r\nHost: mirror.example:8080\r\n"
			"Proxy-Authorization: x\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n";
	relay_parse_head(h, strlen(h), &q, &st, why, sizeof why);
	/* the copy is freed too: make asan's LeakSanitizer failed this file on it */
	char *fwd = q.fwd ? strndup(q.fwd, q.fwd_len) : NULL;
	is_str(fwd, "GET /a?b HTTP/1.1\r\nHost: mirror.example:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n",
	       "the forwarded head");
	free(fwd);
	free(q.fwd);
	h = "POST http://mirror.example:8080/up HTTP/1.1\r\nContent-Length: 1234\r\n\r\n";
	ok(relay_parse_head(h, strlen(h), &q, &st, why, sizeof why) == 0 && q.body_len == 1234,
	   "a body is relayed by its Content-Length (nothing after it)");
	free(q.fwd);
	is_str(ask("POST http://mirror.example:8080/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
	       "501 chunked request bodies are not relayed", "a chunked body is refused");

	ok(granted("mirror.example", 8080), "a listed name and port");
	ok(!granted("mirror.example", 8081), "another port of a listed name");
	ok(!granted("evil.example", 8080), "an unlisted name");
	ok(granted("127.0.0.1", 9000) && granted("127.1", 9000) && granted("2130706433", 9000) &&
		   granted("0x7f.0.0.1", 9000) && granted("::ffff:127.0.0.1", 9000),
	   "a listed address in any spelling");
	ok(!granted("127.0.0.2", 9000) && !granted("0x7f000002", 9000) && !granted("::ffff:127.0.0.2", 9000),
	   "an unlisted address in any spelling");
	ok(granted("::1", 9001) && granted("0:0:0:0:0:0:0:1", 9001), "a listed IPv6 address in any spelling");
	ok(!granted("127.0.0.1", 9001), "an address is not another one's");
	ok(!granted("localhost", 9000), "a name does not match an address entry (nor the other way)");
	ok(granted("localhost", 9003), "an entry's case and final dot do not matter");
	ok(!granted("mirror.example.evil", 8080) && !granted("xmirror.example", 8080), "no suffix or prefix matches");

	struct sockaddr_storage as[4];
	int n = relay_resolve(&rules[3], as, 4, why, sizeof why);
	ok(n > 0, "localhost may resolve to loopback (it can mean nothing else)");
	relay_rule r;
	n = relay_resolve(&rules[1], as, 4, why, sizeof why);
	char a[64];
	if (n == 1)
		relay_addr_str(&as[0], a, sizeof a);
	ok(n == 1 && !strcmp(a, "127.0.0.1:9000"), "an address entry resolves to itself");
	/* a name resolving to loopback: the host's /etc/hosts entries other than localhost (when
	 * there is one), resolved by the C library as the relay does */
	FILE *f = fopen("/etc/hosts", "r");
	char line[512], name[256] = "";
	while (f && !name[0] && fgets(line, sizeof line, f)) {
		char ip[64], nm[256];
		if (sscanf(line, "%63s %255s", ip, nm) == 2 && !strncmp(ip, "127.", 4) && strcmp(nm, "localhost") &&
		    nm[0] != '#' && strchr(nm, '.') == NULL)
			snprintf(name, sizeof name, "%s:80", nm);
	}
	if (f)
		fclose(f);
	if (name[0] && relay_rule_parse(name, &r, NULL) == 0) {
		n = relay_resolve(&r, as, 4, why, sizeof why);
		ok(n < 0 && !strncmp(why, "resolves to 127.", 16), "a name resolving to loopback is refused (%s: %s)", name,
		   why);
	} else {
		ok(1, "# skip no name besides localhost resolves to loopback here");
	}
	hello_sni();
	return done();
}
