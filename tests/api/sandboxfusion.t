#!/usr/bin/env bash
# SandboxFusion compatibility: POST /run_code exactly as verl's SandboxFusion client sends it
# ({"code","language","compile_timeout","run_timeout","memory_limit_MB","stdin","files",
# "fetch_files"}), and the fields verl reads back (status, run_result.{status,return_code,stdout},
# compile_result, files, executor_pod_name).
source "$(dirname "$0")/api.sh"
plan 50

start_daemon
ok $? "daemon started"

# rc CODE LANGUAGE [STDIN] [RUN_TIMEOUT] [MEMORY_MB] [FILES_JSON] [FETCH_JSON]: verl's request shape
rc() {
  local code=$1 lang=$2 stdin=${3:-} rt=${4:-10} mem=${5:--1} files=${6:-'{}'} fetch=${7:-'[]'}
  local j
  j=$(jq -cn --arg code "$code" --arg lang "$lang" --arg stdin "$stdin" --argjson rt "$rt" \
    --argjson mem "$mem" --argjson files "$files" --argjson fetch "$fetch" \
    '{code: $code, language: $lang, compile_timeout: 10, run_timeout: $rt, memory_limit_MB: $mem,
      stdin: $stdin, files: $files, fetch_files: $fetch}')
  post_json /run_code "$j"
}
# summary of a /run_code answer: status return_code run_status stdout
summ() { jb '[.status, (.run_result.status // "null"), (.run_result.return_code // "null" | tostring)] | join(" ")'; }

# --- a correct program in each language: Success, Finished, return code 0, exact stdout --------
rc 'import sys
n = int(input())
print(sum(range(n + 1)))
print("é ✓")' python "100"
is "$CODE" 200 "python: HTTP 200"
is "$(summ)" "Success Finished 0" "python: Success, Finished, return_code 0"
is "$(jb .run_result.stdout)" "$(printf '5050\né ✓')" "python: stdout exact (stdin read, UTF-8 kept)"
is "$(jb .compile_result)" null "python: no compile_result"
like "$(jb .executor_pod_name)" '.+' "executor_pod_name present ($(jb .executor_pod_name))"

rc '#include <iostream>
#include <vector>
int main() { long n; std::cin >> n; std::vector<long> v(n); long s = 0;
  for (long i = 0; i < n; i++) { v[i] = i * i; s += v[i]; } std::cout << s << "\n"; }' cpp "10"
is "$(summ)" "Success Finished 0" "cpp: Success, Finished, return_code 0"
is "$(jb .run_result.stdout)" 285 "cpp: stdout exact"
is "$(jb '[.compile_result.status, .compile_result.return_code] | join(" ")')" "Finished 0" \
  "cpp: compile_result Finished, return_code 0"

rc '#include <stdio.h>
#include <math.h>
int main(void) { int a, b; if (scanf("%d %d", &a, &b) != 2) return 3; printf("%d %.1f\n", a * b, sqrt(a * b)); return 0; }' c "4 4"
is "$(summ)" "Success Finished 0" "c: Success, Finished, return_code 0"
is "$(jb .run_result.stdout)" "16 4.0" "c: stdout exact (libm linked)"

rc 'read x; echo "got:$x"; echo "to stderr" >&2' bash "line"
is "$(summ)" "Success Finished 0" "bash: Success, Finished, return_code 0"
is "$(jb .run_result.stdout)" "got:line" "bash: stdout exact"
is "$(jb .run_result.stderr)" "to stderr" "bash: stderr kept apart"

rc 'let d = ""; process.stdin.on("data", c => d += c); process.stdin.on("end", () => console.log(d.trim().split(" ").map(Number).reduce((a, b) => a + b, 0)));' nodejs "1 2 3 4"
is "$(summ)" "Success Finished 0" "nodejs: Success, Finished, return_code 0"
is "$(jb .run_result.stdout)" 10 "nodejs: stdout exact"

# --- wrong answer: exit 1 -------------------------------------------------------------------------
rc 'import sys
print("wrong")
sys.exit(1)' python
is "$CODE" 200 "exit 1: HTTP 200"
is "$(summ)" "Failed Finished 1" "exit 1 (python): Failed, run_result Finished, return_code 1"
is "$(jb .run_result.stdout)" wrong "exit 1: stdout still returned"
rc 'int main(void) { return 1; }' c
is "$(summ)" "Failed Finished 1" "exit 1 (c): Failed, return_code 1"
rc 'echo no; exit 1' bash
is "$(summ)" "Failed Finished 1" "exit 1 (bash): Failed, return_code 1"

# --- compile error ------------------------------------------------------------------------------
rc 'int main() { return undefined_name }' cpp
is "$CODE" 200 "compile error: HTTP 200"
is "$(jb .status)" Failed "compile error: Failed"
rcc=$(jb .compile_result.return_code)
[[ $rcc =~ ^[0-9]+$ ]] && [ "$rcc" != 0 ]
ok $? "compile error: compile_result.return_code != 0 (got $rcc)"
like "$(jb .compile_result.stderr)" 'undefined_name' "compile error: the compiler's message in compile_result.stderr"
is "$(jb .run_result)" null "compile error: run_result null (never ran)"

# --- time limit ---------------------------------------------------------------------------------
rc 'while True:
    pass' python "" 1
is "$CODE" 200 "infinite loop: HTTP 200"
is "$(jb .run_result.status)" TimeLimitExceeded "infinite loop, run_timeout 1: run_result.status TimeLimitExceeded"
is "$(jb .status)" Failed "infinite loop: status Failed"
t=$(jb .run_result.execution_time)
awk -v t="$t" 'BEGIN { exit !(t >= 0.9 && t < 8) }'
ok $? "infinite loop: stopped near 1 s (execution_time $t)"
rc 'int main(void) { for (;;); }' c "" 1
is "$(jb .run_result.status)" TimeLimitExceeded "c infinite loop: TimeLimitExceeded"

# --- memory limit ---------------------------------------------------------------------------------
rc 'x = bytearray(500 * 1024 * 1024)
x[::4096] = b"\x01" * len(x[::4096])
print("allocated", len(x))' python "" 10 64
is "$CODE" 200 "500 MB under memory_limit_MB 64: HTTP 200"
is "$(jb .status)" Failed "500 MB under memory_limit_MB 64: Failed"
unlike "$(jb .run_result.stdout)" allocated "500 MB under memory_limit_MB 64: the allocation never completed"
is "$(jb .failure_class)" oom "500 MB under memory_limit_MB 64: paddock's failure_class oom"
rc 'x = bytearray(20 * 1024 * 1024)
print("ok", len(x))' python "" 10 128
is "$(summ)" "Success Finished 0" "20 MB under memory_limit_MB 128: Success (the limit is not too tight)"

# --- files in (base64) and fetch_files out (base64) -----------------------------------------------
IN1=$(printf 'alpha\nbeta\n' | base64 -w0)
IN2=$(printf '\x00\x01\x02\xff\xfe binary' | base64 -w0)
rc 'import os
data = open("data/in.txt").read().split()
raw = open("blob.bin", "rb").read()
open("out.txt", "w").write("|".join(reversed(data)) + "\n")
os.makedirs("sub/dir", exist_ok=True)
open("sub/dir/out.bin", "wb").write(raw[::-1])
print(len(raw))' python "" 10 -1 "{\"data/in.txt\":\"$IN1\",\"blob.bin\":\"$IN2\"}" '["out.txt","sub/dir/out.bin","missing.txt"]'
is "$(summ)" "Success Finished 0" "files: the program read the files it was given"
is "$(jb .run_result.stdout)" 12 "files: binary file arrived intact (12 bytes)"
is "$(jb '.files["out.txt"]' | base64 -d 2>/dev/null)" "beta|alpha" "fetch_files: out.txt returned, base64"
got=$(jb '.files["sub/dir/out.bin"]' | base64 -d 2>/dev/null | od -An -tx1 | tr -d ' \n')
want=$(printf '\x00\x01\x02\xff\xfe binary' | python3 -c 'import sys; sys.stdout.buffer.write(sys.stdin.buffer.read()[::-1])' | od -An -tx1 | tr -d ' \n')
is "$got" "$want" "fetch_files: a binary file in a subdirectory round-trips byte for byte"
missing=$(jb '.files | has("missing.txt")')
is "$missing" false "fetch_files: a file that does not exist is left out of files (SandboxFusion's Dict[str, str])"
is "$(jb '.files["missing.txt"]')" null "fetch_files: ...with null, not an empty string"

# --- unknown language ----------------------------------------------------------------------------
rc 'print 1' brainfudge
like "$CODE" '^(200|400)$' "unknown language: HTTP 200 or 400 (got $CODE), not a crash"
msg=$(jb '.message // .error // empty')
like "$msg" 'brainfudge' "unknown language: a message naming the language ($msg)"
if [ "$CODE" = 200 ]; then
  is "$(jb .status)" SandboxError "unknown language answered 200: status SandboxError"
else
  ok 0 "unknown language answered 400: a client error, no SandboxError body needed"
fi

# --- malformed requests ----------------------------------------------------------------------------
post_json /run_code '{"language":"python"}'
is "$CODE" 400 "no code: 400"
like "$(jb .error)" '^code' "no code: the error names the field"
post_json /run_code '{"code":"print(1)","language":"python","run_timeout":"ten"}'
is "$CODE" 400 "run_timeout not a number: 400"
like "$(jb .error)" 'run_timeout' "run_timeout not a number: the error names the field"

# the daemon is still fine
req GET /v1/ping
is "$(jb .)" pong "still answering after all that"

done_testing
