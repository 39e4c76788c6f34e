#!/usr/bin/env bash
# Host resources running out under the daemon.
#  Disk: the daemon's state directory and store on a small tmpfs that the test fills. Requests get
#  507 with a JSON reason (Retry-After), never a 200 whose result was not recorded; /readyz says
#  not ready; the daemon stays up; every result answered 200 is in the store; once space is freed
#  the daemon works again by itself.
#  File descriptors: the daemon under a low RLIMIT_NOFILE (soft = hard, so serve cannot raise it),
#  flooded with connections and sessions past what its fds allow: it neither dies nor spins,
#  answers what it cannot take with errors, and works normally once the load is gone.
source "$(dirname "$0")/api.sh"
plan 40

# --- a full disk -----------------------------------------------------------------------------------
mnt=$TMPD/state
mkdir -p "$mnt"
mount -t tmpfs -o size=24m,mode=0755 paddock-test "$mnt"
ok $? "a 24 MiB tmpfs for the state directory and the store"
cleanup "stop_daemon 20; umount -l '$mnt'"
PADDOCK_STATE_DIR=$mnt start_daemon --db "$mnt/paddock.db"
ok $? "daemon with its state and store on the tmpfs"
DB=$mnt/paddock.db

# a client sending numbered runs one after another, while the disk fills and empties under it
cat >"$TMPD/steady.py" <<'EOF_PY'
# steady.py URL PREFIX STOPFILE MAX: native runs in a row until STOPFILE exists (at most MAX);
# one JSON line per answer (code, task_id, output, error)
import http.client, json, os, sys, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
for i in range(int(sys.argv[4])):
    if os.path.exists(sys.argv[3]):
        break
    tid = "%s-%d" % (sys.argv[2], i)
    out = {"task_id": tid, "t": time.time()}
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        c.request("POST", "/v1/runs", json.dumps({"shell": "echo %d" % i, "task_id": tid}),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        out["code"] = r.status
        out["retry_after"] = r.getheader("Retry-After")
        try:
            b = json.loads(body)
            out["stdout"] = (b.get("run") or {}).get("stdout")
            out["want"] = "%d\n" % i
            out["error"] = b.get("error")
        except ValueError:
            out["raw"] = body[:200].decode("utf-8", "replace")
        c.close()
    except Exception as e:
        out["code"] = 0
        out["exc"] = repr(e)
    print(json.dumps(out), flush=True)
    time.sleep(0.02)
EOF_PY
count() { jq -s "[.[] | select($1)] | length" "$TMPD/steady.jsonl" 2>/dev/null || echo 0; }
# at_least N FILTER: the steady client has at least N answers matching FILTER (for wait_for)
at_least() { [ "$(count "$2")" -ge "$1" ]; }
python3 "$TMPD/steady.py" "$U" steady "$TMPD/stop" 3000 >"$TMPD/steady.jsonl" &
steady=$!
wait_for 30 at_least 10 '.code == 200'
ok $? "a steady client's runs are answered 200"
dd if=/dev/zero of="$mnt/fill" bs=64k status=none 2>/dev/null
dd if=/dev/zero of="$mnt/fill2" bs=4k status=none 2>/dev/null
is "$(df --output=avail -B1 "$mnt" | tail -1 | tr -d ' ')" 0 "the tmpfs is full"
wait_for 60 at_least 5 '.code == 507'
ok $? "the steady client gets 507s once the disk is full"

post_json /v1/runs '{"shell":"echo x","task_id":"full-1"}'
is "$CODE" 507 "disk full: /v1/runs answers 507"
like "$(jb .error)" "disk full" "disk full: the JSON error says so ($(jb .error))"
[ "$(hdr Retry-After)" -ge 1 ] 2>/dev/null
ok $? "disk full: Retry-After ($(hdr Retry-After))"
post_json /run_code '{"code":"print(1)","language":"python"}'
is "$CODE $(jb '.error | test("disk full")')" "507 true" "disk full: /run_code answers 507 with the reason"
post_json /api/v2/execute '{"language":"python","version":"*","files":[{"content":"print(1)"}]}'
is "$CODE $(jb '.message | test("disk full")')" "507 true" "disk full: Piston's execute answers 507 with a message"
req GET /readyz
is "$CODE $(jb .disk_full)" "503 true" "disk full: /readyz 503, disk_full true"
req GET /healthz
is "$CODE" 200 "disk full: /healthz still 200 (the daemon is alive)"
req GET /metrics
[ "$(grep -E '^paddock_refused_total\{reason="disk_full"\} ' "$BODY" | awk '{print $2}')" -ge 1 ]
ok $? "/metrics: refusals for a full disk counted"

# space comes back
rm -f "$mnt/fill" "$mnt/fill2"
wait_for 60 at_least $(( $(count '.code == 200') + 5 )) '.code == 200'
ok $? "space freed: the steady client's runs are answered 200 again, without a restart"
touch "$TMPD/stop"
wait "$steady"
codes=$(jq -s -c 'group_by(.code) | map({(.[0].code | tostring): length}) | add' "$TMPD/steady.jsonl")
diag "the steady client, through the fill and the recovery: $codes"
is "$(count '.code != 200 and .code != 507')" 0 "the steady client got only 200s and 507s (no 500, no dropped connection)"
is "$(count '.code == 200 and .stdout != .want')" 0 "every 200 carries its own run's output"
is "$(count '.code == 507 and ((.error // "" | test("disk full") | not) or .retry_after == null)')" 0 \
  "every 507 says 'disk full' in its JSON error and has Retry-After"
post_json /v1/runs '{"shell":"echo back","task_id":"after-1"}'
is "$CODE $(jb .run.stdout)" "200 back" "space freed: a run is answered"
req GET /readyz
is "$CODE" 200 "space freed: /readyz 200"
stop_daemon
is "$DAEMON_RC" 0 "the daemon stops cleanly"
is "$(sqlite3 "$DB" 'PRAGMA integrity_check' 2>&1)" ok "the store passes SQLite's integrity check"
acked=$(jq -r 'select(.code == 200) | .task_id' "$TMPD/steady.jsonl" | sort -u)
stored=$(sqlite3 "$DB" "SELECT DISTINCT task_id FROM attempts WHERE task_id LIKE 'steady-%'" 2>&1 | sort -u)
refused=$(jq -r 'select(.code == 507) | .task_id' "$TMPD/steady.jsonl" | sort -u)
missing=$(comm -23 <(echo "$acked") <(echo "$stored") | tr '\n' ' ')
is "$missing" "" "every run answered 200 is in the store ($(echo "$acked" | grep -c .) of them)"
is "$(sqlite3 "$DB" "SELECT count(*) FROM attempts WHERE task_id = 'after-1'")" 1 "the run after the recovery is stored"
# --- file descriptors run out ------------------------------------------------------------------------
# soft = hard: serve raises its soft limit to the hard one, so both are set low
cat >"$TMPD/flood.py" <<'EOF_PY'
# flood.py URL NCONN NSESS NEXTRA: holds NCONN idle connections, asks for NSESS sessions (8 at a
# time) and 6 runs while they are held, then opens NEXTRA more connections (held too, each asked
# for /healthz); prints one JSON summary, then waits for stdin to close before letting go
import http.client, json, socket, sys, threading, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
nconn, nsess, nextra = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
held, conn_err = [], 0
for _ in range(nconn):
    try:
        held.append(socket.create_connection((u.hostname, u.port), timeout=10))
    except OSError:
        conn_err += 1

def call(method, path, body=None):
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        c.request(method, path, json.dumps(body) if body is not None else None,
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, {"raw": data[:200].decode("utf-8", "replace")}
    except Exception as e:
        return 0, {"exc": repr(e)}

sessions, codes, bad, lock = [], {}, [], threading.Lock()
def make_sessions(n):
    for _ in range(n):
        code, body = call("POST", "/v1/sessions", {})
        with lock:
            codes[str(code)] = codes.get(str(code), 0) + 1
            if code == 201:
                sessions.append(body["session_id"])
            elif code != 503 or not body.get("error"):
                bad.append([code, body])
ts = [threading.Thread(target=make_sessions, args=(nsess // 8,)) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
runs = {}
for i in range(6):
    code, body = call("POST", "/v1/runs", {"shell": "echo r%d" % i})
    key = "%d %s" % (code, body.get("failure_class") or "")
    runs[key] = runs.get(key, 0) + 1
extra_ok = extra_refused = 0
for _ in range(nextra):
    try:
        s = socket.create_connection((u.hostname, u.port), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        if s.recv(64).startswith(b"HTTP/1.1 200"):
            extra_ok += 1
        else:
            extra_refused += 1
        held.append(s)
    except OSError:
        extra_refused += 1
print(json.dumps({"held": len(held), "conn_errors": conn_err, "sessions": codes, "bad": bad[:3],
                  "nbad": len(bad), "runs": runs, "extra_ok": extra_ok, "extra_refused": extra_refused,
                  "session_ids": sessions}), flush=True)
sys.stdin.read()
for s in held:
    s.close()
EOF_PY
cpu_ticks() { awk '{print $14 + $15}' "/proc/$DPID/stat"; }
prlimit_start() {
  _ndaemons=$((_ndaemons + 1))
  DLOG=$TMPD/daemon.$_ndaemons.log
  DB=$TMPD/db.$_ndaemons.sqlite
  prlimit --nofile=128:128 "$PADDOCK" serve --listen 127.0.0.1:0 --db "$DB" --workers 2 </dev/null >"$DLOG" 2>&1 &
  DPID=$!
  wait_for 30 grep -q '^paddock: serving on' "$DLOG" || return 1
  U="http://$(sed -n 's/^paddock: serving on //p' "$DLOG" | head -1)"
  wait_for 15 test "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$U/healthz")" = 200 && note_run "$U"
}
healthy() { [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$U/healthz")" = 200 ]; }
prlimit_start
ok $? "daemon under RLIMIT_NOFILE 128 (soft and hard)"
is "$(awk '/Max open files/ {print $4 " " $5}' "/proc/$DPID/limits")" "128 128" "its limit is 128 files"
# the templates ask for 256 files, which a sandbox cannot raise itself to under a hard limit of 128
post_json /v1/runs '{"shell":"ulimit -n"}'
is "$CODE $(jb .status) $(jb .run.stdout)" "200 OK 128" "a run works, its nofile lowered to the daemon's hard limit (128)"

# 40 idle connections, 120 sessions, 6 runs, then 100 connections more: past the 128 files
coproc FLOOD { python3 "$TMPD/flood.py" "$U" 40 120 100; }
read -r -t 90 flood <&"${FLOOD[0]}"
ok $? "the flood is answered within 90 s: refusals are immediate, nothing is left waiting in the backlog"
diag "40 connections held, 120 sessions asked for, 6 runs, 100 more connections: $(jq -c 'del(.session_ids)' <<<"$flood")"
kill -0 "$DPID"
ok $? "the daemon is alive under the flood"
is "$(jq -r '.nbad' <<<"$flood")" 0 "every session is either opened (201) or refused with 503 and a JSON error"
[ "$(jq -r '.sessions."503" // 0' <<<"$flood")" -ge 1 ]
ok $? "sessions past what the fds allow are refused ($(jq -r '.sessions."503" // 0' <<<"$flood") of 120)"
is "$(jq -r '.runs | to_entries | map(select(.key | startswith("0 "))) | length' <<<"$flood")" 0 \
  "every run is answered (no dropped connection): $(jq -c .runs <<<"$flood")"
[ "$(jq -r '.extra_ok' <<<"$flood")" -ge 1 ] && [ "$(jq -r '.extra_refused' <<<"$flood")" -ge 1 ]
ok $? "of 100 more connections, some are served and the rest refused at once, none left hanging"
t0=$(cpu_ticks)
sleep 3
spent=$(( $(cpu_ticks) - t0 ))
[ "$spent" -lt 100 ]
ok $? "while held at the limit the daemon does not spin ($spent ticks of CPU in 3 s)"
# let go: the connections close, the sessions are deleted
eval "exec ${FLOOD[1]}>&-"
wait "$FLOOD_PID" 2>/dev/null
for sid in $(jq -r '.session_ids[]' <<<"$flood"); do curl -s -m 10 -o /dev/null -X DELETE "$U/v1/sessions/$sid"; done
wait_for 30 healthy
ok $? "after the flood: /healthz answers"
readyz() { [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$U/readyz")" = 200 ]; }
wait_for 30 readyz
ok $? "after the flood: /readyz 200 (the breaker, if it opened, closed by itself)"
req GET /metrics
[ "$(awk '$1 == "paddock_fd_refusals_total" {print $2}' "$BODY")" -ge 1 ] &&
  [ "$(awk '$1 == "paddock_connections_refused_total{reason=\"max_connections\"}" {print $2}' "$BODY")" -ge 1 ]
ok $? "/metrics counts the work refused for descriptors and the connections refused at the limit"
post_json /v1/runs '{"shell":"echo normal"}'
is "$CODE $(jb .run.stdout)" "200 normal" "after the flood: a run works"
post_json /v1/sessions '{}'
is "$CODE" 201 "after the flood: a session opens"
r=$(python3 "$TMPD/flood.py" "$U" 40 0 20 </dev/null)
is "$(jq -c '[.held, .conn_errors, .runs, .extra_ok]' <<<"$r")" '[60,0,{"200 none":6},20]' \
  "after the flood: 60 connections and 6 runs, all fine"
stop_daemon
is "$DAEMON_RC" 0 "the daemon stops cleanly"

done_testing
