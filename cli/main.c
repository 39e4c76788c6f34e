/* paddock: the command table, which drives dispatch and the top-level help alike. */
#define _GNU_SOURCE
#include "cli.h"
#include "episode.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define PADDOCK_VERSION "0.1.0"

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct command {
	const char *name;
	const char *operands; /* what follows the name in the usage line */
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the command's name */
} commands[] = {
	{"run", "REQUESTS.jsonl", "run a batch of requests (the main job)", cmd_run},
	{"serve", "[options]", "the HTTP daemon (native, SandboxFusion, Piston APIs)", cmd_serve},
	{"exec", "[options] -- PROG [ARGS...]", "run a program in a fresh sandbox", cmd_exec},
	{"pool", "[options]", "templates, toolchains and warm pool state", cmd_pool},
	{"batch", "[options] [REQUESTS.jsonl]", "run many commands through the warm pools", cmd_batch},
	{"bench", "[options]", "benchmark against fork+exec and bubblewrap", cmd_bench},
	{"replay", "TRAJECTORY [options]", "re-run a session's trajectory, report the first divergence", cmd_replay},
	{"export", "TRAJECTORY [options]", "write a trajectory as JSON lines or ATIF", cmd_export},
	{"top", "[--url URL] [--once]", "a live view of a running daemon (pools, queue, latency, verdicts)", cmd_top},
	{"image", "import|ls|inspect|rm|gc ...", "the image store (OCI and docker-archive images)", cmd_image},
	{"doctor", "[--json]", "check this host's prerequisites, and which feature needs each", cmd_doctor},
	{"version", "", "print the version", cmd_version},
	{"help", "[COMMAND]", "this text, or a command's options", cmd_help},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void usage(FILE *f)
{
	fputs("usage: paddock <command> [options]\n"
	      "\n"
	      "Sandboxes for training and evaluating AI agents, built from kernel primitives.\n"
	      "\n"
	      "commands:\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char head[64];
		snprintf(head, sizeof head, "%s %s", commands[i].name, commands[i].operands);
		fprintf(f, "  %-34s %s\n", head, commands[i].summary);
	}
	fputs("\nRun 'paddock <command> --help' for a command's options.\n", f);
}

static int cmd_version(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		puts("usage: paddock version\n\nPrints the version of paddock.");
		return 0;
	}
	if (argc > 1) {
		cli_error("version: unexpected argument '%s' (it takes none)", argv[1]);
		return EXIT_USAGE;
	}
	printf("paddock %s\n", PADDOCK_VERSION);
	return 0;
}

/* paddock help [COMMAND]: COMMAND's own --help, so that there is one text per command. */
static int cmd_help(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	const struct command *c = find(argv[1]);
	if (!c) {
		cli_error("help: unknown command '%s' (see 'paddock --help')", argv[1]);
		return EXIT_USAGE;
	}
	if (argc > 2) {
		cli_error("help: unexpected argument '%s' (one command at a time)", argv[2]);
		return EXIT_USAGE;
	}
	char *sub[] = {argv[1], (char *)"--help", NULL};
	return c->run(2, sub);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help"))
		return cmd_help(1, argv + 1);
	if (!strcmp(name, "--version"))
		return cmd_version(argc - 1, argv + 1);
	const struct command *c = find(name);
	if (!c) {
		cli_error("unknown command '%s' (see 'paddock --help')", name);
		return EXIT_USAGE;
	}
	return c->run(argc - 1, argv + 1);
}
