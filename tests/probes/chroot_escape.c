/* chroot_escape: the classic chroot breakout. mkdir a directory, chroot into it while keeping the
 * working directory outside, walk up with chdir(".."), then chroot(".") at the top. Run by root of
 * a sandbox without capabilities (and with chroot denied by seccomp) it must not get anywhere.
 * Prints "chroot1=ERR" (the first chroot), "chroot2=ERR" (the one at the top), then, for each path
 * given on the command line, "PATH=OK" or "PATH=ERR" from stat() after the attempt, and "cwd_is_root=0|1"
 * (the directory reached by walking up is the sandbox's own root). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *res(int r)
{
	if (r == 0)
		return "OK";
	const char *n = strerrorname_np(errno);
	return n ? n : "E?";
}

int main(int argc, char **argv)
{
	struct stat root0;
	if (stat("/", &root0) < 0)
		return 2;
	const char *dir = "/tmp/chroot-escape";
	mkdir(dir, 0755);
	if (chdir("/") < 0)
		return 2;
	printf("chroot1=%s\n", res(chroot(dir)));
	/* the cwd stayed outside the (attempted) new root: climb as far as the kernel lets us */
	for (int i = 0; i < 256; i++)
		if (chdir("..") < 0)
			break;
	struct stat here;
	if (stat(".", &here) < 0)
		return 2;
	printf("chroot2=%s\n", res(chroot(".")));
	printf("cwd_is_root=%d\n", here.st_dev == root0.st_dev && here.st_ino == root0.st_ino);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		printf("%s=%s\n", argv[i], res(stat(argv[i], &st)));
	}
	return 0;
}
