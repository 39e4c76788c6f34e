/* GET /v1/groups/{group_id} (issue 40): a GRPO group's summary from the store (a node of a cluster:
 * from the cluster's shared record stream, every node's members): every member's last
 * attempt (judged submissions and graded episodes) with its reward, usable and failure class. A
 * group with a judge_error or an infrastructure failure among its members is unusable as a whole:
 * the relative advantages a trainer computes over it would be biased by the missing member. */
#define _GNU_SOURCE
#include "http.h"

#include <string.h>

/* A task's latest record only: the cluster's stream keeps each attempt as it was published, the
 * last one then (a task graded again has two "last" attempts there, in the order they came). */
static json_t *latest_each(json_t *all)
{
	json_t *seen = json_object(), *out = json_array();
	size_t i;
	json_t *rec;
	json_array_foreach(all, i, rec) {
		const char *task = json_string_value(json_object_get(rec, "task_id"));
		json_object_set_new(seen, task ? task : "", json_integer((json_int_t)i));
	}
	json_array_foreach(all, i, rec) {
		const char *task = json_string_value(json_object_get(rec, "task_id"));
		if ((size_t)json_integer_value(json_object_get(seen, task ? task : "")) == i)
			json_array_append(out, rec);
	}
	json_decref(seen);
	json_decref(all);
	return out;
}

/* the members' records, every page */
static json_t *group_records(pd_server *srv, const char *group, pd_err *e)
{
	json_t *all = json_array();
	pd_store_query q = {.group_id = group, .kind = "judge", .limit = 1000, .last_only = true};
	for (int page = 0; page < 64; page++) {
		json_t *recs = NULL;
		int64_t next = 0;
		/* a node of a cluster answers for the fleet, from the shared record stream */
		if ((srv->cluster ? pd_cluster_records_list(srv->cluster, &q, &recs, &next, e)
				  : pd_store_list(srv->store, &q, &recs, &next, e)) < 0) {
			json_decref(all);
			return NULL;
		}
		json_array_extend(all, recs);
		json_decref(recs);
		if (!next)
			break;
		q.after = next;
	}
	return srv->cluster ? latest_each(all) : all;
}

void groups_get(req *r, const char *url, const char *method)
{
	(void)method;
	const char *group = url + strlen("/v1/groups/");
	if (!group[0]) {
		http_set_error(r, 404, "no such endpoint: GET %s", url);
		return;
	}
	pd_err e = {0};
	json_t *recs = group_records(r->srv, group, &e);
	if (!recs) {
		http_set_error(r, r->srv->cluster ? 503 : 500, "%s", PD_ERR_STR(&e));
		return;
	}
	if (!json_array_size(recs)) {
		json_decref(recs);
		http_set_error(r, 404, "no judged attempt of group %s in the store", group);
		return;
	}
	json_t *members = json_array(), *classes = json_object();
	char bad[64] = "";
	double sum = 0;
	size_t rewarded = 0, usable = 0, i;
	json_t *rec;
	json_array_foreach(recs, i, rec) {
		json_t *rw = json_object_get(rec, "reward");
		const char *fc = json_string_value(json_object_get(rec, "failure_class")) ?: "none";
		const char *rkind = json_string_value(json_object_get(rec, "kind"));
		json_array_append_new(
			members, json_pack("{s:O,s:O,s:s,s:O,s:O,s:s,s:O}", "task_id", json_object_get(rec, "task_id"),
					   "sample_id", json_object_get(rec, "sample_id") ?: json_null(), "kind",
					   rkind ? rkind : "submission", "reward", rw ? rw : json_null(), "usable",
					   json_object_get(rec, "usable") ?: json_false(), "failure_class", fc, "output",
					   json_object_get(json_object_get(json_object_get(rec, "verdict"), "output"), "status")
						   ?: json_null()));
		json_object_set_new(classes, fc, json_integer(json_integer_value(json_object_get(classes, fc)) + 1));
		if (json_is_number(rw)) {
			sum += json_number_value(rw);
			rewarded++;
		}
		usable += json_is_true(json_object_get(rec, "usable"));
		if (!bad[0] && (pd_failure_is_infra(pd_failure_parse(fc)) || !strcmp(fc, "judge_error")))
			snprintf(bad, sizeof bad, "%s", fc);
	}
	json_decref(recs);
	json_t *o = json_pack("{s:s,s:I,s:o,s:I,s:I,s:o}", "group_id", group, "size", (json_int_t)json_array_size(members),
			      "members", members, "rewarded", (json_int_t)rewarded, "usable_members", (json_int_t)usable,
			      "failure_classes", classes);
	json_object_set_new(o, "mean_reward", rewarded ? json_real(sum / (double)rewarded) : json_null());
	json_object_set_new(o, "usable", json_boolean(!bad[0]));
	char why[160];
	snprintf(why, sizeof why, "a member ended %s: the group's relative advantages would be biased", bad);
	json_object_set_new(o, "unusable_reason", bad[0] ? json_string(why) : json_null());
	http_set_json(r, 200, o);
}
