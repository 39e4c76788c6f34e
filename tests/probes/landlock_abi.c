/* landlock_abi: prints the Landlock ABI version the kernel answers (landlock_create_ruleset with
 * LANDLOCK_CREATE_RULESET_VERSION), or "absent <errno name>" when it has none (ENOSYS: not built;
 * EOPNOTSUPP: not enabled at boot). Run on the host by tests/isolation/landlock.t to know what the
 * record's "landlock" must say; the raw syscall, since libc has no wrapper. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (v < 0) {
		printf("absent %s\n", errno == ENOSYS	    ? "ENOSYS"
				      : errno == EOPNOTSUPP ? "EOPNOTSUPP"
							    : "other");
		return 1;
	}
	printf("%ld\n", v);
	return 0;
}
