/* paddock exec: run one program in a fresh sandbox and report its result. */
#define _GNU_SOURCE
#include "cli.h"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void exec_usage(FILE *f)
{
	pd_limits d = pd_limits_default();
	fprintf(f,
		"usage: paddock exec [options] -- PROG [ARGS...]\n"
		"\n"
		"Runs PROG in a fresh sandbox (user, pid, mount, net, ipc, uts and cgroup namespaces;\n"
		"overlay root; cgroup limits; seccomp; no capabilities) and passes its output through.\n"
		"\n"
		"result:\n"
		"  --json                 print the result record as JSON on stdout after the run, with its\n"
		"                         failure_class and verdict (the program's output is then not\n"
		"                         passed through but kept in it); without --json, a program that\n"
		"                         was stopped gets one line on stderr saying why (timed out...)\n"
		"  --result FILE          write the result record to FILE\n"
		"  -q, --quiet            do not pass the program's output through\n"
		"\n"
		"environment:\n"
		"  --image NAME|DIGEST|DIR an imported image (paddock image ls), or a root filesystem\n"
		"                         directory (a path: /..., ./...; default: the host image); an\n"
		"                         image's Env is the base of the environment, its WorkingDir\n"
		"                         the default --cwd, its User (by number or by name from its\n"
		"                         own /etc/passwd) the default --user; with no PROG, its\n"
		"                         Entrypoint then Cmd run\n"
		"  -e, --env K=V          set a variable (repeatable), over the defaults PATH, HOME,\n"
		"                         LANG, TERM; nothing is taken from the host\n"
		"  -C, --cwd DIR          working directory inside (default /)\n"
		"  -u, --user UID[:GID]   the sandbox's user: its program, its /work and the files\n"
		"                         placed in it (numbers, root, sandbox = 1000:1000, nobody, or\n"
		"                         names of an imported image's /etc/passwd and /etc/group;\n"
		"                         default root: the sandbox's root, with no capabilities)\n"
		"  -i, --stdin FILE       feed FILE on stdin ('-' = paddock's stdin; default /dev/null)\n"
		"  -b, --bind SRC:DST[:rw] bind a host path (read-only unless :rw; repeatable)\n"
		"  --hostname NAME        hostname inside (default sandbox)\n"
		"  --net MODE             loopback (default: own netns, only lo), none (lo down),\n"
		"                         host (the host's network; all else stays isolated),\n"
		"                         allowlist (loopback + the hosts of --egress-allow through\n"
		"                         the relay, an HTTP proxy at " PD_RELAY_URL ")\n"
		"  --egress-allow HOST:PORT  with --net allowlist: a host the relay may reach (repeat)\n"
		"  --isolation TIER       container (default) or gvisor: the same sandbox run under\n"
		"                         gVisor's runsc, a user-space kernel (docs/isolation.md)\n"
		"  --gvisor-platform P    runsc --platform (default $PADDOCK_GVISOR_PLATFORM or ptrace)\n"
		"\n"
		"limits (sizes take k/M/G, times take s or ms):\n"
		"  -m, --memory SIZE      memory, no swap (default %lluM)\n"
		"  -p, --pids N           processes and threads (default %u)\n"
		"  -t, --cpu-time T       CPU time of the whole sandbox (default %llus)\n"
		"  -w, --wall-time T      wall-clock time (default %llus)\n"
		"  --cpus N               CPU quota in cores, e.g. 0.5 (default 1)\n"
		"  -d, --disk SIZE        writable layer size (default %lluM)\n"
		"  -o, --output SIZE      output kept per stream, head and tail (default %lluM)\n"
		"  --output-kill SIZE     output after which the sandbox is killed (default %lluM)\n"
		"  --nofile N             open files (default %u)\n"
		"  --fsize SIZE           largest file (default: no limit beyond the disk size)\n"
		"  --io-read-bps SIZE     block reads per second from the disks behind the image, binds\n"
		"                         and state directory (default: no limit; /tmp, /work are tmpfs)\n"
		"  --io-write-bps SIZE    block writes per second to those disks (default: no limit)\n"
		"  --io-read-iops N       read operations per second on them (default: no limit)\n"
		"  --io-write-iops N      write operations per second on them (default: no limit)\n"
		"\n"
		"audit:\n"
		"  --audit                audit the run under the default policy (docs/audit.md): changes outside\n"
		"                         the work directory and scratch, judge material, decoys, /proc/*/environ,\n"
		"                         egress and harness probes fail the process level (exit status 1)\n"
		"  --audit-policy P       the policy: a JSON object, or @FILE holding one (implies --audit)\n"
		"  --audit-allow PATH     a path prefix readable without a read_outside event (repeatable)\n"
		"  --audit-deny PATH      judge material: opens under PATH refused with EACCES (repeatable)\n"
		"  --audit-deny-net       refuse connect/send to non-loopback addresses (the default egress)\n"
		"\n"
		"exit status: 0 the program's status is OK; 1 it failed (RE, SG, TO, ML, OL);\n"
		"             2 paddock failed (XX or setup); 64 bad usage.\n",
		(unsigned long long)(d.memory_bytes >> 20), d.pids, (unsigned long long)(d.cpu_ms / 1000),
		(unsigned long long)(d.wall_ms / 1000), (unsigned long long)(d.disk_bytes >> 20),
		(unsigned long long)(d.output_bytes >> 20), (unsigned long long)(d.output_kill_bytes >> 20),
		d.nofile);
}

static void passthrough(void *arg, int stream, const char *buf, size_t len)
{
	(void)arg;
	int fd = stream == 1 ? STDOUT_FILENO : STDERR_FILENO;
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n <= 0)
			return; /* a closed stdout must not stop the run */
		buf += n;
		len -= (size_t)n;
	}
}

static int parse_id(const char *s, uint32_t *out)
{
	static const struct {
		const char *name;
		uint32_t id;
	} names[] = {{"root", 0}, {"sandbox", 1000}, {"nobody", 65534}, {"nogroup", 65534}};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(s, names[i].name)) {
			*out = names[i].id;
			return 0;
		}
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 5)
		return -1;
	long v = strtol(s, NULL, 10);
	if (v > 65535)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_user(const char *arg, uint32_t *uid, uint32_t *gid)
{
	char buf[64];
	if (strlen(arg) >= sizeof buf)
		return -1;
	snprintf(buf, sizeof buf, "%s", arg);
	char *colon = strchr(buf, ':');
	if (colon)
		*colon++ = 0;
	if (parse_id(buf, uid) < 0)
		return -1;
	*gid = *uid;
	return colon ? parse_id(colon, gid) : 0;
}

/* The CLI's environment: paddock's defaults, then each --env over them by name. */
static char **merge_env(char **over, size_t n)
{
	static char d_path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		    d_home[] = "HOME=/root", d_lang[] = "LANG=C.UTF-8", d_term[] = "TERM=dumb";
	static char *defaults[] = {d_path, d_home, d_lang, d_term};
	char **env = calloc(n + 5, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < 4; i++) {
		size_t kl = (size_t)(strchr(defaults[i], '=') - defaults[i]) + 1;
		bool replaced = false;
		for (size_t j = 0; j < n; j++)
			replaced |= !strncmp(over[j], defaults[i], kl);
		if (!replaced)
			env[k++] = defaults[i];
	}
	for (size_t j = 0; j < n; j++) {
		/* a later --env of the same name wins */
		size_t kl = (size_t)(strchr(over[j], '=') - over[j]) + 1;
		bool later = false;
		for (size_t m = j + 1; m < n; m++)
			later |= !strncmp(over[m], over[j], kl);
		if (!later)
			env[k++] = over[j];
	}
	return env;
}

/* The run's audit policy: the defaults of "audit": true with the work directory (the cwd unless
 * it is "/"), under --audit-policy, with --audit-allow and --audit-deny added. Returns 0 or an
 * exit status. */
static int build_policy(pd_audit_policy **out, const char *arg, const char *cwd, const char **allow,
			size_t nallow, const char **deny, size_t ndeny)
{
	const char *work = cwd && strcmp(cwd, "/") ? cwd : NULL;
	pd_err e = {0};
	pd_audit_policy *p = pd_audit_policy_default(work);
	if (!p) {
		cli_error("out of memory");
		return EXIT_PADDOCK_FAILED;
	}
	char *text = NULL;
	size_t len = 0;
	if (arg && arg[0] == '@') {
		FILE *f = fopen(arg + 1, "re");
		if (!f) {
			cli_error("--audit-policy %s: %s", arg + 1, strerror(errno));
			pd_audit_policy_free(p);
			return EXIT_USAGE;
		}
		text = calloc(1, 1 << 20);
		len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
		fclose(f);
	} else if (arg) {
		text = strdup(arg);
		len = text ? strlen(text) : 0;
	}
	/* the flags, as a policy of their own */
	json_t *flags = json_object(), *a = json_array(), *d = json_array();
	for (size_t i = 0; i < nallow; i++)
		json_array_append_new(a, json_string(allow[i]));
	for (size_t i = 0; i < ndeny; i++)
		json_array_append_new(d, json_string(deny[i]));
	if (nallow)
		json_object_set(flags, "allow", a);
	json_object_set(flags, "judge", d);
	json_decref(a);
	json_decref(d);
	char *ftext = json_dumps(flags, JSON_COMPACT);
	json_decref(flags);
	const char *texts[2] = {text, ftext};
	const char *names[2] = {"--audit-policy", "--audit-allow/--audit-deny"};
	for (int i = 0; i < 2; i++) {
		if (!texts[i])
			continue;
		pd_audit_policy *o = pd_audit_policy_parse(texts[i], i ? strlen(texts[i]) : len, names[i], work, &e);
		if (!o || pd_audit_policy_merge(p, o, false, &e) < 0) {
			cli_error("%s", PD_ERR_STR(&e));
			pd_audit_policy_free(o);
			pd_audit_policy_free(p);
			free(text);
			free(ftext);
			return EXIT_USAGE;
		}
		pd_audit_policy_free(o);
	}
	free(text);
	free(ftext);
	*out = p;
	return 0;
}

/* The record --json and --result write: the exec record every surface renders, with the failure
 * class and the three-level verdict the native API's record states (output not_judged: exec has
 * no judge; process from the audit, not_audited without one), so that the exit status can be read
 * off it. With an audit its verdict is also first, as "process", where it has always been. */
static json_t *exec_record(const pd_result *r, const pd_audit_verdict *v, bool ran)
{
	static const pd_audit_verdict none; /* not_audited */
	pd_failure fc = pd_failure_of(r, v);
	json_t *base = pd_result_json(r, true), *o = json_object();
	json_t *process = pd_audit_verdict_json(v ? v : &none);
	json_t *verdict = process ? json_pack("{s:s,s:O,s:s}", "output", "not_judged", "process", process,
					      "resources", pd_resources_level(fc, ran))
				  : NULL;
	bool good = base && o && verdict && (!v || json_object_set(o, "process", process) == 0);
	const char *k;
	json_t *x;
	json_object_foreach(base, k, x) {
		good = good && json_object_set(o, k, x) == 0;
		if (!strcmp(k, "status"))
			good = good && json_object_set_new(o, "failure_class", json_string(pd_failure_name(fc))) == 0;
		else if (!strcmp(k, "error"))
			good = good && json_object_set(o, "verdict", verdict) == 0;
	}
	json_decref(base);
	json_decref(process);
	json_decref(verdict);
	if (!good) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		text += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Without --json nothing says why a program that was stopped failed (exit status 1 covers RE, SG,
 * TO, ML and OL alike, and a killed program cannot say it was): one line on stderr, as a shell
 * says "Killed". */
static void say_status(const pd_result *r, const pd_limits *l)
{
	const char *sig = r->signal > 0 ? sigabbrev_np(r->signal) : NULL;
	switch (r->status) {
	case PD_TO:
		if (r->idle_timeout)
			fprintf(stderr, "paddock exec: timed out: no output for too long\n");
		else if (r->cpu_ms >= l->cpu_ms)
			fprintf(stderr, "paddock exec: timed out after %.1f s of CPU time (cpu)\n", l->cpu_ms / 1000.0);
		else
			fprintf(stderr, "paddock exec: timed out after %.1f s (wall)\n", l->wall_ms / 1000.0);
		break;
	case PD_SG:
		fprintf(stderr, "paddock exec: killed by signal %d (%s%s)\n", r->signal, sig ? "SIG" : "",
			sig ? sig : "unknown");
		break;
	case PD_ML:
		fprintf(stderr, "paddock exec: killed at the memory limit (%llu MiB)\n",
			(unsigned long long)(l->memory_bytes >> 20));
		break;
	case PD_OL:
		fprintf(stderr, "paddock exec: killed past the output limit (%llu bytes written, the limit %llu bytes)\n",
			(unsigned long long)(r->out.total + r->err.total), (unsigned long long)l->output_kill_bytes);
		break;
	default: break; /* RE: the program ended itself, and says why as it would outside */
	}
}

enum {
	O_JSON = 256, O_RESULT, O_IMAGE, O_HOSTNAME, O_NET, O_CPUS, O_NOFILE, O_FSIZE, O_AUDIT,
	O_AUDIT_ALLOW, O_AUDIT_DENY, O_AUDIT_DENY_NET, O_OUTPUT_KILL, O_AUDIT_POLICY,
	O_IO_READ_BPS, O_IO_WRITE_BPS, O_IO_READ_IOPS, O_IO_WRITE_IOPS,
	O_ISOLATION, O_GVISOR_PLATFORM, O_EGRESS_ALLOW,
};

static int bad(const char *opt, const char *val, const char *want)
{
	cli_bad(opt, val, want);
	return EXIT_USAGE;
}

/* What the command line asks for. One per process: the sandbox's options point into it. */
typedef struct exec_args {
	pd_sandbox_opts so;
	pd_exec_opts xo;
	bool audit, json, quiet, user_given;
	const char *policy_arg, *user_arg, *result_file, *stdin_file;
	char *envv[1025];
	size_t nenv;
	pd_bind binds[32];
	const char *allow[65], *deny[65], *egress_allow[65];
	size_t nallow, ndeny, negress;
	pd_egress_opts egress;
} exec_args;

/* A limit's option into a->so.limits: 0, an exit status, or -1 when c is not a limit's. */
static int exec_limit_option(int c, exec_args *a)
{
	pd_limits *l = &a->so.limits;
	long n;
	switch (c) {
	case 'm': return cli_size("--memory", optarg, 4 << 20, UINT64_MAX, &l->memory_bytes) ? 0 : EXIT_USAGE;
	case 'p':
		if (!cli_count("--pids", optarg, 1, 1000000, &n))
			return EXIT_USAGE;
		l->pids = (uint32_t)n;
		return 0;
	case 't': return cli_duration_ms("--cpu-time", optarg, 1, UINT64_MAX, &l->cpu_ms) ? 0 : EXIT_USAGE;
	case 'w': return cli_duration_ms("--wall-time", optarg, 1, UINT64_MAX, &l->wall_ms) ? 0 : EXIT_USAGE;
	case O_CPUS: {
		double d;
		if (!cli_decimal("--cpus", optarg, 0.01, 1024, &d))
			return EXIT_USAGE;
		l->cpu_millicores = (uint32_t)(d * 1000 + 0.5);
		return 0;
	}
	case 'd': return cli_size("--disk", optarg, 4096, UINT64_MAX, &l->disk_bytes) ? 0 : EXIT_USAGE;
	case 'o': return cli_size("--output", optarg, 16, UINT64_MAX, &l->output_bytes) ? 0 : EXIT_USAGE;
	case O_OUTPUT_KILL:
		return cli_size("--output-kill", optarg, 16, UINT64_MAX, &l->output_kill_bytes) ? 0 : EXIT_USAGE;
	case O_NOFILE:
		if (!cli_count("--nofile", optarg, 4, 1048576, &n))
			return EXIT_USAGE;
		l->nofile = (uint32_t)n;
		return 0;
	case O_FSIZE: return cli_size("--fsize", optarg, 1, UINT64_MAX, &l->fsize_bytes) ? 0 : EXIT_USAGE;
	case O_IO_READ_BPS:
	case O_IO_WRITE_BPS: {
		/* below a page a second the throttle only ever stalls */
		uint64_t *v = c == O_IO_READ_BPS ? &l->io_read_bps : &l->io_write_bps;
		if (!cli_size(c == O_IO_READ_BPS ? "--io-read-bps" : "--io-write-bps", optarg, 4096, UINT64_MAX / 2, v))
			return EXIT_USAGE;
		return 0;
	}
	case O_IO_READ_IOPS:
	case O_IO_WRITE_IOPS:
		if (!cli_count(c == O_IO_READ_IOPS ? "--io-read-iops" : "--io-write-iops", optarg, 1, 1000000000L, &n))
			return EXIT_USAGE;
		*(c == O_IO_READ_IOPS ? &l->io_read_iops : &l->io_write_iops) = (uint64_t)n;
		return 0;
	default: return -1;
	}
}

/* --bind SRC:/DST[:ro|rw] into a->binds: 0 or an exit status. */
static int exec_bind(exec_args *a, char *arg)
{
	if (a->so.nbinds == 32)
		return bad("--bind", arg, "within the 32 binds allowed");
	char *src = arg, *dst = strchr(src, ':');
	if (!dst || dst == src || dst[1] != '/')
		return bad("--bind", arg, "SRC:/DST[:rw]");
	*dst++ = 0;
	char *mode = strchr(dst, ':');
	bool rw = false;
	if (mode) {
		*mode++ = 0;
		if (!strcmp(mode, "rw"))
			rw = true;
		else if (strcmp(mode, "ro"))
			return bad("--bind", mode, "ro or rw");
	}
	a->binds[a->so.nbinds++] = (pd_bind){src, dst, rw};
	return 0;
}

/* The network and audit options: 0, an exit status, or -1 when c is neither's. */
static int exec_guard_option(int c, exec_args *a)
{
	switch (c) {
	case O_NET:
		if (!strcmp(optarg, "loopback"))
			a->so.net = PD_NET_LOOPBACK;
		else if (!strcmp(optarg, "none"))
			a->so.net = PD_NET_NONE;
		else if (!strcmp(optarg, "host"))
			a->so.net = PD_NET_HOST;
		else if (!strcmp(optarg, "allowlist"))
			a->so.net = PD_NET_ALLOWLIST;
		else
			return bad("--net", optarg, "loopback, none, allowlist or host");
		return 0;
	case O_EGRESS_ALLOW: {
		pd_err ee;
		if (pd_egress_entry_check(optarg, &ee) < 0) {
			fprintf(stderr, "paddock exec: --egress-allow %s: %s\n", optarg, ee.msg);
			return EXIT_USAGE;
		}
		if (a->negress == 64) {
			fprintf(stderr, "paddock exec: at most 64 --egress-allow\n");
			return EXIT_USAGE;
		}
		a->egress_allow[a->negress++] = optarg;
		return 0;
	}
	case O_AUDIT: a->audit = true; return 0;
	case O_AUDIT_POLICY: a->policy_arg = optarg, a->audit = true; return 0;
	case O_AUDIT_ALLOW:
	case O_AUDIT_DENY:
		if (optarg[0] != '/')
			return bad(c == O_AUDIT_ALLOW ? "--audit-allow" : "--audit-deny", optarg, "an absolute path");
		if ((c == O_AUDIT_ALLOW ? a->nallow : a->ndeny) == 64)
			return bad("--audit-allow/--audit-deny", optarg, "within the 64 paths allowed");
		if (c == O_AUDIT_ALLOW)
			a->allow[a->nallow++] = optarg;
		else
			a->deny[a->ndeny++] = optarg;
		a->audit = true;
		return 0;
	case O_AUDIT_DENY_NET: a->audit = true; return 0;
	default: return -1;
	}
}

/* Any other option: 0, an exit status, or -1 when c is none of exec's. */
static int exec_option(int c, exec_args *a)
{
	switch (c) {
	case O_JSON: a->json = true; return 0;
	case O_RESULT: a->result_file = optarg; return 0;
	case 'q': a->quiet = true; return 0;
	case O_IMAGE: a->so.image = optarg; return 0;
	case 'e':
		if (!strchr(optarg, '=') || optarg[0] == '=')
			return bad("--env", optarg, "K=V");
		if (a->nenv == 1024)
			return bad("--env", optarg, "within the 1024 variables allowed");
		a->envv[a->nenv++] = optarg;
		return 0;
	case 'C': a->xo.cwd = optarg; return 0;
	case 'u':
		/* names other than these are the image's (resolved once it is open) */
		a->user_arg = optarg;
		a->user_given = parse_user(optarg, &a->so.uid, &a->so.gid) == 0;
		return 0;
	case 'i': a->stdin_file = optarg; return 0;
	case 'b': return exec_bind(a, optarg);
	case O_HOSTNAME: a->so.hostname = optarg; return 0;
	case O_ISOLATION: {
		int iso = pd_isolation_parse(optarg);
		if (iso < 0)
			return bad("--isolation", optarg, "container or gvisor");
		a->so.isolation = (pd_isolation)iso;
		return 0;
	}
	case O_GVISOR_PLATFORM: a->so.gvisor_platform = optarg; return 0;
	default: {
		int rc = exec_limit_option(c, a);
		return rc >= 0 ? rc : exec_guard_option(c, a);
	}
	}
}

/* The command line into a: 0, -1 after --help, or an exit status. */
static int exec_parse(int argc, char **argv, exec_args *a)
{
	static const struct option opts[] = {
		{"help", no_argument, 0, 'h'},       {"json", no_argument, 0, O_JSON},
		{"result", required_argument, 0, O_RESULT}, {"quiet", no_argument, 0, 'q'},
		{"image", required_argument, 0, O_IMAGE}, {"env", required_argument, 0, 'e'},
		{"cwd", required_argument, 0, 'C'},  {"stdin", required_argument, 0, 'i'},
		{"user", required_argument, 0, 'u'},
		{"bind", required_argument, 0, 'b'}, {"hostname", required_argument, 0, O_HOSTNAME},
		{"net", required_argument, 0, O_NET}, {"memory", required_argument, 0, 'm'},
		{"pids", required_argument, 0, 'p'}, {"cpu-time", required_argument, 0, 't'},
		{"wall-time", required_argument, 0, 'w'}, {"cpus", required_argument, 0, O_CPUS},
		{"disk", required_argument, 0, 'd'}, {"output", required_argument, 0, 'o'},
		{"output-kill", required_argument, 0, O_OUTPUT_KILL},
		{"nofile", required_argument, 0, O_NOFILE}, {"fsize", required_argument, 0, O_FSIZE},
		{"io-read-bps", required_argument, 0, O_IO_READ_BPS},
		{"io-write-bps", required_argument, 0, O_IO_WRITE_BPS},
		{"io-read-iops", required_argument, 0, O_IO_READ_IOPS},
		{"io-write-iops", required_argument, 0, O_IO_WRITE_IOPS},
		{"audit", no_argument, 0, O_AUDIT},  {"audit-allow", required_argument, 0, O_AUDIT_ALLOW},
		{"audit-deny", required_argument, 0, O_AUDIT_DENY},
		{"audit-deny-net", no_argument, 0, O_AUDIT_DENY_NET},
		{"audit-policy", required_argument, 0, O_AUDIT_POLICY},
		{"isolation", required_argument, 0, O_ISOLATION},
		{"gvisor-platform", required_argument, 0, O_GVISOR_PLATFORM},
		{"egress-allow", required_argument, 0, O_EGRESS_ALLOW}, {0, 0, 0, 0},
	};
	a->so.limits = pd_limits_default();
	a->xo.stdin_fd = -1;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:hqe:C:i:b:m:p:t:w:d:o:u:", opts, NULL)) != -1) {
		if (c == 'h') {
			exec_usage(stdout);
			return -1;
		}
		int rc = exec_option(c, a);
		if (rc < 0)
			return cli_bad_option("exec", "exec", NULL, c, argv, opts);
		if (rc)
			return rc;
	}
	if (a->negress) {
		if (a->so.net != PD_NET_ALLOWLIST) {
			fprintf(stderr, "paddock exec: --egress-allow needs --net allowlist\n");
			return EXIT_USAGE;
		}
		a->egress.allow = a->egress_allow;
		a->so.egress = &a->egress;
	}
	a->so.binds = a->binds;
	return 0;
}

/* An imported image (--image NAME[:TAG]): its layers, leased until the sandbox is gone, and its
 * config's defaults (workdir, user, Env under --env). *have is false when --image is no image's
 * name (a directory, as before). 0 or an exit status. */
static int exec_image(exec_args *a, pd_image *im, bool *have)
{
	pd_err e = {0};
	struct stat ist;
	*have = false;
	if (!a->so.image || !pd_image_is_ref(a->so.image))
		return 0;
	if (pd_image_open(NULL, a->so.image, im, &e) < 0) {
		/* a relative directory that names no image keeps working as before */
		if (e.code == ENOENT && stat(a->so.image, &ist) == 0 && S_ISDIR(ist.st_mode))
			return 0;
		cli_error("--image %s: %s", a->so.image, PD_ERR_STR(&e));
		return EXIT_USAGE;
	}
	*have = true;
	a->so.layers = (const char *const *)im->layers;
	a->so.imported = im;
	a->so.image = NULL;
	if (!a->xo.cwd && im->workdir && im->workdir[0] == '/')
		a->xo.cwd = im->workdir;
	/* a name from --user, or the image's User (names and numbers), through the image's own
	 * /etc/passwd and /etc/group */
	const char *spec = a->user_arg ? (a->user_given ? NULL : a->user_arg) : im->user;
	if (spec && pd_image_user(im, spec, &a->so.uid, &a->so.gid, &e) < 0) {
		cli_error("%s %s: %s", a->user_arg ? "--user" : "the image's User", spec, e.msg);
		return EXIT_USAGE;
	}
	a->user_given = true;
	size_t ni = 0;
	while (im->env[ni])
		ni++;
	if (ni + a->nenv > 1024)
		return bad("--env", "(with the image's Env)", "within the 1024 variables allowed");
	/* the image's Env first: each --env of the same name is later, so it wins */
	memmove(a->envv + ni, a->envv, a->nenv * sizeof *a->envv);
	memcpy(a->envv, im->env, ni * sizeof *a->envv);
	a->nenv += ni;
	return 0;
}

/* The program, its environment, its audit policy and its stdin, once the image is known:
 * 0 or an exit status. *merged and *stdin_close are the caller's to free and close. */
static int exec_prepare(exec_args *a, int argc, char **argv, const pd_image *im, bool have_image,
			char ***merged, pd_audit_policy **policy, int *stdin_close)
{
	/* no program named: an imported image's Entrypoint and Cmd, as `docker run IMAGE` would */
	if (optind >= argc && !(have_image && im->command[0])) {
		cli_error("exec: no program given (usage: paddock exec [options] -- PROG [ARGS...]%s)",
			  have_image ? "; the image has no Entrypoint or Cmd" : "");
		return EXIT_USAGE;
	}
	if (a->user_arg && !a->user_given)
		return bad("--user", a->user_arg,
			   "UID[:GID] below 65536, root, sandbox, nobody, or a name of an imported image's /etc/passwd");
	if (a->nenv) {
		*merged = merge_env(a->envv, a->nenv);
		if (!*merged) {
			cli_error("out of memory");
			return EXIT_PADDOCK_FAILED;
		}
		a->xo.envp = *merged;
	}
	if (a->audit) {
		int prc = build_policy(policy, a->policy_arg, a->xo.cwd, a->allow, a->nallow, a->deny, a->ndeny);
		if (prc)
			return prc;
	}
	a->xo.argv = optind < argc ? argv + optind : im->command;
	if (a->stdin_file) {
		a->xo.stdin_from_fd = true;
		if (!strcmp(a->stdin_file, "-"))
			a->xo.stdin_fd = STDIN_FILENO;
		else {
			a->xo.stdin_fd = *stdin_close = open(a->stdin_file, O_RDONLY | O_CLOEXEC);
			if (a->xo.stdin_fd < 0) {
				cli_error("--stdin %s: %s", a->stdin_file, strerror(errno));
				return EXIT_USAGE;
			}
		}
	}
	if (!a->quiet && !a->json)
		a->xo.on_output = passthrough;
	return 0;
}

/* The record --json prints and --result writes. */
static void exec_write_record(const exec_args *a, const pd_result *r, const pd_audit_verdict *v, bool ran)
{
	json_t *rec = exec_record(r, v, ran);
	char *text = rec ? pd_json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	size_t tlen = text ? strlen(text) : 0;
	if (text)
		text[tlen++] = '\n'; /* over the NUL: the length is known */
	if (!text)
		cli_error("the result record: out of memory");
	if (a->json && text && write_all(STDOUT_FILENO, text, tlen) < 0)
		cli_error("write result: %s", strerror(errno));
	if (a->result_file && text) {
		int fd = open(a->result_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write_all(fd, text, tlen) < 0)
			cli_error("write result to %s: %s", a->result_file, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	free(text);
}

/* What the run came to, said as the options ask; the exit status. */
static int exec_report(const exec_args *a, int rc, const pd_result *r, const pd_audit_policy *policy,
		       const pd_audit_verdict *verdict, const pd_err *e)
{
	if (a->xo.on_output) {
		/* the live passthrough showed the head; show what the tail kept, marked */
		if (r->out.truncated || r->err.truncated)
			fprintf(stderr, "\npaddock: output truncated (stdout %llu bytes, stderr %llu bytes)\n",
				(unsigned long long)r->out.total, (unsigned long long)r->err.total);
	}
	if (rc < 0 || r->status == PD_XX)
		cli_error("sandbox fault: %s", r->error[0] ? r->error : PD_ERR_STR(e));
	else if (r->error[0])
		cli_error("%s", r->error); /* e.g. the program could not be executed */
	if (!a->json)
		say_status(r, &a->so.limits);
	if (policy && verdict->status == PD_PROCESS_FAIL && !a->quiet)
		for (size_t i = 0; i < verdict->nreasons; i++)
			cli_error("audit: %s", verdict->reasons[i]);
	if (a->json || a->result_file)
		exec_write_record(a, r, policy ? verdict : NULL, rc == 0);
	return r->status == PD_XX ? EXIT_PADDOCK_FAILED
	       : r->status != PD_OK || verdict->status == PD_PROCESS_FAIL ? EXIT_PROGRAM_FAILED
									  : EXIT_PROGRAM_OK;
}

int cmd_exec(int argc, char **argv)
{
	static exec_args a; /* the sandbox's options point into it */
	int rc = exec_parse(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	pd_image im;
	bool have_image = false;
	rc = exec_image(&a, &im, &have_image);
	char **merged = NULL;
	pd_audit_policy *policy = NULL;
	int stdin_close = -1;
	if (!rc)
		rc = exec_prepare(&a, argc, argv, &im, have_image, &merged, &policy, &stdin_close);
	pd_ctx *ctx = NULL;
	pd_err e = {0};
	if (!rc) {
		/* one sandbox, then the process ends: nothing is prepared for a next one */
		pd_ctx_opts co = {.one_sandbox = true};
		ctx = pd_ctx_new(&co, &e);
		if (!ctx) {
			cli_error("%s", PD_ERR_STR(&e));
			rc = EXIT_PADDOCK_FAILED;
		}
	}
	if (!rc) {
		pd_result r;
		pd_audit_verdict verdict = {0};
		int run = policy ? pd_run_audited(ctx, &a.so, &a.xo, policy, &r, &verdict, &e)
				 : pd_run(ctx, &a.so, &a.xo, &r, &e);
		if (run < 0 && r.status != PD_XX) {
			cli_error("%s", PD_ERR_STR(&e));
			rc = EXIT_USAGE;
		} else {
			rc = exec_report(&a, run, &r, policy, &verdict, &e);
			pd_result_free(&r);
		}
	}
	if (stdin_close >= 0)
		close(stdin_close);
	pd_audit_policy_free(policy);
	pd_ctx_free(ctx);
	free(merged);
	if (have_image)
		pd_image_close(&im);
	return rc;
}
