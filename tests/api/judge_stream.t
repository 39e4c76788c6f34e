#!/usr/bin/env bash
# POST /v1/judge batches answered as they finish and clients that leave:
#  - "stream": true answers application/x-ndjson, chunked, one judged record a line with its
#    "index", in the order they finish, one line per submission, ending cleanly (curl);
#  - read with python's http.client line by line: the first verdict arrives while the slowest
#    submission still runs (its record is not in the store yet and its program is alive);
#  - a client that hangs up after that first line cancels the running submission: its program is
#    killed, its attempt stored as cancelled (no reward), counted in /metrics;
#  - a judge error or a compile error in one submission does not end the stream;
#  - the array form: a client that leaves cancels what is queued and running too;
#  - a single judge request whose client leaves while it runs is killed (not only a queued one);
#  - "stream" that is not a boolean: 400.
source "$(dirname "$0")/api.sh"
plan 26

metric() { curl -s -m 5 "$U/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
stored() { sqlite3 "$DB" "SELECT failure_class FROM attempts WHERE task_id = '$1'" 2>&1; }
stored_is() { [ "$(stored "$1")" = "$2" ]; }
sleeper() { pgrep -f "sleep $1" >/dev/null; }
no_sleeper() { ! sleeper "$1"; }
idle() { [ "$(metric paddock_workers_busy)" = 0 ]; }

start_daemon --workers 2
ok $? "daemon with --workers 2"

# --- curl: every line, the end of the body --------------------------------------------------------
post_json /v1/judge '{"problem":{"tests":[{"input":"2\n","output":"4\n"},{"input":"3\n","output":"9\n"}]},
  "stream":true,"group_id":"gs","submissions":[
  {"sample_id":"right","language":"python","code":"print(int(input())**2)"},
  {"sample_id":"wrong","language":"python","code":"print(4)"},
  {"sample_id":"broken","language":"c","code":"int main( {"}]}'
is "$CODE $(hdr Content-Type) $(hdr Transfer-Encoding)" "200 application/x-ndjson chunked" \
  "stream: 200, application/x-ndjson, chunked"
is "$(wc -l <"$BODY" | tr -d ' ')" 3 "one line per submission"
is "$(jq -sr 'sort_by(.index) | map("\(.index):\(.sample_id):\(.verdict.output.status):\(.group_id)") | join(" ")' "$BODY")" \
  "0:right:pass:gs 1:wrong:partial:gs 2:broken:fail:gs" "each line a judged record with its index and the shared fields"
is "$(jq -sr 'map(select(.index == 2)) | .[0].failure_class' "$BODY")" compile_error \
  "a compile error is its own line: the stream goes on"
curl -s -m 60 -o /dev/null -H 'Content-Type: application/json' -d '{"problem":{"tests":[{"input":"","output":"1\n"}]},
  "stream":true,"submissions":[{"language":"python","code":"print(1)"}]}' "$U/v1/judge"
is "$?" 0 "curl: the streamed body ends cleanly (the chunked terminator)"
# many short streams (cache hits end at once): the end of the body must never be lost between the
# writer's last line and its close (a stream that never ended: curl's timeout, seen once in make test)
bad=0
for i in $(seq 40); do
  curl -s -m 20 -o /dev/null -H 'Content-Type: application/json' -d '{"problem":{"tests":[{"input":"","output":"1\n"}]},
    "stream":true,"submissions":[{"language":"python","code":"print(1)"},{"language":"python","code":"print(1)"}]}' \
    "$U/v1/judge" || bad=$((bad + 1))
done
is "$bad" 0 "40 short streamed batches: every body ends cleanly"

# a checker that fails (judge_error) next to a good submission: both lines come
post_json /v1/judge '{"problem":{"tests":[{"input":"1","output":"1"}],"checker":{"mode":"checker","language":"python",
  "code":"import sys\nsys.exit(3 if open(sys.argv[2]).read().strip() == \"7\" else 0)"}},"stream":true,"submissions":[
  {"sample_id":"je","language":"python","code":"print(7)"},{"sample_id":"ok","language":"python","code":"print(1)"}]}'
is "$(jq -sr 'sort_by(.index) | map("\(.sample_id):\(.failure_class):\(.reward)") | join(" ")' "$BODY")" \
  "je:judge_error:null ok:none:1" "a judge error does not end the stream (its reward null)"

# --- http.client: lines as they arrive; a client that leaves --------------------------------------
cat >"$TMPD/stream.py" <<'EOF'
# stream.py URL BODYFILE DB SLOW_TASK PATTERN: reads the streamed batch line by line; at the first
# line says whether the slow task was in the store yet; then waits (a condition, 30 s at most) until
# the slow program (pgrep -f PATTERN) runs, says so, and hangs up while it runs
import http.client, json, os, sqlite3, subprocess, sys, time, urllib.parse
def runs(pattern):  # a process other than this one (whose own argv holds the pattern) matches
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    return any(int(p) != os.getpid() for p in out)
u = urllib.parse.urlsplit(sys.argv[1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
c.request("POST", "/v1/judge", open(sys.argv[2], "rb").read(), {"Content-Type": "application/json"})
r = c.getresponse()
line = r.readline()
rec = json.loads(line)
db = sqlite3.connect(sys.argv[3])
stored = db.execute("SELECT count(*) FROM attempts WHERE task_id = ?", (sys.argv[4],)).fetchone()[0]
running = False
for _ in range(300):
    running = runs(sys.argv[5])
    if running:
        break
    time.sleep(0.1)
if "sample_id" not in rec:
    print("# first line: %s" % line[:600], file=sys.stderr)
print(r.status, rec.get("index"), rec.get("sample_id"), rec.get("verdict", {}).get("output", {}).get("status"),
      "slow-stored=%d" % stored, "slow-running=%s" % running)
c.close()
EOF
cat >"$TMPD/slow.json" <<'EOF'
{"problem":{"tests":[{"input":"2\n","output":"4\n"}],"limits":{"time":30}},"stream":true,"group_id":"gs2",
 "submissions":[{"sample_id":"slow","task_id":"slow-1","language":"bash","code":"sleep 41.5; echo 4"},
                {"sample_id":"fast","language":"python","code":"print(int(input())**2)"}]}
EOF
c0=$(metric 'paddock_cancelled_total{stage="running"}')
is "$(timeout 60 python3 "$TMPD/stream.py" "$U" "$TMPD/slow.json" "$DB" slow-1 "sleep 41.5")" \
  "200 1 fast pass slow-stored=0 slow-running=True" \
  "http.client: the first line (the fast one, index 1) arrives before the slow one ended (unrecorded); the client hangs up while it runs"
wait_for 20 stored_is slow-1 cancelled
ok $? "the client hung up: the running slow submission ends as cancelled in the store"
wait_for 10 no_sleeper 41.5
ok $? "its program was killed"
is "$(sqlite3 "$DB" "SELECT (json_extract(record, '$.reward') IS NULL) || json_extract(record, '$.verdict.output.status') FROM attempts WHERE task_id = 'slow-1'")" \
  "1not_judged" "the cancelled attempt: no reward, output not_judged"
is "$(metric 'paddock_cancelled_total{stage="running"}')" "$((c0 + 1))" "/metrics: one running job cancelled"
wait_for 10 idle
ok $? "the workers are free again"

# --- the array form: a client that leaves cancels the queued and the running ----------------------
cat >"$TMPD/leave.py" <<'EOF'
# leave.py URL BODYFILE: sends the request, waits until its program runs, closes the socket unanswered
import os, socket, subprocess, sys, time, urllib.parse
def runs(pattern):  # a process other than this one (whose own argv holds the pattern) matches
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    return any(int(p) != os.getpid() for p in out)
u = urllib.parse.urlsplit(sys.argv[1])
body = open(sys.argv[2], "rb").read()
s = socket.create_connection((u.hostname, u.port))
s.sendall(b"POST /v1/judge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
          % len(body) + body)
for _ in range(600):  # a condition, not a sleep: until the slow program runs (60 s at most)
    if runs(sys.argv[3]):
        break
    time.sleep(0.1)
s.close()
EOF
cat >"$TMPD/array.json" <<'EOF'
{"problem":{"tests":[{"input":"2\n","output":"4\n"}],"limits":{"time":30}},"language":"bash",
 "submissions":[{"task_id":"arr-1","code":"sleep 42.5; echo 4"},{"task_id":"arr-2","code":"sleep 42.5; echo 4"},
                {"task_id":"arr-3","code":"sleep 42.5; echo 4"}]}
EOF
python3 "$TMPD/leave.py" "$U" "$TMPD/array.json" "sleep 42.5"
wait_for 20 stored_is arr-1 cancelled && wait_for 20 stored_is arr-2 cancelled && wait_for 20 stored_is arr-3 cancelled
ok $? "array form: the client left; its three submissions (two running, one queued) end as cancelled"
wait_for 10 no_sleeper 42.5
ok $? "array form: their programs were killed"

# --- a single judge request whose client leaves while it runs -------------------------------------
cat >"$TMPD/one.json" <<'EOF'
{"problem":{"tests":[{"input":"2\n","output":"4\n"},{"input":"3\n","output":"9\n"}],"limits":{"time":30}},
 "task_id":"one-1","language":"bash","code":"sleep 43.5; echo 4"}
EOF
python3 "$TMPD/leave.py" "$U" "$TMPD/one.json" "sleep 43.5"
wait_for 20 stored_is one-1 cancelled
ok $? "a single judge request: its client left while the test ran: cancelled"
wait_for 10 no_sleeper 43.5
ok $? "its program was killed (not left to its 61 s wall limit)"
is "$(sqlite3 "$DB" "SELECT json_extract(record, '$.tests[1].status') FROM attempts WHERE task_id = 'one-1'")" skipped \
  "the test after it never ran"

# --- a submission queued past its deadline: queue_timeout, no reward, the stream goes on --------
# (10 s: admission refuses a request whose estimated wait and run pass its deadline, and the
# estimate is learned from this machine's speed; under make tsan a 1.5 s deadline was refused at
# once as overloaded. Both programs ahead sleep 44.5 s, so the deadline passes in the queue.)
cat >"$TMPD/deadline.json" <<'EOF'
{"problem":{"tests":[{"input":"2\n","output":"4\n"}],"limits":{"time":30}},"stream":true,
 "submissions":[{"task_id":"dl-1","language":"bash","code":"sleep 44.5; echo 4"},
                {"task_id":"dl-2","language":"bash","code":"sleep 44.5; echo 4"},
                {"task_id":"dl-3","sample_id":"late","language":"python","code":"print(4)","deadline_ms":10000}]}
EOF
is "$(timeout 60 python3 "$TMPD/stream.py" "$U" "$TMPD/deadline.json" "$DB" dl-3 "sleep 44.5" | cut -d' ' -f1-5)" \
  "200 2 late not_judged slow-stored=1" \
  "stream: the first line is the submission whose deadline passed in the queue (both workers busy)"
is "$(sqlite3 "$DB" "SELECT failure_class || ' ' || (json_extract(record, '$.reward') IS NULL) FROM attempts WHERE task_id = 'dl-3'")" \
  "queue_timeout 1" "it is stored as queue_timeout with reward null"
wait_for 20 stored_is dl-1 cancelled && wait_for 20 stored_is dl-2 cancelled
ok $? "the client hung up after it: the two running ones are cancelled"
wait_for 10 no_sleeper 44.5
ok $? "their programs were killed"

# --- refusals ----------------------------------------------------------------------------------
post_json /v1/judge '{"problem":{"tests":[{"input":"","output":"1"}]},"stream":"yes","submissions":[{"language":"python","code":"print(1)"}]}'
is "$CODE/$(jb .error)" "400/stream: must be true or false" "stream not a boolean: 400"
post_json /v1/judge '{"problem":{"tests":[{"input":"","output":"1"}]},"stream":true,"submissions":[{"language":"python","code":"print(1)"},{"language":"x","code":"1"}]}'
like "$CODE/$(jb .error)" "^400/submissions\\[1\\]: language" "stream: a bad submission refuses the batch before anything streams"
_daemon_alive
ok $? "the daemon is still up"
