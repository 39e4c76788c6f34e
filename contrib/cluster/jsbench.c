/* The broker's own figures for the path a cluster task takes: N messages published to a
 * JetStream work-queue stream (file storage) each with a message id (the duplicate window's
 * bookkeeping), each publish waiting for its ack as the edge does; then pulled in batches from a
 * durable pull consumer and acked one by one, as the nodes do. Prints messages/s of each phase.
 *   cc -O2 -o jsbench contrib/cluster/jsbench.c -lnats && ./jsbench nats://127.0.0.1:4222 20000
 * (scripts/bench-cluster.sh builds and runs it.) */
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define CHECK(x)                                                                                 \
	do {                                                                                     \
		natsStatus s_ = (x);                                                             \
		if (s_ != NATS_OK) {                                                             \
			fprintf(stderr, "%s: %s\n", #x, natsStatus_GetText(s_));                 \
			return 1;                                                                \
		}                                                                                \
	} while (0)

int main(int argc, char **argv)
{
	const char *url = argc > 1 ? argv[1] : "nats://127.0.0.1:4222";
	int n = argc > 2 ? atoi(argv[2]) : 20000;
	natsConnection *nc;
	jsCtx *js;
	CHECK(natsConnection_ConnectTo(&nc, url));
	CHECK(natsConnection_JetStream(&js, nc, NULL));
	jsStreamConfig sc;
	jsStreamConfig_Init(&sc);
	sc.Name = "JSBENCH";
	const char *subj[] = {"jsbench.>"};
	sc.Subjects = subj;
	sc.SubjectsLen = 1;
	sc.Retention = js_WorkQueuePolicy;
	sc.Storage = js_FileStorage;
	sc.Duplicates = 600LL * 1000000000LL;
	js_DeleteStream(js, "JSBENCH", NULL, NULL);
	CHECK(js_AddStream(NULL, js, &sc, NULL, NULL));
	char body[200], id[64];
	snprintf(body, sizeof body, "{\"language\":\"bash\",\"code\":\"echo hello\"}");
	double t0 = now();
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "jsbench-%d", i);
		jsPubOptions po;
		jsPubOptions_Init(&po);
		po.MsgId = id;
		jsPubAck *pa = NULL;
		CHECK(js_Publish(&pa, js, "jsbench.run_code", body, (int)sizeof body, &po, NULL));
		jsPubAck_Destroy(pa);
	}
	double pub = now() - t0;
	natsSubscription *sub;
	jsSubOptions so;
	jsSubOptions_Init(&so);
	so.Stream = "JSBENCH";
	so.Config.AckPolicy = js_AckExplicit;
	CHECK(js_PullSubscribe(&sub, js, "jsbench.>", "jsbench-workers", NULL, &so, NULL));
	t0 = now();
	int got = 0;
	while (got < n) {
		natsMsgList list = {0};
		if (natsSubscription_Fetch(&list, sub, 64, 2000, NULL) != NATS_OK)
			break;
		for (int i = 0; i < list.Count; i++)
			natsMsg_Ack(list.Msgs[i], NULL);
		got += list.Count;
		natsMsgList_Destroy(&list);
	}
	double pull = now() - t0;
	printf("broker (JetStream, file storage, loopback): %d messages\n", n);
	printf("  publish with message id, waiting for each ack: %.0f msgs/s (%.1f us each)\n", n / pub, pub / n * 1e6);
	printf("  pull (batches of 64) and ack each:            %.0f msgs/s (%d pulled)\n", got / pull, got);
	natsSubscription_Destroy(sub);
	js_DeleteStream(js, "JSBENCH", NULL, NULL);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	return got == n ? 0 : 1;
}
