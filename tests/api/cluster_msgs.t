#!/usr/bin/env bash
# The cluster path's messages a request (issue 41, docs/cluster.md "Speed"): every message is a
# wake-up of the node's libnats reader and of a thread it hands the message to, and those
# wake-ups are most of what cluster mode adds to a request's CPU. One client at a time through a
# one-node cluster, the broker's own count (its monitoring endpoint, in + out): the publish and
# its ack, the pull and the delivery, the claim and its ack, the task's ack, the record and its
# ack: 9. A pull for several tasks when none is queued ended with a "no messages" status besides
# (10 a request before the puller asked for what its consumer had queued); the idle traffic of
# the run's second or two (heartbeats, the pullers' expiring pulls) is measured apart and taken off.
source "$(dirname "$0")/api.sh"
source "$(dirname "$0")/nats.sh"

nats_or_skip
plan 4

nats_start
ok $? "nats-server with JetStream on 127.0.0.1:$NPORT"

declare -A NPID NURL
cleanup 'for n in "${!NPID[@]}"; do kill -KILL "${NPID[$n]}" 2>/dev/null; wait "${NPID[$n]}" 2>/dev/null; done'
cluster_node m1
ok $? "a node joined"

msgs() {
  curl -s "http://127.0.0.1:$MPORT/varz" |
    python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["in_msgs"] + v["out_msgs"])'
}
batch() {  # batch N FILE: N bash echo requests
  python3 -c "
import json
for i in range($1): print(json.dumps({'schema': 'run_code', 'language': 'bash', 'code': 'echo %d' % i}))" >"$2"
}
N=200
batch 20 "$TMPD/warm.jsonl"
batch "$N" "$TMPD/batch.jsonl"
# warm: the pools' sandboxes made, the pullers' first pulls and the async publish's inbox set up
"$PADDOCK" run --cluster "${NURL[m1]}" -j 1 -o /dev/null "$TMPD/warm.jsonl" 2>/dev/null
m0=$(msgs) t0=$(date +%s.%N)
"$PADDOCK" run --cluster "${NURL[m1]}" -j 1 -o "$TMPD/out.jsonl" "$TMPD/batch.jsonl" 2>"$TMPD/run.err"
m1=$(msgs) t1=$(date +%s.%N)
# the idle traffic's rate (heartbeats, expiring pulls), over a window of its own, taken off the
# batch's count for as long as the batch took: on a loaded machine a slow batch would otherwise
# count seconds of idle messages as the requests' (a measurement window, not a wait)
i0=$(msgs) w0=$(date +%s.%N)
sleep 3
i1=$(msgs) w1=$(date +%s.%N)
idle=$(python3 -c "print(int(($i1 - $i0 - 2) / ($w1 - $w0) * ($t1 - $t0)))")  # 2: the varz reads' own
diag "idle traffic over the batch's $(python3 -c "print('%.1f' % ($t1 - $t0))") s: $idle messages"
m1=$((m1 - idle))
good=$(python3 -c "
import json, sys
n = 0
for l in open('$TMPD/out.jsonl'):
    r = json.loads(l)
    n += r.get('status') == 'Success' and r.get('run_result', {}).get('stdout', '').strip() != ''
print(n)" 2>/dev/null)
is "$good" "$N" "$N requests one at a time through the node, each answered with its output"
per=$(python3 -c "print('%.2f' % (($m1 - $m0) / $N))")
diag "the broker's messages a request: $per ($((m1 - m0)) for $N)"
python3 -c "import sys; sys.exit(0 if $per <= 9.5 else 1)"
ok $? "at most 9.5 broker messages a request at one client (measured $per; 10 and more before)"
