#ifndef PD_INTERNAL_ENCFORMS_H
#define PD_INTERNAL_ENCFORMS_H
/* The spellings of a string a harvester would use to slip it past a search for the string itself
 * (lib/encforms.c): the audit's search of outputs and files for honey tokens (auditverdict.c)
 * and the egress relay's search of what goes out for their mark (relay.c) look for the same ones. */
#include <stdbool.h>
#include <stddef.h>

enum {
	PD_ENC_PERCENT = 1, /* also percent-encoded, each byte %XX (either case): URIs */
};

/* Calls each(form, form_len, arg) for s's forms, in this order, until it returns true:
 * reversed; upper-cased (only when it differs from s); hex of its bytes, lower then upper case;
 * with PD_ENC_PERCENT, percent-encoded, lower then upper case; base64, standard then URL-safe,
 * at each of the 3 alignments s can have inside a longer encoded text (only the characters that
 * depend on s's bytes alone, and only when more than 8 of them do). Returns whether a call
 * returned true; false also when memory ran out. */
bool pd_enc_forms(const char *s, size_t n, unsigned flags, bool (*each)(const char *form, size_t len, void *arg),
		  void *arg);

#endif
