/* Reading the store back: GET /v1/runs/{task_id} (every attempt of a task, oldest first) and
 * GET /v1/runs?group_id=&since=&kind=&last=&limit=&cursor= (a page of attempts in the order they
 * were stored; `next` is the cursor of the following page). A trainer pages through a GRPO group's
 * judged records with these, or with `paddock export --runs`, which pages the same way. Both answer
 * from the event thread: a page is at most 1000 rows of one indexed query. A node of a cluster
 * answers both from the cluster's shared record stream (server/cluster/records.c): every node's
 * records, its cursor the stream's sequence; a broker that does not answer is a 503. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *arg(req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* A non-negative integer argument; false (and a 400 answered) when it is not one. */
static bool uint_arg(req *r, const char *name, uint64_t max, uint64_t *out)
{
	const char *v = arg(r, name);
	if (!v || !v[0])
		return true;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-' || x > max) {
		http_set_error(r, 400, "%s: '%.64s' is not an integer in [0, %llu]", name, v, (unsigned long long)max);
		return false;
	}
	*out = x;
	return true;
}

void records_list(req *r, const char *url, const char *method)
{
	(void)url;
	(void)method;
	pd_store_query q = {0};
	uint64_t limit = 0, cursor = 0, since = 0, last = 0;
	if (!uint_arg(r, "limit", 1000, &limit) || !uint_arg(r, "cursor", INT64_MAX, &cursor) ||
	    !uint_arg(r, "since", INT64_MAX, &since) || !uint_arg(r, "last", 1, &last))
		return;
	q.group_id = arg(r, "group_id");
	q.kind = arg(r, "kind");
	if (q.kind && q.kind[0] && strcmp(q.kind, "judge") && strcmp(q.kind, "run")) {
		http_set_error(r, 400, "kind: '%.64s' is not judge or run", q.kind);
		return;
	}
	q.limit = (unsigned)limit;
	q.after = (int64_t)cursor;
	q.since_ms = since;
	q.last_only = last == 1;
	json_t *records = NULL;
	int64_t next = 0;
	pd_err e = {0};
	/* a node of a cluster answers for the whole fleet, from the shared record stream */
	int rc = r->srv->cluster ? pd_cluster_records_list(r->srv->cluster, &q, &records, &next, &e)
				 : pd_store_list(r->srv->store, &q, &records, &next, &e);
	if (rc < 0) {
		http_set_error(r, r->srv->cluster ? 503 : 500, "%s", PD_ERR_STR(&e));
		return;
	}
	json_t *o = json_object();
	json_object_set_new(o, "count", json_integer((json_int_t)json_array_size(records)));
	json_object_set_new(o, "records", records);
	json_object_set_new(o, "next", next ? json_integer(next) : json_null());
	http_set_json(r, 200, o);
}

#define OUTPUT_JSON_MAX (16u << 20) /* the JSON form's two streams together; past it: ?stream= */

/* The JSON form of a task's output, as a cluster answers it ({"task_id", "request_id", "node",
 * "stdout", "stderr", "whole"}): the kept files when there are (whole, with their byte counts), else
 * the last record's own text (all there is). */
static void output_json(req *r, const char *id, const char *paths[2], unsigned attempt)
{
	pd_err e = {0};
	json_t *records = pd_store_get(r->srv->store, id, &e);
	json_t *rec = json_array_get(records, json_array_size(records) ? json_array_size(records) - 1 : 0);
	if (!rec && !paths[0]) {
		json_decref(records);
		http_set_error(r, 404, "no task %s in the store", id);
		return;
	}
	json_t *out = json_pack("{s:s,s:O,s:O}", "task_id", id, "request_id",
				json_object_get(rec, "request_id") ? json_object_get(rec, "request_id") : json_null(), "node",
				json_object_get(rec, "node") ? json_object_get(rec, "node") : json_null());
	bool whole = paths[0] && paths[1];
	for (int i = 0; i < 2 && whole; i++) {
		char *data = NULL;
		size_t len = 0;
		struct stat st;
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || (uint64_t)st.st_size > OUTPUT_JSON_MAX ||
		    !(data = malloc((size_t)st.st_size + 1)) || read(fd, data, (size_t)st.st_size) != st.st_size) {
			bool big = fd >= 0 && (uint64_t)st.st_size > OUTPUT_JSON_MAX;
			if (fd >= 0)
				close(fd);
			free(data);
			json_decref(out);
			json_decref(records);
			if (big)
				http_set_error(r, 413, "the output of task %s is over %u MiB: fetch each stream with "
						       "?stream=stdout or ?stream=stderr", id, OUTPUT_JSON_MAX >> 20);
			else
				http_set_error(r, 404, "no kept output for task %s: %s", id, strerror(errno));
			return;
		}
		len = (size_t)st.st_size;
		close(fd);
		json_object_set_new(out, i ? "stderr" : "stdout", pd_json_bytes(data, len));
		json_object_set_new(out, i ? "stderr_bytes" : "stdout_bytes", json_integer((json_int_t)len));
		free(data);
	}
	if (whole) {
		json_object_set_new(out, "attempt", json_integer(attempt));
	} else {
		/* none kept past the record's own: the record's run (or compile) output is all there is */
		json_t *step = json_object_get(rec, "run");
		if (!json_is_object(step))
			step = json_object_get(rec, "compile");
		for (int i = 0; i < 2; i++) {
			json_t *v = json_object_get(step, i ? "stderr" : "stdout");
			json_object_set_new(out, i ? "stderr" : "stdout", json_is_string(v) ? json_incref(v) : json_string(""));
		}
	}
	json_object_set_new(out, "whole", json_boolean(whole));
	json_decref(records);
	http_set_json(r, 200, out);
}

/* GET /v1/runs/{task_id}/output[?stream=stdout|stderr][&attempt=N]: a run's whole output, when its
 * record could not keep it all (run_output.c). Without stream, JSON as a cluster answers it (the
 * record's own text with "whole": false when nothing was kept); with it, that stream's bytes, sent
 * from its file (404 saying why when none is kept). */
static void records_output_local(req *r, const char *id)
{
	const char *stream = arg(r, "stream");
	uint64_t attempt = 0;
	if (stream && strcmp(stream, "stdout") && strcmp(stream, "stderr")) {
		http_set_error(r, 400, "stream: '%.64s' is not stdout or stderr", stream);
		return;
	}
	if (!uint_arg(r, "attempt", 1000, &attempt))
		return;
	char path[2][PATH_MAX];
	unsigned found = 0;
	pd_err e = {0};
	if (!stream) {
		const char *paths[2] = {NULL, NULL};
		for (int i = 0; i < 2; i++)
			if (pd_run_output_path(r->srv->output_dir, id, i ? found : (unsigned)attempt, i + 1, path[i],
					       sizeof path[i], &found, &e) == 0)
				paths[i] = path[i];
		output_json(r, id, paths, found);
		return;
	}
	if (pd_run_output_path(r->srv->output_dir, id, (unsigned)attempt, !strcmp(stream, "stderr") ? 2 : 1, path[0],
			       sizeof path[0], &found, &e) < 0) {
		http_set_error(r, 404, "%s", PD_ERR_STR(&e));
		return;
	}
	int fd = open(path[0], O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		/* trimmed between the look and the open */
		http_set_error(r, 404, "no kept output for task %s: %s", id, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	http_set_resp_fd(r, 200, "application/octet-stream", fd, (uint64_t)st.st_size);
}

/* GET /v1/runs/{id}/output on a node of a cluster: the task's whole output from any node
 * (server/cluster/objects.c); a single daemon's is records_output_local's (see docs/cluster.md). */
static void records_output(req *r, const char *id, size_t n)
{
	char task[256];
	if (n >= sizeof task) {
		http_set_error(r, 404, "no task %.64s... in the cluster's records", id);
		return;
	}
	memcpy(task, id, n);
	task[n] = 0;
	pd_err e = {0};
	json_t *o = pd_cluster_output(r->srv->cluster, task, &e);
	if (!o) {
		http_set_error(r, e.code == ENOENT ? 404 : 503, "%s", PD_ERR_STR(&e));
		return;
	}
	http_set_json(r, 200, o);
}

void records_get(req *r, const char *url, const char *method)
{
	(void)method;
	const char *id = url + strlen("/v1/runs/");
	const char *slash = strchr(id, '/');
	if (r->srv->cluster && slash && !strcmp(slash, "/output") && slash > id) {
		records_output(r, id, (size_t)(slash - id));
		return;
	}
	if (slash && !strcmp(slash, "/output") && slash > id) {
		char tid[256];
		snprintf(tid, sizeof tid, "%.*s", (int)(slash - id), id);
		records_output_local(r, tid);
		return;
	}
	if (!id[0] || slash) {
		http_set_error(r, 404, "no such endpoint: GET %s", url);
		return;
	}
	pd_err e = {0};
	json_t *records = r->srv->cluster ? pd_cluster_records_get(r->srv->cluster, id, &e)
					  : pd_store_get(r->srv->store, id, &e);
	if (!records) {
		http_set_error(r, r->srv->cluster ? 503 : 500, "%s", PD_ERR_STR(&e));
		return;
	}
	if (r->srv->cluster && !json_array_size(records)) {
		/* not published yet (its answer can come a moment before): this node's own */
		json_decref(records);
		if (!(records = pd_store_get(r->srv->store, id, &e))) {
			http_set_error(r, 500, "%s", PD_ERR_STR(&e));
			return;
		}
	}
	size_t n = json_array_size(records);
	if (!n) {
		json_decref(records);
		http_set_error(r, 404, "no task %s in the store", id);
		return;
	}
	json_t *o = json_object();
	json_object_set_new(o, "task_id", json_string(id));
	json_object_set_new(o, "attempts", json_integer((json_int_t)n));
	/* the attempt that answered: a trainer that wants one record per sample reads this one */
	json_object_set(o, "record", json_array_get(records, n - 1));
	json_object_set_new(o, "records", records);
	http_set_json(r, 200, o);
}
