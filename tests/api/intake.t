#!/usr/bin/env bash
# One intake for every way in (issue 38): a request is refused for the same reason, with the same
# status and words, whether it reaches a single daemon, a cluster node that hands it on (a real
# nats-server; the node that takes it off the broker checks it again, by its own rules), or
# paddock run. The drifts this covers: the template's allowed networks (--run-code-networks), the
# risk list's controls (review), the default deadline (--deadline-margin, counted from the
# request's arrival, its time in the broker included), SandboxFusion's whole output (also for
# paddock run's "schema": "run_code" lines), Piston's memory rule (the OOM kill's SIGKILL), and
# one text for a full queue across runs, /run_code, the judge and its batch.
source "$(dirname "$0")/api.sh"
source "$(dirname "$0")/nats.sh"

nats_or_skip
plan 26

# outcome: "STATUS|error text" of the last answer
outcome() { echo "$CODE|$(jb .error)"; }
at() { local u=$1; shift; U=$u "$@"; }
risky() {  # risky DB PROBLEM: the row a reviewer's confirmed hack leaves (risk.t covers that way)
  python3 - "$1" "$2" <<'EOF_PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
db.execute("INSERT OR REPLACE INTO risk (problem_id, since, confirmed, last_review) VALUES (?, 0, 1, 0)", (sys.argv[2],))
db.commit()
EOF_PY
}

# ---- a single daemon: what every other way in must answer alike ----------------------------------
start_daemon --workers 1 --deadline-margin 1
ok $? "a single daemon (no --run-code-networks, one worker, a 1 s deadline margin)"
L=$U
risky "$DB" rk

NET_PY='{"language":"python","code":"print(1)","network":"host"}'
NET_SH='{"language":"bash","code":"echo hi","network":"host"}'
RISK_PY='{"language":"python","code":"print(1)","problem_id":"rk","network":"host"}'
RISK_SH='{"shell":"echo hi","problem_id":"rk","network":"host"}'
AUDITED_PY='{"language":"python","code":"print(1)","problem_id":"rk"}'
WHOLE_PY='{"language":"python","code":"print(\"a\" * 2097151)"}'
HOG='{"language":"python","version":"*","files":[{"content":"x = bytearray(400 * 1024 * 1024)\nprint(\"allocated\")"}],"run_timeout":5000,"run_memory_limit":67108864}'
SLOW_PY='{"language":"python","code":"import time; time.sleep(4)","limits":{"wall_time":10},"deadline_ms":60000}'
LATE_PY='{"language":"python","code":"print(\"late\")","limits":{"wall_time":1}}'

post_json /run_code "$NET_PY"
NET_LOCAL=$(outcome)
like "$NET_LOCAL" "^400\|network: 'host' is not one this daemon allows" "a network the daemon does not allow: 400 ($NET_LOCAL)"
post_json /v1/runs "$RISK_PY"
RISK_LOCAL=$(outcome)
like "$RISK_LOCAL" "^403\|network: problem_id rk is on the risk list" "a risky problem's run asking for egress: 403 ($RISK_LOCAL)"
post_json /v1/runs "$AUDITED_PY"
is "$CODE|$(jb .risk_list)|$(jb .verdict.process.status)" "200|true|pass" "a risky problem's run without egress: audited in full (risk_list true)"
post_json /run_code "$WHOLE_PY"
is "$CODE|$(jb '.run_result.stdout | length')" "200|2097152" "/run_code keeps the whole output (2 MiB)"
post_json /api/v2/execute "$HOG"
is "$CODE|$(jb .run.status)|$(jb .run.signal)" "200|SG|SIGKILL" "Piston: 400 MB under 64 MiB is the OOM kill's SIGKILL"

# the default deadline: wall 1 s + margin 1 s, behind a 4 s run on the only worker
late_outcome() {  # deadline (refused for it, or expired in the queue) or what else happened
  if { [ "$CODE" = 503 ] && [[ "$(jb .error)" == *"before its deadline"* ]]; } || [ "$(jb .failure_class)" = queue_timeout ]; then
    echo deadline
  else
    echo "$CODE $(jb .failure_class)"
  fi
}
bg_post() { curl -s -o /dev/null -m 60 -H 'Content-Type: application/json' --data-binary "$2" "$U$1"; }
bg_post /v1/runs "$SLOW_PY" &
SLOW=$!
wait_for 20 bash -c "curl -s $L/metrics | grep -q '^paddock_workers_busy 1'"
post_json /v1/runs "$LATE_PY"
is "$(late_outcome)" deadline "no deadline_ms: the default one (its limits and the margin) is missed behind a 4 s run"
wait "$SLOW"

# ---- paddock run: the same rules in this process --------------------------------------------------
printf '%s\n' "$(jq -c '. + {schema: "run_code", task_id: "whole"}' <<<"$WHOLE_PY")" \
  "$(jq -c '. + {task_id: "net"}' <<<"$NET_SH")" >"$TMPD/lines.jsonl"
"$PADDOCK" run -q --warm 1 -o "$TMPD/out.jsonl" "$TMPD/lines.jsonl" 2>"$TMPD/run.err"
is "$(jq -r 'select(.line == 1) | .run_result.stdout | length' "$TMPD/out.jsonl")" 2097152 \
  "paddock run, \"schema\": \"run_code\": the whole output too (2 MiB)"
is "$(jq -r 'select(.line == 2) | .refused' "$TMPD/out.jsonl")" bad_request \
  "paddock run: a network asked for is refused (it has no per-request networks)"
stop_daemon

# ---- a cluster: A has bash only and allows network host; B has every template, one worker -----
nats_start
ok $? "nats-server with JetStream on 127.0.0.1:$NPORT"

declare -A NPID NURL
start_node() { cluster_node "$@" --cluster-ack-wait 3; } # start_node ID [SERVE ARGS]
cleanup 'for n in "${!NPID[@]}"; do kill -KILL "${NPID[$n]}" 2>/dev/null; wait "${NPID[$n]}" 2>/dev/null; done'
python3 -c "
import json
d = json.load(open('contrib/templates.example.json'))
print(json.dumps({'templates': [t for t in d['templates'] if t['name'] == 'bash']}))" >"$TMPD/bash-only.json"
start_node a --templates "$TMPD/bash-only.json" --run-code-networks host &&
  start_node b --workers 1 --deadline-margin 1
ok $? "nodes a (bash only, --run-code-networks host) and b (every template, one worker, margin 1 s)"
A=${NURL[a]} B=${NURL[b]}
wait_for 10 bash -c "[ \"\$(curl -s $A/v1/cluster | jq -c '[.nodes[].id] | sort')\" = '[\"a\",\"b\"]' ]"
ok $? "both nodes see each other"
# the risk list is b's (and the single daemon's): a's own checks pass what b's refuse
risky "$TMPD/db.b.sqlite" rk

# b, the node the client sent it to, refuses it by its own rules before handing it on
at "$B" post_json /run_code "$NET_SH"
is "$(outcome)" "${NET_LOCAL}" "a network b does not allow, sent to b: refused as the single daemon refuses it"
at "$B" post_json /v1/runs "$RISK_SH"
is "$(outcome)" "$RISK_LOCAL" "a risky run asking for egress, sent to b: the same 403"

# python goes through a (which allows host and has no risk list) to b, which checks it again
at "$A" post_json /run_code "$NET_PY"
is "$(outcome)" "$NET_LOCAL" "python with network host through a, run by b: b refuses it as the single daemon does"
at "$A" post_json /v1/runs "$RISK_PY"
is "$(outcome)" "$RISK_LOCAL" "a risky python run asking for egress through a: b's 403, the same words"
at "$A" post_json /v1/runs "$AUDITED_PY"
is "$CODE|$(jb .risk_list)|$(jb .node)" "200|true|b" "a risky python run through a: audited in full by b (risk_list true)"
at "$A" post_json /run_code "$WHOLE_PY"
is "$CODE|$(jb '.run_result.stdout | length')|$(jb .node)" "200|2097152|b" "/run_code through a, run by b: the whole output"
at "$A" post_json /api/v2/execute "$HOG"
is "$CODE|$(jb .run.status)|$(jb .run.signal)" "200|SG|SIGKILL" "Piston through a, run by b: the OOM kill's SIGKILL, as a single daemon answers"
# the default deadline counts from the request's arrival at a: its time in the broker, waiting for
# b's only slot, is part of it
at "$A" bg_post /v1/runs "$SLOW_PY" &
SLOW=$!
wait_for 20 bash -c "curl -s $B/metrics | grep -q '^paddock_workers_busy 1'"
at "$A" post_json /v1/runs "$LATE_PY"
is "$(late_outcome)" deadline "no deadline_ms through a: b applies the default deadline, missed behind the 4 s run"
wait "$SLOW"

# ---- a full queue: one text, whichever API ---------------------------------------------------------
start_daemon --workers 1 --wall-workers 1 --queue-max 1 --problems examples/problems
ok $? "a daemon with one worker per class and a queue of one"
FULL=$U
# one per class first, running, then one per class queued behind it: sent at once, the second
# could find the first still in its queue (not yet taken by the worker) and be refused
occupy() {
  curl -s -o /dev/null -m 60 -H 'Content-Type: application/json' --data-binary '{"shell":"sleep 30","limits":{"wall_time":40}}' "$FULL/v1/runs" &
  curl -s -o /dev/null -m 60 -H 'Content-Type: application/json' --data-binary '{"language":"bash","code":"sleep 30","run_timeout":40}' "$FULL/run_code" &
}
occupy
wait_for 25 bash -c "[ \"\$(curl -s $FULL/metrics | grep -c '^paddock_class_workers_busy{class=\"[a-z]*\"} 1')\" = 2 ]"
occupy
wait_for 25 bash -c "[ \"\$(curl -s $FULL/metrics | grep -c '^paddock_class_queue_length{class=\"[a-z]*\"} 1')\" = 2 ]"
ok $? "both classes busy, both queues full"
[ "$(curl -s $FULL/metrics | grep -c '^paddock_class_queue_length{class="[a-z]*"} 1')" = 2 ] ||
  diag "$(curl -s $FULL/metrics | grep -E '^paddock_(class_queue_length|workers_busy|admission|refused|jobs_refused)' | head -20)"
post_json /v1/runs '{"shell":"echo hi"}'
is "$(outcome)" "503|queue full: retry later" "/v1/runs: 503, queue full"
post_json /run_code '{"language":"bash","code":"echo hi"}'
is "$(outcome)" "504|queue full: retry later" "/run_code: 504 (verl retries on 504), the same words"
post_json /v1/judge '{"problem_id":"hello","language":"python","code":"print(\"Hello, World!\")","cache":false}'
is "$(outcome)" "503|queue full: retry later" "/v1/judge: 503, the same words"
post_json /v1/judge '{"submissions":[{"problem_id":"hello","language":"python","code":"print(1)","cache":false}]}'
is "$CODE|$(jb '.results[0].error')" "200|queue full: retry later" "a judge batch: the submission's result says the same"
