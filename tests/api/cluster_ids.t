#!/usr/bin/env bash
# Node ids with dots (issue 39): contrib/cluster/paddock-node@.service names its node %H-%i, which
# on a host with a domain is host.example.com-1. Such an id is the last part of the node's NATS
# subject (paddock.done.<id>: a dot there separates subject tokens), a key of the nodes bucket and
# the start of its claim tokens (file names under cluster-results/, fetched over HTTP). Two nodes
# with dotted ids on a real nats-server (256 KiB messages): work one of them cannot run is run by
# the other and answered to the first through its dotted subject, a result larger than the broker
# carries is put in the object stream under a dotted token and read by the other, each recorded
# once; ids that would make an empty subject token are refused.
source "$(dirname "$0")/api.sh"
source "$(dirname "$0")/nats.sh"

nats_or_skip
plan 12

A=host.example.com-1 B=other.example.com-2
printf 'max_payload: 262144\n' >"$TMPD/nats.conf"
nats_start -c "$TMPD/nats.conf"
ok $? "nats-server with JetStream on 127.0.0.1:$NPORT"

declare -A NPID NURL
start_node() { cluster_node "$@" --cluster-ack-wait 3; } # start_node ID [SERVE ARGS]
cleanup 'for n in "${!NPID[@]}"; do kill -KILL "${NPID[$n]}" 2>/dev/null; wait "${NPID[$n]}" 2>/dev/null; done'
recorded() {  # recorded REQUEST-ID: "COUNT NODE" over both stores
  python3 - "$TMPD" "$1" <<'EOF_PY'
import glob, sqlite3, sys
rows = []
for db in glob.glob(sys.argv[1] + "/db.*.sqlite"):
    rows += sqlite3.connect(db, timeout=30).execute("SELECT node FROM attempts WHERE request_id = ?", (sys.argv[2],)).fetchall()
print(len(rows), " ".join(r[0] or "" for r in rows))
EOF_PY
}

# node A has the bash template only: python work reaches it, it runs on B and is answered to A
python3 -c "
import json
d = json.load(open('contrib/templates.example.json'))
print(json.dumps({'templates': [t for t in d['templates'] if t['name'] == 'bash']}))" >"$TMPD/bash-only.json"
start_node "$A" --templates "$TMPD/bash-only.json" && start_node "$B"
ok $? "two nodes joined with dotted ids ($A with bash only, $B)"
U=${NURL[$A]}
wait_for 10 bash -c "[ \"\$(curl -s $U/v1/cluster | jq -c '[.nodes[].id] | sort')\" = '[\"$A\",\"$B\"]' ]"
ok $? "GET /v1/cluster lists both by their dotted ids (keys of the nodes bucket)"
is "$(curl -s "$U/v1/cluster" | jq -r .self)" "$A" "... and says which one answered"

req POST /run_code -H 'X-Request-Id: dots-py-1' -H 'Content-Type: application/json' \
  --data-binary '{"language":"python","code":"print(6*7)"}'
is "$CODE|$(jb .run_result.stdout)|$(jb .node)" "200|42|$B" "python through $A: run by $B, answered to $A through paddock.done.$A"
is "$(recorded dots-py-1)" "1 $B" "... recorded once, by $B"

# a result larger than the broker carries: put by B in the object stream under a dotted token
# (res-<token>: a subject token escaped), read by A
BIG='{"language":"python","code":"print(\"a\" * 300000)"}'
req POST /run_code -H 'X-Request-Id: dots-big-1' -H 'Content-Type: application/json' --data-binary "$BIG"
is "$CODE|$(jb '.run_result.stdout | length')|$(jb .node)" "200|300001|$B" \
  "a 300 KB python answer through $A: run by $B, whole"
objbytes=$(curl -s "http://127.0.0.1:$MPORT/jsz?streams=true" |
  jq -r '.account_details[].stream_detail[] | select(.name == "PADDOCK_OBJECTS") | .state.bytes')
ok $([ "${objbytes:-0}" -gt 300000 ] && echo 0 || echo 1) "... kept by $B in the object stream PADDOCK_OBJECTS ($objbytes bytes), under its dotted token"
is "$(curl -s "${NURL[$B]}/metrics" | sed -n "s/^paddock_cluster_results_by_reference_total{node=\"$B\"} //p")|$(curl -s "$U/metrics" | sed -n "s/^paddock_cluster_references_fetched_total{node=\"$A\"} //p")" \
  "1|1" "... claimed by reference by $B, fetched by $A (per-node metrics under the dotted ids)"
c1=$(curl -s -o /dev/null -w '%{http_code}' "$U/v1/cluster/results/.tmp-1")
c2=$(curl -s -o /dev/null -w '%{http_code}' --path-as-is "$U/v1/cluster/results/a..b-1")
is "$c1 $c2" "400 400" "tokens with a leading dot or two dots in a row are not tokens (400)"
is "$(recorded dots-big-1)" "1 $B" "... recorded once"

# bash through B may run on either node: answered whichever ran it
U=${NURL[$B]} req POST /run_code -H 'X-Request-Id: dots-sh-1' -H 'Content-Type: application/json' \
  --data-binary '{"language":"bash","code":"echo here"}'
is "$CODE|$(jb .run_result.stdout)|$(recorded dots-sh-1 | cut -d' ' -f1)" "200|here|1" "bash through $B: answered (run by $(jb .node)) and recorded once"
