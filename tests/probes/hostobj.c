/* hostobj: kernel objects that are counted per user or host-wide (docs/security.md's catalogue).
 *   hostobj hold READY GO KIND...
 *                             creates objects of each KIND until the kernel refuses one, prints
 *                             "KIND=COUNT ERRNO" per kind, then creates the file READY and keeps
 *                             every object until the file GO exists (at most 120 s): run inside
 *                             a sandbox
 *   hostobj try KIND...       creates one object of each KIND and prints "KIND=OK" or
 *                             "KIND=ERRNO": run on the host, while sandboxes hold theirs
 * KIND: inotify (instances), watches (inotify watches), sigpending (queued real-time signals),
 * aio (io_setup contexts), mqueue (POSIX message queues). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <mqueue.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *ename(int e)
{
	switch (e) {
	case 0: return "OK";
	case EMFILE: return "EMFILE";
	case ENFILE: return "ENFILE";
	case ENOSPC: return "ENOSPC";
	case EAGAIN: return "EAGAIN";
	case ENOSYS: return "ENOSYS";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOMEM: return "ENOMEM";
	case EINVAL: return "EINVAL";
	default: {
		static char b[16];
		snprintf(b, sizeof b, "E%d", e);
		return b;
	}
	}
}

/* the most objects one kind is allowed to take here: enough to exhaust every limit the host
 * sets by default (aio-max-nr 65536 events, 96369 signals, 128 instances, 819200 queue bytes) */
#define CAP 200000

static int one(const char *kind, int i, int *err)
{
	errno = 0;
	if (!strcmp(kind, "inotify")) {
		if (inotify_init1(IN_CLOEXEC) >= 0)
			return 1;
	} else if (!strcmp(kind, "watches")) {
		static int ifd = -1;
		if (ifd < 0 && (ifd = inotify_init1(IN_CLOEXEC)) < 0)
			goto fail;
		char p[64];
		snprintf(p, sizeof p, "/tmp/hostobj-w%d", i);
		int f = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		if (f < 0)
			goto fail;
		close(f);
		if (inotify_add_watch(ifd, p, IN_MODIFY) >= 0)
			return 1;
	} else if (!strcmp(kind, "sigpending")) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGRTMIN);
		sigprocmask(SIG_BLOCK, &s, NULL);
		union sigval v = {.sival_int = i};
		if (sigqueue(getpid(), SIGRTMIN, v) == 0)
			return 1;
	} else if (!strcmp(kind, "aio")) {
		/* big contexts first, then smaller, so the host-wide count fills up */
		static unsigned nr = 65536;
		for (; nr >= 1; nr /= 2) {
			aio_context_t ctx = 0;
			if (syscall(SYS_io_setup, nr, &ctx) == 0)
				return (int)nr;
			if (errno != EAGAIN)
				break;
		}
	} else if (!strcmp(kind, "mqueue")) {
		char name[64];
		snprintf(name, sizeof name, "/hostobj-%d-%d", (int)getpid(), i);
		struct mq_attr a = {.mq_maxmsg = 10, .mq_msgsize = 8192};
		mqd_t q = mq_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, &a);
		if (q != (mqd_t)-1) {
			mq_unlink(name); /* the queue lives (and counts) while q is open */
			return 1;
		}
	} else {
		errno = EINVAL;
	}
fail:
	*err = errno;
	return 0;
}

static void wait_for(const char *path)
{
	struct timespec d = {0, 20 * 1000 * 1000};
	for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++)
		nanosleep(&d, NULL);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "try")) {
		for (int k = 2; k < argc; k++) {
			int err = 0;
			one(argv[k], 0, &err);
			printf("%s=%s\n", argv[k], ename(err));
		}
		return 0;
	}
	if (argc < 5 || strcmp(argv[1], "hold")) {
		fprintf(stderr, "usage: hostobj hold READY GO KIND... | hostobj try KIND...\n");
		return 2;
	}
	for (int k = 4; k < argc; k++) {
		long n = 0;
		int err = 0, i = 0;
		for (; n < CAP; i++) {
			int got = one(argv[k], i, &err);
			if (!got)
				break;
			n += got;
		}
		printf("%s=%ld %s\n", argv[k], n, ename(err));
	}
	fflush(stdout);
	int f = open(argv[2], O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
	if (f >= 0)
		close(f);
	wait_for(argv[3]);
	return 0;
}
