/* paddock bench: sandbox start latency and throughput, side by side with the floor (a plain spawn
 * of the same program) and a peer (bwrap with the same namespaces), all in one run. Machines this
 * is run on are shared and noisy, so only ratios taken in the same run mean much.
 *
 * Every case is one kind of operation (spawn a command, pd_run, create+destroy, exec in a live
 * sandbox, exec in a sandbox taken from a warm pool) driven by workers: first a latency phase
 * (1 worker, N timed operations), then fixed-duration throughput cells with 1 and 2 workers. Phases
 * run case after case, so that the rows a ratio compares were measured close together in time.
 * Failed operations are counted and never timed: a row that measured errors says so.
 *
 * Two measurements do not fit that mould: the audit overhead runs the same program with and
 * without the audit, alternating, so that both see the same machine; the density case (only on
 * request) holds N idle sandboxes at once and reads what they cost the host.
 *
 * This file: the command line, the case table and the order of the phases; it conducts the rest,
 * which never calls back up into it. The others:
 *   bench_case.h/.c   what a case, its kind and its workers are (bench_case.h maps the section's
 *                     files: bench_measure.c, bench_kinds.c, bench_density.c, bench_residue.c,
 *                     bench_report.c)
 *   bench_http.c      --http: the daemon against python3 on the host
 *   bench_judge.c     --judge: the judge against verl's way, the floor and bwrap
 *   bench_guard.c     --guard: the CPU ratios `make test` keeps from sliding back (issue 42)
 *   bench_episode.c   --episode; bench_goodput.c --goodput and --memory-verdict
 *   bench_daemon.h/.c the in-process daemon of --http, --guard, --judge, --episode and its client
 *   bench_util.h/.c   the toolbox of all: clock, percentiles, CPU, $PATH, the bwrap command line */
#define _GNU_SOURCE
#include "bench_case.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static void bench_usage(FILE *f)
{
	fputs("usage: paddock bench [options]\n"
	      "\n"
	      "Measures, side by side in one run, the start of /bin/true as:\n"
	      "  floor        posix_spawn + waitpid, no isolation\n"
	      "  bwrap        bubblewrap, same namespaces (user pid net ipc uts cgroup mount)\n"
	      "  cli          the paddock command itself: paddock exec -q -- /bin/true\n"
	      "  lib          pd_run in process: create + exec + destroy, default limits\n"
	      "  lib-create   pd_sandbox_create + pd_sandbox_destroy, no exec\n"
	      "  lib-exec     pd_sandbox_exec repeated in one long-lived sandbox per worker\n"
	      "  pool-exec    warm exec: pd_pool_acquire a READY sandbox (bash template, pool\n"
	      "               min = workers + 2) + exec + pd_pool_release; latency only, each\n"
	      "               acquire waiting (untimed) for a full pool and an idle reclaimer;\n"
	      "               p50 against the floor's p50, and the pool's hit rate\n"
	      "  pool-throughput  the same through the pools, back to back, each exec in a clean\n"
	      "               sandbox: fresh, or reset for reuse (pd_sandbox_reset, proven by\n"
	      "               tests/unit/reset.c); throughput only; a cell ends when the\n"
	      "               reclaimer has reset or destroyed every sandbox it was given, then\n"
	      "               the residue is checked (teardowns, processes in our uid slots,\n"
	      "               cgroups)\n"
	      "  audit        (audit-off, audit-on) pd_run of python3 -c 'import json,os; ...'\n"
	      "               without and with the audit, alternating; latency only; overhead\n"
	      "               of the audit in ms and %, and audit events per run\n"
	      "  egress       (egress-off, egress-on) create+destroy of a loopback sandbox and\n"
	      "               of an allowlist one (with its egress relay), alternating; latency\n"
	      "               only (only with --only egress); the relay's cost in ms and %\n"
	      "  gvisor       (only with --only gvisor) the two isolation tiers side by side,\n"
	      "               each pair alternating: create+destroy (container, gvisor), a cold\n"
	      "               pd_run of /bin/true (container, gvisor, and `runsc do /bin/true`\n"
	      "               alone, gVisor's own floor), warm exec from a pool (bash template,\n"
	      "               latency), pool throughput at 1 and 2 workers (gvisor sandboxes are\n"
	      "               never reused: destroyed and rebuilt); gvisor against container\n"
	      "               and runsc do as ratios. Every cell is bounded by --cell-timeout\n"
	      "  density      (only with --only density) N idle sandboxes at once: host memory\n"
	      "               per idle sandbox (/proc/meminfo, the inits' smaps_rollup, memory\n"
	      "               cgroups), create and destroy rates, and whether memory came back\n"
	      "Each case: latency (p50, p99, mean) over N operations with 1 worker, then\n"
	      "throughput with 1 and 2 workers (threads) over a fixed time, and ratios to floor\n"
	      "and bwrap.\n"
	      "\n"
	      "options:\n"
	      "  -n, --iterations N     operations timed for latency (default 200)\n"
	      "  -d, --duration T       time of each throughput cell, e.g. 3, 500ms (default 3s;\n"
	      "                         0 skips throughput); --duration 60 gives the 60 s\n"
	      "                         pool-throughput figure of the issue\n"
	      "  --only LIST            comma list of cases to run (default: all but density,\n"
	      "                         egress and gvisor)\n"
	      "  --cell-timeout T       the gvisor cells' bound (default 60s): a latency phase\n"
	      "                         stops starting operations after T (reported), a spawned\n"
	      "                         runsc is killed at it, a pool's waits end at it; a cell\n"
	      "                         still running 3T + 60 s after its start (an operation\n"
	      "                         stuck in the library) ends the bench with exit 2\n"
	      "  --density N            idle sandboxes of the density case (default 1000, at\n"
	      "                         most 10000); raises RLIMIT_NOFILE as needed, stops if\n"
	      "                         MemAvailable falls below a tenth of the machine.\n"
	      "                         Note: every memory cgroup then created on the host\n"
	      "                         costs more until reboot (the kernel sizes each one's\n"
	      "                         shrinker map by the most superblocks ever alive)\n"
	      "  --json                 one JSON object with all figures on stdout\n"
	      "  --http                 instead: the daemon's section (POST /run_code python print(1)\n"
	      "                         against python3 -c 'print(1)' on the host, GET /healthz);\n"
	      "                         takes --iterations (default 100) and --duration\n"
	      "  --rounds N             with --http: the whole measure N times over (default 1),\n"
	      "                         each round's two ratios, then medians and ranges\n"
	      "  --judge                instead: the judge's cells (POST /v1/judge: C++ with 20\n"
	      "                         tests against verl's one /run_code per test, python\n"
	      "                         against the host floor and bwrap, judged submissions/s at\n"
	      "                         2 clients, a GRPO mix with the cache on and off); takes\n"
	      "                         --duration (each 2-client cell, default 5s) and --rounds\n"
	      "                         (default 3); each round also times the audit cells\n"
	      "                         (cpp20 and py20 with \"audit\": true against no audit,\n"
	      "                         off on on off, after the machine's cost of a switch\n"
	      "                         between two processes, which an audited call pays);\n"
	      "                         --audit runs only those\n"
	      "  --episode              instead: grading an episode in a fork (POST\n"
	      "                         /v1/sessions/{id}/judge) against running the same command\n"
	      "                         as a step of the session, which holds --episode-mb MB of\n"
	      "                         files (default 100); takes --rounds (default 5)\n"
	      "  --goodput              instead: a trainer's load against a daemon of its own\n"
	      "                         (paddock serve): python jobs with deadlines that are their\n"
	      "                         clients' read timeouts, at --loads times the capacity\n"
	      "                         measured first (default 1,2,5); per load the share of\n"
	      "                         accepted requests answered in time, the share of CPU spent\n"
	      "                         on answers that reached a client, and the time from the\n"
	      "                         flood's end until a request is admitted; takes --duration\n"
	      "                         (per load, default 10s), --job-cpu (0.3s), --deadline (20s:\n"
	      "                         verl's patience for a 5 s timeout, 5 + 5 + 10); and the\n"
	      "                         requests a client waiting that long lost, against how many\n"
	      "                         no scheduler could have answered in time\n"
	      "  --memory-verdict       instead (or with --goodput): the run time to the verdict of\n"
	      "                         a 300 MB python allocation under 256 MB, alone and 8 at\n"
	      "                         once, and of an infinite loop past its 1 s limit\n"
	      "  --against PATH         with --goodput/--memory-verdict: measure another build's\n"
	      "                         daemon too, in alternating rounds; --rounds N (default 1)\n"
	      "  --guard                instead: CPU-time ratios in alternating rounds (--rounds,\n"
	      "                         default 5; --iterations a side, default 20): paddock exec\n"
	      "                         against bwrap, and the daemon's CPU per POST /run_code\n"
	      "                         against a spawn of /bin/true; --baseline CLI,DAEMON exits 1\n"
	      "                         when the lowest round is 25% over; --cli PATH: another\n"
	      "                         build's paddock for the CLI's side\n"
	      "\n"
	      "exit status: 0 all operations succeeded; 2 some failed (see the notes);\n"
	      "             64 bad usage.\n"
	      "Needs root for the paddock cases.\n",
	      f);
}

/* Marks the cases named in a comma list; returns where an unknown name starts, or NULL. */
static const char *select_cases(bench_case *cases, size_t ncases, const char *list)
{
	for (size_t i = 0; i < ncases; i++)
		cases[i].selected = false;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		bool known = false;
		for (size_t i = 0; i < ncases; i++)
			if ((strlen(cases[i].key) == n && !strncmp(cases[i].key, p, n)) ||
			    (cases[i].group && strlen(cases[i].group) == n &&
			     !strncmp(cases[i].group, p, n)))
				known = cases[i].selected = true;
		if (n && !known)
			return p;
		p += n;
		if (*p == ',')
			p++;
	}
	return NULL;
}

enum { O_ONLY = 256, O_JSON, O_DENSITY, O_CELL_TIMEOUT };

/* the audit pair's options: they must outlive cmd_bench's cases, which point at them */
static pd_exec_opts py_xo;
static pd_sandbox_opts audit_so;
static const pd_audit_opts audit_opts = {.enabled = true};
/* the egress pair's allowlist sandbox: one entry (the relay's cost does not grow with the list
 * until a connection is judged) */
static pd_sandbox_opts egress_so;
static const char *const egress_allow[] = {"mirror.invalid:8080", NULL};
static const pd_egress_opts egress_opts = {.allow = egress_allow};
/* the gvisor group's sandbox: the same one under runsc (docs/isolation.md) */
static pd_sandbox_opts gvisor_so;

/* the spawned rows' commands */
static const char *const argv_floor[] = {"/bin/true", NULL};
/* the namespaces paddock uses, and a root that can run /bin/true (usrmerged host); the path of
 * bwrap is found in $PATH when the bench starts */
static const char *argv_bwrap[BENCH_BWRAP_ARGC];
/* /proc/self/exe: the very binary running the bench, even if a rebuild replaced the file */
static const char *const argv_cli[] = {"/proc/self/exe", "exec", "-q", "--", "/bin/true", NULL};
/* gVisor alone, without paddock: the host's root, no network, the platform paddock uses by
 * default (ptrace: no KVM here) */
static const char *const argv_runsc_do[] = {"/usr/bin/runsc", "--rootless", "--network=none",
					    "--platform=ptrace", "do", "/bin/true", NULL};

/* The case table, in the order the phases take them (cmd_bench runs once per process: the results
 * are written into it). The floor and bwrap rows come first: the report compares with them. */
static bench_case cases[] = {
    {.key = "floor", .label = "floor: spawn /bin/true", .kind = &bench_kind_spawn, .argv = argv_floor},
    {.key = "bwrap", .label = "bwrap /bin/true", .kind = &bench_kind_spawn, .argv = argv_bwrap},
    {.key = "cli", .label = "paddock exec (CLI process)", .kind = &bench_kind_spawn, .argv = argv_cli},
    {.key = "lib",
     .label = "lib pd_run create+exec+destroy",
     .kind = &bench_kind_lib_run,
     .part_names = {"setup", "exec", "teardown"}},
    {.key = "lib-create",
     .label = "lib create+destroy (no exec)",
     .kind = &bench_kind_lib_create,
     .part_names = {"create", NULL, "destroy"}},
    {.key = "lib-exec", .label = "lib exec in a live sandbox", .kind = &bench_kind_lib_exec},
    {.key = "pool-exec",
     .label = "pool acquire+exec+release (warm)",
     .kind = &bench_kind_pool_exec,
     .part_names = {"acquire", "exec", "release"}},
    {.key = "pool-throughput", .label = "pool exec, clean sandbox each", .kind = &bench_kind_pool_tp},
    {.key = "audit-off",
     .group = "audit",
     .label = "lib pd_run python3, no audit",
     .kind = &bench_kind_audit,
     .xo = &py_xo},
    {.key = "audit-on",
     .group = "audit",
     .label = "lib pd_run python3, audit on",
     .kind = &bench_kind_audit,
     .so = &audit_so,
     .xo = &py_xo},
    {.key = "egress-off",
     .group = "egress",
     .label = "lib create+destroy, loopback",
     .kind = &bench_kind_egress,
     .optional = true},
    {.key = "egress-on",
     .group = "egress",
     .label = "lib create+destroy, allowlist",
     .kind = &bench_kind_egress,
     .so = &egress_so,
     .optional = true},
    /* the tiers, side by side (only with --only gvisor: a gvisor operation costs 0.03-2 s) */
    {.key = "gv-c-create",
     .group = "gvisor",
     .label = "container create+destroy",
     .kind = &bench_kind_tier_create,
     .part_names = {"create", NULL, "destroy"},
     .optional = true},
    {.key = "gv-create",
     .group = "gvisor",
     .label = "gvisor create+destroy",
     .kind = &bench_kind_tier_create,
     .so = &gvisor_so,
     .part_names = {"create", NULL, "destroy"},
     .peer = "gv-c-create",
     .optional = true},
    {.key = "gv-c-run",
     .group = "gvisor",
     .label = "container pd_run /bin/true",
     .kind = &bench_kind_tier_run,
     .part_names = {"setup", "exec", "teardown"},
     .optional = true},
    {.key = "gv-run",
     .group = "gvisor",
     .label = "gvisor pd_run /bin/true",
     .kind = &bench_kind_tier_run,
     .so = &gvisor_so,
     .part_names = {"setup", "exec", "teardown"},
     .peer = "gv-c-run",
     .runsc = "gv-runsc-do",
     .optional = true},
    {.key = "gv-runsc-do",
     .group = "gvisor",
     .label = "runsc do /bin/true (alone)",
     .kind = &bench_kind_spawn,
     .argv = argv_runsc_do,
     .optional = true},
    {.key = "gv-c-pool",
     .group = "gvisor",
     .label = "container pool warm exec",
     .kind = &bench_kind_pool_exec,
     .part_names = {"acquire", "exec", "release"},
     .optional = true},
    {.key = "gv-pool",
     .group = "gvisor",
     .label = "gvisor pool warm exec",
     .kind = &bench_kind_pool_exec,
     .so = &gvisor_so,
     .part_names = {"acquire", "exec", "release"},
     .peer = "gv-c-pool",
     .optional = true},
    {.key = "gv-c-pool-tp",
     .group = "gvisor",
     .label = "container pool throughput",
     .kind = &bench_kind_pool_tp,
     .optional = true},
    {.key = "gv-pool-tp",
     .group = "gvisor",
     .label = "gvisor pool throughput",
     .kind = &bench_kind_pool_tp,
     .so = &gvisor_so,
     .peer = "gv-c-pool-tp",
     .optional = true},
    {.key = "density", .label = "density: idle sandboxes", .kind = &bench_kind_density, .optional = true},
};
enum { NCASES = sizeof cases / sizeof cases[0] };
static bench_case *const floor_c = &cases[0], *const bwrap_c = &cases[1], *const density_c = &cases[NCASES - 1];

/* The sections measured apart from the lifecycle rows (the daemon's: a server, clients and
 * python3): their exit status, or -1 when argv asks for none of them. */
static int bench_section(int argc, char **argv)
{
	bool http = false, judge = false, goodput = false, guard = false, help = false, episode = false;
	for (int i = 1; i < argc; i++) {
		http |= !strcmp(argv[i], "--http");
		guard |= !strcmp(argv[i], "--guard");
		judge |= !strcmp(argv[i], "--judge");
		episode |= !strcmp(argv[i], "--episode");
		goodput |= !strcmp(argv[i], "--goodput") || !strcmp(argv[i], "--memory-verdict");
		help |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
	}
	if ((http || judge || goodput || guard) && help) {
		bench_usage(stdout);
		return 0;
	}
	if (guard)
		return cmd_bench_guard(argc, argv);
	if (http)
		return cmd_bench_http(argc, argv);
	if (judge)
		return cmd_bench_judge(argc, argv);
	if (episode)
		return cmd_bench_episode(argc, argv);
	if (goodput)
		return cmd_bench_goodput(argc, argv);
	return -1;
}

typedef struct bench_args {
	int iterations;
	uint64_t duration_ms, bound_ms;
	bool json;
	int density_n;
} bench_args;

/* One option of the lifecycle rows into a; 0, or the exit status of a bad one (-1: --help). */
static int bench_option(int c, bench_args *a, bool *density_set)
{
	long n;
	switch (c) {
	case 'h': bench_usage(stdout); return -1;
	case 'n':
		if (!cli_count("--iterations", optarg, 1, 10000000, &n))
			return EXIT_USAGE;
		a->iterations = (int)n;
		return 0;
	case 'd': return cli_duration_ms("--duration", optarg, 0, 3600000, &a->duration_ms) ? 0 : EXIT_USAGE;
	case O_ONLY: {
		if (!optarg[strspn(optarg, ",")]) {
			cli_error("--only: no case named (cases: see 'paddock bench --help')");
			return EXIT_USAGE;
		}
		const char *bad = select_cases(cases, NCASES, optarg);
		if (bad) {
			cli_error("--only: unknown case '%.*s' (cases: floor, bwrap, cli, "
				  "lib, lib-create, lib-exec, pool-exec, pool-throughput, "
				  "audit (audit-off, audit-on), egress (egress-off, egress-on), density, "
				  "gvisor (gv-c-create, gv-create, gv-c-run, gv-run, gv-runsc-do, "
				  "gv-c-pool, gv-pool, gv-c-pool-tp, gv-pool-tp))",
				  (int)strcspn(bad, ","), bad);
			return EXIT_USAGE;
		}
		return 0;
	}
	case O_JSON: a->json = true; return 0;
	case O_CELL_TIMEOUT:
		return cli_duration_ms("--cell-timeout", optarg, 1000, 3600000, &a->bound_ms) ? 0 : EXIT_USAGE;
	case O_DENSITY:
		if (!cli_count("--density", optarg, 1, DENSITY_MAX, &n))
			return EXIT_USAGE;
		a->density_n = (int)n;
		*density_set = true;
		return 0;
	default: return EXIT_USAGE; /* the caller says which option */
	}
}

/* The command line of the lifecycle rows; 0, -1 after --help, or the exit status of a bad one.
 * The cases it selects are marked in the table. */
static int bench_args_parse(int argc, char **argv, bench_args *a)
{
	static const struct option opts[] = {
	    {"help", no_argument, 0, 'h'},
	    {"iterations", required_argument, 0, 'n'},
	    {"duration", required_argument, 0, 'd'},
	    {"only", required_argument, 0, O_ONLY},
	    {"json", no_argument, 0, O_JSON},
	    {"density", required_argument, 0, O_DENSITY},
	    {"cell-timeout", required_argument, 0, O_CELL_TIMEOUT},
	    {0, 0, 0, 0},
	};
	*a = (bench_args){.iterations = 200, .duration_ms = 3000, .bound_ms = 60000, .density_n = DENSITY_DEFAULT};
	bool density_set = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:hn:d:", opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return cli_bad_option("bench", "bench", NULL, c, argv, opts);
		int rc = bench_option(c, a, &density_set);
		if (rc)
			return rc;
	}
	if (optind < argc) {
		cli_error("bench: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (density_set && !density_c->selected) {
		cli_error("--density sets the size of the density case, which runs only when "
			  "selected: --only density");
		return EXIT_USAGE;
	}
	return 0;
}

/* The machine, the library's context and the options the cases point at; the cases that cannot
 * run here are marked skipped (ctx_error: why the library could not start). */
static void bench_setup(bench_env *env, machine *m, const bench_args *a, char *ctx_error, size_t len)
{
	*m = (machine){.cpus = sysconf(_SC_NPROCESSORS_ONLN), .cgroup = "unknown"};
	struct utsname u;
	snprintf(m->kernel, sizeof m->kernel, "%s", uname(&u) == 0 ? u.release : "?");
	if (getloadavg(m->load, 3) != 3)
		m->load[0] = m->load[1] = m->load[2] = -1;
	pd_err e = {0};
	env->ctx = pd_ctx_new(NULL, &e);
	pd_err_text(&e, ctx_error, len);
	if (env->ctx)
		m->cgroup = pd_ctx_cgroup_backend(env->ctx);
	env->so.limits = pd_limits_default();
	static char *const true_argv[] = {(char *)"/bin/true", NULL};
	env->xo.argv = true_argv;
	env->xo.stdin_fd = -1;
	/* the audit pair: interpreter start-up opens many of the image's files, and one of /etc */
	static char *py_argv[] = {(char *)"python3", (char *)"-c",
				  (char *)"import json,os; open(\"/etc/hostname\").read()", NULL};
	if (access("/usr/bin/python3", X_OK) == 0)
		py_argv[0] = (char *)"/usr/bin/python3";
	py_xo = env->xo;
	py_xo.argv = py_argv;
	audit_so = env->so;
	audit_so.audit = &audit_opts;
	egress_so = env->so;
	egress_so.net = PD_NET_ALLOWLIST;
	egress_so.egress = &egress_opts;
	gvisor_so = env->so;
	gvisor_so.isolation = PD_ISO_GVISOR;
	for (size_t i = 0; i < NCASES; i++)
		if (cases[i].group && !strcmp(cases[i].group, "gvisor"))
			cases[i].bound_ms = a->bound_ms;
	static char bwrap_path[4096];
	if (!bench_find_in_path("bwrap", bwrap_path, sizeof bwrap_path))
		bwrap_c->skip = "bwrap not found in PATH";
	bench_bwrap_argv(bwrap_path, argv_bwrap);
	for (size_t i = 0; i < NCASES; i++)
		if (cases[i].bound_ms && access(argv_runsc_do[0], X_OK) < 0)
			cases[i].skip = "runsc not installed (/usr/bin/runsc)";
	for (size_t i = 0; i < NCASES; i++)
		if (cases[i].kind != &bench_kind_spawn && !env->ctx)
			cases[i].skip = ctx_error;
}

/* The latency phase, then the throughput cells, each case after case. */
static void bench_phases(const bench_env *env, const bench_args *a, bool progress)
{
	for (int phase = 0; phase <= MAX_WORKERS; phase++) {
		if (phase > 0 && !a->duration_ms)
			break;
		for (size_t i = 0; i < NCASES; i++) {
			bench_case *bc = &cases[i];
			if (!bc->selected || bc->skip || bc->kind->apart || bc->paired ||
			    (phase == 0 && bc->kind->no_latency) || (phase > 0 && bc->kind->no_throughput))
				continue;
			if (progress)
				fprintf(stderr, "\r\033[Kbench: %s, %s", bc->label, phase ? "throughput" : "latency");
			/* a bounded cell's pool fill, operations and drain each end at the bound */
			if (bc->bound_ms)
				bench_watch(bc->label, (phase ? a->duration_ms : 0) + 3 * bc->bound_ms + 60000);
			if (phase == 0) {
				bench_case *group[2] = {bc, bc->twin};
				int nb = 1;
				if (bc->twin && bc->twin->selected && !bc->twin->skip) {
					bc->twin->paired = true;
					nb = 2;
				}
				bench_measure_latency(env, group, nb, a->iterations);
			} else
				bench_measure_throughput(env, bc, phase - 1, phase, a->duration_ms);
			bench_watch(NULL, 0);
		}
	}
}

/* The density case, last and alone: it holds thousands of sandboxes, which would weigh on any
 * other row. Its failures are the case's. */
static void density_case(const bench_env *env, int n, density_report *dens, bool progress)
{
	memset(dens, 0, sizeof *dens);
	if (!density_c->selected || density_c->skip)
		return;
	bench_run_density(env, n, dens, progress);
	uint64_t bad = dens->create_failures + dens->residue_failures + bench_leftovers_bad(&dens->left) +
		       !dens->created;
	if (bad) {
		density_c->failed = bad;
		snprintf(density_c->error, sizeof density_c->error, "%s", dens->error[0] ? dens->error : dens->stopped);
	}
}

int cmd_bench(int argc, char **argv)
{
	int rc = bench_section(argc, argv);
	if (rc >= 0)
		return rc;
	for (size_t i = 0; i < NCASES; i++) {
		cases[i].selected = !cases[i].optional;
		/* audit-off is measured with audit-on in one alternating loop (and so on) */
		if (!strcmp(cases[i].key, "audit-off") || !strcmp(cases[i].key, "egress-off") ||
		    !strcmp(cases[i].key, "gv-c-create") || !strcmp(cases[i].key, "gv-c-run"))
			cases[i].twin = &cases[i + 1];
	}
	bench_args a;
	rc = bench_args_parse(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	machine m;
	bench_env env = {0};
	char ctx_error[PD_ERR_TEXT_SIZE]; /* why the cases that need a context are skipped */
	bench_setup(&env, &m, &a, ctx_error, sizeof ctx_error);
	/* progress goes to a terminal only, so that captured output is just the report */
	bool progress = isatty(STDERR_FILENO);
	bench_phases(&env, &a, progress);
	density_report dens;
	density_case(&env, a.density_n, &dens, progress);
	if (progress)
		fputs("\r\033[K", stderr);
	pd_ctx_free(env.ctx);

	if (a.json)
		bench_print_json(&m, cases, NCASES, floor_c, bwrap_c, a.iterations, a.duration_ms, &dens);
	else
		bench_print_table(&m, cases, NCASES, floor_c, bwrap_c, a.iterations, a.duration_ms, &dens);
	/* a missing bwrap is the machine's business; a paddock case that could not run is ours */
	bool failed = false;
	for (size_t i = 0; i < NCASES; i++)
		if (cases[i].selected && (cases[i].failed || (cases[i].skip && cases[i].kind != &bench_kind_spawn)))
			failed = true;
	return failed ? EXIT_PADDOCK_FAILED : 0;
}
