/* status: prints this process's ids and privileges: "uid=R,E,S gid=R,E,S" then the Cap*, NoNewPrivs
 * and Seccomp lines of /proc/self/status, one "Key=value" per line. Used copied into setuid-root,
 * setuid-other and file-capability binaries to show that executing them grants nothing. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	printf("uid=%u,%u,%u\ngid=%u,%u,%u\n", r, e, s, gr, ge, gs);
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 2;
	char line[256];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "Cap", 3) && strncmp(line, "NoNewPrivs", 10) &&
		    strncmp(line, "Seccomp:", 8))
			continue;
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = 0;
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		printf("%s=%s", line, v);
	}
	fclose(f);
	return 0;
}
