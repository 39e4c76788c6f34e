/* The store's schema (store_schema.c): made, or an older store's brought up to date. */
#ifndef PD_STORE_SCHEMA_H
#define PD_STORE_SCHEMA_H
#include "server.h"

#include "sqlite_dl.h"

/* Creates the tables and indexes db lacks and adds the columns an older store lacks; path names
 * the store in e. Returns 0, or -1 with e set. */
int store_schema(sqlite3 *db, const char *path, pd_err *e);
#endif
