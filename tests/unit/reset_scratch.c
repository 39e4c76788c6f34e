/* reset_scratch.c: the scratch directories (/tmp, /work, /dev/shm) a reset may keep instead of
 * rebuilding them: kept only when the next user cannot tell, and each case's next view equals a
 * fresh sandbox's. The fixture (VIEW, look, check_against) is reset.c's, in resetview.h. */
#define _GNU_SOURCE
#include "resetview.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- scratch directories kept across resets -------------------------------------------------- */

/* What the view adds for the scratch: inode flags and extended attributes (a program could set
 * the flags with no inotify event), then the inode numbers new files get (the tmpfs numbers them
 * in order: a file made and removed by the last user would show here). It writes, so the next
 * reset replaces the scratch. */
static const char SCRATCH_EXTRA[] =
	"echo == attrs; lsattr -d /tmp /work /dev/shm; for f in /work/* /tmp/* /dev/shm/*; do"
	" [ -e \"$f\" ] && lsattr \"$f\"; done;"
	" python3 -c 'import os\nfor p in (\"/tmp\",\"/work\",\"/dev/shm\"): print(p, os.listxattr(p))';"
	"echo == new; touch /tmp/n /work/n /dev/shm/n; stat -c '%n %i %s %b %h' /tmp/n /work/n /dev/shm/n";

static struct view look_scratch(pd_sandbox *s)
{
	static char script[sizeof VIEW + sizeof SCRATCH_EXTRA];
	snprintf(script, sizeof script, "%s;%s", VIEW, SCRATCH_EXTRA);
	return look_with(s, script);
}

static const char CODE[] = "import os\nprint(sorted(os.listdir('.')))\n";

static bool put(pd_sandbox *s, const char *path, const char *text, mode_t mode)
{
	pd_err e = {0};
	if (pd_sandbox_write_file(s, path, text, strlen(text), mode, &e) == 0)
		return true;
	printf("#   write %s: %s\n", path, e.msg);
	return false;
}

/* The view of a fresh sandbox whose host wrote path (NULL: nothing) with mode. */
static char *fresh_scratch_view(const char *path, mode_t mode)
{
	pd_sandbox *f = make();
	if (!f || (path && !put(f, path, CODE, mode))) {
		if (f)
			pd_sandbox_destroy(f, NULL, 0);
		return strdup("(no fresh sandbox)");
	}
	struct view v = look_scratch(f);
	char *t = v.text;
	pd_result_free(&v.r);
	pd_sandbox_destroy(f, NULL, 0);
	return t;
}

/* Mount ids of the scratch mounts and devpts: new mounts have new ids. */
static char *scratch_mounts(pd_sandbox *s)
{
	return probe(s, "awk '$5==\"/tmp\"||$5==\"/work\"||$5==\"/dev/shm\"||$5==\"/dev/pts\"{print $5, $1}'"
			" /proc/self/mountinfo | sort", 0);
}

static void test_scratch(void)
{
	static const struct {
		const char *name, *script;
		bool keeps;
		uint32_t uid;
	} CASES[] = {
		{"python runs the host's main.py (reads it, lists /work)", "cd /work && python3 main.py > /dev/null", true, 0},
		{"the scratch directories listed and stat'ed, main.py read",
		 "ls -la /tmp /work /dev/shm > /dev/null; cat /work/main.py > /dev/null; stat /tmp /work/main.py > /dev/null",
		 true, 0},
		{"nothing at all", "true", true, 0},
		{"main.py opened for writing, nothing written", "exec 3>>/work/main.py", true, 0},
		{"main.py changed in place through a shared mapping (what the next write replaces)",
		 "cd /work && python3 -c 'import mmap,os; fd=os.open(\"main.py\",os.O_RDWR); m=mmap.mmap(fd,4); m[:4]=b\"XXXX\"'",
		 true, 0},
		{"a file made in /tmp", "touch /tmp/x", false, 0},
		{"a file made and removed in /dev/shm", "touch /dev/shm/x && rm /dev/shm/x", false, 0},
		{"a file made in /tmp by uid 1000", "touch /tmp/u", false, 1000},
		{"main.py appended to", "echo x >> /work/main.py", false, 0},
		{"main.py truncated to its own size", "truncate -s $(stat -c %s /work/main.py) /work/main.py", false, 0},
		{"main.py removed", "rm /work/main.py", false, 0},
		{"main.py renamed and back", "mv /work/main.py /work/m && mv /work/m /work/main.py", false, 0},
		{"main.py re-moded to its own mode", "chmod 644 /work/main.py", false, 0},
		{"a hard link to main.py", "ln /work/main.py /work/h", false, 0},
		{"an extended attribute on /work", "cd /work && python3 -c 'import os; os.setxattr(\".\",\"user.x\",b\"1\")'",
		 false, 0},
		{"an inode flag on /work (FS_IOC_SETFLAGS: inotify sees an open only)", "chattr +d /work", false, 0},
		{"an inode flag on main.py", "chattr +d /work/main.py", false, 0},
		{"an unnamed file in /work (O_TMPFILE)",
		 "cd /work && python3 -c 'import os; os.close(os.open(\".\", os.O_TMPFILE|os.O_WRONLY, 0o600))'", false, 0},
		{"a pty opened", "cd /work && python3 -c 'import os; os.openpty()'", false, 0},
		{"/dev/pts listed (a read: not watched, changes nothing)", "ls -la /dev/pts > /dev/null", true, 0},
		/* AIO writes send no IN_MODIFY, but io_setup is refused (fs.aio-nr is host-wide:
		 * docs/security.md), so nothing is written and the scratch stays */
		{"an AIO write to main.py tried (io_setup answers ENOSYS: nothing written)",
		 "cd /work && python3 -c 'import ctypes\n"
		 "c=ctypes.CDLL(None,use_errno=True); c.syscall.restype=ctypes.c_long\n"
		 "x=ctypes.c_ulong(0); assert c.syscall(206,8,ctypes.byref(x))==-1 and ctypes.get_errno()==38'",
		 true, 0},
		{"a process left behind writes in /tmp after the program ended",
		 "(sleep 0.2; touch /tmp/late) > /dev/null 2>&1 &", false, 0},
	};
	/* every view of a fresh sandbox first: one made while s lives would have other host ids,
	 * which devpts's options in /proc/self/mountinfo show */
	char *ref = fresh_scratch_view("/work/main.py", 0644);
	static const struct {
		const char *name, *path;
		mode_t mode;
	} NEXT[] = {
		{"the next user's host writes nothing", NULL, 0},
		{"the next user's host writes another file", "/work/other.py", 0644},
		{"the next user's host writes main.py with another mode", "/work/main.py", 0755},
		{"the next user's host writes main.py", "/work/main.py", 0644},
	};
	enum { NNEXT = sizeof NEXT / sizeof NEXT[0] };
	char *want[NNEXT];
	for (size_t i = 0; i < NNEXT; i++)
		want[i] = fresh_scratch_view(NEXT[i].path, NEXT[i].mode);
	char *fresh_file = NULL;
	{
		pd_sandbox *f = make();
		fresh_file = f && put(f, "/work/main.py", "print(2)\n", 0644)
				     ? probe(f, "cat /work/main.py; stat -c %i /work/main.py", 0)
				     : strdup("(fresh)");
		if (f)
			pd_sandbox_destroy(f, NULL, 0);
	}
	pd_err e = {0};
	pd_sandbox *s = make();
	/* the first reset builds the watched root and scratch (creation's are not watched) */
	bool first = s && pd_sandbox_reset(s, &e) == 0;
	ok(first && pd_sandbox_resets_scratch_kept(s) == 0, "the first reset makes watched scratch directories (%s)",
	   first ? "ok" : e.msg);
	for (size_t i = 0; first && i < sizeof CASES / sizeof CASES[0]; i++) {
		pd_result r;
		bool wrote = put(s, "/work/main.py", CODE, 0644);
		char *before = scratch_mounts(s);
		if (sh(s, CASES[i].script, CASES[i].uid, &r) == 0)
			pd_result_free(&r);
		if (strstr(CASES[i].script, "&"))
			usleep(500 * 1000); /* what it left behind has done its deed */
		uint32_t k0 = pd_sandbox_resets_scratch_kept(s), r0 = pd_sandbox_resets_kept(s);
		int rc = pd_sandbox_reset(s, &e);
		bool kept = rc == 0 && pd_sandbox_resets_scratch_kept(s) == k0 + 1;
		bool root = rc == 0 && pd_sandbox_resets_kept(s) == r0 + 1;
		/* the next user: the same write, then the view */
		wrote = wrote && rc == 0 && put(s, "/work/main.py", CODE, 0644);
		char *after = rc == 0 ? scratch_mounts(s) : strdup("?");
		bool same = !strcmp(before, after);
		ok(wrote && root && kept == CASES[i].keeps && same == CASES[i].keeps,
		   "%s: the scratch %s (mounts %s -> %s)", CASES[i].name, CASES[i].keeps ? "kept" : "replaced",
		   before, after);
		free(before);
		free(after);
		struct view v;
		if (rc == 0) {
			pd_sandbox_rewind_pids(s, &e); /* the mounts' probe used pids */
			v = look_scratch(s);
		} else {
			memset(&v, 0, sizeof v);
			v.text = strdup("?");
		}
		if (!ok(!strcmp(ref, v.text), "%s: then the next user's view equals a fresh sandbox's", CASES[i].name))
			first_difference(ref, v.text, "kept");
		view_free(&v);
		if (rc < 0 || pd_sandbox_reset(s, &e) < 0) /* the view wrote: replaced */
			break;
	}
	free(ref);

	/* A kept scratch holds the last user's main.py for the next user's host to overwrite: any
	 * other first use gets new scratch directories first. */
	for (size_t i = 0; s && first && i < NNEXT; i++) {
		pd_result r;
		bool kept = put(s, "/work/main.py", "print('the last user')\n" "# a longer text than the next\n", 0644) &&
			    sh(s, "cat /work/main.py > /dev/null", 0, &r) == 0;
		if (kept)
			pd_result_free(&r);
		uint32_t k0 = pd_sandbox_resets_scratch_kept(s);
		kept = kept && pd_sandbox_reset(s, &e) == 0 && pd_sandbox_resets_scratch_kept(s) == k0 + 1;
		bool wrote = !NEXT[i].path || put(s, NEXT[i].path, CODE, NEXT[i].mode);
		struct view v = look_scratch(s);
		if (!ok(kept && wrote && !strcmp(want[i], v.text), "%s: its view equals a fresh sandbox's", NEXT[i].name))
			first_difference(want[i], v.text, "after");
		view_free(&v);
		if (pd_sandbox_reset(s, &e) < 0)
			break;
	}
	/* the host's first use a look at the file: not there, as in a fresh sandbox */
	{
		pd_result r;
		bool kept = put(s, "/work/main.py", CODE, 0644) && sh(s, "true", 0, &r) == 0;
		if (kept)
			pd_result_free(&r);
		uint32_t k0 = pd_sandbox_resets_scratch_kept(s);
		kept = kept && pd_sandbox_reset(s, &e) == 0 && pd_sandbox_resets_scratch_kept(s) == k0 + 1;
		struct stat st;
		pd_err se = {0};
		int rc = pd_sandbox_stat(s, "/work/main.py", &st, &se);
		ok(kept && rc < 0 && se.code == ENOENT, "a stat of main.py first: no such file, as in a fresh sandbox (%s)",
		   rc < 0 ? se.msg : "found");
		/* and what the host writes then is a fresh sandbox's first file */
		char *t = put(s, "/work/main.py", "print(2)\n", 0644) ? probe(s, "cat /work/main.py; stat -c %i /work/main.py", 0)
								   : strdup("?");
		ok(!strcmp(t, fresh_file), "then its write is a fresh sandbox's first file: %s (fresh: %s)", t, fresh_file);
		free(t);
	}
	for (size_t i = 0; i < NNEXT; i++)
		free(want[i]);
	/* What the host itself does, which its watches do not count before the exec: a descriptor it
	 * hands out could read the next user's file after a kept reset (a session's file GET still
	 * sending); a directory made or a file removed moves the inode counter; a name inotify also
	 * gives O_TMPFILE files. Each spoils the scratch: the next reset replaces it. */
	{
		pd_result r;
		pd_sandbox_reset(s, &e); /* the probe above ran: a new setup */
		bool ran = put(s, "/work/main.py", "print('the last user')\n", 0644);
		uint64_t size = 0;
		pd_err oe = {0};
		int held = ran ? pd_sandbox_open_regular(s, "/work/main.py", 1 << 20, &size, &oe) : -1;
		ran = held >= 0 && sh(s, "cat /work/main.py > /dev/null", 0, &r) == 0;
		if (ran)
			pd_result_free(&r);
		uint32_t k0 = pd_sandbox_resets_scratch_kept(s);
		bool reset = ran && pd_sandbox_reset(s, &e) == 0;
		bool kept = pd_sandbox_resets_scratch_kept(s) != k0;
		char got[64] = "";
		if (reset && put(s, "/work/main.py", "print('the next user, a secret')\n", 0644) && held >= 0) {
			ssize_t n = pread(held, got, sizeof got - 1, 0);
			got[n > 0 ? n : 0] = 0;
			for (char *c = got; *c; c++)
				if (*c == '\n')
					*c = '|';
		}
		if (held >= 0)
			close(held);
		ok(reset && !kept && !strstr(got, "secret"),
		   "a descriptor the host handed out before the reset: the scratch replaced, it reads the "
		   "old file still (%s)", got);
		if (pd_sandbox_rewind_pids(s, &e) == 0 && sh(s, "true", 0, &r) == 0)
			pd_result_free(&r);
		pd_sandbox_reset(s, &e);
	}
	static const char TMPFILE[] =
		"cd /work && python3 -c 'import os; os.close(os.open(\".\", os.O_TMPFILE|os.O_WRONLY, 0o600))'";
	static const struct {
		const char *what, *mkdir, *sub, *file, *program;
	} HOSTS[] = {
		{"the host made a directory and removed it before writing main.py", "/work/d", NULL, "/work/main.py",
		 "cat /work/main.py"},
		{"the host wrote a file in a directory it made", "/work/d", "/work/d/x", "/work/main.py",
		 "cat /work/main.py"},
		{"the host wrote a file named as inotify names the O_TMPFILE the program then made (#10)", NULL,
		 NULL, "/work/#10", TMPFILE},
	};
	for (size_t i = 0; i < sizeof HOSTS / sizeof HOSTS[0]; i++) {
		pd_result r;
		bool ran = true;
		if (HOSTS[i].mkdir) {
			pd_err me = {0};
			ran = pd_sandbox_mkdir(s, HOSTS[i].mkdir, 0755, &me) == 0 &&
			      (HOSTS[i].sub ? put(s, HOSTS[i].sub, "x", 0644)
					    : pd_sandbox_remove(s, HOSTS[i].mkdir, &me) == 0);
		}
		ran = ran && put(s, HOSTS[i].file, CODE, 0644) && sh(s, HOSTS[i].program, 0, &r) == 0;
		if (ran)
			pd_result_free(&r);
		uint32_t k0 = pd_sandbox_resets_scratch_kept(s);
		bool reset = ran && pd_sandbox_reset(s, &e) == 0;
		bool kept = pd_sandbox_resets_scratch_kept(s) != k0;
		char *t = reset && put(s, "/work/main.py", "print(2)\n", 0644)
				  ? probe(s, "cat /work/main.py; stat -c %i /work/main.py", 0)
				  : strdup("?");
		ok(reset && !kept && !strcmp(t, fresh_file), "%s: the scratch replaced, the next file a fresh one's (%s)",
		   HOSTS[i].what, t);
		free(t);
		pd_sandbox_reset(s, &e);
	}
	/* a file over PD_KEEP_FILE_MAX would stay charged to the sandbox until the next write */
	{
		pd_result r;
		size_t big = (1u << 20) + 4096;
		char *text = malloc(big + 1);
		bool ran = text != NULL;
		if (ran) {
			memset(text, '#', big);
			text[big] = 0;
		}
		ran = ran && put(s, "/work/main.py", text, 0644) && sh(s, "true", 0, &r) == 0;
		free(text);
		if (ran)
			pd_result_free(&r);
		uint32_t k0 = pd_sandbox_resets_scratch_kept(s);
		bool reset = ran && pd_sandbox_reset(s, &e) == 0;
		ok(reset && pd_sandbox_resets_scratch_kept(s) == k0,
		   "a host file over 1 MiB: the scratch replaced, not left charged to the next user");
	}
	/* and plain reads by the host (what fetch_files does) leave it keepable */
	{
		pd_result r;
		char *out = NULL;
		size_t len = 0;
		struct stat st;
		pd_err re = {0};
		bool ran = put(s, "/work/main.py", CODE, 0644) && pd_sandbox_stat(s, "/work/main.py", &st, &re) == 0 &&
			   sh(s, "true", 0, &r) == 0;
		if (ran)
			pd_result_free(&r);
		ran = ran && pd_sandbox_read_file(s, "/work/main.py", 1 << 20, &out, &len, &re) == 0;
		free(out);
		uint32_t k0 = pd_sandbox_resets_scratch_kept(s);
		bool kept = ran && pd_sandbox_reset(s, &e) == 0 && pd_sandbox_resets_scratch_kept(s) == k0 + 1;
		ok(kept, "the host's stat and read of main.py (fetch_files) leave the scratch to keep");
		pd_sandbox_reset(s, &e);
	}
	free(fresh_file);
	char residue[128] = "";
	ok(s && pd_sandbox_destroy(s, residue, sizeof residue) == 0, "and the sandbox is destroyed clean (%s)", residue);
}

int main(void)
{
	/* the context; the first reset, 22 cases x 2, 4 next users, 2 first looks, the held descriptor,
	 * 3 host actions, the big file, the host's reads, the destroy */
	plan(1 + 1 + 22 * 2 + 4 + 2 + 1 + 3 + 1 + 1 + 1);
	pd_err e = {0};
	ctx = pd_ctx_new(NULL, &e);
	if (!ok(ctx != NULL, "context: %s", ctx ? "ok" : e.msg))
		return 1;
	test_scratch();
	pd_ctx_free(ctx);
	return done();
}
