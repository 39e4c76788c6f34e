/* upperwatch.c on its own, with real inotify watches on directories of a tmpfs: which sandbox an
 * event dirties when many are watched (the index by watch descriptor), what counts once a
 * sandbox's scratch watches are armed and what does not, forgetting, and a lost event (queue
 * overflow) dirtying everyone. reset.c checks the same end to end, through real resets. */
#define _GNU_SOURCE
#include "internal.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define EVENTS (IN_ALL_EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW)
#define NUPPER 300

static char base[] = "/dev/shm/pd-uwatch-XXXXXX";

static char *dir(const char *name)
{
	static char p[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof p[k], "%s/%s", base, name);
	return p[k];
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

static void readf(const char *path)
{
	char b[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, b, sizeof b) < 0)
			b[0] = 0;
		close(fd);
	}
}

static void list(const char *path)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "ls -a %s > /dev/null", path);
	if (system(cmd) != 0)
		printf("#   ls %s failed\n", path);
}

static int watch(pd_uwatch *w, const char *path)
{
	return inotify_add_watch(pd_uwatch_fd(w), path, EVENTS);
}

/* as rootfs.c watches the scratch directories: no reads */
static int watch_scratch(pd_uwatch *w, const char *path)
{
	return inotify_add_watch(pd_uwatch_fd(w), path, PD_SCRATCH_EVENTS);
}

static void write_close(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
}

/* Many sandboxes' upper directories: an event dirties its own sandbox and no other. */
static void test_uppers(pd_uwatch *w)
{
	static bool dirty[NUPPER];
	bool added = true;
	for (int i = 0; i < NUPPER; i++) {
		char n[16];
		snprintf(n, sizeof n, "u%d", i);
		mkdir(dir(n), 0755);
		int wd = watch(w, dir(n));
		added = added && wd >= 0 && pd_uwatch_add(w, &dirty[i], &wd, 1) == 0;
	}
	ok(added, "%d sandboxes' upper directories watched (the index grows past its first size)", NUPPER);
	int clean = 0;
	for (int i = 0; i < NUPPER; i++)
		clean += pd_uwatch_clean(w, &dirty[i]);
	is_int(clean, NUPPER, "all clean at first");
	touch(dir("u137/x"));
	readf(dir("u211/../u211/x")); /* a failed open: no event */
	clean = 0;
	for (int i = 0; i < NUPPER; i++)
		clean += pd_uwatch_clean(w, &dirty[i]);
	ok(clean == NUPPER - 1 && !pd_uwatch_clean(w, &dirty[137]),
	   "a file made in one: that sandbox alone is dirty (%d clean)", clean);
	pd_uwatch_forget(w, &dirty[137]);
	ok(!pd_uwatch_clean(w, &dirty[137]), "forgotten: not watched, so not clean");
	for (int i = 0; i < NUPPER; i += 2)
		if (i != 137)
			pd_uwatch_forget(w, &dirty[i]);
	list(dir("u51"));
	clean = 0;
	for (int i = 1; i < NUPPER; i += 2)
		clean += pd_uwatch_clean(w, &dirty[i]);
	ok(clean == NUPPER / 2 - 2 && !pd_uwatch_clean(w, &dirty[51]),
	   "half of them forgotten (the index remade): a listing of another dirties it alone (%d clean)", clean);
	/* more added where the forgotten were: every one left still hears its own events */
	static bool fresh[50];
	added = true;
	for (int i = 0; i < 50; i++) {
		char n[16];
		snprintf(n, sizeof n, "v%d", i);
		mkdir(dir(n), 0755);
		int wd = watch(w, dir(n));
		added = added && wd >= 0 && pd_uwatch_add(w, &fresh[i], &wd, 1) == 0;
	}
	int heard = 0, others = 0;
	for (int i = 1; i < NUPPER; i += 2) {
		char n[32];
		snprintf(n, sizeof n, "u%d/y", i);
		touch(dir(n));
		heard += !pd_uwatch_clean(w, &dirty[i]);
	}
	for (int i = 0; i < 50; i++)
		others += pd_uwatch_clean(w, &fresh[i]);
	for (int i = 0; i < 50; i++) {
		char n[32];
		snprintf(n, sizeof n, "v%d/y", i);
		touch(dir(n));
		heard += !pd_uwatch_clean(w, &fresh[i]);
	}
	ok(added && heard == NUPPER / 2 + 50 && others == 50,
	   "50 more added after: each of the %d left and new hears its own event, no other's (%d heard, %d "
	   "untouched clean)",
	   NUPPER / 2 + 50, heard, others);
	for (int i = 1; i < NUPPER; i += 2)
		pd_uwatch_forget(w, &dirty[i]);
	for (int i = 0; i < 50; i++)
		pd_uwatch_forget(w, &fresh[i]);
}

/* One sandbox's scratch directories and devpts (stand-ins: four directories). */
static void test_scratch(pd_uwatch *w)
{
	static const char *const names[] = {"tmp", "work", "shm", "pts"};
	pd_swatch sw;
	memset(&sw, 0, sizeof sw);
	int wds[PD_NSCRATCH + 1];
	for (int i = 0; i <= PD_NSCRATCH; i++) {
		mkdir(dir(names[i]), 0755);
		wds[i] = watch_scratch(w, dir(names[i]));
	}
	ok(pd_uwatch_add_scratch(w, &sw, wds, PD_NSCRATCH + 1) == 0 && pd_uwatch_scratch_clean(w, &sw),
	   "scratch watched, clean");
	/* setup: the host writes the program's file; nothing counts until armed */
	touch(dir("work/main.py"));
	int fd = open(dir("work/main.py"), O_WRONLY | O_TRUNC | O_CLOEXEC);
	ok(fd >= 0 && write(fd, "print(1)\n", 9) == 9, "the host writes work/main.py");
	sw.nfiles = 1;
	sw.file_dir = 1;
	snprintf(sw.file_name, sizeof sw.file_name, "main.py");
	touch(dir("tmp/setup")); /* the host's too, unarmed */
	unlink(dir("tmp/setup"));
	pd_uwatch_arm(w, &sw);
	if (fd >= 0)
		close(fd); /* the host's last close, after arming (init's, in a sandbox) */
	ok(pd_uwatch_scratch_clean(w, &sw), "armed: what the host did before does not count, nor its late close");
	readf(dir("work/main.py"));
	list(dir("work"));
	list(dir("tmp"));
	readf(dir("work/missing"));
	ok(pd_uwatch_scratch_clean(w, &sw), "the program reads main.py and lists the scratch: clean");
	fd = open(dir("work/main.py"), O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	ok(pd_uwatch_scratch_clean(w, &sw), "opens main.py for writing and writes nothing: clean");
	fd = open(dir("work/main.py"), O_WRONLY | O_APPEND | O_CLOEXEC);
	ok(fd >= 0 && write(fd, "#\n", 2) == 2, "then writes to it");
	if (fd >= 0)
		close(fd);
	ok(!pd_uwatch_scratch_clean(w, &sw), "dirty (IN_MODIFY)");

	pd_uwatch_scratch_next(w, &sw);
	ok(pd_uwatch_scratch_clean(w, &sw), "a kept reset: clean again, unarmed");
	touch(dir("work/other"));
	ok(pd_uwatch_scratch_clean(w, &sw), "unarmed, a file made does not count (the host's)");
	pd_uwatch_arm(w, &sw);
	readf(dir("work/other"));
	ok(pd_uwatch_scratch_clean(w, &sw), "armed, reading another file: no event (reads are not watched)");
	write_close(dir("work/other"));
	ok(!pd_uwatch_scratch_clean(w, &sw), "armed with no host file noted, another file's write close counts");

	static const struct {
		const char *what;
		int dir;
		const char *name;
	} dirtying[] = {
		{"a file made in tmp", 0, "tmp/x"},
		{"a file made in shm", 2, "shm/x"},
		{"anything in pts (a pty made)", 3, "pts/0"},
		{"a file of another name opened for writing in work", 1, "work/other"},
	};
	for (size_t i = 0; i < sizeof dirtying / sizeof dirtying[0]; i++) {
		pd_uwatch_scratch_next(w, &sw);
		sw.nfiles = 1;
		sw.file_dir = 1;
		pd_uwatch_arm(w, &sw);
		if (dirtying[i].dir == 1)
			write_close(dir(dirtying[i].name));
		else
			touch(dir(dirtying[i].name));
		ok(!pd_uwatch_scratch_clean(w, &sw), "armed: %s counts", dirtying[i].what);
	}
	pd_uwatch_scratch_next(w, &sw);
	sw.nfiles = 1;
	pd_uwatch_arm(w, &sw);
	if (chmod(dir("work"), 0755) < 0)
		printf("#   chmod: %s\n", strerror(errno));
	ok(!pd_uwatch_scratch_clean(w, &sw), "armed: work re-moded to its own mode counts (IN_ATTRIB)");
	pd_uwatch_scratch_next(w, &sw);
	sw.nfiles = 1;
	pd_uwatch_arm(w, &sw);
	readf(dir("work/main.py"));
	ok(pd_uwatch_scratch_clean(w, &sw), "and after another kept reset, a read of main.py alone is clean");

	/* more events than the queue holds: lost ones may be anyone's */
	bool other = false;
	int owd = watch(w, dir("u1"));
	ok(owd >= 0 && pd_uwatch_add(w, &other, &owd, 1) == 0, "another sandbox's upper directory watched");
	/* inotify merges an event equal to the last one queued: alternate two files */
	for (int i = 0; i < 20000; i++)
		write_close(dir(i % 2 ? "work/main.py" : "work/other"));
	ok(!pd_uwatch_clean(w, &other), "a queue overflow (IN_Q_OVERFLOW) dirties every sandbox, the "
	   "untouched one too");
	pd_uwatch_forget(w, &other);
	pd_uwatch_forget_scratch(w, &sw);
	ok(!pd_uwatch_scratch_clean(w, &sw) && !sw.watched, "forgotten: not watched, so not clean");
	touch(dir("tmp/after"));
	pd_uwatch_arm(w, &sw);
	ok(!sw.armed, "and it cannot be armed");
}

int main(void)
{
	plan(1 + 6 + 21);
	if (!mkdtemp(base)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	pd_uwatch *w = pd_uwatch_new();
	if (!ok(w && pd_uwatch_fd(w) >= 0, "an inotify instance"))
		return 1;
	test_uppers(w);
	test_scratch(w);
	pd_uwatch_free(w);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", base);
	if (system(cmd) != 0)
		printf("#   could not remove %s\n", base);
	return done();
}
