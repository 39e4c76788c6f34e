/* /metrics: the server's figures as Prometheus text exposition (version 0.0.4). The job and HTTP
 * counters are metrics.c's (pd_metrics, fed as jobs finish and responses go out); the queues and
 * the breaker are the scheduler's (pd_sched_metrics); the rest is read here when scraped: the
 * pools, network namespaces, stuck sandboxes, the host's memory and load, descriptors, the store,
 * the connections. */
#define _GNU_SOURCE
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pools' gauges and counters, one series per template. */
static void pools_fig(FILE *f, const pd_pool_stats *st, size_t n)
{
	static const char *const gauges[][2] = {{"ready", "READY sandboxes waiting"},
						{"in_use", "sandboxes acquired"},
						{"creating", "sandboxes being created"},
						{"reclaiming", "sandboxes waiting for teardown"},
						{"target", "READY sandboxes the pool aims for"}};
	for (size_t g = 0; g < 5; g++) {
		fprintf(f, "# HELP paddock_pool_%s %s, per template.\n# TYPE paddock_pool_%s gauge\n", gauges[g][0],
			gauges[g][1], gauges[g][0]);
		for (size_t i = 0; st && i < n; i++) {
			uint32_t v = g == 0 ? st[i].ready : g == 1 ? st[i].in_use : g == 2 ? st[i].creating
							   : g == 3 ? st[i].reclaiming : st[i].target;
			fprintf(f, "paddock_pool_%s{template=\"%s\"} %u\n", gauges[g][0], st[i].template_name, v);
		}
	}
	static const char *const counters[][2] = {
		{"acquires_total", "acquires"}, {"hits_total", "acquires served by a READY sandbox"},
		{"created_total", "sandboxes created"}, {"create_failures_total", "sandbox creations that failed"},
		{"destroyed_total", "sandboxes destroyed"}, {"expired_total", "sandboxes or sessions past their TTL"},
		{"forced_reclaims_total", "sandboxes reclaimed by force past a deadline"},
		{"residue_failures_total", "teardowns that left something behind"},
		{"resets_total", "released sandboxes reset for the next user instead of destroyed"},
		{"reset_refusals_total", "resets refused (network state or processes left): destroyed instead"},
		{"resets_kept_total", "resets that kept the untouched root (only /tmp, /work, /dev/shm and devpts new)"},
		{"resets_scratch_kept_total",
		 "resets that kept the root and also /tmp, /work, /dev/shm and devpts (the last user only read them)"}};
	for (size_t c = 0; c < 12; c++) {
		fprintf(f, "# HELP paddock_pool_%s Pool %s, per template.\n# TYPE paddock_pool_%s counter\n",
			counters[c][0], counters[c][1], counters[c][0]);
		for (size_t i = 0; st && i < n; i++) {
			uint64_t v = c == 0 ? st[i].acquires : c == 1 ? st[i].hits : c == 2 ? st[i].created
				     : c == 3 ? st[i].create_failures : c == 4 ? st[i].destroyed
				     : c == 5 ? st[i].expired : c == 6 ? st[i].forced_reclaims
				     : c == 7 ? st[i].residue_failures : c == 8 ? st[i].resets
				     : c == 9 ? st[i].reset_refusals : c == 10 ? st[i].resets_kept
				     : st[i].resets_scratch_kept;
			fprintf(f, "paddock_pool_%s{template=\"%s\"} %llu\n", counters[c][0], st[i].template_name,
				(unsigned long long)v);
		}
	}
}

/* The host as the daemon sees it: network namespaces, stuck sandboxes, memory, load, descriptors,
 * and the session steps cancelled for clients that left. */
static void host_fig(FILE *f, pd_server *s)
{
	pd_netns_stats ns;
	pd_ctx_netns_stats(s->ctx, &ns);
	fprintf(f, "# HELP paddock_netns_total Network namespaces: created, reused (proven untouched), "
		   "discarded (used, or not provably fresh).\n# TYPE paddock_netns_total counter\n"
		   "paddock_netns_total{outcome=\"created\"} %llu\npaddock_netns_total{outcome=\"reused\"} %llu\n"
		   "paddock_netns_total{outcome=\"discarded\"} %llu\n"
		   "# HELP paddock_netns_idle Network namespaces kept for reuse.\n# TYPE paddock_netns_idle gauge\n"
		   "paddock_netns_idle %llu\n",
		(unsigned long long)ns.created, (unsigned long long)ns.reused, (unsigned long long)ns.discarded,
		(unsigned long long)ns.idle);
	uint64_t stuck = 0, stuck_total = 0;
	pd_ctx_stuck(s->ctx, &stuck, &stuck_total);
	fprintf(f, "# HELP paddock_sandboxes_stuck Sandboxes whose teardown waits on a task that outlived SIGKILL.\n"
		   "# TYPE paddock_sandboxes_stuck gauge\npaddock_sandboxes_stuck %llu\n",
		(unsigned long long)stuck);
	char mi[4096];
	if (pd_read_file("/proc/meminfo", mi, sizeof mi) > 0) {
		char *a = strstr(mi, "MemAvailable:"), *t = strstr(mi, "MemTotal:");
		if (a && t)
			fprintf(f, "# HELP paddock_host_memory_bytes Host memory.\n# TYPE paddock_host_memory_bytes gauge\n"
				   "paddock_host_memory_bytes{kind=\"total\"} %llu\npaddock_host_memory_bytes{kind=\"available\"} %llu\n",
				strtoull(t + 9, NULL, 10) * 1024, strtoull(a + 13, NULL, 10) * 1024);
	}
	double l1 = 0;
	if (pd_read_file("/proc/loadavg", mi, sizeof mi) > 0)
		l1 = strtod(mi, NULL);
	fprintf(f, "# HELP paddock_host_load1 Host load average (1 min).\n# TYPE paddock_host_load1 gauge\n"
		   "paddock_host_load1 %.2f\n", l1);
	fprintf(f, "# HELP paddock_fds_open File descriptors the daemon holds.\n# TYPE paddock_fds_open gauge\n"
		   "paddock_fds_open %ld\n# HELP paddock_fds_limit Its RLIMIT_NOFILE (0: none).\n"
		   "# TYPE paddock_fds_limit gauge\npaddock_fds_limit %llu\n"
		   "# HELP paddock_fd_refusals_total Runs and sessions refused to keep descriptors for connections.\n"
		   "# TYPE paddock_fd_refusals_total counter\npaddock_fd_refusals_total %llu\n",
		conns_fds_open(), (unsigned long long)s->fd_limit,
		(unsigned long long)__atomic_load_n(&s->fd_refused, __ATOMIC_RELAXED));
	fprintf(f, "# HELP paddock_session_steps_cancelled_total Session steps killed because their client left.\n"
		   "# TYPE paddock_session_steps_cancelled_total counter\npaddock_session_steps_cancelled_total %llu\n",
		(unsigned long long)__atomic_load_n(&s->steps_cancelled, __ATOMIC_RELAXED));
}

/* The store: its write failures and pruning, the review queue, the risk list and the caps, its size. */
static void store_fig(FILE *f, pd_server *s)
{
	uint64_t sf = 0, so = 0;
	pd_store_failures(s->store, &sf, &so);
	fprintf(f, "# HELP paddock_store_write_failures_total Results that could not be recorded (and were not answered as results).\n"
		   "# TYPE paddock_store_write_failures_total counter\n"
		   "paddock_store_write_failures_total{reason=\"disk_full\"} %llu\n"
		   "paddock_store_write_failures_total{reason=\"other\"} %llu\n"
		   "# HELP paddock_store_pruned_records_total Oldest records deleted to keep the store under its cap.\n"
		   "# TYPE paddock_store_pruned_records_total counter\n"
		   "paddock_store_pruned_records_total %llu\n",
		(unsigned long long)sf, (unsigned long long)so, (unsigned long long)pd_store_pruned(s->store));
	uint64_t rp = 0, rc = 0, rd = 0;
	pd_store_review_stats(s->store, &rp, &rc, &rd);
	fprintf(f, "# HELP paddock_review_queue_size Attempts waiting in the review queue.\n"
		   "# TYPE paddock_review_queue_size gauge\npaddock_review_queue_size %llu\n"
		   "# HELP paddock_review_outcomes_total Review items decided, by outcome.\n"
		   "# TYPE paddock_review_outcomes_total counter\n"
		   "paddock_review_outcomes_total{outcome=\"confirmed\"} %llu\n"
		   "paddock_review_outcomes_total{outcome=\"dismissed\"} %llu\n",
		(unsigned long long)rp, (unsigned long long)rc, (unsigned long long)rd);
	pd_err re = {0};
	json_t *risk = pd_store_risk_list(s->store, &re);
	fprintf(f, "# HELP paddock_risk_problems Problems on the risk list (confirmed hacks: full audit, no egress).\n"
		   "# TYPE paddock_risk_problems gauge\npaddock_risk_problems %zu\n"
		   "# HELP paddock_submission_cap_refusals_total Judged submissions refused by --problem-submit-max.\n"
		   "# TYPE paddock_submission_cap_refusals_total counter\npaddock_submission_cap_refusals_total %llu\n",
		json_array_size(risk), (unsigned long long)pd_caps_refused(s->caps));
	json_decref(risk);
	uint64_t used = 0, cap = 0;
	pd_store_size(s->store, &used, &cap);
	fprintf(f, "# HELP paddock_store_bytes Bytes the results store's records use.\n"
		   "# TYPE paddock_store_bytes gauge\npaddock_store_bytes %llu\n"
		   "# HELP paddock_store_cap_bytes Its cap (--store-max; 0: none).\n"
		   "# TYPE paddock_store_cap_bytes gauge\npaddock_store_cap_bytes %llu\n",
		(unsigned long long)used, (unsigned long long)cap);
}

/* The HTTP connections: open now, and refused at accept by each limit. */
static void conns_fig(FILE *f, pd_server *s)
{
	fprintf(f, "# HELP paddock_connections_open HTTP connections open now.\n"
		   "# TYPE paddock_connections_open gauge\npaddock_connections_open %u\n"
		   "# HELP paddock_connections_refused_total Connections closed at accept, by the limit that refused them.\n"
		   "# TYPE paddock_connections_refused_total counter\n"
		   "paddock_connections_refused_total{reason=\"max_connections\"} %llu\n"
		   "paddock_connections_refused_total{reason=\"max_connections_per_ip\"} %llu\n",
		__atomic_load_n(&s->conns_open, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&s->refused_limit, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&s->refused_per_ip, __ATOMIC_RELAXED));
}

/* The judge's verdicts, audit events, errors and cache. */
static void judge_fig(FILE *f, pd_judge *judge)
{
	pd_judge_stats js;
	pd_judge_stats_get(judge, &js);
	fprintf(f, "# HELP paddock_judged_total Judged attempts, by the verdict's output level.\n"
		   "# TYPE paddock_judged_total counter\n");
	for (int l = 0; l < 4; l++)
		fprintf(f, "paddock_judged_total{output=\"%s\"} %llu\n", pd_level_name((pd_level)l),
			(unsigned long long)js.by_output[l]);
	fprintf(f, "# HELP paddock_judged_process_total Judged attempts, by the verdict's process level.\n"
		   "# TYPE paddock_judged_process_total counter\n");
	static const pd_level pl[] = {PD_LV_PASS, PD_LV_FAIL, PD_LV_NOT_AUDITED};
	for (int l = 0; l < 3; l++)
		fprintf(f, "paddock_judged_process_total{process=\"%s\"} %llu\n", pd_level_name(pl[l]),
			(unsigned long long)js.by_process[pl[l]]);
	fprintf(f, "# HELP paddock_judge_audit_events_total Audit events of judged candidates' test runs, by kind.\n"
		   "# TYPE paddock_judge_audit_events_total counter\n");
	for (int k = 0; k < PD_AK_N; k++)
		fprintf(f, "paddock_judge_audit_events_total{kind=\"%s\"} %llu\n", pd_audit_kind_name((pd_audit_kind)k),
			(unsigned long long)js.audit_kinds[k]);
	fprintf(f, "# HELP paddock_judge_errors_total Checker or interactor failures (retries included).\n"
		   "# TYPE paddock_judge_errors_total counter\npaddock_judge_errors_total %llu\n"
		   "# HELP paddock_judge_checker_cpu_seconds_total CPU time of checker programs and interactors.\n"
		   "# TYPE paddock_judge_checker_cpu_seconds_total counter\npaddock_judge_checker_cpu_seconds_total %.3f\n"
		   "# HELP paddock_judge_cache_total Fingerprint cache lookups, by result.\n"
		   "# TYPE paddock_judge_cache_total counter\n"
		   "paddock_judge_cache_total{result=\"hit\"} %llu\npaddock_judge_cache_total{result=\"miss\"} %llu\n"
		   "# HELP paddock_judge_cache_entries Verdicts the cache holds.\n"
		   "# TYPE paddock_judge_cache_entries gauge\npaddock_judge_cache_entries %llu\n"
		   "# HELP paddock_judge_cache_cpu_saved_seconds_total CPU time the cache's hits did not spend again.\n"
		   "# TYPE paddock_judge_cache_cpu_saved_seconds_total counter\npaddock_judge_cache_cpu_saved_seconds_total %.3f\n",
		(unsigned long long)js.judge_errors, (double)js.checker_ms / 1000.0,
		(unsigned long long)js.cache_hits, (unsigned long long)js.cache_misses,
		(unsigned long long)js.cache_entries, (double)js.cpu_ms_saved / 1000.0);
}

/* What is read when scraped, beside the scheduler's and metrics.c's figures. */
static char *scraped_metrics(pd_server *s)
{
	size_t n;
	pd_pool_stats *st = pd_pools_stats(s->pools, &n);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f) {
		free(st);
		return NULL;
	}
	pools_fig(f, st, n);
	host_fig(f, s);
	store_fig(f, s);
	conns_fig(f, s);
	if (s->judge)
		judge_fig(f, s->judge);
	fclose(f);
	free(st);
	return out;
}

char *prometheus_text(pd_server *s)
{
	char *sm = pd_sched_metrics(s->sched), *pm = scraped_metrics(s);
	size_t nst = 0;
	pd_pool_stats *st = pd_pools_stats(s->pools, &nst);
	char *om = pd_ops_render(pd_metrics_ops(s->metrics), st, nst); /* server/opsmetrics.c */
	free(st);
	char *cm = s->cluster ? pd_cluster_metrics(s->cluster) : NULL;
	char *extra = NULL;
	if (asprintf(&extra, "%s%s%s%s", sm ? sm : "", pm ? pm : "", om ? om : "", cm ? cm : "") < 0)
		extra = NULL;
	free(sm);
	free(pm);
	free(om);
	free(cm);
	char *text = pd_metrics_render(s->metrics, extra);
	free(extra);
	return text;
}
