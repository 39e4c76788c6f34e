/* SQLite's table (sqlite_dl.h): loaded by pd_store_open, the one way into the store. */
#define PD_DLS_IMPL
#include "sqlite_dl.h"

#include <stddef.h>

#define PD_DL_NAME(name) #name,
static const char *const names[] = {PD_DLS_FUNCS(PD_DL_NAME) NULL};
static void *fn[PD_DLS_NFUNCS];
pd_dl_lib pd_dls_lib = {"libsqlite3.so.0", "libsqlite3-0", names, fn, 0, ""};
