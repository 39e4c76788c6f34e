#!/usr/bin/env bash
# The native API: POST /v1/runs with language+code, template+cmd, shell+files+stdin, fetch_files;
# the observation record's fields; failure classes exec_timeout, oom, output_limit; input
# validation (400 naming the field) and the body size limit (413).
source "$(dirname "$0")/api.sh"
plan 83

start_daemon --max-body 64k
ok $? "daemon started with --max-body 64k"
TC=$("$PADDOCK" pool --toolchains --json)
LANGS=$(jq -rs 'map(.language) | join(", ")' <<<"$TC")

# --- language + code, with ids ---------------------------------------------------------------------
post_json /v1/runs '{"language":"python","code":"import sys\nprint(sum(map(int, sys.argv[1:])))","args":["20","22"],
  "task_id":"task-native-1","problem_id":"prob-7","problem_version":"v3"}'
is "$CODE" 200 "language+code: 200"
is "$(jb .run.stdout)" 42 "language+code: stdout exact (args passed)"
is "$(jb '[.status, .failure_class] | join(" ")')" "OK none" "language+code: status OK, failure_class none"
REC=$(body)

# every field of the observation record, with its type
fields='task_id:string attempt:number sandbox_id:string problem_id:string problem_version:string
  template:string node:string queued_at:number started_at:number finished_at:number queue_ms:number
  setup_ms:number exec_ms:number status:string failure_class:string verdict:object run:object'
missing=""
for f in $fields; do
  name=${f%%:*} type=${f##*:}
  [ "$(jq -r --arg n "$name" '.[$n] | type' <<<"$REC")" = "$type" ] || missing="$missing $name"
done
is "$missing" "" "record: every observation field present with its type"
is "$(jq -r '[.task_id, .problem_id, .problem_version, .template, (.attempt | tostring)] | join(" ")' <<<"$REC")" \
  "task-native-1 prob-7 v3 python 1" "record: ids echoed, template python, attempt 1"
is "$(jq -r '.verdict | [has("output"), has("process"), has("resources")] | all' <<<"$REC")" true \
  "record: verdict has output, process and resources"
is "$(jq -r '.verdict | [.process.status, .resources] | join(" ")' <<<"$REC")" "not_audited pass" "record: verdict process not_audited (no audit ran), resources pass"
like "$(jq -r .sandbox_id <<<"$REC")" '^sb-' "record: sandbox_id ($(jq -r .sandbox_id <<<"$REC"))"
is "$(jq -r '.run.sandbox_id == .sandbox_id' <<<"$REC")" true "record: run.sandbox_id is the record's"
is "$(jq -r .node <<<"$REC")" "$(hostname)" "record: node is this host"
now_ms=$(($(date +%s%N) / 1000000))
jq -e --argjson now "$now_ms" '.queued_at <= .started_at and .started_at <= .finished_at and
  .finished_at <= $now and .queued_at > $now - 120000' <<<"$REC" >/dev/null
ok $? "record: queued_at <= started_at <= finished_at, all wall-clock ms of the last 2 minutes"
jq -e '.queue_ms >= 0 and .setup_ms >= 0 and .exec_ms > 0 and
  (.finished_at - .started_at) + 2 >= (.exec_ms + .setup_ms | floor)' <<<"$REC" >/dev/null
ok $? "record: queue_ms, setup_ms, exec_ms non-negative and setup+exec fit in started..finished"
missing=""
for f in status exit_code signal wall_ms cpu_ms memory_peak_bytes stdout stderr stdout_bytes stdout_truncated; do
  [ "$(jq -r --arg n "$f" '.run | has($n)' <<<"$REC")" = true ] || missing="$missing $f"
done
is "$missing" "" "record: run has status, exit_code, signal, wall_ms, cpu_ms, memory_peak_bytes, output"
is "$(jq -r '.compile' <<<"$REC")" null "record: compile null for python"

# the record is in the store too
stored=$(sqlite3 "$DB" "SELECT problem_id || ' ' || failure_class FROM attempts WHERE task_id = 'task-native-1'" 2>&1)
is "$stored" "prob-7 none" "record: stored in --db before the answer"

# --- template + cmd ---------------------------------------------------------------------------------
post_json /v1/runs '{"template":"python","cmd":["python3","-c","import os; print(os.getcwd(), os.environ.get(\"PYTHONUNBUFFERED\"))"]}'
is "$CODE" 200 "template+cmd: 200"
is "$(jb .run.stdout)" "/work 1" "template+cmd: runs in the template (cwd /work, its env)"
is "$(jb .template)" python "template+cmd: template recorded"

post_json /v1/runs '{"template":"c","files":{"p.c":"#include <stdio.h>\nint main(){puts(\"compiled\");}"},"compile":["gcc","-o","p","p.c"],"cmd":["./p"]}'
is "$(jb '[.compile.status, .run.status, .run.stdout] | join(" ")')" "OK OK compiled" "template+compile+cmd: compile then run"

# --- shell + files + stdin ------------------------------------------------------------------------
post_json /v1/runs '{"shell":"cat data/a.txt; tr a-z A-Z; cat /work/abs.txt","files":{"data/a.txt":"file-a\n","/work/abs.txt":"absolute\n"},"stdin":"from stdin\n"}'
is "$CODE" 200 "shell+files+stdin: 200"
is "$(jb .run.stdout)" "$(printf 'file-a\nFROM STDIN\nabsolute')" "shell+files+stdin: relative and absolute files, stdin"
is "$(jb .template)" bash "shell without a template: the bash template"

post_json /v1/runs "{\"shell\":\"cat blob | od -An -tx1 | tr -d ' \\\\n'\",\"files_base64\":{\"blob\":\"$(printf '\000\001\377' | base64)\"}}"
is "$(jb .run.stdout)" "0001ff" "files_base64: binary file placed exactly"

# a file the sandbox cannot hold (the file APIs never reach /proc: docs/security.md): the client's
# error, said once, no retry
post_json /v1/runs '{"shell":"echo never","files":{"/proc/self/x":"y"}}'
is "$(jb '[.status, .failure_class, .attempt] | map(tostring) | join(" ")')" "XX none 1" \
  "an unwritable file: status XX, failure class none, one attempt"
is "$(jb .error)" "file /proc/self/x: Permission denied" "... and the error names the path once"
is "$(jb .run)" null "... and nothing ran"

# --- fetch_files ----------------------------------------------------------------------------------
post_json /v1/runs '{"shell":"echo result > out.txt; mkdir -p d; printf \"\\000\\001\\002\" > d/b.bin","fetch_files":["out.txt","/work/d/b.bin","nothere"]}'
is "$(jb '.files["out.txt"]' | base64 -d)" result "fetch_files: a relative path, base64"
is "$(jb '.files["/work/d/b.bin"]' | base64 -d | od -An -tx1 | tr -d ' \n')" 000102 "fetch_files: an absolute path, binary exact"
is "$(jb '.files | has("nothere")')" true "fetch_files: a missing file is named"
is "$(jb '.files["nothere"]')" null "fetch_files: ...with null"
# what the sandbox wrote decides the size: 16 MiB a file, 64 MiB in all, past either null
post_json /v1/runs '{"shell":"for i in 1 2 3 4 5; do head -c 15728640 /dev/zero > f$i; done; head -c 17825792 /dev/zero > big","fetch_files":["big","f1","f2","f3","f4","f5"]}'
got=$(jq -r '.files | to_entries | map(if .value == null then "null" else (.value | length | tostring) end) | join(" ")' <"$BODY")
is "$got" "null 20971520 20971520 20971520 20971520 null" "fetch_files: 17 MiB is over a file's 16 MiB, and the fifth 15 MiB file over 64 MiB in all: null"

# --- failure classes --------------------------------------------------------------------------
post_json /v1/runs '{"cmd":["sleep","5"],"limits":{"wall_time":1}}'
is "$(jb '[.failure_class, .status, .run.status] | join(" ")')" "exec_timeout TO TO" "sleep 5, wall_time 1: exec_timeout, TO"
is "$(jb .verdict.resources)" fail "exec_timeout: verdict.resources fail"
w=$(jb .run.wall_ms)
[[ $w =~ ^[0-9]+$ ]] && [ "$w" -ge 900 ] && [ "$w" -lt 4000 ]
ok $? "exec_timeout: killed near 1 s (wall_ms $w)"

# 1 MB at a time, each written: the cgroup's limit is reached before the memory fast path's
# data-segment limit (64M + 32M), so the kernel's OOM kill decides (memory.t covers the fast path)
post_json /v1/runs '{"language":"python","code":"x = [b\"x\" * (1 << 20) for _ in range(300)]\nprint(\"allocated\")","limits":{"memory":"64M"}}'
is "$(jb '[.failure_class, .status] | join(" ")')" "oom ML" "300 MB hog under 64M: failure_class oom, status ML"
is "$(jb .run.oom_killed)" true "oom: run.oom_killed true"
peak=$(jb .run.memory_peak_bytes)
[[ $peak =~ ^[0-9]+$ ]] && [ "$peak" -le $((64 * 1024 * 1024)) ] && [ "$peak" -gt $((32 * 1024 * 1024)) ]
ok $? "oom: memory_peak_bytes at the 64M limit ($peak)"
is "$(jb .verdict.resources)" fail "oom: verdict.resources fail"

post_json /v1/runs '{"cmd":["yes"],"limits":{"wall_time":20}}'
is "$(jb '[.failure_class, .status] | join(" ")')" "output_limit OL" "yes: output_limit, OL"
is "$(jb .run.stdout_truncated)" true "output_limit: stdout_truncated"
sz=$(jb '.run.stdout | length')
[ "$sz" -le $((2 * 1024 * 1024)) ]
ok $? "output_limit: the answer keeps a bounded part of the output ($sz characters)"

post_json /v1/runs '{"shell":"exit 7"}'
is "$(jb '[.failure_class, .status, (.run.exit_code | tostring)] | join(" ")')" "none RE 7" "exit 7: failure_class none (the program's own), RE, exit_code 7"

# an unknown template is the client's mistake, as an unknown language is: 400 naming the field and
# saying what there is, not a 200 with the XX record of a run that never was
post_json /v1/runs '{"template":"no-such-template","cmd":["true"]}'
is "$CODE" 400 "an unknown template: 400"
is "$(jb .error)" "template: 'no-such-template' is not a template of this daemon (bash, python, c, cpp, node)" \
  "an unknown template: the error names the field and lists the templates"
post_json /v1/runs '{"language":"cobol","code":"x"}'
is "$CODE/$(jb .error)" "400/language: 'cobol' is not a language paddock knows ($LANGS)" \
  "an unknown language: 400 naming the field and listing the languages"
# a language without code would run its program on a source nobody wrote (python3 main.py: exit 2)
post_json /v1/runs '{"language":"python"}'
is "$CODE/$(jb .error)" "400/code: required with language" "a language without code: 400 naming the field"
# a language whose program the host lacks (an optional toolchain, or a name no host has): a
# dependency_missing record naming the package, in the bash template its language runs in
if [ "$(jq -r 'select(.language == "rust") | .available' <<<"$TC")" = false ]; then
  post_json /v1/runs '{"language":"rust","code":"fn main() {}"}'
  is "$(jb '[.status, .failure_class, .template, .language] | join(" ")')" "XX dependency_missing bash rust" \
    "rust without rustc: XX dependency_missing, in the bash template, language rust"
  is "$(jb .error)" "language rust needs rustc, which the image lacks (Debian package rustc, which make deps does not install)" \
    "rust without rustc: the error names the package"
else
  skip "rustc is installed: no dependency_missing to see"
  skip "rustc is installed: no dependency_missing to see"
fi

# times in the record print as the decimals they are (whole microseconds: at most 3 decimals of a
# ms), not as 17 digits of the nearest double (0.23899999999999999)
post_json /v1/runs '{"shell":"true"}'
long=$(grep -oE '"[a-z_]+_ms":[0-9]+\.[0-9]{4,}' "$BODY" | head -3 | tr '\n' ' ')
is "$long" "" "record: no time with more than 3 decimals"

# --- malformed input: 400 naming the field ---------------------------------------------------------
bad() {  # bad BODY FIELD-REGEX DESCRIPTION
  post_json /v1/runs "$1"
  is "$CODE" 400 "$3: 400"
  like "$(jb '.error // empty')" "$2" "$3: the error names the field"
}
bad 'this is { not json' 'not JSON' "body not JSON"
bad '{"cmd":"ls -l"}' '^cmd' '"cmd" a string, not a list'
bad '{"cmd":["ls", 3]}' '^cmd\[1\]' '"cmd" with a number in it'
bad '{"cmd":["true"],"frobnicate":1}' '^frobnicate' "an unknown field"
bad '{"cmd":["true"],"limits":{"memory":"5X"}}' '^limits\.memory' 'limits.memory "5X"'
bad '{"cmd":["true"],"limits":{"wal_time":1}}' '^limits\.wal_time' "an unknown field in limits"
bad '{"cmd":["true"],"priority":"urgent"}' '^priority' 'priority "urgent"'
bad '{"cmd":["true"],"deadline_ms":-5}' '^deadline_ms' "a negative deadline_ms"
bad '[1,2,3]' 'request|object' "a JSON array instead of an object"

# --- body size limit ---------------------------------------------------------------------------
python3 -c 'import json; print(json.dumps({"shell": "true", "stdin": "x" * 100000}))' >"$TMPD/big.json"
req POST /v1/runs -H 'Content-Type: application/json' --data-binary @"$TMPD/big.json"
is "$CODE" 413 "a 100 kB body over --max-body 64k: 413"
like "$(jb .error)" '65536' "413: the error says the limit"
python3 -c 'import json; print(json.dumps({"shell": "wc -c", "stdin": "x" * 60000}))' >"$TMPD/fits.json"
req POST /v1/runs -H 'Content-Type: application/json' --data-binary @"$TMPD/fits.json"
is "$(jb .run.stdout)" 60000 "a 60 kB body under the limit is taken whole"

# output past what the record keeps (1 MiB a stream): kept, and served by GET /v1/runs/{task_id}/output
post_json /v1/runs '{"task_id":"big-out","shell":"seq 1 600000; seq 1 300000 >&2","limits":{"output":"16M"}}'
is "$CODE/$(jb '[.status, (.run.stdout_truncated|tostring), (.output_kept|tostring)] | join(" ")')" "200/OK true true" \
  "limits.output accepted; 3.9 MB of stdout: the record cuts it, output_kept true, and (nothing lost) status OK"
req GET '/v1/runs/big-out/output?stream=stdout'
is "$CODE/$(sha256sum <"$BODY" | cut -c1-64)" "200/$(seq 1 600000 | sha256sum | cut -c1-64)" \
  "GET /v1/runs/{task_id}/output?stream=stdout: the whole stdout, byte for byte"
req GET /v1/runs/big-out/output
is "$CODE/$(jb '[.whole, .attempt, .stdout_bytes, (.stdout | length), (.stderr | length)] | map(tostring) | join(" ")')" \
  "200/true 1 $(seq 1 600000 | wc -c) $(seq 1 600000 | wc -c) $(seq 1 300000 | wc -c)" \
  "without ?stream=: JSON as a cluster answers it, both streams whole"
req GET '/v1/runs/big-out/output?stream=stderr&attempt=1'
is "$CODE/$(wc -c <"$BODY")" "200/$(seq 1 300000 | wc -c)" "?stream=stderr&attempt=1: the whole stderr"
post_json /v1/runs '{"task_id":"big-kill","shell":"yes 0123456789","limits":{"output":"2M"}}'
is "$(jb '[.status, (.output_kept|tostring)] | join(" ")')" "OL true" "limits.output 2M: stopped as OL past it, what it wrote kept"
req GET '/v1/runs/big-kill/output?stream=stdout'
size=$(wc -c <"$BODY")
[ "$CODE" = 200 ] && [ "$size" -ge $((1 << 20)) ] && [ "$size" -le $((3 << 20)) ]
ok $? "... and served: $size bytes, about the limit"
nfiles=$(ls "$DB.output" | wc -l)
post_json /v1/runs '{"task_id":"small-out","cmd":["echo","hi"]}'
is "$(jb .output_kept)/$(ls "$DB.output" | wc -l)" "false/$nfiles" "a run whose record holds all its output: output_kept false, no file kept"
req GET '/v1/runs/small-out/output?stream=stdout'
is "$CODE/$(jb '.error | test("only a run whose output was cut keeps it")')" "404/true" "a run whose record kept all of it: ?stream= is 404 saying why"
req GET /v1/runs/small-out/output
is "$CODE/$(jb '"\(.whole) \(.stdout)"')" "200/false hi" "... and the JSON form is the record's own text, whole: false"
post_json /v1/runs '{"cmd":["true"],"limits":{"output":"1G"}}'
like "$CODE/$(jb .error)" "^400/limits.output: " "limits.output past 256M: 400 naming the field"
req GET '/v1/runs/big-out/output?stream=both'
is "$CODE" 400 "?stream= other than stdout or stderr: 400"

req GET /healthz
is "$CODE" 200 "still healthy"

done_testing
