/* audit.c: pd_path_under, the prefix test behind the audit's allow and deny lists. A deny list is
 * only as good as this test: a path that names a file under a prefix must be seen as under it. */
#define _GNU_SOURCE
#include "audit.h"
#include "tap.h"

static void under(const char *path, const char *const *list, bool want, const char *listname)
{
	bool got = pd_path_under(path, list);
	if (!ok(got == want, "%-24s %s %s", path, want ? "is under" : "is not under", listname))
		printf("#   got %s\n", got ? "under" : "not under");
}

int main(void)
{
	plan(47);
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
	return done();
}
