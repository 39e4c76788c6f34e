/* Replaying several agents' overlapping steps at once (issue 40): in a trajectory of a session
 * several agents acted in, steps of different agents may have run at the same time, and some only
 * finish beside each other (each waits for what the other does). replay.c hands the recorded steps
 * here in the trajectory's order (the order they ended); a batch is a maximal run of consecutive
 * exec steps of distinct named agents whose recorded times overlap the batch's (each one started
 * before the latest end among those before it in the batch): its steps are dispatched at once, one
 * thread each, as the daemon ran them (by replay.c's runner, passed in); any other step runs alone,
 * in order. The answers are kept in the recorded order, and a replayed step's own trajectory line
 * is found by its request id, since concurrent steps end in an order of their own. The files a step changed are listed by the step
 * that ended first of those running (a file another agent wrote meanwhile included), so for the
 * steps of a batch the files changed are compared together: the batch's union, recorded against
 * replayed. */
#define _GNU_SOURCE
#include "http.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_MAX 16 /* threads of one batch; a longer overlap is split */

static const char *str(json_t *l, const char *k)
{
	return json_string_value(json_object_get(l, k));
}

/* an exec step of a named agent with both times recorded: one that may run beside others */
static bool concurrent_kind(json_t *l)
{
	return str(l, "kind") && !strcmp(str(l, "kind"), "exec") && str(l, "agent") && str(l, "started_at") &&
	       str(l, "ended_at");
}

/* how many lines from i on make one batch (at least 1) */
static size_t batch_len(json_t *lines, size_t i)
{
	json_t *first = json_array_get(lines, i);
	if (!concurrent_kind(first))
		return 1;
	const char *end = str(first, "ended_at"); /* ISO 8601 UTC times of one format: compared as text */
	size_t n = 1;
	for (size_t j = i + 1; j < json_array_size(lines) && n < BATCH_MAX; j++, n++) {
		json_t *l = json_array_get(lines, j);
		if (!concurrent_kind(l) || strcmp(str(l, "started_at"), end) >= 0)
			break;
		bool agent_in = false;
		for (size_t k = i; k < j; k++)
			agent_in |= !strcmp(str(json_array_get(lines, k), "agent"), str(l, "agent"));
		if (agent_in) /* an agent's steps stay one at a time */
			break;
		if (strcmp(str(l, "ended_at"), end) > 0)
			end = str(l, "ended_at");
	}
	return n;
}

typedef struct step_job {
	replay_step_fn run;
	pd_server *s;
	sess_entry *se;
	json_t *line, *resp;
	char why[200];
} step_job;

static void *step_thread(void *arg)
{
	step_job *j = arg;
	j->resp = j->run(j->s, j->se, j->line, j->why, sizeof j->why);
	return NULL;
}

/* [line, answer | why, batch]: batch numbers the overlapping run the step was part of (0: alone) */
static void record(json_t *done, step_job *j, size_t batch)
{
	json_array_append_new(done, j->resp ? json_pack("[O,o,I]", j->line, j->resp, (json_int_t)batch)
					    : json_pack("[O,s,I]", j->line, j->why, (json_int_t)batch));
}

void replay_steps(pd_server *s, sess_entry *se, json_t *lines, json_t *done, replay_step_fn run)
{
	size_t batches = 0;
	for (size_t i = 0; i < json_array_size(lines);) {
		size_t n = batch_len(lines, i);
		step_job jobs[BATCH_MAX];
		pthread_t th[BATCH_MAX];
		bool started[BATCH_MAX] = {false};
		for (size_t k = 0; k < n; k++) {
			jobs[k] = (step_job){.run = run, .s = s, .se = se, .line = json_array_get(lines, i + k)};
			/* a batch of one, or a thread that could not start: run here, in order */
			started[k] = n > 1 && pthread_create(&th[k], NULL, step_thread, &jobs[k]) == 0;
			if (!started[k])
				step_thread(&jobs[k]);
		}
		batches += n > 1;
		for (size_t k = 0; k < n; k++) {
			if (started[k])
				pthread_join(th[k], NULL);
			record(done, &jobs[k], n > 1 ? batches : 0);
		}
		i += n;
	}
}

json_t *replay_own_line(json_t *mine, json_t *rec, json_t *used, size_t *k)
{
	const char *rid = str(rec, "request_id"), *skind = str(rec, "kind");
	while (json_array_size(used) < json_array_size(mine))
		json_array_append_new(used, json_false());
	for (size_t i = 1; rid && skind && i < json_array_size(mine); i++) {
		json_t *l = json_array_get(mine, i);
		if (json_is_true(json_array_get(used, i)) || !str(l, "request_id") || strcmp(str(l, "request_id"), rid) ||
		    !str(l, "kind") || strcmp(str(l, "kind"), skind))
			continue;
		json_array_set(used, i, json_true());
		return l;
	}
	/* no request id to go by: the next line not taken, as the steps ran in order */
	while (*k < json_array_size(mine) && json_is_true(json_array_get(used, *k)))
		(*k)++;
	if (*k >= json_array_size(mine))
		return NULL;
	json_array_set(used, *k, json_true());
	return json_array_get(mine, (*k)++);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* the files changed by the lines of one batch together, each path as the last of them to end
 * listed it (the lines come in the order they ended) */
static json_t *batch_union(json_t **ls, size_t n)
{
	json_t *by_path = json_object(), *out = json_array(), *f, *v;
	const char *path;
	for (size_t i = 0; i < n; i++) {
		size_t j;
		json_array_foreach(json_object_get(ls[i], "files_changed"), j, f)
			if (str(f, "path"))
				json_object_set(by_path, str(f, "path"), f);
	}
	size_t np = json_object_size(by_path), i = 0;
	const char **paths = calloc(np ? np : 1, sizeof *paths);
	json_object_foreach(by_path, path, v)
		if (paths)
			paths[i++] = path;
	if (paths) /* by path: the two sides' lists compare as sets */
		qsort(paths, np, sizeof *paths, cmp_str);
	for (i = 0; paths && i < np; i++)
		json_array_append(out, json_object_get(by_path, paths[i]));
	free(paths);
	json_decref(by_path);
	return out;
}

static json_t *line_of(json_t *mine, const char *rid)
{
	for (size_t i = 1; rid && i < json_array_size(mine); i++)
		if (str(json_array_get(mine, i), "request_id") && !strcmp(str(json_array_get(mine, i), "request_id"), rid))
			return json_array_get(mine, i);
	return NULL;
}

void replay_union_batches(json_t *done, json_t *mine)
{
	for (size_t i = 0; i < json_array_size(done);) {
		json_int_t b = json_integer_value(json_array_get(json_array_get(done, i), 2));
		size_t n = 1;
		while (b && i + n < json_array_size(done) && json_integer_value(json_array_get(json_array_get(done, i + n), 2)) == b)
			n++;
		json_t *rec[BATCH_MAX], *own[BATCH_MAX];
		size_t no = 0;
		for (size_t k = 0; n > 1 && k < n; k++) {
			rec[k] = json_array_get(json_array_get(done, i + k), 0);
			json_t *l = line_of(mine, str(rec[k], "request_id"));
			if (l)
				own[no++] = l;
		}
		if (n > 1) {
			json_t *ru = batch_union(rec, n), *mu = batch_union(own, no);
			for (size_t k = 0; k < n; k++)
				json_object_set(rec[k], "files_changed", ru);
			for (size_t k = 0; k < no; k++)
				json_object_set(own[k], "files_changed", mu);
			json_decref(ru);
			json_decref(mu);
		}
		i += n;
	}
}
