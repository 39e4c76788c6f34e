#!/usr/bin/env bash
# Connections per client address: --max-connections-per-ip N closes the N+1st connection from one
# address at accept (before any byte is read), leaves every other address alone, counts each
# refusal in paddock_connections_refused_total{reason="max_connections_per_ip"}, and frees the slot
# when a connection closes. The exempt networks (default loopback: the host's own clients) and
# unix-socket clients (no address) are not limited. Client addresses 127.0.0.2, .3 ... are distinct
# loopback sources, bound by the test client.
source "$(dirname "$0")/api.sh"
plan 21

cat >"$TMPD/conns.py" <<'EOF_PY'
# conns.py TARGET SOURCE N [EXTRA]: opens N connections to TARGET (host:port or a unix socket path)
# from SOURCE (an address, or "-"), then EXTRA more; prints one JSON object: how many of the N got
# 200 for GET /healthz over their open connection (asked after all were open), and how many of the
# EXTRA were closed without an answer. Holds the N open until stdin closes if HOLD=1.
import json, os, socket, sys
target, source, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = int(sys.argv[4]) if len(sys.argv) > 4 else 0

def connect():
    if target.startswith("/"):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(target)
        return s
    host, port = target.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(10)
    if source != "-":
        s.bind((source, 0))
    s.connect((host, int(port)))
    return s

def ask(s):
    # one request on an already open connection: 200, or 0 if it was closed on us
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                return 0
            data += chunk
        return int(data.split(b" ", 2)[1])
    except OSError:
        return 0

held = [connect() for _ in range(n)]
# the server sees a connection only once it accepted it: one answered request per held connection
# also proves each was accepted before the extra ones are tried
ok = sum(1 for s in held if ask(s) == 200)
closed = 0
for _ in range(extra):
    s = connect()
    if ask(s) == 0:
        closed += 1
    s.close()
again = sum(1 for s in held if ask(s) == 200)
print(json.dumps({"ok": ok, "refused": closed, "still_ok": again}))
if os.environ.get("HOLD") == "1":
    sys.stdout.flush()
    sys.stdin.read()
for s in held:
    s.close()
EOF_PY
conns() { python3 "$TMPD/conns.py" "$@"; }
metric() { curl -s -m 5 "$U/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }

# --- a low limit, with only 127.0.0.1 exempt -------------------------------------------------------
start_daemon --max-connections-per-ip 4 --per-ip-exempt 127.0.0.1/32
ok $? "daemon with --max-connections-per-ip 4 --per-ip-exempt 127.0.0.1/32"
A=${U#http://}

r=$(conns "$A" 127.0.0.2 4 3)
diag "127.0.0.2, 4 held + 3 more: $r"
is "$(jq -r .ok <<<"$r")" 4 "127.0.0.2: 4 connections (the limit) are served"
is "$(jq -r .refused <<<"$r")" 3 "127.0.0.2: the 5th, 6th and 7th are closed without an answer"
is "$(jq -r .still_ok <<<"$r")" 4 "127.0.0.2: the 4 held connections still work after the refusals"
is "$(metric 'paddock_connections_refused_total{reason="max_connections_per_ip"}')" 3 \
  "/metrics: paddock_connections_refused_total{reason=\"max_connections_per_ip\"} 3"
grep -q '"msg":"connection refused","reason":"max_connections_per_ip","client":"127.0.0.2"' "$DLOG"
ok $? "the refusal is logged with the reason and the client's address"

# while 127.0.0.2 holds its 4, another address has its own 4
coproc HOLDER { HOLD=1 python3 "$TMPD/conns.py" "$A" 127.0.0.2 4 0; }
read -r -t 20 held <&"${HOLDER[0]}"
is "$(jq -r .ok <<<"$held")" 4 "127.0.0.2 holds 4 connections open"
r=$(conns "$A" 127.0.0.3 4 1)
is "$(jq -c '[.ok, .refused]' <<<"$r")" "[4,1]" "meanwhile 127.0.0.3 gets its own 4 (and its 5th is refused)"
r=$(conns "$A" 127.0.0.2 0 2)
is "$(jq -r .refused <<<"$r")" 2 "127.0.0.2, already at 4: new connections refused"
r=$(conns "$A" 127.0.0.1 20 0)
is "$(jq -r .ok <<<"$r")" 20 "127.0.0.1 (exempt): 20 connections at once, all served"
open_now=$(metric paddock_connections_open)
[ "${open_now:-0}" -ge 4 ]
ok $? "/metrics: paddock_connections_open counts the held connections ($open_now)"
eval "exec ${HOLDER[1]}>&-"
wait "$HOLDER_PID" 2>/dev/null
# the held connections are closed: 127.0.0.2 has its slots back
wait_for 10 test "$(metric paddock_connections_open)" -le 1
ok $? "/metrics: paddock_connections_open falls back once the clients close"
r=$(conns "$A" 127.0.0.2 4 0)
is "$(jq -r .ok <<<"$r")" 4 "127.0.0.2: its 4 slots are free again after its connections closed"
is "$(metric 'paddock_connections_refused_total{reason="max_connections_per_ip"}')" 6 \
  "/metrics: 6 refusals in all, none counted twice"
post_json /v1/runs '{"shell":"echo still-fine"}'
is "$(jb .run.stdout)" still-fine "the daemon serves runs as usual"
stop_daemon
is "$DAEMON_RC" 0 "the daemon stops cleanly"

# --- the defaults: loopback is exempt ------------------------------------------------------------
start_daemon
ok $? "daemon with the default limits"
A=${U#http://}
r=$(conns "$A" 127.0.0.2 300 0)
is "$(jq -r .ok <<<"$r")" 300 "defaults: 300 connections from one loopback address, all served (loopback is exempt)"
stop_daemon

# --- no exemption: loopback is limited like any address --------------------------------------------
start_daemon --max-connections-per-ip 2 --per-ip-exempt none
A=${U#http://}
r=$(conns "$A" 127.0.0.1 2 2)
is "$(jq -c '[.ok, .refused]' <<<"$r")" "[2,2]" "--per-ip-exempt none: 127.0.0.1 is limited to 2 too"
stop_daemon

# --- a unix socket: clients have no address, and only the global limit applies ------------------
sock=$TMPD/paddock.sock
"$PADDOCK" serve --listen "unix:$sock" --db "$TMPD/unix.db" --max-connections-per-ip 1 </dev/null >"$TMPD/unix.log" 2>&1 &
upid=$!
cleanup "kill $upid"
wait_for 30 test -S "$sock"
r=$(conns "$sock" - 5 0)
is "$(jq -r .ok <<<"$r")" 5 "unix socket with --max-connections-per-ip 1: 5 clients at once, all served"
kill -TERM "$upid"
wait "$upid"
is "$?" 0 "the unix-socket daemon stops cleanly"

done_testing
