/* paddock pool: load the templates, check their toolchains, warm the pools, show their state. */
#define _GNU_SOURCE
#include "cli.h"
#include "pool.h"
#include "server.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void pool_usage(FILE *f)
{
	fputs("usage: paddock pool [--templates FILE] [--warm N] [--wait SECONDS] [--json]\n"
	      "       paddock pool --toolchains [--json]\n"
	      "\n"
	      "Loads the templates (the built-in bash, python, c, cpp and node, or FILE), reports\n"
	      "which toolchains the host lacks, warms every available pool to N READY sandboxes\n"
	      "(default: each template's pool.min), and prints the pools' state. --wait: seconds to\n"
	      "wait for the pools to fill (default 30, at most 86400); --json: one line per pool.\n"
	      "--toolchains: for each language the daemon runs, its template, its program and the\n"
	      "Debian package of it, and whether the host has the program and the libraries\n"
	      "SandboxFusion's tests expect (java's jars, node's lodash, perl's Test::Deep and\n"
	      "Data::Compare). make deps installs all of them but the optional go, rust, ruby, lua\n"
	      "and php (apt-get install golang-go rustc ruby lua5.4 php-cli); exit 1 when one that\n"
	      "make deps installs is missing, 0 when only optional ones are.\n",
	      f);
}

int cli_load_templates(const char *file, pd_template **t, size_t *n)
{
	pd_err e = {0};
	int rc = file ? pd_templates_load(file, t, n, &e) : pd_templates_default(t, n, &e);
	if (rc < 0)
		cli_error("%s", PD_ERR_STR(&e));
	return rc;
}

void cli_print_pools(pd_pools *p, const pd_template *t, size_t n, bool json)
{
	size_t ns = 0;
	pd_pool_stats *st = pd_pools_stats(p, &ns);
	if (!json)
		printf("%-10s %-9s %-22s %6s %6s %6s %6s %8s %8s %8s %8s %8s %8s\n", "template", "language",
		       "toolchain", "target", "ready", "in_use", "creat.", "acquires", "hits", "created",
		       "reset", "destroy", "forced");
	for (size_t i = 0; i < ns && st; i++) {
		const pd_template *tt = pd_pools_template(p, st[i].template_name);
		char tc[64];
		snprintf(tc, sizeof tc, "%s%s", tt->available ? "ok" : "missing: ", tt->missing);
		if (json)
			printf("{\"template\":\"%s\",\"language\":\"%s\",\"available\":%s,\"missing\":\"%s\","
			       "\"target\":%u,\"ready\":%u,\"in_use\":%u,\"creating\":%u,\"reclaiming\":%u,"
			       "\"acquires\":%llu,\"hits\":%llu,\"misses\":%llu,\"created\":%llu,"
			       "\"create_failures\":%llu,\"destroyed\":%llu,\"expired\":%llu,"
			       "\"forced_reclaims\":%llu,\"residue_failures\":%llu,\"resets\":%llu,"
			       "\"reset_refusals\":%llu,\"peak_in_use\":%llu}\n",
			       st[i].template_name, tt->language, tt->available ? "true" : "false", tt->missing,
			       st[i].target, st[i].ready, st[i].in_use, st[i].creating, st[i].reclaiming,
			       (unsigned long long)st[i].acquires, (unsigned long long)st[i].hits,
			       (unsigned long long)st[i].misses, (unsigned long long)st[i].created,
			       (unsigned long long)st[i].create_failures, (unsigned long long)st[i].destroyed,
			       (unsigned long long)st[i].expired, (unsigned long long)st[i].forced_reclaims,
			       (unsigned long long)st[i].residue_failures, (unsigned long long)st[i].resets,
			       (unsigned long long)st[i].reset_refusals, (unsigned long long)st[i].peak_in_use);
		else
			printf("%-10s %-9s %-22s %6u %6u %6u %6u %8llu %8llu %8llu %8llu %8llu %8llu\n",
			       st[i].template_name, tt->language, tc, st[i].target, st[i].ready, st[i].in_use,
			       st[i].creating, (unsigned long long)st[i].acquires,
			       (unsigned long long)st[i].hits, (unsigned long long)st[i].created,
			       (unsigned long long)st[i].resets,
			       (unsigned long long)st[i].destroyed, (unsigned long long)st[i].forced_reclaims);
	}
	(void)t;
	(void)n;
	free(st);
}

/* --toolchains: no sandbox, no pool; what the host image has for each language. Only what make
 * deps installs is expected: an optional toolchain missing is listed with its package, not a
 * failure (after make deps, the command says all is well). */
static int print_toolchains(bool json)
{
	size_t n;
	const pd_language *l = pd_languages(&n);
	bool all = true;
	if (!json)
		printf("%-11s %-9s %-9s %-24s %s\n", "language", "template", "program", "package", "missing");
	for (size_t i = 0; i < n; i++) {
		char missing[256];
		bool ok = pd_language_check(&l[i], missing, sizeof missing);
		all &= ok || l[i].optional;
		if (json) {
			json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:b,s:b,s:s}", "language", l[i].name, "template",
					      l[i].template, "program", l[i].requires, "package", l[i].package,
					      "optional", l[i].optional, "available", ok, "missing", missing);
			char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
			if (text)
				puts(text);
			free(text);
			json_decref(o);
		} else {
			char what[320];
			snprintf(what, sizeof what, "%s%s", ok ? "-" : missing,
				 ok || !l[i].optional ? "" : " (optional: make deps does not install it)");
			printf("%-11s %-9s %-9s %-24s %s\n", l[i].name, l[i].template, l[i].requires, l[i].package,
			       what);
		}
	}
	return all ? 0 : 1;
}

int cmd_pool(int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, 0, 'h'},
					     {"templates", required_argument, 0, 't'},
					     {"warm", required_argument, 0, 'n'},
					     {"wait", required_argument, 0, 'w'},
					     {"json", no_argument, 0, 'j'},
					     {"toolchains", no_argument, 0, 'T'},
					     {0, 0, 0, 0}};
	const char *file = NULL;
	long warm = -1;
	double wait_s = 30;
	bool json = false, toolchains = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":ht:n:w:j", opts, NULL)) != -1) {
		switch (c) {
		case 'h': pool_usage(stdout); return 0;
		case 't': file = optarg; break;
		case 'n':
			if (!cli_count("--warm", optarg, 0, 10000, &warm))
				return EXIT_USAGE;
			break;
		case 'w':
			if (!cli_decimal("--wait", optarg, 0, 86400, &wait_s))
				return EXIT_USAGE;
			break;
		case 'j': json = true; break;
		case 'T': toolchains = true; break;
		default: return cli_bad_option("pool", "pool", NULL, c, argv, opts);
		}
	}
	if (!cli_no_operand("pool", argc, argv, optind))
		return EXIT_USAGE;
	if (toolchains)
		return print_toolchains(json);
	pd_template *t;
	size_t n;
	if (cli_load_templates(file, &t, &n) < 0)
		return EXIT_USAGE;
	if (warm >= 0)
		for (size_t i = 0; i < n; i++) {
			t[i].pool_min = (uint32_t)warm;
			if (t[i].pool_max < t[i].pool_min)
				t[i].pool_max = t[i].pool_min;
		}
	pd_err e = {0};
	pd_ctx *ctx = pd_ctx_new(NULL, &e);
	if (!ctx) {
		cli_error("%s", PD_ERR_STR(&e));
		pd_templates_free(t, n);
		return EXIT_PADDOCK_FAILED;
	}
	pd_pools *p = pd_pools_new(ctx, t, n, NULL, &e);
	if (!p) {
		cli_error("%s", PD_ERR_STR(&e));
		pd_templates_free(t, n);
		pd_ctx_free(ctx);
		return EXIT_PADDOCK_FAILED;
	}
	uint64_t t0 = pd_now_us();
	int ready = pd_pools_wait_ready(p, (uint64_t)(wait_s * 1000));
	const char *why = "";
	int abi = pd_ctx_landlock(ctx, &why);
	char ll[96];
	if (abi)
		snprintf(ll, sizeof ll, "ABI %d", abi);
	else
		snprintf(ll, sizeof ll, "absent: %s", why);
	if (!json)
		printf("pools %s in %.0f ms (cgroup %s, landlock %s)\n\n", ready == 0 ? "warm" : "NOT warm (timeout)",
		       (pd_now_us() - t0) / 1000.0, pd_ctx_cgroup_backend(ctx), ll);
	cli_print_pools(p, t, n, json);
	pd_pools_free(p);
	pd_templates_free(t, n);
	pd_ctx_free(ctx);
	return ready == 0 ? 0 : EXIT_PADDOCK_FAILED;
}
