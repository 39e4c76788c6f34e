/* paddock serve: the daemon. Its options are one table (serve_opts below) that drives the
 * flags, the keys of --config and --help alike: each option is written once, with its type, its
 * range and its help, and a flag and a config key take the same values by the same parser. */
#define _GNU_SOURCE
#include "cli.h"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

typedef enum {
	T_STRING,      /* any non-empty text */
	T_ADDRESS,     /* HOST:PORT or unix:/path (pd_server_check checks the form) */
	T_FILE,        /* a path, read by the server */
	T_SECRET_FILE, /* a file whose first line is the value (the token, kept out of argv) */
	T_COUNT,       /* a whole number from lo to hi */
	T_SIZE,        /* a size (k, M, G, T; plain digits are bytes) from lo to hi */
} opt_type;

typedef struct serve_opt {
	const char *name; /* the flag is --name; the config key is name with '_' for '-' */
	char short_name;  /* or 0 */
	opt_type type;
	const char *arg;   /* the value's name in the help */
	uint64_t lo, hi;   /* counts and sizes */
	bool zero_is_none; /* 0 is also taken, beyond lo: no limit (the field's largest value) */
	size_t off, width; /* the pd_server_opts field it sets */
	const char *def;   /* the default, as the help shows it; NULL: none to show */
	const char *help;  /* '\n' continues the text on the next line */
} serve_opt;

#define FIELD(f) offsetof(pd_server_opts, f), sizeof(((pd_server_opts *)0)->f)

static const serve_opt serve_opts[] = {
	{"listen", 'l', T_ADDRESS, "ADDR", 0, 0, false, FIELD(listen), "127.0.0.1:8080",
	 "HOST:PORT (beyond loopback, needs a token of 16+ bytes,\n"
	 "not the example config's) or unix:/path"},
	{"token", 0, T_STRING, "TOKEN", 0, 0, false, FIELD(token), NULL,
	 "bearer token required on every request but /healthz and /readyz\n"
	 "(also $PADDOCK_TOKEN)"},
	{"token-file", 0, T_SECRET_FILE, "FILE", 0, 0, false, FIELD(token), NULL,
	 "the bearer token: the first line of FILE"},
	{"templates", 0, T_FILE, "FILE", 0, 0, false, FIELD(templates_file),
	 "the built-in bash, python, c, cpp, node", "templates, a JSON file"},
	{"problems", 0, T_FILE, "DIR", 0, 0, false, FIELD(problems_dir), "none (inline problems only)",
	 "the judge's problems: one subdirectory with problem.json each\n(docs/judge.md)"},
	{"db", 0, T_FILE, "FILE", 0, 0, false, FIELD(db_path), "<state>/paddock.db", "the results store, an SQLite file"},
	{"store-max", 0, T_SIZE, "SIZE", 16u << 20, UINT64_MAX, true, FIELD(store_max), "1G",
	 "size the store's records may take; past it the oldest are\n"
	 "deleted; 0 = no cap, at least 16M otherwise"},
	{"workers", 0, T_COUNT, "N", 1, 4096, false, FIELD(sched.workers), "2 x CPUs",
	 "concurrent CPU-limited jobs (/v1/runs, the judge)"},
	{"wall-workers", 0, T_COUNT, "N", 1, 4096, false, FIELD(sched.wall_workers), "128, or 16 x CPUs past 8",
	 "concurrent wall-limited runs (/run_code, Piston): they share the\n"
	 "CPUs as SandboxFusion and Piston run them (docs/api.md#admission)"},
	{"memory-budget", 0, T_STRING, "BUDGET", 0, 0, false, FIELD(memory_budget), "80%",
	 "the memory limits of running jobs add up to at most this: a size\n"
	 "(16G) or a percent of the machine's (80%); a job that does not fit\n"
	 "waits for one that does to end"},
	{"queue-max", 0, T_COUNT, "N", 1, 1000000000, false, FIELD(sched.queue_max), "4096",
	 "queued jobs per priority class before refusing"},
	{"run-code-output-max", 0, T_SIZE, "SIZE", 1u << 20, 1ull << 30, false, FIELD(run_code_output_max), "16M",
	 "/run_code keeps a program's whole output up to SIZE and judges it\n"
	 "by its exit status; more output ends it as an output limit"},
	{"deadline-margin", 0, T_COUNT, "N", 1, 3600, false, FIELD(deadline_margin_s), "10",
	 "seconds: a request without deadline_ms must finish within its\n"
	 "time limits (compile + run) plus N; refused at once (504 on\n"
	 "/run_code, 503 elsewhere, with Retry-After) when the work queued\n"
	 "ahead says it cannot"},
	{"run-code-networks", 0, T_STRING, "MODES", 0, 0, false, FIELD(run_code_networks), "none",
	 "network modes a /run_code request may ask for with its \"network\"\n"
	 "field (comma-separated: none, loopback, allowlist, host); without it the\n"
	 "language's template decides (loopback: no egress)"},
	{"retries", 0, T_COUNT, "N", 1, 10, true, FIELD(sched.retries), "2",
	 "retries of infrastructure failures in a fresh sandbox"},
	{"warm", 0, T_COUNT, "N", 0, 10000, false, FIELD(warm), "templates' pool.min",
	 "READY sandboxes kept per template"},
	{"trajectory-retention", 0, T_COUNT, "SECS", 1, 315360000, true, FIELD(trajectory_retention), "2592000 (30 days)",
	 "seconds the trajectories of ended sessions are kept, from\n"
	 "their last line; 0 = kept until deleted"},
	{"images", 0, T_STRING, "LIST", 0, 0, false, FIELD(images), "none",
	 "imported images a request's \"image\" may name: comma-separated\n"
	 "names, globs of names (swe-*), digests or hex prefixes;\n"
	 "\"*\" = any image in the store (docs/images.md)"},
	{"image-pools", 0, T_COUNT, "N", 1, 1024, false, FIELD(image_pools), "64",
	 "(template, image) pools live at once; an idle one is retired\n"
	 "to make room for a new image"},
	{"image-ready", 0, T_COUNT, "N", 1, 1000000, false, FIELD(image_ready), "4 x CPUs",
	 "READY sandboxes all image pools keep together, the images\n"
	 "in most demand first"},
	{"max-body", 0, T_SIZE, "SIZE", 1024, UINT64_MAX, false, FIELD(max_body), "16M", "largest request body"},
	{"max-connections-per-ip", 0, T_COUNT, "N", 0, 1000000, true, FIELD(max_conns_per_ip), "256",
	 "open connections one client address may hold; more are closed\n"
	 "at accept and counted; 0 = no limit"},
	{"per-ip-exempt", 0, T_STRING, "CIDRS", 0, 0, false, FIELD(per_ip_exempt), "127.0.0.0/8",
	 "addresses that limit spares, comma-separated IPv4 networks\n"
	 "(\"none\" = spare none); unix-socket clients have no address\n"
	 "and are always spared"},
	{"cluster", 0, T_STRING, "URLS", 0, 0, false, FIELD(cluster), NULL,
	 "nats://HOST:PORT[,...]: join a cluster on NATS JetStream as a\n"
	 "node (docs/cluster.md); without it, a single node"},
	{"node-id", 0, T_STRING, "ID", 0, 0, false, FIELD(node_id), "<hostname>-<port>",
	 "this node's id in the cluster (A-Z a-z 0-9 - _ ., a dot\n"
	 "never first, last or twice in a row: host.example.com-1)"},
	{"cluster-ack-wait", 0, T_COUNT, "SECS", 1, 3600, false, FIELD(cluster_ack_wait), "5",
	 "seconds a node may hold a task without a sign of life before\n"
	 "the cluster gives it to another node (a node renews its tasks\n"
	 "every second while it lives)"},
	{"breaker-fail-percent", 0, T_COUNT, "N", 1, 100, false, FIELD(breaker_fail_percent), "50",
	 "a template's circuit breaker opens when more than N percent of its\n"
	 "recent jobs failed for the infrastructure (a sandbox that could not\n"
	 "start, an internal error); the other templates are not refused"},
	{"breaker-min-jobs", 0, T_COUNT, "N", 1, 64, false, FIELD(breaker_min_jobs), "8",
	 "a template's finished jobs before its failure share counts"},
	{"breaker-cooldown", 0, T_COUNT, "SECS", 1, 3600, false, FIELD(breaker_cooldown_s), "5",
	 "seconds a template's breaker stays open before one probe job"},
	{"memory-watermark", 0, T_STRING, "WATERMARK", 0, 0, false, FIELD(memory_watermark), "256M",
	 "host free memory (MemAvailable) under which all new work is\n"
	 "refused: a size (256M) or a percent of the machine's (5%)"},
	{"cluster-max-deliver", 0, T_COUNT, "N", 1, 100, false, FIELD(cluster_max_deliver), "5",
	 "deliveries of a task whose nodes all stopped before recording\n"
	 "it; the next one records it as an infrastructure failure"},
	{"cluster-records-max-age", 0, T_COUNT, "SECS", 1, 3650u * 86400u, false, FIELD(cluster_records_max_age),
	 "2592000 (30 days)",
	 "the cluster's shared record stream keeps a record this long\n"
	 "(PADDOCK_RECORDS: the values of the node that started last;\n"
	 "give every node the same)"},
	{"cluster-records-max-bytes", 0, T_SIZE, "SIZE", 1u << 20, UINT64_MAX, true, FIELD(cluster_records_max_bytes),
	 "10G", "size the shared record stream (and the object stream) may\n"
	 "take; past it the oldest go; 0 = no cap (the default is fitted\n"
	 "to the broker's store)"},
	{"cluster-objects", 0, T_STRING, "WHERE", 0, 0, false, FIELD(cluster_objects), "nats",
	 "where the cluster keeps large values (outputs, records, results):\n"
	 "nats (the broker's stream PADDOCK_OBJECTS) or s3://BUCKET[/PREFIX]\n"
	 "(an S3-compatible store; give every node the same)"},
	{"cluster-s3-endpoint", 0, T_STRING, "URL", 0, 0, false, FIELD(cluster_s3_endpoint), NULL,
	 "http[s]://HOST[:PORT] of the S3-compatible store (path-style)"},
	{"cluster-s3-ca", 0, T_FILE, "FILE", 0, 0, false, FIELD(cluster_s3_ca), "the system's",
	 "the CAs an https:// S3 endpoint's certificate is checked against"},
	{"cluster-s3-region", 0, T_STRING, "REGION", 0, 0, false, FIELD(cluster_s3_region), "$AWS_REGION or us-east-1",
	 "the region the S3 requests are signed for"},
	{"cluster-s3-credentials", 0, T_FILE, "FILE", 0, 0, false, FIELD(cluster_s3_credentials),
	 "$AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY",
	 "the S3 store's keys: lines aws_access_key_id = ... and\n"
	 "aws_secret_access_key = ... (as ~/.aws/credentials); a file\n"
	 "others may read is refused"},
	{"review-min-samples", 0, T_COUNT, "N", 1, 1000000, false, FIELD(review_min_samples), "20",
	 "review queue (docs/audit.md): a problem's judged attempts (for\n"
	 "rare_pass) or earlier passes in the language (fast_pass,\n"
	 "short_pass) stored before those signals apply"},
	{"review-rare-percent", 0, T_COUNT, "N", 1, 100, true, FIELD(review_rare_percent), "5",
	 "rare_pass: a pass on a problem where at most N% passed; 0 = off"},
	{"review-fast-percent", 0, T_COUNT, "N", 1, 100, true, FIELD(review_fast_percent), "10",
	 "fast_pass: a pass whose tests took under N% of the wall time\n"
	 "of the problem's median pass in its language; 0 = off"},
	{"review-short-percent", 0, T_COUNT, "N", 1, 100, true, FIELD(review_short_percent), "10",
	 "short_pass: a pass whose code is under N% of the size of the\n"
	 "problem's median pass in its language; 0 = off"},
	{"review-jump-percent", 0, T_COUNT, "N", 1, 100, true, FIELD(review_jump_percent), "50",
	 "score_jump: a score N points (of 100) over the best of its\n"
	 "group's (group_id) earlier judged attempts; 0 = off"},
	{"review-group-min", 0, T_COUNT, "N", 1, 100000, false, FIELD(review_group_min), "3",
	 "score_jump: earlier judged attempts in the group it needs"},
	{"problem-submit-max", 0, T_COUNT, "N", 1, 100000000, true, FIELD(problem_submit_max), "none",
	 "judged submissions of one problem per window; more are refused\n"
	 "(429 with Retry-After) and counted; 0 = no cap"},
	{"problem-submit-window", 0, T_COUNT, "SECS", 1, 86400, false, FIELD(problem_submit_window), "60",
	 "the window of --problem-submit-max, from its first submission"},
};

#define NOPTS (sizeof serve_opts / sizeof serve_opts[0])
enum { O_HELP = 256, O_CONFIG, O_CHECK, O_TABLE }; /* getopt values: O_TABLE + index in serve_opts */

static void serve_usage(FILE *f)
{
	fputs("usage: paddock serve [options]\n"
	      "\n"
	      "Runs the HTTP daemon: native API (/v1/runs, /v1/sessions...), SandboxFusion (/run_code,\n"
	      "/v1/ping), Piston (/api/v2/execute, /api/v2/runtimes), /metrics, /healthz, /readyz.\n"
	      "SIGINT or SIGTERM stops it gracefully: running and queued work is finished and answered.\n"
	      "\n",
	      f);
	for (size_t i = 0; i < NOPTS; i++) {
		const serve_opt *o = &serve_opts[i];
		char head[64];
		int n = o->short_name ? snprintf(head, sizeof head, "  -%c, --%s %s", o->short_name, o->name, o->arg)
				      : snprintf(head, sizeof head, "  --%s %s", o->name, o->arg);
		fputs(head, f);
		if (n >= 24)
			fprintf(f, "\n%25s", "");
		else
			fprintf(f, "%*s", 25 - n, "");
		for (const char *p = o->help; *p;) {
			size_t l = strcspn(p, "\n");
			fprintf(f, "%.*s", (int)l, p);
			p += l;
			if (*p) {
				fprintf(f, "\n%25s", "");
				p++;
			}
		}
		if (o->def)
			fprintf(f, " (default: %s)", o->def);
		fputc('\n', f);
	}
	fputs("  --config FILE          JSON object with any of the options above, each under its name\n"
	      "                         with '_' for '-' (\"max_body\": \"64M\"), taking the same values\n"
	      "                         as the flag (a number as a JSON number or string); flags win\n"
	      "  --check                check the settings as serve does (exit 64 with its message if\n"
	      "                         it would refuse them), print them as a JSON object under the\n"
	      "                         config keys (null: the default), and exit without serving;\n"
	      "                         settings only: the host's prerequisites are paddock doctor's\n",
	      f);
}

/* The signal may land on any of the daemon's threads, not main's: pause() in main would sleep
 * through it (a SIGTERM ignored until a second one came). The handler writes to a pipe main reads. */
static volatile sig_atomic_t stop_signal;
static int stop_pipe[2] = {-1, -1};
static void on_signal(int sig)
{
	int saved = errno;
	stop_signal = sig;
	ssize_t n = write(stop_pipe[1], "s", 1);
	(void)n; /* full: main is woken already */
	errno = saved;
}

/* The first line of a file (a token: kept out of argv and the environment); NULL with errno. */
static const char *read_first_line(const char *path)
{
	static char buf[4096]; /* the last one read: a later token file replaces an earlier one */
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	return buf;
}

/* Sets the option o from text (a flag's argument, or a config key's value), parsed by its type;
 * what names where text came from. false after saying why not. */
static bool set_opt(pd_server_opts *so, const serve_opt *o, const char *what, const char *text)
{
	char *field = (char *)so + o->off;
	static const char *const kinds[] = {[T_STRING] = "a non-empty text", [T_ADDRESS] = "an address",
					    [T_FILE] = "a file", [T_SECRET_FILE] = "a file"};
	uint64_t v = 0;
	long n;
	switch (o->type) {
	case T_STRING:
	case T_ADDRESS:
	case T_FILE:
	case T_SECRET_FILE:
		if (!*text)
			return cli_bad(what, text, kinds[o->type]);
		if (o->type == T_SECRET_FILE) {
			const char *line = read_first_line(text);
			if (!line) {
				cli_error("%s: %s: %s", what, text, strerror(errno));
				return false;
			}
			if (!*line)
				return cli_bad(what, text, "a file whose first line is a token");
			text = line;
		}
		*(const char **)field = text;
		return true;
	case T_COUNT:
		if (!cli_count(what, text, o->zero_is_none ? 0 : (long)o->lo, (long)o->hi, &n))
			return false;
		v = (uint64_t)n;
		break;
	case T_SIZE:
		if (!cli_size(what, text, o->zero_is_none ? 0 : o->lo, o->hi, &v))
			return false;
		if (v && v < o->lo) {
			char want[64];
			snprintf(want, sizeof want, "0 (no limit) or a size of at least %lluM",
				 (unsigned long long)(o->lo >> 20));
			return cli_bad(what, text, want);
		}
		break;
	}
	if (o->width == sizeof(unsigned))
		*(unsigned *)field = v || !o->zero_is_none ? (unsigned)v : UINT_MAX;
	else
		*(uint64_t *)field = v || !o->zero_is_none ? v : UINT64_MAX;
	return true;
}

/* Applies a config file's keys; the file's JSON stays alive in *keep (strings point into it). */
static bool load_config(pd_server_opts *so, const char *file, json_t **keep)
{
	json_error_t je;
	json_t *cfg = json_load_file(file, 0, &je);
	if (!cfg) {
		if (je.line > 0)
			cli_error("--config %s: line %d: %s", file, je.line, je.text);
		else
			cli_error("--config %s: %s", file, je.text);
		return false;
	}
	*keep = cfg;
	if (!json_is_object(cfg)) {
		cli_error("--config %s: not a JSON object", file);
		return false;
	}
	const char *k;
	json_t *v;
	json_object_foreach(cfg, k, v) {
		const serve_opt *o = NULL;
		for (size_t i = 0; i < NOPTS && !o; i++) {
			const char *a = serve_opts[i].name, *b = k;
			while (*a && (*a == *b || (*a == '-' && *b == '_')))
				a++, b++;
			if (!*a && !*b)
				o = &serve_opts[i];
		}
		if (!o) {
			cli_error("--config %s: unknown key '%s' (the keys are serve's options, with '_' for '-')",
				  file, k);
			return false;
		}
		char what[600], num[32];
		snprintf(what, sizeof what, "--config %s: %s", file, k);
		const char *text = json_string_value(v);
		bool numeric = o->type == T_COUNT || o->type == T_SIZE;
		if (numeric && json_is_integer(v)) {
			snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
			text = num;
		}
		if (!text) {
			cli_error("%s: must be %s", what, numeric ? "a whole number or a string" : "a string");
			return false;
		}
		if (!set_opt(so, o, what, text))
			return false;
	}
	return true;
}

/* --check: the settings under their config keys, as the server will be given them; a limit
 * turned off (0) shows as 0, an option not given as null, a token only as whether there is one. */
static int print_settings(const pd_server_opts *so)
{
	json_t *out = json_object();
	for (size_t i = 0; i < NOPTS; i++) {
		const serve_opt *o = &serve_opts[i];
		const char *field = (const char *)so + o->off;
		if (o->type == T_SECRET_FILE)
			continue; /* the token's field, shown under "token" */
		char key[64];
		snprintf(key, sizeof key, "%s", o->name);
		for (char *p = key; *p; p++)
			*p = *p == '-' ? '_' : *p;
		json_t *v;
		if (o->type == T_COUNT || o->type == T_SIZE) {
			uint64_t n = o->width == sizeof(unsigned) ? *(const unsigned *)field : *(const uint64_t *)field;
			bool none = o->zero_is_none && n == (o->width == sizeof(unsigned) ? UINT_MAX : UINT64_MAX);
			v = none ? json_integer(0) : n ? json_integer((json_int_t)n) : json_null();
		} else {
			const char *t = *(const char *const *)field;
			v = !t ? json_null() : !strcmp(o->name, "token") ? json_string("(set)") : json_string(t);
		}
		json_object_set_new(out, key, v);
	}
	char *text = pd_json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(out);
	if (!text) {
		cli_error("out of memory");
		return EXIT_PADDOCK_FAILED;
	}
	puts(text);
	free(text);
	return 0;
}

/* Runs the daemon with o until SIGINT or SIGTERM. */
static int serve(pd_server_opts o)
{
	/* retries: not given is the default, 2; a given 0 is "none" (UINT_MAX in the option table,
	 * which the scheduler must see as 0: it takes the count literally) */
	o.sched.retries = o.sched.retries == UINT_MAX ? 0 : o.sched.retries ? o.sched.retries : 2;
	/* every connection and sandbox holds fds: take the hard limit, and keep connections within it */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 8192)
		o.max_connections = (unsigned)(rl.rlim_cur / 2);
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		cli_error("pipe: %s", strerror(errno));
		return EXIT_PADDOCK_FAILED;
	}
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pd_err e = {0};
	pd_server *s = pd_server_start(&o, &e);
	/* what pd_server_check took and the start still refuses is the host's (a port in use, no
	 * cgroups): not a usage error */
	if (!s) {
		cli_error("%s", PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	fprintf(stderr, "paddock: serving on %s\n", pd_server_address(s));
	while (!stop_signal) {
		struct pollfd p = {.fd = stop_pipe[0], .events = POLLIN};
		poll(&p, 1, -1);
	}
	pd_log("info", "stopping", PD_LI("signal", stop_signal));
	pd_server_stop(s);
	pd_log("info", "stopped");
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	struct option opts[NOPTS + 4];
	char shorts[2 * NOPTS + 3] = ":h";
	for (size_t i = 0; i < NOPTS; i++) {
		opts[i] = (struct option){serve_opts[i].name, required_argument, 0, O_TABLE + (int)i};
		if (serve_opts[i].short_name)
			strcat(shorts, (char[]){serve_opts[i].short_name, ':', 0});
	}
	opts[NOPTS] = (struct option){"help", no_argument, 0, O_HELP};
	opts[NOPTS + 1] = (struct option){"config", required_argument, 0, O_CONFIG};
	opts[NOPTS + 2] = (struct option){"check", no_argument, 0, O_CHECK};
	opts[NOPTS + 3] = (struct option){0, 0, 0, 0};
	bool check = false;
	pd_server_opts o = {0};
	if (getenv("PADDOCK_TOKEN") && *getenv("PADDOCK_TOKEN"))
		o.token = getenv("PADDOCK_TOKEN");
	/* two passes over the same options: the first finds --help, --check, the config files and
	 * any unknown option; the config files are read between the two, so that flags override them */
	const char *files[16];
	json_t *cfgs[16];
	size_t nfiles = 0, ncfg = 0;
	int c, rc = EXIT_USAGE;
	for (int pass = 0; pass < 2; pass++) {
		optind = 1;
		while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
			if (c == 'h' || c == O_HELP) {
				serve_usage(stdout);
				return 0;
			}
			/* the first pass has returned at any bad option */
			if (c == '?' || c == ':')
				return cli_bad_option("serve", "serve", NULL, c, argv, opts);
			check |= c == O_CHECK;
			if (c == O_CONFIG && pass == 0) {
				if (nfiles == sizeof files / sizeof files[0]) {
					cli_error("--config: at most %zu files", nfiles);
					return EXIT_USAGE;
				}
				files[nfiles++] = optarg;
			}
			const serve_opt *so = NULL;
			for (size_t i = 0; i < NOPTS; i++)
				if (c == O_TABLE + (int)i || c == serve_opts[i].short_name)
					so = &serve_opts[i];
			if (so && pass == 1) {
				char what[64];
				snprintf(what, sizeof what, "--%s", so->name);
				if (!set_opt(&o, so, what, optarg))
					goto out;
			}
		}
		if (pass == 0 && !cli_no_operand("serve", argc, argv, optind))
			return EXIT_USAGE;
		for (size_t k = 0; pass == 0 && k < nfiles; k++) {
			cfgs[ncfg] = NULL;
			bool ok = load_config(&o, files[k], &cfgs[ncfg]);
			ncfg += cfgs[ncfg] != NULL;
			if (!ok)
				goto out;
		}
	}
	/* the settings as the server will check them, before anything starts: a refusal is the
	 * operator's to fix (64), with the same message serve --check gives */
	pd_err e = {0};
	if (pd_server_check(&o, &e) < 0) {
		cli_error("%s", PD_ERR_STR(&e));
		goto out;
	}
	rc = check ? print_settings(&o) : serve(o);
out:
	for (size_t i = 0; i < ncfg; i++)
		json_decref(cfgs[i]);
	return rc;
}
