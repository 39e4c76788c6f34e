/* A session's directory as a tar archive: uploaded (unpacked by tar in the sandbox) and downloaded
 * (tar in the sandbox, streamed to the caller's fd through a relay that digests it), each a step of
 * the trajectory with the archive's size and digest. Moved out of session.c as it is. */
#define _GNU_SOURCE
#include "session_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The status line the download's shell writes on stderr after tar ends (tar's own exit status:
 * the pipeline's is head's). */
#define TAR_STATUS "paddock-tar-status "
#define TAR_WALL_MS 300000

/* The last size-1 bytes of a captured stream, head and tail joined (what it ended with). */
static void stream_end(const pd_output *o, char *buf, size_t size)
{
	size_t n = 0;
	const char *part[2] = {o->head, o->tail};
	size_t len[2] = {o->head ? o->head_len : 0, o->tail ? o->tail_len : 0};
	for (int i = 0; i < 2; i++) {
		size_t take = len[i] < size - 1 ? len[i] : size - 1;
		if (!take)
			continue;
		if (n + take > size - 1) { /* drop the oldest bytes */
			size_t drop = n + take - (size - 1);
			memmove(buf, buf + drop, n - drop);
			n -= drop;
		}
		memcpy(buf + n, part[i] + len[i] - take, take);
		n += take;
	}
	buf[n] = 0;
}

/* tar runs inside the sandbox: whatever links the archive or the directory holds, it can only
 * reach what the sandbox itself can */
static int run_tar(pd_session *s, char **argv, int in_fd, int out_fd, pd_err *e)
{
	pd_exec_opts x = {0};
	x.argv = argv;
	x.stdin_fd = in_fd;
	x.stdin_from_fd = in_fd >= 0;
	x.cwd = "/";
	/* tar is ours, not the user's program: the template's time limits are for programs, and a
	 * limit kill would end the session; a GiB of a cold tree takes ~16 s of wall time here */
	x.wall_ms = TAR_WALL_MS;
	x.cpu_ms = TAR_WALL_MS / 2;
	x.step_kill = true;
	if (out_fd >= 0) {
		x.spill = true;
		x.spill_fd[0] = out_fd;
		x.spill_fd[1] = -1;
		/* the archive is the output: not killed for its size (that would end the session);
		 * head in the sandbox ends it one byte past SESSION_TAR_MAX, and no more than that
		 * is written to the host */
		x.output_kill_bytes = UINT64_MAX;
		x.spill_max = SESSION_TAR_MAX + 1ull;
	}
	pd_result r;
	if (pd_sandbox_exec(s->sb, &x, &r, e) < 0)
		return -1;
	int rc = 0;
	char err[1024];
	stream_end(&r.err, err, sizeof err);
	/* the last one: ours comes after anything tar wrote (file names included) */
	const char *st = NULL;
	for (const char *q = out_fd >= 0 ? strstr(err, TAR_STATUS) : NULL; q; q = strstr(q + 1, TAR_STATUS))
		st = q;
	int tar_status = st ? atoi(st + strlen(TAR_STATUS)) : -1;
	if (out_fd >= 0 && r.out.total > SESSION_TAR_MAX) {
		/* a cut archive must not be handed out as the directory */
		rc = pd_fail(e, EFBIG, "the archive of that directory is over %u MiB: download a smaller one",
			     SESSION_TAR_MAX >> 20);
	} else if (out_fd >= 0 && r.spill_lost[0]) {
		rc = pd_fail(e, EPIPE, "the archive could not be sent whole (the client stopped reading)");
	} else if ((r.status != PD_OK && !(out_fd >= 0 && r.status == PD_OL)) ||
		   (out_fd >= 0 && tar_status != 0)) {
		if (st)
			*(char *)st = 0; /* the status line is ours, not tar's */
		if (r.status == PD_OK && tar_status > 0)
			rc = pd_fail(e, EIO, "tar in session %s exited %d: %.150s", s->id, tar_status, err);
		else
			rc = pd_fail(e, EIO, "tar in session %s: %s exit %d%s%.150s", s->id,
				     pd_status_name(r.status), r.exit_code, err[0] ? ": " : "", err);
	}
	pd_result_free(&r);
	return rc;
}

/* sent: the archive's length and digest when it was streamed (fd < 0), else read from fd */
static void tar_step(pd_session *s, const char *kind, const char *dir, int fd, const char *sent_hex,
		     uint64_t sent_len, const char *rid, uint64_t t0, int rc, const pd_err *e)
{
	char hex[65];
	json_t *action = json_pack("{s:o}", "dir", pd_json_text(dir));
	json_t *obs = json_pack("{s:b}", "ok", rc == 0);
	if (rc < 0)
		json_object_set_new(obs, "error", pd_json_text(PD_ERR_STR(e)));
	off_t len = fd >= 0 ? lseek(fd, 0, SEEK_END) : (off_t)sent_len;
	if (fd < 0)
		snprintf(hex, sizeof hex, "%s", sent_hex);
	if (len >= 0 && (fd < 0 || pd_session_digest_fd(fd, hex) == 0)) {
		json_t *o = !strcmp(kind, "upload") ? action : obs;
		json_object_set_new(o, "tar_bytes", json_integer((json_int_t)len));
		json_object_set_new(o, "tar_sha256", json_string(hex));
	}
	pd_err te = {0};
	session_traj_step(s, kind, rid, t0, action, obs, NULL, true, &te);
}

int pd_session_upload_tar(pd_session *s, const char *dir, int tar_fd, const char *rid, pd_err *e)
{
	if (session_enter(s, e) < 0)
		return -1;
	uint64_t t0 = pd_wall_us();
	int rc = pd_sandbox_mkdir(s->sb, dir, 0755, e);
	if (rc == 0) {
		static char tar[] = "tar", x[] = "-x", C[] = "-C", f[] = "-f", dash[] = "-",
			    noown[] = "--no-same-owner";
		char *d = strdup(dir);
		char *argv[] = {tar, x, noown, C, d, f, dash, NULL};
		rc = d ? run_tar(s, argv, tar_fd, -1, e) : pd_fail(e, ENOMEM, "tar");
		free(d);
	}
	tar_step(s, "upload", dir, tar_fd, NULL, 0, rid, t0, rc, e);
	session_leave(s);
	return rc;
}

/* The archive goes from tar's output to the caller's fd (a pipe to the client) as it is made: it
 * is never spooled on the host (a spool of a GiB per download, 256 at once, filled the host's
 * /tmp). The relay digests what passes for the trajectory; a caller that stops reading (the
 * client went away) closes the relay's end, so tar's output is dropped rather than blocking. */
typedef struct {
	int in, out;
	pd_sha256 d;
	uint64_t bytes;
	bool broken;
} tar_relay;

static void *relay_main(void *arg)
{
	tar_relay *t = arg;
	char buf[65536];
	for (;;) {
		ssize_t n = read(t->in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		pd_sha256_add(&t->d, buf, (size_t)n);
		t->bytes += (uint64_t)n;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(t->out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				t->broken = true;
				break;
			}
			off += w;
		}
		if (t->broken)
			break;
	}
	close(t->in); /* a broken relay: tar's next write fails (EPIPE) and its output is dropped */
	return NULL;
}

int pd_session_download_tar(pd_session *s, const char *dir, int tar_fd, const char *rid, pd_err *e)
{
	if (session_enter(s, e) < 0)
		return -1;
	uint64_t t0 = pd_wall_us();
	/* through head, which ends tar (SIGPIPE) one byte past the cap rather than let it read a
	 * huge tree to the end and run into the wall time, whose kill would end the session; the
	 * directory is a positional parameter, never part of the script */
	static char sh[] = "/bin/sh", c[] = "-c", zero[] = "sh",
		    script[] = "{ tar -c -C \"$1\" -f - .; echo \"" TAR_STATUS "$?\" >&2; } | head -c \"$2\"";
	char limit[24];
	snprintf(limit, sizeof limit, "%llu", (unsigned long long)SESSION_TAR_MAX + 1);
	char *d = strdup(dir);
	char *argv[] = {sh, c, script, zero, d, limit, NULL};
	tar_relay t = {.out = tar_fd};
	pd_sha256_init(&t.d);
	int p[2] = {-1, -1};
	pthread_t th;
	int rc;
	if (!d)
		rc = pd_fail(e, ENOMEM, "tar");
	else if (pipe2(p, O_CLOEXEC) < 0)
		rc = pd_fail(e, errno, "pipe for the archive");
	else if ((t.in = p[0], errno = pthread_create(&th, NULL, relay_main, &t)) != 0) {
		rc = pd_fail(e, errno, "archive relay");
		close(p[0]);
		close(p[1]);
		p[0] = -1;
	} else {
		rc = run_tar(s, argv, -1, p[1], e);
		close(p[1]);
		pthread_join(th, NULL);
		if (rc == 0 && t.broken)
			rc = pd_fail(e, EPIPE, "the archive could not be sent whole (the client stopped reading)");
	}
	free(d);
	char hex[65];
	pd_sha256_end_hex(&t.d, hex); /* "" if it could not be computed */
	tar_step(s, "download", dir, -1, hex, t.bytes, rid, t0, rc, e);
	session_leave(s);
	return rc;
}
