#!/usr/bin/env bash
# Java as SandboxFusion runs it (issue 37): /run_code compiles with javac (compile_result: a real
# one, a compile error there with its return code, which verl reads as -4), then runs java -ea
# Main with the jars SandboxFusion ships (javatuples) and any jar sent as a file on the class path;
# Piston's version "*" resolves to the installed JDK, and a class of any name still runs.
source "$(dirname "$0")/api.sh"
command -v javac >/dev/null && command -v jar >/dev/null || { echo "1..0 # SKIP no JDK (make deps)"; exit 0; }
plan 11
start_daemon
ok $? "daemon started"
rc() { post_json /run_code "$(jq -cn --arg c "$1" --argjson f "${2:-{\}}" '{language: "java", code: $c, compile_timeout: 30, run_timeout: 20, files: $f}')"; }

rc 'public class Main { public static void main(String[] a) { System.out.println("hi"); } }'
is "$(jb '[.status, .compile_result.status, (.compile_result.return_code|tostring), .run_result.stdout] | join(" ")')" "Success Finished 0 hi" "javac, then java: a real compile_result (Finished, 0) and the run's output"
rc 'public class Main { public static void main(String[] a) { int x = "s"; } }'
is "$(jb '[.status, .compile_result.status, (.compile_result.return_code|tostring), (.run_result|tostring)] | join(" ")')" "Failed Finished 1 null" \
  "a compile error: Failed, in compile_result (return code 1), no run"
like "$(jb .compile_result.stderr)" "incompatible types" "  with javac's message"
rc 'public class Main { public static void main(String[] a) { assert 1 > 2 : "on"; } }'
like "$(jb .run_result.stderr)" "AssertionError: on" "assertions are enabled (-ea), as SandboxFusion runs java"
rc 'import org.javatuples.Pair;
public class Main { public static void main(String[] a) { System.out.println(Pair.with(1, "a")); } }'
is "$(jb .run_result.stdout)" "[1, a]" "javatuples (SandboxFusion ships it) is on the class path"

# a jar sent as a file is on the class path, for javac and java
mkdir -p "$TMPD/lib/util" && cat >"$TMPD/lib/util/Twice.java" <<'EOF_J'
package util;
public class Twice { public static int of(int x) { return 2 * x; } }
EOF_J
(cd "$TMPD/lib" && javac -d . util/Twice.java && jar cf twice.jar util/Twice.class) >/dev/null 2>&1
rc 'import util.Twice;
public class Main { public static void main(String[] a) { System.out.println(Twice.of(21)); } }' \
  "$(jq -cn --arg b "$(base64 -w0 "$TMPD/lib/twice.jar")" '{"twice.jar": $b}')"
is "$(jb '[.status, .run_result.stdout] | join(" ")')" "Success 42" "a jar sent as a file is on the class path"

rc 'public class Greeter { public static void main(String[] a) { System.out.println("g"); } }'
is "$(jb '[.status, .run_result.stdout] | join(" ")')" "Success g" "a public class of another name compiles and runs"

# Piston: version "*" is the installed JDK; the compile stage is Piston's compile
post_json /api/v2/execute '{"language":"java","version":"*","args":["x"],"files":[{"content":"public class Main { public static void main(String[] a) { System.out.println(a.length + a[0]); } }"}]}'
is "$(jb '[(.run.stdout | rtrimstr("\n")), (.compile.code|tostring)] | join(" ")')" "1x 0" "Piston: version * runs on the installed JDK, args passed, a compile stage"
like "$(jb .version)" '^17\.' "  reported as the installed version ($(jb .version))"
post_json /api/v2/execute '{"language":"java","version":"*","files":[{"content":"public class Main { public static void main(String[] a) { int x = \"s\"; } }"}]}'
is "$(jb '[(.compile.code|tostring), (.compile.stderr | test("incompatible types") | tostring)] | join(" ")')" "1 true" "Piston: a compile error in its compile stage"
