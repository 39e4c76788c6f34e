/* paddock serve: the daemon. */
#define _GNU_SOURCE
#include "cli.h"
#include "server.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void serve_usage(FILE *f)
{
	fputs("usage: paddock serve [options]\n"
	      "\n"
	      "Runs the HTTP daemon: native API (/v1/runs, /v1/sessions...), SandboxFusion (/run_code,\n"
	      "/v1/ping), Piston (/api/v2/execute, /api/v2/runtimes), /metrics, /healthz, /readyz.\n"
	      "SIGINT or SIGTERM stops it gracefully: running and queued work is finished and answered.\n"
	      "\n"
	      "  -l, --listen ADDR      127.0.0.1:8080 (default), 0.0.0.0:PORT (needs a token), unix:/path\n"
	      "  --token TOKEN          bearer token required on every request but /healthz and /readyz\n"
	      "                         (also $PADDOCK_TOKEN; --token-file FILE reads it from a file)\n"
	      "  --templates FILE       templates (JSON); default: built-in bash, python, c, cpp, node\n"
	      "  --db FILE              results store (SQLite); default <state>/paddock.db\n"
	      "  --store-max SIZE       size the store's records may take; past it the oldest are\n"
	      "                         deleted (default 1G; 0 = no cap, at least 16M otherwise)\n"
	      "  --workers N            concurrent jobs (default 2 x CPUs)\n"
	      "  --queue-max N          queued jobs per priority class before refusing (default 4096)\n"
	      "  --retries N            retries of infrastructure failures in a fresh sandbox (default 2)\n"
	      "  --warm N               READY sandboxes kept per template (default: templates' pool.min)\n"
	      "  --max-body SIZE        largest request body (default 16M)\n"
	      "  --max-connections-per-ip N\n"
	      "                         open connections one client address may hold; more are closed\n"
	      "                         at accept and counted (default 256; 0 = no limit)\n"
	      "  --per-ip-exempt CIDRS  addresses that limit spares, comma-separated IPv4 networks\n"
	      "                         (default 127.0.0.0/8; \"none\" = spare none); unix-socket\n"
	      "                         clients have no address and are always spared\n"
	      "  --config FILE          JSON object with any of the options above (flags win)\n",
	      f);
}

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig)
{
	stop_signal = sig;
}

static char *read_small(const char *path)
{
	char buf[4096];
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	return strdup(buf);
}

/* The store's cap from a size string (or, from a config file, a number of bytes): 0 means no
 * cap (UINT64_MAX for the server); anything else must leave room for a few full records. */
static int store_max(const char *text, long long bytes, uint64_t *out)
{
	uint64_t v;
	if (text ? pd_parse_size(text, &v) < 0 : bytes < 0)
		return -1;
	if (!text)
		v = (uint64_t)bytes;
	if (v && v < (16u << 20))
		return -1;
	*out = v ? v : UINT64_MAX;
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, 0, 'h'},          {"listen", required_argument, 0, 'l'},
		{"token", required_argument, 0, 't'},   {"token-file", required_argument, 0, 'T'},
		{"templates", required_argument, 0, 'm'}, {"db", required_argument, 0, 'd'},
		{"workers", required_argument, 0, 'w'}, {"queue-max", required_argument, 0, 'q'},
		{"retries", required_argument, 0, 'r'}, {"warm", required_argument, 0, 'n'},
		{"max-body", required_argument, 0, 'b'}, {"config", required_argument, 0, 'c'},
		{"max-connections-per-ip", required_argument, 0, 'P'}, {"per-ip-exempt", required_argument, 0, 'E'},
		{"store-max", required_argument, 0, 'S'},
		{0, 0, 0, 0}};
	pd_server_opts o = {0};
	char *token = getenv("PADDOCK_TOKEN") ? strdup(getenv("PADDOCK_TOKEN")) : NULL;
	/* a config file first, so that flags given alongside override it */
	for (int i = 1; i < argc; i++) {
		const char *cfile = !strncmp(argv[i], "--config=", 9) ? argv[i] + 9
				    : !strcmp(argv[i], "--config") && i + 1 < argc ? argv[i + 1]
										: NULL;
		if (!cfile)
			continue;
		{
			json_error_t je;
			json_t *cfg = json_load_file(cfile, 0, &je);
			if (!cfg || !json_is_object(cfg)) {
				cli_error("--config %s: line %d: %s", cfile, je.line, cfg ? "not an object" : je.text);
				return EXIT_USAGE;
			}
			const char *k;
			json_t *v;
			json_object_foreach(cfg, k, v) {
				const char *sv = json_string_value(v);
				long long iv = json_is_integer(v) ? json_integer_value(v) : -1;
				if (!strcmp(k, "listen") && sv)
					o.listen = strdup(sv);
				else if (!strcmp(k, "token") && sv)
					token = strdup(sv);
				else if (!strcmp(k, "templates") && sv)
					o.templates_file = strdup(sv);
				else if (!strcmp(k, "db") && sv)
					o.db_path = strdup(sv);
				else if (!strcmp(k, "store_max") && (sv || iv >= 0)) {
					if (store_max(sv, iv, &o.store_max) < 0) {
						cli_error("--config %s: store_max: not 0 or a size of at least 16M", cfile);
						json_decref(cfg);
						return EXIT_USAGE;
					}
				}
				else if (!strcmp(k, "workers") && iv > 0)
					o.sched.workers = (unsigned)iv;
				else if (!strcmp(k, "queue_max") && iv > 0)
					o.sched.queue_max = (size_t)iv;
				else if (!strcmp(k, "retries") && iv >= 0)
					o.sched.retries = (unsigned)iv;
				else if (!strcmp(k, "warm") && iv >= 0)
					o.warm = (unsigned)iv;
				else if (!strcmp(k, "max_body") && iv > 0)
					o.max_body = (size_t)iv;
				else if (!strcmp(k, "max_connections_per_ip") && iv >= 0 && iv < UINT_MAX)
					o.max_conns_per_ip = iv ? (unsigned)iv : UINT_MAX;
				else if (!strcmp(k, "per_ip_exempt") && sv)
					o.per_ip_exempt = strdup(sv);
				else {
					cli_error("--config %s: unknown or mistyped key '%s'", cfile, k);
					json_decref(cfg);
					return EXIT_USAGE;
				}
			}
			json_decref(cfg);
		}
	}
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "hl:", opts, NULL)) != -1) {
		char *end = NULL;
		long v = optarg ? strtol(optarg, &end, 10) : 0;
		bool num = optarg && end && !*end && v >= 0;
		uint64_t sz;
		switch (c) {
		case 'h': serve_usage(stdout); return 0;
		case 'l': o.listen = optarg; break;
		case 't': token = strdup(optarg); break;
		case 'T':
			token = read_small(optarg);
			if (!token) {
				cli_error("--token-file %s: %s", optarg, strerror(errno));
				return EXIT_USAGE;
			}
			break;
		case 'm': o.templates_file = optarg; break;
		case 'd': o.db_path = optarg; break;
		case 'w':
			if (!num || v < 1 || v > 4096) {
				cli_error("--workers: '%s' is not a count from 1 to 4096", optarg);
				return EXIT_USAGE;
			}
			o.sched.workers = (unsigned)v;
			break;
		case 'q':
			if (!num || v < 1) {
				cli_error("--queue-max: '%s' is not a positive count", optarg);
				return EXIT_USAGE;
			}
			o.sched.queue_max = (size_t)v;
			break;
		case 'r':
			if (!num || v > 10) {
				cli_error("--retries: '%s' is not a count from 0 to 10", optarg);
				return EXIT_USAGE;
			}
			o.sched.retries = (unsigned)v;
			break;
		case 'n':
			if (!num || v > 10000) {
				cli_error("--warm: '%s' is not a count from 0 to 10000", optarg);
				return EXIT_USAGE;
			}
			o.warm = (unsigned)v;
			break;
		case 'b':
			if (pd_parse_size(optarg, &sz) < 0 || sz < 1024) {
				cli_error("--max-body: '%s' is not a size of at least 1k", optarg);
				return EXIT_USAGE;
			}
			o.max_body = (size_t)sz;
			break;
		case 'P':
			if (!num || v > 1000000) {
				cli_error("--max-connections-per-ip: '%s' is not a count from 0 (no limit) to 1000000", optarg);
				return EXIT_USAGE;
			}
			o.max_conns_per_ip = v ? (unsigned)v : UINT_MAX;
			break;
		case 'E': o.per_ip_exempt = optarg; break;
		case 'S':
			if (store_max(optarg, -1, &o.store_max) < 0) {
				cli_error("--store-max: '%s' is not 0 (no cap) or a size of at least 16M", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'c': break; /* read above */
		default: serve_usage(stderr); return EXIT_USAGE;
		}
	}
	o.token = token;
	/* every connection and sandbox holds fds: take the hard limit, and keep connections within it */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 8192)
		o.max_connections = (unsigned)(rl.rlim_cur / 2);
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pd_err e = {0};
	pd_server *s = pd_server_start(&o, &e);
	if (!s) {
		cli_error("%s", e.msg);
		free(token);
		return EXIT_PADDOCK_FAILED;
	}
	fprintf(stderr, "paddock: serving on %s\n", pd_server_address(s));
	while (!stop_signal)
		pause();
	pd_log("info", "stopping", PD_LI("signal", stop_signal));
	pd_server_stop(s);
	pd_log("info", "stopped");
	free(token);
	return 0;
}
