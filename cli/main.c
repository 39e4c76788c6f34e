/* paddock: entry point and subcommand dispatch. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define PADDOCK_VERSION "0.1.0"

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("paddock: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

bool cli_count(const char *opt, const char *arg, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (end == arg || *end || errno || v < lo || v > hi) {
		cli_error("%s: '%s' is not a count from %ld to %ld", opt, arg, lo, hi);
		return false;
	}
	*out = v;
	return true;
}

static void usage(FILE *f)
{
	fputs("usage: paddock <command> [options]\n"
	      "\n"
	      "Sandboxes for training and evaluating AI agents, built from kernel primitives.\n"
	      "\n"
	      "commands:\n"
	      "  run REQUESTS.jsonl                 run a batch of requests (the main job)\n"
	      "  serve [options]                    the HTTP daemon (native, SandboxFusion, Piston APIs)\n"
	      "  exec [options] -- PROG [ARGS...]   run a program in a fresh sandbox\n"
	      "  pool [options]                     templates, toolchains and warm pool state\n"
	      "  batch [options] [REQUESTS.jsonl]   run many commands through the warm pools\n"
	      "  bench [options]                    benchmark against fork+exec and bubblewrap\n"
	      "  version                            print the version\n"
	      "\n"
	      "Run 'paddock <command> --help' for a command's options.\n",
	      f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("paddock %s\n", PADDOCK_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "exec"))
		return cmd_exec(argc - 1, argv + 1);
	if (!strcmp(cmd, "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "pool"))
		return cmd_pool(argc - 1, argv + 1);
	if (!strcmp(cmd, "batch"))
		return cmd_batch(argc - 1, argv + 1);
	if (!strcmp(cmd, "bench"))
		return cmd_bench(argc - 1, argv + 1);
	cli_error("unknown command '%s' (see 'paddock --help')", cmd);
	return EXIT_USAGE;
}
