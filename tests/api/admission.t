#!/usr/bin/env bash
# Admission and scheduling: with --workers 1 --queue-max 1 an overload is refused at once (504 with
# Retry-After on /run_code, since SandboxFusion clients retry only on 504; 503 with Retry-After on
# /v1/runs) and every accepted request is answered whole; a deadline that passes in the queue ends
# as queue_timeout, answered at the deadline rather than when a worker frees up; a high-priority job
# overtakes queued low ones; clients are served round robin.
# The scheduler refuses at admission what its estimate says cannot meet its deadline (overload.t
# tests that): to see deadlines pass in the queue, the jobs ahead run on templates it has not
# timed yet (counted as 0.5 s each) and take longer than that.
source "$(dirname "$0")/api.sh"
plan 40

cat >"$TMPD/client.py" <<'EOF'
# client.py URL MODE: concurrent requests; prints one JSON line per request
import http.client, json, sys, threading, time, urllib.parse
url, mode = sys.argv[1], sys.argv[2]
u = urllib.parse.urlsplit(url)

def call(method, path, body=None, headers=None, timeout=60):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request(method, path, json.dumps(body) if body is not None else None, h)
        r = c.getresponse()
        data = r.read()
        declared = r.getheader("Content-Length")
        out = {"code": r.status, "retry_after": r.getheader("Retry-After"),
               "length_ok": declared is None or int(declared) == len(data)}
        try:
            out["body"] = json.loads(data)
        except ValueError:
            out["body"] = None
            out["raw"] = data[:200].decode("utf-8", "replace")
        return out
    except Exception as e:  # a dropped connection is a failure the test reports
        return {"code": 0, "error": repr(e)}
    finally:
        c.close()

def burst(path, make, n):
    res = [None] * n
    def go(i):
        res[i] = call("POST", path, make(i))
    ts = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(90)
    for i, r in enumerate(res):
        r = r or {"code": -1}
        r["i"] = i
        print(json.dumps(r))

if mode == "run_code":
    burst("/run_code", lambda i: {"code": "import time\ntime.sleep(2)\nprint('done-%d')" % i,
                                  "language": "python", "compile_timeout": 10, "run_timeout": 10,
                                  "memory_limit_MB": -1, "stdin": "", "files": {}, "fetch_files": []}, 6)
elif mode == "native":
    burst("/v1/runs", lambda i: {"shell": "sleep 2; echo done-%d" % i}, 6)
EOF

# --- a daemon with one worker and a queue of one per priority ----------------------------------
start_daemon --workers 1 --wall-workers 1 --queue-max 1
ok $? "daemon with --workers 1 --queue-max 1"

python3 "$TMPD/client.py" "$U" run_code >"$TMPD/rc.jsonl"
n200=$(jq -s '[.[] | select(.code == 200)] | length' "$TMPD/rc.jsonl")
n504=$(jq -s '[.[] | select(.code == 504)] | length' "$TMPD/rc.jsonl")
other=$(jq -c -s '[.[] | select(.code != 200 and .code != 504) | {code, error, raw}]' "$TMPD/rc.jsonl")
diag "/run_code x6: $n200 answered 200, $n504 refused 504"
is "$other" "[]" "/run_code overload: every answer is 200 or 504"
[ "$n504" -ge 1 ]
ok $? "/run_code overload: some refused with 504 ($n504)"
[ "$n200" -ge 1 ] && [ "$n200" -le 2 ]
ok $? "/run_code overload: only what one worker and one queue slot hold is accepted ($n200)"
is "$(jq -s '[.[] | select(.code == 504) | .retry_after | tonumber? // 0 | select(. >= 1)] | length' "$TMPD/rc.jsonl")" "$n504" \
  "/run_code 504s carry Retry-After (whole seconds >= 1)"
is "$(jq -s '[.[] | select(.code == 504) | .body.error | strings | select(test("queue full|overload|retry"))] | length' "$TMPD/rc.jsonl")" "$n504" \
  "/run_code 504s say why in JSON"
is "$(jq -s '[.[] | select(.code == 200) | select(.length_ok and .body.status == "Success" and
  .body.run_result.stdout == "done-\(.i)\n" and .body.run_result.return_code == 0)] | length' "$TMPD/rc.jsonl")" "$n200" \
  "/run_code: every 200 is a complete, correct answer"

python3 "$TMPD/client.py" "$U" native >"$TMPD/nat.jsonl"
n200=$(jq -s '[.[] | select(.code == 200)] | length' "$TMPD/nat.jsonl")
n503=$(jq -s '[.[] | select(.code == 503)] | length' "$TMPD/nat.jsonl")
other=$(jq -c -s '[.[] | select(.code != 200 and .code != 503) | {code, error, raw}]' "$TMPD/nat.jsonl")
diag "/v1/runs x6: $n200 answered 200, $n503 refused 503"
is "$other" "[]" "/v1/runs overload: every answer is 200 or 503"
[ "$n503" -ge 1 ] && [ "$n200" -ge 1 ] && [ "$n200" -le 2 ]
ok $? "/v1/runs overload: some refused with 503 ($n503), one or two accepted ($n200)"
is "$(jq -s '[.[] | select(.code == 503) | .retry_after | tonumber? // 0 | select(. >= 1)] | length' "$TMPD/nat.jsonl")" "$n503" \
  "/v1/runs 503s carry Retry-After"
is "$(jq -s '[.[] | select(.code == 200) | select(.length_ok and .body.status == "OK" and
  .body.run.stdout == "done-\(.i)\n" and .body.failure_class == "none")] | length' "$TMPD/nat.jsonl")" "$n200" \
  "/v1/runs: every 200 is a complete, correct record"

req GET /metrics
refused=$(grep -E '^paddock_refused_total\{reason="queue_full"\} ' "$BODY" | awk '{print $2}')
[ "${refused:-0}" -ge 2 ]
ok $? "/metrics counts the refusals (queue_full $refused)"

# --- deadline passing in the queue ------------------------------------------------------------
workers_busy() { curl -s -m 5 "$U/metrics" | grep -qx 'paddock_workers_busy 1'; }
curl -s -m 30 -o "$TMPD/slow.json" -H 'Content-Type: application/json' -d '{"template":"c","shell":"sleep 3; echo slow"}' "$U/v1/runs" &
slow=$!
wait_for 10 workers_busy
ok $? "a slow job occupies the only worker"
post_json /v1/runs '{"template":"cpp","shell":"echo should-not-run","deadline_ms":1500,"task_id":"deadline-1"}'
is "$CODE" 200 "deadline_ms 1500 behind a 3 s job: answered 200"
is "$(jb .failure_class)" queue_timeout "deadline_ms 1500 behind a 3 s job: failure_class queue_timeout"
is "$(jb .run)" null "queue_timeout: never ran (run null)"
wait "$slow"
is "$(jq -r .run.stdout "$TMPD/slow.json")" slow "the slow job itself completed"
# the same through SandboxFusion: a SandboxError, which verl treats as an infrastructure failure
# (the wall class's only worker: /run_code runs beside the native API's workers, not behind them)
curl -s -m 30 -o /dev/null -H 'Content-Type: application/json' \
  -d '{"code":"import time; time.sleep(7)","language":"python","run_timeout":10}' "$U/run_code" &
slow=$!
wait_for 10 workers_busy
post_json /run_code '{"code":"print(1)","language":"python","run_timeout":10,"deadline_ms":5000}'
is "$(jb '[.status, .failure_class] | join(" ")')" "SandboxError queue_timeout" "/run_code with a passed deadline: SandboxError, queue_timeout"
wait "$slow"
req GET /metrics
is "$(grep -E '^paddock_failures_total\{class="queue_timeout"\} ' "$BODY" | awk '{print $2}')" 2 "/metrics: queue_timeout counted twice"
stored=$(sqlite3 "$DB" "SELECT failure_class FROM attempts WHERE task_id = 'deadline-1'" 2>&1)
is "$stored" queue_timeout "the queue_timeout is recorded in the store"
stop_daemon

# --- priorities and round robin: one worker, a longer queue -------------------------------------
start_daemon --workers 1 --queue-max 16
ok $? "daemon with --workers 1 --queue-max 16"
qlen() { curl -s -m 5 "$U/metrics" | grep -qx "paddock_queue_length{priority=\"$1\"} $2"; }
# run ID PRIORITY CLIENT: a native run in the background; its record in $TMPD/ID.json
run_bg() {
  curl -s -m 60 -o "$TMPD/$1.json" -H 'Content-Type: application/json' -H "X-Paddock-Client: $3" \
    -d "{\"shell\":\"echo $1\",\"priority\":\"$2\",\"task_id\":\"$1\"}" "$U/v1/runs" &
  pids="$pids $!"
}
pids=""
curl -s -m 30 -o "$TMPD/blocker.json" -H 'Content-Type: application/json' -H 'X-Paddock-Client: blocker' \
  -d '{"shell":"sleep 2.5","task_id":"blocker"}' "$U/v1/runs" &
pids="$pids $!"
wait_for 10 workers_busy
ok $? "a 2.5 s job occupies the only worker"
for i in 1 2 3; do
  run_bg "low-$i" low client-l
  wait_for 5 qlen low "$i"
done
qlen low 3
ok $? "three low-priority jobs queued"
run_bg high-1 high client-h
wait_for 5 qlen high 1
# round robin within a class: client-a floods four normal jobs, then client-b sends one
for i in 1 2 3 4; do
  run_bg "a-$i" normal client-a
  wait_for 5 qlen normal "$i"
done
run_bg b-1 normal client-b
wait_for 5 qlen normal 5
qlen normal 5
ok $? "client-a's four and client-b's one normal jobs queued"
for p in $pids; do wait "$p"; done
# one worker: the store's rows (in insertion order) are the order the jobs ran in
order=$(sqlite3 "$DB" "SELECT task_id FROM attempts WHERE task_id != 'blocker' ORDER BY id" 2>&1 | tr '\n' ' ')
diag "run order: $order"
is "$(jq -r .run.stdout "$TMPD/high-1.json")" high-1 "the high job ran"
pos() { echo "$order" | tr ' ' '\n' | grep -nx "$1" | cut -d: -f1; }
h=$(pos high-1)
lmin=$(for i in 1 2 3; do pos "low-$i"; done | sort -n | head -1)
[ -n "$h" ] && [ -n "$lmin" ] && [ "$h" -lt "$lmin" ]
ok $? "high, queued after three lows, ran before all of them (position $h < $lmin)"
is "$(echo "$order" | awk '{print $1}')" high-1 "high ran first of everything queued"
is "$(echo "$order" | awk '{print $7 " " $8 " " $9}')" "low-1 low-2 low-3" "the lows ran last, in their order"
b=$(pos b-1) a2=$(pos a-2)
[ -n "$b" ] && [ -n "$a2" ] && [ "$b" -lt "$a2" ]
ok $? "round robin: client-b's one job ran before client-a's second (position $b < $a2)"
hs=$(jq -r .started_at "$TMPD/high-1.json") l1=$(jq -r .started_at "$TMPD/low-1.json")
[ "$hs" -le "$l1" ]
ok $? "the records agree: high started_at <= low-1 started_at ($hs <= $l1)"

# --- a queued deadline is answered when it passes, not when a worker frees up -------------------
stop_daemon
start_daemon --workers 1 --queue-max 16
ok $? "daemon with --workers 1 --queue-max 16 (deadlines)"
curl -s -m 60 -o "$TMPD/long.json" -H 'Content-Type: application/json' \
  -d '{"shell":"sleep 12; echo long","task_id":"long"}' "$U/v1/runs" &
long=$!
wait_for 10 workers_busy
ok $? "a 12 s job occupies the only worker"
# the later deadline is queued first: the reaper, asleep until 5 s, must re-arm for the 2 s one
( curl -s -m 60 -o "$TMPD/late.json" -H 'Content-Type: application/json' \
    -d '{"shell":"echo late","deadline_ms":5000,"task_id":"dl-late"}' "$U/v1/runs"
  date +%s%N >"$TMPD/late.t" ) &
late=$!
wait_for 5 qlen normal 1
( curl -s -m 60 -o "$TMPD/early.json" -H 'Content-Type: application/json' \
    -d '{"language":"python","code":"print(1)","deadline_ms":2000,"task_id":"dl-early"}' "$U/v1/runs"
  date +%s%N >"$TMPD/early.t" ) &
early=$!
# and one without a deadline, which must stay queued and run after the long job
curl -s -m 60 -o "$TMPD/patient.json" -H 'Content-Type: application/json' \
  -d '{"shell":"echo patient","task_id":"patient"}' "$U/v1/runs" &
patient=$!
wait "$early" "$late"
kill -0 "$long" 2>/dev/null
ok $? "both deadline jobs were answered while the 12 s job still ran (not when the worker freed up)"
is "$(jq -r '[.failure_class, (.run | tostring)] | join(" ")' "$TMPD/early.json")" "queue_timeout null" \
  "deadline_ms 2000: queue_timeout, never ran"
is "$(jq -r '[.failure_class, (.run | tostring)] | join(" ")' "$TMPD/late.json")" "queue_timeout null" \
  "deadline_ms 5000: queue_timeout, never ran"
[ "$(cat "$TMPD/early.t")" -lt "$(cat "$TMPD/late.t")" ]
ok $? "the earlier deadline was answered first, though queued second"
qlen normal 1
ok $? "only the job without a deadline is still queued"
is "$(sqlite3 "$DB" "SELECT group_concat(failure_class) FROM (SELECT failure_class FROM attempts WHERE task_id IN ('dl-early','dl-late') ORDER BY task_id)" 2>&1)" \
  "queue_timeout,queue_timeout" "both expiries are recorded in the store before the answer"
wait "$long" "$patient"
is "$(jq -r .run.stdout "$TMPD/long.json")" long "the long job completed"
is "$(jq -r .run.stdout "$TMPD/patient.json")" patient "the job without a deadline ran after it"

done_testing
