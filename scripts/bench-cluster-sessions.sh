#!/usr/bin/env bash
# What publishing a session's records costs a cluster node (docs/cluster.md, "A session's
# records"): N session execs of `true`, one after another over one keep-alive connection, through
# a one-node cluster (a nats-server of its own) of this build and of BENCH_OLD (an older paddock),
# in ROUNDS alternating rounds: the round trip's p50, and the daemon's and the broker's CPU per
# exec (user + system from /proc, clock ticks of 10 ms over the whole batch).
# usage: BENCH_OLD=/path/to/older/paddock scripts/bench-cluster-sessions.sh [N [ROUNDS]]   (root)
set -u
cd "$(dirname "$0")/.." || exit 1
N=${1:-1000}
ROUNDS=${2:-3}
NEW=$PWD/bin/paddock
OLD=${BENCH_OLD:?BENCH_OLD=/path/to/an/older/paddock}
D=$(mktemp -d /tmp/bench-cluster-sessions.XXXXXX)
trap 'rm -rf "$D"' EXIT
cat >"$D/steps.py" <<'PY'
import http.client, json, sys, time, statistics
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = http.client.HTTPConnection(host, port)
h = {"Content-Type": "application/json"}
c.request("POST", "/v1/sessions", body=json.dumps({"template": "bash"}), headers=h)
sid = json.loads(c.getresponse().read())["session_id"]
ts = []
for i in range(n):
    t = time.perf_counter()
    c.request("POST", f"/v1/sessions/{sid}/exec", body=json.dumps({"shell": "true"}), headers=h)
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
    ts.append((time.perf_counter() - t) * 1000)
c.request("DELETE", f"/v1/sessions/{sid}")
c.getresponse().read()
print(f"p50 {statistics.median(ts):.2f} ms")
PY
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
per() { awk -v a="$1" -v b="$2" -v n="$N" 'BEGIN { printf "%.2f", (b - a) * 10 / n }'; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for ((round = 1; round <= ROUNDS; round++)); do
  for bin in "$OLD" "$NEW"; do
    P=$(free_port)
    rm -rf "$D/js" "$D"/db.sqlite*
    nats-server -js -sd "$D/js" -a 127.0.0.1 -p "$P" >/dev/null 2>&1 &
    NP=$!
    for ((i = 0; i < 100; i++)); do (exec 3<>"/dev/tcp/127.0.0.1/$P") 2>/dev/null && break; sleep 0.1; done
    "$bin" serve --listen 127.0.0.1:0 --db "$D/db.sqlite" --cluster "nats://127.0.0.1:$P" --node-id bench \
      --warm 1 >"$D/log" 2>&1 &
    SP=$!
    a=""
    for ((i = 0; i < 300; i++)); do
      a=$(sed -n 's/^paddock: serving on //p' "$D/log" | head -1)
      [ -n "$a" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$a/healthz")" = 200 ] && break
      sleep 0.1
    done
    c0=$(cpu $SP)
    b0=$(cpu $NP)
    r=$(python3 "$D/steps.py" "${a%:*}" "${a#*:}" "$N")
    c1=$(cpu $SP)
    b1=$(cpu $NP)
    echo "round $round $([ "$bin" = "$NEW" ] && echo new || echo old): $r; daemon $(per "$c0" "$c1") ms/exec, broker $(per "$b0" "$b1") ms/exec"
    # a SIGTERM may land on a thread other than the one in pause(): sent again until it stops
    for ((i = 0; i < 10; i++)); do kill -TERM $SP 2>/dev/null; sleep 1; kill -0 $SP 2>/dev/null || break; done
    wait $SP
    kill -TERM $NP
    wait $NP
  done
done
