/* foreign_abi: makes one system call through an ABI the sandbox's filter was not written for.
 *   foreign_abi int80   getpid through the i386 entry (int $0x80, eax = 20)
 *   foreign_abi x32     getpid with the x32 bit set (0x40000000 | 39)
 * Prints "alive RESULT" if the call returned; in the sandbox the process must be killed (SIGSYS)
 * before it can print anything. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long r;
	if (argc != 2)
		return 2;
	fflush(stdout);
	if (!strcmp(argv[1], "int80")) {
		long nr = 20; /* __NR_getpid on i386 */
		__asm__ volatile("int $0x80" : "=a"(r) : "a"(nr) : "memory");
	} else if (!strcmp(argv[1], "x32")) {
		long nr = 0x40000000L | 39; /* __X32_SYSCALL_BIT | __NR_getpid */
		__asm__ volatile("syscall" : "=a"(r) : "a"(nr) : "rcx", "r11", "memory");
	} else {
		return 2;
	}
	printf("alive %ld\n", r);
	return 0;
}
