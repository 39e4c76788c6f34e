/* The disks a sandbox's block I/O limits apply to: those behind its image's layers, its binds and
 * the state directory. The cgroup throttles (v2 io.max, v1 blkio.throttle.*) take whole disks,
 * never partitions, so a file system on a partition is charged to the disk that holds it, which
 * is where the kernel counts the I/O too. */
#define _GNU_SOURCE
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

bool pd_limits_have_io(const pd_limits *l)
{
	return l->io_read_bps || l->io_write_bps || l->io_read_iops || l->io_write_iops;
}

/* The disk that holds block device maj:min: itself, or for a partition its parent in sysfs
 * (/sys/dev/block/M:m links to .../block/sda/sda1, whose parent directory has the disk's "dev"). */
static void whole_disk(unsigned *maj, unsigned *min)
{
	char p[128], real[PATH_MAX], dev[32];
	snprintf(p, sizeof p, "/sys/dev/block/%u:%u/partition", *maj, *min);
	if (access(p, F_OK) < 0)
		return; /* a whole disk (or sysfs says nothing: taken as it is) */
	snprintf(p, sizeof p, "/sys/dev/block/%u:%u", *maj, *min);
	if (!realpath(p, real))
		return;
	char *slash = strrchr(real, '/');
	if (!slash)
		return;
	snprintf(slash, sizeof real - (size_t)(slash - real), "/dev"); /* .../block/sda/dev */
	unsigned a, b;
	if (pd_read_file(real, dev, sizeof dev) > 0 && sscanf(dev, "%u:%u", &a, &b) == 2) {
		*maj = a;
		*min = b;
	}
}

size_t pd_io_devices(const char *const *paths, size_t n, pd_iodev *out, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k < max; i++) {
		struct stat st;
		if (!paths[i] || stat(paths[i], &st) < 0)
			continue;
		unsigned maj = major(st.st_dev), min = minor(st.st_dev);
		if (maj == 0)
			continue; /* an anonymous device: tmpfs, overlay, proc... no disk to throttle */
		whole_disk(&maj, &min);
		bool seen = false;
		for (size_t j = 0; j < k && !seen; j++)
			seen = out[j].maj == maj && out[j].min == min;
		if (!seen)
			out[k++] = (pd_iodev){maj, min};
	}
	return k;
}
