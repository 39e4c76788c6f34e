/* Liveness and the node list: each node puts its state into the bucket paddock-nodes every
 * second under its id; the bucket's TTL drops a node not heard of for CL_NODE_TTL_S seconds.
 * GET /v1/cluster lists what is there; a session id (ss-<run id>-<n>, the run id random per
 * daemon start) is routed to the node whose heartbeat carries that run id, and is gone with it. */
#define _GNU_SOURCE
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N pd_nats

void cl_heartbeat(pd_cluster *c)
{
	size_t n = 0;
	pd_pool_stats *st = pd_pools_stats(c->pools, &n);
	json_t *pools = json_array();
	for (size_t i = 0; st && i < n; i++)
		if (st[i].available)
			json_array_append_new(pools, json_string(st[i].template_name));
	free(st);
	char run[16];
	snprintf(run, sizeof run, "%08" PRIx32, c->run_id);
	uint64_t now = pd_wall_us() / 1000;
	time_t secs = (time_t)(now / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char when[40];
	snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(now % 1000));
	pthread_mutex_lock(&c->mu);
	json_t *load = json_pack("{s:i,s:i,s:i}", "running", (int)c->ntasks, "slots", (int)c->slots, "waiting",
				 (int)c->nwaiting);
	pthread_mutex_unlock(&c->mu);
	json_t *v = json_pack("{s:s,s:s,s:o,s:o,s:s,s:I,s:s}", "id", c->node, "address", c->address, "pools", pools,
			      "load", load, "last_heartbeat", when, "last_heartbeat_ms", (json_int_t)now,
			      "run_id", run);
	char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
	json_decref(v);
	if (text) {
		uint64_t rev;
		N.kvStore_Put(&rev, c->nodes, c->node, text, (int)strlen(text));
	}
	free(text);
}

/* The live nodes' heartbeats, each as it was put. */
static json_t *node_values(pd_cluster *c)
{
	json_t *arr = json_array();
	kvKeysList keys = {0};
	if (N.kvStore_Keys(&keys, c->nodes, NULL) != NATS_OK)
		return arr;
	for (int i = 0; i < keys.Count; i++) {
		kvEntry *en = NULL;
		if (N.kvStore_Get(&en, c->nodes, keys.Keys[i]) != NATS_OK)
			continue;
		json_t *v = json_loadb(N.kvEntry_Value(en), (size_t)N.kvEntry_ValueLen(en), 0, NULL);
		N.kvEntry_Destroy(en);
		if (v)
			json_array_append_new(arr, v);
	}
	N.kvKeysList_Destroy(&keys);
	return arr;
}

json_t *pd_cluster_nodes(pd_cluster *c)
{
	return json_pack("{s:o,s:s}", "nodes", node_values(c), "self", c->node);
}

int pd_cluster_session_node(pd_cluster *c, const char *sid, char *addr, size_t addr_len, char *why,
			    size_t why_len)
{
	char run[16];
	if (sscanf(sid, "ss-%8[0-9a-f]-", run) != 1)
		return 0; /* not a session id of ours: this node answers it (404) */
	unsigned long rid = strtoul(run, NULL, 16);
	if (rid == c->run_id)
		return 0;
	json_t *nodes = node_values(c);
	size_t i;
	json_t *n;
	int found = -1;
	json_array_foreach(nodes, i, n) {
		const char *r = json_string_value(json_object_get(n, "run_id"));
		if (r && strtoul(r, NULL, 16) == rid) {
			snprintf(addr, addr_len, "%s", json_string_value(json_object_get(n, "address")));
			found = 1;
			break;
		}
	}
	json_decref(nodes);
	if (found < 0)
		snprintf(why, why_len,
			 "session %s lived on a node that is gone (no heartbeat in the last %d s): its sandbox and "
			 "state went with it",
			 sid, CL_NODE_TTL_S);
	return found;
}

char *pd_cluster_metrics(pd_cluster *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	pthread_mutex_lock(&c->mu);
	struct {
		const char *name, *help;
		uint64_t v;
	} rows[] = {
		{"submitted", "Run requests this node's clients submitted to the cluster.", c->submitted},
		{"published", "Requests this node published to the work stream.", c->published},
		{"published_duplicates", "Publishes the stream's duplicate window absorbed (a request id seen already).",
		 c->dup_published},
		{"answered_from_results", "Requests answered with a result the cluster already had.", c->dup_answered},
		{"publish_failures", "Publish attempts the broker did not take.", c->publish_failures},
		{"pulled", "Tasks this node pulled from the work stream.", c->pulled},
		{"redelivered", "Pulled tasks that had been delivered before (a node died or gave one back).",
		 c->redelivered},
		{"exhausted", "Tasks past their last delivery, recorded as infrastructure failures.", c->exhausted},
		{"recorded", "Tasks this node ran and recorded.", c->recorded},
		{"already_recorded", "Tasks acked without a record here: another node (or an earlier try) had it.",
		 c->already_recorded},
		{"naks", "Tasks given back to the stream (not recorded, or not admitted here).", c->naks},
		{"answers", "Waiting requests answered with their result.", c->answered},
		{"answered_in_process", "Results of this node's own requests it ran, answered without a note through the broker.",
		 c->notes_local},
		{"results_too_big", "Results larger than the broker's message limit.", c->results_too_big},
		{"results_by_reference", "Results too big for the broker kept here, claimed by reference.",
		 c->results_by_ref},
		{"references_fetched", "Answers this node fetched by reference from the node that ran them.",
		 c->refs_fetched},
		{"reference_failures", "Answers by reference the node that ran them did not give.", c->ref_failures},
		{"records_published", "Records this node published to the shared record stream.", c->records_published},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		fprintf(f, "# HELP paddock_cluster_%s_total %s\n# TYPE paddock_cluster_%s_total counter\n"
			   "paddock_cluster_%s_total{node=\"%s\"} %" PRIu64 "\n",
			rows[i].name, rows[i].help, rows[i].name, rows[i].name, c->node, rows[i].v);
	fprintf(f, "# HELP paddock_cluster_tasks_running Tasks pulled and not yet acked.\n"
		   "# TYPE paddock_cluster_tasks_running gauge\npaddock_cluster_tasks_running{node=\"%s\"} %u\n"
		   "# HELP paddock_cluster_slots Tasks this node runs at once.\n"
		   "# TYPE paddock_cluster_slots gauge\npaddock_cluster_slots{node=\"%s\"} %u\n"
		   "# HELP paddock_cluster_waiting Requests of this node's clients waiting for a result.\n"
		   "# TYPE paddock_cluster_waiting gauge\npaddock_cluster_waiting{node=\"%s\"} %u\n",
		c->node, c->ntasks, c->node, c->slots, c->node, c->nwaiting);
	pthread_mutex_unlock(&c->mu);
	fclose(f);
	return buf;
}
