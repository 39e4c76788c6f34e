/* Grading a session in a fork (issue 40; docs/sessions.md, "Grading an episode"): the session's
 * files are copied as a snapshot's are (snapshot.c) into a tree that becomes the read-only top layer
 * of a new sandbox of its template; the hidden files (a problem's tests) are written into that
 * fork, replacing whatever the agent left at those paths, the command runs there, its report file
 * is read, and the fork and the tree are destroyed before the caller hears of the grade. The
 * session's own sandbox is only read: the hidden files never enter it, and it goes on. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GRADE_REPORT_MAX (16u << 20) /* a JUnit file read back */
#define GRADE_TREE_AGE_S (2 * 86400) /* a tree a crash left behind is removed after this */

/* Trees of grades a daemon died in the middle of: removed once old enough that no grade of a
 * live daemon can still use them (a grade's command runs a day at most). */
static void sweep_trees(const char *root)
{
	DIR *d = opendir(root);
	if (!d)
		return;
	struct dirent *de;
	time_t now = time(NULL);
	while ((de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now - st.st_mtime < GRADE_TREE_AGE_S)
			continue;
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/%s", root, de->d_name);
		session_rm_tree(dir);
	}
	closedir(d);
}

/* Clears what the agent left at path in the fork, whatever it is: a directory with files in it,
 * and any ancestor that is not a directory (a file or a link where the path needs one), so that
 * nothing the agent did can turn the grade into an infrastructure failure (which has no reward). */
static int clear_path(pd_sandbox *fork, const char *path, pd_err *e)
{
	static const char script[] = "p=$1; rm -rf -- \"$p\"; d=${p%/*}; while [ -n \"$d\" ]; do "
				     "if [ -L \"$d\" ] || { [ -e \"$d\" ] && [ ! -d \"$d\" ]; }; then rm -f -- \"$d\"; fi; "
				     "d=${d%/*}; done";
	char sh[] = "/bin/sh", c[] = "-c", n0[] = "sh";
	char *argv[] = {sh, c, (char *)script, n0, (char *)path, NULL};
	pd_exec_opts x = {0};
	x.argv = argv;
	x.wall_ms = 60000;
	pd_result r;
	if (pd_sandbox_exec(fork, &x, &r, e) < 0)
		return -1;
	int rc = r.status == PD_OK ? 0 : pd_fail_as(e, EIO, "clearing %s in the fork: %s", path, pd_status_name(r.status));
	pd_result_free(&r);
	return rc;
}

static void fork_path(const char *cwd, const char *f, char *path, size_t len)
{
	snprintf(path, len, "%s%s%s", f[0] == '/' ? "" : cwd, f[0] == '/' || !strcmp(cwd, "/") ? "" : "/", f);
}

/* The hidden files into the fork: a relative path is under the working directory; whatever is
 * at the path is removed first, so the content placed is the problem's and not written through
 * a link the agent left; a report file the agent may have planted goes too. */
static int place_files(pd_sandbox *fork, const char *cwd, const pd_grade_opts *g, pd_err *e)
{
	char path[4096];
	if (g->report_path) {
		fork_path(cwd, g->report_path, path, sizeof path);
		pd_err re = {0};
		if (pd_sandbox_remove(fork, path, &re) < 0 && re.code != ENOENT && clear_path(fork, path, e) < 0)
			return -1;
	}
	for (size_t i = 0; i < g->nfiles; i++) {
		fork_path(cwd, g->files[i].path, path, sizeof path);
		pd_err re = {0};
		if (pd_sandbox_remove(fork, path, &re) < 0 && re.code != ENOENT && clear_path(fork, path, e) < 0)
			return -1;
		char parent[4096];
		snprintf(parent, sizeof parent, "%s", path);
		char *slash = strrchr(parent, '/');
		bool ok = true;
		if (slash && slash != parent) {
			*slash = 0;
			ok = pd_sandbox_mkdir(fork, parent, 0755, &re) == 0;
		}
		ok = ok && pd_sandbox_write_file(fork, path, g->files[i].data, g->files[i].len, 0644, &re) == 0;
		/* a parent the agent made a file or a link: cleared, then once more */
		if (!ok && (clear_path(fork, path, e) < 0 || (slash && slash != parent && pd_sandbox_mkdir(fork, parent, 0755, e) < 0) ||
			    pd_sandbox_write_file(fork, path, g->files[i].data, g->files[i].len, 0644, e) < 0))
			return -1;
	}
	return 0;
}

static void run_in_fork(pd_session *s, pd_sandbox *fork, const pd_grade_opts *g, pd_grade_out *out, pd_err *e,
			int *rc)
{
	const char *cwd = s->pl->t.cwd ? s->pl->t.cwd : "/work";
	if (g->memory_bytes && pd_sandbox_set_memory(fork, g->memory_bytes, e) < 0)
		return;
	if (place_files(fork, cwd, g, e) < 0)
		return;
	pd_exec_opts x = {0};
	x.argv = g->argv;
	x.envp = s->pl->t.env[0] ? s->pl->t.env : NULL;
	x.cwd = cwd;
	x.wall_ms = g->wall_ms;
	x.cpu_ms = g->cpu_ms;
	x.output_kill_bytes = g->output_bytes;
	char **honey = NULL;
	if (g->audit) {
		if (pd_audit_policy_plant(g->audit, fork, e) < 0)
			return;
		x.audit = pd_audit_policy_opts(g->audit);
		honey = pd_env_merge(x.envp, (char *const *)pd_audit_policy_env(g->audit));
		if (honey)
			x.envp = honey;
	}
	uint64_t t0 = pd_now_us();
	if (pd_sandbox_exec(fork, &x, &out->r, e) < 0) {
		free(honey);
		return;
	}
	free(honey);
	out->run_ms = (pd_now_us() - t0) / 1000;
	if (g->audit) {
		pd_audit_evaluate(g->audit, &out->r, fork, &out->verdict);
		out->audited = true;
	}
	*rc = 0;
	if (g->report_path && pd_sandbox_state(fork) == PD_READY) {
		char path[4096];
		fork_path(cwd, g->report_path, path, sizeof path);
		pd_err re = {0};
		if (pd_sandbox_read_file(fork, path, GRADE_REPORT_MAX, &out->report, &out->report_len, &re) < 0)
			snprintf(out->report_error, sizeof out->report_error, "%s", PD_ERR_STR(&re));
	} else if (g->report_path) {
		snprintf(out->report_error, sizeof out->report_error, "the fork ended with the command (%s)",
			 pd_status_name(out->r.status));
	}
}

int pd_session_grade(pd_session *s, const pd_grade_opts *g, pd_grade_out *out, pd_err *e)
{
	memset(out, 0, sizeof *out);
	const char *state = pd_ctx_state_dir(s->p->ctx);
	char root[4096], dir[4096], tree[4096];
	snprintf(root, sizeof root, "%s/grades", state);
	sweep_trees(root);
	snprintf(dir, sizeof dir, "%s/%s-%llx", root, s->id, (unsigned long long)pd_wall_us());
	snprintf(tree, sizeof tree, "%s/tree", dir);
	if (pd_mkdir_p(tree, 0755) < 0)
		return pd_fail(e, errno, "grade directory %s", tree);
	uint64_t t0 = pd_now_us();
	int err = session_copy_tree(s, tree, g->max_bytes ? g->max_bytes : 1ull << 30, &out->copy_bytes,
				    &out->copy_files, NULL);
	out->copy_ms = (pd_now_us() - t0) / 1000;
	if (err) {
		session_rm_tree(dir);
		return pd_fail(e, err, err == EFBIG ? "the session's files are over the grade's cap of %llu bytes"
						    : "copying the session's files for the grade",
			       (unsigned long long)(g->max_bytes ? g->max_bytes : 1ull << 30));
	}
	pd_sandbox *fork = pd_pool_make_fork(s->p, s->pl, tree, e);
	if (!fork) {
		session_rm_tree(dir);
		return -1;
	}
	snprintf(out->fork_id, sizeof out->fork_id, "%s", pd_sandbox_id(fork));
	int rc = -1;
	run_in_fork(s, fork, g, out, e, &rc);
	/* never handed to anyone: the fork held the hidden files */
	pd_sandbox_destroy(fork, out->residue, sizeof out->residue);
	session_rm_tree(dir);
	if (rc < 0)
		pd_result_free(&out->r);
	return rc;
}

void pd_grade_out_free(pd_grade_out *o)
{
	pd_result_free(&o->r);
	free(o->report);
	o->report = NULL;
}
