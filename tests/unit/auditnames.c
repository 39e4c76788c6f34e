/* auditnames.c: the names the audit keeps across a sandbox's runs (lib/internal/audit.h), on a
 * tree standing for a sandbox's root, resolved with pd_audit_resolve:
 * - what was found is kept: a directory replaced by a link behind the resolver's back still
 *   resolves as the directory (which is why everything that can make a link turns them off);
 * - a link's target is kept the same way;
 * - off: nothing kept is used or added, the tree is read again; a reset empties an off table and
 *   turns it on, and keeps an on one;
 * - never kept: names under a bind mount's destination (a host directory that the host or another
 *   sandbox may change unseen), under the scratch directories, under /proc;
 * - nor by a run's own table, used while the sandbox's is off: it has the sandbox's bind mounts. */
#define _GNU_SOURCE
#include "audit.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[] = "/tmp/pdk-auditnames-XXXXXX";

static const char *at(const char *rel)
{
	static char p[2][512];
	static int k;
	k ^= 1;
	snprintf(p[k], sizeof p[k], "%s/%s", root, rel);
	return p[k];
}

/* pd_audit_resolve of path from "/", following the last link; "" when it cannot tell */
static const char *resolved(pd_audit_view *v, const char *path)
{
	static char out[PD_AUDIT_MAX];
	if (pd_audit_resolve(v, "/", path, true, out, sizeof out) != 1)
		out[0] = 0;
	return out;
}

/* a directory at rel becomes a link to target (host-side: unseen by any audit) */
static int relink(const char *rel, const char *target)
{
	struct stat st;
	if (lstat(at(rel), &st) == 0)
		(void)(S_ISDIR(st.st_mode) ? rmdir(at(rel)) : unlink(at(rel)));
	return symlink(target, at(rel));
}

int main(void)
{
	plan(19);
	if (!mkdtemp(root))
		return ok(0, "mkdtemp: %s", strerror(errno)), 1;
	const char *dirs[] = {"opt",	"opt/d", "opt/e",     "data", "data/d",
			      "data/e", "tmp",	 "tmp/secret", "tmp/s", NULL};
	int rc = 0;
	for (int i = 0; dirs[i]; i++)
		rc |= mkdir(at(dirs[i]), 0755);
	rc |= symlink("/tmp", at("opt/l"));
	ok(rc == 0, "the tree is made");
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	const pd_bind binds[] = {{.src = "/srv/data", .dst = "/data"}};
	pd_audit_names *names = pd_audit_names_new(binds, 1);
	pd_audit_view v = {.rootfd = fd, .names = names};

	is_str(resolved(&v, "/opt/d/secret/flag"), "/opt/d/secret/flag", "a directory, found");
	is_str(resolved(&v, "/opt/l/secret/flag"), "/tmp/secret/flag", "a link, followed");
	is_str(resolved(&v, "/data/d/secret/flag"), "/data/d/secret/flag", "a directory under a bind, found");
	is_str(resolved(&v, "/tmp/s/secret/flag"), "/tmp/s/secret/flag", "a directory under /tmp, found");

	/* the tree changes where no audit sees it */
	rc = relink("opt/d", "/tmp") | relink("opt/l", "/opt") | relink("data/d", "/tmp") | relink("tmp/s", "/tmp");
	ok(rc == 0, "each of them replaced by a link, unseen");
	is_str(resolved(&v, "/opt/d/secret/flag"), "/opt/d/secret/flag",
	       "the directory is kept: still resolved as one (what the rules that turn it off are for)");
	is_str(resolved(&v, "/opt/l/secret/flag"), "/tmp/secret/flag", "the link's target is kept");
	is_str(resolved(&v, "/data/d/secret/flag"), "/tmp/secret/flag", "under a bind nothing was kept: the new link");
	is_str(resolved(&v, "/tmp/s/secret/flag"), "/tmp/secret/flag", "under /tmp nothing was kept: the new link");

	pd_audit_names_off(names);
	is_str(resolved(&v, "/opt/d/secret/flag"), "/tmp/secret/flag", "off: the tree is read again");
	is_str(resolved(&v, "/opt/l/secret/flag"), "/opt/secret/flag", "off: the link is read again");
	/* a reset of an on table keeps it; of an off one, empties it and turns it on */
	pd_audit_names_reset(names);
	relink("opt/d", "/opt");
	is_str(resolved(&v, "/opt/d/secret/flag"), "/opt/secret/flag",
	       "after the reset of an off table: empty, read again (and kept from now)");
	pd_audit_names_reset(names);
	relink("opt/d", "/tmp");
	is_str(resolved(&v, "/opt/d/secret/flag"), "/opt/secret/flag", "the reset of an on table keeps it");

	/* a run whose sandbox's table is off resolves with its own, which must not keep what is under
	 * a bind mount either: another writer to that host directory can change it during the run */
	pd_audit_names_off(names);
	/* as pd_auditor_init leaves it (its notification buffers aside: the seccomp calls it makes
	 * are unknown to valgrind), closed by pd_auditor_close */
	pd_auditor a = {.listener = -1, .rootfd = -1, .own = calloc(1, sizeof(pd_audit_names))};
	a.names = a.own;
	ok(a.own != NULL, "a run's own table");
	pd_auditor_share(&a, names, true);
	ok(a.names == a.own, "the sandbox's table off: the run uses its own");
	pd_audit_view w = {.rootfd = fd, .names = a.names};
	resolved(&w, "/opt/e/secret/flag");
	resolved(&w, "/data/e/secret/flag");
	relink("opt/e", "/tmp");
	relink("data/e", "/tmp");
	is_str(resolved(&w, "/opt/e/secret/flag"), "/opt/e/secret/flag", "the run's own table keeps a name");
	is_str(resolved(&w, "/data/e/secret/flag"), "/tmp/secret/flag", "but nothing under a bind: the new link");
	pd_auditor_close(&a);
	ok(names->binds && names->binds[0] && !strcmp(names->binds[0], "/data"),
	   "the sandbox's bind list outlives the run's close");

	pd_audit_names_free(names);
	close(fd);
	const char *links[] = {"opt/d", "opt/e", "opt/l", "data/d", "data/e", "tmp/s", NULL};
	for (int i = 0; links[i]; i++)
		unlink(at(links[i]));
	const char *rm[] = {"tmp/secret", "tmp", "data", "opt", "", NULL};
	for (int i = 0; rm[i]; i++)
		rmdir(at(rm[i]));
	return done();
}
