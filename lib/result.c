/* The result record: the one renderer of a pd_result, used by every surface (`paddock exec --json`,
 * `paddock batch`, the daemon's /v1/runs, session execs, `paddock run`, the store; SandboxFusion's
 * and Piston's shapes take their fields from it). It builds a jansson value rather than text so that
 * the server can nest it in a job's record without parsing it back; libpaddock links jansson
 * already (templates). Output bytes that are not UTF-8 become U+FFFD, so any program output yields
 * valid JSON. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <jansson.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A count as a JSON integer: jansson's integers are signed 64-bit, so a value past INT64_MAX (no
 * real counter gets there: 9.2e18 bytes, or ms) is written as INT64_MAX rather than wrapped to a
 * negative number. */
static json_t *count(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* Microseconds as milliseconds. */
static json_t *ms(uint64_t us)
{
	return json_real((double)us / 1000.0);
}

/* A stream's text: head and tail join up exactly when nothing was dropped between them; else a
 * marker says how much was. */
json_t *pd_output_json(const pd_output *o)
{
	size_t n = o->head_len + o->tail_len;
	char *buf = malloc(n + 64);
	if (!buf)
		return NULL;
	memcpy(buf, o->head ? o->head : "", o->head_len);
	size_t k = o->head_len;
	if (o->truncated && o->tail_len)
		k += (size_t)snprintf(buf + k, 64, "\n[... %" PRIu64 " bytes omitted ...]\n",
				      o->total - o->head_len - o->tail_len);
	memcpy(buf + k, o->tail ? o->tail : "", o->tail_len);
	k += o->tail_len;
	json_t *s = pd_json_bytes(buf, k);
	free(buf);
	return s;
}

/* Sets key to v; false (and v freed) when either failed: the caller reports ENOMEM. */
static bool set(json_t *o, const char *key, json_t *v)
{
	return v && json_object_set_new(o, key, v) == 0;
}

static bool set_output(json_t *o, const char *name, const pd_output *out, bool with_output)
{
	char k[32];
	snprintf(k, sizeof k, "%s_bytes", name);
	bool good = set(o, k, count(out->total));
	snprintf(k, sizeof k, "%s_truncated", name);
	good &= set(o, k, json_boolean(out->truncated));
	if (with_output)
		good &= set(o, name, pd_output_json(out));
	return good;
}

json_t *pd_audit_event_json(const pd_audit_event *ev)
{
	/* network calls and the egress relay's connections name an address, the rest a path */
	bool relay = !strcmp(ev->op, "tunnel") || !strcmp(ev->op, "http");
	bool net = relay || !strcmp(ev->op, "connect") || !strncmp(ev->op, "send", 4);
	json_t *e = json_object();
	bool good = e && set(e, "kind", pd_json_text(ev->kind)) && set(e, "time", ms(ev->t_us)) &&
		    set(e, "pid", json_integer(ev->pid)) && set(e, net ? "address" : "path", pd_json_text(ev->target)) &&
		    set(e, "mode", pd_json_text(ev->mode)) && set(e, "op", pd_json_text(ev->op)) &&
		    set(e, "denied", json_boolean(ev->denied));
	/* the relay's connection: the name asked for, where it went, how much, why it ended */
	if (good && relay)
		good = set(e, "host", pd_json_text(ev->host)) && set(e, "resolved", pd_json_text(ev->address)) &&
		       set(e, "bytes_out", count(ev->bytes_out)) && set(e, "bytes_in", count(ev->bytes_in)) &&
		       set(e, "note", pd_json_text(ev->note));
	if (!good) {
		json_decref(e);
		return NULL;
	}
	return e;
}

json_t *pd_result_audit_json(const pd_result *r)
{
	bool any = r->audited || r->audit_len || r->audit_dropped;
	for (int k = 0; k < PD_AK_N && !any; k++)
		any = r->audit_kinds[k] != 0;
	if (!any) /* no audit ran: the record says so rather than showing an empty list */
		return json_null();
	/* the lists belong to o from the start: one decref undoes a failure anywhere */
	json_t *o = json_object(), *events = json_array(), *counts = json_object();
	bool good = o && set(o, "events", events) && set(o, "counts", counts);
	if (!good && !o) {
		json_decref(events);
		json_decref(counts);
	}
	for (size_t i = 0; good && i < r->audit_len; i++)
		good = json_array_append_new(events, pd_audit_event_json(&r->audit[i])) == 0;
	for (int k = 0; good && k < PD_AK_N; k++)
		good = set(counts, pd_audit_kind_name((pd_audit_kind)k), count(r->audit_kinds[k]));
	good = good && set(o, "dropped", count(r->audit_dropped));
	if (!good) {
		json_decref(o);
		return NULL;
	}
	return o;
}

bool pd_result_exited(const pd_result *r)
{
	return r->status != PD_XX && !r->signal;
}

json_t *pd_result_json(const pd_result *r, bool with_output)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	bool good = set(o, "sandbox_id", pd_json_text(r->sandbox_id)) &&
		    set(o, "use_id", r->use_id[0] ? pd_json_text(r->use_id) : json_null()) &&
		    set(o, "status", json_string(pd_status_name(r->status))) &&
		    set(o, "exit_code", pd_result_exited(r) ? json_integer(r->exit_code) : json_null()) && set(o, "signal", json_integer(r->signal)) &&
		    set(o, "error", pd_json_text(r->error)) && set(o, "wall_ms", count(r->wall_ms)) &&
		    set(o, "cpu_ms", count(r->cpu_ms)) && set(o, "cpu_user_ms", count(r->cpu_user_ms)) &&
		    set(o, "cpu_sys_ms", count(r->cpu_sys_ms)) &&
		    set(o, "memory_peak_bytes", count(r->memory_peak_bytes)) &&
		    set(o, "pids_peak", count(r->pids_peak)) && set(o, "oom_killed", json_boolean(r->oom_killed)) &&
		    set(o, "idle_timeout", json_boolean(r->idle_timeout)) &&
		    set_output(o, "stdout", &r->out, with_output) && set_output(o, "stderr", &r->err, with_output) &&
		    set(o, "setup_ms", ms(r->setup_us)) && set(o, "exec_ms", ms(r->exec_us)) &&
		    set(o, "teardown_ms", ms(r->teardown_us)) &&
		    set(o, "residue", pd_json_text(r->residue[0] ? r->residue : "unchecked")) &&
		    set(o, "audit_file_events", count(r->audit_files)) &&
		    set(o, "audit_net_events", count(r->audit_net)) && set(o, "audit_denied", count(r->audit_denied)) &&
		    set(o, "audit_dropped", count(r->audit_dropped)) &&
		    set(o, "audit_notified", count(r->audit_notified));
	/* the image: an imported one by digest, a directory (or the host's) by path alone */
	json_t *img = good ? json_object() : NULL;
	if (img && r->image_config_digest[0])
		good = (!r->image_name[0] || set(img, "name", pd_json_text(r->image_name))) &&
		       set(img, "digest", pd_json_text(r->image_digest)) &&
		       set(img, "config_digest", pd_json_text(r->image_config_digest));
	else if (img && r->image_digest[0]) /* the host image: its id (imageid.c) */
		good = set(img, "name", pd_json_text(r->image_name[0] ? r->image_name : "host")) &&
		       set(img, "digest", pd_json_text(r->image_digest));
	else if (img)
		good = set(img, "name", pd_json_text(r->image_name[0] ? r->image_name : "host")) &&
		       set(img, "digest", json_null());
	good = good && set(o, "image", img);
	/* execs of a warm (container) sandbox leave it empty: only the container tier keeps them */
	good = good && set(o, "isolation", json_string(r->isolation[0] ? r->isolation : "container"));
	good = good && set(o, "landlock", json_integer(r->landlock));
	/* only when it happened: a step whose client left (pd_exec_opts.cancel) */
	if (good && r->cancelled)
		good = set(o, "cancelled", json_true());
	json_t *audit = good ? pd_result_audit_json(r) : NULL;
	if (!good || !set(o, "audit", audit)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int pd_result_write_json(const pd_result *r, int fd, bool with_output)
{
	return pd_result_write_json_with(r, fd, with_output, NULL);
}

int pd_result_write_json_with(const pd_result *r, int fd, bool with_output, const char *extra)
{
	json_t *rec = pd_result_json(r, with_output), *o = rec;
	if (rec && extra && *extra) {
		/* the extra fields come first, as a reader of a batch's lines sees them */
		char *wrapped = NULL;
		json_t *x = asprintf(&wrapped, "{%s}", extra) < 0 ? NULL : json_loads(wrapped, 0, NULL);
		free(wrapped);
		if (!x) {
			json_decref(rec);
			errno = EINVAL;
			return -1;
		}
		json_object_update_missing(x, rec);
		json_decref(rec);
		o = x;
	}
	char *text = o ? pd_json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text) {
		errno = ENOMEM;
		return -1;
	}
	size_t len = strlen(text);
	text[len] = '\n'; /* over the NUL: the length is known */
	len++;
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(text);
			return -1;
		}
		off += (size_t)n;
	}
	free(text);
	return 0;
}

char *pd_json_dumps(const json_t *o, size_t flags)
{
	/* 15 digits write back exactly every value a record holds: times are whole microseconds
	 * (at most 3 decimals of a ms, 6 of a second) and 15 digits are all a double keeps of a
	 * decimal; what a computed score or reward has past them is rounding noise */
	return json_dumps(o, flags | JSON_REAL_PRECISION(PD_JSON_REAL_DIGITS));
}

/* ---- JSON strings of arbitrary bytes --------------------------------------------------------- */

json_t *pd_json_bytes(const char *buf, size_t k)
{
	/* invalid UTF-8 becomes U+FFFD one byte at a time: jansson refuses anything else */
	json_t *s = json_stringn(buf ? buf : "", buf ? k : 0);
	if (!s) {
		char *clean = malloc(k * 3 + 1);
		size_t c = 0;
		const unsigned char *u = (const unsigned char *)buf;
		for (size_t i = 0; clean && i < k;) {
			unsigned char ch = u[i];
			size_t len = ch < 0x80 ? 1 : ch >= 0xf5 ? 0 : ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc2 ? 2 : 0;
			bool ok = len && i + len <= k;
			for (size_t m = 1; ok && m < len; m++)
				ok = (u[i + m] & 0xc0) == 0x80;
			if (ok && len == 3)
				ok = !(ch == 0xe0 && u[i + 1] < 0xa0) && !(ch == 0xed && u[i + 1] >= 0xa0);
			if (ok && len == 4)
				ok = !(ch == 0xf0 && u[i + 1] < 0x90) && !(ch == 0xf4 && u[i + 1] >= 0x90);
			if (ok) {
				memcpy(clean + c, u + i, len);
				c += len;
				i += len;
			} else {
				clean[c++] = (char)0xef;
				clean[c++] = (char)0xbf;
				clean[c++] = (char)0xbd;
				i++;
			}
		}
		s = clean ? json_stringn(clean, c) : NULL;
		free(clean);
	}
	return s ? s : json_string("");
}

json_t *pd_json_text(const char *s)
{
	return pd_json_bytes(s ? s : "", s ? strlen(s) : 0);
}
