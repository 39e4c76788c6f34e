/* ptrace_probe: tries to trace: PTRACE_TRACEME, PTRACE_ATTACH and PTRACE_SEIZE on a child of its
 * own, PTRACE_ATTACH on pid 1 (the sandbox's init), and process_vm_readv of the child's memory.
 * Prints "NAME=OK|ERRNO" per attempt. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *name, long r)
{
	const char *n = r < 0 ? strerrorname_np(errno) : "OK";
	printf("%s=%s\n", name, n ? n : "E?");
	fflush(stdout);
}

static volatile long secret = 0x5ec12e7;

int main(void)
{
	pid_t child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		for (;;)
			pause();
	}
	show("traceme", syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL));
	show("attach_child", syscall(SYS_ptrace, PTRACE_ATTACH, child, NULL, NULL));
	show("seize_child", syscall(SYS_ptrace, PTRACE_SEIZE, child, NULL, NULL));
	show("attach_init", syscall(SYS_ptrace, PTRACE_ATTACH, 1, NULL, NULL));
	long v = 0;
	struct iovec local = {&v, sizeof v}, remote = {(void *)&secret, sizeof secret};
	show("vm_readv_child", syscall(SYS_process_vm_readv, child, &local, 1, &remote, 1, 0));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}
