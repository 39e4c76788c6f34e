#!/usr/bin/env bash
# The cluster path against the local path, on this one machine (docs/cluster.md, "Speed"):
#   1. a single-node daemon (no --cluster) and a one-node cluster (its own nats-server) take the
#      same /run_code requests (bash: echo) from `paddock run --cluster` (which only posts lines,
#      with X-Request-Id): one at a time (latency) and 8 at a time (throughput), in ROUNDS
#      alternating rounds; with BENCH_OLD=/path/to/an/older/paddock its one-node cluster (on a
#      broker of its own) takes part in the same rounds. Prints each round, then the median and
#      the range of each figure, and the cluster path against the local path;
#   2. the scale simulation: NODES nodes with tiny pools (1 worker each) on this host and one
#      broker, the batch split across them, against one single-node daemon with NODES workers:
#      when the two rates match, the sandboxes limit the throughput, not the broker; with the
#      broker's own messages/s and CPU during it (from its monitoring endpoint);
#   3. the broker alone (contrib/cluster/jsbench.c): publishes with message ids waiting for their
#      acks, and pulls with acks, per second: the ceiling the messages/s of 2. are measured against.
# usage: [BENCH_OLD=bin] [NODES=4] [BENCH_LANG=bash|python|cpp] [BENCH_ONLY=1] scripts/bench-cluster.sh [N [ROUNDS]]
# (N requests per measure, default 1000; ROUNDS default 3; BENCH_LANG: section 1's program, bash's
# echo (default: the cluster path's cost at its largest share), python's print, the program of
# paddock bench --http, or cpp: a judged C++ submission through POST /v1/judge, each with its own
# source (use a small N: each compiles); BENCH_ONLY=1: section 1 alone). Needs root (the daemons
# make sandboxes). CPU per request (the daemon's, the broker's: user + system from /proc) is the
# figure a loaded machine disturbs least; the cluster node's includes publishing its records to
# the shared record stream (docs/cluster.md). Each measure also counts, a request, the daemon's
# context switches (its threads' voluntary and involuntary, /proc) and the broker's messages in
# and out (its monitoring endpoint): what the cluster path's CPU mostly goes to, and not a rate.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
ROUNDS=${2:-3}
NODES=${NODES:-4}
P=$PWD/bin/paddock
OLD=${BENCH_OLD:-}
LANG_=${BENCH_LANG:-bash}
case $LANG_ in
bash) CODE='echo %d' ;;
python) CODE='print(%d)' ;;
cpp) CODE='a judged C++ submission (POST /v1/judge), each its own source' ;;
*) echo "BENCH_LANG: bash, python or cpp" >&2; exit 64 ;;
esac
T=$(mktemp -d /tmp/pdk-bench-cluster.XXXXXX)
stop_all() {
  local f
  for f in "$T"/*.pid; do [ -e "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null; done
  for f in "$T"/*.pid; do
    [ -e "$f" ] || continue
    for _ in $(seq 100); do kill -0 "$(cat "$f")" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}
trap 'stop_all; rm -rf "$T"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
broker() {  # broker NAME: starts a nats-server; prints "PORT MONITOR_PORT"
  local p m
  p=$(port); m=$(port)
  nats-server -js -sd "$T/js.$1" -a 127.0.0.1 -p "$p" -m "$m" >"$T/nats.$1.log" 2>&1 &
  echo $! >"$T/nats.$1.pid"
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.1; done
  echo "$m" >"$T/nats.$1.mport"
  echo "$p $m"
}
serve() {  # serve NAME BINARY ARGS...: prints the address
  local n=$1 b=$2 a=""
  shift 2
  "$b" serve --listen 127.0.0.1:0 --db "$T/$n.db" "$@" >"$T/$n.log" 2>&1 &
  echo $! >"$T/$n.pid"
  for _ in $(seq 300); do
    a=$(sed -n 's/^paddock: serving on //p' "$T/$n.log"); [ -n "$a" ] && break; sleep 0.1
  done
  for _ in $(seq 100); do curl -sf "http://$a/readyz" >/dev/null && break; sleep 0.1; done
  echo "$a"
}
if [ "$LANG_" = cpp ]; then
  # one judged C++ submission a line, each its own source (no compile is shared)
  python3 -c "
import json
src = '#include <iostream>\\nint main() { long x; std::cin >> x; std::cout << x * x << \"\\\\n\"; } // %d\\n'
for i in range($N):
    print(json.dumps({'problem': {'tests': [{'input': '3\\n', 'output': '9\\n'}]}, 'language': 'cpp', 'code': src % i}))" >"$T/batch.jsonl"
else
  python3 -c "
import json
for i in range($N): print(json.dumps({'schema':'run_code','language':'$LANG_','code':'$CODE' % i}))" >"$T/batch.jsonl"
fi
# the judged workload's client: POST /v1/judge, J at a time, each with a request id of its own;
# prints a summary line as paddock run --cluster does (rate, p50, p90)
cat >"$T/judge.py" <<'EOF_PY'
import concurrent.futures, http.client, json, statistics, sys, time, uuid
addr, j, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = open(path).read().splitlines()
tag = uuid.uuid4().hex[:12]
host, port = addr.rsplit(":", 1)
def one(i):
    # the source made this measure's own: no compile of an earlier measure is reused
    b = json.loads(lines[i]); b["code"] += "// %s\n" % tag
    c = http.client.HTTPConnection(host, int(port), timeout=600)
    t0 = time.monotonic()
    c.request("POST", "/v1/judge", json.dumps(b), {"Content-Type": "application/json", "X-Request-Id": "%s-%d" % (tag, i)})
    r = c.getresponse(); body = r.read(); c.close()
    ok = r.status == 200 and json.loads(body).get("reward") == 1
    return (time.monotonic() - t0) * 1000, ok
t0 = time.monotonic()
with concurrent.futures.ThreadPoolExecutor(j) as ex:
    res = list(ex.map(one, range(len(lines))))
s = time.monotonic() - t0
lat = sorted(r[0] for r in res)
bad = sum(1 for r in res if not r[1])
print("judged %d (%d not passed) in %.1f s: %.1f/s; p50 %.1f ms, p90 %.1f ms" % (len(lines), bad, s, len(lines) / s,
      lat[len(lat) // 2], lat[int(len(lat) * 0.9)]), file=sys.stderr)
EOF_PY
# CPU time (user + system, in clock ticks) a process has used: where a request's time goes
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
HZ=$(getconf CLK_TCK)
# the context switches of a process's threads (those alive at both reads: the daemon's own, not
# its sandboxes'), voluntary and not: each is a thread woken or preempted, what most of the
# cluster path's CPU goes to (docs/cluster.md, "where the time goes")
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s + 0}'; }
# the broker's messages in and out (its monitoring endpoint), 0 without a broker
msgs() {
  [ -e "$T/nats.$1.mport" ] || { echo 0; return; }
  curl -s "http://127.0.0.1:$(cat "$T/nats.$1.mport")/varz" |
    python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["in_msgs"] + v["out_msgs"])' 2>/dev/null || echo 0
}
# measure KEY ADDR J DAEMON BROKER: one measure; appends "KEY rate p50 p90 daemon_ms broker_ms
# switches messages" (the last two a request) to $T/results and prints the round's line
measure() {
  local d0 n0 d1 n1 dp np line rate p50 p90 dms bms s0 s1 m0 m1 sw ms
  dp=$(cat "$T/$4.pid"); np=$(cat "$T/nats.$5.pid" 2>/dev/null || echo 0)
  s0=$(switches "$dp"); m0=$(msgs "$5")
  d0=$(ticks "$dp"); n0=$(ticks "$np")
  if [ "$LANG_" = cpp ]; then
    python3 "$T/judge.py" "$2" "$3" "$T/batch.jsonl" 2>"$T/m.err" || true
  else
    "$P" run --cluster "http://$2" -j "$3" -o /dev/null "$T/batch.jsonl" 2>"$T/m.err" || true
  fi
  d1=$(ticks "$dp"); n1=$(ticks "$np")
  s1=$(switches "$dp"); m1=$(msgs "$5")
  line=$(head -1 "$T/m.err")
  rate=$(sed -n 's/.*s: \([0-9.]*\)\/s;.*/\1/p' <<<"$line")
  p50=$(sed -n 's/.*p50 \([0-9.]*\) ms.*/\1/p' <<<"$line")
  p90=$(sed -n 's/.*p90 \([0-9.]*\) ms.*/\1/p' <<<"$line")
  dms=$(echo "scale=3; ($d1 - $d0) * 1000 / $HZ / $N" | bc)
  bms=$(echo "scale=3; ($n1 - $n0) * 1000 / $HZ / $N" | bc)
  sw=$(echo "scale=1; ($s1 - $s0) / $N" | bc)
  ms=$(echo "scale=1; ($m1 - $m0) / $N" | bc)
  echo "$1 ${rate:-0} ${p50:-0} ${p90:-0} $dms $bms $sw $ms" >>"$T/results"
  printf '  %-22s %7s/s  p50 %5s ms  p90 %5s ms  CPU/req: daemon %s ms, broker %s ms; a request: %s switches, %s messages\n' \
    "$1" "${rate:-0}" "${p50:-?}" "${p90:-?}" "$dms" "$bms" "$sw" "$ms"
}

read -r NP _ < <(broker new)
L=$(serve local "$P" --workers 4)
C=$(serve node "$P" --workers 4 --cluster "nats://127.0.0.1:$NP" --node-id bench1)
KEYS="local cluster"
if [ -n "$OLD" ]; then
  read -r OP _ < <(broker old)
  O=$(serve oldnode "$OLD" --workers 4 --cluster "nats://127.0.0.1:$OP" --node-id bench1)
  KEYS="local cluster cluster-old"
fi
# the steady cost with no request at all (the node's heartbeat, its pullers' waiting pulls, the
# recorder's look each second; the broker serving them), CPU ms a second: what a slow workload's
# CPU per request includes besides the requests' own (a judged submission at 2/s: half of it)
idle_ms() { echo "scale=2; ($2 - $1) * 1000 / $HZ / 20" | bc; }
il0=$(ticks "$(cat "$T/local.pid")"); in0=$(ticks "$(cat "$T/node.pid")"); ib0=$(ticks "$(cat "$T/nats.new.pid")")
sleep 20
il1=$(ticks "$(cat "$T/local.pid")"); in1=$(ticks "$(cat "$T/node.pid")"); ib1=$(ticks "$(cat "$T/nats.new.pid")")
echo "== idle, 20 s: CPU ms a second: local daemon $(idle_ms "$il0" "$il1"), cluster node $(idle_ms "$in0" "$in1"), broker $(idle_ms "$ib0" "$ib1")"
echo "== 1. /run_code ($LANG_: $CODE), $N requests a measure, 4 workers a daemon, $ROUNDS alternating rounds"
for r in $(seq "$ROUNDS"); do
  # the order turns each round: no path always runs first (or right after another)
  set -- $KEYS
  for _ in $(seq $(((r - 1) % $#))); do set -- "${@:2}" "$1"; done
  for j in 1 8; do
    echo "round $r, $j client(s) at a time"
    for k in "$@"; do
      case $k in
      local) measure "local-j$j" "$L" "$j" local none ;;
      cluster) measure "cluster-j$j" "$C" "$j" node new ;;
      cluster-old) measure "cluster-old-j$j" "$O" "$j" oldnode old ;;
      esac
    done
  done
done
stop_all
python3 - "$T/results" <<'EOF_PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    k, *v = line.split()
    rows.setdefault(k, []).append([float(x) for x in v])
def med(k, i): return statistics.median(r[i] for r in rows[k])
def rng(k, i): return "%g-%g" % (min(r[i] for r in rows[k]), max(r[i] for r in rows[k]))
print("== medians (ranges) over the rounds")
print("  %-16s %-20s %-18s %-10s %-14s %-14s %-9s %s" % ("path", "requests/s", "p50 ms", "p90 ms", "daemon CPU/req",
      "broker CPU/req", "switches", "messages"))
for k in sorted(rows):
    print("  %-16s %-20s %-18s %-10g %-14s %-14s %-9g %g" % (k, "%.0f (%s)" % (med(k, 0), rng(k, 0)),
          "%g (%s)" % (med(k, 1), rng(k, 1)), med(k, 2), "%.2f ms" % med(k, 3), "%.2f ms" % med(k, 4), med(k, 5),
          med(k, 6)))
for c in ("cluster", "cluster-old"):
    if c + "-j8" in rows:
        print("  %-12s throughput %.2fx the local path's (8 clients); p50 %+.1f ms against it (1 client); daemon"
              " CPU/req %+.2f ms (8 clients), %+.2f ms (1 client); switches %+g, %+g a request" % (
            c, med(c + "-j8", 0) / med("local-j8", 0), med(c + "-j1", 1) - med("local-j1", 1),
            med(c + "-j8", 3) - med("local-j8", 3), med(c + "-j1", 3) - med("local-j1", 3),
            med(c + "-j8", 5) - med("local-j8", 5), med(c + "-j1", 5) - med("local-j1", 5)))
EOF_PY

[ "${BENCH_ONLY:-}" = 1 ] && exit 0
echo "== 2. scale simulation: $NODES nodes of 1 worker each on this host, one broker, the batch split across them"
read -r SP SM < <(broker scale)
: >"$T/results"
ADDRS=()
for i in $(seq "$NODES"); do ADDRS+=("$(serve "s$i" "$P" --workers 1 --cluster "nats://127.0.0.1:$SP" --node-id "sim$i")"); done
S=$(serve single "$P" --workers "$NODES")
split -n "l/$NODES" -d "$T/batch.jsonl" "$T/part."
varz() { curl -s "http://127.0.0.1:$SM/varz" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["in_msgs"] + v["out_msgs"])'; }
for r in $(seq "$ROUNDS"); do
  m0=$(varz); b0=$(ticks "$(cat "$T/nats.scale.pid")"); t0=$(date +%s.%N)
  i=0
  for a in "${ADDRS[@]}"; do
    "$P" run --cluster "http://$a" -j 2 -o /dev/null "$T/part.$(printf %02d $i)" 2>"$T/s.$i.err" &
    i=$((i + 1))
  done
  wait
  t1=$(date +%s.%N); m1=$(varz); b1=$(ticks "$(cat "$T/nats.scale.pid")")
  python3 - "$t0" "$t1" "$m0" "$m1" "$b0" "$b1" "$HZ" "$N" "$NODES" <<'EOF_PY' | tee -a "$T/scale"
import sys
t0, t1, m0, m1, b0, b1, hz, n, nodes = map(float, sys.argv[1:])
s = t1 - t0
print("  %-22s %7.1f/s  broker: %.0f messages/s (%.1f a request), %.0f%% of a core" % (
      "cluster-%dx1" % nodes, n / s, (m1 - m0) / s, (m1 - m0) / n, (b1 - b0) / hz / s * 100))
EOF_PY
  measure "single-daemon-x$NODES" "$S" $((2 * NODES)) single none
done
stop_all
python3 - "$T/scale" "$T/results" <<'EOF_PY'
import re, statistics, sys
cl = [float(re.search(r"([0-9.]+)/s", l).group(1)) for l in open(sys.argv[1])]
mps = [float(re.search(r"broker: ([0-9.]+) messages/s", l).group(1)) for l in open(sys.argv[1])]
sd = [float(l.split()[1]) for l in open(sys.argv[2])]
print("  medians: the cluster %.0f/s (%g-%g), one daemon with as many workers %.0f/s (%g-%g): %.2fx;"
      " the broker at %.0f messages/s" % (statistics.median(cl), min(cl), max(cl), statistics.median(sd), min(sd),
      max(sd), statistics.median(cl) / statistics.median(sd), statistics.median(mps)))
EOF_PY

echo "== 3. the broker alone"
read -r BP _ < <(broker alone)
cc -O2 -o "$T/jsbench" contrib/cluster/jsbench.c -lnats
"$T/jsbench" "nats://127.0.0.1:$BP" 20000
