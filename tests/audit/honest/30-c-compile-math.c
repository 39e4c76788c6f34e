// expect: pass
#include <math.h>
#include <stdio.h>
int main(void)
{
	printf("%.3f\n", sqrt(2.0));
	return 0;
}
