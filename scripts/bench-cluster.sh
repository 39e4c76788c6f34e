#!/usr/bin/env bash
# The cluster path against the local path, on this one machine (docs/cluster.md, "Speed"):
#   1. a single-node daemon (no --cluster) and a one-node cluster (its own nats-server) each take
#      the same /run_code requests (bash: echo) from `paddock run --cluster` (which only posts
#      lines, with X-Request-Id): one at a time (latency p50) and 8 at a time (throughput);
#   2. three nodes with 2 workers each on this host against one broker: throughput of the same
#      batch through one node, limited by the sandboxes, not the broker;
#   3. the broker's own figures (contrib/cluster/jsbench.c): publishes with message ids waiting
#      for their acks, and pulls with acks, per second.
# usage: scripts/bench-cluster.sh [N]   (N requests per measure, default 2000). Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
P=$PWD/bin/paddock
T=$(mktemp -d /tmp/pdk-bench-cluster.XXXXXX)
trap 'for f in "$T"/*.pid; do kill -TERM "$(cat "$f")" 2>/dev/null || true; done; sleep 2; rm -rf "$T"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NP=$(port)
nats-server -js -sd "$T/js" -a 127.0.0.1 -p "$NP" >"$T/nats.log" 2>&1 &
echo $! >"$T/nats.pid"
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$NP) 2>/dev/null && break; sleep 0.1; done
serve() {  # serve NAME ARGS...: prints the address
  local n=$1; shift
  "$P" serve --listen 127.0.0.1:0 --db "$T/$n.db" "$@" >"$T/$n.log" 2>&1 &
  echo $! >"$T/$n.pid"
  for _ in $(seq 300); do
    a=$(sed -n 's/^paddock: serving on //p' "$T/$n.log"); [ -n "$a" ] && break; sleep 0.1
  done
  for _ in $(seq 100); do curl -sf "http://$a/readyz" >/dev/null && break; sleep 0.1; done
  echo "$a"
}
python3 -c "
import json
for i in range($N): print(json.dumps({'schema':'run_code','language':'bash','code':'echo %d' % i}))" >"$T/batch.jsonl"
# CPU time (user + system, in clock ticks) a process has used: where a request's time goes
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
HZ=$(getconf CLK_TCK)
measure() {  # measure LABEL ADDR J DAEMON_PID_FILE
  local d0 n0 d1 n1 dp np
  dp=$(cat "$T/$4.pid"); np=$(cat "$T/nats.pid")
  d0=$(ticks "$dp"); n0=$(ticks "$np")
  "$P" run --cluster "http://$2" -j "$3" -o /dev/null "$T/batch.jsonl" 2>"$T/m.err" || true
  d1=$(ticks "$dp"); n1=$(ticks "$np")
  printf '%-34s -j %-2s %s\n' "$1" "$3" "$(head -1 "$T/m.err" | sed 's/^paddock run --cluster: //')"
  # the daemon's own threads (not its sandboxes) and the broker, per request
  printf '%-40s CPU per request: daemon %s ms, broker %s ms\n' "" \
    "$(echo "scale=3; ($d1 - $d0) * 1000 / $HZ / $N" | bc)" "$(echo "scale=3; ($n1 - $n0) * 1000 / $HZ / $N" | bc)"
}
L=$(serve local --workers 4)
C=$(serve node1 --workers 4 --cluster "nats://127.0.0.1:$NP" --node-id bench1)
echo "== /run_code (bash echo), $N requests each"
for j in 1 8; do
  measure "local path (single node)" "$L" $j local
  measure "cluster path (one node + broker)" "$C" $j node1
done
kill -TERM "$(cat "$T/local.pid")" "$(cat "$T/node1.pid")"; rm "$T/local.pid" "$T/node1.pid"; sleep 2
echo "== three nodes (2 workers each) on this host, the batch through one"
A=$(serve n1 --workers 2 --cluster "nats://127.0.0.1:$NP" --node-id bench-a)
serve n2 --workers 2 --cluster "nats://127.0.0.1:$NP" --node-id bench-b >/dev/null
serve n3 --workers 2 --cluster "nats://127.0.0.1:$NP" --node-id bench-c >/dev/null
measure "3 nodes, through one" "$A" 12 n1
echo "== the broker"
cc -O2 -o "$T/jsbench" contrib/cluster/jsbench.c -lnats
"$T/jsbench" "nats://127.0.0.1:$NP" 20000
