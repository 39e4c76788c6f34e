#!/usr/bin/env bash
# A trainer's load: clients that give up, deadlines, the breaker.
#  - a client that disconnects cancels its job: taken out of the queue (never run), or killed while
#    it runs (its sandbox reclaimed); recorded as cancelled, counted in /metrics; on every run API,
#    and on a keep-alive connection's second request and a pipelined one;
#  - a request that the queue ahead says cannot finish before its deadline is refused at once: 504
#    with Retry-After on /run_code, 503 with Retry-After and a JSON error on /v1/runs and Piston;
#  - after a flood of abandoned and timed-out work, an idle daemon admits the next request (the
#    breaker trips on infrastructure failures only).
#  - a quick request right after a burst of abandoned long jobs is answered (they were cancelled,
#    not left to run for nobody ahead of it).
source "$(dirname "$0")/api.sh"
plan 39

metric() { curl -s -m 5 "$U/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }
idle() { metric_is paddock_workers_busy 0 && metric_is 'paddock_queue_length{priority="normal"}' 0; }
workers_busy() { metric_is paddock_workers_busy "$1"; }
stored() { sqlite3 "$DB" "SELECT failure_class FROM attempts WHERE task_id = '$1'" 2>&1; }
stored_is() { [ "$(stored "$1")" = "$2" ]; }
# the sandboxes' processes: what `sleep` the cancelled job started must be gone
no_sleeper() { ! pgrep -f "sleep $1" >/dev/null; }

start_daemon --workers 1 --wall-workers 1 --queue-max 16
ok $? "daemon with --workers 1"

# --- a running job whose client gives up is killed ---------------------------------------------
curl -s -m 1 -o /dev/null -H 'Content-Type: application/json' \
  -d '{"shell":"sleep 47.5; echo never","task_id":"run-gone"}' "$U/v1/runs"
is "$?" 28 "the client gave up after 1 s (curl: timeout)"
wait_for 10 stored_is run-gone cancelled
ok $? "the running job ends as cancelled, recorded in the store"
wait_for 10 no_sleeper 47.5
ok $? "its program was killed"
wait_for 10 idle
ok $? "the worker is free again"
is "$(metric 'paddock_cancelled_total{stage="running"}')" 1 "/metrics: one running job cancelled"
is "$(metric 'paddock_failures_total{class="cancelled"}')" 1 "/metrics: failures_total counts it as cancelled"

# --- a queued job whose client gives up is never run -------------------------------------------
curl -s -m 60 -o "$TMPD/blocker.json" -H 'Content-Type: application/json' \
  -d '{"shell":"sleep 3; echo blocker","task_id":"blocker"}' "$U/v1/runs" &
blocker=$!
wait_for 10 workers_busy 1
ok $? "a 3 s job occupies the only worker"
python3 - "$U" <<'EOF2'
# a client that sends its request and closes the socket before the answer
import socket, sys, urllib.parse, json
u = urllib.parse.urlsplit(sys.argv[1])
for path, req in (("/v1/runs", {"shell": "touch /work/x; echo ran", "task_id": "queued-gone"}),
                  ("/v1/judge", {"problem": {"tests": [{"input": "2\n", "output": "4\n"}]}, "language": "python",
                                 "code": "print(int(input()) ** 2)", "task_id": "judge-gone"})):
    body = json.dumps(req).encode()
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % (path.encode(), len(body)) + body)
    s.close()
EOF2
wait_for 10 stored_is queued-gone cancelled
ok $? "the queued job whose client closed its socket ends as cancelled while the blocker still runs"
kill -0 "$blocker" 2>/dev/null
ok $? "(the blocker was still running then)"
wait_for 10 stored_is judge-gone cancelled && kill -0 "$blocker" 2>/dev/null
ok $? "a queued judge job whose client left ends as cancelled too, while the blocker still runs"
is "$(metric 'paddock_queue_length{priority="normal"}')" 0 "both left the queue"
is "$(metric 'paddock_cancelled_total{stage="queued"}')" 2 "/metrics: two queued jobs cancelled"
is "$(sqlite3 "$DB" "SELECT json_extract(record, '$.run') IS NULL FROM attempts WHERE task_id = 'queued-gone'" 2>&1)" 1 \
  "the cancelled queued job never ran (run null in its record)"
wait "$blocker"
is "$(jq -r .run.stdout "$TMPD/blocker.json")" blocker "the blocker itself completed and was answered"

# --- keep-alive and pipelined connections, /run_code and Piston --------------------------------
cat >"$TMPD/gone.py" <<'EOF2'
# gone.py URL MODE: requests on one connection, the last one abandoned (socket closed unanswered)
import socket, sys, urllib.parse, json
u = urllib.parse.urlsplit(sys.argv[1])
mode = sys.argv[2]
def reqb(path, obj):
    body = json.dumps(obj).encode()
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (path.encode(), len(body))) + body
s = socket.create_connection((u.hostname, u.port))
slow_native = {"shell": "sleep 46.5", "task_id": "ka-slow"}
if mode == "keepalive":
    # a first request answered on the connection, then a second one abandoned
    s.sendall(reqb("/v1/runs", {"shell": "echo first", "task_id": "ka-first"}))
    data = b""
    while b"first" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    print("first answered" if b"HTTP/1.1 200" in data else "first not answered")
    s.sendall(reqb("/v1/runs", slow_native))
elif mode == "pipelined":
    # two requests in one write: the second waits behind the first, the client leaves
    s.sendall(reqb("/v1/runs", {"shell": "sleep 45.5", "task_id": "pipe-1"}) +
              reqb("/v1/runs", {"shell": "echo two", "task_id": "pipe-2"}))
elif mode == "run_code":
    s.sendall(reqb("/run_code", {"code": "import time\ntime.sleep(44.5)", "language": "python",
                                 "run_timeout": 60}))
elif mode == "piston":
    s.sendall(reqb("/api/v2/execute", {"language": "python", "version": "*", "run_timeout": 60000,
                                       "files": [{"content": "import time\ntime.sleep(43.5)"}]}))
s.close()
EOF2
cancelled() { metric 'paddock_failures_total{class="cancelled"}'; }
c0=$(cancelled)
is "$(python3 "$TMPD/gone.py" "$U" keepalive)" "first answered" "keep-alive: the first request is answered"
wait_for 10 stored_is ka-slow cancelled
ok $? "keep-alive: the abandoned second request is cancelled"
wait_for 10 no_sleeper 46.5
ok $? "keep-alive: its program was killed"
python3 "$TMPD/gone.py" "$U" pipelined
wait_for 10 stored_is pipe-1 cancelled
ok $? "pipelined: the request being served when the client left is cancelled"
wait_for 10 no_sleeper 45.5
ok $? "pipelined: its program was killed"
# the daemon may still read the second request from its buffer once the first is answered: then it
# sees the hang-up at once; either way it must not run
is "$(sqlite3 "$DB" "SELECT count(*) FROM attempts WHERE task_id = 'pipe-2' AND (failure_class != 'cancelled' OR json_extract(record, '$.run') IS NOT NULL)" 2>&1)" 0 \
  "pipelined: the request behind it never ran"
python3 "$TMPD/gone.py" "$U" run_code
wait_for 10 no_sleeper 44.5
ok $? "/run_code: an abandoned run is killed"
python3 "$TMPD/gone.py" "$U" piston
wait_for 15 no_sleeper 43.5
ok $? "Piston: an abandoned run is killed"
wait_for 10 idle
n_pipe2=$(sqlite3 "$DB" "SELECT count(*) FROM attempts WHERE task_id = 'pipe-2'" 2>&1)
is "$(cancelled)" "$((c0 + 4 + n_pipe2))" "/metrics: the four (and the pipelined second, if read) counted as cancelled"

# --- admission by deadline ----------------------------------------------------------------------
stop_daemon
start_daemon --workers 1 --wall-workers 1 --queue-max 16 --deadline-margin 1
ok $? "daemon with --workers 1 --deadline-margin 1"
# the scheduler learns what a bash job costs here
for i in 1 2; do curl -s -m 30 -o /dev/null -H 'Content-Type: application/json' -d '{"shell":"sleep 1.5"}' "$U/v1/runs"; done
curl -s -m 60 -o /dev/null -H 'Content-Type: application/json' -d '{"shell":"sleep 4"}' "$U/v1/runs" &
b1=$!
wait_for 10 workers_busy 1
for i in 1 2; do
  curl -s -m 60 -o /dev/null -H 'Content-Type: application/json' -d '{"shell":"sleep 1.5"}' "$U/v1/runs" &
  pids="${pids:-} $!"
  wait_for 5 metric_is 'paddock_queue_length{priority="normal"}' "$i"
done
post_json /v1/runs '{"shell":"echo hurry","deadline_ms":1000}'
is "$CODE" 503 "/v1/runs with deadline_ms 1000 behind ~4.5 s of work: refused at once (503)"
[ "$(hdr Retry-After)" -ge 1 ] 2>/dev/null
ok $? "  with Retry-After ($(hdr Retry-After))"
like "$(jb .error)" "deadline" "  and a JSON error that says why"
# SandboxFusion and Piston runs have workers of their own (--wall-workers 1 here): fill that one
# too, once the scheduler has learnt what a python run costs here
for i in 1 2; do
  curl -s -m 30 -o /dev/null -H 'Content-Type: application/json' \
    -d '{"code":"import time; time.sleep(1.5)","language":"python","run_timeout":10}' "$U/run_code"
done
curl -s -m 60 -o /dev/null -H 'Content-Type: application/json' \
  -d '{"code":"import time; time.sleep(4)","language":"python","run_timeout":10}' "$U/run_code" &
pids="$pids $!"
wait_for 10 metric_is 'paddock_class_workers_busy{class="wall"}' 1
for i in 1 2; do
  curl -s -m 60 -o /dev/null -H 'Content-Type: application/json' \
    -d '{"code":"import time; time.sleep(1.5)","language":"python","run_timeout":10}' "$U/run_code" &
  pids="$pids $!"
  wait_for 5 metric_is 'paddock_class_queue_length{class="wall"}' "$i"
done
post_json /run_code '{"code":"print(1)","language":"python","run_timeout":1,"compile_timeout":0}'
is "$CODE" 504 "/run_code whose default deadline (timeouts + margin) cannot be met: 504"
[ "$(hdr Retry-After)" -ge 1 ] 2>/dev/null
ok $? "  with Retry-After, which SandboxFusion clients retry on"
post_json /api/v2/execute '{"language":"python","version":"*","run_timeout":1000,"compile_timeout":100,"files":[{"content":"print(1)"}]}'
is "$CODE $(jb .message | grep -c deadline)" "503 1" "Piston: 503 with a message"
is "$(metric 'paddock_refused_total{reason="deadline"}')" 3 "/metrics: three refused by deadline"
post_json /v1/runs '{"shell":"echo patient","deadline_ms":60000}'
is "$CODE $(jb .run.stdout)" "200 patient" "a request with time enough is accepted and answered"
wait $b1 $pids

# --- after a flood of abandoned and timed-out work, an idle daemon admits ----------------------
for i in 1 2 3 4 5 6; do
  curl -s -m 2 -o /dev/null -H 'Content-Type: application/json' \
    -d '{"shell":"sleep 30","limits":{"wall_time":1}}' "$U/v1/runs" &
  pids="$pids $!"
done
wait $pids
wait_for 30 idle
ok $? "the flood is over: nothing runs or waits"
post_json /run_code '{"code":"print(42)","language":"python"}'
is "$CODE $(jb .status) $(jb .run_result.stdout)" "200 Success 42" "the next request is admitted and answered"
is "$(metric paddock_breaker_trips_total)" 0 "the breaker never tripped on load or time-outs"

# --- a quick request right after abandoned long jobs (issue 20: one failed at its client) --------
c0=$(cancelled)
pids=""
for i in $(seq 1 12); do
  curl -s -m 1 -o /dev/null -H 'Content-Type: application/json' -d '{"shell":"sleep 42.5","limits":{"wall_time":60},"deadline_ms":600000,"task_id":"ab-'$i'"}' "$U/v1/runs" &
  pids="$pids $!"
done
wait $pids
# the twelve held the only worker for 8 minutes had they run; the quick one's client waits 20 s
REQ_TIMEOUT=20 post_json /v1/runs '{"shell":"echo quick"}'
is "$CODE $(jb .run.stdout)" "200 quick" "a quick request just after 12 abandoned 42 s jobs is answered"
wait_for 10 no_sleeper 42.5
ok $? "  none of the abandoned jobs' programs is left"
# (a client the loaded host kept from sending within its second made no job: count those that came)
ab() { sqlite3 "$DB" "SELECT count(*) FROM attempts WHERE task_id LIKE 'ab-%' ${1:-}" 2>&1; }
ab_settled() { n=$(ab); [ "$n" -gt 0 ] && [ "$(ab "AND failure_class = 'cancelled'")" = "$n" ] && [ "$(cancelled)" = $((c0 + n)) ]; }
wait_for 10 ab_settled
ok $? "  every abandoned job that reached the daemon ($(ab) of 12) ended as cancelled, and was counted"

done_testing
