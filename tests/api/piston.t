#!/usr/bin/env bash
# Piston compatibility: GET /api/v2/runtimes and POST /api/v2/execute as Piston's clients send them
# ({"language","version":"*","files":[{"name","content"}],"stdin","args","compile_timeout",
# "run_timeout","compile_memory_limit","run_memory_limit"}, times in ms), and Piston's stage fields:
# stdout, stderr, output, code, signal, status (null | RE | SG | TO | OL | XX).
source "$(dirname "$0")/api.sh"
plan 88

start_daemon
ok $? "daemon started"

# px LANGUAGE CONTENT [STDIN] [ARGS_JSON] [RUN_TIMEOUT_MS] [RUN_MEMORY] [EXTRA_FILES_JSON]
px() {
  local lang=$1 content=$2 stdin=${3:-} args=${4:-'[]'} rt=${5:-3000} mem=${6:--1} extra=${7:-'[]'}
  local j
  j=$(jq -cn --arg lang "$lang" --arg content "$content" --arg stdin "$stdin" --argjson args "$args" \
    --argjson rt "$rt" --argjson mem "$mem" --argjson extra "$extra" \
    '{language: $lang, version: "*", files: ([{name: "main", content: $content}] + $extra),
      stdin: $stdin, args: $args, compile_timeout: 10000, run_timeout: $rt,
      compile_memory_limit: -1, run_memory_limit: $mem}')
  post_json /api/v2/execute "$j"
}
stage() { jb "[(.$1.status | tostring), (.$1.code | tostring), (.$1.signal | tostring)] | join(\" \")"; }

# --- runtimes ---------------------------------------------------------------------------------------
req GET /api/v2/runtimes
is "$CODE" 200 "runtimes: 200"
is "$(jb 'type')" array "runtimes: a JSON array"
missing=""
# Piston's names: c++ (not cpp), javascript (not nodejs); versions are full semver, as Piston's are
for l in python bash c c++ javascript; do
  v=$(jb "[.[] | select(.language == \"$l\")][0].version // empty")
  [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || missing="$missing $l($v)"
done
is "$missing" "" "runtimes: python, bash, c, c++ and javascript listed, each with a MAJOR.MINOR.PATCH version"
is "$(jb '[.[] | has("language") and has("version") and (.aliases | type == "array")] | all')" true \
  "runtimes: every entry has language, version and an aliases list"
is "$(jb '[.[] | .language] | length == (unique | length)')" true "runtimes: each language listed once"
is "$(jb '[.[] | select(.language == "c++")][0] | [(.aliases | index("cpp") != null), .runtime] | map(tostring) | join(" ")')" \
  "true gcc" "runtimes: c++ has the alias cpp and the runtime gcc"
is "$(jb '[.[] | select(.language == "javascript")][0] | [(.aliases | index("js") != null), (.aliases | index("nodejs") != null), .runtime] | map(tostring) | join(" ")')" \
  "true true node" "runtimes: javascript has the aliases js and nodejs and the runtime node"
PYV=$(jb '[.[] | select(.language == "python")][0].version')
# the version is the toolchain's own, not a table's
host_py=$(/usr/bin/python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)
is "$PYV" "$host_py" "runtimes: python's version is what the image's python3 says ($host_py)"
PYMAJ=${PYV%%.*} PYMIN=$(cut -d. -f2 <<<"$PYV")

# --- python: args, stdin, output ----------------------------------------------------------------
px python 'import sys
print(" ".join(sys.argv[1:]), input())
print("warn", file=sys.stderr)' "from-stdin" '["a1","b 2"]'
is "$CODE" 200 "python: 200"
is "$(jb .language)" python "python: language echoed"
like "$(jb .version)" '^[0-9]' "python: version reported ($(jb .version))"
is "$(jb .run.stdout)" "a1 b 2 from-stdin" "python: run.stdout exact (args and stdin)"
is "$(jb .run.stderr)" "warn" "python: run.stderr"
is "$(jb .run.output)" "$(printf 'a1 b 2 from-stdin\nwarn')" "python: run.output is stdout then stderr"
is "$(stage run)" "null 0 null" "python: run.status null, code 0, signal null"
is "$(jb 'has("compile")')" false "python: no compile stage"

# a second file is placed beside the first
px python 'import helper
print(helper.twice(21))' "" '[]' 3000 -1 '[{"name":"helper.py","content":"def twice(x):\n    return 2 * x\n"}]'
is "$(jb .run.stdout)" 42 "python: a second file (helper.py) is importable"

# --- c and cpp: compile stage -------------------------------------------------------------------
px c '#include <stdio.h>
int main(int argc, char **argv) { int x; scanf("%d", &x); printf("%d %s\n", x * 3, argc > 1 ? argv[1] : "-"); return 0; }' "14" '["arg"]'
is "$CODE" 200 "c: 200"
is "$(jb 'has("compile")')" true "c: compile stage present"
is "$(stage compile)" "null 0 null" "c: compile status null, code 0"
is "$(jb .run.stdout)" "42 arg" "c: run.stdout exact"
is "$(stage run)" "null 0 null" "c: run status null, code 0, signal null"

px cpp '#include <iostream>
#include <string>
int main() { std::string s; std::getline(std::cin, s); std::cout << s.size() << std::endl; }' "hello world"
is "$(jb 'has("compile")')" true "cpp: compile stage present"
is "$(stage compile)" "null 0 null" "cpp: compile code 0"
is "$(jb .run.stdout)" 11 "cpp: run.stdout exact"

px c 'int main(void) { return missing_symbol; }'
is "$CODE" 200 "c compile error: 200"
cc=$(jb .compile.code)
[[ $cc =~ ^[0-9]+$ ]] && [ "$cc" != 0 ]
ok $? "c compile error: compile.code != 0 (got $cc)"
like "$(jb .compile.stderr)" missing_symbol "c compile error: the compiler's message in compile.stderr"
like "$(jb .compile.output)" missing_symbol "c compile error: ...and in compile.output"

px nodejs 'console.log([1, 2, 3].map(x => x * x).join(","))'
is "$(jb .run.stdout)" "1,4,9" "nodejs: run.stdout exact"
is "$(stage run)" "null 0 null" "nodejs: code 0"

# --- a compile error: Piston's shape -----------------------------------------------------------
# Piston runs nothing after a failed compile and, for its older clients, answers with the compile
# stage in run's place (api/v2 /execute: result.run = result.compile)
px c '#include <stdio.h>
int main(void) { puts("ran") return 0; }'
is "$CODE" 200 "c syntax error: 200"
is "$(jb '.compile | [has("stdout"), has("stderr"), has("output"), has("code"), has("signal")] | all')" true \
  "c syntax error: compile stage has stdout, stderr, output, code, signal"
is "$(jb '[(.compile.code > 0), .compile.signal] | map(tostring) | join(" ")')" "true null" \
  "c syntax error: compile.code non-zero, signal null"
like "$(jb .compile.stderr)" "error" "c syntax error: the compiler's diagnostics in compile.stderr"
is "$(jb '.run == .compile')" true "c syntax error: run is the compile stage, as Piston answers (no program ran)"
unlike "$(jb .run.stdout)" ran "c syntax error: the program never ran"
px cpp 'int main() { return 0 }'
is "$(jb '[.language, (.compile.code > 0 | tostring), (.run == .compile | tostring)] | join(" ")')" "c++ true true" \
  "c++ syntax error: language c++, compile.code non-zero, run is the compile stage"

# --- version ranges and aliases, as Piston matches them (node-semver satisfies) -----------------
# pv LANGUAGE VERSION: python print(7) with that language name and version range
pv() {
  post_json /api/v2/execute "$(jq -cn --arg l "$1" --arg v "$2" '{language: $l, version: $v, files: [{content: "print(7)"}]}')"
}
for range in '*' 'x' "$PYV" "=$PYV" "$PYMAJ" "$PYMAJ.$PYMIN" "$PYMAJ.x" "~$PYMAJ.$PYMIN" "^$PYMAJ.$PYMIN" \
             ">=$PYMAJ <$((PYMAJ + 1))" "<=$PYV" "1.x || $PYMAJ.x" "$PYMAJ.0.0 - $PYMAJ.99"; do
  pv python "$range"
  is "$CODE $(jb .run.stdout) $(jb .version)" "200 7 $PYV" "version '$range' matches python $PYV"
done
for range in "$((PYMAJ + 1))" "^$((PYMAJ + 1)).0" ">$PYV" "<$PYMAJ" "$PYMAJ.$((PYMIN + 1)).0" "latest" "3.x.y.z"; do
  pv python "$range"
  is "$CODE $(jb .message)" "400 python-$range runtime is unknown" "version '$range' does not match python $PYV: 400, Piston's message"
done
post_json /api/v2/execute '{"language":"python","files":[{"content":"print(7)"}]}'
is "$CODE" 400 "no version: 400 (Piston requires one)"
like "$(jb .message)" version "no version: the message names the field"
for alias in py py3 python3; do
  pv "$alias" '*'
  is "$CODE $(jb .language) $(jb .run.stdout)" "200 python 7" "alias $alias runs python and answers language python"
done
post_json /api/v2/execute '{"language":"js","version":"*","files":[{"content":"console.log(6*7)"}]}'
is "$(jb '[.language, .run.stdout] | join(" ")')" "javascript 42" "alias js: language javascript"
post_json /api/v2/execute '{"language":"sh","version":"*","files":[{"content":"echo $((6*7))"}]}'
is "$(jb '[.language, .run.stdout] | join(" ")')" "bash 42" "alias sh: language bash"
post_json /api/v2/execute '{"language":"g++","version":"*","files":[{"content":"#include <cstdio>\nint main(){std::puts(\"42\");}"}]}'
is "$(jb '[.language, .run.stdout] | join(" ")')" "c++ 42" "alias g++: language c++"
pv python2 '*'
is "$CODE" 400 "python2 is no alias of python: 400"

# --- crash, timeout, non-zero exit -------------------------------------------------------------
px c '#include <stdio.h>
int main(void) { volatile int *p = 0; puts("before"); fflush(stdout); *p = 1; return 0; }'
is "$(jb .run.status)" SG "segfault: run.status SG"
is "$(jb .run.signal)" SIGSEGV "segfault: run.signal SIGSEGV"
is "$(jb .run.code)" null "segfault: run.code null"
is "$(jb .run.stdout)" before "segfault: output before the crash kept"

px python 'import os, signal
os.kill(os.getpid(), signal.SIGABRT)'
is "$(jb '[.run.status, .run.signal, .run.code] | map(tostring) | join(" ")')" "SG SIGABRT null" \
  "python killing itself with SIGABRT: SG, SIGABRT, code null"

px bash 'echo started; sleep 30' "" '[]' 1000
is "$(jb .run.status)" TO "sleep 30 with run_timeout 1000 ms: run.status TO"
is "$(jb .run.stdout)" started "timeout: output before the kill kept"
wt=$(jb .run.wall_time)
[[ $wt =~ ^[0-9]+$ ]] && [ "$wt" -ge 900 ] && [ "$wt" -lt 10000 ]
ok $? "timeout: stopped near 1000 ms (wall_time $wt)"

px python 'import sys
print("partial")
sys.exit(3)'
is "$(jb .run.status)" RE "exit 3: run.status RE"
is "$(jb .run.code)" 3 "exit 3: run.code 3"
is "$(jb .run.signal)" null "exit 3: run.signal null"

# memory: the kernel's OOM kill is a SIGKILL
px python 'x = bytearray(400 * 1024 * 1024)
print("allocated")' "" '[]' 5000 $((64 * 1024 * 1024))
is "$(jb .run.status)" SG "400 MB under run_memory_limit 64 MiB: run.status SG"
is "$(jb .run.signal)" SIGKILL "...signal SIGKILL"
is "$(jb .run.code)" null "...code null"
unlike "$(jb .run.stdout)" allocated "...and the allocation never completed"

# --- errors ------------------------------------------------------------------------------------
px cobol 'DISPLAY "HI".'
is "$CODE" 400 "unknown language: 400"
like "$(jb .message)" cobol "unknown language: \"message\" names the language ($(jb .message))"
post_json /api/v2/execute '{"language":"python","version":"*","files":[]}'
is "$CODE" 400 "no files: 400"
like "$(jb .message)" files "no files: \"message\" names the field"
post_json /api/v2/execute '{"language":"python","version":"*","files":[{"name":"../../x","content":"1"},{"name":"../../etc/x","content":"1"}]}'
is "$CODE" 400 "a file name climbing out with ..: 400"

done_testing
