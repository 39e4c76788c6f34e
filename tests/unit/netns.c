/* netns.c: network namespaces are reused only when the next sandbox cannot tell. Each dirty
 * workload (traffic on lo, TIME_WAIT, failed routes, ping, listening and abstract unix sockets,
 * a socket kept alive in an SCM_RIGHTS cycle, an IPv6 flow label and UDP6 connect()s that send
 * nothing, attempts to change lo, addresses, routes or sysctls) is followed by a sandbox that
 * prints everything a sandbox can see of its network namespace; that view must equal a fresh
 * namespace's, byte for byte. Quiet sandboxes must get a reused namespace (or the pool saves
 * nothing), and sandboxes alive at once never share one. The same between processes of one
 * sandbox each (paddock exec: one_sandbox contexts, whose namespaces are kept in a directory),
 * and a process that dies with its sandbox leaves a namespace nobody gets again. */
#define _GNU_SOURCE
#include "internal.h"
#include "output.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pd_ctx *ctx;

/* Everything of the namespace a sandbox can read: /proc/net (every table and counter), sockstat
 * without its host-wide fields (orphan, alloc, mem, sockets used), protocols without its
 * host-wide memory column (any socket anywhere on the host moves it), the devices in /sys, and the
 * sysctls that set what unprivileged users may do. The namespace's inode goes to stderr. */
static const char VIEW[] =
	"readlink /proc/self/ns/net >&2; cd /proc/net || exit 1;"
	"for f in dev snmp snmp6 netstat unix tcp tcp6 udp udp6 udplite udplite6 raw raw6 icmp icmp6"
	" igmp igmp6 if_inet6 route ipv6_route fib_trie fib_triestat dev_snmp6/lo packet"
	" ptype arp ip6_flowlabel rt6_stats mcfilter mcfilter6 dev_mcast anycast6 xfrm_stat"
	" stat/nf_conntrack ip_tables_names ip6_tables_names; do echo \"== $f\"; cat $f 2>&1; done;"
	"echo == protocols; awk '{$4=\"\"; print}' protocols;"
	/* the kernel's own netlink sockets, without their addresses and inodes (which differ
	 * between any two namespaces, fresh or not) */
	"echo == netlink; awk '{$1=\"\"; $NF=\"\"; print}' netlink;"
	"echo == sockstat; grep -v '^sockets:' sockstat | sed -e 's/ orphan [0-9]*//' -e 's/ alloc [0-9]*//'"
	" -e 's/ mem [0-9]*//'; cat sockstat6;"
	"echo == sys; ls /sys/class/net; cat /sys/class/net/lo/operstate /sys/class/net/lo/flags"
	" /sys/class/net/lo/mtu /sys/class/net/lo/statistics/*;"
	"echo == sysctl; cat /proc/sys/net/ipv4/ip_unprivileged_port_start"
	" /proc/sys/net/ipv4/ping_group_range /proc/sys/net/ipv4/ip_local_port_range"
	" /proc/sys/net/core/somaxconn";

struct view {
	char *text; /* stdout */
	char ns[64];
	int ok;
};

/* runs script in a fresh sandbox; returns its stdout and the namespace it printed to stderr */
static struct view run(const char *script, uint32_t uid)
{
	struct view v = {0};
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	static char sh[] = "/bin/sh", dash_c[] = "-c";
	char *argv[] = {sh, dash_c, (char *)script, NULL};
	pd_exec_opts x = {.argv = argv, .stdin_fd = -1, .uid = uid, .gid = uid};
	pd_result r;
	if (pd_run(ctx, &so, &x, &r, &e) < 0) {
		printf("#   run failed: %s\n", e.msg);
		v.text = strdup("");
		return v;
	}
	v.text = dup_out(&r.out);
	char *err = dup_out(&r.err);
	char *nl = strstr(err, "net:[");
	if (nl)
		snprintf(v.ns, sizeof v.ns, "%.*s", (int)strcspn(nl, "\n"), nl);
	v.ok = r.status == PD_OK && !strcmp(r.residue, "clean");
	if (!v.ok)
		printf("#   status %s exit %d residue %s stderr: %.300s\n", pd_status_name(r.status),
		       r.exit_code, r.residue, err);
	free(err);
	pd_result_free(&r);
	return v;
}

struct workload {
	const char *name;
	const char *script;
	bool traffic; /* must not be reused: it sent or tried to send */
};

#define PY "exec python3 -c "

static const struct workload WORK[] = {
	{"a TCP connection over lo, closed (TIME_WAIT)",
	 PY "'import socket;s=socket.socket();s.bind((\"127.0.0.1\",0));s.listen();"
	 "c=socket.create_connection(s.getsockname());a,_=s.accept();c.send(b\"x\");a.recv(1);"
	 "c.close();a.close();s.close()'",
	 true},
	{"a TCP connection left open at exit (orphaned)",
	 PY "'import socket,os;s=socket.socket();s.bind((\"::1\" if False else \"127.0.0.1\",0));"
	 "s.listen();c=socket.create_connection(s.getsockname());a,_=s.accept();"
	 "a.send(b\"y\"*100000);os._exit(0)'",
	 true},
	{"IPv6 traffic on ::1",
	 PY "'import socket;s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM);s.bind((\"::1\",0));"
	 "s.sendto(b\"x\",s.getsockname());s.recv(1)'",
	 true},
	{"a UDP datagram to a closed port on lo (ICMP unreachable)",
	 PY "'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);"
	 "s.sendto(b\"x\",(\"127.0.0.1\",9))'",
	 true},
	{"a datagram to an address with no route (fails, counted)",
	 PY "'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ntry: s.sendto(b\"x\",(\"10.1.2.3\",9))\nexcept OSError: pass'",
	 true},
	{"a TCP connect to an address with no route (fails, counted)",
	 PY "'import socket\ntry: socket.create_connection((\"192.0.2.1\",80),timeout=1)\nexcept OSError: pass'",
	 true},
	{"ping 127.0.0.1 with an ICMP socket",
	 PY "'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM,socket.IPPROTO_ICMP);"
	 "s.sendto(bytes([8,0,0,0,0,0,0,1]),(\"127.0.0.1\",0));s.settimeout(2);s.recv(64)'",
	 true},
	{"a listening socket on port 80 and an abstract unix socket, no traffic",
	 PY "'import socket;s=socket.socket();s.bind((\"0.0.0.0\",80));s.listen();"
	 "u=socket.socket(socket.AF_UNIX);u.bind(\"\\0paddock-test\");u.listen()'",
	 false},
	{"a TCP listener kept alive in an SCM_RIGHTS cycle after exit",
	 PY "'import socket,array;a,b=socket.socketpair();t=socket.socket();t.bind((\"127.0.0.1\",0));"
	 "t.listen();a.sendmsg([b\"x\"],[(socket.SOL_SOCKET,socket.SCM_RIGHTS,"
	 "array.array(\"i\",[a.fileno(),b.fileno(),t.fileno()]))])'",
	 false},
	/* no packet sent: only the namespace's own tables remember these */
	{"an IPv6 flow label taken (IPV6_FLOWLABEL_MGR, shared, lingering 150 s), no traffic",
	 PY "'import socket,struct;s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM);"
	 "s.setsockopt(41,32,socket.inet_pton(socket.AF_INET6,\"::1\")+struct.pack(\"!I\",0x12345)"
	 "+struct.pack(\"=BBHHHI\",0,255,1,0,150,0))'",
	 true},
	{"UDP6 sockets connect()ed to ::1, no traffic (the route's reference count)",
	 PY "'import socket\nfor i in range(5): s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM);"
	 "s.connect((\"::1\",9));s.close()'",
	 true},
	{"attempts to change lo, addresses, routes and sysctls (all refused)",
	 "ip link set lo down; ip link set lo mtu 1280; ip addr add 10.9.9.9/8 dev lo;"
	 " ip route add 10.0.0.0/8 dev lo; ip link add d0 type dummy;"
	 " echo 1 > /proc/sys/net/ipv4/ip_forward; echo 1 > /proc/sys/net/ipv4/ip_unprivileged_port_start;"
	 " sysctl -w net.core.somaxconn=5; true",
	 false},
};
#define NWORK (sizeof WORK / sizeof WORK[0])

static void test_changes_refused(void)
{
	/* what the workload above tries must fail, not merely be undone */
	struct view v = run("ip link set lo down 2>&1; echo rc=$?; ip addr add 10.9.9.9/8 dev lo 2>&1;"
			    " echo rc=$?; (echo 1 > /proc/sys/net/ipv4/ip_forward) 2>&1; echo rc=$?;"
			    " cat /sys/class/net/lo/operstate",
			    0);
	ok(v.ok, "a sandbox's root tries to change its network namespace");
	ok(strstr(v.text, "rc=0") == NULL, "every change is refused:\n# %s", v.text);
	ok(strstr(v.text, "unknown") || strstr(v.text, "up"), "lo is still up afterwards");
	free(v.text);
	v = run(PY "'import socket;s=socket.socket();s.bind((\"127.0.0.1\",80));print(\"bound\")'", 1000);
	ok(v.ok && strstr(v.text, "bound"), "an unprivileged user may bind port 80 (as in a namespace it owned)");
	free(v.text);
}

static void test_workloads(const struct view *fresh)
{
	pd_netns_stats st0, st1;
	for (size_t i = 0; i < NWORK; i++) {
		pd_ctx_netns_stats(ctx, &st0);
		char script[2048];
		snprintf(script, sizeof script, "readlink /proc/self/ns/net >&2; %s", WORK[i].script);
		struct view w = run(script, 0);
		pd_ctx_netns_stats(ctx, &st1);
		struct view v = run(VIEW, 0);
		ok(w.ok, "dirty workload runs: %s", WORK[i].name);
		if (!ok(v.ok && !strcmp(v.text, fresh->text),
			"the next sandbox sees a fresh network namespace after: %s", WORK[i].name))
			first_difference(fresh->text, v.text, "now");
		if (WORK[i].traffic)
			ok(st1.discarded > st0.discarded && st1.unfresh > st0.unfresh && w.ns[0] && strcmp(w.ns, v.ns),
			   "its namespace failed the fresh check and was discarded, not reused (%s then %s)", w.ns, v.ns);
		free(w.text);
		free(v.text);
	}
}

static void test_quiet_reuse(const struct view *fresh)
{
	pd_netns_stats st0, st1;
	pd_ctx_netns_stats(ctx, &st0);
	int same = 0, equal = 0;
	const int n = 20;
	char first[64] = "";
	for (int i = 0; i < n; i++) {
		struct view v = run(i % 2 ? VIEW : "python3 -c 'print(sum(range(1000)))'", i % 3 ? 0 : 1000);
		if (i == 1)
			snprintf(first, sizeof first, "%s", v.ns);
		if (i % 2) {
			same += !strcmp(v.ns, first);
			equal += v.ok && !strcmp(v.text, fresh->text);
		}
		free(v.text);
	}
	pd_ctx_netns_stats(ctx, &st1);
	is_int(equal, n / 2, "every quiet sandbox sees a fresh network namespace");
	is_int(same, n / 2, "quiet sandboxes run one after another all get the same, reused namespace");
	ok(st1.reused - st0.reused >= (uint64_t)n - 1 && st1.created == st0.created,
	   "the pool reused %llu and created %llu for %d quiet sandboxes",
	   (unsigned long long)(st1.reused - st0.reused), (unsigned long long)(st1.created - st0.created),
	   n);
}

static void test_concurrent_distinct(void)
{
	enum { N = 6 };
	pd_sandbox *s[N];
	char ns[N][64];
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	int made = 0;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			s[i] = pd_sandbox_create(ctx, &so, &e);
			made += s[i] != NULL;
		}
		for (int i = 0; i < N; i++) {
			static char rl[] = "/bin/readlink", self[] = "/proc/self/ns/net";
			char *argv[] = {rl, self, NULL};
			pd_exec_opts x = {.argv = argv, .stdin_fd = -1};
			pd_result r;
			ns[i][0] = 0;
			if (s[i] && pd_sandbox_exec(s[i], &x, &r, &e) == 0) {
				char *t = dup_out(&r.out);
				snprintf(ns[i], sizeof ns[i], "%.*s", (int)strcspn(t, "\n"), t);
				free(t);
				pd_result_free(&r);
			}
		}
		int dup = 0;
		for (int i = 0; i < N; i++)
			for (int j = i + 1; j < N; j++)
				dup += !ns[i][0] || !strcmp(ns[i], ns[j]);
		ok(dup == 0, "round %d: %d sandboxes alive at once have %d distinct network namespaces",
		   round + 1, N, N);
		for (int i = 0; i < N; i++)
			pd_sandbox_destroy(s[i], NULL, 0);
	}
	is_int(made, 2 * N, "all sandboxes created");
}

/* ---- between processes: one_sandbox contexts, one per sandbox as `paddock exec` makes them ---- */

static char pin_dir[] = "/tmp/paddock-netns-test.XXXXXX";

static pd_ctx *one_ctx(void)
{
	pd_err e = {0};
	pd_ctx_opts o = {.one_sandbox = true, .netns_dir = pin_dir};
	pd_ctx *c = pd_ctx_new(&o, &e);
	if (!c)
		printf("#   one_sandbox context: %s\n", e.msg);
	return c;
}

/* script in a sandbox of a context of its own, as one paddock exec runs it */
static struct view run_one(const char *script)
{
	pd_ctx *keep = ctx, *c = one_ctx();
	struct view v = {.text = strdup("")};
	if (c) {
		free(v.text);
		ctx = c;
		v = run(script, 0);
		ctx = keep;
		pd_ctx_free(c);
	}
	return v;
}

static void test_between_processes(const struct view *fresh)
{
	struct view a = run_one(VIEW), b = run_one(VIEW);
	ok(a.ok && b.ok && !strcmp(a.text, fresh->text) && !strcmp(b.text, fresh->text),
	   "one-sandbox processes see a fresh network namespace");
	ok(a.ns[0] && !strcmp(a.ns, b.ns), "the next process gets the namespace the last one left clean (%s, %s)",
	   a.ns, b.ns);
	free(a.text);
	free(b.text);
	for (size_t i = 0; i < NWORK; i++) {
		char script[2048];
		snprintf(script, sizeof script, "readlink /proc/self/ns/net >&2; %s", WORK[i].script);
		struct view w = run_one(script), v = run_one(VIEW);
		if (!ok(v.ok && !strcmp(v.text, fresh->text), "between processes, the next sees a fresh namespace after: %s",
			WORK[i].name))
			first_difference(fresh->text, v.text, "now");
		if (WORK[i].traffic)
			ok(w.ns[0] && v.ns[0] && strcmp(w.ns, v.ns), "  and not the dirty one (%s then %s)", w.ns, v.ns);
		free(w.text);
		free(v.text);
	}
}

/* two processes at once never share one; one that dies with its sandbox alive (no check after
 * it) leaves a namespace nobody gets again */
static void test_between_processes_held(void)
{
	pd_ctx *c1 = one_ctx(), *c2 = one_ctx();
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	pd_sandbox *s1 = c1 ? pd_sandbox_create(c1, &so, &e) : NULL;
	pd_sandbox *s2 = c2 ? pd_sandbox_create(c2, &so, &e) : NULL;
	char n1[64] = "", n2[64] = "";
	for (int i = 0; i < 2; i++) {
		pd_sandbox *s = i ? s2 : s1;
		static char rl[] = "/bin/readlink", self[] = "/proc/self/ns/net";
		char *argv[] = {rl, self, NULL};
		pd_exec_opts x = {.argv = argv, .stdin_fd = -1};
		pd_result r;
		if (s && pd_sandbox_exec(s, &x, &r, &e) == 0) {
			char *t = dup_out(&r.out);
			snprintf(i ? n2 : n1, 64, "%.*s", (int)strcspn(t, "\n"), t);
			free(t);
			pd_result_free(&r);
		}
	}
	ok(n1[0] && n2[0] && strcmp(n1, n2), "two one-sandbox processes at once: two namespaces (%s, %s)", n1, n2);
	if (s1)
		pd_sandbox_destroy(s1, NULL, 0);
	if (s2)
		pd_sandbox_destroy(s2, NULL, 0);
	pd_ctx_free(c1);
	pd_ctx_free(c2);

	int p[2];
	char died[64] = "";
	if (pipe(p) == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			/* a paddock exec killed mid-run: its sandbox is never destroyed, nothing checked */
			struct view v = {0};
			pd_ctx *c = one_ctx();
			pd_sandbox *s = c ? pd_sandbox_create(c, &so, &e) : NULL;
			static char rl[] = "/bin/readlink", self[] = "/proc/self/ns/net";
			char *argv[] = {rl, self, NULL};
			pd_exec_opts x = {.argv = argv, .stdin_fd = -1};
			pd_result r;
			if (s && pd_sandbox_exec(s, &x, &r, &e) == 0)
				v.text = dup_out(&r.out);
			if (v.text && write(p[1], v.text, strcspn(v.text, "\n")) < 0)
				_exit(1);
			_exit(0);
		}
		close(p[1]);
		ssize_t n = pid > 0 ? read(p[0], died, sizeof died - 1) : -1;
		died[n > 0 ? n : 0] = 0;
		close(p[0]);
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	struct view after = run_one(VIEW), again = run_one(VIEW);
	ok(died[0] && after.ns[0] && strcmp(died, after.ns) && strcmp(died, again.ns),
	   "a process that died mid-use: its namespace is not handed out again (%s, then %s, %s)", died,
	   after.ns, again.ns);
	free(after.text);
	free(again.text);
}

int main(void)
{
	int ntraffic = 0;
	for (size_t i = 0; i < NWORK; i++)
		ntraffic += WORK[i].traffic;
	plan(4 + 4 + (int)NWORK * 2 + ntraffic + 3 + 3 + 1 + 2 + (int)NWORK + ntraffic + 2);
	if (!mkdtemp(pin_dir))
		return 1;
	pd_err e = {0};
	ctx = pd_ctx_new(NULL, &e);
	if (!ok(ctx != NULL, "context: %s", ctx ? "ok" : e.msg))
		return 1;
	struct view fresh = run(VIEW, 0);
	ok(fresh.ok && strstr(fresh.text, "== snmp6") && fresh.ns[0], "a fresh namespace's view (%zu bytes, %s)",
	   strlen(fresh.text), fresh.ns);
	ok(strstr(fresh.text, "== sys\nlo\n") != NULL, "only lo in /sys/class/net");
	struct view again = run(VIEW, 0);
	ok(!strcmp(again.ns, fresh.ns) && !strcmp(again.text, fresh.text),
	   "the namespace of a sandbox that only looked is reused, and looks the same (%s)", again.ns);
	free(again.text);

	test_changes_refused();
	test_workloads(&fresh);
	test_quiet_reuse(&fresh);
	test_concurrent_distinct();

	pd_netns_stats st;
	pd_ctx_netns_stats(ctx, &st);
	printf("# netns: created %llu reused %llu discarded %llu (unfresh %llu) idle %llu\n",
	       (unsigned long long)st.created, (unsigned long long)st.reused,
	       (unsigned long long)st.discarded, (unsigned long long)st.unfresh, (unsigned long long)st.idle);
	ok(st.idle >= 1 && st.idle <= st.created, "idle namespaces are kept (%llu)", (unsigned long long)st.idle);
	test_between_processes(&fresh);
	test_between_processes_held();
	free(fresh.text);
	pd_ctx_free(ctx);
	/* the kept namespaces go with the directory */
	char cmd[256];
	snprintf(cmd, sizeof cmd, "for f in %s/*.ns; do umount -l \"$f\"; done 2>/dev/null; rm -rf %s", pin_dir, pin_dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", pin_dir);
	return done();
}
