/* reset_fds.c: a sandbox keeps its network views (/proc/INIT/net/...) and its cgroup's stat files
 * open between uses when the process has descriptors to spare (lib/reset.c pd_sb_keep_fds), so
 * neither an exec nor a reset opens them again; the reset's network check, reading through the
 * kept descriptors, still refuses every dirty namespace after a clean reset has opened them; the
 * descriptors go with the sandbox; and under a low RLIMIT_NOFILE a sandbox at rest holds none of
 * them, as before. */
#define _GNU_SOURCE
#include "resetview.h"
#include "sandbox.h"

#include <sys/resource.h>
#include <unistd.h>

#define PY "python3 -c "

/* This process's descriptors whose target starts with prefix, as "number -> target" lines;
 * *n gets their count. */
static char *fds_under(const char *prefix, int *n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	*n = 0;
	if (!f)
		return NULL;
	for (int fd = 0; fd < 4096; fd++) {
		char p[64], t[512];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		ssize_t k = readlink(p, t, sizeof t - 1);
		if (k < 0)
			continue;
		t[k] = 0;
		if (!strncmp(t, prefix, strlen(prefix))) {
			fprintf(f, "%d -> %s\n", fd, t);
			(*n)++;
		}
	}
	fclose(f);
	return text;
}

static char *net_fds(const pd_sandbox *s, int *n)
{
	char prefix[48];
	snprintf(prefix, sizeof prefix, "/proc/%d/net/", (int)s->pid);
	return fds_under(prefix, n);
}

/* A quiet use (true) and a reset; whether both worked. */
static bool quiet_cycle(pd_sandbox *s)
{
	pd_result r;
	pd_err e = {0};
	if (sh(s, "true", 0, &r) < 0)
		return false;
	pd_result_free(&r);
	if (pd_sandbox_reset(s, &e) < 0) {
		printf("#   reset: %s\n", e.msg);
		return false;
	}
	return true;
}

/* Kept, the same descriptors (no reopen, no growth) over 6 uses, gone with the sandbox. */
static void test_kept(void)
{
	pd_sandbox *s = make();
	int n0 = 0, n1 = 0, n2 = 0, all1 = 0, all2 = 0;
	bool ok1 = s && quiet_cycle(s);
	char *a = s ? net_fds(s, &n1) : NULL, *all_a = fds_under("", &all1);
	bool ok2 = ok1;
	for (int i = 0; ok2 && i < 5; i++)
		ok2 = quiet_cycle(s);
	char *b = s ? net_fds(s, &n2) : NULL, *all_b = fds_under("", &all2);
	ok(ok1 && ok2, "6 quiet uses and resets of one sandbox");
	ok(n1 >= 4, "after the first reset it holds its init's network views open (%d of /proc/%d/net)", n1,
	   s ? (int)s->pid : 0);
	ok(a && b && !strcmp(a, b) && all1 == all2,
	   "and the same descriptors after 5 more uses and resets (%d, %d in all; nothing reopened, none added)", n2,
	   all2);
	if (a && b && strcmp(a, b))
		printf("# after 1:\n%s# after 6:\n%s", a, b);
	pid_t pid = s ? s->pid : 0;
	ok(s && pd_sandbox_destroy(s, NULL, 0) == 0, "the sandbox is destroyed clean");
	char prefix[48];
	snprintf(prefix, sizeof prefix, "/proc/%d/net/", (int)pid);
	free(fds_under(prefix, &n0));
	int all3 = 0;
	free(fds_under("", &all3));
	ok(n0 == 0 && all3 < all2, "and its descriptors went with it (%d left of its init's views; %d -> %d in all)",
	   n0, all2, all3);
	free(a);
	free(b);
	free(all_a);
	free(all_b);
}

/* Each leaves state a fresh namespace has not: the reset after it must refuse, though a clean
 * reset before has opened the views it reads (the kept descriptors are read anew). */
static const struct {
	const char *name, *script;
} DIRTY[] = {
	{"traffic on lo (TIME_WAIT)",
	 PY "'import socket;s=socket.socket();s.bind((\"127.0.0.1\",0));s.listen();"
	 "c=socket.create_connection(s.getsockname());a,_=s.accept();c.send(b\"x\");a.recv(1);"
	 "c.close();a.close()'"},
	{"an IPv6 flow label lingering, no traffic",
	 PY "'import socket,struct;s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM);"
	 "s.setsockopt(41,32,socket.inet_pton(socket.AF_INET6,\"::1\")+struct.pack(\"!I\",0x12345)"
	 "+struct.pack(\"=BBHHHI\",0,255,1,0,150,0))'"},
	{"UDP6 sockets connect()ed to ::1, no traffic",
	 PY "'import socket\nfor i in range(5): s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM);"
	 "s.connect((\"::1\",9));s.close()'"},
	{"a unix socket kept alive in an SCM_RIGHTS cycle",
	 PY "'import socket,array;a,b=socket.socketpair();a.sendmsg([b\"x\"],[(socket.SOL_SOCKET,"
	 "socket.SCM_RIGHTS,array.array(\"i\",[a.fileno(),b.fileno()]))])'"},
};
#define NDIRTY (sizeof DIRTY / sizeof DIRTY[0])

static void test_dirty_after_kept(void)
{
	for (size_t i = 0; i < NDIRTY; i++) {
		pd_sandbox *s = make();
		int n = 0;
		bool clean = s && quiet_cycle(s);
		free(s ? net_fds(s, &n) : NULL);
		pd_result r;
		pd_err e = {0};
		if (clean && sh(s, DIRTY[i].script, 0, &r) == 0)
			pd_result_free(&r);
		int rc = clean ? pd_sandbox_reset(s, &e) : 0;
		ok(clean && n >= 4 && rc < 0 && pd_sandbox_state(s) == PD_FAILED,
		   "%s after a clean reset (%d views kept): reset refused (%s)", DIRTY[i].name, n,
		   rc < 0 ? e.msg : "not refused");
		if (s)
			pd_sandbox_destroy(s, NULL, 0);
	}
}

/* Under a low limit a sandbox at rest holds none of them (the limit restored after). */
static void test_low_limit(void)
{
	struct rlimit was, low;
	bool set = getrlimit(RLIMIT_NOFILE, &was) == 0;
	low = was;
	low.rlim_cur = 1024;
	set = set && setrlimit(RLIMIT_NOFILE, &low) == 0;
	int before = 0, after = 0, n = 0;
	free(fds_under("", &before));
	pd_sandbox *s = set ? make() : NULL;
	int base = 0;
	free(fds_under("", &base));
	bool cycled = s && quiet_cycle(s) && quiet_cycle(s);
	free(s ? net_fds(s, &n) : NULL);
	free(fds_under("", &after));
	ok(cycled && n == 0 && after == base,
	   "under RLIMIT_NOFILE 1024 a sandbox at rest keeps no view and no stat file (%d views; %d descriptors "
	   "after creation, %d after 2 uses and resets)",
	   n, base, after);
	if (s)
		pd_sandbox_destroy(s, NULL, 0);
	if (set)
		setrlimit(RLIMIT_NOFILE, &was);
}

/* The mqueue mount each reset replaces is parked when empty (its unmount batched), and queues
 * work across the park's drops; one with a queue left in it is dropped at once, and the next user
 * sees no queue. Landlock off: no mqueue mount is made at all. */
static void test_mq_park(void)
{
	static const char use[] =
		PY "'import ctypes,os\nr=ctypes.CDLL(\"librt.so.1\",use_errno=True)\n"
		"q=r.mq_open(b\"/pd-park\",0o302,0o600,None)\nprint(\"open\" if q>=0 else \"err%d\" % "
		"ctypes.get_errno())\nr.mq_unlink(b\"/pd-park\")'";
	static const char leave[] =
		PY "'import ctypes\nr=ctypes.CDLL(\"librt.so.1\",use_errno=True)\n"
		"assert r.mq_open(b\"/pd-left\",0o102,0o600,None)>=0'";
	static const char look_q[] = PY "'import ctypes\nr=ctypes.CDLL(\"librt.so.1\")\n"
				     "print(\"left\" if r.mq_open(b\"/pd-left\",0)>=0 else \"none\")'";
	if (ctx->landlock_abi <= 0) {
		for (int i = 0; i < 3; i++)
			ok(1, "# SKIP Landlock is off: no mqueue mount to park");
		return;
	}
	pd_sandbox *s = make();
	uint64_t p0 = pd_sb_mq_parked();
	int opened = 0, resets = 0;
	for (int i = 0; s && i < 40; i++) {
		pd_result r;
		pd_err e = {0};
		if (sh(s, use, 0, &r) == 0) {
			char *out = dup_out(&r.out);
			opened += !strncmp(out, "open", 4);
			free(out);
			pd_result_free(&r);
		}
		resets += pd_sandbox_reset(s, &e) == 0;
	}
	uint64_t p1 = pd_sb_mq_parked();
	ok(opened == 40 && resets == 40 && p1 - p0 >= 40,
	   "40 uses that open and unlink a POSIX queue, each reset: %d opened, %d reset, %llu mounts parked "
	   "(the park dropped at least once between)",
	   opened, resets, (unsigned long long)(p1 - p0));
	pd_result r;
	pd_err e = {0};
	if (s && sh(s, leave, 0, &r) == 0)
		pd_result_free(&r);
	bool reset = s && pd_sandbox_reset(s, &e) == 0;
	uint64_t p2 = pd_sb_mq_parked();
	ok(reset && p2 == p1, "a queue left: the reset works and does not park its mount (%llu parked)",
	   (unsigned long long)(p2 - p1));
	char *out = NULL;
	if (reset && sh(s, look_q, 0, &r) == 0) {
		out = dup_out(&r.out);
		pd_result_free(&r);
	}
	ok(out && !strcmp(out, "none\n"), "and the next user sees no queue (%s)", out ? out : "no run");
	free(out);
	if (s)
		pd_sandbox_destroy(s, NULL, 0);
}

int main(void)
{
	plan(5 + (int)NDIRTY + 1 + 3 + 1);
	pd_err e = {0};
	ctx = pd_ctx_new(NULL, &e);
	if (!ok(ctx != NULL, "context: %s", ctx ? "ok" : e.msg))
		return 1;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 && rl.rlim_max >= 65536) {
		rl.rlim_cur = 65536; /* the daemon raises its soft limit too (serve) */
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	test_kept();
	test_dirty_after_kept();
	test_low_limit();
	test_mq_park();
	pd_ctx_free(ctx);
	return done();
}
