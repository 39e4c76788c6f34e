/* Piston's view of the languages: runtimes with Piston's names and aliases, versions read from the
 * toolchains themselves, and Piston's version matching (node-semver ranges, as Piston's
 * semver.satisfies does it).
 *
 * Piston answers /api/v2/execute only for a runtime whose name or alias is the request's language
 * and whose version satisfies the request's version range ("*", "3.11", "^3", ">=3.10 <4"...),
 * the newest of those if several do. A client pinning "3.10.0" must hear "runtime is unknown" from
 * a host with Python 3.11.7, not get 3.11 silently; so the versions reported are the real ones,
 * asked of each toolchain once when the daemon starts (on the host: the default image is the host's
 * /usr), and the table's own figures are only the fallback for a program that does not answer. */
#define _GNU_SOURCE
#include "server.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- semver ranges --------------------------------------------------------------------------- */

/* A partial version: how many of major.minor.patch were given (wildcards count as not given);
 * v[3] is 1 for a release, 0 for a pre-release (which sorts before its release). */
typedef struct partial {
	long v[4];
	int n;
} partial;

typedef struct cmp {
	int op; /* '<', 'l' (<=), '>', 'g' (>=), '=' */
	long v[4];
} cmp;

static int vcmp(const long a[4], const long b[4])
{
	for (int i = 0; i < 4; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static bool cmp_ok(const cmp *c, const long v[4])
{
	int r = vcmp(v, c->v);
	switch (c->op) {
	case '<': return r < 0;
	case 'l': return r <= 0;
	case '>': return r > 0;
	case 'g': return r >= 0;
	default: return r == 0;
	}
}

/* Parses [v]X[.Y[.Z]] where each part may be x, X or *; stops at the first character that cannot
 * continue it. A pre-release suffix (-rc1) only marks the version as one (ordered before its
 * release, not among other pre-releases: paddock's versions have none); build metadata is ignored. */
static const char *parse_partial(const char *s, partial *p)
{
	memset(p, 0, sizeof *p);
	p->v[3] = 1;
	if (*s == 'v' || *s == '=')
		s++;
	bool wild = false;
	for (int i = 0; i < 3; i++) {
		if (*s == 'x' || *s == 'X' || *s == '*') {
			wild = true;
			s++;
		} else if (isdigit((unsigned char)*s)) {
			char *end;
			errno = 0;
			long x = strtol(s, &end, 10);
			if (errno || x < 0 || x > 1000000000)
				return NULL;
			if (!wild)
				p->v[p->n++] = x;
			s = end;
		} else {
			return i == 0 ? NULL : s - 1; /* "1." is not a version */
		}
		if (*s != '.')
			break;
		if (i < 2)
			s++;
	}
	if (*s == '-')
		p->v[3] = 0;
	if (*s == '-' || *s == '+')
		while (*s && !isspace((unsigned char)*s) && *s != '|')
			s++;
	return s;
}

static long bump(long x)
{
	return x < 1000000000 ? x + 1 : x;
}

/* Appends the comparators that one operator and partial version stand for (node-semver's
 * desugaring of X-ranges, ~ and ^); returns how many (0: matches nothing, -1: too many). */
static int desugar(int op, const partial *p, cmp *out, int room)
{
	/* a bound made by rounding (1.2 -> 1.3.0) sorts before 1.3.0's pre-releases, as in node-semver */
	long lo[4] = {p->v[0], p->n > 1 ? p->v[1] : 0, p->n > 2 ? p->v[2] : 0, p->n > 2 ? p->v[3] : 0};
	long hi[4] = {0, 0, 0, 0};
	int n = 0;
#define ADD(o, a)                                                                 \
	do {                                                                      \
		if (n == room)                                                    \
			return -1;                                                \
		out[n].op = (o);                                                  \
		memcpy(out[n].v, (a), sizeof out[n].v);                           \
		n++;                                                              \
	} while (0)
	if (p->n == 0) { /* *, x, >=*, <=*: anything; > * and < *: nothing */
		if (op == '>' || op == '<')
			return 0;
		static const long zero[4] = {0, 0, 0, 0};
		ADD('g', zero);
		return n;
	}
	switch (op) {
	case '~': /* ~1.2.3 := >=1.2.3 <1.3.0; ~1 := >=1.0.0 <2.0.0 */
		if (p->n == 1)
			hi[0] = bump(p->v[0]);
		else
			hi[0] = p->v[0], hi[1] = bump(p->v[1]);
		ADD('g', lo);
		ADD('<', hi);
		return n;
	case '^': /* the left-most non-zero part given may not change */
		if (p->v[0] > 0 || p->n == 1)
			hi[0] = bump(p->v[0]);
		else if (p->n == 2 || p->v[1] > 0)
			hi[1] = bump(p->v[1]);
		else
			hi[1] = p->v[1], hi[2] = bump(p->v[2]);
		if (!(p->v[0] > 0 || p->n == 1))
			hi[0] = p->v[0];
		ADD('g', lo);
		ADD('<', hi);
		return n;
	case '=': /* X-range: 1.2 := >=1.2.0 <1.3.0 */
		if (p->n == 3) {
			ADD('=', lo);
			return n;
		}
		if (p->n == 1)
			hi[0] = bump(p->v[0]);
		else
			hi[0] = p->v[0], hi[1] = bump(p->v[1]);
		ADD('g', lo);
		ADD('<', hi);
		return n;
	case '>': /* >1.2 := >=1.3.0 */
		if (p->n == 3) {
			ADD('>', lo);
			return n;
		}
		if (p->n == 1)
			hi[0] = bump(p->v[0]);
		else
			hi[0] = p->v[0], hi[1] = bump(p->v[1]);
		ADD('g', hi);
		return n;
	case 'g':
		ADD('g', lo);
		return n;
	case '<':
		ADD('<', lo);
		return n;
	case 'l': /* <=1.2 := <1.3.0 */
		if (p->n == 3) {
			ADD('l', lo);
			return n;
		}
		if (p->n == 1)
			hi[0] = bump(p->v[0]);
		else
			hi[0] = p->v[0], hi[1] = bump(p->v[1]);
		ADD('<', hi);
		return n;
	}
#undef ADD
	return -1;
}

/* One comparator set (the text between two ||): space-separated comparators, or A - B. */
static int set_matches(const char *s, const char *end, const long v[4])
{
	char buf[256];
	size_t len = (size_t)(end - s);
	if (len >= sizeof buf)
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	cmp c[32];
	int n = 0;
	const char *p = buf;
	while (isspace((unsigned char)*p))
		p++;
	if (!*p) /* "" (an empty set) is "*" */
		return 1;
	const char *dash = strstr(p, " - ");
	if (dash) { /* hyphen range: A - B := >=A <=B, partial B rounding up */
		partial a, b;
		const char *q = parse_partial(p, &a);
		if (!q || q > dash)
			return -1;
		while (isspace((unsigned char)*q))
			q++;
		if (q != dash + 1)
			return -1;
		q = dash + 3;
		while (isspace((unsigned char)*q))
			q++;
		q = parse_partial(q, &b);
		if (!q)
			return -1;
		while (isspace((unsigned char)*q))
			q++;
		if (*q)
			return -1;
		int k = desugar('g', &a, c, 32);
		int m = k < 0 ? -1 : desugar('l', &b, c + k, 32 - k);
		if (k < 0 || m < 0)
			return -1;
		n = k + m;
	} else {
		while (*p) {
			int op = '=';
			if (*p == '~') {
				op = '~';
				p++;
				if (*p == '>') /* ~> is Ruby's spelling, which node-semver accepts too */
					p++;
			} else if (*p == '^') {
				op = '^';
				p++;
			} else if (*p == '>' || *p == '<') {
				op = *p++;
				if (*p == '=') {
					op = op == '>' ? 'g' : 'l';
					p++;
				}
			} else if (*p == '=') {
				p++;
			}
			while (isspace((unsigned char)*p))
				p++;
			partial pv;
			const char *q = parse_partial(p, &pv);
			if (!q || (*q && !isspace((unsigned char)*q)))
				return -1;
			int k = desugar(op, &pv, c + n, 32 - n);
			if (k < 0)
				return -1;
			if (k == 0)
				return 0; /* a comparator nothing satisfies */
			n += k;
			p = q;
			while (isspace((unsigned char)*p))
				p++;
		}
	}
	for (int i = 0; i < n; i++)
		if (!cmp_ok(&c[i], v))
			return 0;
	return 1;
}

int pd_semver_satisfies(const char *version, const char *range)
{
	partial pv;
	const char *q = parse_partial(version, &pv);
	if (!q || *q || pv.n != 3)
		return -1;
	int verdict = 0;
	const char *s = range;
	for (;;) {
		const char *bar = strstr(s, "||");
		const char *end = bar ? bar : s + strlen(s);
		int r = set_matches(s, end, pv.v);
		if (r < 0)
			return -1; /* node-semver: an invalid range satisfies nothing */
		verdict |= r;
		if (!bar)
			break;
		s = bar + 2;
	}
	return verdict;
}

/* ---- Piston's runtimes ----------------------------------------------------------------------- */

/* Piston's names and aliases (its packages' metadata), then the names paddock itself accepts for
 * the same language, so that no request that worked before is refused now. */
static const pd_runtime runtimes[] = {
	{"python", {"py", "py3", "python3", NULL}, NULL, "python"},
	{"bash", {"sh", NULL}, NULL, "bash"},
	{"c", {"gcc", NULL}, "gcc", "c"},
	{"c++", {"cpp", "g++", NULL}, "gcc", "cpp"},
	{"javascript", {"node-javascript", "node-js", "js", "node", "nodejs", NULL}, "node", "nodejs"},
	{"perl", {"pl", NULL}, NULL, "perl"},
	{"java", {NULL}, NULL, "java"},
	{"go", {"golang", NULL}, NULL, "go"},
	{"rust", {"rs", NULL}, NULL, "rust"},
	{"ruby", {"ruby3", "rb", NULL}, NULL, "ruby"},
	{"lua", {NULL}, NULL, "lua"},
	{"php", {NULL}, NULL, "php"},
	{"pascal", {"freepascal", "pp", "pas", NULL}, NULL, "pascal"},
	{"fortran", {"f90", NULL}, "gcc", "fortran"},
};
#define NRT (sizeof runtimes / sizeof runtimes[0])

const pd_runtime *pd_piston_runtimes(size_t *n)
{
	*n = NRT;
	return runtimes;
}

const pd_runtime *pd_piston_runtime_of(const char *paddock_language)
{
	for (size_t i = 0; i < NRT; i++)
		if (!strcmp(runtimes[i].paddock, paddock_language))
			return &runtimes[i];
	return NULL;
}

const pd_runtime *pd_piston_match(const char *language, const char *range)
{
	/* paddock has one version of each language, so "the newest that matches" is that one */
	for (size_t i = 0; i < NRT; i++) {
		const pd_runtime *rt = &runtimes[i];
		bool named = !strcmp(rt->language, language);
		for (int a = 0; !named && rt->aliases[a]; a++)
			named = !strcmp(rt->aliases[a], language);
		if (named && pd_semver_satisfies(pd_language_version(pd_language_find(rt->paddock)), range) == 1)
			return rt;
	}
	return NULL;
}

/* ---- versions, asked of the toolchains ------------------------------------------------------- */

#define MAX_LANG 64

static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t probe_cv = PTHREAD_COND_INITIALIZER;
static enum { PROBE_NONE, PROBE_RUNNING, PROBE_DONE } probe_state;
static char versions[MAX_LANG][32]; /* "" = not probed: the table's */
static char fallback[MAX_LANG][32];

/* The first d+.d+[.d+] in text, as MAJOR.MINOR.PATCH; false if there is none. */
static bool version_in(const char *text, char *out, size_t len)
{
	for (const char *p = text; *p; p++) {
		if (!isdigit((unsigned char)*p) || (p > text && isdigit((unsigned char)p[-1])))
			continue;
		long v[3] = {0, 0, 0};
		int n = 0;
		const char *q = p;
		while (n < 3 && isdigit((unsigned char)*q)) {
			char *end;
			v[n++] = strtol(q, &end, 10);
			q = end;
			if (*q != '.' || !isdigit((unsigned char)q[1]))
				break;
			q++;
		}
		if (n >= 2) {
			snprintf(out, len, "%ld.%ld.%ld", v[0], v[1], v[2]);
			return true;
		}
	}
	return false;
}

static bool find_program(const char *name, char *path, size_t len)
{
	static const char *const bins[] = {"/usr/local/bin", "/usr/bin", "/bin", NULL};
	for (int b = 0; bins[b]; b++) {
		snprintf(path, len, "%s/%s", bins[b], name);
		if (access(path, X_OK) == 0)
			return true;
	}
	return false;
}

typedef struct probe {
	size_t lang; /* first language using this program */
	pid_t pid;
	int fd;
	char out[512];
	size_t len;
} probe;

/* Runs every toolchain's version command at once and reads their answers, for at most 10 s. */
static void *probe_main(void *arg)
{
	(void)arg;
	size_t n;
	const pd_language *l = pd_languages(&n);
	probe pr[MAX_LANG];
	size_t np = 0;
	char *envp[] = {(char *)"PATH=/usr/local/bin:/usr/bin:/bin", (char *)"LANG=C", (char *)"HOME=/tmp", NULL};
	for (size_t i = 0; i < n && i < MAX_LANG; i++) {
		if (!l[i].requires || !l[i].probe)
			continue;
		bool dup = false;
		for (size_t k = 0; k < np && !dup; k++)
			dup = !strcmp(l[pr[k].lang].requires, l[i].requires);
		char path[256];
		if (dup || !find_program(l[i].requires, path, sizeof path))
			continue;
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			continue;
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_adddup2(&fa, p[1], 1);
		posix_spawn_file_actions_adddup2(&fa, p[1], 2);
		char *argv[] = {path, (char *)l[i].probe, NULL};
		pid_t pid;
		int rc = posix_spawn(&pid, path, &fa, NULL, argv, envp);
		posix_spawn_file_actions_destroy(&fa);
		close(p[1]);
		if (rc != 0) {
			close(p[0]);
			continue;
		}
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		pr[np++] = (probe){.lang = i, .pid = pid, .fd = p[0]};
	}
	uint64_t t0 = pd_now_us();
	for (;;) {
		struct pollfd pf[MAX_LANG];
		size_t open_ = 0, map[MAX_LANG];
		for (size_t k = 0; k < np; k++)
			if (pr[k].fd >= 0) {
				pf[open_] = (struct pollfd){.fd = pr[k].fd, .events = POLLIN};
				map[open_++] = k;
			}
		if (!open_)
			break;
		long left = 10000 - (long)((pd_now_us() - t0) / 1000);
		if (left <= 0)
			break;
		if (poll(pf, open_, (int)left) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < open_; i++) {
			if (!pf[i].revents)
				continue;
			probe *q = &pr[map[i]];
			char buf[256];
			ssize_t r = read(q->fd, buf, sizeof buf);
			if (r > 0) {
				size_t take = (size_t)r < sizeof q->out - 1 - q->len ? (size_t)r : sizeof q->out - 1 - q->len;
				memcpy(q->out + q->len, buf, take);
				q->len += take;
				q->out[q->len] = 0;
			} else if (r == 0 || errno != EAGAIN) {
				close(q->fd);
				q->fd = -1;
			}
		}
	}
	for (size_t k = 0; k < np; k++) {
		if (pr[k].fd >= 0) { /* a toolchain that hangs keeps the table's version */
			close(pr[k].fd);
			kill(pr[k].pid, SIGKILL);
			pr[k].len = 0;
		}
		while (waitpid(pr[k].pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	pthread_mutex_lock(&probe_mu);
	for (size_t k = 0; k < np; k++) {
		char v[32];
		if (!pr[k].len || !version_in(pr[k].out, v, sizeof v))
			continue;
		for (size_t i = 0; i < n && i < MAX_LANG; i++)
			if (l[i].requires && !strcmp(l[i].requires, l[pr[k].lang].requires))
				snprintf(versions[i], sizeof versions[i], "%s", v);
	}
	probe_state = PROBE_DONE;
	pthread_cond_broadcast(&probe_cv);
	pthread_mutex_unlock(&probe_mu);
	return NULL;
}

void pd_languages_probe(void)
{
	pthread_mutex_lock(&probe_mu);
	if (probe_state == PROBE_NONE) {
		pthread_t t;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		/* without the thread, the table's versions stand: the daemon still serves */
		probe_state = pthread_create(&t, &at, probe_main, NULL) == 0 ? PROBE_RUNNING : PROBE_DONE;
		pthread_attr_destroy(&at);
	}
	pthread_mutex_unlock(&probe_mu);
}

const char *pd_language_version(const pd_language *l)
{
	size_t n;
	const pd_language *all = pd_languages(&n);
	if (!l || l < all || l >= all + n || (size_t)(l - all) >= MAX_LANG)
		return "0.0.0";
	size_t i = (size_t)(l - all);
	pthread_mutex_lock(&probe_mu);
	/* only in the daemon's first moments: the probe is bounded (10 s) */
	while (probe_state == PROBE_RUNNING)
		pthread_cond_wait(&probe_cv, &probe_mu);
	const char *v = versions[i];
	if (!*v) {
		if (!fallback[i][0] && !version_in(l->version, fallback[i], sizeof fallback[i]))
			snprintf(fallback[i], sizeof fallback[i], "%s.0.0", l->version);
		v = fallback[i];
	}
	pthread_mutex_unlock(&probe_mu);
	return v;
}
