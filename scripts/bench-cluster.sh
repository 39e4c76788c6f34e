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
measure() {  # measure LABEL ADDR J
  "$P" run --cluster "http://$2" -j "$3" -o /dev/null "$T/batch.jsonl" 2>"$T/m.err" || true
  printf '%-34s -j %-2s %s\n' "$1" "$3" "$(head -1 "$T/m.err" | sed 's/^paddock run --cluster: //')"
}
L=$(serve local --workers 4)
C=$(serve node1 --workers 4 --cluster "nats://127.0.0.1:$NP" --node-id bench1)
echo "== /run_code (bash echo), $N requests each"
for j in 1 8; do
  measure "local path (single node)" "$L" $j
  measure "cluster path (one node + broker)" "$C" $j
done
kill -TERM "$(cat "$T/local.pid")" "$(cat "$T/node1.pid")"; rm "$T/local.pid" "$T/node1.pid"; sleep 2
echo "== three nodes (2 workers each) on this host, the batch through one"
A=$(serve n1 --workers 2 --cluster "nats://127.0.0.1:$NP" --node-id bench-a)
serve n2 --workers 2 --cluster "nats://127.0.0.1:$NP" --node-id bench-b >/dev/null
serve n3 --workers 2 --cluster "nats://127.0.0.1:$NP" --node-id bench-c >/dev/null
measure "3 nodes, through one" "$A" 12
echo "== the broker"
cc -O2 -o "$T/jsbench" contrib/cluster/jsbench.c -lnats
"$T/jsbench" "nats://127.0.0.1:$NP" 20000
