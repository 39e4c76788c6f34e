/* resetview.h: the fixture the reset tests share (reset.c, reset_scratch.c): a sandbox to
 * dirty, the view of everything a user can see of it, and the comparison with a fresh one's. */
#ifndef PADDOCK_TEST_RESETVIEW_H
#define PADDOCK_TEST_RESETVIEW_H

#include "internal.h"
#include "output.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pd_ctx *ctx;

/* Everything a user can read of its sandbox that a previous user could have changed. Times and
 * the ids the kernel numbers host-wide (mount ids, device numbers) are left out; the rest is
 * printed in full. The first line is the pid of the shell: pids are part of the view. */
static const char VIEW[] __attribute__((unused)) =
	"echo \"== pid $$\";"
	"echo == procs; for d in /proc/[0-9]*; do echo \"${d#/proc/} $(cut -d' ' -f2 $d/stat 2>&1)\"; done;"
	/* /proc's own link count follows the host's process count: not part of the view */
	/* the scratch mounts are listed on their own: -xdev stops at them */
	"echo == tree; find / /tmp /work /dev/shm -xdev \\( -path /usr -o -path /proc \\) -prune -o"
	" -printf '%p %y %m %U %G %s %n %i %l\\n' | sort;"
	"echo == usr; ls -lan --time-style=+ /usr /usr/bin /usr/share /usr/lib | md5sum;"
	"echo == dev; ls -lanR --time-style=+ /dev;"
	"echo == df; df -k / /tmp /dev/shm /usr | tr -s ' ';"
	"echo == sysvipc; cat /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem;"
	"echo == ipc; python3 -c 'import ctypes\n"
	"c=ctypes.CDLL(None,use_errno=True)\n"
	"r=ctypes.CDLL(\"librt.so.1\",use_errno=True)\n"
	"q=r.mq_open(b\"/pd-dirty\",0); print(\"mq\",q,ctypes.get_errno())\n"
	"i=c.shmget(0,4096,0o600); print(\"shmid\",i); c.shmctl(i,0,None)\n"
	"i=c.msgget(0,0o600); print(\"msqid\",i); c.msgctl(i,0,None)\n"
	"i=c.semget(0,1,0o600); print(\"semid\",i); c.semctl(i,0,0)\n"
	"for k in (1234,4321,5678): print(k, c.shmget(k,0,0), c.msgget(k,0), c.semget(k,0,0))';"
	"echo == who; id; umask; hostname; ulimit -a; env | sort; pwd;"
	"echo == init; cat /proc/1/limits; grep -E '^(Uid|Gid)' /proc/1/status;"
	"echo == status; grep -E '^(Cap|NoNewPrivs|Seccomp|Uid|Gid|Groups)' /proc/self/status;"
	"echo == mounts; awk '{$1=$2=$3=\"\"; print}' /proc/self/mountinfo | sort;"
	"echo == net; cat /proc/net/dev /proc/net/snmp /proc/net/unix /proc/net/tcp /proc/net/udp;"
	"echo == cgroup; cat /proc/self/cgroup; ls /sys/fs/cgroup 2>&1;"
	"echo == pids-after; echo $$; sh -c 'echo $$'";

static __attribute__((unused)) int sh(pd_sandbox *s, const char *script, uint32_t uid, pd_result *r)
{
	static char shp[] = "/bin/sh", dash_c[] = "-c";
	char *argv[] = {shp, dash_c, (char *)script, NULL};
	pd_exec_opts x = {.argv = argv, .stdin_fd = -1, .uid = uid, .gid = uid};
	pd_err e = {0};
	if (pd_sandbox_exec(s, &x, r, &e) < 0) {
		printf("#   exec failed: %s\n", e.msg);
		return -1;
	}
	return 0;
}

static __attribute__((unused)) pd_sandbox *make(void)
{
	pd_err e = {0};
	pd_sandbox_opts so = {.limits = pd_limits_default()};
	so.limits.memory_bytes = 256ull << 20;
	so.limits.disk_bytes = 64ull << 20;
	pd_sandbox *s = pd_sandbox_create(ctx, &so, &e);
	if (!s)
		printf("#   create failed: %s\n", e.msg);
	return s;
}

struct view {
	char *text;
	pd_result r;
};

static __attribute__((unused)) struct view look_with(pd_sandbox *s, const char *script)
{
	struct view v;
	memset(&v, 0, sizeof v);
	if (sh(s, script, 0, &v.r) < 0) {
		v.text = strdup("(exec failed)");
		return v;
	}
	v.text = dup_out(&v.r.out);
	if (v.r.status != PD_OK) {
		char *err = dup_out(&v.r.err);
		printf("#   view: status %s exit %d: %.300s\n", pd_status_name(v.r.status), v.r.exit_code, err);
		free(err);
	}
	return v;
}

static __attribute__((unused)) struct view look(pd_sandbox *s)
{
	return look_with(s, VIEW);
}

static __attribute__((unused)) void check_against(const struct view *fresh, const struct view *now, const char *what)
{
	bool same = !strcmp(fresh->text, now->text);
	if (!ok(same, "after %s: the view equals a fresh sandbox's (%zu bytes)", what, strlen(now->text)))
		first_difference(fresh->text, now->text, "reset");
	bool rec = now->r.status == PD_OK && !now->r.oom_killed && now->r.signal == 0 &&
		   now->r.exit_code == 0;
	/* peaks are per exec; what a reset cannot take back is page cache the last user faulted in
	 * that others share, so allow a margin, far below any workload here */
	uint64_t a = fresh->r.memory_peak_bytes, b = now->r.memory_peak_bytes;
	bool mem = b <= a + (6u << 20);
	/* a peak the last user reached must not show up as this exec's */
	bool pids = now->r.pids_peak <= fresh->r.pids_peak;
	ok(rec && mem && pids,
	   "after %s: the record agrees (status %s, oom %d, memory peak %llu KiB vs %llu fresh, "
	   "pids peak %u vs %u)",
	   what, pd_status_name(now->r.status), now->r.oom_killed, (unsigned long long)(b >> 10),
	   (unsigned long long)(a >> 10), now->r.pids_peak, fresh->r.pids_peak);
}

static __attribute__((unused)) void view_free(struct view *v)
{
	free(v->text);
	pd_result_free(&v->r);
}

static __attribute__((unused)) char *probe(pd_sandbox *s, const char *script, uint32_t uid)
{
	pd_result r;
	if (sh(s, script, uid, &r) < 0)
		return strdup("(exec failed)");
	char *t = dup_out(&r.out);
	pd_result_free(&r);
	for (char *c = t; *c; c++)
		if (*c == '\n')
			*c = '|'; /* one line of TAP */
	return t;
}

#endif
