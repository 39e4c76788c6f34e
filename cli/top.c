/* paddock top [--url URL] [--once] [--interval SECS]
 *
 * A live view of a running daemon, read from its /metrics: the workers and the queue by priority,
 * requests per second, the pools per template (ready, in use, target, hit rate), latency
 * percentiles of the queue wait, the set-up and the run, and the counts of results, failure classes
 * and verdicts. Rates and percentiles are over the last interval (two scrapes); where the interval
 * saw nothing, percentiles fall back to everything since the daemon started and say so.
 *
 * On a terminal the frame is redrawn in place every interval until 'q' or Ctrl-C; otherwise frames
 * follow each other (like top -b). --once prints one frame (two scrapes an interval apart, or one
 * with --interval 0) and exits: 0, or 2 when the daemon cannot be read. */
#define _GNU_SOURCE
#include "cli.h"
#include "httpc.h"
#include "promtext.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One scrape of url's /metrics into *set; -1 with err filled. */
static int scrape(const char *url, prom_set *set, char *err, size_t errlen)
{
	httpc_resp r = {0};
	if (httpc_call(url, "GET", "/metrics", NULL, 0, NULL, &r, err, errlen) < 0)
		return -1;
	int rc = 0;
	if (r.status != 200) {
		snprintf(err, errlen, "%s/metrics answered HTTP %d%s", url, r.status,
			 r.status == 401 ? " (set PADDOCK_TOKEN)" : "");
		rc = -1;
	} else if (prom_parse(r.body, r.len, set) < 0) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	} else if (set->n == 0) {
		snprintf(err, errlen, "%s/metrics holds no samples: is it a paddock daemon?", url);
		prom_free(set);
		rc = -1;
	}
	free(r.body);
	return rc;
}

/* cur - prev of a counter (the whole value when there is no previous scrape or it went down). */
static double delta(const prom_set *cur, const prom_set *prev, const char *name, const char *key, const char *val)
{
	double c = prom_sum(cur, name, key, val, NULL);
	if (!prev)
		return c;
	double p = prom_sum(prev, name, key, val, NULL);
	return c >= p ? c - p : c;
}

static void human_bytes(double b, char *buf, size_t n)
{
	const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int i = 0;
	while (b >= 1024 && i < 4) {
		b /= 1024;
		i++;
	}
	snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

/* "name count (+delta)" for each label value of name that is non-zero, on one line. */
static void counts_line(FILE *o, const char *title, const prom_set *cur, const prom_set *prev, const char *name,
			const char *key)
{
	fprintf(o, "%-10s", title);
	bool any = false;
	for (size_t i = 0; i < cur->n; i++) {
		const prom_sample *s = &cur->s[i];
		const char *v = strcmp(s->name, name) ? NULL : prom_label_of(s, key);
		if (!v || s->value == 0)
			continue;
		bool seen = false; /* a label value once, however many series carry it */
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(cur->s[j].name, name) && prom_label_of(&cur->s[j], key) &&
			       !strcmp(prom_label_of(&cur->s[j], key), v);
		if (seen)
			continue;
		double total = prom_sum(cur, name, key, v, NULL), d = delta(cur, prev, name, key, v);
		fprintf(o, "  %s %.0f", v, total);
		if (prev && d > 0)
			fprintf(o, " (+%.0f)", d);
		any = true;
	}
	fputs(any ? "\n" : "  none yet\n", o);
}

static void latency_row(FILE *o, const char *title, const prom_set *cur, const prom_set *prev, const char *base)
{
	double n = 0;
	const prom_set *from = prev;
	double p50 = prom_quantile(cur, from, base, NULL, NULL, 0.5, &n);
	const char *span = prev ? "last interval" : "since start";
	if (!(n > 0)) { /* nothing in the interval: since the start */
		from = NULL;
		p50 = prom_quantile(cur, NULL, base, NULL, NULL, 0.5, &n);
		span = "since start";
	}
	if (!(n > 0)) {
		fprintf(o, "  %-8s %9s %9s %9s   no observations\n", title, "-", "-", "-");
		return;
	}
	double p90 = prom_quantile(cur, from, base, NULL, NULL, 0.9, NULL);
	double p99 = prom_quantile(cur, from, base, NULL, NULL, 0.99, NULL);
	fprintf(o, "  %-8s %9.1f %9.1f %9.1f   %.0f obs, %s\n", title, p50 * 1000, p90 * 1000, p99 * 1000, n, span);
}

/* The templates named by paddock_pool_ready, in the daemon's order. */
static size_t templates(const prom_set *cur, const char **out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < cur->n && n < max; i++) {
		const char *t = strcmp(cur->s[i].name, "paddock_pool_ready") ? NULL : prom_label_of(&cur->s[i], "template");
		if (t)
			out[n++] = t;
	}
	return n;
}

static void frame(FILE *o, const char *url, const prom_set *cur, const prom_set *prev, double dt)
{
	time_t t = time(NULL);
	char when[32];
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
	fprintf(o, "paddock top  %s  %s", url, when);
	if (prev)
		fprintf(o, "  (rates over %.1f s)", dt);
	fputc('\n', o);

	bool have_breaker;
	double breaker = prom_sum(cur, "paddock_breaker_open", NULL, NULL, &have_breaker);
	fprintf(o, "workers %.0f/%.0f busy   queue high %.0f normal %.0f low %.0f   connections %.0f   breaker %s\n",
		prom_sum(cur, "paddock_workers_busy", NULL, NULL, NULL), prom_sum(cur, "paddock_workers", NULL, NULL, NULL),
		prom_sum(cur, "paddock_queue_length", "priority", "high", NULL),
		prom_sum(cur, "paddock_queue_length", "priority", "normal", NULL),
		prom_sum(cur, "paddock_queue_length", "priority", "low", NULL),
		prom_sum(cur, "paddock_connections_open", NULL, NULL, NULL),
		!have_breaker ? "-" : breaker > 0 ? "OPEN" : "closed");
	if (prev && dt > 0)
		fprintf(o, "requests %.1f/s   jobs %.1f/s   refused %.1f/s\n",
			delta(cur, prev, "paddock_http_responses_total", NULL, NULL) / dt,
			delta(cur, prev, "paddock_attempts_total", NULL, NULL) / dt,
			delta(cur, prev, "paddock_refused_total", NULL, NULL) / dt);
	else
		fprintf(o, "requests %.0f   jobs %.0f   refused %.0f (since start)\n",
			prom_sum(cur, "paddock_http_responses_total", NULL, NULL, NULL),
			prom_sum(cur, "paddock_attempts_total", NULL, NULL, NULL),
			prom_sum(cur, "paddock_refused_total", NULL, NULL, NULL));
	char avail[32], total[32];
	human_bytes(prom_sum(cur, "paddock_host_memory_bytes", "kind", "available", NULL), avail, sizeof avail);
	human_bytes(prom_sum(cur, "paddock_host_memory_bytes", "kind", "total", NULL), total, sizeof total);
	fprintf(o, "host memory %s available of %s   load %.2f   stuck sandboxes %.0f\n\n", avail, total,
		prom_sum(cur, "paddock_host_load1", NULL, NULL, NULL),
		prom_sum(cur, "paddock_sandboxes_stuck", NULL, NULL, NULL));

	fprintf(o, "%-16s %6s %7s %7s %9s %7s %7s %9s\n", "TEMPLATE", "READY", "IN_USE", "TARGET", "CREATING", "HIT%",
		"UTIL%", "ACQUIRE/s");
	const char *tpl[256];
	size_t nt = templates(cur, tpl, 256);
	for (size_t i = 0; i < nt; i++) {
		double acq = delta(cur, prev, "paddock_pool_acquires_total", "template", tpl[i]);
		double hits = delta(cur, prev, "paddock_pool_hits_total", "template", tpl[i]);
		if (!(acq > 0)) { /* no acquires in the interval: the hit rate since the start */
			acq = prom_sum(cur, "paddock_pool_acquires_total", "template", tpl[i], NULL);
			hits = prom_sum(cur, "paddock_pool_hits_total", "template", tpl[i], NULL);
		}
		char hit[16] = "-", util[16] = "-", rate[16] = "-";
		if (acq > 0)
			snprintf(hit, sizeof hit, "%.1f", 100 * hits / acq);
		bool have_util;
		double u = prom_sum(cur, "paddock_pool_utilisation", "template", tpl[i], &have_util);
		if (have_util)
			snprintf(util, sizeof util, "%.1f", 100 * u);
		if (prev && dt > 0)
			snprintf(rate, sizeof rate, "%.1f",
				 delta(cur, prev, "paddock_pool_acquires_total", "template", tpl[i]) / dt);
		fprintf(o, "%-16.16s %6.0f %7.0f %7.0f %9.0f %7s %7s %9s\n", tpl[i],
			prom_sum(cur, "paddock_pool_ready", "template", tpl[i], NULL),
			prom_sum(cur, "paddock_pool_in_use", "template", tpl[i], NULL),
			prom_sum(cur, "paddock_pool_target", "template", tpl[i], NULL),
			prom_sum(cur, "paddock_pool_creating", "template", tpl[i], NULL), hit, util, rate);
	}
	if (!nt)
		fputs("  (no pools)\n", o);

	fprintf(o, "\nLATENCY ms %9s %9s %9s\n", "p50", "p90", "p99");
	latency_row(o, "queue", cur, prev, "paddock_queue_seconds");
	latency_row(o, "setup", cur, prev, "paddock_setup_seconds");
	latency_row(o, "run", cur, prev, "paddock_exec_seconds");
	fputc('\n', o);
	counts_line(o, "RESULTS", cur, prev, "paddock_jobs_total", "status");
	counts_line(o, "FAILURES", cur, prev, "paddock_failures_total", "class");
	counts_line(o, "OUTPUT", cur, prev, "paddock_judged_total", "output");
	counts_line(o, "PROCESS", cur, prev, "paddock_process_verdicts_total", "process");
	counts_line(o, "REFUSED", cur, prev, "paddock_refused_total", "reason");
	if (cur->bad)
		fprintf(o, "(%zu lines of /metrics were not understood)\n", cur->bad);
}

/* Waits up to secs for 'q' on a terminal's stdin (or a signal); true when the user asked to quit. */
static bool wait_or_quit(double secs, bool keys)
{
	double end = now_s() + secs;
	while (!stop) {
		double left = end - now_s();
		if (left <= 0)
			return false;
		struct pollfd p = {.fd = 0, .events = POLLIN};
		int r = poll(&p, keys ? 1 : 0, (int)(left * 1000) + 1);
		if (r > 0) {
			char c;
			ssize_t k = read(0, &c, 1);
			if (k == 1 && (c == 'q' || c == 'Q'))
				return true;
			if (k == 0)
				keys = false; /* stdin closed: only time and signals end the wait */
		}
	}
	return true;
}

static void usage(FILE *f)
{
	fputs("usage: paddock top [--url URL] [--once] [--interval SECS]\n"
	      "\n"
	      "A live view of a running daemon from its /metrics: workers, queue by priority, requests/s,\n"
	      "pools per template (ready, in use, target, hit rate), latency percentiles, results,\n"
	      "failure classes and verdicts. 'q' or Ctrl-C quits.\n"
	      "\n"
	      "  --url URL        the daemon (default: $PADDOCK_URL, else http://127.0.0.1:8080);\n"
	      "                   $PADDOCK_TOKEN is sent as its bearer token\n"
	      "  --once           print one frame and exit (0, or 2 when the daemon cannot be read)\n"
	      "  --interval SECS  seconds between scrapes; rates and percentiles are over it; with\n"
	      "                   --once, 0 prints totals since the daemon started (default: 1)\n",
	      f);
}

/* --once: one frame (with rates over interval when it is above 0); the exit status. */
static int top_once(const char *url, double interval)
{
	char err[512];
	prom_set prev = {0}, cur = {0};
	if (scrape(url, &cur, err, sizeof err) < 0) {
		cli_error("top: %s", err);
		return EXIT_PADDOCK_FAILED;
	}
	double t0 = now_s(), dt = 0;
	if (interval > 0) {
		prev = cur;
		memset(&cur, 0, sizeof cur);
		struct timespec ts = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		if (scrape(url, &cur, err, sizeof err) < 0) {
			prom_free(&prev);
			cli_error("top: %s", err);
			return EXIT_PADDOCK_FAILED;
		}
		dt = now_s() - t0;
	}
	frame(stdout, url, &cur, interval > 0 ? &prev : NULL, dt);
	prom_free(&prev);
	prom_free(&cur);
	return fflush(stdout) ? EXIT_PADDOCK_FAILED : 0;
}

/* Frame after frame every interval until q, Ctrl-C or SIGTERM; the terminal as it was after. */
static int top_live(const char *url, double interval)
{
	char err[512];
	prom_set prev = {0}, cur = {0};
	bool tty = isatty(1), keys = isatty(0);
	struct termios saved;
	if (keys && tcgetattr(0, &saved) == 0) {
		struct termios raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &raw);
	} else {
		keys = false;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (tty)
		fputs("\033[?25l", stdout); /* the cursor hidden while frames are drawn */
	double last = 0;
	bool have_prev = false;
	while (!stop) {
		double t = now_s();
		prom_free(&cur);
		int rc = scrape(url, &cur, err, sizeof err);
		if (tty)
			fputs("\033[H\033[2J", stdout);
		if (rc < 0) {
			printf("paddock top  %s\n\ncannot read the daemon: %s\n(retrying every %.1f s; q quits)\n", url, err,
			       interval);
			prom_free(&prev);
			have_prev = false;
		} else {
			frame(stdout, url, &cur, have_prev ? &prev : NULL, t - last);
			prom_free(&prev);
			prev = cur;
			memset(&cur, 0, sizeof cur);
			have_prev = true;
			last = t;
		}
		if (!tty)
			fputc('\n', stdout);
		fflush(stdout);
		if (wait_or_quit(interval, keys))
			break;
	}
	if (tty)
		fputs("\033[?25h", stdout);
	if (keys)
		tcsetattr(0, TCSANOW, &saved);
	prom_free(&prev);
	prom_free(&cur);
	return 0;
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {{"url", required_argument, 0, 'u'},
					     {"once", no_argument, 0, '1'},
					     {"interval", required_argument, 0, 'i'},
					     {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	const char *url = getenv("PADDOCK_URL");
	if (!url || !*url)
		url = "http://127.0.0.1:8080";
	bool once = false;
	double interval = 1;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			url = optarg;
			break;
		case '1':
			once = true;
			break;
		case 'i':
			if (!cli_decimal("--interval", optarg, 0, 3600, &interval))
				return EXIT_USAGE;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return cli_bad_option("top", "top", NULL, c, argv, opts);
		}
	}
	if (!cli_no_operand("top", argc, argv, optind))
		return EXIT_USAGE;
	if (!once && interval < 0.1) {
		cli_error("top: --interval must be at least 0.1 without --once");
		return EXIT_USAGE;
	}
	return once ? top_once(url, interval) : top_live(url, interval);
}
