#!/usr/bin/env bash
# The peers' exact behaviour, each as the response shape their own clients and tests expect.
# SandboxFusion /run_code: a fetch_files entry that does not exist is left out of "files" (never
# null); a program that prints 2 MiB and exits 0 is Success with its whole output; SIGKILL is
# return_code -9; java runs with -ea and junit/guava on the class path, node resolves lodash, perl
# has Test::Deep and Data::Compare (where Debian packages them: scripts/install-deps.sh).
# Piston /api/v2/execute: stdin gets a final newline; hex file encoding; runaway output ends OL
# "stdout length exceeded"; C compiles every source file given; java's public class may have any
# name; Pascal compiles (and shows its errors); tests/multi_request.py's 20 parallel requests with
# version "*" all return their output.
source "$(dirname "$0")/api.sh"
plan 28

start_daemon
ok $? "daemon started"

# --- SandboxFusion ------------------------------------------------------------------------------
post_json /run_code '{"language":"python","code":"open(\"a.txt\",\"w\").write(\"hi\")","fetch_files":["a.txt","missing.txt"]}'
is "$(jq -c .files "$BODY")" '{"a.txt":"aGk="}' "fetch_files: the missing file is left out, not null"
post_json /run_code '{"language":"python","code":"import sys\nsys.stdout.write(\"x\" * (2 * 1024 * 1024))"}'
is "$(jb '[.status, .run_result.status, .run_result.return_code, (.run_result.stdout | length)] | @tsv')" \
  "$(printf 'Success\tFinished\t0\t2097152')" "2 MiB printed, exit 0: Success with the whole output"
post_json /run_code '{"language":"python","code":"import sys\nsys.stdout.write(\"x\" * (2 * 1024 * 1024))\nsys.exit(3)"}'
is "$(jb '[.status, .run_result.return_code, (.run_result.stdout | length)] | @tsv')" "$(printf 'Failed\t3\t2097152')" \
  "2 MiB printed, exit 3: Failed, return_code 3, the whole output"
post_json /run_code '{"language":"python","code":"import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"}'
is "$(jb '[.status, .run_result.status, .run_result.return_code] | @tsv')" "$(printf 'Failed\tFinished\t-9')" \
  "killed by SIGKILL: return_code -9 (the negative signal number)"
post_json /run_code '{"language":"python","code":"import time\ntime.sleep(5)","run_timeout":0.5}'
is "$(jb '[.run_result.status, (.run_result.return_code | tostring)] | @tsv')" "$(printf 'TimeLimitExceeded\tnull')" \
  "a time-out: TimeLimitExceeded, return_code null"
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
post_json /run_code '{"language":"java","code":"public class Main { public static void main(String[] a) { assert false : \"assertions on\"; } }"}'
like "$(jb .run_result.stderr)" "AssertionError: assertions on" "java runs with -ea"
if have_pkg junit4 && have_pkg libguava-java; then
  post_json /run_code '{"language":"java","code":"import org.junit.Assert;\nimport com.google.common.collect.ImmutableList;\npublic class Main { public static void main(String[] a) { Assert.assertEquals(2, 2); System.out.println(ImmutableList.of(1, 2)); } }"}'
  is "$(jb '[.status, (.run_result.stdout | rtrimstr("\n"))] | @tsv')" "$(printf 'Success\t[1, 2]')" "java: junit and guava on the class path"
else
  skip "junit4 or libguava-java not installed (make deps)"
fi
if have_pkg node-lodash; then
  post_json /run_code '{"language":"nodejs","code":"const _ = require(\"lodash\");\nconsole.log(JSON.stringify(_.chunk([1, 2, 3], 2)))"}'
  is "$(jb '[.status, (.run_result.stdout | rtrimstr("\n"))] | @tsv')" "$(printf 'Success\t[[1,2],[3]]')" "node: require(\"lodash\") resolves"
else
  skip "node-lodash not installed (make deps)"
fi
if have_pkg libtest-deep-perl && have_pkg libdata-compare-perl; then
  post_json /run_code '{"language":"perl","code":"use Test::Deep qw(eq_deeply);\nuse Data::Compare;\nprint eq_deeply([1], [1]) ? 1 : 0, Compare({a => 1}, {a => 1}), \"\\n\";"}'
  is "$(jb '[.status, (.run_result.stdout | rtrimstr("\n"))] | @tsv')" "$(printf 'Success\t11')" "perl: Test::Deep and Data::Compare"
else
  skip "libtest-deep-perl or libdata-compare-perl not installed (make deps)"
fi

# --- Piston ------------------------------------------------------------------------------------
post_json /api/v2/execute '{"language":"python","version":"*","stdin":"abc","files":[{"content":"import sys\nprint(repr(sys.stdin.read()))"}]}'
is "$(jb .run.stdout)" "'abc\\n'" "stdin without a final newline gets one"
post_json /api/v2/execute '{"language":"python","version":"*","stdin":"abc\n","files":[{"content":"import sys\nprint(repr(sys.stdin.read()))"}]}'
is "$(jb .run.stdout)" "'abc\\n'" "stdin with one keeps it (no second)"
hex=$(printf 'print(6 * 7)\n' | od -An -tx1 | tr -d ' \n')
post_json /api/v2/execute "{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"$hex\",\"encoding\":\"hex\"}]}"
is "$CODE $(jb .run.stdout)" "200 42" "hex encoding"
post_json /api/v2/execute '{"language":"python","version":"*","files":[{"content":"zz","encoding":"hex"}]}'
is "$CODE" 400 "bad hex: 400"
post_json /api/v2/execute '{"language":"python","version":"*","files":[{"content":"while True:\n    print(\"Piston is secure\")"}]}'
is "$(jb '[.run.status, .run.message, (.run.code | tostring), .run.signal] | @tsv')" \
  "$(printf 'OL\tstdout length exceeded\tnull\tSIGKILL')" "runaway output: OL, stdout length exceeded (not TO)"
post_json /api/v2/execute '{"language":"c","version":"*","files":[{"name":"main.c","content":"#include <stdio.h>\nint f(void);\nint main(void) { printf(\"%d\\n\", f()); return 0; }"},{"name":"f.c","content":"int f(void) { return 42; }"}]}'
is "$(jb '[.compile.code, (.run.stdout | rtrimstr("\n"))] | @tsv')" "$(printf '0\t42')" "C: every source file given is compiled"
post_json /api/v2/execute '{"language":"c++","version":"*","files":[{"name":"main.cpp","content":"#include <iostream>\nint f();\nint main() { std::cout << f() << std::endl; }"},{"name":"f.cpp","content":"int f() { return 7; }"}]}'
is "$(jb '[.compile.code, (.run.stdout | rtrimstr("\n"))] | @tsv')" "$(printf '0\t7')" "C++: every source file given is compiled"
post_json /api/v2/execute '{"language":"java","version":"*","files":[{"content":"public class Greeter { public static void main(String[] a) { System.out.println(\"hello from Greeter\"); } }"}]}'
is "$(jb '[.run.code, (.run.stdout | rtrimstr("\n"))] | @tsv')" "$(printf '0\thello from Greeter')" "java: a public class of any name runs"
post_json /api/v2/execute "{\"language\":\"pascal\",\"version\":\"*\",\"files\":[{\"content\":\"program Hello;\\nbegin\\n  writeln('Hi');\\nend.\\n\"}]}"
is "$(jb '[.compile.code, .run.code, (.run.stdout | rtrimstr("\n"))] | @tsv')" "$(printf '0\t0\tHi')" "Pascal compiles and runs"
post_json /api/v2/execute '{"language":"pascal","version":"*","files":[{"content":"program Hello;\nbegin\n  writeln(x);\nend.\n"}]}'
is "$(jb .compile.code)" 1 "Pascal: a compile error fails the compile"
like "$(jb .compile.output)" 'Identifier not found' "  and shows the compiler's message"

cat >"$TMPD/multi.py" <<'EOF2'
# Piston's tests/multi_request.py, with version "*": 20 parallel requests, each must return its output
import json, sys, threading, urllib.request
U = sys.argv[1]
res = [None] * 20
def go(i):
    body = json.dumps({"language": "python", "version": "*",
                       "files": [{"name": "test.py", "content": 'print("Request #%d")' % i}],
                       "stdin": "", "args": [], "compile_timeout": 10000, "run_timeout": 3000}).encode()
    r = urllib.request.Request(U + "/api/v2/execute", body, {"Content-Type": "application/json"})
    try:
        res[i] = json.load(urllib.request.urlopen(r, timeout=120))
    except Exception as e:
        res[i] = {"error": repr(e)}
ts = [threading.Thread(target=go, args=(i,)) for i in range(20)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(sum(1 for i, r in enumerate(res)
          if r.get("run", {}).get("code") == 0 and r["run"]["stdout"] == "Request #%d\n" % i))
EOF2
is "$(python3 "$TMPD/multi.py" "$U")" 20 "multi_request (version *): 20 of 20 return their output"
post_json /api/v2/execute '{"language":"python","version":"*","files":[{"content":"print(1)"}]}'
is "$(jb .run.stdout)" 1 "(the daemon still answers)"

# --- what SandboxFusion's tests expect of the host, as paddock pool --toolchains says -------------
TC=$("$PADDOCK" pool --toolchains --json)
tc_rc=$?
tc() { jq -r --arg l "$1" 'select(.language == $l) | [.template, .available, .missing] | @tsv' <<<"$TC"; }
is "$(tc java)" "$(printf 'bash\ttrue\t')" "--toolchains: java and its jars (junit4, hamcrest, commons-lang3, guava) are there"
is "$(tc node)" "$(printf 'node\ttrue\t')" "--toolchains: node and lodash"
is "$(tc perl)" "$(printf 'bash\ttrue\t')" "--toolchains: perl, Test::Deep and Data::Compare"
# make deps installs every toolchain but the optional ones: after it the command exits 0, and an
# optional one missing is listed with the package that provides it
is "$tc_rc" "$(jq -s 'any(.[]; .available == false and .optional == false) | if . then 1 else 0 end' <<<"$TC")" \
  "--toolchains exits 1 exactly when a toolchain make deps installs is missing"
is "$(jq -r 'select(.optional) | "\(.language)=\(.package)"' <<<"$TC" | tr '\n' ' ')" \
  "go=golang-go rust=rustc ruby=ruby lua=lua5.4 php=php-cli " "--toolchains: the optional ones, each with its package"

done_testing
