#!/usr/bin/env bash
# Cluster mode's other paths (issue 25, docs/cluster.md), on two nodes and a nats-server of their
# own whose message limit is 256 KiB: a result larger than the broker carries is kept on the node
# that ran it and fetched by reference (also for a retry through the other node); POST /v1/judge
# runs on the cluster (a verdict with the node that judged it; the same request id judged once), a
# batch of submissions too (each its own request, judged once, answered in order; streamed too);
# deterministic failures (an exit code, a timeout, a compile error) are answered, never given
# back; a task whose every delivery ended with its node gone (here --cluster-max-deliver 1: one node
# killed mid-run) ends as a recorded infrastructure failure, answered to the client and counted;
# work goes through one consumer per template: a node that has only bash never takes python work,
# which waits in the stream until a node that has python joins.
source "$(dirname "$0")/api.sh"
source "$(dirname "$0")/nats.sh"

nats_or_skip
plan 43

NPORT=$(free_port)
NATS_PID=""
printf 'max_payload: 262144\n' >"$TMPD/nats.conf"
nats-server -c "$TMPD/nats.conf" -js -sd "$TMPD/js" -a 127.0.0.1 -p "$NPORT" >>"$TMPD/nats.log" 2>&1 &
NATS_PID=$!
cleanup 'kill -TERM "$NATS_PID" 2>/dev/null; wait "$NATS_PID" 2>/dev/null'
wait_for 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$NPORT" 2>/dev/null
ok $? "nats-server with JetStream and a 256 KiB message limit on 127.0.0.1:$NPORT"

declare -A NPID NURL
start_node() { cluster_node "$@" --cluster-ack-wait 3 --cluster-max-deliver 1; } # start_node NAME [SERVE ARGS]
cleanup 'for n in "${!NPID[@]}"; do kill -KILL "${NPID[$n]}" 2>/dev/null; wait "${NPID[$n]}" 2>/dev/null; done'
# metric NAME NODE: a node's paddock_cluster_NAME value (0 when absent)
metric() {
  local v
  v=$(curl -s "${NURL[$2]}/metrics" | sed -n "s/^paddock_cluster_$1{node=\"$2\"} //p")
  echo "${v:-0}"
}

start_node a && start_node b
ok $? "two nodes joined (a, b)"
U=${NURL[a]}
wait_for 10 bash -c "[ \"\$(curl -s $U/v1/cluster | jq '.nodes | length')\" = 2 ]"
ok $? "GET /v1/cluster lists both"

# --- a result larger than the broker carries: by reference ----------------------------------------
BIG='{"language":"bash","code":"head -c 300000 /dev/zero | tr \"\\\\0\" a; echo; echo done >&2"}'
req POST /run_code -H 'X-Request-Id: big-1' -H 'Content-Type: application/json' --data-binary "$BIG"
is "$CODE|$(jb .status)" "200|Success" "a /run_code answer of 300 KB (the broker carries 256 KiB): 200"
is "$(jb '.run_result.stdout | length')|$(jb .run_result.stderr)" "300001|done" "... the whole output, stderr too"
ran=$(jb .node)
like "$ran" '^(a|b)$' "... run by node $ran"
is "$(($(metric results_by_reference_total a) + $(metric results_by_reference_total b)))" 1 \
  "the node that ran it kept it and claimed the request by reference"
is "$(metric references_fetched_total a)" 1 "node a (the client's) fetched it from node $ran"
U=${NURL[b]} req POST /run_code -H 'X-Request-Id: big-1' -H 'Content-Type: application/json' --data-binary "$BIG"
is "$CODE|$(jb '.run_result.stdout | length')|$(jb .node)" "200|300001|$ran" \
  "the same request id through node b: the first answer, fetched by reference again"
python3 - "$TMPD" >"$TMPD/big.count" <<'EOF_PY'
import glob, sqlite3, sys
n = 0
for db in glob.glob(sys.argv[1] + "/db.*.sqlite"):
    n += sqlite3.connect(db, timeout=30).execute("SELECT count(*) FROM attempts WHERE request_id = 'big-1'").fetchone()[0]
print(n)
EOF_PY
is "$(cat "$TMPD/big.count")" 1 "... run and recorded once"
req GET /v1/cluster/results/nope-00000000-1
is "$CODE" 404 "GET /v1/cluster/results/ of a token no node kept: 404"
req GET '/v1/cluster/results/..%2Fpaddock.db'
is "$CODE" 400 "... a token that is not one (a path): 400"

# --- POST /v1/judge on the cluster -----------------------------------------------------------------
JUDGE='{"problem":{"tests":[{"input":"2\n","output":"4\n"},{"input":"3\n","output":"9\n"}]},"language":"python","code":"import random\nx=int(input())\nprint(x*x)\nimport sys; print(random.random(), file=sys.stderr)"}'
U=${NURL[a]} req POST /v1/judge -H 'X-Request-Id: judge-1' -H 'Content-Type: application/json' --data-binary "$JUDGE"
first=$(body)
is "$CODE|$(jb .verdict.output.status)|$(jb .reward)" "200|pass|1" "POST /v1/judge through node a: judged on the cluster, pass, reward 1"
like "$(jb .node)|$(jb .request_id)|$(jb .task_id)" '^(a|b)\|judge-1\|judge-1$' \
  "... the verdict names the node that judged it ($(jb .node)) and the request id"
U=${NURL[b]} req POST /v1/judge -H 'X-Request-Id: judge-1' -H 'Content-Type: application/json' --data-binary "$JUDGE"
is "$(body)" "$first" "the same request id through node b: the first verdict, byte for byte"
U=${NURL[b]} post_json /v1/judge '{"problem_id":"no-such","language":"python","code":"x"}'
is "$CODE" 404 "an unknown problem is refused at the edge (404), never queued"
judged=$(python3 -c "
import glob, sqlite3
print(sum(sqlite3.connect(d, timeout=30).execute(\"SELECT count(*) FROM attempts WHERE request_id = 'judge-1'\").fetchone()[0]
          for d in glob.glob('$TMPD/db.*.sqlite')))")
is "$judged" 1 "... judged and recorded once"

# --- a batch POST /v1/judge on the cluster: each submission a request of its own ------------------
BATCH='{"problem":{"tests":[{"input":"2\n","output":"4\n"}]},"language":"python","submissions":[{"code":"print(int(input())**2)"},{"code":"print(5)"},{"code":"print(int(input())*2)"}]}'
U=${NURL[a]} req POST /v1/judge -H 'X-Request-Id: jb-1' -H 'Content-Type: application/json' --data-binary "$BATCH"
firstb=$(body)
is "$CODE|$(jb '[.results[].verdict.output.status] | join(" ")')|$(jb '[.results[].reward] | join(" ")')" \
  "200|pass fail pass|1 0 1" "a batch of 3 through node a: each judged on the cluster, answered in order"
is "$(jb '[.results[].request_id] | join(" ")')|$(jb '[.results[].node | test("^(a|b)$")] | all')" \
  "jb-1-0 jb-1-1 jb-1-2|true" "... each submission under its own request id (X-Request-Id-<index>), naming its node"
U=${NURL[b]} req POST /v1/judge -H 'X-Request-Id: jb-1' -H 'Content-Type: application/json' --data-binary "$BATCH"
is "$(body)" "$firstb" "the same batch and X-Request-Id through node b: the first verdicts, byte for byte"
judgedb=$(python3 -c "
import glob, sqlite3
print(sum(sqlite3.connect(d, timeout=30).execute(\"SELECT count(*) FROM attempts WHERE request_id LIKE 'jb-1-%'\").fetchone()[0]
          for d in glob.glob('$TMPD/db.*.sqlite')))")
is "$judgedb" 3 "... each submission judged and recorded once"
# the streamed form on the cluster: a line per submission as its verdict comes, with its index
SBATCH='{"problem":{"tests":[{"input":"2\n","output":"4\n"}]},"language":"python","stream":true,"submissions":[{"code":"print(int(input())**2)"},{"code":"print(5)"}]}'
U=${NURL[b]} req POST /v1/judge -H 'X-Request-Id: js-1' -H 'Content-Type: application/json' --data-binary "$SBATCH"
is "$CODE|$(hdr Content-Type)|$(wc -l <"$BODY" | tr -d ' ')" "200|application/x-ndjson|2" \
  "a streamed batch through node b: 200, JSON lines, one per submission"
is "$(jq -sr 'sort_by(.index) | map("\(.index):\(.request_id):\(.verdict.output.status):\(.node | test("^(a|b)$"))") | join(" ")' "$BODY")" \
  "0:js-1-0:pass:true 1:js-1-1:fail:true" "... each line its index, its own request id, its verdict and node"
U=${NURL[a]} req POST /v1/judge -H 'X-Request-Id: js-1' -H 'Content-Type: application/json' --data-binary "$SBATCH"
is "$(jq -sr 'sort_by(.index) | map("\(.index):\(.verdict.output.status)") | join(" ")' "$BODY")" "0:pass 1:fail" \
  "... sent again through node a: the same verdicts"
judgeds=$(python3 -c "
import glob, sqlite3
print(sum(sqlite3.connect(d, timeout=30).execute(\"SELECT count(*) FROM attempts WHERE request_id LIKE 'js-1-%'\").fetchone()[0]
          for d in glob.glob('$TMPD/db.*.sqlite')))")
is "$judgeds" 2 "... each judged and recorded once"

# --- a node's own requests that it ran: answered in process, no note through the broker ---------
lp0=$(metric answered_in_process_total a)
lp_ok=0 lp_a=0
for i in $(seq 12); do
  U=${NURL[a]} req POST /run_code -H "X-Request-Id: lp-$i" -H 'Content-Type: application/json' \
    --data-binary "{\"language\":\"bash\",\"code\":\"echo lp $i\"}"
  [ "$CODE|$(jb .run_result.stdout)" = "200|lp $i" ] && lp_ok=$((lp_ok + 1))
  [ "$(jb .node)" = a ] && lp_a=$((lp_a + 1))
done
is "$lp_ok" 12 "12 /run_code through node a: each answered with its own output ($lp_a run on a)"
is "$(($(metric answered_in_process_total a) - lp0))" "$lp_a" \
  "... those node a ran were answered in process (paddock_cluster_answered_in_process_total), the rest by note"

# --- deterministic failures are answers: acked, never given back or run again -------------------
U=${NURL[a]} post_json /v1/runs '{"request_id":"det-exit","template":"bash","cmd":["bash","-c","exit 7"]}'
is "$CODE|$(jb '[.failure_class, .status, (.run.exit_code | tostring)] | join(" ")')" "200|none RE 7" \
  "a run that exits 7: answered as it is (RE)"
U=${NURL[a]} post_json /v1/runs '{"request_id":"det-timeout","template":"bash","cmd":["sleep","5"],"limits":{"wall_time":1}}'
is "$CODE|$(jb .failure_class)" "200|exec_timeout" "a run past its wall time: exec_timeout, answered"
U=${NURL[b]} post_json /v1/runs '{"request_id":"det-compile","template":"c","files":{"p.c":"int main( {"},"compile":["gcc","-o","p","p.c"],"cmd":["./p"]}'
is "$CODE|$(jb '.compile.status != "OK" and .run == null')" "200|true" "a compile error: answered, not run"
dets=$(python3 -c "
import glob, sqlite3
print(sum(sqlite3.connect(d, timeout=30).execute(\"SELECT count(*) FROM attempts WHERE request_id LIKE 'det-%'\").fetchone()[0]
          for d in glob.glob('$TMPD/db.*.sqlite')))")
is "$dets|$(($(metric redelivered_total a) + $(metric redelivered_total b)))|$(($(metric naks_total a) + $(metric naks_total b)))" \
  "3|0|0" "... each recorded once, none given back (0 naks) nor delivered again (0 redeliveries)"

# --- a task whose every delivery lost its node: an infrastructure failure, answered -------------
curl -s -m 60 -o "$TMPD/ex.out" -H 'X-Request-Id: ex-1' -H 'Content-Type: application/json' \
  --data-binary '{"template":"bash","cmd":["sleep","30"],"limits":{"wall_time":40}}' "${NURL[a]}/v1/runs" &
CURLPID=$!
running() { [ "$(metric tasks_running a)" = 1 ] || [ "$(metric tasks_running b)" = 1 ]; }
wait_for 20 running
ok $? "a 30 s run is under way on one node"
if [ "$(metric tasks_running a)" = 1 ]; then holder=a other=b; else holder=b other=a; fi
kill -KILL "${NPID[$holder]}"
wait "${NPID[$holder]}" 2>/dev/null
unset "NPID[$holder]"
# its client may have been on the killed node: the same id through the other node gets the answer
U=${NURL[$other]} req POST /v1/runs -m 60 -H 'X-Request-Id: ex-1' -H 'Content-Type: application/json' \
  --data-binary '{"template":"bash","cmd":["sleep","30"],"limits":{"wall_time":40}}'
wait "$CURLPID" 2>/dev/null
is "$CODE|$(jb .failure_class)" "200|internal_error" \
  "node $holder killed mid-run, its one delivery used: the answer is an infrastructure failure"
like "$(jb .error)" "delivered 1 times" "... saying why ($(jb .error | head -c 100))"
is "$(metric exhausted_total "$other")" 1 "... counted on node $other (paddock_cluster_exhausted_total)"
rec=$(python3 -c "
import sqlite3
print('|'.join(map(str, sqlite3.connect('$TMPD/db.$other.sqlite', timeout=30).execute(
  \"SELECT count(*), max(failure_class) FROM attempts WHERE request_id = 'ex-1'\").fetchone())))")
is "$rec" "1|internal_error" "... and recorded once, in node $other's store, as internal_error"

# --- one consumer per template: a node pulls only the templates it has ----------------------------
python3 -c "
import json
d = json.load(open('contrib/templates.example.json'))
ts = [t for t in d['templates'] if t['name'] == 'bash']
ts[0]['audit'] = {'egress': {'allowlist': ['10.0.0.1:443']}}  # a policy a request may only tighten
print(json.dumps({'templates': ts}))" >"$TMPD/bash-only.json"
start_node c --templates "$TMPD/bash-only.json"
ok $? "node c joined with the bash template only"
U=${NURL[c]} post_json /v1/runs '{"template":"bash","shell":"echo x","audit":{"egress":"log"}}'
is "$CODE $(jb .error)" "400 audit.egress: laxer than the template's or problem's" \
  "a request widening the template's audit policy: 400 from the node it reached, not handed on"
kill -KILL "${NPID[$other]}"
wait "${NPID[$other]}" 2>/dev/null
unset "NPID[$other]"
curl -s -m 90 -o "$TMPD/py.out" -H 'X-Request-Id: py-1' -H 'Content-Type: application/json' \
  --data-binary '{"language":"python","code":"print(6*7)"}' "${NURL[c]}/run_code" &
PYPID=$!
U=${NURL[c]} req POST /run_code -H 'X-Request-Id: sh-1' -H 'Content-Type: application/json' \
  --data-binary '{"language":"bash","code":"echo here"}'
is "$CODE|$(jb .run_result.stdout)|$(jb .node)" "200|here|c" "node c alone: bash work runs on c"
wait_for 5 bash -c "[ \"\$(curl -s ${NURL[c]}/metrics | sed -n 's/^paddock_cluster_published_total{node=\"c\"} //p')\" = 2 ]"
ok $? "... the python request was published too"
kill -0 "$PYPID" 2>/dev/null
ok $? "... but python work waits in the stream: c has no python and never pulls it"
is "$(metric pulled_total c)" 1 "... node c pulled the bash task only"
start_node a
wait "$PYPID"
is "$(jq -r '[.run_result.stdout, .node] | join("|")' "$TMPD/py.out")" "42
|a" "a node with python joined (a): the waiting request ran there and was answered"
