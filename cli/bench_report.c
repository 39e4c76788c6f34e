/* paddock bench: the report, as a table or as one JSON object. */
#define _GNU_SOURCE
#include "bench_case.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>


/* A right-aligned number, or a dash (three bytes of UTF-8, one column) when there is none. */
static void cell_num(int width, int prec, double v, bool have)
{
	if (have)
		printf(" %*.*f", width, prec, v);
	else
		printf(" %*s—", width - 1, "");
}

static bool have_tp(const bench_case *c, int slot)
{
	return c && c->tp[slot].done && c->tp[slot].ok;
}

static double ratio(const bench_case *c, const bench_case *base, int slot)
{
	return c->tp[slot].ops_s / base->tp[slot].ops_s;
}

static void print_residue(const pool_phase *pp)
{
	if (!pp->residue_failures && !bench_leftovers_bad(&pp->left))
		printf("residue: clean");
	else
		printf("residue: %" PRIu64
		       " teardowns not clean, %ld processes left in our uid slots, "
		       "%ld cgroups left",
		       pp->residue_failures, pp->left.procs, pp->left.cgroups);
	if (pp->left.others > 0)
		printf(" (%ld processes of other paddock users in the sandbox uid range: not ours)",
		       pp->left.others);
}

/* The notes of the pool and audit rows: what the table's columns cannot say. */
static void print_case_notes(const bench_case *c, const bench_case *cases, size_t ncases,
			     const bench_case *floor_c, const bench_case *bwrap_c,
			     uint64_t duration_ms)
{
	const pool_phase *pl = &c->pool[0];
	int last = MAX_WORKERS - 1;
	/* issue 42's targets beside their figures */
	if (!strcmp(c->key, "cli") && have_tp(c, last)) {
		printf("  cli %dw:", MAX_WORKERS);
		if (have_tp(bwrap_c, last))
			printf(" %.2fx bwrap's throughput (issue 42 target >= 1.5x);", ratio(c, bwrap_c, last));
		printf(" %.2f ms CPU per exec", c->tp[0].cpu_ms_op);
		if (bwrap_c && bwrap_c->tp[0].done && bwrap_c->tp[0].cpu_ms_op > 0)
			printf(" = %.2fx bwrap's %.2f ms (bench --guard keeps this ratio)",
			       c->tp[0].cpu_ms_op / bwrap_c->tp[0].cpu_ms_op, bwrap_c->tp[0].cpu_ms_op);
		printf("\n");
	}
	if (c->kind == &bench_kind_pool_exec && c->lat_done) {
		printf("  %s: p50 %.2f ms", c->key, c->lat.p50);
		if (floor_c->lat_done && floor_c->lat.p50 > 0)
			printf(" = %.2fx the floor's p50 (%.2f ms; issue 42 target <= 1.15x)",
			       c->lat.p50 / floor_c->lat.p50, floor_c->lat.p50);
		printf("\n");
	}
	if (c->kind == &bench_kind_pool_exec && pl->done) {
		printf(
		    "  %s: pool hits %" PRIu64 "/%" PRIu64 " (%.1f%%; a miss is a create on the "
		    "request path);\n    each acquire waited, untimed, for a full pool and an idle "
		    "reclaimer; ",
		    c->key, pl->hits, pl->acquires,
		    pl->acquires ? 100.0 * (double)pl->hits / (double)pl->acquires : 0.0);
		print_residue(pl);
		printf("\n");
	}
	for (int s = 0; c->kind == &bench_kind_pool_tp && s < MAX_WORKERS; s++) {
		const pool_phase *pp = &c->pool[1 + s];
		if (!pp->done)
			continue;
		printf("  %s %dw: pool hits %" PRIu64 "/%" PRIu64 " (%.1f%%: %" PRIu64
		       " created on the request path); sandboxes created %" PRIu64 ", reset %" PRIu64
		       " (%" PRIu64 " resets refused);\n    reclaimer backlog %u when the requests "
		       "ended, drained in %.2f s (in the cell's time); ",
		       c->key, pp->workers, pp->hits, pp->acquires,
		       pp->acquires ? 100.0 * (double)pp->hits / (double)pp->acquires : 0.0,
		       pp->misses, pp->created, pp->resets, pp->reset_refusals, pp->backlog, pp->drain_s);
		print_residue(pp);
		printf("\n");
	}
	if (c->kind == &bench_kind_pool_tp && c->tp[MAX_WORKERS - 1].done && !c->bound_ms) {
		printf("  %s %dw: ", c->key, MAX_WORKERS);
		if (have_tp(c, last) && have_tp(floor_c, last))
			printf("%.3fx floor (issue 42 target >= 0.5x)", ratio(c, floor_c, last));
		else
			printf("no floor figure");
		if (have_tp(c, last) && have_tp(bwrap_c, last))
			printf(", %.2fx bwrap (issue 42 target >= 6x)", ratio(c, bwrap_c, last));
		if (duration_ms < 60000)
			printf("; the issue's figure is over 60 s: --duration 60");
		printf("\n");
	}
	/* the audit pair is reported on the audited row, against its unaudited twin */
	const bench_case *off = NULL;
	for (size_t i = 0; i < ncases; i++)
		if (cases[i].twin == c)
			off = &cases[i];
	if (c->kind == &bench_kind_audit && c->lat_done && c->so && c->so->audit) {
		printf("  %s: p50", c->key);
		if (off && off->lat_done && off->lat.p50 > 0)
			printf(" without audit %.2f ms, with %.2f ms: %+.2f ms (%+.1f%%; issue 42 target <= +5%%)",
			       off->lat.p50, c->lat.p50, c->lat.p50 - off->lat.p50,
			       100.0 * (c->lat.p50 - off->lat.p50) / off->lat.p50);
		else
			printf(" with audit %.2f ms (no unaudited run to compare)", c->lat.p50);
		if (c->audit_runs)
			printf(";\n    per audited run %.1f events reported (opens, execs, sends "
			       "outside the allowed paths), %.1f kept, %.1f calls stopped and answered",
			       (double)c->audit_reported / (double)c->audit_runs,
			       (double)c->audit_kept / (double)c->audit_runs,
			       (double)c->audit_notified / (double)c->audit_runs);
		printf("\n");
	}
	if (c->kind == &bench_kind_egress && c->lat_done && c->so && c->so->egress) {
		printf("  %s: p50", c->key);
		if (off && off->lat_done && off->lat.p50 > 0)
			printf(" loopback %.2f ms, allowlist (relay) %.2f ms: %+.2f ms (%+.1f%%)", off->lat.p50,
			       c->lat.p50, c->lat.p50 - off->lat.p50, 100.0 * (c->lat.p50 - off->lat.p50) / off->lat.p50);
		else
			printf(" allowlist %.2f ms (no loopback run to compare)", c->lat.p50);
		printf("\n");
	}
}

static const bench_case *case_by_key(const bench_case *cases, size_t ncases, const char *key)
{
	for (size_t i = 0; key && i < ncases; i++)
		if (cases[i].selected && !strcmp(cases[i].key, key))
			return &cases[i];
	return NULL;
}

/* The gvisor rows against their container row (and runsc do alone): p50 and the 2-worker
 * throughput as ratios, so that the tier's cost reads in one line. */
static void print_tier_notes(const bench_case *c, const bench_case *cases, size_t ncases, uint64_t duration_ms)
{
	int last = MAX_WORKERS - 1;
	if (c->lat_cut)
		printf("  %s: the latency phase stopped at its bound (%.0f s) after %zu operations\n", c->key,
		       (double)c->bound_ms / 1000.0, c->lat.n);
	const bench_case *p = case_by_key(cases, ncases, c->peer), *r = case_by_key(cases, ncases, c->runsc);
	if (p && c->lat_done && p->lat_done && p->lat.p50 > 0)
		printf("  %s: p50 container %.2f ms, gvisor %.2f ms: %.2fx the container's\n", c->key, p->lat.p50,
		       c->lat.p50, c->lat.p50 / p->lat.p50);
	if (r && c->lat_done && r->lat_done && r->lat.p50 > 0)
		printf("  %s: p50 runsc do alone %.2f ms: paddock's gvisor run %.2fx runsc do's (%+.2f ms)\n", c->key,
		       r->lat.p50, c->lat.p50 / r->lat.p50, c->lat.p50 - r->lat.p50);
	if (p && have_tp(c, last) && have_tp(p, last))
		printf("  %s %dw: container %.1f/s, gvisor %.1f/s: %.3gx the container's\n", c->key, MAX_WORKERS,
		       p->tp[last].ops_s, c->tp[last].ops_s, ratio(c, p, last));
	/* a pool cell lasts until its reclaimer is done: say what the requests alone saw */
	for (int sl = 0; c->kind == &bench_kind_pool_tp && c->bound_ms && duration_ms && sl < MAX_WORKERS; sl++)
		if (c->tp[sl].done && c->tp[sl].secs > 1.25 * (double)duration_ms / 1000.0)
			printf("  %s %dw: %" PRIu64 " requests served in the %g s of requests (%.1f/s), the rest of "
			       "the %.1f s was the reclaimer's teardowns\n",
			       c->key, c->tp[sl].workers, c->tp[sl].ok, (double)duration_ms / 1000.0,
			       (double)c->tp[sl].ok * 1000.0 / (double)duration_ms, c->tp[sl].secs);
}

static void print_density(const density_report *r)
{
	printf("\ndensity: %d idle sandboxes at once (pd_sandbox_create, default limits, "
	       "%d threads)\n",
	       r->asked, r->threads);
	if (r->limits[0])
		printf("  limits: %s\n", r->limits);
	if (!r->created) {
		printf("  no sandbox was created: %s\n", r->stopped[0] ? r->stopped : r->error);
		return;
	}
	double n = r->created;
	const meminfo *b = &r->before.m, *a = &r->after.m, *e = &r->end.m;
	printf("  create   %d in %.1f s: %.1f/s (p50 %.2f ms, p99 %.2f ms)%s%s\n", r->created,
	       r->create_s, n / r->create_s, r->create_p50, r->create_p99,
	       r->stopped[0] ? "; " : "", r->stopped);
	printf("  destroy  %d in %.1f s: %.1f/s (p50 %.2f ms, p99 %.2f ms)\n", r->created,
	       r->destroy_s, n / r->destroy_s, r->destroy_p50, r->destroy_p99);
	double total = (double)(b->avail - a->avail) / n;
	printf("  host memory per idle sandbox, KiB (whole-host /proc/meminfo, before and with all "
	       "%d,\n  read %.1f s after the last create%s):\n",
	       r->created, r->after.waited_s, r->after.settled ? ", settled" : ", still moving");
	printf("    total   %.1f (MemAvailable drop; MemFree drop %.1f)\n", total,
	       (double)(b->free - a->free) / n);
	if (r->sampled)
		printf("    user    %.1f Pss (Rss %.1f, private %.1f): mean of %d inits\n",
		       r->pss_kb, r->rss_kb, r->uss_kb, r->sampled);
	printf(
	    "    kernel  Slab %.1f (unreclaimable %.1f), PageTables %.1f, KernelStack %.1f, Percpu "
	    "%.1f, Shmem %.1f, Vmalloc %.1f\n",
	    (double)(a->slab - b->slab) / n, (double)(a->sunreclaim - b->sunreclaim) / n,
	    (double)(a->pagetables - b->pagetables) / n, (double)(a->kstack - b->kstack) / n,
	    (double)(a->percpu - b->percpu) / n, (double)(a->shmem - b->shmem) / n,
	    (double)(a->vmalloc - b->vmalloc) / n);
	if (r->memcg_n || r->own_memcg_ok) {
		/* memory cgroups see only what they are charged, but see it whatever else the host
		 * does: a steadier figure than meminfo's on a shared machine */
		printf("    memcg   %.1f charged to each sandbox's own memory cgroup (mean of %d)",
		       r->memcg_kb, r->memcg_n);
		if (r->own_memcg_ok) {
			double acc = r->memcg_kb + (double)r->own_memcg_kb / n;
			printf(" + %.1f to the bench's\n            (what clone3 and the cgroup "
			       "mkdirs allocate before init moves in) = %.1f accounted;\n"
			       "            %.1f of the total is charged to no memory cgroup",
			       (double)r->own_memcg_kb / n, acc, total - acc);
		}
		printf("\n");
	}
	printf("  issue 42 target <= 400 KiB per idle sandbox (at 2,400): %.1f KiB, %.2fx the target: %s\n",
	       total, total / 400.0, total <= 400.0 ? "met" : "not met");
	printf(
	    "  %.1f s after destroying all%s: MemAvailable %+.1f MiB from the start (%+.1f KiB per "
	    "sandbox);\n    Slab %+.1f MiB, Percpu %+.1f MiB\n",
	    r->end.waited_s, r->end.settled ? " (settled)" : " (still moving)",
	    (double)(e->avail - b->avail) / 1024.0, (double)(e->avail - b->avail) / n,
	    (double)(e->slab - b->slab) / 1024.0, (double)(e->percpu - b->percpu) / 1024.0);
	printf("  ");
	pool_phase pp;
	memset(&pp, 0, sizeof pp);
	pp.residue_failures = r->residue_failures;
	pp.left = r->left;
	print_residue(&pp);
	printf("\n");
	if (r->create_failures || r->residue_failures)
		printf("  %" PRIu64 " creates failed, %" PRIu64 " teardowns not clean; first: %s\n",
		       r->create_failures, r->residue_failures, r->error);
	printf("  whole-host figures: other work on the machine moves them too; run it twice\n");
}

void bench_print_table(const machine *m, const bench_case *cases, size_t ncases,
			const bench_case *floor_c, const bench_case *bwrap_c, int iterations,
			uint64_t duration_ms, const density_report *dens)
{
	int last = MAX_WORKERS - 1;
	bool rows = false;
	for (size_t i = 0; i < ncases; i++)
		rows |= cases[i].selected && !cases[i].kind->apart;
	printf("paddock bench — %ld CPU%s, Linux %s, cgroup %s", m->cpus, m->cpus == 1 ? "" : "s",
	       m->kernel, m->cgroup);
	if (rows)
		printf(", %d iterations, %g s per throughput cell", iterations,
		       (double)duration_ms / 1000.0);
	printf("\nload average at start: %.2f %.2f %.2f\n", m->load[0], m->load[1], m->load[2]);
	if (!rows) {
		if (dens && dens->ran)
			print_density(dens);
		return;
	}
	printf("\n%-32s %8s %8s %8s %9s %9s %11s %11s %9s %9s %6s\n", "case", "p50 ms", "p99 ms",
	       "mean ms", "ops/s 1w", "ops/s 2w", "x floor(2w)", "x bwrap(2w)", "cpu ms/op",
	       "host ms/op", "fails");
	for (size_t i = 0; i < ncases; i++) {
		const bench_case *c = &cases[i];
		if (!c->selected || c->kind->apart)
			continue;
		printf("%-32s", c->label);
		if (c->skip) {
			printf(" skipped\n");
			continue;
		}
		cell_num(8, 2, c->lat.p50, c->lat_done);
		cell_num(8, 2, c->lat.p99, c->lat_done);
		cell_num(8, 2, c->lat.mean, c->lat_done);
		cell_num(9, 0, c->tp[0].ops_s, c->tp[0].done);
		cell_num(9, 0, c->tp[last].ops_s, c->tp[last].done);
		bool fl = have_tp(c, last) && have_tp(floor_c, last);
		cell_num(11, 3, fl ? ratio(c, floor_c, last) : 0, fl);
		bool bw = c != floor_c && have_tp(c, last) && have_tp(bwrap_c, last);
		cell_num(11, 3, bw ? ratio(c, bwrap_c, last) : 0, bw);
		cell_num(9, 2, c->tp[0].cpu_ms_op, have_tp(c, 0) && c->tp[0].cpu_ms_op >= 0);
		cell_num(9, 2, c->tp[0].host_ms_op, have_tp(c, 0) && c->tp[0].host_ms_op >= 0);
		printf(" %5" PRIu64 "%s\n", c->failed, c->failed ? "!" : "");
	}
	printf("\n");
	for (size_t i = 0; i < ncases; i++) {
		const bench_case *c = &cases[i];
		if (!c->selected || c->kind->apart)
			continue;
		if (c->skip)
			printf("  %s: skipped: %s\n", c->key, c->skip);
		if (c->failed)
			printf("  %s: %" PRIu64 " failed operations; first: %s\n", c->key,
			       c->failed, c->error);
		for (int s = 0; s < MAX_WORKERS; s++) {
			const tp_cell *t = &c->tp[s];
			/* operations are never cut short: one stall stretches its cell */
			if (t->done && t->secs > 1.25 * (double)duration_ms / 1000.0)
				printf("  %s: the %d-worker cell ran %.1f s instead of %g s: its "
				       "slowest operation took %.0f ms\n",
				       c->key, t->workers, t->secs, (double)duration_ms / 1000.0,
				       t->max_op_ms);
		}
		if (c->parts_n && c->part_names[0]) {
			printf("  %s: mean", c->key);
			for (int p = 0; p < 3; p++)
				if (c->part_names[p])
					printf("%s %s %.2f ms", p ? " +" : "", c->part_names[p],
					       (double)c->part_us[p] / (double)c->parts_n / 1000.0);
			printf(" (latency phase)\n");
		}
		print_case_notes(c, cases, ncases, floor_c, bwrap_c, duration_ms);
		print_tier_notes(c, cases, ncases, duration_ms);
	}
	bool rusage = false;
	for (size_t i = 0; i < ncases; i++)
		rusage |= cases[i].tp[0].done && !cases[i].tp[0].cpu_from_perf;
	printf("  ops/s counts OK operations only; x floor, x bwrap: throughput with %d workers "
	       "over that row's.\n  cpu ms/op: %s; host ms/op: all CPUs\n  busy (/proc/stat: "
	       "adds kernel workers and anything else running); both from the 1-worker cell.\n",
	       MAX_WORKERS,
	       rusage ? "getrusage self+reaped children (misses orphaned descendants)"
		      : "task-clock of the bench and all it started");
	if (dens && dens->ran)
		print_density(dens);
}

static void json_str(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void json_num(double v, bool have)
{
	if (have)
		printf("%.6g", v);
	else
		fputs("null", stdout);
}

static void json_pool_phase(const pool_phase *pp, const char *phase)
{
	printf("{\"phase\":\"%s\",\"workers\":%d,\"acquires\":%" PRIu64 ",\"hits\":%" PRIu64
	       ",\"hit_rate\":",
	       phase, pp->workers, pp->acquires, pp->hits);
	json_num(pp->acquires ? (double)pp->hits / (double)pp->acquires : 0, pp->acquires > 0);
	printf(",\"created\":%" PRIu64 ",\"resets\":%" PRIu64 ",\"reset_refusals\":%" PRIu64
	       ",\"destroyed\":%" PRIu64 ",\"create_failures\":%" PRIu64
	       ",\"residue_failures\":%" PRIu64 ",\"forced_reclaims\":%" PRIu64
	       ",\"reclaim_backlog\":%u,\"drain_s\":%.4f,\"drain_timeout\":%s,"
	       "\"leftover_processes\":%ld,\"leftover_cgroups\":%ld,\"others_processes\":%ld,"
	       "\"residue_clean\":%s}",
	       pp->created, pp->resets, pp->reset_refusals, pp->destroyed, pp->create_failures,
	       pp->residue_failures, pp->forced, pp->backlog, pp->drain_s, pp->drain_timeout ? "true" : "false", pp->left.procs,
	       pp->left.cgroups, pp->left.others,
	       !pp->residue_failures && !bench_leftovers_bad(&pp->left) ? "true" : "false");
}

static void json_density(const density_report *r)
{
	if (!r || !r->ran) {
		fputs("null", stdout);
		return;
	}
	double n = r->created ? r->created : 1;
	const meminfo *b = &r->before.m, *a = &r->after.m, *e = &r->end.m;
	printf("{\"asked\":%d,\"created\":%d,\"threads\":%d,\"stopped\":", r->asked, r->created,
	       r->threads);
	json_str(r->stopped[0] ? r->stopped : NULL);
	printf(",\"limits\":");
	json_str(r->limits[0] ? r->limits : NULL);
	printf(",\"create_failures\":%" PRIu64 ",\"residue_failures\":%" PRIu64 ",\"first_error\":",
	       r->create_failures, r->residue_failures);
	json_str(r->error[0] ? r->error : NULL);
	bool have = r->created > 0;
	printf(",\"create\":{\"seconds\":");
	json_num(r->create_s, have);
	printf(",\"per_s\":");
	json_num(r->create_s > 0 ? r->created / r->create_s : 0, have && r->create_s > 0);
	printf(",\"p50_ms\":");
	json_num(r->create_p50, have);
	printf(",\"p99_ms\":");
	json_num(r->create_p99, have);
	printf("},\"destroy\":{\"seconds\":");
	json_num(r->destroy_s, have);
	printf(",\"per_s\":");
	json_num(r->destroy_s > 0 ? r->created / r->destroy_s : 0, have && r->destroy_s > 0);
	printf(",\"p50_ms\":");
	json_num(r->destroy_p50, have);
	printf(",\"p99_ms\":");
	json_num(r->destroy_p99, have);
	printf("},\"per_sandbox_kib\":{\"total_memavailable\":");
	json_num((double)(b->avail - a->avail) / n, have);
	printf(",\"memfree\":");
	json_num((double)(b->free - a->free) / n, have);
	printf(",\"user_pss\":");
	json_num(r->pss_kb, have && r->sampled);
	printf(",\"user_rss\":");
	json_num(r->rss_kb, have && r->sampled);
	printf(",\"user_private\":");
	json_num(r->uss_kb, have && r->sampled);
	printf(",\"slab\":");
	json_num((double)(a->slab - b->slab) / n, have);
	printf(",\"sunreclaim\":");
	json_num((double)(a->sunreclaim - b->sunreclaim) / n, have);
	printf(",\"pagetables\":");
	json_num((double)(a->pagetables - b->pagetables) / n, have);
	printf(",\"kernelstack\":");
	json_num((double)(a->kstack - b->kstack) / n, have);
	printf(",\"percpu\":");
	json_num((double)(a->percpu - b->percpu) / n, have);
	printf(",\"shmem\":");
	json_num((double)(a->shmem - b->shmem) / n, have);
	printf(",\"vmalloc\":");
	json_num((double)(a->vmalloc - b->vmalloc) / n, have);
	printf(",\"memcg_sandbox\":");
	json_num(r->memcg_kb, have && r->memcg_n);
	printf(",\"memcg_bench\":");
	json_num((double)r->own_memcg_kb / n, have && r->own_memcg_ok);
	printf("},\"after_create\":{\"seconds_after\":%.1f,\"settled\":%s}", r->after.waited_s,
	       r->after.settled ? "true" : "false");
	printf(",\"sampled_inits\":%d,\"target_kib\":400,\"after_destroy\":{"
	       "\"memavailable_delta_kib\":",
	       r->sampled);
	json_num((double)(e->avail - b->avail), have);
	printf(",\"slab_delta_kib\":");
	json_num((double)(e->slab - b->slab), have);
	printf(",\"percpu_delta_kib\":");
	json_num((double)(e->percpu - b->percpu), have);
	printf(",\"seconds_after\":%.1f,\"settled\":%s", r->end.waited_s,
	       r->end.settled ? "true" : "false");
	printf(",\"leftover_processes\":%ld,\"leftover_cgroups\":%ld,\"others_processes\":%ld}}",
	       r->left.procs, r->left.cgroups, r->left.others);
}

/* A case's throughput cells, against the floor's and bwrap's. */
static void json_throughput(const bench_case *c, const bench_case *floor_c, const bench_case *bwrap_c)
{
	printf(",\"throughput\":[");
	for (int s = 0; s < MAX_WORKERS; s++) {
		const tp_cell *t = &c->tp[s];
		printf("%s{\"workers\":%d,\"ok\":%" PRIu64 ",\"failures\":%" PRIu64
		       ",\"seconds\":",
		       s ? "," : "", s + 1, t->ok, t->failed);
		json_num(t->secs, t->done);
		printf(",\"ops_per_s\":");
		json_num(t->ops_s, t->done);
		printf(",\"max_op_ms\":");
		json_num(t->max_op_ms, t->done);
		printf(",\"cpu_ms_per_op\":");
		json_num(t->cpu_ms_op, t->done && t->cpu_ms_op >= 0);
		printf(",\"cpu_source\":");
		json_str(t->done ? (t->cpu_from_perf ? "task-clock" : "getrusage") : NULL);
		printf(",\"host_cpu_ms_per_op\":");
		json_num(t->host_ms_op, t->done && t->host_ms_op >= 0);
		printf(",\"x_floor\":");
		bool fl = have_tp(c, s) && have_tp(floor_c, s);
		json_num(fl ? ratio(c, floor_c, s) : 0, fl);
		printf(",\"x_bwrap\":");
		bool bw = c != floor_c && have_tp(c, s) && have_tp(bwrap_c, s);
		json_num(bw ? ratio(c, bwrap_c, s) : 0, bw);
		putchar('}');
	}
	putchar(']');
}

/* A lib case's lifecycle parts, mean ms each over the latency phase. */
static void json_parts(const bench_case *c)
{
	printf(",\"parts_ms\":");
	if (c->parts_n && c->part_names[0]) {
		putchar('{');
		bool pf = true;
		for (int p = 0; p < 3; p++)
			if (c->part_names[p]) {
				printf("%s\"%s\":%.4f", pf ? "" : ",", c->part_names[p],
				       (double)c->part_us[p] / (double)c->parts_n / 1000.0);
				pf = false;
			}
		putchar('}');
	} else
		fputs("null", stdout);
}

/* A bounded (gvisor) cell: its bound, and its ratios to its peer and to runsc alone. */
static void json_bounded(const bench_case *c, const bench_case *cases, size_t ncases)
{
	const bench_case *p = case_by_key(cases, ncases, c->peer);
	const bench_case *r = case_by_key(cases, ncases, c->runsc);
	printf(",\"bound_s\":%g,\"latency_cut\":%s,\"peer\":", (double)c->bound_ms / 1000.0,
	       c->lat_cut ? "true" : "false");
	json_str(p ? p->key : NULL);
	bool pp = p && c->lat_done && p->lat_done && p->lat.p50 > 0;
	printf(",\"p50_x_peer\":");
	json_num(pp ? c->lat.p50 / p->lat.p50 : 0, pp);
	bool pt = p && have_tp(c, MAX_WORKERS - 1) && have_tp(p, MAX_WORKERS - 1);
	printf(",\"tp_2w_x_peer\":");
	json_num(pt ? ratio(c, p, MAX_WORKERS - 1) : 0, pt);
	bool pr = r && c->lat_done && r->lat_done && r->lat.p50 > 0;
	printf(",\"p50_x_runsc_do\":");
	json_num(pr ? c->lat.p50 / r->lat.p50 : 0, pr);
}

/* A pool kind's phases: what its pools did in each. */
static void json_pools(const bench_case *c)
{
	printf(",\"pool\":[");
	bool pfirst = true;
	for (int s = 0; s <= MAX_WORKERS; s++)
		if (c->pool[s].done) {
			char ph[16];
			snprintf(ph, sizeof ph, s ? "%dw" : "latency", s);
			printf("%s", pfirst ? "" : ",");
			json_pool_phase(&c->pool[s], ph);
			pfirst = false;
		}
	putchar(']');
}

/* The audit pair's on side: events per run, and its overhead over the off side (its twin). */
static void json_audit(const bench_case *c, const bench_case *cases, size_t ncases)
{
	printf(",\"audit\":{\"enabled\":%s,\"runs\":%" PRIu64
	       ",\"reported_per_run\":",
	       c->so && c->so->audit ? "true" : "false", c->audit_runs);
	json_num(c->audit_runs ? (double)c->audit_reported / (double)c->audit_runs
			       : 0,
		 c->audit_runs > 0);
	printf(",\"kept_per_run\":");
	json_num(c->audit_runs ? (double)c->audit_kept / (double)c->audit_runs : 0,
		 c->audit_runs > 0);
	const bench_case *off = NULL;
	for (size_t k = 0; k < ncases; k++)
		if (cases[k].twin == c)
			off = &cases[k];
	bool ov = c->so && c->so->audit && c->lat_done && off && off->lat_done &&
		  off->lat.p50 > 0;
	printf(",\"overhead_p50_ms\":");
	json_num(ov ? c->lat.p50 - off->lat.p50 : 0, ov);
	printf(",\"overhead_p50_pct\":");
	json_num(ov ? 100.0 * (c->lat.p50 - off->lat.p50) / off->lat.p50 : 0, ov);
	putchar('}');
}

void bench_print_json(const machine *m, const bench_case *cases, size_t ncases,
		       const bench_case *floor_c, const bench_case *bwrap_c, int iterations,
		       uint64_t duration_ms, const density_report *dens)
{
	printf("{\"machine\":{\"cpus\":%ld,\"kernel\":", m->cpus);
	json_str(m->kernel);
	printf(",\"cgroup\":");
	json_str(m->cgroup);
	printf(",\"loadavg\":[%.2f,%.2f,%.2f]},", m->load[0], m->load[1], m->load[2]);
	printf("\"options\":{\"iterations\":%d,\"duration_s\":%g,\"workers\":[1,%d]},\"cases\":[",
	       iterations, (double)duration_ms / 1000.0, MAX_WORKERS);
	bool first = true;
	for (size_t i = 0; i < ncases; i++) {
		const bench_case *c = &cases[i];
		if (!c->selected || c->kind->apart)
			continue;
		printf("%s{\"key\":", first ? "" : ",");
		first = false;
		json_str(c->key);
		printf(",\"label\":");
		json_str(c->label);
		printf(",\"skipped\":");
		json_str(c->skip);
		printf(",\"failures\":%" PRIu64 ",\"first_error\":", c->failed);
		json_str(c->error[0] ? c->error : NULL);
		printf(",\"latency_ms\":");
		if (c->lat_done)
			printf("{\"n\":%zu,\"p50\":%.4f,\"p99\":%.4f,\"mean\":%.4f,"
			       "\"min\":%.4f,\"max\":%.4f}",
			       c->lat.n, c->lat.p50, c->lat.p99, c->lat.mean, c->lat.min,
			       c->lat.max);
		else
			fputs("null", stdout);
		json_throughput(c, floor_c, bwrap_c);
		json_parts(c);
		printf(",\"p50_x_floor\":");
		bool pf = c->lat_done && floor_c->lat_done && floor_c->lat.p50 > 0;
		json_num(pf ? c->lat.p50 / floor_c->lat.p50 : 0, pf);
		if (c->bound_ms)
			json_bounded(c, cases, ncases);
		if (c->kind->begin)
			json_pools(c);
		if (c->kind == &bench_kind_audit)
			json_audit(c, cases, ncases);
		putchar('}');
	}
	printf("],\"density\":");
	json_density(dens);
	printf("}\n");
}
