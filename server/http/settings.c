/* serve's settings, checked before anything starts: by pd_server_start as it goes, and all at once
 * by pd_server_check (serve runs it first, serve --check runs only it), through the same functions,
 * so a setting --check takes is one serve takes, refused with the same message. A refusal names the
 * flag and says what is wrong in words (pd_fail_as): "Invalid argument" after it would say nothing
 * more, and "Input/output error" would say something false. */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* contrib/config.example.json's token, and the shortest token taken beyond loopback (16 bytes:
 * 96 bits in base64, past any guessing over HTTP) */
#define PD_EXAMPLE_TOKEN "change-me-to-a-long-random-string"
#define PD_TOKEN_MIN 16

/* The directory of the file path (what names it: the flag and its value) exists: the store and
 * the socket are made there, and the system's own word for a missing one ("unable to open
 * database file") does not say which. */
static int dir_exists(const char *what, const char *path, pd_err *e)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
		return pd_fail_as(e, ENAMETOOLONG, "%s: too long a path", what);
	const char *dir = dirname(tmp);
	struct stat st;
	if (stat(dir, &st) < 0) {
		if (errno == ENOENT)
			return pd_fail_as(e, ENOENT, "%s: the directory %s does not exist", what, dir);
		return pd_fail(e, errno, "%s: the directory %s", what, dir);
	}
	if (!S_ISDIR(st.st_mode))
		return pd_fail_as(e, ENOTDIR, "%s: %s is not a directory", what, dir);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return pd_fail_as(e, EISDIR, "%s: a directory, not a file", what);
	return 0;
}

int settings_listen(const char *l, const char *token, listen_addr *a, pd_err *e)
{
	memset(a, 0, sizeof *a);
	if (!strncmp(l, "unix:", 5)) {
		if (!l[5])
			return pd_fail_as(e, EINVAL, "--listen: '%s' names no path (unix:/path)", l);
		if (strlen(l + 5) >= sizeof a->path)
			return pd_fail_as(e, ENAMETOOLONG, "--listen: the unix socket path %s is over %zu bytes", l + 5,
					  sizeof a->path - 1);
		char what[sizeof a->path + 16];
		snprintf(what, sizeof what, "--listen %s", l);
		if (dir_exists(what, l + 5, e) < 0)
			return -1;
		a->is_unix = true;
		snprintf(a->path, sizeof a->path, "%s", l + 5);
		return 0;
	}
	const char *colon = strrchr(l, ':');
	if (!colon || colon == l || !colon[1])
		return pd_fail_as(e, EINVAL, "--listen: '%s' must be HOST:PORT (an IPv4 address and a port) or unix:/path",
				  l);
	if ((size_t)(colon - l) >= sizeof a->host)
		return pd_fail_as(e, EINVAL, "--listen: '%.*s' is not an IPv4 address", (int)(colon - l), l);
	memcpy(a->host, l, (size_t)(colon - l));
	a->host[colon - l] = 0;
	char *end;
	errno = 0;
	long port = strtol(colon + 1, &end, 10);
	if (*end || errno || colon[1] < '0' || colon[1] > '9' || port > 65535)
		return pd_fail_as(e, EINVAL, "--listen: '%s': the port must be a number from 0 to 65535", l);
	a->in.sin_family = AF_INET;
	a->in.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, a->host, &a->in.sin_addr) != 1)
		return pd_fail_as(e, EINVAL, "--listen: '%s' is not an IPv4 address", a->host);
	if ((ntohl(a->in.sin_addr.s_addr) >> 24) == 127)
		return 0;
	if (!token || !*token)
		return pd_fail_as(e, EPERM,
				  "--listen %s is beyond loopback: it needs a bearer token (--token or --token-file), "
				  "as anyone who reaches it can run code",
				  l);
	/* a token anyone can read in contrib/ or guess is no token: whoever reaches the port runs code */
	if (!strcmp(token, PD_EXAMPLE_TOKEN))
		return pd_fail_as(e, EPERM,
				  "--listen %s is beyond loopback: the token is the example config's "
				  "('%s'); make one, e.g. head -c 32 /dev/urandom | base64",
				  l, PD_EXAMPLE_TOKEN);
	if (strlen(token) < PD_TOKEN_MIN)
		return pd_fail_as(e, EPERM,
				  "--listen %s is beyond loopback: the token has %zu bytes, fewer than %d; make "
				  "one, e.g. head -c 32 /dev/urandom | base64",
				  l, strlen(token), PD_TOKEN_MIN);
	return 0;
}

int settings_db(const char *path, pd_err *e)
{
	char what[PATH_MAX + 8];
	snprintf(what, sizeof what, "--db %s", path);
	return dir_exists(what, path, e);
}

int settings_watermark(const char *w, pd_sched_opts *so, pd_err *e)
{
	size_t n = strlen(w);
	if (n > 1 && w[n - 1] == '%') {
		char *end;
		double pct = strtod(w, &end);
		if (end == w + n - 1 && strspn(w, "0123456789.") == n - 1 && pct >= 1 && pct <= 90) {
			so->breaker_min_free_pct = pct;
			return 0;
		}
	} else if (pd_parse_size(w, &so->breaker_min_free) == 0 && so->breaker_min_free >= (1u << 20)) {
		return 0;
	}
	return pd_fail_as(e, EINVAL,
			  "--memory-watermark: '%s' is not a size of at least 1M nor a percent from 1%% to 90%%", w);
}

int settings_budget(const char *w, pd_sched_opts *so, pd_err *e)
{
	size_t n = strlen(w);
	if (n > 1 && w[n - 1] == '%') {
		char *end;
		double pct = strtod(w, &end);
		if (end == w + n - 1 && strspn(w, "0123456789.") == n - 1 && pct >= 1 && pct <= 100) {
			so->memory_budget_pct = pct;
			return 0;
		}
	} else if (pd_parse_size(w, &so->memory_budget) == 0 && so->memory_budget >= (16u << 20)) {
		return 0;
	}
	return pd_fail_as(e, EINVAL, "--memory-budget: '%s' is not a size of at least 16M nor a percent from 1%% to 100%%",
			  w);
}

int pd_server_check(const pd_server_opts *o, pd_err *e)
{
	listen_addr la;
	if (settings_listen(o->listen ? o->listen : "127.0.0.1:8080", o->token, &la, e) < 0)
		return -1;
	if (o->db_path && settings_db(o->db_path, e) < 0)
		return -1;
	pd_sched_opts so = o->sched;
	if (o->memory_watermark && settings_watermark(o->memory_watermark, &so, e) < 0)
		return -1;
	if (o->memory_budget && settings_budget(o->memory_budget, &so, e) < 0)
		return -1;
	if (o->cluster && o->node_id && !pd_cluster_id_ok(o->node_id))
		return pd_fail_as(e, EINVAL, "--node-id '%s': " PD_CLUSTER_ID_RULE, o->node_id);
	pd_cluster_opts co = {.objects = o->cluster_objects, .s3_endpoint = o->cluster_s3_endpoint,
			      .s3_region = o->cluster_s3_region, .s3_credentials = o->cluster_s3_credentials};
	if (o->cluster && pd_cluster_objects_check(&co, e) < 0)
		return -1;
	/* the exemptions and the templates (their network twins too) as the server keeps them: in a
	 * server of its own that never starts */
	pd_server *s = calloc(1, sizeof *s);
	if (!s)
		return pd_fail(e, ENOMEM, "settings");
	s->o = *o;
	int rc = conns_parse_exempt(s, o->per_ip_exempt ? o->per_ip_exempt : "127.0.0.0/8", e);
	if (rc == 0)
		rc = o->templates_file ? pd_templates_load(o->templates_file, &s->tpl, &s->ntpl, e)
				       : pd_templates_default(&s->tpl, &s->ntpl, e);
	if (rc == 0)
		rc = netmodes_add(s, e);
	if (rc == 0)
		rc = session_rules_check_templates(s->tpl, s->ntpl, e);
	pd_templates_free(s->tpl, s->ntpl);
	free(s);
	if (rc < 0)
		return -1;
	/* the problems are read and parsed; their checkers are built only by the start (in sandboxes) */
	if (o->problems_dir) {
		pd_problem_set ps = {0};
		rc = pd_problems_load_dir(o->problems_dir, &ps, e);
		pd_problems_free(&ps);
		if (rc < 0)
			return -1;
	}
	return 0;
}
