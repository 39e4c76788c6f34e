#!/usr/bin/env bash
# Cluster mode (issue 25, docs/cluster.md): three nodes and their own nats-server with JetStream
# (file storage) on loopback. A batch of 2,000 mixed requests through one node: every request
# answered once, every record stored once across the nodes' stores; the same with a node killed
# (SIGKILL) mid-batch and restarted, and with the broker restarted mid-batch. A request id given
# twice, through two nodes, runs once. Sessions made through node A are used through B and C, and
# answer 410 once A is gone. GET /v1/cluster lists the nodes; /metrics counts per node.
source "$(dirname "$0")/api.sh"
source "$(dirname "$0")/nats.sh"

nats_or_skip
plan 36

NPORT=$(free_port)
NATS_PID=""
start_nats() {
  nats-server -js -sd "$TMPD/js" -a 127.0.0.1 -p "$NPORT" >>"$TMPD/nats.log" 2>&1 &
  NATS_PID=$!
  wait_for 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$NPORT" 2>/dev/null
}
stop_nats() { [ -n "$NATS_PID" ] && kill -TERM "$NATS_PID" 2>/dev/null; wait "$NATS_PID" 2>/dev/null; NATS_PID=""; }
cleanup 'stop_nats'

declare -A NPID NURL
_nlog=0
# start_node NAME: a node of the cluster, its store at $TMPD/db.NAME.sqlite; sets NURL[NAME]
start_node() {
  local n=$1 log addr="" i
  _nlog=$((_nlog + 1))
  log=$TMPD/daemon.$n.$_nlog.log
  "$PADDOCK" serve --listen 127.0.0.1:0 --db "$TMPD/db.$n.sqlite" --cluster "nats://127.0.0.1:$NPORT" \
    --node-id "$n" --cluster-ack-wait 3 --warm 1 </dev/null >"$log" 2>&1 &
  NPID[$n]=$!
  for ((i = 0; i < 300; i++)); do
    addr=$(sed -n 's/^paddock: serving on //p' "$log" | head -1)
    [ -n "$addr" ] && break
    kill -0 "${NPID[$n]}" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$addr" ] || { diag "node $n did not start: $(tail -c 400 "$log")"; return 1; }
  NURL[$n]=http://$addr
  wait_for 20 bash -c "[ \"\$(curl -s -m 2 -o /dev/null -w '%{http_code}' ${NURL[$n]}/healthz)\" = 200 ]" &&
    note_run "${NURL[$n]}"
}
kill_node() { kill -KILL "${NPID[$1]}" 2>/dev/null; wait "${NPID[$1]}" 2>/dev/null; }
stop_node() { kill -TERM "${NPID[$1]}" 2>/dev/null; wait "${NPID[$1]}" 2>/dev/null; }
cleanup 'for n in "${!NPID[@]}"; do kill -KILL "${NPID[$n]}" 2>/dev/null; done'

# records across the nodes' stores, by request id: "TOTAL DISTINCT MAX_PER_ID" for ids with PREFIX
cat >"$TMPD/records.py" <<'EOF_PY'
import glob, sqlite3, sys, collections
prefix = sys.argv[1]
n = collections.Counter()
for db in glob.glob(sys.argv[2] + "/db.*.sqlite"):
    c = sqlite3.connect(db, timeout=30)
    for (rid,) in c.execute("SELECT request_id FROM attempts WHERE request_id LIKE ?", (prefix + "%",)):
        n[rid] += 1
print(sum(n.values()), len(n), max(n.values()) if n else 0)
EOF_PY
records() { python3 "$TMPD/records.py" "$1" "$TMPD"; }
records_total() { records "$1" | cut -d' ' -f1; }

# the batch: 2,000 cheap requests of three kinds (native language, SandboxFusion, native cmd)
make_batch() {  # make_batch TAG FILE
  python3 - "$1" >"$2" <<'EOF_PY'
import json, sys
tag = sys.argv[1]
for i in range(2000):
    rid = "%s-%d" % (tag, i)
    if i % 3 == 0:
        print(json.dumps({"request_id": rid, "language": "bash", "code": "echo %s" % rid}))
    elif i % 3 == 1:
        print(json.dumps({"schema": "run_code", "request_id": rid, "language": "bash", "code": "echo %s" % rid}))
    else:
        print(json.dumps({"request_id": rid, "template": "bash", "cmd": ["true"]}))
EOF_PY
}
# every line answered once, without error, and the echo programs' outputs are their own
check_answers() {  # check_answers TAG FILE -> "LINES DISTINCT_IDS BAD"
  python3 - "$1" "$2" <<'EOF_PY'
import json, sys
tag, path = sys.argv[1], sys.argv[2]
ids, bad = [], 0
for line in open(path):
    o = json.loads(line)
    rid = o.get("request_id", "")
    ids.append(rid)
    out = (o.get("run_result") if "run_result" in o else o.get("run")) or {}
    if o.get("http_status") or o.get("failure_class") != "none" or not o.get("node"):
        bad += 1
    elif int(rid.rsplit("-", 1)[1]) % 3 != 2 and out.get("stdout") != rid + "\n":
        bad += 1
print(len(ids), len(set(i for i in ids if i.startswith(tag))), bad)
EOF_PY
}

# --- the broker and three nodes ----------------------------------------------------------------------
start_nats
ok $? "nats-server with JetStream on 127.0.0.1:$NPORT"
start_node a && start_node b && start_node c
ok $? "three nodes joined (a, b, c)"
U=${NURL[a]}
wait_for 10 bash -c "[ \"\$(curl -s $U/v1/cluster | jq '.nodes | length')\" = 3 ]"
ok $? "GET /v1/cluster lists three nodes"
req GET /v1/cluster
is "$(jb '[.nodes[] | select(.id and .address and (.pools | length > 0) and .load and .last_heartbeat)] | length')" 3 \
  "... each with id, address, pools, load and last_heartbeat"
is "$(jb '[.nodes[].id] | sort | join(",")')" "a,b,c" "... by their ids"

# --- duplicates: one request id through two nodes runs once ---------------------------------------
req POST /run_code -H 'X-Request-Id: dup-1' --data-binary '{"language":"bash","code":"echo $RANDOM$RANDOM"}'
first=$(body)
is "$CODE" 200 "a request with X-Request-Id dup-1 through node a: 200"
is "$(jb .node | grep -cE '^(a|b|c)$')" 1 "... the answer names the node that ran it ($(jb .node))"
U=${NURL[b]} req POST /run_code -H 'X-Request-Id: dup-1' --data-binary '{"language":"bash","code":"echo $RANDOM$RANDOM"}'
is "$(body)" "$first" "the same id through node b: the first run's answer, byte for byte"
post_json /v1/runs '{"request_id":"dup-2","language":"bash","code":"echo $RANDOM$RANDOM"}'
first=$(jb .run.stdout)
U=${NURL[c]} post_json /v1/runs '{"request_id":"dup-2","language":"bash","code":"echo $RANDOM$RANDOM"}'
is "$(jb .run.stdout)|$(jb .request_id)" "$first|dup-2" "a body request_id (native) through node c: the first run's output"
U=${NURL[b]} req POST /api/v2/execute -H 'X-Request-Id: dup-3' \
  --data-binary '{"language":"bash","version":"*","files":[{"content":"echo piston"}]}'
is "$CODE|$(jb .run.stdout)" "200|piston" "Piston's /api/v2/execute through node b runs on the cluster"
is "$(records dup-)" "3 3 1" "the three ids are recorded once each across the three stores"

# --- a run longer than the ack wait (3 s): in-progress acks keep it on its node ----------------
redeliveries() {
  local n v sum=0
  for n in a b c; do
    v=$(curl -s "${NURL[$n]}/metrics" | sed -n 's/^paddock_cluster_redelivered_total{node="'$n'"} //p')
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}
post_json /v1/runs '{"request_id":"long-1","template":"bash","cmd":["sleep","5"],"limits":{"wall_time":20}}'
is "$CODE|$(jb .failure_class)" "200|none" "a 5 s run through a cluster whose ack wait is 3 s: answered"
is "$(redeliveries)|$(records long-)" "0|1 1 1" "... never given to another node (0 redeliveries), recorded once"

# --- a batch of 2,000 through one node ----------------------------------------------------------------
make_batch b1 "$TMPD/b1.jsonl"
"$PADDOCK" run --cluster "${NURL[a]}" -j 24 "$TMPD/b1.jsonl" >"$TMPD/b1.out" 2>"$TMPD/b1.err"
ok $? "paddock run --cluster: 2,000 requests through node a ($(head -1 "$TMPD/b1.err"))"
is "$(check_answers b1 "$TMPD/b1.out")" "2000 2000 0" "every request answered once, right, with the node that ran it"
is "$(records b1-)" "2000 2000 1" "every request recorded once across the stores"
ran_on=$(jq -r .node "$TMPD/b1.out" | sort -u | wc -l)
ok $([ "$ran_on" -ge 2 ] && echo 0 || echo 1) "the work spread over the nodes ($(jq -r .node "$TMPD/b1.out" | sort | uniq -c | tr '\n' ' '))"

# --- the same with node c killed mid-batch and restarted -----------------------------------------
make_batch b2 "$TMPD/b2.jsonl"
"$PADDOCK" run --cluster "${NURL[a]}" -j 24 "$TMPD/b2.jsonl" >"$TMPD/b2.out" 2>"$TMPD/b2.err" &
RUNPID=$!
wait_for 60 bash -c "[ \$(python3 $TMPD/records.py b2- $TMPD | cut -d' ' -f1) -ge 400 ]"
ok $? "batch 2 under way (400 recorded)"
kill_node c
ok 0 "node c killed (SIGKILL) with $(records_total b2-) recorded"
wait_for 60 bash -c "[ \$(python3 $TMPD/records.py b2- $TMPD | cut -d' ' -f1) -ge 1200 ]"
start_node c
ok $? "node c restarted with $(records_total b2-) recorded"
wait "$RUNPID"
ok $? "the batch completed ($(head -1 "$TMPD/b2.err"))"
is "$(check_answers b2 "$TMPD/b2.out")" "2000 2000 0" "every request answered once, none lost"
is "$(records b2-)" "2000 2000 1" "every request recorded once, none twice"
redelivered=$(redeliveries)
ok $([ "$redelivered" -ge 1 ] && echo 0 || echo 1) "the tasks node c held when killed were delivered again ($redelivered redeliveries)"

# --- the same with the broker restarted mid-batch (file storage) ---------------------------------
make_batch b3 "$TMPD/b3.jsonl"
"$PADDOCK" run --cluster "${NURL[a]}" -j 24 "$TMPD/b3.jsonl" >"$TMPD/b3.out" 2>"$TMPD/b3.err" &
RUNPID=$!
wait_for 60 bash -c "[ \$(python3 $TMPD/records.py b3- $TMPD | cut -d' ' -f1) -ge 400 ]"
ok $? "batch 3 under way (400 recorded)"
stop_nats
ok 0 "nats-server stopped with $(records_total b3-) recorded"
start_nats
ok $? "nats-server restarted on the same port and store"
wait "$RUNPID"
ok $? "the batch completed ($(head -1 "$TMPD/b3.err"))"
is "$(check_answers b3 "$TMPD/b3.out")" "2000 2000 0" "every request answered once, none lost"
is "$(records b3-)" "2000 2000 1" "every request recorded once, none twice"

req GET /metrics
like "$(grep -c 'paddock_cluster_recorded_total{node="a"}' "$BODY")" '^1$' "/metrics counts node a's cluster work"

# --- sessions: made through a, used through b and c, gone with a ---------------------------------
wait_for 20 bash -c "[ \"\$(curl -s ${NURL[b]}/v1/cluster | jq '.nodes | length')\" = 3 ]"
U=${NURL[a]} post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
is "$CODE" 201 "a session made through node a ($S)"
U=${NURL[b]} post_json "/v1/sessions/$S/exec" '{"shell":"echo kept > /tmp/f; echo via-b"}'
is "$CODE|$(jb .stdout)" "200|via-b" "used through node b (forwarded to a)"
U=${NURL[c]} post_json "/v1/sessions/$S/exec" '{"shell":"cat /tmp/f"}'
is "$CODE|$(jb .stdout)" "200|kept" "through node c: the same sandbox, its file still there"
kill_node a
U=${NURL[b]} post_json "/v1/sessions/$S/exec" '{"shell":"true"}'
is "$CODE" 410 "node a killed: its session answers 410 through node b"
like "$(jb .error)" "gone" "... saying the node is gone ($(jb .error | head -c 120))"
