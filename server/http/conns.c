/* Connection limits and the descriptor reserve. libmicrohttpd's accept policy and connection
 * notifications (both on its event thread) keep the count of open connections and, per client
 * IPv4 address, refuse past max_connections and max_conns_per_ip; the descriptor reserve refuses
 * work (a run, a session) that would build a sandbox from the descriptors kept for connections. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- file descriptors ------------------------------------------------------------------------ */

/* Every connection and every sandbox holds descriptors (a sandbox: its init's socket, a pidfd,
 * its uid-slot lock, and a dozen more while it is built). The connection limit keeps connections
 * within their share of RLIMIT_NOFILE; this keeps sandboxes within theirs, so that the last
 * descriptors are always there for accept(). Without it, sessions could take every descriptor:
 * accept() would fail with EMFILE, libmicrohttpd would stop accepting (or, with no connection
 * open, retry accept() in a busy loop), and clients would wait unanswered in the backlog. */
long conns_fds_open(void)
{
	return pd_open_fds(); /* -1: no descriptor even for that, as short as can be */
}

/* Whether the template's pool has a READY sandbox: taking it needs no new descriptor (its own are
 * open already, and counted). */
static bool pool_has_ready(pd_server *s, const char *template_name)
{
	size_t n;
	pd_pool_stats *st = pd_pools_stats(s->pools, &n);
	bool ready = false;
	for (size_t i = 0; st && i < n && !ready; i++)
		ready = !strcmp(st[i].template_name, template_name) && st[i].ready > 0;
	free(st);
	return ready;
}

bool conns_fds_short(pd_server *s, const char *template_name, char *msg, size_t len)
{
	/* a READY sandbox needs no new descriptor, and checking for one is cheaper than counting
	 * the open descriptors in /proc/self/fd */
	if (!s->fd_limit || pool_has_ready(s, template_name))
		return false;
	long open_ = conns_fds_open();
	unsigned conns = __atomic_load_n(&s->conns_open, __ATOMIC_RELAXED);
	uint64_t conn_room = s->o.max_connections > conns ? s->o.max_connections - conns : 0;
	uint64_t need = conn_room + FD_MARGIN + FD_PER_SANDBOX;
	uint64_t free_ = open_ < 0 ? 0 : s->fd_limit > (uint64_t)open_ ? s->fd_limit - (uint64_t)open_ : 0;
	if (free_ >= need)
		return false;
	__atomic_add_fetch(&s->fd_refused, 1, __ATOMIC_RELAXED);
	snprintf(msg, len,
		 "out of file descriptors: %llu of %llu free, %llu kept for connections and the daemon: retry later",
		 (unsigned long long)free_, (unsigned long long)s->fd_limit,
		 (unsigned long long)(conn_room + FD_MARGIN));
	return true;
}

/* ---- connections ----------------------------------------------------------------------------- */

/* The client's IPv4 address, false for another family (a unix socket has none). */
static bool client_ipv4(const struct sockaddr *sa, socklen_t len, uint32_t *ip)
{
	if (!sa || sa->sa_family != AF_INET || len < (socklen_t)sizeof(struct sockaddr_in))
		return false;
	*ip = ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr);
	return true;
}

static bool ip_exempt(const pd_server *s, uint32_t ip)
{
	for (size_t i = 0; i < s->nexempt; i++)
		if ((ip & s->exempt[i].mask) == s->exempt[i].net)
			return true;
	return false;
}

static ip_count *ip_find(pd_server *s, uint32_t ip)
{
	for (size_t i = 0; i < s->nips; i++)
		if (s->ips[i].ip == ip)
			return &s->ips[i];
	return NULL;
}

/* A refusal is logged at most once a second: a client hammering the limit must not flood the log. */
static void log_refusal(pd_server *s, const char *reason, uint32_t ip)
{
	uint64_t now = pd_now_us();
	if (now - s->refusal_logged_us < 1000000)
		return;
	s->refusal_logged_us = now;
	char client[16];
	snprintf(client, sizeof client, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
	pd_log("warn", "connection refused", PD_LS("reason", reason), PD_LS("client", client),
	       PD_LU("open", __atomic_load_n(&s->conns_open, __ATOMIC_RELAXED)));
}

/* libmicrohttpd's accept policy: called on the event thread for each accepted socket, before any
 * byte is read; MHD_NO closes it at once. This is where one address is kept from taking every
 * connection slot (libmicrohttpd's own per-IP limit would refuse as well, but without telling us,
 * so the refusals could not be counted). */
enum MHD_Result conns_on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	pd_server *s = cls;
	uint32_t ip = 0;
	bool v4 = client_ipv4(addr, addrlen, &ip);
	if (__atomic_load_n(&s->conns_open, __ATOMIC_RELAXED) >= s->o.max_connections) {
		__atomic_add_fetch(&s->refused_limit, 1, __ATOMIC_RELAXED);
		log_refusal(s, "max_connections", ip);
		return MHD_NO;
	}
	if (!v4 || s->o.max_conns_per_ip == UINT_MAX || ip_exempt(s, ip))
		return MHD_YES;
	ip_count *c = ip_find(s, ip);
	if (c && c->n >= s->o.max_conns_per_ip) {
		__atomic_add_fetch(&s->refused_per_ip, 1, __ATOMIC_RELAXED);
		log_refusal(s, "max_connections_per_ip", ip);
		return MHD_NO;
	}
	return MHD_YES;
}

/* Counts connections as libmicrohttpd starts and closes them; *socket_context remembers whether
 * this one was counted against its address (1 + the address), so the close undoes exactly that. */
void conns_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	pd_server *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		__atomic_add_fetch(&s->conns_open, 1, __ATOMIC_RELAXED);
		*socket_context = NULL;
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		uint32_t ip;
		if (!ci || !client_ipv4(ci->client_addr, sizeof(struct sockaddr_in), &ip) || ip_exempt(s, ip) ||
		    s->o.max_conns_per_ip == UINT_MAX)
			return;
		ip_count *e = ip_find(s, ip);
		if (!e) {
			if (s->nips >= (size_t)s->o.max_connections + 16)
				return; /* cannot happen within the connection limit; uncounted beats a crash */
			e = &s->ips[s->nips++];
			*e = (ip_count){ip, 0};
		}
		e->n++;
		*socket_context = (void *)(uintptr_t)((uint64_t)ip + 1);
		return;
	}
	__atomic_sub_fetch(&s->conns_open, 1, __ATOMIC_RELAXED);
	if (!*socket_context)
		return;
	uint32_t ip = (uint32_t)((uintptr_t)*socket_context - 1);
	*socket_context = NULL;
	ip_count *e = ip_find(s, ip);
	if (e && --e->n == 0)
		*e = s->ips[--s->nips]; /* the last entry takes its place */
}

int conns_parse_exempt(pd_server *s, const char *list, pd_err *e)
{
	s->nexempt = 0;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", list);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		if (!strcmp(tok, "none"))
			continue;
		if (s->nexempt == MAX_EXEMPT)
			return pd_fail_as(e, EINVAL, "--per-ip-exempt: at most %d networks", MAX_EXEMPT);
		char *slash = strchr(tok, '/');
		long bits = 32;
		if (slash) {
			char *end;
			*slash = 0;
			bits = strtol(slash + 1, &end, 10);
			if (*end || end == slash + 1 || bits < 0 || bits > 32)
				return pd_fail_as(e, EINVAL, "--per-ip-exempt: '%s/%s' has a bad prefix length (0 to 32)",
						  tok, slash + 1);
		}
		struct in_addr a;
		if (inet_pton(AF_INET, tok, &a) != 1)
			return pd_fail_as(e, EINVAL, "--per-ip-exempt: '%s' is not an IPv4 address or network", tok);
		uint32_t mask = bits ? ~0u << (32 - bits) : 0;
		s->exempt[s->nexempt].mask = mask;
		s->exempt[s->nexempt].net = ntohl(a.s_addr) & mask;
		s->nexempt++;
	}
	return 0;
}
