// expect: pass
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(7);
	int st;
	waitpid(p, &st, 0);
	printf("child %d\n", WEXITSTATUS(st));
	return 0;
}
