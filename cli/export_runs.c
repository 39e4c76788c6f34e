/* paddock export --runs [--url URL [--token T | --token-file F] | --db FILE] [--group-id G] [--since MS]
 *                       [--kind judge|run|any] [--all-attempts] [-o FILE]
 *
 * The stored records as JSON lines, one record a line, in the order they were stored: what a
 * trainer loads (each judged record carries group_id, sample_id, reward — null for infrastructure
 * failures — and usable). By default only judged records and only each task's last attempt (the
 * one that answered); --all-attempts adds the earlier attempts (retries), --kind run or any the
 * records of plain runs. With --url it pages through a daemon's GET /v1/runs, sending the daemon's
 * bearer token (--token, --token-file, else $PADDOCK_TOKEN); with --db it reads a store file
 * directly (a stopped daemon's, or a live one's: the store is in WAL mode). */
#define _GNU_SOURCE
#include "cli.h"
#include "httpc.h"
#include "server.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* %-escapes a query value (group ids are the client's text). */
static void url_escape(const char *s, char *out, size_t len)
{
	size_t n = 0;
	for (; *s && n + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-_.~", c))
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, len - n, "%%%02X", c);
	}
	out[n] = 0;
}

/* One page from a daemon: *records and *next as pd_store_list's. */
static int page_url(const char *url, const pd_store_query *q, json_t **records, int64_t *next, char *err,
		    size_t errlen)
{
	char path[1024], g[400] = "";
	if (q->group_id)
		url_escape(q->group_id, g, sizeof g);
	snprintf(path, sizeof path, "/v1/runs?limit=%u&cursor=%" PRId64 "&since=%" PRIu64 "&last=%d%s%s%s%s", q->limit,
		 q->after, q->since_ms, q->last_only ? 1 : 0, q->kind ? "&kind=" : "", q->kind ? q->kind : "",
		 g[0] ? "&group_id=" : "", g);
	httpc_resp r;
	if (httpc_call(url, "GET", path, NULL, 0, NULL, &r, err, errlen) < 0)
		return -1;
	json_t *o = r.status == 200 ? json_loadb(r.body, r.len, 0, NULL) : NULL;
	if (!json_is_array(json_object_get(o, "records"))) {
		snprintf(err, errlen, "GET %s: %d %.200s%s", path, r.status, r.body ? r.body : "",
			 r.status == 401 ? " (the daemon wants its token: --token, --token-file or $PADDOCK_TOKEN)" : "");
		free(r.body);
		json_decref(o);
		return -1;
	}
	free(r.body);
	*records = json_incref(json_object_get(o, "records"));
	*next = json_integer_value(json_object_get(o, "next"));
	json_decref(o);
	return 0;
}

/* The first line of a file into buf (a token: kept out of argv, as serve's --token-file); false
 * when it cannot be read or the line is empty. */
static bool read_token_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	return buf[0] != 0;
}

static void export_runs_usage(void)
{
	printf("usage: paddock export --runs [--url URL | --db FILE] [options]\n"
	       "  --url URL          a daemon (pages through its GET /v1/runs)\n"
	       "  --token TOKEN      the daemon's bearer token (default: $PADDOCK_TOKEN;\n"
	       "                     a daemon with a token answers 401 without it)\n"
	       "  --token-file FILE  the bearer token: the first line of FILE\n"
	       "  --db FILE          a store file (the daemon's --db)\n"
	       "  --group-id G       only the records of this group\n"
	       "  --since MS         only records finished at or after (unix ms)\n"
	       "  --kind K           judge (default: judged records), run, or any\n"
	       "  --all-attempts     earlier attempts too (default: each task's last)\n"
	       "  -o, --output F     write there instead of stdout\n");
}

typedef struct export_args {
	const char *url, *db, *out, *token;
	pd_store_query q;
} export_args;

/* One option into a: 0, or the exit status of a bad one (-1: --help, said). */
static int export_option(int ch, export_args *a)
{
	static char token_buf[4096]; /* a token file's first line */
	switch (ch) {
	case 'r': return 0;
	case 'u': a->url = optarg; return 0;
	case 'd': a->db = optarg; return 0;
	case 'g': a->q.group_id = optarg; return 0;
	case 's': {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(optarg, &end, 10);
		if (errno || *end || optarg[0] == '-' || !optarg[0])
			return cli_bad("export: --since", optarg, "unix milliseconds"), EXIT_USAGE;
		a->q.since_ms = v;
		return 0;
	}
	case 'k':
		if (strcmp(optarg, "judge") && strcmp(optarg, "run") && strcmp(optarg, "any"))
			return cli_bad("export: --kind", optarg, "judge, run or any"), EXIT_USAGE;
		a->q.kind = strcmp(optarg, "any") ? optarg : NULL;
		return 0;
	case 'a': a->q.last_only = false; return 0;
	case 'o': a->out = optarg; return 0;
	case 't':
		if (!optarg[0])
			return cli_bad("export: --token", optarg, "a non-empty token"), EXIT_USAGE;
		a->token = optarg;
		return 0;
	case 'T':
		if (!read_token_file(optarg, token_buf, sizeof token_buf))
			return cli_bad("export: --token-file", optarg, "a file whose first line is a token"), EXIT_USAGE;
		a->token = token_buf;
		return 0;
	case 'h': export_runs_usage(); return -1;
	default: return EXIT_USAGE; /* the caller says which option */
	}
}

/* The command line: 0, -1 after --help, or the exit status of a bad one. */
static int export_args_parse(int argc, char **argv, export_args *a)
{
	static const struct option opts[] = {{"runs", no_argument, 0, 'r'},
					     {"url", required_argument, 0, 'u'},
					     {"db", required_argument, 0, 'd'},
					     {"group-id", required_argument, 0, 'g'},
					     {"since", required_argument, 0, 's'},
					     {"kind", required_argument, 0, 'k'},
					     {"all-attempts", no_argument, 0, 'a'},
					     {"output", required_argument, 0, 'o'},
					     {"token", required_argument, 0, 't'},
					     {"token-file", required_argument, 0, 'T'},
					     {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	*a = (export_args){.q = {.kind = "judge", .last_only = true, .limit = 1000}};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":u:o:h", opts, NULL)) != -1) {
		if (ch == '?' || ch == ':')
			return cli_bad_option("export", "export --runs", NULL, ch, argv, opts);
		int rc = export_option(ch, a);
		if (rc)
			return rc;
	}
	if (optind != argc || !a->url == !a->db) {
		cli_error("export --runs: give --url URL or --db FILE (and no other argument)");
		return EXIT_USAGE;
	}
	if (a->token && !a->url) {
		cli_error("export --runs: --token and --token-file go with --url");
		return EXIT_USAGE;
	}
	return 0;
}

/* Every page of records (from the store, else the daemon at url) as lines on f; 0 or -1 (said). */
static int export_pages(pd_store *store, const char *url, pd_store_query *q, FILE *f, size_t *lines)
{
	int rc = 0;
	for (;;) {
		json_t *records = NULL;
		int64_t next = 0;
		char err[600] = "";
		pd_err e = {0};
		if (store ? pd_store_list(store, q, &records, &next, &e) < 0
			  : page_url(url, q, &records, &next, err, sizeof err) < 0) {
			cli_error("export: %s", store ? PD_ERR_STR(&e) : err);
			return -1;
		}
		size_t i;
		json_t *rec;
		json_array_foreach(records, i, rec) {
			json_object_del(rec, "row"); /* the store's cursor, not part of the record */
			if (json_dumpf(rec, f, JSON_COMPACT | JSON_REAL_PRECISION(PD_JSON_REAL_DIGITS)) < 0)
				rc = -1;
			fputc('\n', f);
			(*lines)++;
		}
		json_decref(records);
		if (!next || rc < 0)
			return rc;
		q->after = next;
	}
}

int cmd_export_runs(int argc, char **argv)
{
	export_args a;
	int rc = export_args_parse(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	httpc_set_token(a.token);
	pd_store *store = NULL;
	if (a.db) {
		struct stat st;
		pd_err e = {0};
		/* opening creates a missing file: a mistyped path must not answer an empty export */
		if (stat(a.db, &st) < 0) {
			cli_error("export: %s: %s", a.db, strerror(errno));
			return EXIT_PADDOCK_FAILED;
		}
		if (!(store = pd_store_open(a.db, 0, &e))) {
			cli_error("export: %s", PD_ERR_STR(&e));
			return EXIT_PADDOCK_FAILED;
		}
	}
	FILE *f = a.out ? fopen(a.out, "we") : stdout;
	if (!f) {
		cli_error("export: %s: %s", a.out, strerror(errno));
		pd_store_close(store);
		return EXIT_PADDOCK_FAILED;
	}
	size_t lines = 0;
	rc = export_pages(store, a.url, &a.q, f, &lines);
	if ((a.out ? fclose(f) : fflush(f)) != 0)
		rc = -1;
	pd_store_close(store);
	if (rc < 0)
		return EXIT_PADDOCK_FAILED;
	fprintf(stderr, "paddock export: %zu records\n", lines);
	return 0;
}
