/* A sandbox's network mode over its life: the egress relay of an allowlist sandbox (started at
 * create, stopped by destroy, by a reset and by a switch away), and switches between none,
 * loopback and allowlist on a READY sandbox (a session's stages).
 *
 * All three share the sandbox's own namespace; they differ in lo's state (none: down) and in
 * whether the relay listens on 127.0.0.1:PD_RELAY_PORT inside it. The namespace belongs to the
 * host, so the host (this thread, after setns) can turn lo on or off and make the listener;
 * the sandbox cannot do either. A namespace whose lo was switched is never handed to another
 * sandbox: the pool would compare it with fresh ones of its first mode, and a switched lo is not
 * something those probes are meant to tell apart. */
#define _GNU_SOURCE
#include "sandbox.h"
#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const net_names[PD_NET_N] = {[PD_NET_LOOPBACK] = "loopback", [PD_NET_NONE] = "none",
						[PD_NET_HOST] = "host", [PD_NET_ALLOWLIST] = "allowlist"};

const char *pd_net_name(pd_net n)
{
	return (unsigned)n < PD_NET_N ? net_names[n] : "?";
}

int pd_net_parse(const char *name)
{
	for (int m = 0; m < PD_NET_N; m++)
		if (name && !strcmp(name, net_names[m]))
			return m;
	return -1;
}

/* Runs in the sandbox's namespace: lo up or down (up < 0: leave it), then the relay's listener
 * when lfd is not NULL. */
static int in_netns(pd_sandbox *s, int up, int *lfd, pd_err *e)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/ns/net", (int)s->pid);
	int nfd = open(p, O_RDONLY | O_CLOEXEC);
	if (nfd < 0)
		return pd_fail(e, errno, "open the sandbox's network namespace");
	if (setns(nfd, CLONE_NEWNET) < 0) {
		int err = errno;
		close(nfd);
		return pd_fail(e, err, "enter the sandbox's network namespace");
	}
	close(nfd);
	int rc = 0;
	if (up >= 0) {
		int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr;
		memset(&ifr, 0, sizeof ifr);
		memcpy(ifr.ifr_name, "lo", 3);
		if (sk < 0 || ioctl(sk, SIOCGIFFLAGS, &ifr) < 0) {
			rc = pd_fail(e, errno, "get lo's flags");
		} else {
			if (up)
				ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
			else
				ifr.ifr_flags &= ~IFF_UP;
			if (ioctl(sk, SIOCSIFFLAGS, &ifr) < 0)
				rc = pd_fail(e, errno, "turn lo %s", up ? "on" : "off");
		}
		if (sk >= 0)
			close(sk);
	}
	if (rc == 0 && lfd) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(PD_RELAY_PORT)};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		int one = 1;
		if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
		    bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 64) < 0) {
			rc = pd_fail(e, errno, "the egress relay's socket at 127.0.0.1:%d in the sandbox", PD_RELAY_PORT);
			if (fd >= 0)
				close(fd);
		} else {
			*lfd = fd;
		}
	}
	if (pd_netns_leave(s->ctx->net, rc ? NULL : e) < 0) {
		if (lfd && *lfd >= 0)
			close(*lfd), *lfd = -1;
		return -1;
	}
	return rc;
}

static int relay_on(pd_sandbox *s, const pd_egress_opts *eg, pd_err *e)
{
	int lfd = -1;
	if (in_netns(s, -1, &lfd, e) < 0)
		return -1;
	return pd_relay_start(lfd, eg, &s->relay, e);
}

void pd_sb_relay_off(pd_sandbox *s)
{
	pd_relay_stop(s->relay);
	s->relay = NULL;
}

int pd_sb_net_created(pd_sandbox *s, pd_err *e)
{
	s->net_now = s->opts.net;
	if (s->opts.net != PD_NET_ALLOWLIST)
		return 0;
	return relay_on(s, s->opts.egress, e);
}

int pd_sb_net_restore(pd_sandbox *s, pd_err *e)
{
	pd_sb_relay_off(s);
	if (s->lo_switched)
		return pd_fail(e, EPERM,
			       "sandbox %s: its loopback was switched on or off, so its network namespace is "
			       "not reused",
			       s->id);
	s->net_now = s->opts.net == PD_NET_ALLOWLIST ? PD_NET_LOOPBACK : s->opts.net;
	return 0;
}

int pd_sb_net_reopen(pd_sandbox *s, pd_err *e)
{
	return pd_sb_net_created(s, e);
}

int pd_sandbox_set_network(pd_sandbox *s, pd_net net, const pd_egress_opts *eg, pd_err *e)
{
	if (s->state != PD_READY)
		return pd_fail(e, EINVAL, "sandbox %s is %s, not READY", s->id, pd_state_name(s->state));
	if ((unsigned)net >= PD_NET_N)
		return pd_fail(e, EINVAL, "network: unknown mode");
	if (!s->netns || net == PD_NET_HOST)
		return pd_fail(e, EPERM, "network: the host's network is chosen when a sandbox is made, not switched");
	bool lo_before = s->net_now != PD_NET_NONE, lo_after = net != PD_NET_NONE;
	pd_sb_relay_off(s);
	if (lo_before != lo_after) {
		/* from here on the namespace is not the pool's to hand out again */
		s->lo_switched = true;
		pd_netns_taint(s->netns);
		if (in_netns(s, lo_after, NULL, e) < 0) {
			s->net_now = PD_NET_NONE; /* unknown: the safest claim */
			return -1;
		}
	}
	s->net_now = net == PD_NET_ALLOWLIST ? PD_NET_LOOPBACK : net;
	if (net == PD_NET_ALLOWLIST) {
		if (relay_on(s, eg, e) < 0)
			return -1;
		s->net_now = PD_NET_ALLOWLIST;
	}
	return 0;
}

pd_net pd_sandbox_network(const pd_sandbox *s)
{
	return s->net_now;
}

static char var_http[] = "http_proxy=" PD_RELAY_URL, var_https[] = "https_proxy=" PD_RELAY_URL,
	    var_HTTP[] = "HTTP_PROXY=" PD_RELAY_URL, var_HTTPS[] = "HTTPS_PROXY=" PD_RELAY_URL;
static char *const proxy_vars[] = {var_http, var_https, var_HTTP, var_HTTPS, NULL};

char **pd_sb_proxy_env(const pd_sandbox *s, char *const *envp)
{
	if (!s->relay)
		return NULL;
	return pd_env_merge(envp, proxy_vars);
}

void pd_sb_relay_collect(pd_sandbox *s, pd_result *r, const pd_audit_opts *ao, uint64_t t0_us)
{
	pd_relay_collect(s->relay, r, ao, t0_us);
}
