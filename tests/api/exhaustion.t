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
plan 23

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
done_testing
