/* The egress relay of an allowlist sandbox (relay.c: threads and copying; relayreq.c: what a
 * request asks for and whether the allowlist grants it). */
#ifndef PADDOCK_RELAY_H
#define PADDOCK_RELAY_H

#include "internal.h"

#include <netinet/in.h>
#include <sys/socket.h>

#define RELAY_HOST 256
#define RELAY_HEAD_MAX 8192

/* One allowlist entry: a name (matched as spelled, case and a final dot aside) or an address
 * (matched as an address, whatever its spelling: 127.1 is 127.0.0.1), and a port. */
typedef struct relay_rule {
	char host[RELAY_HOST]; /* lower case, no brackets, no final dot */
	bool is_ip;
	struct in6_addr ip; /* an IPv4 address as ::ffff:a.b.c.d */
	unsigned port;
} relay_rule;

int relay_rule_parse(const char *entry, relay_rule *r, pd_err *e);

/* What the program's request head asks for. */
typedef struct relay_req {
	bool tunnel;           /* CONNECT host:port; else an HTTP request to forward */
	char host[RELAY_HOST]; /* as relay_rule.host */
	unsigned port;
	char *fwd;             /* the head to send to the target (HTTP only; malloc'd) */
	size_t fwd_len;
	uint64_t body_len;     /* HTTP: the request body's length (Content-Length; 0 without) */
} relay_req;

/* Parses a complete head (up to and with its blank line). Returns 0, or -1 with why (the HTTP
 * status to answer in *status). */
int relay_parse_head(const char *buf, size_t len, relay_req *q, int *status, char *why, size_t wl);

/* The rule granting host:port, or NULL with why. */
const relay_rule *relay_match(const relay_rule *rules, size_t n, const char *host, unsigned port, char *why,
			      size_t wl);

/* The addresses to try for a granted rule: an address rule's own; a name's as resolved now,
 * refused (NULL count, why) when one is loopback, link-local, unspecified or multicast and
 * the name is not "localhost". Returns how many (at most max), or -1 with why. */
int relay_resolve(const relay_rule *r, struct sockaddr_storage *out, int max, char *why, size_t wl);

/* The server name of a TLS ClientHello starting buf (lower case), or "" (none, or not TLS). */
void relay_sni(const unsigned char *buf, size_t len, char *out, size_t outlen);

/* "a.b.c.d:port" or "[v6]:port" */
void relay_addr_str(const struct sockaddr_storage *ss, char *out, size_t len);

/* ---- relay.c ---- */

typedef struct pd_relay pd_relay;
/* Starts a relay serving the listening socket lfd (taken; made inside the sandbox's network
 * namespace) under o's allowlist and bounds. */
int pd_relay_start(int lfd, const pd_egress_opts *o, pd_relay **out, pd_err *e);
/* Closes every connection and the listener and ends the threads (waiting at most about two
 * seconds for one stuck in a name lookup; it then ends on its own and frees what is left). */
void pd_relay_stop(pd_relay *r);
/* Moves the connections ended since the last call into r as egress events (t0_us: the exec's
 * start), after giving those whose program side has closed a moment to finish; connections
 * still open are reported with their bytes so far (and not again). Allowed ones are counted in
 * audit_egress_allowed; refused ones too when the policy's egress is "log". */
void pd_relay_collect(pd_relay *r, pd_result *res, const pd_audit_opts *ao, uint64_t t0_us);

#endif
