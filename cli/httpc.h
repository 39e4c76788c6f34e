/* cli/http_client.c: the HTTP client of replay and export. */
#ifndef PADDOCK_HTTPC_H
#define PADDOCK_HTTPC_H

#include <jansson.h>
#include <stddef.h>

typedef struct httpc_resp {
	int status;
	char *body; /* malloc'd, NUL-terminated */
	size_t len;
} httpc_resp;

/* The bearer token every later request sends (a command's --token or --token-file), instead of
 * $PADDOCK_TOKEN; NULL: back to the environment's. The text is kept, not copied. */
void httpc_set_token(const char *token);
/* One request to base ("http://host:port") + path; headers: extra "Name: value\r\n" lines or NULL.
 * The token httpc_set_token gave, else PADDOCK_TOKEN in the environment, is sent as the bearer
 * token. 0, or -1 with err filled. */
int httpc_call(const char *base, const char *method, const char *path, const char *body, size_t len,
	       const char *headers, httpc_resp *r, char *err, size_t errlen);
/* The same with a JSON body (or none) and a JSON answer; NULL when it is not JSON. */
json_t *httpc_json(const char *base, const char *method, const char *path, json_t *body, const char *headers,
		   int *status, char *err, size_t errlen);

#endif
