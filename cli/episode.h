/* The episode commands: paddock replay (cli/replay.c) and paddock export (cli/export.c). */
#ifndef PADDOCK_CLI_EPISODE_H
#define PADDOCK_CLI_EPISODE_H

#include <jansson.h>
#include <stddef.h>

/* A trajectory's lines (a JSON array of objects): from the file arg, or with url from the daemon
 * there (arg is then a session id, unless a file of that name exists). NULL with err filled. */
json_t *cli_trajectory_load(const char *arg, const char *url, char *err, size_t errlen);
int cmd_export(int argc, char **argv);
int cmd_replay(int argc, char **argv);

#endif
