/* The pool layer end to end: templates, warm pools (refill, growth, shrink, deadlines, forced
 * reclaim), sessions (files and escapes, idempotent execs, spilled output, tar, TTL). */
#define _GNU_SOURCE
#include "internal.h"
#include "pool.h"
#include "tap.h"
#include "../hostcount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static pd_ctx *ctx;

static int parse_err(const char *json, char *msg, size_t len)
{
	pd_template *t = NULL;
	size_t n = 0;
	pd_err e = {0};
	int rc = pd_templates_parse(json, strlen(json), &t, &n, &e);
	snprintf(msg, len, "%s", e.msg);
	pd_templates_free(t, n);
	return rc;
}

static void test_templates(void)
{
	char m[512];
	ok(parse_err("{\"templates\":[{\"name\":\"a\",\"limits\":{\"memory\":\"5X\"}}]}", m, sizeof m) < 0 &&
		   strstr(m, "templates[0].limits.memory") && strstr(m, "5X"),
	   "a bad size names its field: %s", m);
	ok(parse_err("{\"templates\":[{\"name\":\"a\"},{\"name\":\"b\",\"colour\":1}]}", m, sizeof m) < 0 &&
		   strstr(m, "templates[1]") && strstr(m, "colour"),
	   "an unknown field is named: %s", m);
	ok(parse_err("{\"templates\":[{\"name\":\"a\"},{\"name\":\"a\"}]}", m, sizeof m) < 0 &&
		   strstr(m, "templates[1].name"),
	   "a duplicate name is refused: %s", m);
	ok(parse_err("{\"templates\":[{\"name\":\"a\",\"pool\":{\"min\":5,\"max\":2}}]}", m, sizeof m) < 0 &&
		   strstr(m, "templates[0].pool"),
	   "min above max is refused: %s", m);
	ok(parse_err("{\"templates\":[{\"name\":\"a\",\"cwd\":\"work\"}]}", m, sizeof m) < 0 &&
		   strstr(m, "templates[0].cwd"),
	   "a relative cwd is refused: %s", m);
	ok(parse_err("{\"templates\":[{\"name\":\"a\",\"files\":[{\"path\":\"/x\",\"content_base64\":\"!!\"}]}]}",
		     m, sizeof m) < 0 && strstr(m, "templates[0].files[0].content_base64"),
	   "bad base64 is refused: %s", m);
	ok(parse_err("{\"templates\": [", m, sizeof m) < 0 && strstr(m, "line 1"),
	   "a JSON syntax error gives its position: %s", m);
	ok(parse_err("{\"templates\":[{\"name\":\"a\",\"network\":\"wifi\"}]}", m, sizeof m) < 0 &&
		   strstr(m, "templates[0].network"),
	   "a bad network policy is named: %s", m);
	ok(parse_err("{\"templates\":[{\"name\":\"a\",\"pool\":{\"reuse\":\"yes\"}}]}", m, sizeof m) < 0 &&
		   strstr(m, "templates[0].pool.reuse"),
	   "a non-boolean pool.reuse is named: %s", m);

	pd_template *t;
	size_t n;
	pd_err e;
	ok(pd_templates_default(&t, &n, &e) == 0 && n == 5, "five built-in templates");
	int avail = 0;
	for (size_t i = 0; i < n; i++) {
		pd_template_check(ctx, &t[i]);
		avail += t[i].available;
	}
	is_int(avail, 5, "bash, python, c, cpp and node all find their toolchain on this host");
	pd_templates_free(t, n);
}

static pd_pools *pools_of(const char *json, pd_pools_opts *o)
{
	pd_template *t;
	size_t n;
	pd_err e = {0};
	if (pd_templates_parse(json, strlen(json), &t, &n, &e) < 0) {
		printf("# %s\n", e.msg);
		return NULL;
	}
	pd_pools *p = pd_pools_new(ctx, t, n, o, &e);
	if (!p)
		printf("# %s\n", e.msg);
	pd_templates_free(t, n);
	return p;
}

static pd_pool_stats stat_of(pd_pools *p, const char *name)
{
	size_t n;
	pd_pool_stats *st = pd_pools_stats(p, &n), r;
	memset(&r, 0, sizeof r);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(st[i].template_name, name))
			r = st[i];
	free(st);
	return r;
}

static int run_in(pd_sandbox *s, const char *cmd, pd_result *r)
{
	static char sh[] = "/bin/sh", c[] = "-c";
	char *argv[] = {sh, c, (char *)cmd, NULL};
	pd_exec_opts x = {0};
	x.argv = argv;
	x.stdin_fd = -1;
	pd_err e;
	return pd_sandbox_exec(s, &x, r, &e);
}

static void test_pools(void)
{
	pd_pools_opts o = {0};
	o.window_ms = 300;
	o.tick_ms = 20;
	pd_pools *p = pools_of("{\"templates\":[{\"name\":\"w\",\"cwd\":\"/work\","
			       "\"files\":[{\"path\":\"/work/hello.txt\",\"content\":\"hi\\n\"}],"
			       "\"pool\":{\"min\":3,\"max\":12,\"idle_ttl\":0.2}},"
			       "{\"name\":\"gone\",\"requires\":[\"no-such-program-xyz\"]}]}",
			       &o);
	if (!ok(p != NULL, "pools start"))
		return;
	ok(pd_pools_wait_ready(p, 20000) == 0, "the pool warms to its minimum");
	pd_pool_stats st = stat_of(p, "w");
	is_int(st.ready, 3, "3 READY sandboxes");

	pd_err e;
	bool hit = false;
	pd_sandbox *s = pd_pool_acquire(p, "w", &hit, &e);
	ok(s && hit, "acquire takes a READY sandbox (hit)");
	pd_result r;
	ok(s && run_in(s, "cat /work/hello.txt", &r) == 0 && r.out.head_len == 3 &&
		   !memcmp(r.out.head, "hi\n", 3),
	   "the template's files are placed before use");
	pd_result_free(&r);
	pd_pool_release(p, s);

	pd_sandbox *g = pd_pool_acquire(p, "gone", NULL, &e);
	ok(!g && e.kind == PD_EK_DEPENDENCY && strstr(e.msg, "dependency_missing") && strstr(e.msg, "no-such-program-xyz"),
	   "a template whose toolchain is missing is refused clearly: %s", e.msg);

	/* demand: hold 8 at once; the pool misses, creates on the spot, then grows */
	pd_sandbox *held[8];
	int got = 0;
	for (int i = 0; i < 8; i++)
		if ((held[i] = pd_pool_acquire(p, "w", NULL, &e)))
			got++;
	is_int(got, 8, "8 acquires succeed even when the pool runs dry (created on the spot)");
	st = stat_of(p, "w");
	ok(st.misses >= 1, "some acquires missed (%llu)", (unsigned long long)st.misses);
	usleep(100000);
	st = stat_of(p, "w");
	ok(st.target >= 2, "with 8 in use the target covers the peak plus 20%% (target %u)", st.target);
	for (int i = 0; i < 8; i++)
		if (held[i])
			pd_pool_release(p, held[i]);
	pd_pools_wait_ready(p, 20000);
	st = stat_of(p, "w");
	ok(st.ready >= 3 && st.ready <= 12, "the pool refilled after the burst (ready %u)", st.ready);
	/* two quiet windows later the burst is forgotten and the surplus reclaimed after idle TTL */
	for (int i = 0; i < 100; i++) {
		usleep(50000);
		st = stat_of(p, "w");
		if (st.ready == 3 && st.target == 3)
			break;
	}
	ok(st.ready == 3 && st.target == 3, "idle, it shrinks back to its minimum (ready %u target %u)",
	   st.ready, st.target);
	ok(st.expired >= 1, "surplus READY sandboxes expired after their idle TTL (%llu)",
	   (unsigned long long)st.expired);
	is_int(st.residue_failures, 0, "every reclaimed sandbox left nothing behind");
	pd_pools_free(p);

	/* a create that cannot finish in time is killed and counted */
	pd_pools_opts slow = {0};
	slow.setup_timeout_ms = 1;
	slow.tick_ms = 20;
	p = pools_of("{\"templates\":[{\"name\":\"s\",\"pool\":{\"min\":4,\"max\":4}}]}", &slow);
	for (int i = 0; i < 400; i++) { /* up to 20 s: a loaded machine starts the builder late */
		st = stat_of(p, "s");
		if (st.create_failures >= 1)
			break;
		usleep(50000);
	}
	/* a 1 ms deadline, counted from the start of the create, is missed by every create (the
	 * host's part alone takes longer); each miss is killed and counted */
	ok(st.create_failures >= 1 && st.forced_reclaims == st.create_failures,
	   "CREATING past its deadline is reclaimed by force and counted (%llu of %llu failed creates; "
	   "%llu created)",
	   (unsigned long long)st.forced_reclaims, (unsigned long long)st.create_failures,
	   (unsigned long long)st.created);
	pd_pools_free(p);
}

/* A teardown that outlives SIGKILL: the sandbox's tasks frozen by a cgroup v1 freezer. */
static void test_stuck_teardown(void)
{
	char fz[256];
	snprintf(fz, sizeof fz, "/sys/fs/cgroup/freezer/paddock-test-%d", (int)getpid());
	if (access("/sys/fs/cgroup/freezer", F_OK) != 0 || mkdir(fz, 0755) < 0) {
		ok(1, "# SKIP no cgroup v1 freezer to make a teardown hang");
		ok(1, "# SKIP");
		ok(1, "# SKIP");
		return;
	}
	pd_sandbox_opts so = {0};
	so.limits = pd_limits_default();
	so.teardown_timeout_ms = 150;
	pd_err e;
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	pd_result r;
	run_in(s, "sleep 1000 & true", &r);
	pd_result_free(&r);
	/* freeze init and everything under it */
	char procs[300], buf[64];
	snprintf(procs, sizeof procs, "%s/cgroup.procs", fz);
	snprintf(buf, sizeof buf, "%d", (int)pd_sandbox_pid(s));
	pd_write_file(procs, buf, NULL);
	char children[128], list[1024];
	snprintf(children, sizeof children, "/proc/%d/task/%d/children", (int)pd_sandbox_pid(s),
		 (int)pd_sandbox_pid(s));
	if (pd_read_file(children, list, sizeof list) > 0)
		for (char *q = list; *q;) {
			long pid = strtol(q, &q, 10);
			if (pid <= 0)
				break;
			snprintf(buf, sizeof buf, "%ld", pid);
			pd_write_file(procs, buf, NULL);
			while (*q == ' ')
				q++;
		}
	char state[300];
	snprintf(state, sizeof state, "%s/freezer.state", fz);
	pd_write_file(state, "FROZEN", NULL);
	usleep(50000);
	char residue[128];
	uint64_t t0 = pd_now_us();
	int rc = pd_sandbox_destroy(s, residue, sizeof residue);
	uint64_t took = (pd_now_us() - t0) / 1000;
	uint64_t now = 0, total = 0;
	pd_ctx_stuck(ctx, &now, &total);
	ok(rc != 0 && strstr(residue, "init-not-reaped") && now == 1,
	   "a teardown stuck past its deadline returns in bounded time (%llu ms), reports '%s' and is "
	   "parked (%llu stuck)",
	   (unsigned long long)took, residue, (unsigned long long)now);
	pd_write_file(state, "THAWED", NULL);
	uint64_t left = 1;
	for (int i = 0; i < 100 && left; i++) {
		usleep(20000);
		left = pd_ctx_reap_stuck(ctx);
	}
	is_int(left, 0, "once the tasks can die, the parked sandbox is reaped");
	int rm = -1;
	for (int i = 0; i < 50 && rm < 0; i++) {
		rm = rmdir(fz);
		if (rm < 0)
			usleep(20000);
	}
	ok(rm == 0, "nothing of it is left in the freezer cgroup");
}

static void test_sessions(void)
{
	pd_pools_opts o = {0};
	o.tick_ms = 20;
	pd_pools *p = pools_of("{\"templates\":[{\"name\":\"sess\",\"cwd\":\"/work\","
			       "\"pool\":{\"min\":1,\"max\":4},\"session\":{\"idle_ttl\":0.3}}]}",
			       &o);
	pd_err e;
	pd_session *s = pd_session_open(p, "sess", NULL, &e);
	if (!ok(s != NULL, "a session opens"))
		return;
	pd_sandbox *sb = pd_session_sandbox(s);
	static char sh[] = "/bin/sh", c[] = "-c", append[] = "echo run >> /work/log; wc -l < /work/log";
	char *argv[] = {sh, c, append, NULL};
	pd_exec_opts x = {0};
	x.argv = argv;
	x.stdin_fd = -1;
	pd_result r1, r2, r3;
	pd_session_exec(s, &x, "req-1", &r1, &e);
	pd_session_exec(s, &x, "req-1", &r2, &e);
	pd_session_exec(s, &x, "req-2", &r3, &e);
	ok(r1.out.head_len && r2.out.head_len && !strncmp(r1.out.head, "1", 1) &&
		   !strncmp(r2.out.head, "1", 1) && r3.out.head_len && !strncmp(r3.out.head, "2", 1),
	   "a repeated request id returns the recorded result without running again");
	pd_result_free(&r1);
	pd_result_free(&r2);
	pd_result_free(&r3);

	/* output over the cap is kept whole in a file */
	static char big[] = "head -c 3000000 /dev/zero | tr '\\\\0' x";
	char *argv2[] = {sh, c, big, NULL};
	x.argv = argv2;
	pd_session_exec(s, &x, "big", &r1, &e);
	char path[PD_PATH];
	struct stat st;
	ok(r1.out.truncated && pd_session_output_path(s, "big", 1, path, sizeof path, &e) == 0 &&
		   stat(path, &st) == 0 && st.st_size == 3000000,
	   "3 MB of output: the record keeps head and tail, the spill file all of it");
	pd_result_free(&r1);

	/* only the kept records' output stays on disk: 70 more execs, 64 records kept */
	static char tiny[] = "echo x; echo y >&2";
	char *argv5[] = {sh, c, tiny, NULL};
	x.argv = argv5;
	int failed = 0;
	for (int i = 0; i < 70; i++) {
		if (pd_session_exec(s, &x, NULL, &r1, &e) < 0)
			failed++;
		else
			pd_result_free(&r1);
	}
	char *slash = strrchr(path, '/');
	int spilled = -1;
	if (slash) {
		*slash = 0;
		DIR *sd = opendir(path);
		struct dirent *de;
		spilled = 0;
		while (sd && (de = readdir(sd)))
			spilled += de->d_name[0] != '.';
		if (sd)
			closedir(sd);
	}
	ok(!failed && spilled == 2 * 64,
	   "after 70 more execs the session directory holds the output of the 64 kept records only "
	   "(%d files)",
	   spilled);
	ok(pd_session_output_path(s, "big", 1, path, sizeof path, &e) < 0 && e.code == ENOENT,
	   "and an exec whose record is gone has no output to fetch");

	/* 12 execs of ~2.6 MB on stdout and stderr: their records would hold ~24 MiB; the oldest
	 * drop their buffers, and a retry reads them back from the spill files, unchanged */
	pd_result orig[12];
	int nbig = 0;
	for (int i = 0; i < 12; i++) {
		char cmd[160], rid[16];
		snprintf(cmd, sizeof cmd, "seq -f 'out-%d %%g' 1 250000; seq -f 'err-%d %%g' 1 250000 >&2", i, i);
		snprintf(rid, sizeof rid, "o-%d", i);
		char *argv6[] = {sh, c, cmd, NULL};
		x.argv = argv6;
		nbig += pd_session_exec(s, &x, rid, &orig[i], &e) == 0 && orig[i].out.truncated &&
			orig[i].err.truncated;
	}
	size_t mem = pd_session_output_memory(s);
	ok(nbig == 12 && mem <= (8u << 20) && mem >= (6u << 20),
	   "12 execs with ~2.6 MB on each stream (%d truncated): the records hold %zu KiB of it in "
	   "memory, at most 8 MiB",
	   nbig, mem >> 10);
	int same = 0;
	for (int i = 0; i < 12; i++) {
		char rid[16];
		snprintf(rid, sizeof rid, "o-%d", i);
		pd_result again;
		if (pd_session_exec(s, &x, rid, &again, &e) < 0)
			continue;
		const pd_output *a[2] = {&orig[i].out, &orig[i].err}, *b[2] = {&again.out, &again.err};
		bool eq = !again.error[0];
		for (int k = 0; k < 2; k++)
			eq &= a[k]->head_len == b[k]->head_len && a[k]->tail_len == b[k]->tail_len &&
			      a[k]->total == b[k]->total && a[k]->truncated == b[k]->truncated &&
			      !memcmp(a[k]->head, b[k]->head, a[k]->head_len) &&
			      !memcmp(a[k]->tail, b[k]->tail, a[k]->tail_len);
		same += eq;
		pd_result_free(&again);
	}
	for (int i = 0; i < 12; i++)
		pd_result_free(&orig[i]);
	is_int(same, 12, "a retry of each returns its record unchanged, head and tail included");
	is_int(pd_session_output_memory(s), mem, "and the retries did not grow what the records hold");

	/* 5 execs of 30 MB on each stream (under the 64 MiB output kill): 300 MB of spill files;
	 * the session keeps 256 MiB of them, newest first, and the oldest's output can no longer
	 * be fetched */
	static char flood[] = "head -c 30000000 /dev/zero; head -c 30000000 /dev/zero >&2";
	char *argv7[] = {sh, c, flood, NULL};
	x.argv = argv7;
	int floods = 0;
	for (int i = 0; i < 5; i++) {
		char rid[16];
		snprintf(rid, sizeof rid, "fl-%d", i);
		if (pd_session_exec(s, &x, rid, &r1, &e) == 0 && r1.out.truncated)
			floods++;
		pd_result_free(&r1);
	}
	uint64_t on_disk = 0;
	if (pd_session_output_path(s, "fl-4", 1, path, sizeof path, &e) == 0) {
		char *sl = strrchr(path, '/');
		*sl = 0;
		DIR *sd = opendir(path);
		struct dirent *de;
		while (sd && (de = readdir(sd))) {
			struct stat fst;
			if (de->d_name[0] != '.' && fstatat(dirfd(sd), de->d_name, &fst, 0) == 0)
				on_disk += (uint64_t)fst.st_size;
		}
		if (sd)
			closedir(sd);
	}
	ok(floods == 5 && on_disk <= (256u << 20) && on_disk >= (200u << 20),
	   "5 execs of 60 MB of output: %d ran, the session keeps %llu MiB of spill files, at most 256",
	   floods, (unsigned long long)(on_disk >> 20));
	e.msg[0] = 0;
	ok(pd_session_output_path(s, "fl-0", 1, path, sizeof path, &e) < 0 && e.code == ENOENT &&
		   strstr(e.msg, "no longer kept") &&
		   pd_session_output_path(s, "fl-1", 1, path, sizeof path, &e) == 0,
	   "the oldest's output is gone, with a message saying why (%s); the next is kept", e.msg);
	ok(pd_session_exec(s, &x, "fl-0", &r1, &e) == 0 && !r1.out.head_len && strstr(r1.error, "no longer kept") &&
		   r1.out.total == 30000000,
	   "a retry of it returns its record without the output, saying so (%s)", r1.error);
	pd_result_free(&r1);

	/* files: write, read back, and the escapes a hostile program can plant */
	ok(pd_sandbox_write_file(sb, "/work/in/a.txt", "abc", 3, 0644, &e) < 0,
	   "writing into a missing directory fails (no silent mkdir)");
	ok(pd_sandbox_mkdir(sb, "/work/in", 0755, &e) == 0 &&
		   pd_sandbox_write_file(sb, "/work/in/a.txt", "abc", 3, 0644, &e) == 0,
	   "mkdir then write");
	static char plant[] = "cd /work && ln -s /etc/hostname rel && ln -s ../../../../../etc/passwd up && "
			      "ln -s /proc/1/root/etc magic && mkfifo fifo && ln in/a.txt hard && "
			      "ln -s /proc/self/fd/0 fd0";
	char *argv3[] = {sh, c, plant, NULL};
	x.argv = argv3;
	pd_session_exec(s, &x, NULL, &r1, &e);
	is_int(r1.status, PD_OK, "the program plants links, a fifo and a hard link");
	pd_result_free(&r1);
	char *buf;
	size_t len;
	ok(pd_sandbox_read_file(sb, "/work/up", 1 << 20, &buf, &len, &e) == 0 &&
		   strstr(buf, "sandbox:x:1000") && !strstr(buf, "systemd"),
	   "a '..' symlink resolves to the sandbox's own /etc/passwd, never the host's");
	free(buf);
	ok(pd_sandbox_read_file(sb, "../../../../etc/passwd", 1 << 20, &buf, &len, &e) == 0 &&
		   strstr(buf, "sandbox:x:1000"),
	   "'..' in the requested path stays inside the root");
	free(buf);
	ok(pd_sandbox_read_file(sb, "/work/magic/hostname", 1 << 20, &buf, &len, &e) < 0 &&
		   e.code == ELOOP,
	   "a link through /proc magic links is refused (ELOOP)");
	ok(pd_sandbox_read_file(sb, "/work/fd0", 1 << 20, &buf, &len, &e) < 0,
	   "a link to /proc/self/fd is refused");
	ok(pd_sandbox_read_file(sb, "/work/fifo", 1 << 20, &buf, &len, &e) < 0 && e.code == EINVAL,
	   "a fifo is refused without hanging");
	ok(pd_sandbox_write_file(sb, "/work/hard", "xyz", 3, 0644, &e) == 0 &&
		   pd_sandbox_read_file(sb, "/work/in/a.txt", 100, &buf, &len, &e) == 0 &&
		   !strcmp(buf, "xyz"),
	   "a hard link only reaches a file of the sandbox itself");
	free(buf);
	struct stat lst;
	ok(pd_sandbox_stat(sb, "/work/rel", &lst, &e) == 0 && S_ISLNK(lst.st_mode),
	   "stat does not follow the final symlink");
	pd_dirent *d;
	size_t nd;
	int lrc = pd_sandbox_list(sb, "/work", &d, &nd, &e);
	ok(lrc == 0 && nd >= 7, "list /work (%zu entries)", nd);
	free(d);
	ok(pd_sandbox_remove(sb, "/work/fifo", &e) == 0 && pd_sandbox_stat(sb, "/work/fifo", &lst, &e) < 0,
	   "remove a file");

	/* tar: pack /work/in, unpack it elsewhere */
	char tmp[] = "/tmp/paddock-tar-XXXXXX";
	int fd = mkstemp(tmp);
	e.msg[0] = 0;
	int trc = pd_session_download_tar(s, "/work/in", fd, NULL, &e);
	ok(trc == 0 && lseek(fd, 0, SEEK_END) > 0, "download a directory as tar %s", e.msg);
	lseek(fd, 0, SEEK_SET);
	trc = pd_session_upload_tar(s, "/work/copy", fd, NULL, &e);
	ok(trc == 0 && pd_sandbox_read_file(sb, "/work/copy/a.txt", 100, &buf, &len, &e) == 0 &&
		   !strcmp(buf, "xyz"),
	   "upload it back into another directory %s", trc ? e.msg : "");
	free(buf);
	close(fd);
	unlink(tmp);

	/* idle TTL */
	usleep(600000);
	static char echo[] = "echo late";
	char *argv4[] = {sh, c, echo, NULL};
	x.argv = argv4;
	ok(pd_session_exec(s, &x, NULL, &r1, &e) < 0 && e.code == ESRCH && strstr(e.msg, "EXPIRED"),
	   "past its idle TTL the session has ended: %s", e.msg);
	char traj[PD_PATH], sid[64];
	snprintf(sid, sizeof sid, "%s", pd_session_id(s));
	pd_session_close(s);
	/* its trajectory is the test's to remove: the state directory is the host's */
	if (pd_trajectory_path(pd_ctx_state_dir(ctx), sid, traj, sizeof traj, &e) == 0)
		unlink(traj);
	pd_pool_stats st2 = stat_of(p, "sess");
	ok(st2.expired >= 1, "the expiry is counted");
	pd_pools_free(p);
}

/* Acquires n sandboxes of the template at once, runs cmd in each, releases them all together;
 * returns how many ran it with status OK. */
static int run_in_n(pd_pools *p, const char *tpl, int n, const char *cmd)
{
	pd_sandbox *s[64];
	pd_err e;
	int good = 0;
	for (int i = 0; i < n && i < 64; i++) {
		pd_result r;
		s[i] = pd_pool_acquire(p, tpl, NULL, &e);
		if (s[i] && run_in(s[i], cmd, &r) == 0) {
			good += r.status == PD_OK;
			pd_result_free(&r);
		}
	}
	for (int i = 0; i < n && i < 64; i++)
		if (s[i])
			pd_pool_release(p, s[i]);
	return good;
}

/* Several reclaimer threads reset released sandboxes side by side: every one comes back clean. */
static void test_reclaimers(void)
{
	pd_pools_opts o = {0};
	o.reclaimers = 3;
	o.reclaim_backlog = 64; /* the reclaimers do it all, not the releasing thread */
	pd_pools *p = pools_of("{\"templates\":[{\"name\":\"r\",\"pool\":{\"min\":0,\"max\":12}}]}", &o);
	if (!ok(p != NULL, "pools with 3 reclaimer threads")) {
		ok(0, "skipped");
		return;
	}
	enum { N = 12 };
	int dirty = run_in_n(p, "r", N, "echo left > /tmp/left; sleep 1000 </dev/null >/dev/null 2>&1 &");
	pd_pool_stats st = stat_of(p, "r");
	for (int i = 0; i < 600 && (st.reclaiming || st.resets + st.destroyed < N); i++) {
		usleep(50000);
		st = stat_of(p, "r");
	}
	int clean = run_in_n(p, "r", N, "test ! -e /tmp/left && ! grep -qx sleep /proc/[0-9]*/comm");
	ok(dirty == N && st.resets + st.destroyed == N && st.resets >= 1 && !st.residue_failures && clean == N,
	   "12 dirty sandboxes released at once to 3 reclaimers: %llu reset, %llu destroyed, %llu residue "
	   "failures; %d of the next 12 users see nothing of them",
	   (unsigned long long)st.resets, (unsigned long long)st.destroyed,
	   (unsigned long long)st.residue_failures, clean);
	pd_pools_free(p);
}

/* Released sandboxes are alive until destroyed: when releases outpace the reclaimer, the
 * releasing threads take over and the backlog never exceeds its bound. */
static void test_reclaim_backlog(void)
{
	pd_pools_opts o = {0};
	o.reclaim_backlog = 2;
	pd_pools *p = pools_of("{\"templates\":[{\"name\":\"b\",\"pool\":{\"min\":0,\"max\":0}}]}", &o);
	if (!ok(p != NULL, "pools with a reclaim backlog of 2"))
		return;
	enum { N = 24 };
	pd_sandbox *s[N];
	pd_err e;
	int got = 0;
	for (int i = 0; i < N; i++)
		got += (s[i] = pd_pool_acquire(p, "b", NULL, &e)) != NULL;
	uint32_t worst = 0;
	for (int i = 0; i < N; i++) {
		pd_pool_release(p, s[i]);
		pd_pool_stats st = stat_of(p, "b");
		if (st.reclaiming > worst)
			worst = st.reclaiming;
	}
	/* 2 waiting, plus the one the reclaimer thread may be destroying at that moment */
	ok(got == N && worst <= 3, "%d released at once: at most 2 wait for the reclaimer (worst %u in reclaim)",
	   N, worst);
	pd_pools_free(p);
}

/* Released sandboxes the pool needs are reset and served again: the next user finds the
 * template's files and nothing of the last user; network traffic makes the reset refuse; with
 * "reuse": false every sandbox is used once. (tests/unit/reset.c proves the reset itself.) */
static void test_reuse(void)
{
	pd_pools_opts o = {0};
	o.tick_ms = 20;
	pd_pools *p = pools_of("{\"templates\":[{\"name\":\"r\",\"cwd\":\"/work\","
			       "\"files\":[{\"path\":\"/work/hello.txt\",\"content\":\"hi\\n\"}],"
			       "\"pool\":{\"min\":1,\"max\":2}},"
			       "{\"name\":\"once\",\"pool\":{\"min\":1,\"max\":2,\"reuse\":false}}]}",
			       &o);
	if (!ok(p != NULL, "pools with reuse on and off"))
		return;
	pd_pools_wait_ready(p, 20000);
	pd_err e;
	pd_result r;
	pd_sandbox *s = pd_pool_acquire(p, "r", NULL, &e);
	const char *first = s ? pd_sandbox_id(s) : "";
	char id[64];
	snprintf(id, sizeof id, "%s", first);
	if (s && run_in(s, "echo dirt > /tmp/dirt; echo more >> /work/hello.txt; sleep 100 & true", &r) == 0)
		pd_result_free(&r);
	pd_pool_release(p, s);
	pd_pool_stats st;
	for (int i = 0; i < 400; i++) {
		st = stat_of(p, "r");
		if (st.resets >= 1 && st.ready == 2)
			break;
		usleep(25000);
	}
	ok(st.resets == 1 && st.reset_refusals == 0, "the released sandbox was reset (resets %llu)",
	   (unsigned long long)st.resets);
	/* the pool holds it and the builder's replacement (max 2), in an order that depends on
	 * which finished first: take both */
	pd_sandbox *both[2] = {pd_pool_acquire(p, "r", NULL, &e), pd_pool_acquire(p, "r", NULL, &e)};
	s = NULL;
	for (int i = 0; i < 2; i++) {
		if (both[i] && !strcmp(pd_sandbox_id(both[i]), id))
			s = both[i];
		else if (both[i])
			pd_pool_release(p, both[i]);
	}
	ok(s != NULL, "and served again (%s)", id);
	int good = 0;
	/* the template's file as placed, an empty /tmp, no sleep left running */
	if (s && run_in(s, "cat /work/hello.txt; ls -A /tmp; cat /proc/[0-9]*/comm | grep -c sleep; true",
			&r) == 0) {
		good = r.status == PD_OK && r.out.head_len == 5 && !memcmp(r.out.head, "hi\n0\n", 5);
		if (!good)
			printf("#   got: %.*s\n", (int)r.out.head_len, r.out.head);
		pd_result_free(&r);
	}
	ok(good, "it holds the template's files as placed and nothing of the last user");
	/* traffic on lo: not provably clean, destroyed instead */
	if (s && run_in(s, "python3 -c 'import socket;s=socket.socket();s.bind((\"127.0.0.1\",0));s.listen();"
			   "c=socket.create_connection(s.getsockname());a,_=s.accept();c.close();a.close()'",
			&r) == 0)
		pd_result_free(&r);
	pd_pool_release(p, s);
	for (int i = 0; i < 400; i++) {
		st = stat_of(p, "r");
		if (st.reset_refusals >= 1 && st.ready >= 1 && !st.reclaiming && !st.creating)
			break;
		usleep(25000);
	}
	ok(st.reset_refusals == 1 && st.destroyed >= 1 && st.ready >= 1,
	   "a sandbox that used the network is refused a reset, destroyed and replaced (refusals %llu)",
	   (unsigned long long)st.reset_refusals);

	s = pd_pool_acquire(p, "once", NULL, &e);
	pd_pool_release(p, s);
	for (int i = 0; i < 400; i++) {
		st = stat_of(p, "once");
		if (st.destroyed >= 1 && st.ready >= 1 && !st.reclaiming)
			break;
		usleep(25000);
	}
	ok(st.resets == 0 && st.destroyed == 1, "with reuse off the sandbox is destroyed, never reset");
	is_int(st.residue_failures + stat_of(p, "r").residue_failures, 0, "nothing left behind");
	pd_pools_free(p);

	/* pools closed while the reclaimer resets a sandbox: it must be destroyed, not filed as
	 * READY after the pools drained their lists (the soak once lost one that way) */
	int lost = 0;
	for (int round = 0; round < 5; round++) {
		int before = paddock_cgroups(ctx);
		p = pools_of("{\"templates\":[{\"name\":\"r\",\"pool\":{\"min\":1,\"max\":4}}]}", &o);
		if (!p)
			break;
		pd_pools_wait_ready(p, 20000);
		for (int i = 0; i < 3; i++) {
			s = pd_pool_acquire(p, "r", NULL, &e);
			pd_pool_release(p, s);
		}
		pd_pools_free(p);
		lost += paddock_cgroups(ctx) - before;
	}
	is_int(lost, 0, "closing the pools during resets leaves no sandbox behind");
}

/* A derived pool's name: the lookup never makes the pool (it may run on the HTTP event thread),
 * the ensure step does, of its own kind (the tier's recipe, not the base's). */
static void test_derived_lookup(void)
{
	pd_pools *p = pools_of("{\"templates\":[{\"name\":\"d\",\"isolation\":[\"container\",\"gvisor\"],"
			       "\"pool\":{\"min\":0,\"max\":2}}]}",
			       NULL);
	if (!ok(p != NULL, "pools of a template that allows two tiers")) {
		ok(0, "skipped");
		ok(0, "skipped");
		ok(0, "skipped");
		ok(0, "skipped");
		ok(0, "skipped");
		return;
	}
	ok(!pd_pools_template(p, "d~gvisor") && !stat_of(p, "d~gvisor").template_name[0],
	   "a lookup of a tier pool not made yet makes none");
	pd_err e = {0};
	const pd_template *t = pd_pools_template_ensure(p, "d~gvisor", &e);
	ok(t && t->isolation == PD_ISO_GVISOR && !t->pool_min && !strcmp(stat_of(p, "d~gvisor").template_name, "d~gvisor"),
	   "the ensure step makes it, under its tier, sized from zero: %s", t ? t->name : e.msg);
	ok(t && pd_pools_template(p, "d~gvisor") == t, "the lookup finds it live after");
	char pool[64] = "", own[64] = "";
	const pd_template *rt = pd_pools_resolve(p, "d", NULL, PD_ISO_GVISOR, pool, sizeof pool, NULL, &e);
	const pd_template *ot = pd_pools_resolve(p, "d", "", -1, own, sizeof own, NULL, &e);
	ok(t && rt == t && !strcmp(pool, "d~gvisor") && ot && ot != t && !strcmp(own, "d"),
	   "one pass from (template, tier) to the pool: %s, and without a tier to the template's own: %s", pool, own);
	pd_err e2 = {0};
	ok(!pd_pools_template_ensure(p, "d~container", &e2) && e2.code == ENOENT && !pd_pools_template_ensure(p, "x~gvisor", &e) &&
		   e.code == ENOENT,
	   "no pool for a template's own tier nor for no template: %s; %s", e2.msg, e.msg);
	pd_pools_free(p);
}

int main(void)
{
	plan(74);
	pd_err e;
	ctx = pd_ctx_new(NULL, &e);
	if (!ok(ctx != NULL, "context: %s", ctx ? "ok" : e.msg))
		return 1;
	test_templates();
	test_pools();
	test_stuck_teardown();
	test_reclaim_backlog();
	test_reclaimers();
	test_reuse();
	test_derived_lookup();
	test_sessions();
	pd_ctx_free(ctx);
	return done();
}
