/* iodev.c: the disks I/O limits apply to: a path on a disk gives that disk once however many paths
 * share it; paths on file systems without a block device (proc, sysfs, tmpfs) give none; a
 * partition gives its whole disk (the throttles take no partitions) when the machine has one to
 * look at; a missing path is skipped. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int main(void)
{
	plan(7);
	pd_iodev d[PD_MAX_IODEVS];
	const char *anon[] = {"/proc", "/sys", "/dev/shm"};
	is_int(pd_io_devices(anon, 3, d, PD_MAX_IODEVS), 0, "proc, sysfs and tmpfs: no disk");
	struct stat st;
	stat("/", &st);
	const char *root[] = {"/", "/usr", "/no/such/path", "/etc"};
	size_t n = pd_io_devices(root, 4, d, PD_MAX_IODEVS);
	if (major(st.st_dev) == 0) {
		is_int(n, 0, "the root file system has no block device here (overlay): none");
		ok(1, "# skip: no disk under /");
		ok(1, "# skip: no disk under /");
	} else {
		is_int(n, 1, "/, /usr and /etc on one disk (a missing path skipped): one entry");
		char p[96];
		snprintf(p, sizeof p, "/sys/dev/block/%u:%u/partition", major(st.st_dev), minor(st.st_dev));
		bool part = access(p, F_OK) == 0;
		if (!part) {
			ok(d[0].maj == major(st.st_dev) && d[0].min == minor(st.st_dev),
			   "a whole disk is itself (%u:%u)", d[0].maj, d[0].min);
			ok(1, "# skip: / is not on a partition here (tests/isolation/iolimits.t makes one)");
		} else {
			ok(d[0].maj != major(st.st_dev) || d[0].min != minor(st.st_dev),
			   "a partition gives another device: its disk (%u:%u)", d[0].maj, d[0].min);
			snprintf(p, sizeof p, "/sys/dev/block/%u:%u/partition", d[0].maj, d[0].min);
			ok(access(p, F_OK) < 0, "which is a whole disk");
		}
	}
	is_int(pd_io_devices(root, 4, d, 0), 0, "max 0: nothing written");
	pd_limits l;
	memset(&l, 0, sizeof l);
	ok(!pd_limits_have_io(&l), "no I/O limit set: none to apply");
	l.io_write_iops = 5;
	ok(pd_limits_have_io(&l), "one set: the limits apply");
	return done();
}
