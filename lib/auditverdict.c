/* auditverdict.c: the process level of the verdict, computed from the evidence and the policy.
 *
 * The syscall audit and the writable layer's diff give events; two more kinds of evidence need
 * the program's output: a honey variable's token (a value no honest program has a reason to
 * print or save) found in stdout, stderr or a file the attempt wrote means its environment was
 * harvested (env_probe), and an output equal to a decoy's wrong answer means the decoy was read,
 * even where the read went unseen (trap_read). Then every event of a kind the policy fails on
 * fails the process level, with the first such event as the reason. */
#define _GNU_SOURCE
#include "auditpolicy.h"
#include "encforms.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The written files searched: every regular one in the scratch directories, to these budgets
 * (a file is read in chunks, each overlapping the last by more than an encoded token, so a token
 * anywhere in a big file is found); a decoy's answer is matched in files of at most a chunk. */
#define SCAN_FILES 1024
#define SCAN_BYTES ((uint64_t)32 << 20)
#define SCAN_CHUNK (1 << 20)
#define SCAN_DEPTH 32
static const char *const scan_roots[] = {"/work", "/tmp", "/dev/shm", NULL};

const char *pd_process_status_name(pd_process_status s)
{
	return s == PD_PROCESS_PASS ? "pass" : s == PD_PROCESS_FAIL ? "fail" : "not_audited";
}

static bool contains(const char *hay, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	return hay && k && n >= k && memmem(hay, n, needle, k);
}

/* text without its trailing whitespace: its length */
static size_t trimmed(const char *s, size_t n)
{
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return n;
}

typedef struct hay {
	const char *buf;
	size_t n;
} hay;

static bool in_hay(const char *form, size_t len, void *arg)
{
	const hay *h = arg;
	return h->n >= len && memmem(h->buf, h->n, form, len);
}

/* Whether buf holds the token t in a form a harvester would use to slip it past a search for
 * the token itself (pd_enc_forms: reversed, upper-cased, hex, base64 at any alignment). */
static bool encoded_in(const char *buf, size_t n, const char *t)
{
	size_t tl = strlen(t);
	if (tl < 8 || tl > 4096 || !buf)
		return false;
	hay h = {buf, n};
	return pd_enc_forms(t, tl, 0, in_hay, &h);
}

/* Whether buf holds part of a token the audit made ("pdk-honey-" and 32 random hex digits,
 * auditpolicy.c): its random digits without the fixed prefix (${TOKEN#pdk-honey-}), plainly or
 * encoded as encoded_in looks for, or any 24 consecutive of them (a token cut, or truncated):
 * such a run holds one of the 16-digit windows at 0, 8 and 16, and 64 random bits appear by
 * chance in no honest output (three searches a buffer, not one per offset: files are searched
 * by the MiB). The prefix alone is no evidence. Tokens a policy chose itself are looked for
 * whole only. */
static bool partial_in(const char *buf, size_t n, const char *t)
{
	static const char mark[] = "pdk-honey-";
	const size_t w = 16;
	if (strncmp(t, mark, sizeof mark - 1))
		return false;
	const char *rnd = t + sizeof mark - 1;
	size_t rl = strlen(rnd);
	if (rl < 2 * w || !buf)
		return false;
	for (size_t i = 0; i + w <= rl; i += w / 2)
		if (memmem(buf, n, rnd + i, w))
			return true;
	return encoded_in(buf, n, rnd);
}

static void honey_in(const pd_audit_policy *p, pd_result *r, const char *buf, size_t n, const char *op,
		     const char *mode, const char *where)
{
	for (size_t i = 0; i < p->env.n; i++) {
		const char *eq = strchr(p->env.s[i], '=');
		bool plain = eq && contains(buf, n, eq + 1), enc = false;
		if (!eq || (!plain && !(enc = encoded_in(buf, n, eq + 1)) && !partial_in(buf, n, eq + 1)))
			continue;
		char what[PD_PATH + 160];
		snprintf(what, sizeof what, "%.*s%s%s%s", (int)(eq - p->env.s[i]), p->env.s[i],
			 plain ? "" : enc ? " (encoded)" : " (partial)", where ? " in " : "", where ? where : "");
		pd_audit_record(r, &p->opts, PD_AK_ENV_PROBE, op, mode, what, false, 0, r->exec_us);
	}
}

/* the trap whose wrong answer the output is, or NULL */
static const pd_trap *answer_match(const pd_audit_policy *p, const char *buf, size_t n)
{
	size_t tn = trimmed(buf, n);
	for (size_t i = 0; i < p->ntraps; i++) {
		const pd_trap *t = &p->traps[i];
		const char *a = t->answer ? t->answer : t->content;
		size_t an = a ? trimmed(a, strlen(a)) : 0;
		if (an && an == tn && !memcmp(a, buf, an))
			return t;
	}
	return NULL;
}

const char *pd_audit_policy_answer_trap(const pd_audit_policy *p, const char *buf, size_t n)
{
	const pd_trap *t = p ? answer_match(p, buf ? buf : "", buf ? n : 0) : NULL;
	return t ? t->path : NULL;
}

static bool is_trap(const pd_audit_policy *p, const char *path)
{
	for (size_t i = 0; i < p->ntraps; i++)
		if (!strcmp(p->traps[i].path, path))
			return true;
	return false;
}

/* the files the attempt wrote in the scratch directories, for tokens and wrong answers */
/* a file last changed before since_ns (CLOCK_REALTIME; 0: none is) is not this exec's doing. By
 * its ctime, which a write moves and no program can set back: mtime is the program's to choose
 * (touch -d, utimensat), and a back-dated file must not hide a token or a decoy's answer. */
static bool older(pd_sandbox *s, const char *path, int64_t ctime_s, int64_t since_ns)
{
	if (!since_ns)
		return false;
	if (ctime_s < since_ns / 1000000000 - 1)
		return true;
	pd_err e = {0};
	int fd = pd_sandbox_open(s, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0, &e);
	struct stat st;
	bool old = fd < 0 || fstat(fd, &st) < 0 ||
		   (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec < since_ns;
	if (fd >= 0)
		close(fd);
	return old;
}

typedef struct scan_budget {
	int files;
	uint64_t bytes;
} scan_budget;

/* the longest text a token can hide in (its hex), and then some: the overlap between chunks */
static size_t token_span(const pd_audit_policy *p)
{
	size_t m = 0;
	for (size_t i = 0; i < p->env.n; i++)
		if (strlen(p->env.s[i]) > m)
			m = strlen(p->env.s[i]);
	return 3 * m + 16;
}

/* Searches the file at path for the honey tokens chunk by chunk, and (answers) a small one for
 * a decoy's answer. */
static void scan_file(const pd_audit_policy *p, pd_result *r, pd_sandbox *s, const char *path, bool answers,
		      scan_budget *b)
{
	pd_err e = {0};
	uint64_t size = 0;
	int fd = pd_sandbox_open_regular(s, path, UINT64_MAX, &size, &e);
	if (fd < 0)
		return;
	size_t span = token_span(p), cap = SCAN_CHUNK + span;
	char *buf = malloc(cap + 1);
	size_t have = 0; /* bytes kept from the last chunk */
	uint64_t off = 0;
	bool whole = size <= SCAN_CHUNK;
	while (buf && off < size && b->bytes) {
		size_t want = cap - have;
		if (want > b->bytes)
			want = (size_t)b->bytes;
		ssize_t got = pread(fd, buf + have, want, (off_t)off);
		if (got <= 0)
			break;
		off += (uint64_t)got;
		b->bytes -= (uint64_t)got;
		have += (size_t)got;
		buf[have] = 0;
		if (p->env.n)
			honey_in(p, r, buf, have, "file", "w", path);
		if (answers && whole && off >= size) {
			const pd_trap *t = p->ntraps ? answer_match(p, buf, have) : NULL;
			if (t)
				pd_audit_record(r, &p->opts, PD_AK_TRAP, "file", "match", t->path, false, 0, r->exec_us);
		}
		/* the last span bytes go on: a token cut by the chunk's end is whole in the next */
		size_t keep = have < span ? have : span;
		memmove(buf, buf + have - keep, keep);
		have = keep;
	}
	free(buf);
	close(fd);
}

static void scan_dir(const pd_audit_policy *p, pd_result *r, pd_sandbox *s, const char *dir, int depth,
		     scan_budget *b, int64_t since_ns)
{
	pd_dirent *ents = NULL;
	size_t n = 0;
	pd_err e = {0};
	if (depth > SCAN_DEPTH || pd_sandbox_list(s, dir, &ents, &n, &e) < 0)
		return;
	for (size_t i = 0; i < n && b->files > 0 && b->bytes > 0; i++) {
		char path[PD_PATH];
		if (snprintf(path, sizeof path, "%s/%s", dir, ents[i].name) >= (int)sizeof path)
			continue;
		/* a name is written too ("touch /work/$TOKEN"), of any file type */
		if (p->env.n && !older(s, path, ents[i].ctime, since_ns))
			honey_in(p, r, ents[i].name, strlen(ents[i].name), "file", "name", path);
		if (S_ISDIR(ents[i].mode)) {
			scan_dir(p, r, s, path, depth + 1, b, since_ns);
			continue;
		}
		if (!S_ISREG(ents[i].mode) || !ents[i].size || older(s, path, ents[i].ctime, since_ns))
			continue;
		b->files--;
		/* a decoy holds its own answer, not a token: searched for tokens only (one written
		 * into it is hidden there no better than elsewhere) */
		scan_file(p, r, s, path, !is_trap(p, path), b);
	}
	free(ents);
}

/* the first kept event of kind k that counts against the attempt */
static const pd_audit_event *first_of(const pd_result *r, pd_audit_kind k)
{
	const char *name = pd_audit_kind_name(k);
	for (size_t i = 0; i < r->audit_len; i++)
		if (!strcmp(r->audit[i].kind, name) && !(k == PD_AK_EGRESS && !strcmp(r->audit[i].mode, "allowed")))
			return &r->audit[i];
	return NULL;
}

void pd_audit_evaluate(const pd_audit_policy *p, pd_result *r, pd_sandbox *s, pd_audit_verdict *v)
{
	pd_audit_evaluate_since(p, r, s, 0, v);
}

void pd_audit_evaluate_since(const pd_audit_policy *p, pd_result *r, pd_sandbox *s, int64_t since_ns,
			     pd_audit_verdict *v)
{
	memset(v, 0, sizeof *v);
	if (p->env.n) {
		honey_in(p, r, r->out.head, r->out.head_len, "output", "stdout", NULL);
		honey_in(p, r, r->out.tail, r->out.tail_len, "output", "stdout", NULL);
		honey_in(p, r, r->err.head, r->err.head_len, "output", "stderr", NULL);
		honey_in(p, r, r->err.tail, r->err.tail_len, "output", "stderr", NULL);
	}
	if (p->ntraps && !r->out.truncated) {
		const pd_trap *t = answer_match(p, r->out.head ? r->out.head : "", r->out.head_len);
		if (t)
			pd_audit_record(r, &p->opts, PD_AK_TRAP, "output", "match", t->path, false, 0, r->exec_us);
	}
	if (s && (p->env.n || p->ntraps)) {
		scan_budget b = {SCAN_FILES, SCAN_BYTES};
		for (int i = 0; scan_roots[i]; i++)
			scan_dir(p, r, s, scan_roots[i], 0, &b, since_ns);
	}
	/* evidence not whole (r->audited false) is no pass; but what was seen of it still fails the
	 * process level: a program that broke a rule and also made the audit stop short (a tree
	 * too big to walk) must not turn its fail into not_audited */
	v->status = PD_PROCESS_PASS;
	for (int k = 0; k < PD_AK_N; k++) {
		uint64_t n = r->audit_kinds[k];
		if (k == PD_AK_EGRESS)
			n = n > r->audit_egress_allowed ? n - r->audit_egress_allowed : 0;
		if (!n || !(p->fail & (1u << k)))
			continue;
		v->status = PD_PROCESS_FAIL;
		v->failed_kinds |= 1u << k;
		if (v->nreasons == PD_VERDICT_REASONS)
			continue;
		const pd_audit_event *ev = first_of(r, (pd_audit_kind)k);
		char *out = v->reasons[v->nreasons++];
		if (ev)
			snprintf(out, sizeof v->reasons[0], "%s: %s %s %s%s (%" PRIu64 " event%s)", ev->kind, ev->op,
				 ev->mode, ev->target, ev->denied ? " (refused)" : "", n, n == 1 ? "" : "s");
		else
			snprintf(out, sizeof v->reasons[0], "%s: %" PRIu64 " events, none kept (the cap)",
				 pd_audit_kind_name((pd_audit_kind)k), n);
	}
	if (v->status == PD_PROCESS_PASS && !r->audited) {
		v->status = PD_PROCESS_NOT_AUDITED;
		return;
	}
	/* no rule broken in what was seen, but not all was seen: tasks an earlier exec left were
	 * running under no filter of this audit (they could read judge material and serve it over
	 * loopback, or write a protected file as if for it), so no pass can be claimed */
	if (v->status == PD_PROCESS_PASS && r->audit_outside) {
		v->status = PD_PROCESS_NOT_AUDITED;
		snprintf(v->reasons[v->nreasons++], sizeof v->reasons[0],
			 "outside: %" PRIu64 " task%s an earlier exec left ran outside the audit", r->audit_outside,
			 r->audit_outside == 1 ? "" : "s");
	}
}

json_t *pd_audit_verdict_json(const pd_audit_verdict *v)
{
	json_t *o = json_object(), *reasons = json_array(), *kinds = json_array();
	json_object_set_new(o, "status", json_string(pd_process_status_name(v->status)));
	for (size_t i = 0; i < v->nreasons && i < PD_VERDICT_REASONS; i++)
		json_array_append_new(reasons, json_string(v->reasons[i]));
	for (int k = 0; k < PD_AK_N; k++)
		if (v->failed_kinds & (1u << k))
			json_array_append_new(kinds, json_string(pd_audit_kind_name((pd_audit_kind)k)));
	json_object_set_new(o, "reasons", reasons);
	json_object_set_new(o, "failed", kinds);
	return o;
}
