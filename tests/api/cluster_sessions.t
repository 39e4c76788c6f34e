#!/usr/bin/env bash
# A session's records in the cluster (issue 41, docs/cluster.md "A session's records"): a session
# lives on node a (sticky); its trajectory, an exec's spilled output (longer than the answer keeps),
# an exec's short output, a download and a file read with request ids and its episode grades are
# read through node b, while a lives (forwarded) and after a is killed with SIGKILL (from the broker: the
# trajectory's stream, the object stream, the record stream), byte for byte the same, each line
# and record once; a session deleted on a has its closing line there too; a step made while the
# broker was stopped is answered at once and published by the recorder once it is back;
# GET /v1/groups/{id} answers the fleet's group through b; what the broker does not hold (an exec,
# a download without a request id) is 410 as before.
source "$(dirname "$0")/api.sh"
source "$(dirname "$0")/nats.sh"

nats_or_skip
plan 37

nats_start
ok $? "nats-server with JetStream on 127.0.0.1:$NPORT"

declare -A NPID NURL
kill_node() { kill -KILL "${NPID[$1]}" 2>/dev/null; wait "${NPID[$1]}" 2>/dev/null; unset "NPID[$1]"; }
cleanup 'for n in "${!NPID[@]}"; do kill -KILL "${NPID[$n]}" 2>/dev/null; wait "${NPID[$n]}" 2>/dev/null; done'
get() { curl -s -o "$2" -w '%{http_code}' "$1"; } # get URL FILE: the status; the body in FILE

cluster_node a && cluster_node b
ok $? "nodes a and b joined"
wait_for 20 bash -c "[ \"\$(curl -s ${NURL[b]}/v1/cluster | jq '.nodes | length')\" = 2 ]"
ok $? "node b sees both nodes"

# --- a session on node a: execs, a download, a grade -----------------------------------------------
U=${NURL[a]} post_json /v1/sessions '{"template":"bash","group_id":"eg-c","sample_id":"s1"}'
S=$(jb .session_id)
is "$CODE" 201 "a session made on node a ($S)"
U=${NURL[a]} post_json "/v1/sessions/$S/exec" \
  '{"shell":"head -c 3000000 /dev/zero | tr \"\\\\0\" x; echo to-stderr >&2","request_id":"big-1"}'
is "$CODE|$(jb .stdout_truncated)|$(jb .stdout_bytes)|$(jb .request_id)" "200|true|3000000|big-1" \
  "an exec's 3 MB of output, longer than its answer keeps"
U=${NURL[a]} post_json "/v1/sessions/$S/exec" '{"shell":"printf short-out; printf short-err >&2"}'
SMALL=$(jb .request_id)
is "$CODE|$(jb .stdout_truncated)|$SMALL" "200|false|#2" "an exec with a short output, without a request id"
U=${NURL[a]} post_json "/v1/sessions/$S/exec" '{"shell":"mkdir -p /work/d && echo payload > /work/d/f.txt"}'
is "$CODE" 200 "a file written in the session"
is "$(get "${NURL[a]}/v1/sessions/$S/download?dir=/work/d&request_id=dl-1" "$TMPD/dl.a.tar")" 200 \
  "a download with request id dl-1 through node a"
is "$(tar -xOf "$TMPD/dl.a.tar" ./f.txt)" payload "... the archive holds the file"
is "$(get "${NURL[a]}/v1/sessions/$S/files?path=/work/d/f.txt&request_id=rd-1" "$TMPD/rd.a")|$(cat "$TMPD/rd.a")" \
  "200|payload" "the file read with request id rd-1 through node a"
U=${NURL[a]} post_json "/v1/sessions/$S/judge" \
  '{"problem":{"kind":"episode","command":"grep -q payload /work/d/f.txt"},"task_id":"ep-c1","group_id":"eg-c","sample_id":"s1"}'
is "$CODE|$(jb .reward)" "200|1" "the episode graded on node a: reward 1"
U=${NURL[a]} post_json "/v1/sessions/$S/judge" \
  '{"problem":{"kind":"episode","command":"grep -q payload /work/d/f.txt"},"task_id":"ep-c1","group_id":"eg-c","sample_id":"s1"}'
is "$CODE|$(jb .reward)" "200|1" "... and graded again (the same task: its second attempt)"

# a second session, deleted: its closing line
U=${NURL[a]} post_json /v1/sessions '{"template":"bash"}'
S2=$(jb .session_id)
U=${NURL[a]} post_json "/v1/sessions/$S2/exec" '{"shell":"echo two"}'
U=${NURL[a]} req DELETE "/v1/sessions/$S2"
is "$CODE" 200 "a second session ($S2) used and deleted on node a"

# a third session's step while the broker is away: answered without waiting for it; its line goes
# to the broker with node a's recorder once the broker is back
trajs() { curl -s "http://127.0.0.1:$MPORT/jsz?streams=true" |
  jq '[.account_details[].stream_detail[] | select(.name == "PADDOCK_TRAJECTORIES") | .state.messages] | add // 0'; }
U=${NURL[a]} post_json /v1/sessions '{"template":"bash"}'
S3=$(jb .session_id)
parts=$(trajs)
kill -TERM "$NATS_PID"
wait "$NATS_PID"
before=$(date +%s%N)
REQ_TIMEOUT=8 U=${NURL[a]} post_json "/v1/sessions/$S3/exec" '{"shell":"echo while-away"}'
is "$CODE|$(jb .stdout)" "200|while-away" "the broker stopped: an exec in a third session ($S3) answered"
ok $(( ($(date +%s%N) - before) < 5000000000 ? 0 : 1 )) "... without waiting for the broker ($(( ($(date +%s%N) - before) / 1000000 )) ms)"
nats-server -js -sd "$TMPD/js" -a 127.0.0.1 -p "$NPORT" -m "$MPORT" >>"$TMPD/nats.log" 2>&1 &
NATS_PID=$!
more_parts() { [ "$(trajs)" -gt "$parts" ]; }
wait_for 30 more_parts
ok $? "the broker restarted: the step's line published by node a's recorder (no operation of its own)"

# --- read through node b while a lives ---------------------------------------------------------------
is "$(get "${NURL[b]}/v1/sessions/$S/trajectory" "$TMPD/traj.live")" 200 "the trajectory through node b"
wait_for 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' ${NURL[b]}/v1/groups/eg-c)\" = 200 ]"
ok $? "GET /v1/groups/eg-c through node b answers the group graded on a"

# --- node a killed: the same, from the broker --------------------------------------------------------
kill_node a
ok 0 "node a killed (SIGKILL)"
is "$(get "${NURL[b]}/v1/sessions/$S/trajectory" "$TMPD/traj.dead")" 200 "the trajectory through node b, a gone"
cmp -s "$TMPD/traj.live" "$TMPD/traj.dead"
ok $? "... byte for byte what a served ($(wc -l <"$TMPD/traj.dead") lines)"
is "$(jq -r .kind "$TMPD/traj.dead" | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')" \
  "download:1 exec:3 read:1 session:1 verdict:2 " "... each line once: the header, three execs, the download, the read, two verdicts"
is "$(jq -r 'select(.kind == "verdict") | "\(.reward) \(.observation.task_id) \(.observation.group_id)"' "$TMPD/traj.dead" | sort -u)" \
  "1 ep-c1 eg-c" "... its verdict lines carry the grade"
"$PADDOCK" export --url "${NURL[b]}" "$S" >"$TMPD/export.jsonl"
is "$?|$(wc -l <"$TMPD/export.jsonl")" "0|8" "paddock export --url node b $S: the eight lines"
is "$(get "${NURL[b]}/v1/sessions/$S/output?request_id=big-1" "$TMPD/big.out")|$(wc -c <"$TMPD/big.out")|$(tr -d x <"$TMPD/big.out" | wc -c)" \
  "200|3000000|0" "the spilled output of big-1 through node b: 3 MB, every byte"
is "$(get "${NURL[b]}/v1/sessions/$S/output?request_id=big-1&stream=stderr" "$TMPD/big.err")|$(cat "$TMPD/big.err")" \
  "200|to-stderr" "... its stderr"
is "$(get "${NURL[b]}/v1/sessions/$S/output?request_id=%232" "$TMPD/small.out")|$(cat "$TMPD/small.out")" \
  "200|short-out" "the short output of exec #2, from its trajectory line"
is "$(get "${NURL[b]}/v1/sessions/$S/download?dir=/work/d&request_id=dl-1" "$TMPD/dl.b.tar")" 200 \
  "download dl-1 through node b"
cmp -s "$TMPD/dl.a.tar" "$TMPD/dl.b.tar"
ok $? "... the archive node a sent, byte for byte"
is "$(get "${NURL[b]}/v1/sessions/$S/files?path=/work/d/f.txt&request_id=rd-1" "$TMPD/rd.b")|$(cat "$TMPD/rd.b")" \
  "200|payload" "the file read rd-1 through node b: the bytes a sent"
U=${NURL[b]} req GET /v1/runs/ep-c1
is "$CODE|$(jb .record.node)|$(jb .record.reward)|$(jb .attempts)|$(jb '[.records[].row] | unique | length')" "200|a|1|2|2" \
  "the episode's grades through node b: a's records, each once"
U=${NURL[b]} req GET /v1/groups/eg-c
is "$CODE|$(jb .size)|$(jb .mean_reward)|$(jb '.members[0].task_id')" "200|1|1|ep-c1" "GET /v1/groups/eg-c: one member, once"
is "$(curl -s "${NURL[b]}/v1/sessions/$S2/trajectory" | jq -r .kind | tr '\n' ' ')" "session exec close " \
  "the deleted session's trajectory through b: its closing line too"
is "$(curl -s "${NURL[b]}/v1/sessions/$S3/trajectory" | jq -sc '[.[] | select(.kind == "exec") | .observation.stdout]')" '["while-away\n"]' \
  "the third session's trajectory through b: the step made while the broker was away"
U=${NURL[b]} post_json "/v1/sessions/$S/exec" '{"shell":"true"}'
is "$CODE" 410 "an exec in the session through b: 410, its sandbox went with node a"
U=${NURL[b]} req GET "/v1/sessions/$S/download?dir=/work/d"
is "$CODE" 410 "a download without a request id through b: 410 (nothing kept names it)"
U=${NURL[b]} req GET "/v1/sessions/$S/files?path=/work/d/f.txt"
is "$CODE" 410 "a file read without a request id through b: 410"
