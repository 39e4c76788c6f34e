/* Init's process attributes across resets (initstate.c). Internal; runs in init. */
#ifndef PADDOCK_INITSTATE_H
#define PADDOCK_INITSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Notes init's attributes as the first program will inherit them. */
void pd_initstate_save(void);
/* Puts them back after a user: 0, or -1 with *err and what (an attribute init could not put
 * back: the sandbox must not be reused). */
int pd_initstate_restore(int32_t *err, char *what, size_t size);

#endif
