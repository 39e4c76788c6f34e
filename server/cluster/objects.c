/* Large values readable from any node, in one of two backends: by default the broker, a stream
 * of chunks (PADDOCK_OBJECTS), since Debian's libnats (3.4) has no object store API; or, with
 * --cluster-objects s3://BUCKET[/PREFIX], an S3-compatible store (s3.c), one key an object. The
 * callers (refs.c, records.c, sessions' objects) see only cl_obj_put and cl_obj_get.
 * In the broker: An object NAME is its chunks, published
 * in order on paddock.obj.<NAME>.c (each at most half the broker's message limit), then its
 * description on paddock.obj.<NAME>.m: {"bytes", "chunks", "first"} (the stream sequence of its
 * first chunk). A reader takes the last description and reads that many chunks from "first":
 * an object put again (a retry) is read as its last put, whole. Objects are kept as long as
 * records are (the record stream's age and size). Used for results larger than the broker
 * carries (refs.c), records too large for the record stream, and a run's whole output
 * (records.c). */
#define _GNU_SOURCE
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N pd_nats

#define READ_WAIT_MS 5000

int cl_objects_stream(pd_cluster *c, pd_err *e)
{
	if (c->o.objects && strcmp(c->o.objects, "nats")) {
		/* no fallback to the stream: objects a node wrote elsewhere would be missing */
		if (pd_cluster_objects_check(&c->o, e) < 0)
			return -1;
		return cl_s3_open(&c->o, &c->s3, e);
	}
	jsStreamConfig sc;
	const char *subject[] = {CL_OBJ_PREFIX ">"};
	bool explicit_bytes;
	cl_stream_kept(c, &sc, CL_OBJ_STREAM, subject, false, &explicit_bytes);
	return cl_stream_fit(c, &sc, explicit_bytes, e);
}

static natsStatus put_one(pd_cluster *c, const char *subject, const void *data, size_t len, uint64_t *seq)
{
	natsMsg *m = NULL;
	natsStatus s = N.natsMsg_Create(&m, subject, NULL, data, (int)len);
	jsPubOptions po;
	N.jsPubOptions_Init(&po);
	po.MaxWait = 10000;
	jsPubAck *pa = NULL;
	jsErrCode je = 0;
	if (s == NATS_OK)
		s = N.js_PublishMsg(&pa, c->js, m, &po, &je);
	if (s == NATS_OK && seq)
		*seq = pa->Sequence;
	N.natsMsg_Destroy(m);
	N.jsPubAck_Destroy(pa);
	return s;
}

void cl_objects_free(pd_cluster *c)
{
	cl_s3_free(c->s3);
	c->s3 = NULL;
}

int cl_obj_put(pd_cluster *c, const char *name, const void *data, size_t len, pd_err *e)
{
	if (c->s3)
		return cl_s3_put(c->s3, name, data, len, e);
	char t[400], subject[600];
	cl_result_key(name, t, sizeof t);
	size_t chunk = c->max_payload > 8192 ? (size_t)c->max_payload / 2 : 4096;
	if (chunk > (1u << 20))
		chunk = 1u << 20;
	snprintf(subject, sizeof subject, CL_OBJ_PREFIX "%s.c", t);
	uint64_t first = 0, n = 0;
	for (size_t off = 0; off < len || n == 0; off += chunk, n++) {
		size_t part = len - off < chunk ? len - off : chunk;
		uint64_t seq = 0;
		natsStatus s = put_one(c, subject, (const char *)data + off, part, &seq);
		if (s != NATS_OK)
			return pd_fail_as(e, EIO, "cluster: object %s: %s", name, cl_status(s));
		if (n == 0)
			first = seq;
		if (len == 0)
			break;
	}
	char meta[160];
	int ml = snprintf(meta, sizeof meta, "{\"bytes\":%zu,\"chunks\":%" PRIu64 ",\"first\":%" PRIu64 "}", len,
			  len ? n : 1, first);
	snprintf(subject, sizeof subject, CL_OBJ_PREFIX "%s.m", t);
	natsStatus s = put_one(c, subject, meta, (size_t)ml, NULL);
	if (s != NATS_OK)
		return pd_fail_as(e, EIO, "cluster: object %s: %s", name, cl_status(s));
	return 0;
}

int cl_obj_get(pd_cluster *c, const char *name, char **data, size_t *len, pd_err *e)
{
	if (c->s3)
		return cl_s3_get(c->s3, name, data, len, e);
	char t[400], subject[600];
	cl_result_key(name, t, sizeof t);
	snprintf(subject, sizeof subject, CL_OBJ_PREFIX "%s.m", t);
	natsMsg *m = NULL;
	jsErrCode je = 0;
	natsStatus s = N.js_GetLastMsg(&m, c->js, CL_OBJ_STREAM, subject, NULL, &je);
	if (s == NATS_NOT_FOUND || je == 10037 /* no message found */)
		return pd_fail(e, ENOENT, "no object %s in the cluster", name);
	if (s != NATS_OK)
		return pd_fail_as(e, EIO, "cluster: object %s: %s", name, cl_status(s));
	json_t *meta = json_loadb(N.natsMsg_GetData(m), (size_t)N.natsMsg_GetDataLength(m), 0, NULL);
	N.natsMsg_Destroy(m);
	uint64_t bytes = (uint64_t)json_integer_value(json_object_get(meta, "bytes"));
	uint64_t chunks = (uint64_t)json_integer_value(json_object_get(meta, "chunks"));
	uint64_t first = (uint64_t)json_integer_value(json_object_get(meta, "first"));
	json_decref(meta);
	char *buf = malloc(bytes + 1);
	if (!buf)
		return pd_fail(e, ENOMEM, "object %s", name);
	snprintf(subject, sizeof subject, CL_OBJ_PREFIX "%s.c", t);
	jsSubOptions so;
	N.jsSubOptions_Init(&so);
	so.Stream = CL_OBJ_STREAM;
	so.Ordered = true;
	so.Config.DeliverPolicy = js_DeliverByStartSequence;
	so.Config.OptStartSeq = first;
	natsSubscription *sub = NULL;
	s = N.js_SubscribeSync(&sub, c->js, subject, NULL, &so, &je);
	size_t got = 0;
	for (uint64_t i = 0; s == NATS_OK && i < chunks; i++) {
		natsMsg *cm = NULL;
		s = N.natsSubscription_NextMsg(&cm, sub, READ_WAIT_MS);
		if (s != NATS_OK)
			break;
		size_t part = (size_t)N.natsMsg_GetDataLength(cm);
		if (got + part > bytes) {
			N.natsMsg_Destroy(cm);
			s = NATS_ERR;
			break;
		}
		memcpy(buf + got, N.natsMsg_GetData(cm), part);
		got += part;
		N.natsMsg_Destroy(cm);
	}
	if (sub) {
		N.natsSubscription_Unsubscribe(sub);
		N.natsSubscription_Destroy(sub);
	}
	if (s != NATS_OK || got != bytes) {
		free(buf);
		/* a chunk gone (past the stream's age or size) or never read */
		return pd_fail_as(e, EIO, "cluster: object %s: %s", name, s != NATS_OK ? cl_status(s) : "incomplete");
	}
	buf[got] = 0;
	*data = buf;
	*len = got;
	return 0;
}
