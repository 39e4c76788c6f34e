#!/usr/bin/env bash
# A trainer's real traffic against a daemon with default settings (issue 37): a batch of 100
# never-ending programs through /run_code (run_timeout 10, each client waiting as verl's does:
# compile + run timeout + 10 s) all end as time-outs at their limit, none refused; right after,
# and whenever the daemon is idle, the default request is admitted at once; 200 concurrent quick
# requests are all answered; the same X-Request-Id twice runs once and answers twice alike.
source "$(dirname "$0")/api.sh"
plan 16
start_daemon
ok $? "daemon started with default settings"
metric() { curl -s -m 5 "$U/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }

# --- 100 concurrent infinite loops ------------------------------------------------------------
# a spinning program needs a few MB: each asks for 128 MB (a job holds its memory limit against
# the host's budget while it runs, docs/api.md#admission)
loop=$(jq -cn '{code: "while True:\n    pass\n", language: "python", run_timeout: 10, compile_timeout: 10,
  memory_limit_MB: 128, stdin: "", files: {}, fetch_files: []}')
tests/api/burst.py "$U/run_code" 100 "$loop" 30 >"$TMPD/loops.jsonl"
is "$(wc -l <"$TMPD/loops.jsonl")" 100 "100 concurrent never-ending programs: 100 answers"
is "$(jq -s '[.[] | select(.code == 200 and .body.status == "Failed" and .body.run_result.status == "TimeLimitExceeded")] | length' "$TMPD/loops.jsonl")" 100 \
  "every one is a time-out (Failed, TimeLimitExceeded), none refused or lost ($(jq -s -c 'group_by(.code) | map({code: .[0].code, n: length})' "$TMPD/loops.jsonl"))"
is "$(jq -s '[.[] | select(.body.run_result.execution_time >= 9.5)] | length' "$TMPD/loops.jsonl")" 100 \
  "each ran to its 10 s limit (wall-clock, as SandboxFusion's run_timeout)"
is "$(metric 'paddock_refused_total{reason="deadline"}')" 0 "no refusal on a deadline"
diag "slowest answer $(jq -s 'map(.secs) | max' "$TMPD/loops.jsonl") s of the clients' 30 s"

# --- right after: the default request, admitted at once ----------------------------------------
post_json /run_code '{"code":"print(1)","language":"python"}'
is "$CODE $(jb .status) $(jb .run_result.stdout)" "200 Success 1" "right after the burst the default request is answered"
like "$(metric 'paddock_limit_share{template="python"}')" '^0\.[89]|^1' "the burst is learnt as time-outs (limit share $(metric 'paddock_limit_share{template="python"}'))"
q=$(sqlite3 "$DB" "SELECT json_extract(record, '$.queue_ms') FROM attempts ORDER BY id DESC LIMIT 1" 2>&1)
awk -v q="${q:-99999}" 'BEGIN { exit !(q < 2000) }'
ok $? "it did not wait in a queue (queue_ms $q)"
# the estimate behind an idle daemon never refuses: the next quick requests after the burst are
# all admitted as the share of time-outs decays
for i in 1 2 3 4 5; do post_json /run_code '{"code":"print(2)","language":"python"}'; echo "$CODE" >>"$TMPD/after"; done
is "$(sort -u "$TMPD/after" | tr '\n' ' ')" "200 " "five more, one after the other: all answered"

# --- 200 concurrent quick requests ----------------------------------------------------------------
quick=$(jq -cn '{code: "print(6*7)", language: "python", run_timeout: 10, compile_timeout: 10,
  memory_limit_MB: 256, stdin: "", files: {}, fetch_files: []}')
tests/api/burst.py "$U/run_code" 200 "$quick" 30 >"$TMPD/quick.jsonl"
is "$(jq -s '[.[] | select(.code == 200 and .body.status == "Success" and .body.run_result.stdout == "42\n")] | length' "$TMPD/quick.jsonl")" 200 \
  "200 concurrent quick requests: all answered, none refused ($(jq -s -c 'group_by(.code) | map({code: .[0].code, n: length})' "$TMPD/quick.jsonl"))"
diag "200 quick: slowest $(jq -s 'map(.secs) | max' "$TMPD/quick.jsonl") s"
is "$(metric 'paddock_refused_total{reason="deadline"}')" 0 "still no refusal on a deadline"

# --- the same X-Request-Id twice: one run, two identical answers, one record ---------------------
body='{"code":"import random, time\ntime.sleep(1)\nprint(random.random())","language":"python"}'
curl -s -m 30 -o "$TMPD/rid1" -H 'Content-Type: application/json' -H 'X-Request-Id: rid-37-a' -d "$body" "$U/run_code" &
p1=$!
sleep 0.3 # (not a wait for a condition: the second must arrive while the first runs, or after)
curl -s -m 30 -o "$TMPD/rid2" -H 'Content-Type: application/json' -H 'X-Request-Id: rid-37-a' -d "$body" "$U/run_code"
wait $p1
curl -s -m 30 -o "$TMPD/rid3" -H 'Content-Type: application/json' -H 'X-Request-Id: rid-37-a' -d "$body" "$U/run_code"
like "$(jq -r .run_result.stdout "$TMPD/rid1")" '^0\.[0-9]+' "the first answer ran the program"
cmp -s "$TMPD/rid1" "$TMPD/rid2" && cmp -s "$TMPD/rid1" "$TMPD/rid3"
ok $? "sent again while it ran and after it finished: the same answer, byte for byte"
is "$(sqlite3 "$DB" "SELECT count(*) FROM attempts WHERE request_id = 'rid-37-a'" 2>&1)" 1 "one stored record"

# /v1/judge too: the same X-Request-Id twice, one judged attempt (cache off: it would run again)
jbody='{"problem":{"in_outs":{"inputs":["1 2\n"],"outputs":["3\n"]}},"language":"python","cache":false,"code":"a, b = map(int, input().split())\nprint(a + b)"}'
for i in 1 2; do
  curl -s -m 60 -o "$TMPD/jrid$i" -H 'Content-Type: application/json' -H 'X-Request-Id: rid-37-judge' -d "$jbody" "$U/v1/judge"
done
cmp -s "$TMPD/jrid1" "$TMPD/jrid2" && [ "$(jq -r .verdict.output.status "$TMPD/jrid1")" = pass ]
ok $? "/v1/judge: the same X-Request-Id twice, the same verdict ($(jq -r .verdict.output.status "$TMPD/jrid1"))"
is "$(sqlite3 "$DB" "SELECT count(*) FROM attempts WHERE request_id = 'rid-37-judge'" 2>&1)" 1 "  one judged attempt stored"
