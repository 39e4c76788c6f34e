/* Image pools, a kind of derived pool: a template's recipe on an imported image a request names,
 * one demand-sized pool per (template, image) pair, made on first use (acquire.c) in a slot of the
 * pools' array and retired when idle to make room for another (pool.c). Here: the recipe.
 *
 * Why per pair and not per image: a template's requires, warm-up and files are part of what a
 * READY sandbox is; the same image under "bash" and "python" are different sandboxes. */
#define _GNU_SOURCE
#include "pools.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The image's Env is the base and the template's variables fill in the names it does not set;
 * the image's WorkingDir wins over the template's cwd. A request names the image for its task,
 * while the template is a generic recipe ("python": PATH=/usr/bin...), whose defaults must not
 * hide the image's own (a conda PATH, /testbed). */
static void apply_image_config(pd_template *t, char **tenv, char *tcwd)
{
	int n = 0;
	while (t->env[n])
		n++;
	for (int k = 0; tenv[k]; k++) {
		size_t klen = strcspn(tenv[k], "=");
		bool have = false;
		for (int i = 0; i < n && !have; i++)
			have = !strncmp(t->env[i], tenv[k], klen) && t->env[i][klen] == '=';
		if (have || n >= PD_TPL_MAX_ENV) {
			free(tenv[k]);
			continue;
		}
		t->env[n++] = tenv[k];
	}
	if (!t->cwd)
		t->cwd = tcwd;
	else
		free(tcwd);
}

int pd_image_recipe(pd_pools *p, pd_template *t, const char *name, const char *digest, pd_err *e)
{
	char base[sizeof t->name];
	snprintf(base, sizeof base, "%s", t->name);
	snprintf(t->name, sizeof t->name, "%s", name);
	for (int k = 0; t->layers[k]; k++) {
		free(t->layers[k]);
		t->layers[k] = NULL;
	}
	free(t->image_ref);
	/* the template's env and cwd step aside while the image fills them in (pd_template_check
	 * takes the image's where the template has none), then fill in what the image left */
	char *tenv[PD_TPL_MAX_ENV + 1] = {0};
	memcpy(tenv, t->env, sizeof t->env);
	memset(t->env, 0, sizeof t->env);
	char *tcwd = t->cwd;
	t->cwd = NULL;
	t->image_ref = strdup(digest);
	t->pool_min = 0; /* an idle image has no sandbox */
	if (!t->image_ref) {
		for (int k = 0; tenv[k]; k++)
			free(tenv[k]);
		free(tcwd);
		pd_template_release(t);
		return pd_fail(e, ENOMEM, "image pool %s", name);
	}
	pd_template_check(p->ctx, t);
	apply_image_config(t, tenv, tcwd);
	if (!t->available) {
		if (!t->image) { /* the image itself could not be opened: t->missing says why */
			pd_fail(e, ENOENT, "%s", t->missing);
		} else {
			pd_fail(e, ENOENT,
				"dependency_missing: template '%s' needs %s, which image %s lacks",
				base, t->missing, digest);
			if (e)
				e->kind = PD_EK_DEPENDENCY;
		}
		pd_template_release(t);
		return -1;
	}
	return 0;
}
