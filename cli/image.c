/* paddock image: import OCI and docker-archive images into the store, list, inspect, remove, gc. */
#define _GNU_SOURCE
#include "cli.h"
#include "pool.h"
#include "server.h"

#include <jansson.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void image_usage(FILE *f)
{
	fputs("usage: paddock image import SOURCE [--name NAME] [--strip-history PATH[@COMMIT]] [BOUNDS]\n"
	      "       paddock image ls [--templates FILE] [--problems DIR] [--json]\n"
	      "       paddock image inspect [--templates FILE] [--problems DIR] NAME|DIGEST\n"
	      "       paddock image rm NAME|DIGEST\n"
	      "       paddock image gc\n"
	      "\n"
	      "The image store under $PADDOCK_STATE_DIR/images/store (default /var/lib/paddock), shared\n"
	      "by every paddock command and daemon of that state directory (docs/images.md).\n"
	      "\n"
	      "  import   SOURCE: an OCI image layout (directory or tar) or a `docker save` archive.\n"
	      "           Every blob is checked against its digest; each layer is stored once however\n"
	      "           many images share it. NAME defaults to the source's own tag, if it has one.\n"
	      "           Prints the manifest digest. --strip-history: the git repository at PATH\n"
	      "           keeps only the history its HEAD (or COMMIT) reaches, in one more layer: no\n"
	      "           future commit, branch, tag, reflog or stray object for an agent to find.\n"
	      "           BOUNDS (a refused import leaves nothing of its own in the store):\n"
	      "             --max-layer-bytes SIZE  file data a layer unpacks to (default 8G)\n"
	      "             --max-layer-files N     entries in a layer (default 1000000)\n"
	      "             --max-image-bytes SIZE  the image's layers together (default 16G)\n"
	      "             --max-image-files N     (default 2000000)\n"
	      "             --min-free SIZE         free space the state disk keeps (default 1G)\n"
	      "  ls       images with names, digests, layers, size, and which templates of FILE\n"
	      "           (serve --templates) and problems of DIR (serve --problems) use each\n"
	      "  inspect  the stored record: digests, names, layers, config, manifest (JSON), and\n"
	      "           the templates and problems of --templates and --problems that use it\n"
	      "  rm       a name; by digest, the image and all its names (layers stay until gc)\n"
	      "  gc       removes layers no image refers to and no sandbox uses\n"
	      "\n"
	      "exit status: 0 done; 2 refused or failed (the message says why); 64 bad usage.\n",
	      f);
}

static int do_import(int argc, char **argv)
{
	static const struct option opts[] = {{"name", required_argument, 0, 'n'},
					     {"help", no_argument, 0, 'h'},
					     {"strip-history", required_argument, 0, 's'},
					     {"max-layer-bytes", required_argument, 0, 'B'},
					     {"max-layer-files", required_argument, 0, 'F'},
					     {"max-image-bytes", required_argument, 0, 'I'},
					     {"max-image-files", required_argument, 0, 'J'},
					     {"min-free", required_argument, 0, 'M'},
					     {0, 0, 0, 0}};
	pd_image_import_opts o = {0};
	int c;
	long n;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hn:", opts, NULL)) != -1) {
		if (c == 'n')
			o.name = optarg;
		else if (c == 's')
			o.strip_history = optarg;
		else if (c == 'B' || c == 'I' || c == 'M') {
			uint64_t *to = c == 'B' ? &o.max_layer_bytes : c == 'I' ? &o.max_image_bytes : &o.min_free;
			const char *what = c == 'B' ? "--max-layer-bytes" : c == 'I' ? "--max-image-bytes" : "--min-free";
			if (!cli_size(what, optarg, 1, UINT64_MAX / 2, to))
				return EXIT_USAGE;
		} else if (c == 'F' || c == 'J') {
			if (!cli_count(c == 'F' ? "--max-layer-files" : "--max-image-files", optarg, 1, 1000000000L, &n))
				return EXIT_USAGE;
			*(c == 'F' ? &o.max_layer_files : &o.max_image_files) = (uint64_t)n;
		} else if (c == 'h') {
			image_usage(stdout);
			return 0;
		} else
			return cli_bad_option("image import", "image", NULL, c, argv, opts);
	}
	if (optind != argc - 1) {
		cli_error("image import: give one SOURCE");
		return EXIT_USAGE;
	}
	pd_err e = {0};
	pd_image im;
	uint64_t t0 = pd_now_us();
	if (pd_image_import(argv[optind], &o, &im, &e) < 0) {
		cli_error("image import %s: %s", argv[optind], PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	fprintf(stderr, "paddock: imported %s%s%s (%d layers) in %.1f ms\n", im.name[0] ? im.name : "",
		im.name[0] ? " " : "", im.digest, im.nlayers, (double)(pd_now_us() - t0) / 1000.0);
	printf("%s\n", im.digest);
	pd_image_close(&im);
	return 0;
}

/* Whether ref (a template's or a problem's "image": a name, a digest or a hex prefix of one)
 * names the image of this digest and these names (space-separated). */
static bool names_image(const char *ref, const char *digest, const char *names)
{
	if (!strcmp(ref, digest) || (strlen(ref) >= 12 && !strncmp(digest + 7, ref, strlen(ref))))
		return true;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", names);
	for (char *s = NULL, *n = strtok_r(buf, " ", &s); n; n = strtok_r(NULL, " ", &s))
		if (!strcmp(n, ref))
			return true;
	return false;
}

/* What uses an image: the templates of --templates FILE and the problems of --problems DIR that
 * name it, as two arrays of names. */
typedef struct users_src {
	pd_template *t;
	size_t nt;
	json_t *problems; /* pd_problems_images, or NULL */
} users_src;

static void users_of(const users_src *u, const char *digest, const char *names, json_t **tpls, json_t **probs)
{
	*tpls = json_array();
	*probs = json_array();
	for (size_t i = 0; i < u->nt; i++)
		if (u->t[i].image_ref && names_image(u->t[i].image_ref, digest, names))
			json_array_append_new(*tpls, json_string(u->t[i].name));
	size_t k;
	json_t *p;
	json_array_foreach(u->problems, k, p)
	{
		if (names_image(json_string_value(json_object_get(p, "image")), digest, names))
			json_array_append(*probs, json_object_get(p, "problem"));
	}
}

/* A comma-separated list of the array's strings, "-" for none. */
static char *joined(json_t *a)
{
	size_t k, len = 2;
	json_t *v;
	json_array_foreach(a, k, v) len += strlen(json_string_value(v)) + 1;
	char *out = calloc(1, len);
	if (!out)
		return NULL;
	json_array_foreach(a, k, v)
	{
		if (k)
			strcat(out, ",");
		strcat(out, json_string_value(v));
	}
	if (!*out)
		strcpy(out, "-");
	return out;
}

/* --templates FILE and --problems DIR (ls, inspect); 0, -1 on a bad option, or 1 for --help. */
static int users_opts(int argc, char **argv, bool *json, users_src *u, const char **ref)
{
	static const struct option opts[] = {{"templates", required_argument, 0, 't'},
					     {"problems", required_argument, 0, 'p'},
					     {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	const char *tfile = NULL, *pdir = NULL;
	int c;
	optind = 1;
	const char *cmd = ref ? "image inspect" : "image ls";
	while ((c = getopt_long(argc, argv, ":ht:p:", opts, NULL)) != -1) {
		if (c == 't')
			tfile = optarg;
		else if (c == 'p')
			pdir = optarg;
		else if (c == 'j' && json)
			*json = true;
		else if (c == 'h') {
			image_usage(stdout);
			return 1;
		} else if (c == 'j') {
			fprintf(stderr, "paddock %s: unknown option '--json' (see 'paddock image --help')\n", cmd);
			return -1;
		} else {
			cli_bad_option(cmd, "image", NULL, c, argv, opts);
			return -1;
		}
	}
	if (ref) {
		if (optind != argc - 1) {
			cli_error("image inspect: give one NAME or DIGEST");
			return -1;
		}
		*ref = argv[optind];
	} else if (optind != argc) {
		cli_error("image ls: unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (tfile && cli_load_templates(tfile, &u->t, &u->nt) < 0)
		return -1;
	if (pdir) {
		pd_err e = {0};
		if (!(u->problems = pd_problems_images(pdir, &e))) {
			cli_error("--problems %s: %s", pdir, PD_ERR_STR(&e));
			pd_templates_free(u->t, u->nt);
			return -1;
		}
	}
	return 0;
}

static void users_free(users_src *u)
{
	pd_templates_free(u->t, u->nt);
	json_decref(u->problems);
}

static int do_ls(int argc, char **argv)
{
	bool json = false;
	users_src u = {0};
	int rc = users_opts(argc, argv, &json, &u, NULL);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	pd_err e = {0};
	pd_image_entry *l;
	size_t n;
	if (pd_image_list(NULL, &l, &n, &e) < 0) {
		cli_error("image ls: %s", PD_ERR_STR(&e));
		users_free(&u);
		return EXIT_PADDOCK_FAILED;
	}
	if (!json)
		printf("%-32s %-19s %-19s %6s %10s  %-20s %s\n", "NAME", "DIGEST", "CONFIG", "LAYERS", "SIZE",
		       "TEMPLATES", "PROBLEMS");
	for (size_t i = 0; i < n; i++) {
		json_t *tpls, *probs;
		users_of(&u, l[i].digest, l[i].names, &tpls, &probs);
		if (json) {
			json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:O, s:O}", "names", l[i].names, "digest",
					      l[i].digest, "config_digest", l[i].config_digest, "layers",
					      l[i].nlayers, "size", (json_int_t)l[i].size, "imported",
					      (json_int_t)l[i].imported, "templates", tpls, "problems", probs);
			char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
			if (s)
				printf("%s\n", s);
			free(s);
			json_decref(j);
		} else {
			char *ts = joined(tpls), *ps = joined(probs);
			printf("%-32s %-19.19s %-19.19s %6d %9.1fM  %-20s %s\n", *l[i].names ? l[i].names : "-",
			       l[i].digest, l[i].config_digest, l[i].nlayers, (double)l[i].size / (1 << 20),
			       ts ? ts : "-", ps ? ps : "-");
			free(ts);
			free(ps);
		}
		json_decref(tpls);
		json_decref(probs);
	}
	pd_image_list_free(l, n);
	users_free(&u);
	return 0;
}

/* The stored record, with "templates" and "problems": what of --templates and --problems uses it. */
static int do_inspect(int argc, char **argv)
{
	users_src u = {0};
	const char *ref = NULL;
	int rc = users_opts(argc, argv, NULL, &u, &ref);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	pd_err e = {0};
	char *txt = pd_image_inspect(NULL, ref, &e);
	if (!txt) {
		cli_error("image inspect %s: %s", ref, PD_ERR_STR(&e));
		users_free(&u);
		return EXIT_PADDOCK_FAILED;
	}
	json_t *j = json_loads(txt, 0, NULL);
	json_t *names = json_object_get(j, "names");
	const char *digest = json_string_value(json_object_get(j, "digest"));
	if (!json_is_object(j) || !digest) { /* the record as stored, should its form ever differ */
		printf("%s\n", txt);
	} else {
		char nbuf[1024] = "";
		size_t k;
		json_t *v;
		json_array_foreach(names, k, v)
		{
			size_t len = strlen(nbuf);
			snprintf(nbuf + len, sizeof nbuf - len, "%s%s", len ? " " : "", json_string_value(v));
		}
		json_t *tpls, *probs;
		users_of(&u, digest, nbuf, &tpls, &probs);
		json_object_set_new(j, "templates", tpls);
		json_object_set_new(j, "problems", probs);
		char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("%s\n", s ? s : txt);
		free(s);
	}
	json_decref(j);
	free(txt);
	users_free(&u);
	return 0;
}

int cmd_image(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		image_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "import"))
		return do_import(argc - 1, argv + 1);
	if (!strcmp(sub, "ls") || !strcmp(sub, "list"))
		return do_ls(argc - 1, argv + 1);
	if (!strcmp(sub, "inspect"))
		return do_inspect(argc - 1, argv + 1);
	pd_err e = {0};
	if (!strcmp(sub, "gc")) {
		/* it takes nothing: a mistyped option must not start a collection */
		if (argc > 2) {
			cli_error("image gc: unexpected argument '%s' (see 'paddock image --help')", argv[2]);
			return EXIT_USAGE;
		}
		uint64_t layers, bytes;
		if (pd_image_gc(NULL, &layers, &bytes, &e) < 0) {
			cli_error("image gc: %s", PD_ERR_STR(&e));
			return EXIT_PADDOCK_FAILED;
		}
		printf("removed %llu layers, %.1f MiB\n", (unsigned long long)layers, (double)bytes / (1 << 20));
		return 0;
	}
	if (strcmp(sub, "rm")) {
		cli_error("image: unknown subcommand '%s' (import, ls, inspect, rm, gc)", sub);
		return EXIT_USAGE;
	}
	if (argc != 3) {
		cli_error("image %s: give one NAME or DIGEST", sub);
		return EXIT_USAGE;
	}
	if (pd_image_remove(NULL, argv[2], &e) < 0) {
		cli_error("image rm %s: %s", argv[2], PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	return 0;
}
