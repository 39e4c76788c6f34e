/* SQLite, loaded on first use (paddock.h: pd_dl_lib): the results store (store.c, review.c),
 * opened by pd_store_open, which loads it first. Include instead of <sqlite3.h>. */
#ifndef PADDOCK_SQLITE_DL_H
#define PADDOCK_SQLITE_DL_H

#include "paddock.h"

#include <sqlite3.h>

#define PD_DLS_FUNCS(X) \
	X(sqlite3_bind_double) \
	X(sqlite3_bind_int) \
	X(sqlite3_bind_int64) \
	X(sqlite3_bind_null) \
	X(sqlite3_bind_text) \
	X(sqlite3_busy_timeout) \
	X(sqlite3_changes) \
	X(sqlite3_clear_bindings) \
	X(sqlite3_close) \
	X(sqlite3_column_bytes) \
	X(sqlite3_column_double) \
	X(sqlite3_column_int) \
	X(sqlite3_column_int64) \
	X(sqlite3_column_text) \
	X(sqlite3_column_type) \
	X(sqlite3_errmsg) \
	X(sqlite3_exec) \
	X(sqlite3_extended_errcode) \
	X(sqlite3_finalize) \
	X(sqlite3_free) \
	X(sqlite3_last_insert_rowid) \
	X(sqlite3_open_v2) \
	X(sqlite3_prepare_v2) \
	X(sqlite3_reset) \
	X(sqlite3_step) \
	X(sqlite3_system_errno) \
	X(sqlite3_wal_checkpoint_v2)

#define PD_DLS_ENUM(name) PD_DLS_##name,
enum { PD_DLS_FUNCS(PD_DLS_ENUM) PD_DLS_NFUNCS };
#undef PD_DLS_ENUM
extern pd_dl_lib pd_dls_lib; /* libsqlite3.so.0 */

#ifndef PD_DLS_IMPL
#define sqlite3_bind_double ((__typeof__(sqlite3_bind_double) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_bind_double))
#define sqlite3_bind_int ((__typeof__(sqlite3_bind_int) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_bind_int))
#define sqlite3_bind_int64 ((__typeof__(sqlite3_bind_int64) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_bind_int64))
#define sqlite3_bind_null ((__typeof__(sqlite3_bind_null) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_bind_null))
#define sqlite3_bind_text ((__typeof__(sqlite3_bind_text) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_bind_text))
#define sqlite3_busy_timeout ((__typeof__(sqlite3_busy_timeout) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_busy_timeout))
#define sqlite3_changes ((__typeof__(sqlite3_changes) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_changes))
#define sqlite3_clear_bindings ((__typeof__(sqlite3_clear_bindings) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_clear_bindings))
#define sqlite3_close ((__typeof__(sqlite3_close) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_close))
#define sqlite3_column_bytes ((__typeof__(sqlite3_column_bytes) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_column_bytes))
#define sqlite3_column_double ((__typeof__(sqlite3_column_double) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_column_double))
#define sqlite3_column_int ((__typeof__(sqlite3_column_int) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_column_int))
#define sqlite3_column_int64 ((__typeof__(sqlite3_column_int64) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_column_int64))
#define sqlite3_column_text ((__typeof__(sqlite3_column_text) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_column_text))
#define sqlite3_column_type ((__typeof__(sqlite3_column_type) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_column_type))
#define sqlite3_errmsg ((__typeof__(sqlite3_errmsg) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_errmsg))
#define sqlite3_exec ((__typeof__(sqlite3_exec) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_exec))
#define sqlite3_extended_errcode ((__typeof__(sqlite3_extended_errcode) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_extended_errcode))
#define sqlite3_finalize ((__typeof__(sqlite3_finalize) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_finalize))
#define sqlite3_free ((__typeof__(sqlite3_free) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_free))
#define sqlite3_last_insert_rowid ((__typeof__(sqlite3_last_insert_rowid) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_last_insert_rowid))
#define sqlite3_open_v2 ((__typeof__(sqlite3_open_v2) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_open_v2))
#define sqlite3_prepare_v2 ((__typeof__(sqlite3_prepare_v2) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_prepare_v2))
#define sqlite3_reset ((__typeof__(sqlite3_reset) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_reset))
#define sqlite3_step ((__typeof__(sqlite3_step) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_step))
#define sqlite3_system_errno ((__typeof__(sqlite3_system_errno) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_system_errno))
#define sqlite3_wal_checkpoint_v2 ((__typeof__(sqlite3_wal_checkpoint_v2) *)pd_dl_fn(&pd_dls_lib, PD_DLS_sqlite3_wal_checkpoint_v2))
#endif

#endif
