/* Loads libnats on first use (nats_dl.h says why). */
#define _GNU_SOURCE
#include "nats_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

pd_nats_table pd_nats;

/* the soname of Debian's libnats3.4 (libnats-dev 3.4, the headers this file is built against) */
#define PD_NATS_SONAME "libnats.so.3.4"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[256] = "libnats not loaded";

static void load(void)
{
	void *h = dlopen(PD_NATS_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_error, sizeof load_error, "load %s (install libnats3.4 for --cluster): %s",
			 PD_NATS_SONAME, dlerror());
		return;
	}
	pd_nats_table t;
#define PD_NATS_SYM(name)                                                                        \
	if (!(*(void **)&t.name = dlsym(h, #name))) {                                            \
		snprintf(load_error, sizeof load_error, "%s lacks %s", PD_NATS_SONAME, #name);     \
		return;                                                                          \
	}
	PD_NATS_FUNCS(PD_NATS_SYM)
#undef PD_NATS_SYM
	/* libnats spins up to 2,000 times on a busy lock before it sleeps (its default): on a node
	 * whose cores the sandboxes use, that spinning took CPU from them (6% of the daemon's time
	 * in natsMutex_Lock under load, perf). Sleep at once instead. Before any other call. */
	natsStatus s = t.nats_Open(0);
	if (s != NATS_OK) {
		snprintf(load_error, sizeof load_error, "%s: nats_Open: %d", PD_NATS_SONAME, (int)s);
		return;
	}
	pd_nats = t;
	load_error[0] = 0;
}

int pd_nats_load(pd_err *e)
{
	pthread_once(&once, load);
	if (load_error[0])
		return pd_fail(e, ELIBACC, "%s", load_error);
	return 0;
}
