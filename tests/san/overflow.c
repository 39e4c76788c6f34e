/* make asan's check of the report path of the paddock processes a test file runs itself
 * (tests/lib.sh sb, tests/isolation/iso.sh sbt keep their stderr in a file that no line prints): a
 * heap overflow, which ASan reports on stderr. asan_report.t runs this as its "paddock" and must
 * fail though every line it prints is ok. */
#include <stdlib.h>

int main(int argc, char **argv)
{
	(void)argv;
	volatile char *p = malloc(4);
	p[argc + 4] = 1; /* argc >= 1: past the end */
	free((void *)p);
	return 0;
}
