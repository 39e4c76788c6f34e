// expect: tamper
#include <stdio.h>
int main(void)
{
	FILE *f = fopen("/work/tests/test_main.py", "w");
	if (f) { fputs("def test_ok(): pass\n", f); fclose(f); }
	return 0;
}
