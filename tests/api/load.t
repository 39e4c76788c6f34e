#!/usr/bin/env bash
# Load and robustness: 1,000 connections open at once all answered; slow clients (slowloris) do not
# hold up others; sandboxes that exhaust memory, processes, disk and output leave the daemon
# working; SIGTERM finishes and answers the work in flight and the store has its rows.
source "$(dirname "$0")/api.sh"
plan 24

# the test process and the daemon it starts need room for 1,000+ sockets
if [ "$(ulimit -Sn)" != unlimited ] && [ "$(ulimit -Sn)" -lt 4096 ]; then
  ulimit -n 4096 2>/dev/null || ulimit -Sn "$(ulimit -Hn)"
fi
diag "RLIMIT_NOFILE $(ulimit -Sn)"

# templates whose defaults are small: bash with a low pids limit (for the fork bomb)
cat >"$TMPD/templates.json" <<'EOF'
{"templates": [
  {"name": "bash", "requires": ["bash"], "cwd": "/work",
   "limits": {"pids": 64, "memory": "256M", "disk": "64M", "wall_time": 20}},
  {"name": "python", "requires": ["python3"], "cwd": "/work",
   "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8"},
   "limits": {"memory": "256M"}}
]}
EOF
start_daemon --templates "$TMPD/templates.json"
ok $? "daemon started (bash template: pids 64, memory 256M, disk 64M)"

# --- 1,000 connections at once --------------------------------------------------------------------
cat >"$TMPD/conns.py" <<'EOF'
import selectors, socket, sys, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1]); n = int(sys.argv[2])
deadline = time.time() + 40
socks = []
for i in range(n):
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    socks.append(s)
# every connection is open before any request is sent
for i, s in enumerate(socks):
    path = "/v1/ping" if i % 2 else "/healthz"
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
    s.setblocking(False)
sel = selectors.DefaultSelector()
bufs = {}
for i, s in enumerate(socks):
    sel.register(s, selectors.EVENT_READ, i)
    bufs[i] = b""
open_ = n
while open_ and time.time() < deadline:
    for key, _ in sel.select(timeout=1):
        try:
            d = key.fileobj.recv(65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            d = b""
        if d:
            bufs[key.data] += d
        else:
            sel.unregister(key.fileobj); key.fileobj.close(); open_ -= 1
ok = sum(1 for i in range(n) if bufs[i].startswith(b"HTTP/1.1 200") and
         (b'"pong"' in bufs[i] if i % 2 else b'"ok"' in bufs[i]))
bad = [bufs[i][:60] for i in range(n) if not bufs[i].startswith(b"HTTP/1.1 200")][:3]
print(ok, open_, repr(bad))
EOF
read -r nok nopen bad < <(timeout 60 python3 "$TMPD/conns.py" "$U" 1000 2>&1 | tail -1)
is "$nok" 1000 "1,000 connections open at once: every one answered 200 with its body"
is "$nopen" 0 "1,000 connections: the daemon closed each after answering (Connection: close)"
[ "$nok" = 1000 ] || diag "bad answers: $bad"
req GET /healthz
is "$CODE" 200 "healthy after 1,000 connections"
post_json /v1/runs '{"cmd":["echo","after-1000"]}'
is "$(jb .run.stdout)" after-1000 "a run works after 1,000 connections"

# --- slow clients do not starve the others ---------------------------------------------------------
cat >"$TMPD/slowloris.py" <<'EOF'
# 50 connections trickle a POST /v1/runs one byte every 0.2 s while 100 normal runs are made on 8
# threads. When the normal runs are done (or 40 s pass), the slow ones send the rest at once and
# must be answered too. Prints: normal_ok slow_still_trickling slow_ok elapsed
import http.client, json, socket, sys, threading, time, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
body = json.dumps({"cmd": ["echo", "slow"]}).encode()
req = (b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
       b"Content-Length: %d\r\n\r\n" % len(body)) + body
slow = [socket.create_connection((u.hostname, u.port), timeout=30) for _ in range(50)]
sent = [0] * len(slow)
done = threading.Event()
def trickle():
    end = time.time() + 40
    while not done.is_set() and time.time() < end:
        for i, s in enumerate(slow):
            if sent[i] < len(req) - 1:  # never the last byte while trickling
                s.send(req[sent[i]:sent[i] + 1]); sent[i] += 1
        time.sleep(0.2)
t = threading.Thread(target=trickle); t.start()
time.sleep(1)  # the slow clients are mid-request
results = []
lock = threading.Lock()
def normal(k):
    for j in range(k, 100, 8):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        try:
            c.request("POST", "/v1/runs", json.dumps({"cmd": ["echo", "n%d" % j]}), {"Content-Type": "application/json"})
            r = c.getresponse(); d = json.loads(r.read())
            good = r.status == 200 and d["run"]["stdout"] == "n%d\n" % j
        except Exception:
            good = False
        finally:
            c.close()
        with lock:
            results.append(good)
t0 = time.time()
ws = [threading.Thread(target=normal, args=(k,)) for k in range(8)]
for w in ws: w.start()
for w in ws: w.join(90)
elapsed = time.time() - t0
still = sum(1 for i in range(len(slow)) if sent[i] < len(req) - 1) if t.is_alive() else 0
done.set(); t.join()
slow_ok = 0
for i, s in enumerate(slow):
    try:
        s.sendall(req[sent[i]:])
        s.settimeout(60)
        data = b""
        while True:
            d = s.recv(65536)
            if not d: break
            data += d
        if data.startswith(b"HTTP/1.1 200") and b'"stdout":"slow\\n"' in data:
            slow_ok += 1
    except OSError:
        pass
    s.close()
print(sum(results), still, slow_ok, "%.1f" % elapsed)
EOF
read -r normal_ok still slow_ok elapsed < <(timeout 150 python3 "$TMPD/slowloris.py" "$U" 2>&1 | tail -1)
diag "100 normal runs took ${elapsed}s beside 50 slow clients"
is "$normal_ok" 100 "100 normal runs all answered correctly beside 50 slowloris connections"
is "$still" 50 "...while all 50 slow clients were still mid-request (nobody waited for them)"
awk -v e="$elapsed" 'BEGIN { exit !(e != "" && e < 60) }'
ok $? "...within a generous bound (${elapsed}s < 60s)"
is "$slow_ok" 50 "the slow clients, once they finish sending, are answered too"

# --- sandboxes that exhaust resources -------------------------------------------------------
post_json /v1/runs '{"language":"python","code":"a = []\nwhile True:\n    a.append(bytearray(16 * 1024 * 1024))"}'
is "$(jb '[.failure_class, .status] | join(" ")')" "oom ML" "memory exhaustion: oom, ML"
post_json /v1/runs '{"shell":"f() { f | f & }; f; sleep 2; echo survived","limits":{"wall_time":8}}'
is "$CODE" 200 "fork bomb: answered"
pp=$(jb .run.pids_peak)
[[ $pp =~ ^[0-9]+$ ]] && [ "$pp" -le 64 ] && [ "$pp" -ge 10 ]
ok $? "fork bomb: held at the template's pids limit (peak $pp <= 64)"
post_json /v1/runs '{"shell":"dd if=/dev/zero of=/tmp/fill bs=1M count=1000 2>&1 | tail -1; df -k /tmp | tail -1"}'
like "$(jb .run.stdout)" '(No space left|100%)' "disk exhaustion: the sandbox's disk fills (ENOSPC), not the host's"
post_json /v1/runs '{"cmd":["yes","flood"]}'
is "$(jb '[.failure_class, .status] | join(" ")')" "output_limit OL" "output flood: output_limit, OL"
post_json /v1/runs '{"shell":"i=0; while [ $i -lt 2000 ]; do : > /tmp/f$i; i=$((i+1)); done; ls /tmp | wc -l"}'
is "$(jb .run.stdout)" 2000 "many files in one sandbox: fine"
post_json /v1/runs '{"cmd":["echo","normal again"]}'
is "$(jb '[.status, .run.stdout] | join(" ")')" "OK normal again" "after all of that a normal run succeeds"
req GET /healthz
is "$CODE" 200 "and the daemon is healthy"
settled() {
  curl -s -m 5 "$U/v1/pools" | jq -e '[.pools[] | .in_use + .reclaiming + .creating] | add == 0' >/dev/null
}
wait_for 30 settled
ok $? "every sandbox was handed back and torn down (in_use, reclaiming, creating all 0)"
is "$(curl -s -m 5 "$U/v1/pools" | jq '[.pools[].residue_failures] | add')" 0 "no teardown left residue"

# --- graceful shutdown ------------------------------------------------------------------------------
cat >"$TMPD/inflight.py" <<'EOF'
import http.client, json, sys, threading, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
out = [None] * 5
def go(i):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        c.request("POST", "/v1/runs", json.dumps({"shell": "sleep 1; echo finished-%d" % i, "task_id": "shutdown-%d" % i}),
                  {"Content-Type": "application/json"})
        r = c.getresponse(); d = r.read()
        ok = r.status == 200 and json.loads(d)["run"]["stdout"] == "finished-%d\n" % i
        out[i] = "ok" if ok else "bad:%d:%s" % (r.status, d[:100])
    except Exception as e:
        out[i] = "error:" + repr(e)
ts = [threading.Thread(target=go, args=(i,)) for i in range(5)]
for t in ts: t.start()
for t in ts: t.join(90)
print(" ".join(o or "none" for o in out))
EOF
python3 "$TMPD/inflight.py" "$U" >"$TMPD/inflight.out" 2>&1 &
inflight=$!
admitted() {
  curl -s -m 5 "$U/metrics" | awk '/^paddock_workers_busy / { b = $2 } /^paddock_queue_length/ { q += $2 } END { exit !(b + q == 5) }'
}
wait_for 10 admitted
ok $? "five 1 s runs admitted (running or queued)"
kill -TERM "$DPID"
sleep 0.3
late=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{"cmd":["true"]}' "$U/v1/runs")
like "$late" '^(000|503)$' "a new request after SIGTERM is refused (HTTP $late)"
wait "$inflight"
is "$(cat "$TMPD/inflight.out")" "ok ok ok ok ok" "all five in-flight runs got a complete 200 answer"
stop_daemon 30
is "$DAEMON_RC" 0 "the daemon exited 0 after draining"
rows=$(sqlite3 "$DB" "SELECT COUNT(*) FROM attempts WHERE task_id LIKE 'shutdown-%' AND failure_class = 'none' AND status = 'OK'" 2>&1)
is "$rows" 5 "the store has the five rows"

done_testing
