/* Network namespaces for sandboxes: made by the host, handed to each sandbox, and recycled only
 * when provably untouched.
 *
 * Why: a network namespace is costly to create and far more so to destroy, and the kernel
 * destroys them asynchronously in one worker (cleanup_net). Creating one per sandbox at a few
 * hundred per second outran that worker in a long soak (make soak): thousands of namespaces
 * queued for destruction and every new one waited on the same locks. Most sandboxes (run a program,
 * print a result) never send a packet, so their namespace leaves exactly as it arrived.
 *
 * How: the namespace is created by the host (owned by the initial user namespace), so the
 * sandbox's root has no capability over it: it cannot change an address, a route, a sysctl, a
 * firewall rule or lo's flags. What a sandbox can still leave behind is traffic counters, sockets
 * in TIME_WAIT or other orphan states, and sockets kept alive in SCM_RIGHTS garbage cycles
 * (always through a unix socket). After the sandbox's last process is gone, the host reads the
 * namespace's /proc/net views of exactly those (PROBES) and compares them byte for byte with a
 * fresh namespace's. Equal: the namespace goes back to the pool. Anything different: it is
 * closed and the kernel destroys it. So reuse never shows a next sandbox anything a fresh
 * namespace would not. tests/unit/netns.c runs dirty workloads and checks the next user.
 *
 * Between processes (paddock exec, one sandbox per process: pd_ctx_opts.one_sandbox), the same
 * proof carries a namespace from one process to the next: PIN_SLOTS namespaces per mode are kept
 * bind-mounted in <run_dir>/netns (root's, 0700), each with its own views read at its birth
 * (<slot>.ref). A process takes a slot under an exclusive flock held to its end; it uses the
 * namespace only if that reference is there, and deletes it before use, so a process that dies
 * mid-use leaves the slot's namespace unclaimable: the next taker unmounts it and makes a new
 * one. After the sandbox's last process is gone, the views are read again and the reference is
 * written back only if they are byte for byte the same. A namespace is never shared by two live
 * sandboxes (the lock), and a next user sees exactly what a fresh one's would. It saves a
 * namespace's creation and the kernel's asynchronous destruction per `paddock exec`.
 *
 * Because the sandbox does not own its namespace, sysfs (whose /sys/class/net is tagged by
 * network namespace) is mounted by the host, inside that namespace, and handed over as a
 * detached mount. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif

/* The namespace state that a sandbox without CAP_NET_ADMIN over it can change, that outlives its
 * processes, and that a later sandbox could observe: the fingerprint compared byte for byte with
 * a fresh namespace's (not a list of known attacks).
 *   - counters: lo's packets and bytes (dev); IP, ICMP, TCP, UDP (snmp, snmp6); the TCP and IP
 *     extensions (netstat). Every packet crosses lo, the only device, and every failed send
 *     counts somewhere (OutNoRoutes, for one). So everything that only traffic leaves (TCP
 *     connections in TIME_WAIT or orphaned, neighbour entries, conntrack entries, TCP metrics,
 *     per-device IPv6 counters) changes these too;
 *   - what a program leaves without sending anything: IPv6 flow labels, which outlive their
 *     socket for their linger time (ip6_flowlabel), and the routes' reference and use counts,
 *     which a connect()ed UDP6 socket moves for good through the routes' per-CPU caches
 *     (ipv6_route, rt6_stats);
 *   - sockets that outlive their process: only an SCM_RIGHTS cycle keeps one alive, and it
 *     always holds a unix socket (unix). Memberships, ping, raw and packet sockets live and die
 *     with their socket.
 * Not read, each for a reason tests/unit/netns.c checks (its view reads them all after every
 * dirty workload): addresses, IPv4 routes, neighbours, netfilter and xfrm state and the sysctls
 * need CAP_NET_ADMIN over the namespace, which belongs to the host's user namespace; /proc/net/tcp,
 * tcp6, udp and udp6 walk the host's whole hash tables (2 ms each for TCP here) to show sockets
 * the above already account for; the views of host-wide state the host moves at any time
 * (softnet_stat, stat/rt_cache, the memory of protocols and sockstat) and netlink, whose socket
 * addresses differ between any two namespaces, would make no namespace compare equal. Each file
 * read costs 10-50 us per check, on every reset: the list is what reuse needs, no more. */
_Static_assert(PD_NETNS_PROBES == 8, "PROBES below has PD_NETNS_PROBES names");
static const char *const PROBES[] = {"dev",	      "snmp",	    "snmp6",	 "netstat",
				     "unix",	      "ip6_flowlabel", "ipv6_route", "rt6_stats",
				     NULL};

#define PROBE_MAX (64 * 1024)
/* Idle namespaces kept per mode; beyond this they are closed. In steady use the idle list only
 * bridges teardowns and creations in flight; the cap bounds what a burst leaves behind: each
 * idle namespace holds about 200 KiB of kernel memory (measured on Linux 6.18) and two fds, and
 * a process under a low RLIMIT_NOFILE needs its fds for connections and sandboxes.
 * (Each sandbox gets a new sysfs superblock: keeping one alive per namespace would cost an fd
 * per sandbox, which a daemon at its descriptor limit cannot spare.) */
#define IDLE_MAX 64

static unsigned idle_cap(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) < 0 || r.rlim_cur == RLIM_INFINITY)
		return IDLE_MAX;
	rlim_t cap = r.rlim_cur / 128; /* 8 at the usual 1024, 1 at 128 */
	return cap > IDLE_MAX ? IDLE_MAX : (unsigned)cap;
}

/* namespaces kept between processes, per mode (one_sandbox): more concurrent processes than
 * this each make their own, as before */
#define PIN_SLOTS 4

struct pd_netns {
	int fd;
	bool loopback;
	bool tainted; /* lo switched after it was handed out (netmode.c) */
	pd_netns *next;
	/* kept between processes: */
	int pin_lock;     /* -1, or the slot's lock file, flock()ed while this process uses it */
	bool pinned;      /* bind-mounted at <pin>.ns */
	char pin[PD_PATH]; /* <run_dir>/netns/<mode><slot> */
	char *ref;        /* its PROBES at its birth */
	size_t ref_len;
};

struct pd_netpool {
	pthread_mutex_t lock;
	int host_fd; /* the network namespace the threads return to */
	pd_netns *idle[2];
	unsigned nidle[2];
	char *fresh[2]; /* PROBES of a fresh namespace, per mode (lo down, lo up) */
	size_t fresh_len[2];
	pd_netns_stats st;
	bool broken;
	bool keep; /* false: no reuse within the process, so no fresh reference (one_sandbox) */
	char pin_dir[PD_PATH]; /* "": no namespaces kept between processes */
};

static void ns_free(pd_netns *ns)
{
	if (ns->fd >= 0)
		close(ns->fd);
	if (ns->pin_lock >= 0)
		close(ns->pin_lock); /* the flock goes with it */
	free(ns->ref);
	free(ns);
}

int pd_netpool_init(pd_netpool **out, bool keep, const char *pin_dir, pd_err *e)
{
	pd_netpool *p = calloc(1, sizeof *p);
	if (!p)
		return pd_fail(e, ENOMEM, "network namespace pool");
	p->keep = keep;
	/* without the directory, every namespace is made fresh: slower, never wrong */
	if (pin_dir && (size_t)snprintf(p->pin_dir, sizeof p->pin_dir, "%s", pin_dir) < sizeof p->pin_dir - 16 &&
	    (mkdir(p->pin_dir, 0700) == 0 || errno == EEXIST))
		;
	else
		p->pin_dir[0] = 0;
	pthread_mutex_init(&p->lock, NULL);
	/* thread-self: the namespace of the thread that creates the context, where the host's
	 * sockets live; every thread that enters a sandbox's namespace comes back to it */
	p->host_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (p->host_fd < 0) {
		int err = errno;
		free(p);
		return pd_fail(e, err, "open /proc/thread-self/ns/net");
	}
	*out = p;
	return 0;
}

void pd_netpool_free(pd_netpool *p)
{
	if (!p)
		return;
	for (int m = 0; m < 2; m++) {
		while (p->idle[m]) {
			pd_netns *ns = p->idle[m];
			p->idle[m] = ns->next;
			ns_free(ns);
		}
		free(p->fresh[m]);
	}
	close(p->host_fd);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Back to the host's namespace. If that ever failed the thread would stay in a sandbox's
 * namespace, and sockets it made later would be there: the pool refuses all further work. */
static int leave(pd_netpool *p, pd_err *e)
{
	for (int i = 0; i < 3; i++)
		if (setns(p->host_fd, CLONE_NEWNET) == 0)
			return 0;
	int err = errno;
	pthread_mutex_lock(&p->lock);
	p->broken = true;
	pthread_mutex_unlock(&p->lock);
	return pd_fail(e, err, "return to the host network namespace");
}

/* One PROBE's text appended at buf+*n: read through fds[i] when the caller keeps it open (a
 * seq_file read from offset 0 formats it anew; -2: known absent), else opened and closed here
 * (one descriptor at a time: a reset must work with as few free as the helper needs, and leaves
 * the caller's table as it found it). -1: too large to be fresh, or unreadable. */
static int read_probe(const char *dir, int i, const int *fds, char *buf, size_t cap, size_t *n)
{
	int fd = fds ? fds[i] : -1;
	if (fd == -2)
		return 0;
	bool own = fd < 0;
	if (own) {
		char path[96];
		snprintf(path, sizeof path, "%s/%s", dir, PROBES[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) /* IPv6 off, say: absent in fresh namespaces too */
			return errno == ENOENT ? 0 : -1;
	}
	int rc = 0;
	for (off_t off = 0;;) {
		if (*n == cap) {
			rc = -1;
			break;
		}
		ssize_t r = pread(fd, buf + *n, cap - *n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -1 : 0;
			break;
		}
		*n += (size_t)r;
		off += r;
	}
	if (own)
		close(fd);
	return rc;
}

/* Every view but ipv6_route: its descriptor held open while a sandbox ran and closed at its end
 * left the ::1 route's reference count one higher at the destroy's fresh check just after
 * (tests/unit/netns.c saw it in every quiet sandbox), so it is opened and closed per check. */
void pd_netns_views_open(pid_t pid, int *fds)
{
	for (int i = 0; PROBES[i]; i++) {
		if (fds[i] != -1 || !strcmp(PROBES[i], "ipv6_route"))
			continue;
		char path[96];
		snprintf(path, sizeof path, "/proc/%d/net/%s", (int)pid, PROBES[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		fds[i] = fd >= 0 ? fd : errno == ENOENT ? -2 : -1;
	}
}

/* The PROBES of a namespace (dir: its /proc/.../net), concatenated, each with its name; fds: the
 * caller's kept descriptors of them (PD_NETNS_PROBES, pd_netns_views_open) or NULL.
 * Returns the length, or -1 (too large to be fresh, or unreadable). */
static ssize_t read_probes_in(const char *dir, const int *fds, char *buf, size_t cap)
{
	size_t n = 0;
	for (int i = 0; PROBES[i]; i++) {
		int w = snprintf(buf + n, cap - n, "\n== %s\n", PROBES[i]);
		if (w < 0 || (size_t)w >= cap - n)
			return -1;
		n += (size_t)w;
		if (read_probe(dir, i, fds, buf, cap, &n) < 0)
			return -1;
	}
	return (ssize_t)n;
}

static ssize_t read_probes(const char *dir, char *buf, size_t cap)
{
	return read_probes_in(dir, NULL, buf, cap);
}

static int write_sysctl(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, value, strlen(value));
	int err = errno;
	close(fd);
	return w == (ssize_t)strlen(value) ? 0 : (errno = err ? err : EIO, -1);
}

/* ---- namespaces kept between processes (one_sandbox; see the top of the file) ---- */

static void pin_path(const pd_netns *ns, const char *ext, char *out, size_t size)
{
	snprintf(out, size, "%s.%s", ns->pin, ext);
}

/* The slot's namespace is not used again: unclaimable first, then unmounted (the kernel destroys
 * it once its last user is gone). */
static void pin_drop(pd_netns *ns)
{
	char path[PD_PATH + 8];
	pin_path(ns, "ref", path, sizeof path);
	unlink(path);
	pin_path(ns, "ns", path, sizeof path);
	umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
	unlink(path);
	ns->pinned = false;
}

/* A slot free for this process, its lock held in ns->pin_lock, and the slot's namespace in ns->fd
 * when the last user's check left its reference (claimed: deleted before use); otherwise the slot
 * is emptied for a new one. False when every slot is in use (or the directory is unusable). */
static bool pin_take(const pd_netpool *p, pd_netns *ns)
{
	char path[PD_PATH + 8];
	for (int i = 0; i < PIN_SLOTS; i++) {
		snprintf(ns->pin, sizeof ns->pin, "%s/%s%d", p->pin_dir, ns->loopback ? "lo" : "none", i);
		pin_path(ns, "lock", path, sizeof path);
		int lk = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (lk < 0)
			return false;
		if (flock(lk, LOCK_EX | LOCK_NB) < 0) {
			close(lk);
			continue;
		}
		ns->pin_lock = lk;
		ns->ref = malloc(PROBE_MAX + 1);
		pin_path(ns, "ref", path, sizeof path);
		ssize_t len = ns->ref ? pd_read_file(path, ns->ref, PROBE_MAX + 1) : -1;
		if (len >= 0 && len < PROBE_MAX && unlink(path) == 0) {
			pin_path(ns, "ns", path, sizeof path);
			int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd >= 0 && ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET) {
				ns->fd = fd;
				ns->ref_len = (size_t)len;
				ns->pinned = true;
				return true;
			}
			if (fd >= 0)
				close(fd);
		}
		free(ns->ref);
		ns->ref = NULL;
		pin_drop(ns);
		return true;
	}
	return false;
}

/* Called inside a new namespace: kept at the slot, with its views (probes) as its reference. */
static void pin_new(pd_netns *ns, const char *probes, size_t len)
{
	char path[PD_PATH + 8];
	pin_path(ns, "ns", path, sizeof path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0400);
	if (fd < 0)
		return;
	close(fd);
	ns->ref = malloc(len ? len : 1);
	if (!ns->ref || mount("/proc/thread-self/ns/net", path, NULL, MS_BIND, NULL) < 0) {
		free(ns->ref);
		ns->ref = NULL;
		unlink(path);
		return;
	}
	memcpy(ns->ref, probes, len);
	ns->ref_len = len;
	ns->pinned = true;
}

/* A new namespace, made on the calling thread and left again; ns (its mode set) is the caller's,
 * freed here on failure. */
static pd_netns *create(pd_netpool *p, pd_netns *ns, pd_err *e)
{
	bool loopback = ns->loopback;
	char *buf = malloc(PROBE_MAX);
	if (!buf) {
		ns_free(ns);
		pd_fail(e, ENOMEM, "network namespace");
		return NULL;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		pd_fail(e, errno, "new network namespace");
		goto fail;
	}
	const char *what = NULL;
	/* the sandbox has no CAP_NET_BIND_SERVICE over a namespace it does not own: let any of its
	 * users bind any port, and use ICMP echo sockets (ping) as they could in their own */
	if (write_sysctl("/proc/sys/net/ipv4/ip_unprivileged_port_start", "0") < 0)
		what = "set ip_unprivileged_port_start";
	else if (write_sysctl("/proc/sys/net/ipv4/ping_group_range", "0 2147483647") < 0)
		what = "set ping_group_range";
	if (!what && loopback) {
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr;
		memset(&ifr, 0, sizeof ifr);
		memcpy(ifr.ifr_name, "lo", 3);
		if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
			what = "get lo flags";
		else {
			ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
			if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
				what = "bring lo up";
		}
		if (s >= 0)
			close(s);
	}
	if (what) {
		pd_fail(e, errno, "%s", what);
		leave(p, NULL);
		goto fail;
	}
	ns->fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ns->fd < 0) {
		pd_fail(e, errno, "open the new network namespace");
		leave(p, NULL);
		goto fail;
	}
	/* the first fresh namespace of each mode is the reference every reuse is compared with */
	int m = loopback;
	pthread_mutex_lock(&p->lock);
	bool need = !p->fresh[m] && p->keep;
	pthread_mutex_unlock(&p->lock);
	bool pin = ns->pin_lock >= 0;
	ssize_t len = need || pin ? read_probes("/proc/thread-self/net", buf, PROBE_MAX) : -1;
	if (pin && len >= 0)
		pin_new(ns, buf, (size_t)len);
	if (!need)
		len = -1;
	if (leave(p, e) < 0)
		goto fail;
	if (len >= 0) {
		char *copy = malloc((size_t)len ? (size_t)len : 1);
		pthread_mutex_lock(&p->lock);
		if (copy && !p->fresh[m]) {
			memcpy(copy, buf, (size_t)len);
			p->fresh[m] = copy;
			p->fresh_len[m] = (size_t)len;
			copy = NULL;
		}
		pthread_mutex_unlock(&p->lock);
		free(copy);
	}
	free(buf);
	pthread_mutex_lock(&p->lock);
	p->st.created++;
	pthread_mutex_unlock(&p->lock);
	return ns;
fail:
	ns_free(ns);
	free(buf);
	return NULL;
}

pd_netns *pd_netns_get(pd_netpool *p, bool loopback, pd_err *e)
{
	int m = loopback;
	pthread_mutex_lock(&p->lock);
	if (p->broken) {
		pthread_mutex_unlock(&p->lock);
		pd_fail(e, EIO, "a thread could not return to the host network namespace");
		return NULL;
	}
	pd_netns *ns = p->idle[m];
	if (ns) {
		p->idle[m] = ns->next;
		p->nidle[m]--;
		p->st.reused++;
	}
	pthread_mutex_unlock(&p->lock);
	if (ns) {
		ns->next = NULL;
		return ns;
	}
	if (!(ns = calloc(1, sizeof *ns))) {
		pd_fail(e, ENOMEM, "network namespace");
		return NULL;
	}
	ns->fd = ns->pin_lock = -1;
	ns->loopback = loopback;
	if (p->pin_dir[0] && pin_take(p, ns) && ns->fd >= 0) {
		pthread_mutex_lock(&p->lock);
		p->st.reused++;
		pthread_mutex_unlock(&p->lock);
		return ns;
	}
	return create(p, ns, e);
}

void pd_netns_detach(pd_netns *ns)
{
	if (ns->fd >= 0)
		close(ns->fd);
	ns->fd = -1;
}

void pd_netns_taint(pd_netns *ns)
{
	ns->tainted = true;
}

void pd_netns_reattach(pd_netns *ns, pid_t pid)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/ns/net", (int)pid);
	if (ns->fd < 0)
		ns->fd = open(p, O_RDONLY | O_CLOEXEC);
}

int pd_netns_enter(const pd_netns *ns, pd_err *e)
{
	if (setns(ns->fd, CLONE_NEWNET) < 0)
		return pd_fail(e, errno, "enter the sandbox's network namespace");
	return 0;
}

int pd_netns_leave(pd_netpool *p, pd_err *e)
{
	return leave(p, e);
}

int pd_netns_sysfs(pd_err *e)
{
	int fs = (int)syscall(SYS_fsopen, "sysfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return pd_fail(e, errno, "fsopen sysfs");
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		int err = errno;
		close(fs);
		return pd_fail(e, err, "create sysfs for the sandbox's network namespace");
	}
	int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
			     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	int err = errno;
	close(fs);
	if (m < 0)
		return pd_fail(e, err, "mount sysfs");
	return m;
}

/* Whether the namespace at fd reads exactly as a fresh one of mode m (its PROBES). */
static bool same_as_fresh(pd_netpool *p, int m, const char *buf, ssize_t len)
{
	pthread_mutex_lock(&p->lock);
	bool fresh = p->fresh[m] && len >= 0 && (size_t)len == p->fresh_len[m] &&
		     !memcmp(buf, p->fresh[m], (size_t)len);
	pthread_mutex_unlock(&p->lock);
	return fresh;
}

/* A namespace held by fd only (its sandbox is gone): read from inside it. */
static bool reads_fresh(pd_netpool *p, int fd, int m)
{
	bool fresh = false;
	char *buf = malloc(PROBE_MAX);
	if (buf && setns(fd, CLONE_NEWNET) == 0) {
		ssize_t len = read_probes("/proc/thread-self/net", buf, PROBE_MAX);
		if (leave(p, NULL) == 0)
			fresh = same_as_fresh(p, m, buf, len);
	}
	free(buf);
	return fresh;
}

/* A kept namespace after its sandbox: its reference written back if it reads as at its birth. */
static void pin_put(pd_netpool *p, pd_netns *ns, bool all_gone)
{
	char path[PD_PATH + 8], tmp[PD_PATH + 16];
	bool fresh = false;
	pin_path(ns, "ns", path, sizeof path);
	int fd = all_gone && !ns->tainted && ns->ref ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	char *buf = fd >= 0 ? malloc(PROBE_MAX) : NULL;
	if (buf && setns(fd, CLONE_NEWNET) == 0) {
		ssize_t len = read_probes("/proc/thread-self/net", buf, PROBE_MAX);
		fresh = leave(p, NULL) == 0 && len >= 0 && (size_t)len == ns->ref_len &&
			!memcmp(buf, ns->ref, ns->ref_len);
	}
	free(buf);
	if (fd >= 0)
		close(fd);
	if (fresh) {
		/* written whole, then named: a reader never finds half a reference */
		pin_path(ns, "ref", path, sizeof path);
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		int w = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		fresh = w >= 0 && write(w, ns->ref, ns->ref_len) == (ssize_t)ns->ref_len;
		if (w >= 0)
			close(w);
		fresh = fresh && rename(tmp, path) == 0;
		if (!fresh)
			unlink(tmp);
	}
	if (!fresh) {
		pthread_mutex_lock(&p->lock);
		p->st.discarded++;
		pthread_mutex_unlock(&p->lock);
		pin_drop(ns);
	}
}

void pd_netns_put(pd_netpool *p, pd_netns *ns, bool all_gone)
{
	if (!ns)
		return;
	if (ns->pinned) {
		pin_put(p, ns, all_gone);
		ns_free(ns);
		return;
	}
	if (ns->fd < 0) {
		/* the sandbox's init was gone before its namespace could be taken back */
		pthread_mutex_lock(&p->lock);
		p->st.discarded++;
		pthread_mutex_unlock(&p->lock);
		free(ns);
		return;
	}
	int m = ns->loopback;
	bool fresh = false;
	unsigned cap = idle_cap();
	pthread_mutex_lock(&p->lock);
	bool room = all_gone && p->keep && !ns->tainted && !p->broken && p->fresh[m] && p->nidle[m] < cap;
	pthread_mutex_unlock(&p->lock);
	if (room)
		fresh = reads_fresh(p, ns->fd, m);
	pthread_mutex_lock(&p->lock);
	if (room && !fresh)
		p->st.unfresh++;
	if (fresh && p->nidle[m] < cap) {
		ns->next = p->idle[m];
		p->idle[m] = ns;
		p->nidle[m]++;
		ns = NULL;
	} else {
		p->st.discarded++;
	}
	pthread_mutex_unlock(&p->lock);
	if (ns)
		ns_free(ns);
}

bool pd_netns_fresh(pd_netpool *p, const pd_netns *ns, pid_t pid, const int *fds)
{
	/* /proc/PID/net shows the namespace of PID (the sandbox's init, alive and ours): no setns
	 * there and back */
	char dir[48];
	snprintf(dir, sizeof dir, "/proc/%d/net", (int)pid);
	char *buf = malloc(PROBE_MAX);
	if (!buf)
		return false;
	bool fresh = same_as_fresh(p, ns->loopback, buf, read_probes_in(dir, fds, buf, PROBE_MAX));
	free(buf);
	if (!fresh) {
		pthread_mutex_lock(&p->lock);
		p->st.unfresh++;
		pthread_mutex_unlock(&p->lock);
	}
	return fresh;
}

void pd_netpool_stats(pd_netpool *p, pd_netns_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	out->idle = p->nidle[0] + p->nidle[1];
	pthread_mutex_unlock(&p->lock);
}
