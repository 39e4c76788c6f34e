/* libmicrohttpd, loaded when the first server starts rather than when paddock starts.
 *
 * Why: Debian's libmicrohttpd pulls in gnutls and about a dozen libraries; loading them and
 * running their constructors costs milliseconds at every process start, and `paddock exec`, which
 * never serves HTTP, paid it on each call. server/http/http.h includes this header after
 * <microhttpd.h>: the MHD_* names it calls become calls through a table that pd_mhd_load() fills
 * with dlopen/dlsym. The prototypes are the library's own (__typeof__), so the compiler checks
 * every call as before. */
#ifndef PADDOCK_MHD_H
#define PADDOCK_MHD_H

#include "paddock.h"

#include <microhttpd.h>

#define PD_MHD_FUNCS(X)                                                                          \
	X(MHD_add_response_header)                                                               \
	X(MHD_create_response_from_buffer)                                                       \
	X(MHD_create_response_from_callback)                                                     \
	X(MHD_create_response_from_fd64)                                                         \
	X(MHD_destroy_response)                                                                  \
	X(MHD_get_connection_info)                                                               \
	X(MHD_get_daemon_info)                                                                   \
	X(MHD_lookup_connection_value)                                                           \
	X(MHD_lookup_connection_value_n)                                                         \
	X(MHD_queue_response)                                                                    \
	X(MHD_quiesce_daemon)                                                                    \
	X(MHD_resume_connection)                                                                 \
	X(MHD_start_daemon)                                                                      \
	X(MHD_stop_daemon)                                                                       \
	X(MHD_suspend_connection)

#define PD_MHD_FIELD(name) __typeof__(name) *name;
typedef struct pd_mhd_table {
	PD_MHD_FUNCS(PD_MHD_FIELD)
} pd_mhd_table;
#undef PD_MHD_FIELD

extern pd_mhd_table pd_mhd;

/* Loads the library once (thread-safe); returns 0, or -1 with a message naming what is missing. */
int pd_mhd_load(pd_err *e);

#ifndef PD_MHD_IMPL
#define MHD_add_response_header pd_mhd.MHD_add_response_header
#define MHD_create_response_from_buffer pd_mhd.MHD_create_response_from_buffer
#define MHD_create_response_from_callback pd_mhd.MHD_create_response_from_callback
#define MHD_create_response_from_fd64 pd_mhd.MHD_create_response_from_fd64
#define MHD_destroy_response pd_mhd.MHD_destroy_response
#define MHD_get_connection_info pd_mhd.MHD_get_connection_info
#define MHD_get_daemon_info pd_mhd.MHD_get_daemon_info
#define MHD_lookup_connection_value pd_mhd.MHD_lookup_connection_value
#define MHD_lookup_connection_value_n pd_mhd.MHD_lookup_connection_value_n
#define MHD_queue_response pd_mhd.MHD_queue_response
#define MHD_quiesce_daemon pd_mhd.MHD_quiesce_daemon
#define MHD_resume_connection pd_mhd.MHD_resume_connection
#define MHD_start_daemon pd_mhd.MHD_start_daemon
#define MHD_stop_daemon pd_mhd.MHD_stop_daemon
#define MHD_suspend_connection pd_mhd.MHD_suspend_connection
#endif

#endif
