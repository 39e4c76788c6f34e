/* selfexe: the CVE-2019-5736 family. Tries to open this process's own executable and the sandbox
 * init's (a copy of the host's paddock) for writing through /proc, and to read init's links and
 * memory. Prints "NAME=OK|ERRNO" per attempt; no attempt writes anything even when it opens. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void try_open(const char *name, const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	const char *n = fd < 0 ? strerrorname_np(errno) : "OK";
	printf("%s=%s\n", name, n ? n : "E?");
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	char buf[256];
	try_open("self_exe_wronly", "/proc/self/exe", O_WRONLY);
	try_open("self_exe_rdwr", "/proc/self/exe", O_RDWR);
	try_open("init_exe_rdonly", "/proc/1/exe", O_RDONLY);
	try_open("init_exe_wronly", "/proc/1/exe", O_WRONLY);
	try_open("init_mem", "/proc/1/mem", O_RDONLY);
	try_open("init_environ", "/proc/1/environ", O_RDONLY);
	try_open("init_root", "/proc/1/root/", O_RDONLY | O_DIRECTORY);
	ssize_t n = readlink("/proc/1/exe", buf, sizeof buf - 1);
	const char *e = n < 0 ? strerrorname_np(errno) : "OK";
	printf("init_exe_readlink=%s\n", e ? e : "E?");
	return 0;
}
