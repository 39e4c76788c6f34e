#include <stdio.h>

int main(void)
{
	volatile int *p = NULL;
	puts("about to dereference NULL");
	fflush(stdout);
	return *p;
}
