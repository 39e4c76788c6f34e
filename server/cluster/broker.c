/* The broker's small tools, shared by every file of server/cluster/ and calling none of them:
 * a status's text, the key a request id (or a template name) takes in the broker, the results
 * bucket's read, the making of a stream that must fit the broker's store, and the destruction of
 * messages in batches (libnats wakes its collector thread for each message freed alone). The files above
 * (edge.c, executor.c, records.c, objects.c, refs.c, nodes.c) use these; bridge.c, which starts
 * them all, sits on top. */
#define _GNU_SOURCE
#include "cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N pd_nats

const char *cl_status(natsStatus s)
{
	return N.natsStatus_GetText ? N.natsStatus_GetText(s) : "nats";
}

void cl_result_key(const char *id, char *key, size_t len)
{
	size_t k = 0;
	for (const unsigned char *p = (const unsigned char *)id; *p && k + 4 < len; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			     *p == '-' || *p == '_';
		if (plain)
			key[k++] = (char)*p;
		else
			k += (size_t)snprintf(key + k, len - k, "=%02X", *p);
	}
	key[k] = 0;
}

int cl_result_get(pd_cluster *c, const char *request_id, char **val, size_t *len)
{
	char key[400];
	cl_result_key(request_id, key, sizeof key);
	kvEntry *en = NULL;
	natsStatus s = N.kvStore_Get(&en, c->results, key);
	if (s == NATS_NOT_FOUND)
		return 0;
	if (s != NATS_OK)
		return -1;
	int n = N.kvEntry_ValueLen(en);
	*val = malloc((size_t)n + 1);
	if (*val) {
		if (n > 0) /* an empty value may have no buffer at all */
			memcpy(*val, N.kvEntry_Value(en), (size_t)n);
		(*val)[n] = 0;
		*len = (size_t)n;
	}
	N.kvEntry_Destroy(en);
	return *val ? 1 : -1;
}

/* Makes the stream, or brings an existing one to sc. The broker reserves a stream's MaxBytes in
 * its store when it makes it: a size the store has no room for is refused (JetStream error
 * 10047, insufficient resources). A size given by the operator (--cluster-records-max-bytes)
 * stands or fails; the default is halved until the broker takes it (64 MiB at least), and the
 * log says what it took. */
int cl_stream_fit(pd_cluster *c, jsStreamConfig *sc, bool explicit_bytes, pd_err *e)
{
	for (;;) {
		jsStreamInfo *si = NULL;
		jsErrCode je = 0, je2 = 0;
		natsStatus s = N.js_AddStream(&si, c->js, sc, NULL, &je);
		N.jsStreamInfo_Destroy(si);
		si = NULL;
		if (s != NATS_OK && je != 10047) {
			s = N.js_UpdateStream(&si, c->js, sc, NULL, &je2);
			N.jsStreamInfo_Destroy(si);
			if (je2 == 10047)
				je = je2;
		}
		if (s == NATS_OK)
			return 0;
		if (je == 10047 && !explicit_bytes && sc->MaxBytes > (64 << 20)) {
			sc->MaxBytes /= 2;
			pd_log("warn", "cluster: the broker's store has no room for the stream's size; halved",
			       PD_LS("stream", sc->Name), PD_LU("max_bytes", (uint64_t)sc->MaxBytes));
			continue;
		}
		return pd_fail_as(e, EIO, "cluster: stream %s: %s (JetStream error %d%s)", sc->Name, cl_status(s),
				  (int)(je ? je : je2),
				  je == 10047 ? ": the broker's store (max_file_store) has no room for its max bytes" : "");
	}
}

void cl_stream_kept(pd_cluster *c, jsStreamConfig *sc, const char *name, const char **subject, bool dedupe,
		    bool *explicit_bytes)
{
	N.jsStreamConfig_Init(sc);
	sc->Name = name;
	sc->Subjects = subject;
	sc->SubjectsLen = 1;
	sc->Retention = js_LimitsPolicy;
	sc->Storage = js_FileStorage;
	sc->Discard = js_DiscardOld;
	/* the retention the operator gave (0: the defaults) */
	uint64_t age = c->o.records_max_age_s ? c->o.records_max_age_s : 30u * 86400u;
	sc->MaxAge = (int64_t)age * 1000000000LL;
	uint64_t bytes = c->o.records_max_bytes ? c->o.records_max_bytes : (10ull << 30);
	sc->MaxBytes = bytes == UINT64_MAX ? -1 : (int64_t)bytes;
	*explicit_bytes = c->o.records_max_bytes != 0;
	if (dedupe) {
		uint64_t dup = c->o.window_s < age ? c->o.window_s : age;
		sc->Duplicates = (int64_t)dup * 1000000000LL;
	}
}

void cl_msg_drop(pd_cluster *c, natsMsg *m)
{
	if (!m)
		return;
	natsMsg *batch[CL_DROP_BATCH];
	unsigned n = 0;
	pthread_mutex_lock(&c->drop_mu);
	c->drop[c->ndrop++] = m;
	if (c->ndrop == CL_DROP_BATCH) {
		n = c->ndrop;
		memcpy(batch, c->drop, n * sizeof *batch);
		c->ndrop = 0;
	}
	pthread_mutex_unlock(&c->drop_mu);
	for (unsigned i = 0; i < n; i++)
		N.natsMsg_Destroy(batch[i]);
}

void cl_msg_flush(pd_cluster *c)
{
	natsMsg *batch[CL_DROP_BATCH];
	pthread_mutex_lock(&c->drop_mu);
	unsigned n = c->ndrop;
	memcpy(batch, c->drop, n * sizeof *batch);
	c->ndrop = 0;
	pthread_mutex_unlock(&c->drop_mu);
	for (unsigned i = 0; i < n; i++)
		N.natsMsg_Destroy(batch[i]);
}
