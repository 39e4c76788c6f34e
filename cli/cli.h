/* The paddock command: one small file per subcommand over libpaddock. */
#ifndef PADDOCK_CLI_H
#define PADDOCK_CLI_H

#include "paddock.h"

/* Exit statuses of the paddock command (isolate's split between the program and paddock). */
enum {
	EXIT_PROGRAM_OK = 0,     /* the program ran and its status is OK */
	EXIT_PROGRAM_FAILED = 1, /* the program ran and failed: RE, SG, TO, ML or OL (see the result) */
	EXIT_PADDOCK_FAILED = 2, /* paddock could not run or observe it (XX, setup error) */
	EXIT_USAGE = 64,         /* bad command line */
};

int cmd_exec(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* Prints "paddock: <msg>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
