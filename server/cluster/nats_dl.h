/* libnats (the NATS C client, with JetStream), loaded only when a node joins a cluster.
 *
 * Why dlopen and not -lnats: Debian's libnats pulls in libssl, libcrypto and libprotobuf-c, whose
 * loading and constructors every `paddock` process would pay (exec, run, bench never talk to a
 * broker), and a single-node host would need the package installed for a feature it does not use.
 * With dlopen the single-node binary has no dependency on it: only `serve --cluster` needs
 * libnats3.4 present, and says so when it is not. As in server/mhd.h, the prototypes are the
 * library's own (__typeof__), so the compiler checks every call. */
#ifndef PADDOCK_NATS_DL_H
#define PADDOCK_NATS_DL_H

#include "paddock.h"

#include <nats/nats.h>

#define PD_NATS_FUNCS(X)                                                                         \
	X(nats_Open)                                                                             \
	X(natsOptions_Create)                                                                    \
	X(natsOptions_Destroy)                                                                   \
	X(natsOptions_SetURL)                                                                    \
	X(natsOptions_SetMaxReconnect)                                                           \
	X(natsOptions_SetReconnectWait)                                                          \
	X(natsOptions_SetRetryOnFailedConnect)                                                   \
	X(natsOptions_SetTimeout)                                                                \
	X(natsOptions_SetPingInterval)                                                           \
	X(natsOptions_SetReconnectBufSize)                                                       \
	X(natsOptions_SetSendAsap)                                                               \
	X(natsConnection_Connect)                                                                \
	X(natsConnection_Close)                                                                  \
	X(natsConnection_Destroy)                                                                \
	X(natsConnection_JetStream)                                                              \
	X(natsConnection_Publish)                                                                \
	X(natsConnection_Subscribe)                                                              \
	X(natsConnection_SubscribeSync)                                                          \
	X(natsConnection_PublishMsg)                                                             \
	X(natsConnection_GetMaxPayload)                                                          \
	X(natsConnection_Status)                                                                 \
	X(natsSubscription_Unsubscribe)                                                          \
	X(natsSubscription_Destroy)                                                              \
	X(natsSubscription_Fetch)                                                                \
	X(natsSubscription_NextMsg)                                                              \
	X(natsSubscription_GetConsumerInfo)                                                      \
	X(js_SubscribeSync)                                                                      \
	X(js_GetLastMsg)                                                                         \
	X(natsMsgList_Destroy)                                                                   \
	X(natsMsg_Create)                                                                        \
	X(natsMsg_Destroy)                                                                       \
	X(natsMsg_GetData)                                                                       \
	X(natsMsg_GetSubject)                                                                    \
	X(natsMsg_GetDataLength)                                                                 \
	X(natsMsgHeader_Set)                                                                     \
	X(natsMsgHeader_Get)                                                                     \
	X(natsMsg_GetMetaData)                                                                   \
	X(jsMsgMetaData_Destroy)                                                                 \
	X(natsMsg_Ack)                                                                           \
	X(natsMsg_NakWithDelay)                                                                  \
	X(natsMsg_InProgress)                                                                    \
	X(natsStatus_GetText)                                                                    \
	X(jsOptions_Init)                                                                        \
	X(jsStreamConfig_Init)                                                                   \
	X(jsSubOptions_Init)                                                                     \
	X(jsPubOptions_Init)                                                                     \
	X(js_AddStream)                                                                          \
	X(js_UpdateStream)                                                                       \
	X(jsStreamInfo_Destroy)                                                                  \
	X(js_PublishMsg)                                                                         \
	X(js_PublishMsgAsync)                                                                    \
	X(js_PublishAsyncComplete)                                                               \
	X(js_PublishAsyncGetPendingList)                                                         \
	X(jsPubAck_Destroy)                                                                      \
	X(js_PullSubscribe)                                                                      \
	X(js_UpdateConsumer)                                                                     \
	X(jsConsumerInfo_Destroy)                                                                \
	X(jsCtx_Destroy)                                                                         \
	X(kvConfig_Init)                                                                         \
	X(js_CreateKeyValue)                                                                     \
	X(js_KeyValue)                                                                           \
	X(kvStore_Create)                                                                        \
	X(kvStore_Put)                                                                           \
	X(kvStore_Get)                                                                           \
	X(kvStore_Keys)                                                                          \
	X(kvKeysList_Destroy)                                                                    \
	X(kvStore_Destroy)                                                                       \
	X(kvEntry_Value)                                                                         \
	X(kvEntry_ValueLen)                                                                      \
	X(kvEntry_Destroy)

#define PD_NATS_FIELD(name) __typeof__(name) *name;
typedef struct pd_nats_table {
	PD_NATS_FUNCS(PD_NATS_FIELD)
} pd_nats_table;
#undef PD_NATS_FIELD

extern pd_nats_table pd_nats;

/* Loads libnats once (thread-safe); 0, or -1 with a message saying what to install. */
int pd_nats_load(pd_err *e);

#endif
