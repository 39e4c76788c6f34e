/* The gvisor tier's parts: the OCI bundle (spec.c) and the supervised runsc run (run.c). */
#ifndef PADDOCK_GVISOR_H
#define PADDOCK_GVISOR_H

#include "internal.h"

/* A bundle directory: config.json, and rootfs when the image is layers (an overlay mounted on
 * the host, read-only: runsc's own in-memory overlay takes the writes). */
typedef struct pd_gv_bundle {
	char dir[PD_PATH];
	char rootfs[PD_PATH];
	bool rootfs_mounted;
} pd_gv_bundle;

/* Makes the bundle for o and x under parent; cgroup_path is the cgroup (relative to each
 * hierarchy's root) runsc joins, made and limited beforehand by paddock's cgroup backend. */
int pd_gv_bundle_make(pd_gv_bundle *b, const char *parent, const pd_sandbox_opts *o, const pd_exec_opts *x,
		      const pd_limits *lim, const char *cgroup_path, const char *default_image, pd_err *e);
/* Unmounts and removes what pd_gv_bundle_make made. */
void pd_gv_bundle_remove(pd_gv_bundle *b);

#endif
