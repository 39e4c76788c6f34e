/* Jobs: the languages paddock runs, the three request schemas it accepts (native, SandboxFusion,
 * Piston), running a job's attempts through the pools, and the responses. */
#define _GNU_SOURCE
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static const char *const failure_names[PD_F_COUNT] = {
	"none",     "startup_failure", "dependency_missing", "exec_timeout", "judge_error",
	"oom",      "output_limit",    "policy_violation",   "queue_timeout", "cancelled",
	"internal_error",
};

const char *pd_failure_name(pd_failure f)
{
	return (unsigned)f < PD_F_COUNT ? failure_names[f] : "internal_error";
}

/* ---- languages ------------------------------------------------------------------------------- */

/* Each runs in its template's /work. Compile is an sh -c command line; run is the program's argv,
 * exec'd directly with the request's args appended: a shell in front would cost every run another
 * exec (~1 ms of CPU) for nothing, and the program's crash is reported as its own signal. */
#define RUN(...) {__VA_ARGS__, NULL}
static const pd_language languages[] = {
	{"python", "python", "/work/main.py", NULL, RUN("python3", "main.py"), "3.11", "python3", "--version"},
	{"python3", "python", "/work/main.py", NULL, RUN("python3", "main.py"), "3.11", "python3", "--version"},
	{"bash", "bash", "/work/main.sh", NULL, RUN("bash", "main.sh"), "5.2", "bash", "--version"},
	{"c", "c", "/work/main.c", "gcc -O2 -std=gnu11 -o main main.c -lm", RUN("./main"), "12.2", "gcc",
	 "-dumpfullversion"},
	{"cpp", "cpp", "/work/main.cpp", "g++ -O2 -std=gnu++17 -o main main.cpp", RUN("./main"), "12.2", "g++",
	 "-dumpfullversion"},
	{"c++", "cpp", "/work/main.cpp", "g++ -O2 -std=gnu++17 -o main main.cpp", RUN("./main"), "12.2", "g++",
	 "-dumpfullversion"},
	{"nodejs", "node", "/work/main.js", NULL, RUN("node", "main.js"), "20", "node", "--version"},
	{"javascript", "node", "/work/main.js", NULL, RUN("node", "main.js"), "20", "node", "--version"},
	{"node", "node", "/work/main.js", NULL, RUN("node", "main.js"), "20", "node", "--version"},
	{"perl", "bash", "/work/main.pl", NULL, RUN("perl", "main.pl"), "5.36", "perl", "-v"},
	{"java", "bash", "/work/Main.java", "javac -J-Xmx256m Main.java", RUN("java", "-Xmx256m", "Main"), "17",
	 "javac", "-version"},
	{"go", "bash", "/work/main.go", "go build -o main main.go", RUN("./main"), "1.19", "go", "version"},
	{"rust", "bash", "/work/main.rs", "rustc -O -o main main.rs", RUN("./main"), "1.63", "rustc",
	 "--version"},
	{"ruby", "bash", "/work/main.rb", NULL, RUN("ruby", "main.rb"), "3.1", "ruby", "--version"},
	{"lua", "bash", "/work/main.lua", NULL, RUN("lua", "main.lua"), "5.4", "lua", "-v"},
	{"php", "bash", "/work/main.php", NULL, RUN("php", "main.php"), "8.2", "php", "--version"},
	{"pascal", "bash", "/work/main.pas", "fpc -O2 -omain main.pas >/dev/null", RUN("./main"), "3.2", "fpc",
	 "-iV"},
	{"fortran", "bash", "/work/main.f90", "gfortran -O2 -o main main.f90", RUN("./main"), "12.2",
	 "gfortran", "-dumpfullversion"},
};
#undef RUN

const pd_language *pd_languages(size_t *n)
{
	*n = sizeof languages / sizeof languages[0];
	return languages;
}

const pd_language *pd_language_find(const char *name)
{
	for (size_t i = 0; i < sizeof languages / sizeof languages[0]; i++)
		if (!strcmp(languages[i].name, name))
			return &languages[i];
	return NULL;
}

/* ---- jobs ------------------------------------------------------------------------------------ */

pd_job *pd_job_new(void)
{
	pd_job *j = calloc(1, sizeof *j);
	if (j)
		j->priority = PD_PRIO_NORMAL;
	return j;
}

static void free_vec(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void free_step(pd_step *s)
{
	free_vec(s->argv);
	free(s->stdin_data);
}

void pd_job_free(pd_job *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->nfiles; i++) {
		free(j->files[i].path);
		free(j->files[i].data);
	}
	free(j->files);
	free_step(&j->compile);
	free_step(&j->run);
	free_vec(j->env);
	free(j->cwd);
	for (size_t i = 0; i < j->nfetch; i++)
		free(j->fetch[i]);
	free(j->fetch);
	for (size_t i = 0; i < j->nfetched; i++) {
		free(j->fetched[i].path);
		free(j->fetched[i].data);
	}
	free(j->fetched);
	pd_result_free(&j->compile_r);
	pd_result_free(&j->run_r);
	free(j);
}

/* prefix + the request's args (non-strings as ""), NULL-terminated */
static char **run_argv(const char *const *prefix, json_t *args)
{
	size_t np = 0, na = json_is_array(args) ? json_array_size(args) : 0;
	while (prefix[np])
		np++;
	char **v = calloc(np + na + 1, sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < np + na; i++) {
		json_t *a = i >= np ? json_array_get(args, i - np) : NULL;
		v[i] = strdup(i < np ? prefix[i] : json_is_string(a) ? json_string_value(a) : "");
		if (!v[i]) {
			free_vec(v);
			return NULL;
		}
	}
	return v;
}

/* sh -c CMD, the request's args as $1... */
static char **sh_argv(const char *cmd, json_t *args)
{
	const char *const prefix[] = {"/bin/sh", "-c", cmd, "sh", NULL};
	return run_argv(prefix, args);
}

static int add_file(pd_job *j, const char *path, const char *data, size_t len)
{
	pd_file *f = realloc(j->files, (j->nfiles + 1) * sizeof *f);
	if (!f)
		return -1;
	j->files = f;
	char *p;
	if (path[0] == '/')
		p = strdup(path);
	else if (asprintf(&p, "/work/%s", path) < 0)
		p = NULL;
	char *d = malloc(len + 1);
	if (!p || !d) {
		free(p);
		free(d);
		return -1;
	}
	memcpy(d, data, len);
	d[len] = 0;
	j->files[j->nfiles++] = (pd_file){p, d, len};
	return 0;
}

/* "<name>.<key>" naming a field in an error message, cut (to fit) at a character boundary: the key
 * is a client's UTF-8, and half a character would make the message invalid UTF-8. */
static void field_name(char *out, size_t size, const char *name, const char *key)
{
	if (snprintf(out, size, "%s.%s", name, key) < (int)size)
		return;
	size_t j = size - 2; /* the last byte kept */
	while (j && ((unsigned char)out[j] & 0xc0) == 0x80)
		j--;
	unsigned char lead = (unsigned char)out[j];
	size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
	if (size - 1 - j < need)
		out[j] = 0;
}

/* A relative path from a client must not climb out of /work by text alone; the sandbox resolves
 * it inside its own root anyway, so this only keeps requests honest. */
static int check_path(const char *field, const char *p, pd_err *e)
{
	if (!*p || strlen(p) > 1024)
		return pd_fail(e, EINVAL, "%s: path must have 1 to 1024 characters", field);
	return 0;
}

static int set_language(pd_job *j, const char *lang, const char *code, size_t code_len, json_t *args,
			pd_err *e)
{
	const pd_language *l = pd_language_find(lang);
	if (!l)
		return pd_fail(e, EINVAL, "language: '%s' is not a language paddock knows", lang);
	snprintf(j->language, sizeof j->language, "%s", l->name);
	snprintf(j->template_name, sizeof j->template_name, "%s", l->template);
	if (code && add_file(j, l->source, code, code_len) < 0)
		return pd_fail(e, ENOMEM, "code");
	if (l->compile && !(j->compile.argv = sh_argv(l->compile, NULL)))
		return pd_fail(e, ENOMEM, "compile");
	if (!(j->run.argv = run_argv(l->run, args)))
		return pd_fail(e, ENOMEM, "run");
	free(j->cwd);
	j->cwd = strdup("/work");
	return 0;
}

/* "stdin": a string fed to the run step (null or absent: none). */
static int parse_stdin(pd_job *j, json_t *in, pd_err *e)
{
	if (!in || json_is_null(in))
		return 0;
	if (!json_is_string(in))
		return pd_fail(e, EINVAL, "stdin: must be a string");
	j->run.stdin_len = json_string_length(in);
	j->run.stdin_data = malloc(j->run.stdin_len + 1);
	if (!j->run.stdin_data)
		return pd_fail(e, ENOMEM, "stdin");
	memcpy(j->run.stdin_data, json_string_value(in), j->run.stdin_len + 1);
	return 0;
}

/* An object of path: base64 content (native files_base64, SandboxFusion files). */
static int parse_b64_files(pd_job *j, json_t *files, const char *name, bool null_ok, pd_err *e)
{
	if (!files || (null_ok && json_is_null(files)))
		return 0;
	if (!json_is_object(files))
		return pd_fail(e, EINVAL, "%s: must be an object of path: base64", name);
	const char *k;
	json_t *v;
	json_object_foreach(files, k, v) {
		if (null_ok && json_is_null(v))
			continue;
		char field[300];
		field_name(field, sizeof field, name, k);
		char *data;
		size_t len;
		if (check_path(field, k, e) < 0)
			return -1;
		if (!json_is_string(v) || pd_b64_decode(json_string_value(v), &data, &len) < 0)
			return pd_fail(e, EINVAL, "%s: must be base64", field);
		int rc = add_file(j, k, data, len);
		free(data);
		if (rc < 0)
			return pd_fail(e, ENOMEM, "%s", field);
	}
	return 0;
}

#define FETCH_FILE_MAX (16u << 20)
#define FETCH_TOTAL_MAX (64u << 20)

/* "fetch_files": paths to return after the run. */
static int parse_fetch(pd_job *j, json_t *fetch, pd_err *e)
{
	if (!fetch || json_is_null(fetch))
		return 0;
	if (!json_is_array(fetch) || json_array_size(fetch) > 64)
		return pd_fail(e, EINVAL, "fetch_files: must be a list of at most 64 paths");
	j->fetch = calloc(json_array_size(fetch) + 1, sizeof *j->fetch);
	if (!j->fetch)
		return pd_fail(e, ENOMEM, "fetch_files");
	size_t i;
	json_t *v;
	json_array_foreach(fetch, i, v) {
		if (!json_is_string(v))
			return pd_fail(e, EINVAL, "fetch_files[%zu]: must be a string", i);
		j->fetch[j->nfetch++] = strdup(json_string_value(v));
	}
	return 0;
}

static int get_seconds(json_t *o, const char *key, const char *field, uint64_t *ms, pd_err *e)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 86400)
		return pd_fail(e, EINVAL, "%s: must be a number of seconds from 0 to 86400", field);
	*ms = (uint64_t)(json_number_value(v) * 1000.0 + 0.5);
	return 0;
}

static char **str_array(json_t *a, const char *field, size_t max, pd_err *e)
{
	if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > max) {
		pd_fail(e, EINVAL, "%s: must be a list of 1 to %zu strings", field, max);
		return NULL;
	}
	char **v = calloc(json_array_size(a) + 1, sizeof *v);
	size_t i;
	json_t *x;
	json_array_foreach(a, i, x) {
		if (!json_is_string(x)) {
			free_vec(v);
			pd_fail(e, EINVAL, "%s[%zu]: must be a string", field, i);
			return NULL;
		}
		v[i] = strdup(json_string_value(x));
	}
	return v;
}

static int common_ids(pd_job *j, json_t *req, pd_err *e)
{
	static const struct {
		const char *key;
		size_t off, size;
	} ids[] = {{"task_id", offsetof(pd_job, task_id), sizeof(((pd_job *)0)->task_id)},
		   {"problem_id", offsetof(pd_job, problem_id), sizeof(((pd_job *)0)->problem_id)},
		   {"problem_version", offsetof(pd_job, problem_version),
		    sizeof(((pd_job *)0)->problem_version)}};
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(req, ids[i].key);
		if (!v || json_is_null(v))
			continue;
		if (!json_is_string(v) || json_string_length(v) >= ids[i].size)
			return pd_fail(e, EINVAL, "%s: must be a string of at most %zu characters", ids[i].key,
				       ids[i].size - 1);
		snprintf((char *)j + ids[i].off, ids[i].size, "%s", json_string_value(v));
	}
	json_t *p = json_object_get(req, "priority");
	if (p && !json_is_null(p)) {
		const char *ps = json_string_value(p);
		if (ps && !strcmp(ps, "high"))
			j->priority = PD_PRIO_HIGH;
		else if (ps && !strcmp(ps, "normal"))
			j->priority = PD_PRIO_NORMAL;
		else if (ps && !strcmp(ps, "low"))
			j->priority = PD_PRIO_LOW;
		else
			return pd_fail(e, EINVAL, "priority: must be high, normal or low");
	}
	json_t *d = json_object_get(req, "deadline_ms");
	if (d && !json_is_null(d)) {
		/* bounded: pd_now_us() + 2^62 ms * 1000 would wrap into a deadline already past */
		if (!json_is_integer(d) || json_integer_value(d) <= 0 || json_integer_value(d) > 31536000000LL)
			return pd_fail(e, EINVAL,
				       "deadline_ms: must be a positive whole number of milliseconds, at most a year");
		j->deadline_us = pd_now_us() + (uint64_t)json_integer_value(d) * 1000;
	}
	return 0;
}

pd_job *pd_job_from_native(json_t *req, pd_err *e)
{
	static const char *const known[] = {
		"template", "language", "code",   "files",       "files_base64", "cmd",
		"shell",    "compile",  "stdin",  "args",        "limits",       "env",
		"cwd",      "fetch_files", "priority", "deadline_ms", "task_id", "problem_id",
		"problem_version", NULL};
	if (!json_is_object(req)) {
		pd_fail(e, EINVAL, "request: must be a JSON object");
		return NULL;
	}
	const char *k;
	json_t *v;
	json_object_foreach(req, k, v) {
		bool ok = false;
		for (int i = 0; known[i]; i++)
			ok |= !strcmp(k, known[i]);
		if (!ok) {
			pd_fail(e, EINVAL, "%s: unknown field", k);
			return NULL;
		}
	}
	pd_job *j = pd_job_new();
	if (!j) {
		pd_fail(e, ENOMEM, "job");
		return NULL;
	}
	json_t *lang = json_object_get(req, "language"), *code = json_object_get(req, "code"),
	       *args = json_object_get(req, "args");
	if (args && !json_is_array(args)) {
		pd_fail(e, EINVAL, "args: must be a list of strings");
		goto fail;
	}
	if (code && !json_is_string(code)) {
		pd_fail(e, EINVAL, "code: must be a string");
		goto fail;
	}
	if (lang) {
		if (!json_is_string(lang)) {
			pd_fail(e, EINVAL, "language: must be a string");
			goto fail;
		}
		if (set_language(j, json_string_value(lang), code ? json_string_value(code) : NULL,
				 code ? json_string_length(code) : 0, args, e) < 0)
			goto fail;
	} else if (code) {
		pd_fail(e, EINVAL, "code: needs a language");
		goto fail;
	}
	json_t *tpl = json_object_get(req, "template");
	if (tpl) {
		if (!json_is_string(tpl) || json_string_length(tpl) >= sizeof j->template_name) {
			pd_fail(e, EINVAL, "template: must be a template name");
			goto fail;
		}
		snprintf(j->template_name, sizeof j->template_name, "%s", json_string_value(tpl));
	}
	if (!j->template_name[0])
		snprintf(j->template_name, sizeof j->template_name, "bash");
	json_t *cmd = json_object_get(req, "cmd"), *shell = json_object_get(req, "shell");
	if (cmd && shell) {
		pd_fail(e, EINVAL, "cmd: give cmd or shell, not both");
		goto fail;
	}
	if (cmd || shell) {
		free_vec(j->run.argv);
		j->run.argv = NULL;
		char **base = cmd ? str_array(cmd, "cmd", 4096, e) : NULL;
		if (cmd && !base)
			goto fail;
		for (size_t i = 0; cmd && args && i < json_array_size(args); i++)
			if (!json_is_string(json_array_get(args, i))) {
				free_vec(base);
				pd_fail(e, EINVAL, "args[%zu]: must be a string", i);
				goto fail;
			}
		/* args follow the command, as they follow a language's program */
		if (base) {
			j->run.argv = run_argv((const char *const *)base, args);
			free_vec(base);
			if (!j->run.argv) {
				pd_fail(e, ENOMEM, "args");
				goto fail;
			}
		}
		if (shell) {
			if (!json_is_string(shell)) {
				pd_fail(e, EINVAL, "shell: must be a string");
				goto fail;
			}
			j->run.argv = sh_argv(json_string_value(shell), args);
		}
	}
	json_t *comp = json_object_get(req, "compile");
	if (comp) {
		free_vec(j->compile.argv);
		j->compile.argv = NULL;
		if (!json_is_null(comp) && !(j->compile.argv = str_array(comp, "compile", 4096, e)))
			goto fail;
	}
	if (!j->run.argv) {
		pd_fail(e, EINVAL, "cmd: give cmd, shell, or a language with code");
		goto fail;
	}
	json_t *files = json_object_get(req, "files");
	if (files) {
		if (!json_is_object(files)) {
			pd_fail(e, EINVAL, "files: must be an object of path: text");
			goto fail;
		}
		json_object_foreach(files, k, v) {
			char field[300];
			field_name(field, sizeof field, "files", k);
			if (check_path(field, k, e) < 0)
				goto fail;
			if (!json_is_string(v)) {
				pd_fail(e, EINVAL, "%s: must be a string", field);
				goto fail;
			}
			if (add_file(j, k, json_string_value(v), json_string_length(v)) < 0) {
				pd_fail(e, ENOMEM, "%s", field);
				goto fail;
			}
		}
	}
	if (parse_b64_files(j, json_object_get(req, "files_base64"), "files_base64", false, e) < 0)
		goto fail;
	if (parse_stdin(j, json_object_get(req, "stdin"), e) < 0)
		goto fail;
	json_t *lim = json_object_get(req, "limits");
	if (lim) {
		if (!json_is_object(lim)) {
			pd_fail(e, EINVAL, "limits: must be an object");
			goto fail;
		}
		json_object_foreach(lim, k, v) {
			if (strcmp(k, "wall_time") && strcmp(k, "cpu_time") && strcmp(k, "memory") &&
			    strcmp(k, "compile_wall_time")) {
				pd_fail(e, EINVAL, "limits.%s: unknown field (wall_time, cpu_time, memory, "
						   "compile_wall_time)", k);
				goto fail;
			}
		}
		if (get_seconds(lim, "wall_time", "limits.wall_time", &j->run.wall_ms, e) < 0 ||
		    get_seconds(lim, "cpu_time", "limits.cpu_time", &j->run.cpu_ms, e) < 0 ||
		    get_seconds(lim, "compile_wall_time", "limits.compile_wall_time", &j->compile.wall_ms, e) < 0)
			goto fail;
		json_t *mem = json_object_get(lim, "memory");
		if (mem) {
			uint64_t b = 0;
			if ((json_is_integer(mem) && json_integer_value(mem) > 0 && (b = (uint64_t)json_integer_value(mem))) ||
			    (json_is_string(mem) && pd_parse_size(json_string_value(mem), &b) == 0 && b)) {
				if (b < (4u << 20)) {
					pd_fail(e, EINVAL, "limits.memory: at least 4M");
					goto fail;
				}
				j->memory_bytes = b;
			} else {
				pd_fail(e, EINVAL, "limits.memory: must be bytes or a size like \"256M\"");
				goto fail;
			}
		}
	}
	json_t *env = json_object_get(req, "env");
	if (env) {
		if (!json_is_object(env) || json_object_size(env) > 256) {
			pd_fail(e, EINVAL, "env: must be an object of at most 256 strings");
			goto fail;
		}
		j->env = calloc(json_object_size(env) + 5, sizeof *j->env);
		size_t i = 0;
		json_object_foreach(env, k, v) {
			if (!json_is_string(v) || !*k || strchr(k, '=')) {
				pd_fail(e, EINVAL, "env.%s: must be a string, the name without '='", k);
				goto fail;
			}
			if (asprintf(&j->env[i++], "%s=%s", k, json_string_value(v)) < 0) {
				pd_fail(e, ENOMEM, "env");
				goto fail;
			}
		}
	}
	json_t *cwd = json_object_get(req, "cwd");
	if (cwd) {
		if (!json_is_string(cwd) || json_string_value(cwd)[0] != '/') {
			pd_fail(e, EINVAL, "cwd: must be an absolute path");
			goto fail;
		}
		free(j->cwd);
		j->cwd = strdup(json_string_value(cwd));
	}
	if (parse_fetch(j, json_object_get(req, "fetch_files"), e) < 0)
		goto fail;
	if (common_ids(j, req, e) < 0)
		goto fail;
	return j;
fail:
	pd_job_free(j);
	return NULL;
}

pd_job *pd_job_from_run_code(json_t *req, pd_err *e)
{
	if (!json_is_object(req)) {
		pd_fail(e, EINVAL, "request: must be a JSON object");
		return NULL;
	}
	json_t *code = json_object_get(req, "code"), *lang = json_object_get(req, "language");
	if (!code || !json_is_string(code)) {
		pd_fail(e, EINVAL, "code: required, a string");
		return NULL;
	}
	if (!lang || !json_is_string(lang)) {
		pd_fail(e, EINVAL, "language: required, a string");
		return NULL;
	}
	json_t *args = json_object_get(req, "args");
	if (args && !json_is_null(args) && !json_is_array(args)) {
		pd_fail(e, EINVAL, "args: must be a list of strings");
		return NULL;
	}
	pd_job *j = pd_job_new();
	if (!j) {
		pd_fail(e, ENOMEM, "job");
		return NULL;
	}
	if (set_language(j, json_string_value(lang), json_string_value(code), json_string_length(code),
			 args, e) < 0)
		goto fail;
	/* SandboxFusion's defaults: 10 s to compile, 10 s to run */
	j->compile.wall_ms = 10000;
	j->run.wall_ms = 10000;
	if (get_seconds(req, "compile_timeout", "compile_timeout", &j->compile.wall_ms, e) < 0 ||
	    get_seconds(req, "run_timeout", "run_timeout", &j->run.wall_ms, e) < 0)
		goto fail;
	json_t *mem = json_object_get(req, "memory_limit_MB");
	if (mem && !json_is_null(mem)) {
		if (!json_is_number(mem)) {
			pd_fail(e, EINVAL, "memory_limit_MB: must be a number");
			goto fail;
		}
		double mb = json_number_value(mem);
		if (mb > 0) {
			if (mb < 4 || mb > 16777216) {
				pd_fail(e, EINVAL, "memory_limit_MB: from 4 to 16777216 (16 TiB)");
				goto fail;
			}
			j->memory_bytes = (uint64_t)(mb * 1048576.0);
		}
	}
	if (parse_stdin(j, json_object_get(req, "stdin"), e) < 0)
		goto fail;
	/* SandboxFusion clients send null for "no files" and for a file they leave out */
	if (parse_b64_files(j, json_object_get(req, "files"), "files", true, e) < 0)
		goto fail;
	if (parse_fetch(j, json_object_get(req, "fetch_files"), e) < 0)
		goto fail;
	if (common_ids(j, req, e) < 0)
		goto fail;
	return j;
fail:
	pd_job_free(j);
	return NULL;
}

pd_job *pd_job_from_piston(json_t *req, pd_err *e)
{
	if (!json_is_object(req)) {
		pd_fail(e, EINVAL, "request: must be a JSON object");
		return NULL;
	}
	json_t *lang = json_object_get(req, "language"), *files = json_object_get(req, "files"),
	       *ver = json_object_get(req, "version");
	if (!lang || !json_is_string(lang)) {
		pd_fail(e, EINVAL, "language: required, a string");
		return NULL;
	}
	/* Piston requires the version: a node-semver range ("*", "3.11", "^3", ">=3.10 <4") */
	if (!ver || !json_is_string(ver) || !json_string_length(ver)) {
		pd_fail(e, EINVAL, "version: required, a string (a version range such as \"*\" or \"3.11\")");
		return NULL;
	}
	const pd_runtime *rt = pd_piston_match(json_string_value(lang), json_string_value(ver));
	if (!rt) {
		/* Piston's own words, which clients may show as they are */
		pd_fail(e, EINVAL, "%s-%s runtime is unknown", json_string_value(lang), json_string_value(ver));
		return NULL;
	}
	if (!files || !json_is_array(files) || json_array_size(files) == 0) {
		pd_fail(e, EINVAL, "files: required, a list of at least one file");
		return NULL;
	}
	json_t *args = json_object_get(req, "args");
	if (args && !json_is_array(args)) {
		pd_fail(e, EINVAL, "args: must be a list of strings");
		return NULL;
	}
	pd_job *j = pd_job_new();
	if (!j) {
		pd_fail(e, ENOMEM, "job");
		return NULL;
	}
	size_t i;
	json_t *f;
	json_array_foreach(files, i, f) {
		json_t *content = json_object_get(f, "content"), *name = json_object_get(f, "name"),
		       *enc = json_object_get(f, "encoding");
		if (!json_is_object(f) || !content || !json_is_string(content)) {
			pd_fail(e, EINVAL, "files[%zu].content: required, a string", i);
			goto fail;
		}
		const char *encs = enc && json_is_string(enc) ? json_string_value(enc) : "utf8";
		char *data = NULL;
		size_t len = 0;
		if (!strcmp(encs, "base64")) {
			if (pd_b64_decode(json_string_value(content), &data, &len) < 0) {
				pd_fail(e, EINVAL, "files[%zu].content: not base64", i);
				goto fail;
			}
		} else if (!strcmp(encs, "utf8")) {
			len = json_string_length(content);
			data = malloc(len + 1);
			memcpy(data, json_string_value(content), len + 1);
		} else {
			pd_fail(e, EINVAL, "files[%zu].encoding: must be utf8 or base64", i);
			goto fail;
		}
		if (i == 0) {
			/* the first file is the program */
			int rc = set_language(j, rt->paddock, data, len, args, e);
			free(data);
			if (rc < 0)
				goto fail;
			continue;
		}
		const char *nm = name && json_is_string(name) ? json_string_value(name) : NULL;
		char fallback[32];
		if (!nm || !*nm) {
			snprintf(fallback, sizeof fallback, "file%zu", i);
			nm = fallback;
		}
		if (strstr(nm, "..") || nm[0] == '/') {
			free(data);
			pd_fail(e, EINVAL, "files[%zu].name: must be a relative path without '..'", i);
			goto fail;
		}
		int rc = add_file(j, nm, data, len);
		free(data);
		if (rc < 0) {
			pd_fail(e, ENOMEM, "files");
			goto fail;
		}
	}
	/* Piston times are milliseconds; -1 means its default */
	static const struct {
		const char *key;
		size_t off;
	} t[] = {{"compile_timeout", offsetof(pd_job, compile.wall_ms)},
		 {"run_timeout", offsetof(pd_job, run.wall_ms)},
		 {"compile_cpu_time", offsetof(pd_job, compile.cpu_ms)},
		 {"run_cpu_time", offsetof(pd_job, run.cpu_ms)}};
	j->compile.wall_ms = 10000;
	j->run.wall_ms = 3000;
	for (size_t k = 0; k < 4; k++) {
		json_t *v = json_object_get(req, t[k].key);
		if (!v || json_is_null(v))
			continue;
		/* a double outside 0..2^64 does not convert to uint64_t (undefined): bound it first */
		if (!json_is_number(v) || json_number_value(v) > 86400000) {
			pd_fail(e, EINVAL, "%s: must be milliseconds, at most 86400000", t[k].key);
			goto fail;
		}
		if (json_number_value(v) < 0)
			continue; /* -1 (any negative): Piston's default */
		*(uint64_t *)((char *)j + t[k].off) = (uint64_t)json_number_value(v);
	}
	json_t *mem = json_object_get(req, "run_memory_limit");
	if (mem && json_is_integer(mem) && json_integer_value(mem) > 0) {
		if (json_integer_value(mem) < (4 << 20)) {
			pd_fail(e, EINVAL, "run_memory_limit: at least 4194304 bytes");
			goto fail;
		}
		j->memory_bytes = (uint64_t)json_integer_value(mem);
	}
	json_t *in = json_object_get(req, "stdin");
	if (in && json_is_string(in)) {
		j->run.stdin_len = json_string_length(in);
		j->run.stdin_data = malloc(j->run.stdin_len + 1);
		memcpy(j->run.stdin_data, json_string_value(in), j->run.stdin_len + 1);
	}
	return j;
fail:
	pd_job_free(j);
	return NULL;
}

/* ---- running --------------------------------------------------------------------------------- */

static pd_failure failure_of(const pd_result *r)
{
	switch (r->status) {
	case PD_TO: return PD_F_TIMEOUT;
	case PD_ML: return PD_F_OOM;
	case PD_OL: return PD_F_OUTPUT;
	case PD_XX: return PD_F_INTERNAL;
	default: return r->audit_denied ? PD_F_POLICY : PD_F_NONE;
	}
}

/* The request's variables over the template's (or paddock's defaults), by name. */
static char **merged_env(const pd_job *j, const pd_template *t)
{
	static char d_path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		    d_home[] = "HOME=/root", d_lang[] = "LANG=C.UTF-8", d_term[] = "TERM=dumb";
	static char *defaults[] = {d_path, d_home, d_lang, d_term, NULL};
	char *const *base = t && t->env[0] ? t->env : defaults;
	size_t nb = 0, nj = 0;
	while (base[nb])
		nb++;
	while (j->env[nj])
		nj++;
	char **env = calloc(nb + nj + 1, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < nb; i++) {
		size_t kl = (size_t)(strchr(base[i], '=') - base[i]) + 1;
		bool over = false;
		for (size_t m = 0; m < nj && !over; m++)
			over = !strncmp(j->env[m], base[i], kl);
		if (!over)
			env[k++] = base[i];
	}
	for (size_t m = 0; m < nj; m++)
		env[k++] = j->env[m];
	return env;
}

static int run_step(pd_sandbox *s, const pd_job *j, const pd_step *st, const pd_template *t,
		    pd_result *r, pd_err *e)
{
	pd_exec_opts x = {0};
	x.argv = st->argv;
	char **env = j->env ? merged_env(j, t) : NULL;
	x.envp = env ? env : (t && t->env[0] ? t->env : NULL);
	x.cwd = j->cwd ? j->cwd : t ? t->cwd : NULL;
	x.stdin_data = st->stdin_data;
	x.stdin_len = st->stdin_len;
	x.wall_ms = st->wall_ms;
	x.cpu_ms = st->cpu_ms;
	int rc = pd_sandbox_exec(s, &x, r, e);
	free(env); /* the strings belong to the job and the template */
	return rc;
}

static uint64_t wall_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* One attempt in one fresh sandbox. Returns true if it may be retried (infrastructure). */
static bool attempt(pd_pools *pools, pd_job *j)
{
	pd_err e = {0};
	j->failure = PD_F_NONE;
	j->error[0] = 0;
	pd_result_free(&j->compile_r);
	pd_result_free(&j->run_r);
	memset(&j->compile_r, 0, sizeof j->compile_r);
	memset(&j->run_r, 0, sizeof j->run_r);
	j->compiled = j->ran = false;
	const pd_template *t = pd_pools_template(pools, j->template_name);
	if (!t) {
		j->failure = PD_F_DEPENDENCY;
		snprintf(j->error, sizeof j->error, "no template named '%s'", j->template_name);
		return false;
	}
	if (!t->available) {
		j->failure = PD_F_DEPENDENCY;
		snprintf(j->error, sizeof j->error, "template '%s' needs %s, which the image lacks",
			 t->name, t->missing);
		return false;
	}
	if (j->language[0]) {
		const pd_language *l = pd_language_find(j->language);
		char p[256];
		bool have = false;
		static const char *const bins[] = {"/usr/local/bin", "/usr/bin", "/bin", NULL};
		for (int b = 0; l && l->requires && bins[b] && !have; b++) {
			snprintf(p, sizeof p, "%s/%s", bins[b], l->requires);
			have = access(p, X_OK) == 0;
		}
		if (l && l->requires && !have && !t->layers[0]) {
			j->failure = PD_F_DEPENDENCY;
			snprintf(j->error, sizeof j->error, "language %s needs %s, which the image lacks",
				 l->name, l->requires);
			return false;
		}
	}
	pd_sandbox *s = pd_pool_acquire(pools, j->template_name, NULL, &e);
	if (!s) {
		j->failure = e.kind == PD_EK_DEPENDENCY ? PD_F_DEPENDENCY : PD_F_STARTUP;
		snprintf(j->error, sizeof j->error, "%s", e.msg);
		return j->failure == PD_F_STARTUP;
	}
	snprintf(j->sandbox_id, sizeof j->sandbox_id, "%s", pd_sandbox_id(s));
	bool retry = false;
	if (j->memory_bytes && pd_sandbox_set_memory(s, j->memory_bytes, &e) < 0) {
		j->failure = PD_F_INTERNAL;
		snprintf(j->error, sizeof j->error, "%s", e.msg);
		retry = true;
		goto out;
	}
	for (size_t i = 0; i < j->nfiles; i++) {
		/* the parent is usually there (the template's working directory): made only when the
		 * write says it is missing, which saves a round trip to init per file */
		int w = pd_sandbox_write_file(s, j->files[i].path, j->files[i].data, j->files[i].len, 0644, &e);
		char dir[1100];
		snprintf(dir, sizeof dir, "%s", j->files[i].path);
		char *slash = strrchr(dir, '/');
		if (w < 0 && e.code == ENOENT && slash && slash != dir) {
			*slash = 0;
			pd_sandbox_mkdir(s, dir, 0755, NULL);
			memset(&e, 0, sizeof e);
			w = pd_sandbox_write_file(s, j->files[i].path, j->files[i].data, j->files[i].len, 0644, &e);
		}
		if (w < 0) {
			/* a bad path is the client's; a full disk too */
			j->failure = PD_F_NONE;
			/* the library's message names the path itself, as a rule: not twice */
			if (strstr(e.msg, j->files[i].path))
				snprintf(j->error, sizeof j->error, "file %s", e.msg);
			else
				snprintf(j->error, sizeof j->error, "file %s: %s", j->files[i].path, e.msg);
			goto out;
		}
	}
	if (j->compile.argv) {
		if (run_step(s, j, &j->compile, t, &j->compile_r, &e) < 0) {
			j->failure = PD_F_INTERNAL;
			snprintf(j->error, sizeof j->error, "compile: %s", e.msg);
			retry = true;
			goto out;
		}
		j->compiled = true;
		pd_failure f = failure_of(&j->compile_r);
		if (f != PD_F_NONE || j->compile_r.status != PD_OK) {
			j->failure = f;
			retry = f == PD_F_INTERNAL;
			goto out;
		}
	}
	if (run_step(s, j, &j->run, t, &j->run_r, &e) < 0) {
		j->failure = PD_F_INTERNAL;
		snprintf(j->error, sizeof j->error, "run: %s", e.msg);
		retry = true;
		goto out;
	}
	j->ran = true;
	j->failure = failure_of(&j->run_r);
	retry = j->failure == PD_F_INTERNAL;
	/* each file up to 16 MiB, and 64 MiB in all: the sandbox chooses what the files hold, and
	 * each byte is held several times over (data, base64, the JSON answer, the stored record)
	 * while the answer is built; a file past either comes back null */
	size_t budget = FETCH_TOTAL_MAX;
	if (pd_sandbox_state(s) == PD_READY)
		for (size_t i = 0; i < j->nfetch; i++) {
			pd_file *nf = realloc(j->fetched, (j->nfetched + 1) * sizeof *nf);
			if (!nf)
				break;
			j->fetched = nf;
			char path[1100];
			if (j->fetch[i][0] == '/')
				snprintf(path, sizeof path, "%s", j->fetch[i]);
			else
				snprintf(path, sizeof path, "%s/%s", j->cwd ? j->cwd : "/work", j->fetch[i]);
			pd_file *out = &j->fetched[j->nfetched++];
			out->path = strdup(j->fetch[i]);
			out->data = NULL;
			out->len = 0;
			size_t max = budget < FETCH_FILE_MAX ? budget : FETCH_FILE_MAX;
			if (!max || pd_sandbox_read_file(s, path, max, &out->data, &out->len, &e) < 0) {
				out->data = NULL;
				out->len = 0;
			}
			budget -= out->len;
		}
out:
	pd_pool_release(pools, s);
	return retry;
}

void pd_job_execute(pd_pools *pools, pd_job *j, unsigned max_retries)
{
	j->started_us = wall_us();
	for (j->attempts = 1;; j->attempts++) {
		bool retry = attempt(pools, j);
		if (!retry || j->attempts > max_retries)
			break;
		if (j->deadline_us && pd_now_us() >= j->deadline_us)
			break;
		for (size_t i = 0; i < j->nfetched; i++) {
			free(j->fetched[i].path);
			free(j->fetched[i].data);
		}
		j->nfetched = 0;
	}
	j->finished_us = wall_us();
}

/* ---- responses ------------------------------------------------------------------------------- */

/* The record's stdout or stderr text (pd_result_json renders both): SandboxFusion and Piston answer
 * with the same text as /v1/runs. */
static json_t *record_text(json_t *rec, const char *stream)
{
	json_t *t = json_object_get(rec, stream);
	return t ? json_incref(t) : json_string("");
}

/* The record of a step, or null when it did not run (or there was no memory for it). */
static json_t *step_json(bool done, const pd_result *r)
{
	json_t *o = done ? pd_result_json(r, true) : NULL;
	return o ? o : json_null();
}

json_t *pd_job_to_json(const pd_job *j)
{
	json_t *o = json_object();
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	json_object_set_new(o, "task_id", json_string(j->task_id));
	json_object_set_new(o, "problem_id", json_string(j->problem_id));
	json_object_set_new(o, "problem_version", json_string(j->problem_version));
	json_object_set_new(o, "attempt", json_integer(j->attempts));
	json_object_set_new(o, "sandbox_id", json_string(j->sandbox_id));
	json_object_set_new(o, "template", json_string(j->template_name));
	json_object_set_new(o, "language", json_string(j->language));
	json_object_set_new(o, "node", json_string(host));
	json_object_set_new(o, "queued_at", json_integer((json_int_t)(j->queued_us / 1000)));
	json_object_set_new(o, "started_at", json_integer((json_int_t)(j->started_us / 1000)));
	json_object_set_new(o, "finished_at", json_integer((json_int_t)(j->finished_us / 1000)));
	json_object_set_new(o, "queue_ms", json_integer(j->started_us > j->queued_us && j->queued_us
								 ? (json_int_t)((j->started_us - j->queued_us) / 1000)
								 : 0));
	uint64_t exec_us = (j->compiled ? j->compile_r.exec_us : 0) + (j->ran ? j->run_r.exec_us : 0);
	uint64_t total_us = j->finished_us > j->started_us ? j->finished_us - j->started_us : 0;
	json_object_set_new(o, "exec_ms", json_real(exec_us / 1000.0));
	json_object_set_new(o, "setup_ms", json_real(total_us > exec_us ? (total_us - exec_us) / 1000.0 : 0));
	/* pooled sandboxes are torn down off the request path; the pools count residue failures */
	json_object_set_new(o, "teardown", json_string("deferred to the pool reclaimer"));
	const pd_result *r = j->ran ? &j->run_r : j->compiled ? &j->compile_r : NULL;
	json_object_set_new(o, "status", json_string(r ? pd_status_name(r->status) : "XX"));
	json_object_set_new(o, "failure_class", json_string(pd_failure_name(j->failure)));
	json_object_set_new(o, "error", pd_json_text(j->error));
	json_t *verdict = json_object();
	json_object_set_new(verdict, "output", json_string("not_judged"));
	json_object_set_new(verdict, "process",
			    json_string(j->failure == PD_F_POLICY ? "fail" : r ? "pass" : "not_judged"));
	json_object_set_new(verdict, "resources",
			    json_string(j->failure == PD_F_TIMEOUT || j->failure == PD_F_OOM ||
						      j->failure == PD_F_OUTPUT
					      ? "fail"
					      : r ? "pass" : "not_judged"));
	json_object_set_new(o, "verdict", verdict);
	json_object_set_new(o, "compile", step_json(j->compiled, &j->compile_r));
	json_object_set_new(o, "run", step_json(j->ran, &j->run_r));
	json_t *files = json_object();
	for (size_t i = 0; i < j->nfetched; i++) {
		char *b = j->fetched[i].data ? pd_b64_encode(j->fetched[i].data, j->fetched[i].len) : NULL;
		json_object_set_new(files, j->fetched[i].path, b ? json_string(b) : json_null());
		free(b);
	}
	json_object_set_new(o, "files", files);
	return o;
}

static json_t *fusion_result(const pd_result *r)
{
	json_t *o = json_object();
	const char *st = r->status == PD_TO ? "TimeLimitExceeded" : r->status == PD_XX ? "Error" : "Finished";
	json_object_set_new(o, "status", json_string(st));
	json_object_set_new(o, "execution_time", json_real(r->exec_us / 1e6));
	/* a process ended by a signal has no return code: SandboxFusion reports null */
	json_object_set_new(o, "return_code",
			    r->status == PD_TO || r->status == PD_XX || r->signal ? json_null()
										: json_integer(r->exit_code));
	json_t *rec = pd_result_json(r, true);
	json_object_set_new(o, "stdout", record_text(rec, "stdout"));
	json_object_set_new(o, "stderr", record_text(rec, "stderr"));
	json_decref(rec);
	return o;
}

json_t *pd_job_to_run_code(const pd_job *j)
{
	json_t *o = json_object();
	const char *status, *message = "";
	if (j->failure == PD_F_STARTUP || j->failure == PD_F_INTERNAL || j->failure == PD_F_DEPENDENCY ||
	    j->failure == PD_F_QUEUE || j->failure == PD_F_CANCELLED ||
	    (!j->compiled && !j->ran)) {
		status = "SandboxError";
		message = j->error[0] ? j->error : pd_failure_name(j->failure);
	} else if (j->ran && j->run_r.status == PD_OK) {
		status = "Success";
	} else {
		status = "Failed";
	}
	json_object_set_new(o, "status", json_string(status));
	json_object_set_new(o, "message", pd_json_text(message));
	json_object_set_new(o, "compile_result", j->compiled ? fusion_result(&j->compile_r) : json_null());
	json_object_set_new(o, "run_result", j->ran ? fusion_result(&j->run_r) : json_null());
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	json_object_set_new(o, "executor_pod_name", json_string(host));
	json_t *files = json_object();
	for (size_t i = 0; i < j->nfetched; i++) {
		char *b = j->fetched[i].data ? pd_b64_encode(j->fetched[i].data, j->fetched[i].len) : NULL;
		json_object_set_new(files, j->fetched[i].path, b ? json_string(b) : json_null());
		free(b);
	}
	json_object_set_new(o, "files", files);
	/* paddock's own fields, which SandboxFusion clients ignore */
	json_object_set_new(o, "failure_class", json_string(pd_failure_name(j->failure)));
	json_object_set_new(o, "sandbox_id", json_string(j->sandbox_id));
	return o;
}

static const char *signame(int sig)
{
	static char buf[16];
	const char *n = sigabbrev_np(sig);
	if (!n)
		return NULL;
	snprintf(buf, sizeof buf, "SIG%s", n);
	return buf;
}

static json_t *piston_stage(const pd_result *r)
{
	json_t *o = json_object();
	json_t *rec = pd_result_json(r, true);
	json_t *out = record_text(rec, "stdout"), *err = record_text(rec, "stderr");
	json_decref(rec);
	size_t lo = json_string_length(out), le = json_string_length(err);
	char *both = malloc(lo + le + 1);
	if (both) {
		memcpy(both, json_string_value(out), lo);
		memcpy(both + lo, json_string_value(err), le);
	}
	json_object_set_new(o, "stdout", out);
	json_object_set_new(o, "stderr", err);
	json_object_set_new(o, "output", both ? json_stringn(both, lo + le) : json_string(""));
	free(both);
	bool sig = r->signal && r->status != PD_OK && r->status != PD_RE;
	json_object_set_new(o, "code", sig ? json_null() : json_integer(r->exit_code));
	json_object_set_new(o, "signal", sig && signame(r->signal) ? json_string(signame(r->signal)) : json_null());
	const char *st = r->status == PD_RE ? "RE"
			 : r->status == PD_SG ? "SG"
			 : r->status == PD_TO ? "TO"
			 : r->status == PD_OL ? "OL"
			 : r->status == PD_ML ? "SG"
			 : r->status == PD_XX ? "XX"
					      : NULL;
	json_object_set_new(o, "status", st ? json_string(st) : json_null());
	json_object_set_new(o, "message", r->status == PD_ML ? json_string("memory limit exceeded")
					  : r->error[0]     ? pd_json_text(r->error)
							    : json_null());
	json_object_set_new(o, "cpu_time", json_integer((json_int_t)r->cpu_ms));
	json_object_set_new(o, "wall_time", json_integer((json_int_t)r->wall_ms));
	json_object_set_new(o, "memory", json_integer((json_int_t)r->memory_peak_bytes));
	return o;
}

json_t *pd_job_to_piston(const pd_job *j)
{
	json_t *o = json_object();
	const pd_language *l = pd_language_find(j->language);
	const pd_runtime *rt = pd_piston_runtime_of(j->language);
	/* Piston answers with the runtime's own name (c++ for "cpp", javascript for "node") */
	json_object_set_new(o, "language", json_string(rt ? rt->language : j->language));
	json_object_set_new(o, "version", json_string(l ? pd_language_version(l) : ""));
	if (j->compiled)
		json_object_set_new(o, "compile", piston_stage(&j->compile_r));
	if (j->ran) {
		json_object_set_new(o, "run", piston_stage(&j->run_r));
	} else if (j->compiled) {
		/* Piston skips the run when the compile fails and, for its older clients, answers with
		 * the compile stage in run's place (api/v2 execute: result.run = result.compile) */
		json_object_set_new(o, "run", piston_stage(&j->compile_r));
	} else {
		/* paddock itself failed before anything ran: Piston would answer 500 with no body;
		 * a run stage with status XX and the reason tells the client more */
		pd_result none;
		memset(&none, 0, sizeof none);
		none.status = PD_XX;
		snprintf(none.error, sizeof none.error, "%s", j->error);
		json_object_set_new(o, "run", piston_stage(&none));
	}
	return o;
}
