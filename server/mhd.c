/* Loads libmicrohttpd on first use (see mhd.h for why). */
#define _GNU_SOURCE
#define PD_MHD_IMPL
#include "mhd.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

pd_mhd_table pd_mhd;

/* the soname the build linked against before (Debian: libmicrohttpd12) */
#define PD_MHD_SONAME "libmicrohttpd.so.12"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[256] = "libmicrohttpd not loaded";

static void load(void)
{
	void *h = dlopen(PD_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_error, sizeof load_error, "load %s (install libmicrohttpd12): %s", PD_MHD_SONAME,
			 dlerror());
		return;
	}
	pd_mhd_table t;
#define PD_MHD_SYM(name)                                                                         \
	if (!(*(void **)&t.name = dlsym(h, #name))) {                                            \
		snprintf(load_error, sizeof load_error, "%s lacks %s", PD_MHD_SONAME, #name);      \
		return;                                                                          \
	}
	PD_MHD_FUNCS(PD_MHD_SYM)
#undef PD_MHD_SYM
	pd_mhd = t;
	load_error[0] = 0;
}

int pd_mhd_load(pd_err *e)
{
	pthread_once(&once, load);
	if (load_error[0])
		return pd_fail(e, ELIBACC, "%s", load_error);
	return 0;
}
