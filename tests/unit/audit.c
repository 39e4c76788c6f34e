/* audit.c: pd_path_under, the prefix test behind the audit's allow and deny lists. A deny list is
 * only as good as this test: a path that names a file under a prefix must be seen as under it. */
#define _GNU_SOURCE
#include "audit.h"
#include "tap.h"

/* pd_audit_judge_path on a path argument (and the cwd readlink gave, NULL: it failed) */
static void judged(const char *raw, const char *cwd, bool want_deny, const char *what)
{
	static const char *const deny[] = {"/judge", NULL};
	pd_audit_opts o = {.enabled = true, .deny = deny};
	char target[512];
	bool d = false, r = false;
	pd_audit_judge_path(raw, strlen(raw) + 1, cwd, cwd ? (ssize_t)strlen(cwd) : -1, &o, target, sizeof target, &d, &r);
	if (!ok(d == want_deny && r, "%s: %s", what, want_deny ? "refused" : "let through"))
		printf("#   denied %d, reported %d, target %.80s\n", d, r, target);
}

static void under(const char *path, const char *const *list, bool want, const char *listname)
{
	bool got = pd_path_under(path, list);
	if (!ok(got == want, "%-24s %s %s", path, want ? "is under" : "is not under", listname))
		printf("#   got %s\n", got ? "under" : "not under");
}

int main(void)
{
	plan(55);
	static const char *const usr[] = {"/usr", NULL};
	under("/usr", usr, true, "/usr");
	under("/usr/bin", usr, true, "/usr");
	under("/usr/bin/python3", usr, true, "/usr");
	under("/usr/", usr, true, "/usr");
	under("/usrx", usr, false, "/usr");
	under("/usrx/bin", usr, false, "/usr");
	under("/us", usr, false, "/usr");
	under("/", usr, false, "/usr");
	under("/var/usr", usr, false, "/usr");
	under("usr/bin", usr, false, "/usr");
	under("", usr, false, "/usr");

	static const char *const root[] = {"/", NULL};
	under("/", root, true, "/");
	under("/etc/passwd", root, true, "/");
	under("/a", root, true, "/");
	under("/usrx", root, true, "/");
	under("relative/path", root, false, "/");

	static const char *const slash[] = {"/usr/", NULL};
	under("/usr/bin", slash, true, "/usr/");
	under("/usr", slash, true, "/usr/");
	under("/usrx", slash, false, "/usr/");
	static const char *const slashes[] = {"/usr///", NULL};
	under("/usr/lib", slashes, true, "/usr///");
	under("/usrlib", slashes, false, "/usr///");
	static const char *const dslash[] = {"//", NULL};
	under("/etc", dslash, true, "// (the root)");

	ok(!pd_path_under("/usr/bin", NULL), "a NULL list covers nothing");
	static const char *const none[] = {NULL};
	ok(!pd_path_under("/usr/bin", none), "an empty list covers nothing");
	ok(!pd_path_under("/", none), "an empty list does not cover /");

	static const char *const several[] = {"/etc", "/home/sandbox", "/dev/null", NULL};
	under("/home/sandbox/x", several, true, "the second of three");
	under("/dev/null", several, true, "the third of three");
	under("/dev/nullx", several, false, "/dev/null");
	under("/home/sandboxes", several, false, "/home/sandbox");
	under("/home", several, false, "/home/sandbox");

	static const char *const file[] = {"/etc/hostname", NULL};
	under("/etc/hostname", file, true, "/etc/hostname");
	under("/etc/hostname/x", file, true, "/etc/hostname");
	under("/etc/hostnames", file, false, "/etc/hostname");

	/* an empty prefix is no path at all: it must not turn an allow list into "allow everything" */
	static const char *const empty[] = {"", NULL};
	under("/etc/shadow", empty, false, "an empty prefix");
	under("/", empty, false, "an empty prefix");

	/* a path the kernel resolves under a prefix is under it, however it is spelled: the audit
	 * matches the path as the program wrote it, so "." , ".." and "//" must not hide a target */
	static const char *const judge[] = {"/judge", NULL};
	under("//judge/answers", judge, true, "/judge");
	under("/./judge/answers", judge, true, "/judge");
	under("/tmp/../judge/answers", judge, true, "/judge");
	under("/usr/../judge/answers", judge, true, "/judge");
	under("/judge/../tmp/x", judge, false, "/judge");
	under("/judge//answers", judge, true, "/judge");
	under("/judge/.", judge, true, "/judge");
	under("/judge/..", judge, false, "/judge");
	under("/usr/../etc/shadow", usr, false, "/usr");
	under("/usr/./../etc", usr, false, "/usr");
	under("/usr/bin/../lib", usr, true, "/usr");
	under("/../../usr/bin", usr, true, "/usr");

	/* the verdict on a path argument: judged whole, however long it is spelled (a path cut to a
	 * 511-byte buffer read "/" x 600 + "judge/answers" as "/", and let it through) */
	char pad[4096];
	memset(pad, '/', 600);
	snprintf(pad + 600, sizeof pad - 600, "judge/answers");
	judged(pad, "/work", true, "600 slashes, then judge/answers");
	snprintf(pad, sizeof pad, "/work");
	for (int i = 0; i < 300; i++)
		strcat(pad, "/.");
	strcat(pad, "/../judge/answers");
	judged(pad, "/work", true, "/work, 300 \"/.\", then ../judge/answers");
	pad[0] = 0;
	for (int i = 0; i < 300; i++)
		strcat(pad, "./");
	strcat(pad, "answers");
	judged(pad, "/judge", true, "a relative path padded with ./, cwd /judge");
	judged("answers", NULL, true, "a relative path, the cwd unknown (readlink failed)");
	judged("../tmp/x", "/judge", false, "../tmp/x from /judge");
	judged("/tmp/x", NULL, false, "an absolute path with the cwd unknown");
	judged("main.py", "/work", false, "main.py in /work");
	char deep[4200];
	memset(deep, 'd', sizeof deep - 1);
	deep[0] = '/';
	deep[sizeof deep - 1] = 0;
	judged("x", deep, true, "a relative path from a cwd longer than PATH_MAX");
	return done();
}
