/* Libraries loaded on first use (see paddock.h): dlopen and dlsym once per library, under one
 * lock; afterwards a call through the table costs an atomic load. */
#define _GNU_SOURCE
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;

static void load(pd_dl_lib *l)
{
	void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(l->error, sizeof l->error, "load %s (install %s): %s", l->soname, l->package, dlerror());
		__atomic_store_n(&l->state, -1, __ATOMIC_RELEASE);
		return;
	}
	for (int i = 0; l->names[i]; i++) {
		void *f = dlsym(h, l->names[i]);
		if (!f) {
			snprintf(l->error, sizeof l->error, "%s lacks %s", l->soname, l->names[i]);
			__atomic_store_n(&l->state, -1, __ATOMIC_RELEASE);
			return; /* the handle stays open: harmless, and dlclose of a half-used library is not */
		}
		l->fn[i] = f;
	}
	__atomic_store_n(&l->state, 1, __ATOMIC_RELEASE);
}

int pd_dl_load(pd_dl_lib *l, pd_err *e)
{
	int st = __atomic_load_n(&l->state, __ATOMIC_ACQUIRE);
	if (!st) {
		pthread_mutex_lock(&dl_lock);
		if (!__atomic_load_n(&l->state, __ATOMIC_ACQUIRE))
			load(l);
		pthread_mutex_unlock(&dl_lock);
		st = __atomic_load_n(&l->state, __ATOMIC_ACQUIRE);
	}
	if (st < 0)
		return pd_fail_as(e, ELIBACC, "%s", l->error);
	return 0;
}

void *pd_dl_fn(pd_dl_lib *l, int i)
{
	if (__atomic_load_n(&l->state, __ATOMIC_ACQUIRE) > 0)
		return l->fn[i];
	if (pd_dl_load(l, NULL) < 0) {
		/* no entry point checked first and the library is not there: the process could not
		 * have started when it was linked; say why rather than call through NULL */
		fprintf(stderr, "paddock: %s\n", l->error);
		abort();
	}
	return l->fn[i];
}

/* ---- the libraries of lib/ ---- */

#define PD_DLA_IMPL
#define PD_DLC_IMPL
#include "dl_archive.h"
#include "dl_crypto.h"

#define PD_DL_NAME(name) #name,
static const char *const archive_names[] = {PD_DLA_FUNCS(PD_DL_NAME) NULL};
static void *archive_fn[PD_DLA_NFUNCS];
pd_dl_lib pd_dla_lib = {"libarchive.so.13", "libarchive13", archive_names, archive_fn, 0, ""};

static const char *const crypto_names[] = {PD_DLC_FUNCS(PD_DL_NAME) NULL};
static void *crypto_fn[PD_DLC_NFUNCS];
pd_dl_lib pd_dlc_lib = {"libcrypto.so.3", "libssl3", crypto_names, crypto_fn, 0, ""};
