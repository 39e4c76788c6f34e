/* The languages paddock runs: for each, the template, where the code goes, the compile command and
 * the run argv, and the version to show when the toolchain cannot be asked (runtimes.c asks it). */
#define _GNU_SOURCE
#include "server.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Each runs in its template's /work. Compile is an sh -c command line; run is the program's argv,
 * exec'd directly with the request's args appended: a shell in front would cost every run another
 * exec for nothing, and the program's crash is reported as its own signal. */
#define RUN(...) {__VA_ARGS__, NULL}
#define NODE_LIBS {"lodash=/usr/share/nodejs/lodash"}
#define JAVA_CP                                                                                       \
	"CP=.:/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar:/usr/share/java/hamcrest.jar:" \
	"/usr/share/java/commons-lang3.jar:/usr/share/java/guava.jar:/usr/share/java/javatuples.jar; "    \
	"for j in *.jar; do [ -e \"$j\" ] && CP=\"$CP:$j\"; done; "
/* sed scripts: the name of the first public top-level class, of the first class */
#define JAVA_PUBLIC                                                                                   \
	"'s/^.*public[[:space:]]\\{1,\\}\\(final[[:space:]]\\{1,\\}\\|abstract[[:space:]]\\{1,\\}\\)*class"   \
	"[[:space:]]\\{1,\\}\\([A-Za-z_$][A-Za-z0-9_$]*\\).*/\\2/p'"
#define JAVA_CLASS                                                                                    \
	"'s/^\\(.*[^A-Za-z0-9_]\\)\\{0,1\\}\\(public[[:space:]]\\{1,\\}\\)\\{0,1\\}\\(final[[:space:]]\\{1,\\}\\)\\{0,1\\}class"       \
	"[[:space:]]\\{1,\\}\\([A-Za-z_$][A-Za-z0-9_$]*\\).*/\\4/p'"
static const pd_language languages[] = {
	{"python", "python", "/work/main.py", NULL, RUN("python3", "main.py"), "3.11", "python3", "--version", {NULL},
	 "python3", false},
	{"python3", "python", "/work/main.py", NULL, RUN("python3", "main.py"), "3.11", "python3", "--version", {NULL},
	 "python3", false},
	{"bash", "bash", "/work/main.sh", NULL, RUN("bash", "main.sh"), "5.2", "bash", "--version", {NULL}, "bash",
	 false},
	/* every source file given is compiled, as Piston does (a request may split its program) */
	{"c", "c", "/work/main.c", "gcc -O2 -std=gnu11 -o main *.c -lm", RUN("./main"), "12.2", "gcc",
	 "-dumpfullversion", {NULL}, "gcc", false},
	{"cpp", "cpp", "/work/main.cpp", "g++ -O2 -std=gnu++17 -o main *.cpp", RUN("./main"), "12.2", "g++",
	 "-dumpfullversion", {NULL}, "g++", false},
	{"c++", "cpp", "/work/main.cpp", "g++ -O2 -std=gnu++17 -o main *.cpp", RUN("./main"), "12.2", "g++",
	 "-dumpfullversion", {NULL}, "g++", false},
	{"nodejs", "node", "/work/main.js", NULL, RUN("node", "main.js"), "20", "node", "--version", NODE_LIBS,
	 "nodejs", false},
	{"javascript", "node", "/work/main.js", NULL, RUN("node", "main.js"), "20", "node", "--version", NODE_LIBS,
	 "nodejs", false},
	{"node", "node", "/work/main.js", NULL, RUN("node", "main.js"), "20", "node", "--version", NODE_LIBS,
	 "nodejs", false},
	{"perl", "bash", "/work/main.pl", NULL, RUN("perl", "main.pl"), "5.36", "perl", "-v",
	 {"Test::Deep=/usr/share/perl5/Test/Deep.pm", "Data::Compare=/usr/share/perl5/Data/Compare.pm"}, "perl",
	 false},
	/* as SandboxFusion runs it: javac, then java -ea Main, a compile error in compile_result;
	 * the jars Debian packages for the libraries SandboxFusion ships (javatuples) or its tests
	 * expect (junit4, hamcrest, commons-lang3, guava) on the class path, and any jar the request
	 * sent as a file. Every .java file given is compiled, as Piston does; a public class of
	 * another name than Main gets its file renamed for javac; the class run is Main, else the
	 * public one, else the first class declared */
	{"java", "bash", "/work/Main.java",
	 JAVA_CP "pub=$(sed -n " JAVA_PUBLIC " Main.java | head -n 1); "
		 "[ -n \"$pub\" ] && [ \"$pub\" != Main ] && mv Main.java \"$pub.java\"; "
		 "javac -encoding UTF-8 -cp \"$CP\" -d . *.java",
	 RUN("sh", "-c",
	     JAVA_CP "main=Main; [ -f Main.class ] || main=$(sed -n " JAVA_PUBLIC " *.java | head -n 1); "
		     "[ -n \"$main\" ] || main=$(sed -n " JAVA_CLASS " *.java | head -n 1); "
		     "exec java -ea -Xmx256m -cp \"$CP\" \"$main\" \"$@\"",
	     "java"),
	 "17", "javac", "-version",
	 {"junit4=/usr/share/java/junit4.jar", "hamcrest=/usr/share/java/hamcrest-core.jar",
	  "commons-lang3=/usr/share/java/commons-lang3.jar", "guava=/usr/share/java/guava.jar",
	  "javatuples=/usr/share/java/javatuples.jar"},
	 "openjdk-17-jdk-headless", false},
	{"go", "bash", "/work/main.go", "go build -o main main.go", RUN("./main"), "1.19", "go", "version", {NULL},
	 "golang-go", true},
	{"rust", "bash", "/work/main.rs", "rustc -O -o main main.rs", RUN("./main"), "1.63", "rustc",
	 "--version", {NULL}, "rustc", true},
	{"ruby", "bash", "/work/main.rb", NULL, RUN("ruby", "main.rb"), "3.1", "ruby", "--version", {NULL}, "ruby",
	 true},
	{"lua", "bash", "/work/main.lua", NULL, RUN("lua", "main.lua"), "5.4", "lua", "-v", {NULL}, "lua5.4",
	 true},
	{"php", "bash", "/work/main.php", NULL, RUN("php", "main.php"), "8.2", "php", "--version", {NULL}, "php-cli",
	 true},
	/* the unit path given: fpc finds its units through /etc/fpc.cfg, an alternatives link that
	 * an image may not carry; -v0 keeps the banner out and the errors in */
	{"pascal", "bash", "/work/main.pas",
	 "fpc -O2 -v0 -Fu\"$(ls -d /usr/lib/*/fpc/*/units/*-linux | head -1)/*\" -omain main.pas", RUN("./main"),
	 "3.2", "fpc", "-iV", {NULL}, "fp-compiler", false},
	{"fortran", "bash", "/work/main.f90", "gfortran -O2 -o main main.f90", RUN("./main"), "12.2",
	 "gfortran", "-dumpfullversion", {NULL}, "gfortran", false},
};
#undef RUN
#undef NODE_LIBS
#undef JAVA_CP
#undef JAVA_PUBLIC
#undef JAVA_CLASS

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

void pd_language_names(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof languages / sizeof languages[0] && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", languages[i].name);
}

static void add_missing(char *missing, size_t len, const char *what, size_t wlen)
{
	size_t used = strlen(missing);
	snprintf(missing + used, len - used, "%s%.*s", used ? ", " : "", (int)wlen, what);
}

bool pd_language_check(const pd_language *l, char *missing, size_t len)
{
	missing[0] = 0;
	static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin", NULL};
	bool found = false;
	for (size_t i = 0; dirs[i] && !found; i++) {
		char path[256];
		snprintf(path, sizeof path, "%s/%s", dirs[i], l->requires);
		found = access(path, X_OK) == 0;
	}
	if (!found)
		add_missing(missing, len, l->requires, strlen(l->requires));
	for (size_t i = 0; i < sizeof l->libs / sizeof l->libs[0] && l->libs[i]; i++) {
		const char *eq = strchr(l->libs[i], '=');
		if (eq && access(eq + 1, R_OK) != 0) {
			add_missing(missing, len, l->libs[i], (size_t)(eq - l->libs[i]));
			found = false;
		}
	}
	return found;
}
