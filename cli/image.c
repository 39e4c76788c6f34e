/* paddock image: import OCI and docker-archive images into the store, list, inspect, remove, gc. */
#define _GNU_SOURCE
#include "cli.h"
#include "pool.h"

#include <jansson.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void image_usage(FILE *f)
{
	fputs("usage: paddock image import SOURCE [--name NAME] [--strip-history PATH[@COMMIT]]\n"
	      "       paddock image ls [--templates FILE] [--json]\n"
	      "       paddock image inspect NAME|DIGEST\n"
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
	      "  ls       images with names, digests, layers, size (and, with --templates, the\n"
	      "           templates of FILE that use each)\n"
	      "  inspect  the stored record: digests, names, layers, config, manifest (JSON)\n"
	      "  rm       a name; by digest, the image and all its names (layers stay until gc)\n"
	      "  gc       removes layers no image refers to and no sandbox uses\n"
	      "\n"
	      "exit status: 0 done; 2 refused or failed (the message says why); 64 bad usage.\n",
	      f);
}

static int do_import(int argc, char **argv)
{
	static const struct option opts[] = {{"name", required_argument, 0, 'n'}, {"help", no_argument, 0, 'h'},
					     {"strip-history", required_argument, 0, 's'}, {0, 0, 0, 0}};
	pd_image_import_opts o = {0};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "hn:", opts, NULL)) != -1) {
		if (c == 'n')
			o.name = optarg;
		else if (c == 's')
			o.strip_history = optarg;
		else {
			image_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : EXIT_USAGE;
		}
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

/* The templates of file whose image is this digest (or one of its names). */
static char *users_of(const pd_image_entry *x, const pd_template *t, size_t nt)
{
	char *out = strdup("");
	for (size_t i = 0; out && i < nt; i++) {
		const char *ref = t[i].image_ref;
		if (!ref)
			continue;
		bool match = !strcmp(ref, x->digest) || !strncmp(x->digest + 7, ref, strlen(ref));
		char names[1024];
		snprintf(names, sizeof names, "%s", x->names);
		for (char *s = NULL, *n = strtok_r(names, " ", &s); n && !match; n = strtok_r(NULL, " ", &s))
			match = !strcmp(n, ref);
		if (!match)
			continue;
		char *q;
		if (asprintf(&q, "%s%s%s", out, *out ? "," : "", t[i].name) < 0)
			break;
		free(out);
		out = q;
	}
	return out;
}

static int do_ls(int argc, char **argv)
{
	static const struct option opts[] = {{"templates", required_argument, 0, 't'},
					     {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	const char *tfile = NULL;
	bool json = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ht:", opts, NULL)) != -1) {
		if (c == 't')
			tfile = optarg;
		else if (c == 'j')
			json = true;
		else {
			image_usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : EXIT_USAGE;
		}
	}
	pd_template *t = NULL;
	size_t nt = 0;
	if (tfile && cli_load_templates(tfile, &t, &nt) < 0)
		return EXIT_USAGE;
	pd_err e = {0};
	pd_image_entry *l;
	size_t n;
	if (pd_image_list(NULL, &l, &n, &e) < 0) {
		cli_error("image ls: %s", PD_ERR_STR(&e));
		pd_templates_free(t, nt);
		return EXIT_PADDOCK_FAILED;
	}
	if (!json)
		printf("%-32s %-19s %-19s %6s %10s  %s\n", "NAME", "DIGEST", "CONFIG", "LAYERS", "SIZE",
		       "TEMPLATES");
	for (size_t i = 0; i < n; i++) {
		char *users = users_of(&l[i], t, nt);
		if (json) {
			json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:s}", "names", l[i].names, "digest",
					      l[i].digest, "config_digest", l[i].config_digest, "layers",
					      l[i].nlayers, "size", (json_int_t)l[i].size, "imported",
					      (json_int_t)l[i].imported, "templates", users ? users : "");
			char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
			if (s)
				printf("%s\n", s);
			free(s);
			json_decref(j);
		} else {
			printf("%-32s %-19.19s %-19.19s %6d %9.1fM  %s\n", *l[i].names ? l[i].names : "-",
			       l[i].digest, l[i].config_digest, l[i].nlayers, (double)l[i].size / (1 << 20),
			       users && *users ? users : "-");
		}
		free(users);
	}
	pd_image_list_free(l, n);
	pd_templates_free(t, nt);
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
	pd_err e = {0};
	if (!strcmp(sub, "gc")) {
		uint64_t layers, bytes;
		if (pd_image_gc(NULL, &layers, &bytes, &e) < 0) {
			cli_error("image gc: %s", PD_ERR_STR(&e));
			return EXIT_PADDOCK_FAILED;
		}
		printf("removed %llu layers, %.1f MiB\n", (unsigned long long)layers, (double)bytes / (1 << 20));
		return 0;
	}
	if (strcmp(sub, "inspect") && strcmp(sub, "rm")) {
		cli_error("image: unknown subcommand '%s' (import, ls, inspect, rm, gc)", sub);
		return EXIT_USAGE;
	}
	if (argc != 3) {
		cli_error("image %s: give one NAME or DIGEST", sub);
		return EXIT_USAGE;
	}
	if (!strcmp(sub, "rm")) {
		if (pd_image_remove(NULL, argv[2], &e) < 0) {
			cli_error("image rm %s: %s", argv[2], PD_ERR_STR(&e));
			return EXIT_PADDOCK_FAILED;
		}
		return 0;
	}
	char *txt = pd_image_inspect(NULL, argv[2], &e);
	if (!txt) {
		cli_error("image inspect %s: %s", argv[2], PD_ERR_STR(&e));
		return EXIT_PADDOCK_FAILED;
	}
	printf("%s\n", txt);
	free(txt);
	return 0;
}
