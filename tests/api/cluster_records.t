#!/usr/bin/env bash
# Cluster mode's shared record store (issue 41, docs/cluster.md "Records"): every node's finished
# records go to the stream PADDOCK_RECORDS and every node answers GET /v1/runs/{id},
# GET /v1/runs?group_id= (paged) and `paddock export --runs --url` for the whole fleet. Node a
# judges three submissions alone; node b joins and reads them by id, by group and by export;
# node a is killed (SIGKILL) and b still reads them; b's own records join the group's; a node that
# publishes its records again (its outbox's watermark lost) lists nothing twice; a task judged again
# by the other node is listed once by last=1 (its latest), paged or not; the stream's
# retention (--cluster-records-max-age, --cluster-records-max-bytes) is set on the stream and a
# record past its age is gone.
source "$(dirname "$0")/api.sh"
source "$(dirname "$0")/nats.sh"

nats_or_skip
plan 40

nats_start
ok $? "nats-server with JetStream on 127.0.0.1:$NPORT"

declare -A NPID NURL
start_node() { cluster_node "$@"; } # start_node NAME [SERVE ARGS]: the default cluster settings
kill_node() { kill -KILL "${NPID[$1]}" 2>/dev/null; wait "${NPID[$1]}" 2>/dev/null; unset "NPID[$1]"; }
stop_node() { kill -TERM "${NPID[$1]}" 2>/dev/null; wait "${NPID[$1]}" 2>/dev/null; unset "NPID[$1]"; }
cleanup 'for n in "${!NPID[@]}"; do kill -KILL "${NPID[$n]}" 2>/dev/null; wait "${NPID[$n]}" 2>/dev/null; done'
judge() {  # judge NODE TASK: a judged submission of group grp-r, task TASK
  U=${NURL[$1]} req POST /v1/judge -H "X-Request-Id: $2" -H 'Content-Type: application/json' --data-binary \
    "{\"task_id\":\"$2\",\"group_id\":\"grp-r\",\"problem\":{\"tests\":[{\"input\":\"2\\n\",\"output\":\"4\\n\"}]},\"language\":\"python\",\"code\":\"print(int(input())**2)\"}"
}
# the group's records through NODE, every page of LIMIT: "COUNT DISTINCT_TASKS NODES"
group_read() {
  local cursor=0 page all="[]"
  while :; do
    page=$(curl -s "${NURL[$1]}/v1/runs?group_id=grp-r&limit=$2&cursor=$cursor")
    all=$(jq -c --argjson p "$page" '. + $p.records' <<<"$all")
    cursor=$(jq -r '.next // empty' <<<"$page")
    [ -n "$cursor" ] || break
  done
  jq -r '"\(length) \([.[].task_id] | unique | length) \([.[].node] | unique | join(","))"' <<<"$all"
}

start_node a
ok $? "node a joined alone"
for t in rec-1 rec-2 rec-3; do judge a $t; done
is "$CODE|$(jb .reward)|$(jb .node)" "200|1|a" "three submissions judged by node a"
start_node b
ok $? "node b joined"
wait_for 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' ${NURL[b]}/v1/runs/rec-3)\" = 200 ]"
ok $? "node b answers GET /v1/runs/rec-3, a record node a wrote"
U=${NURL[b]} req GET /v1/runs/rec-1
is "$CODE|$(jb .record.node)|$(jb .record.reward)|$(jb .attempts)" "200|a|1|1" "... rec-1 too: node a's, its reward, one attempt"
is "$(group_read b 100)" "3 3 a" "GET /v1/runs?group_id=grp-r through node b: node a's three records, once each"
"$PADDOCK" export --runs --url "${NURL[b]}" --group-id grp-r >"$TMPD/export1.jsonl"
is "$(jq -r .task_id "$TMPD/export1.jsonl" | sort | tr '\n' ' ')" "rec-1 rec-2 rec-3 " "paddock export --runs --url node b: node a's three records"

# --- node a killed: its records are still read through b -----------------------------------------
kill_node a
U=${NURL[b]} req GET /v1/runs/rec-2
is "$CODE|$(jb .record.node)" "200|a" "node a killed (SIGKILL): GET /v1/runs/rec-2 through b still answers node a's record"
judge b rec-4
judge b rec-5
is "$CODE|$(jb .node)" "200|b" "two more judged by node b"
wait_for 20 bash -c "[ \"\$(curl -s '${NURL[b]}/v1/runs?group_id=grp-r' | jq .count)\" = 5 ]"
ok $? "the group lists five records"
is "$(group_read b 2)" "5 5 a,b" "... paged two at a time: five, each once, from a and b"
"$PADDOCK" export --runs --url "${NURL[b]}" --group-id grp-r >"$TMPD/export2.jsonl"
is "$(jq -r .task_id "$TMPD/export2.jsonl" | sort | tr '\n' ' ')" "rec-1 rec-2 rec-3 rec-4 rec-5 " \
  "export through b: the whole fleet's records, the dead node's included"
U=${NURL[b]} req GET '/v1/runs?group_id=no-such-group'
is "$CODE|$(jb .count)|$(jb .next)" "200|0|null" "a group with no records: an empty page"
U=${NURL[b]} req GET /v1/runs/no-such-task
is "$CODE" 404 "a task no node recorded: 404"

# --- published again: listed once ---------------------------------------------------------------
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('UPDATE outbox SET published = 0'); c.commit()" \
  "$TMPD/db.a.sqlite"
ok $? "node a's outbox watermark reset (as if killed before it moved)"
start_node a
ok $? "node a restarted"
wait_for 20 bash -c "[ \"\$(curl -s ${NURL[a]}/metrics | sed -n 's/^paddock_cluster_records_published_total{node=\"a\"} //p')\" -ge 3 ]"
ok $? "node a published its three records again"
is "$(group_read a 100)" "5 5 a,b" "the group still lists five records, each once (through a)"
U=${NURL[a]} req GET /v1/runs/rec-1
is "$CODE|$(jb .attempts)" "200|1" "GET /v1/runs/rec-1: one attempt, not two"

# --- a task recorded again later: last=1 lists its latest record only (as a single node does) ------
U=${NURL[b]} req POST /v1/judge -H "X-Request-Id: rec-2-again" -H 'Content-Type: application/json' --data-binary \
  '{"task_id":"rec-2","group_id":"grp-r","problem":{"tests":[{"input":"2\n","output":"4\n"}]},"language":"python","code":"print(int(input())**2)"}'
is "$CODE|$(jb .node)" "200|b" "rec-2, node a's, judged again by node b (another request id)"
wait_for 20 bash -c "[ \"\$(curl -s '${NURL[a]}/v1/runs?group_id=grp-r' | jq .count)\" = 6 ]"
ok $? "... the group lists six records, rec-2's two among them"
lasts() { # lasts NODE QUERY LIMIT: every page's "task:node" of last=1, sorted
  local cursor=0 page all="[]"
  while :; do
    page=$(curl -s "${NURL[$1]}/v1/runs?$2&last=1&limit=$3&cursor=$cursor")
    all=$(jq -c --argjson p "$page" '. + $p.records' <<<"$all")
    cursor=$(jq -r '.next // empty' <<<"$page")
    [ -n "$cursor" ] || break
  done
  jq -r '[.[] | "\(.task_id):\(.node)"] | sort | join(",")' <<<"$all"
}
is "$(lasts a group_id=grp-r 100)" "rec-1:a,rec-2:b,rec-3:a,rec-4:b,rec-5:b" \
  "GET /v1/runs?group_id=grp-r&last=1 through a: each task once, rec-2 as b judged it last"
is "$(lasts b group_id=grp-r 2)" "rec-1:a,rec-2:b,rec-3:a,rec-4:b,rec-5:b" "... paged two at a time through b: the same"
is "$(lasts a kind=judge 1000)" "rec-1:a,rec-2:b,rec-3:a,rec-4:b,rec-5:b" "... without a group (kind=judge): the same"

# --- a 10 MB output: in the object stream, read through the other node, its runner gone ----------
BIG='{"language":"bash","code":"head -c 10000000 /dev/zero | tr \"\\\\0\" a"}'
U=${NURL[b]} req POST /run_code -H 'X-Request-Id: big-out' -H 'Content-Type: application/json' --data-binary "$BIG"
ran=$(jb .node)
is "$CODE|$(jb '.run_result.stdout | length')" "200|10000000" "a /run_code answer with 10 MB of output through node b (run by $ran)"
other=$([ "$ran" = a ] && echo b || echo a)
kill_node "$ran"
ok 0 "node $ran, which ran it, killed (SIGKILL)"
U=${NURL[$other]} req GET /v1/runs/big-out/output
is "$CODE|$(jb .whole)|$(jb .stdout_bytes)|$(jb .node)" "200|true|10000000|$ran" \
  "GET /v1/runs/big-out/output through node $other: the whole 10 MB from the object stream"
is "$(jq -r .stdout "$BODY" | tr -d a | wc -c)|$(jq -r .stdout "$BODY" | wc -c)" "1|10000001" "... every byte of it"
U=${NURL[$other]} req GET /v1/runs/big-out
is "$CODE|$(jb .record.node)|$(jb '.record.run.stdout | length > 0')" "200|$ran|true" \
  "GET /v1/runs/big-out through node $other: the record (larger than a message: read whole from the object stream)"
is "$(curl -s "${NURL[$other]}/v1/runs?kind=run&limit=1000" | jq -r '.records[] | select(.task_id == "big-out") | (.record_ref.object | startswith("rec-")) and (.run == null)')" true \
  "... a page of GET /v1/runs lists its summary, with record_ref naming the object"
U=${NURL[$other]} req POST /run_code -H 'X-Request-Id: big-out' -H 'Content-Type: application/json' --data-binary "$BIG"
is "$CODE|$(jb '.run_result.stdout | length')|$(jb .node)" "200|10000000|$ran" \
  "the same request id through node $other: the first answer, read from the object stream"
start_node "$ran"
ok $? "node $ran restarted"

# --- retention: set once on the stream; a record past its age is gone ------------------------------
stop_node b
start_node b --cluster-records-max-age 3 --cluster-records-max-bytes 5M
ok $? "node b restarted with --cluster-records-max-age 3 --cluster-records-max-bytes 5M"
cfg=$(curl -s "http://127.0.0.1:$MPORT/jsz?streams=true&config=true" |
  jq -r '.account_details[].stream_detail[] | select(.name == "PADDOCK_RECORDS") | "\(.config.max_age) \(.config.max_bytes) \(.config.max_msgs_per_subject)"')
is "$cfg" "3000000000 5242880 1" "the stream PADDOCK_RECORDS has that retention (max age, max bytes, one message a record)"
wait_for 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' ${NURL[b]}/v1/runs/rec-1)\" = 404 ]"
ok $? "node a's record rec-1, past the age, is gone (404 through b)"
is "$(curl -s "${NURL[b]}/v1/runs?group_id=grp-r" | jq .count)" 0 "... and the group lists none"

# --- a broker whose store is small: the default size is fitted to it, a given one is not ----------
SPORT=$(free_port)
SMPORT=$(free_port)
printf 'jetstream { store_dir: "%s"\n max_file_store: 1GB }\n' "$TMPD/js-small" >"$TMPD/small.conf"
nats-server -c "$TMPD/small.conf" -a 127.0.0.1 -p "$SPORT" -m "$SMPORT" >>"$TMPD/nats-small.log" 2>&1 &
SMALL_PID=$!
cleanup 'kill -TERM "$SMALL_PID" 2>/dev/null; wait "$SMALL_PID" 2>/dev/null'
wait_for 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$SPORT" 2>/dev/null
"$PADDOCK" serve --listen 127.0.0.1:0 --db "$TMPD/db.small.sqlite" --cluster "nats://127.0.0.1:$SPORT" \
  --node-id small --warm 1 </dev/null >"$TMPD/small.log" 2>&1 &
NPID[small]=$!
wait_for 30 grep -q '^paddock: serving on' "$TMPD/small.log"
ok $? "a node joins a broker with a 1 GB store, its default stream sizes (10 GiB) fitted to it"
sizes=$(curl -s "http://127.0.0.1:$SMPORT/jsz?streams=true&config=true" |
  jq -r '[.account_details[].stream_detail[] | select(.name == "PADDOCK_RECORDS" or .name == "PADDOCK_OBJECTS") | .config.max_bytes] | "\(length) \(add)"')
read -r nstreams total <<<"$sizes"
ok $([ "$nstreams" = 2 ] && [ "$total" -gt 0 ] && [ "$total" -le 1073741824 ] && echo 0 || echo 1) \
  "... both streams made, $total bytes together within the store"
"$PADDOCK" serve --listen 127.0.0.1:0 --db "$TMPD/db.small2.sqlite" --cluster "nats://127.0.0.1:$SPORT" \
  --node-id small2 --cluster-records-max-bytes 5G --warm 1 </dev/null >"$TMPD/small2.log" 2>&1
rc=$?
like "$rc|$(tail -1 "$TMPD/small2.log")" '^[1-9][0-9]*\|.*max_file_store' \
  "a size given (--cluster-records-max-bytes 5G) that the store cannot hold: the node does not start, saying why"
