#!/usr/bin/env bash
# Several agents in one session (issue 40): execs naming different "agent"s run at once in the
# session's sandbox (each waits for a file the other creates: no timing involved), an agent's
# second exec while its first runs is refused 409 naming it, a request that needs the session
# alone (reset, snapshot, files, grade) is refused 409 while execs run, the answers and the
# trajectory name the agents and its lines come in the order the steps ended, the budget counts
# every agent's steps, a replay runs the agents' steps as theirs, and an exec without "agent" is as
# before (the second while one runs: 409 busy; no "agent" in its answer or line).
source "$(dirname "$0")/api.sh"
plan 49

cat >"$TMPD/templates.json" <<'EOF2'
{"templates": [
  {"name": "bash", "requires": ["bash"], "cwd": "/work",
   "limits": {"memory": "256M", "output_kill": "1M", "wall_time": 60}}
]}
EOF2
start_daemon --templates "$TMPD/templates.json"
ok $? "daemon started"
TRAJ_DIR=${PADDOCK_STATE_DIR:-/var/lib/paddock}/trajectories
mine=()
cleanup 'for t in "${mine[@]}"; do rm -f "$TRAJ_DIR/$t.jsonl"; done'
sx() { post_json "/v1/sessions/$1/exec" "$2"; }
# bg_exec NAME SESSION JSON: the exec in the background; its status and body in $TMPD/NAME.{code,body}
bg_exec() {
  curl -s -m 90 -o "$TMPD/$1.body" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$3" "$U/v1/sessions/$2/exec" >"$TMPD/$1.code" &
}
# wait_file SESSION PATH AGENT: an exec of AGENT that returns once PATH exists in the session
wait_file() {
  sx "$1" "{\"agent\":\"$3\",\"shell\":\"while [ ! -e $2 ]; do sleep 0.05; done; echo seen\",\"timeout\":50}"
}

post_json /v1/sessions '{"template":"bash"}'
is "$CODE" 201 "a session"
S=$(jb .session_id); mine+=("$S")

# --- two agents at once: each waits for the other's file ----------------------------------------
bg_exec alice "$S" '{"agent":"alice","request_id":"a-1","timeout":50,"shell":"touch /work/from-alice; while [ ! -e /work/from-bob ]; do sleep 0.05; done; echo alice-saw-bob"}'
PA=$!
sx "$S" '{"agent":"bob","request_id":"b-1","timeout":50,"shell":"touch /work/from-bob; while [ ! -e /work/from-alice ]; do sleep 0.05; done; echo bob-saw-alice"}'
is "$CODE" 200 "bob's exec runs while alice's does (200, not 409 busy)"
is "$(jb '[.status, (.stdout | rtrimstr("\n")), .agent, .request_id] | join(" ")')" "OK bob-saw-alice bob b-1" \
  "bob saw the file alice's running exec made; the answer names its agent"
wait "$PA"
is "$(cat "$TMPD/alice.code")" 200 "alice's exec ended too"
is "$(jq -r '[.status, (.stdout | rtrimstr("\n")), .agent] | join(" ")' "$TMPD/alice.body")" "OK alice-saw-bob alice" \
  "alice saw the file bob made while she ran: the two ran at once"

# --- one agent's steps run one at a time; the session alone waits for them ------------------------
bg_exec hold "$S" '{"agent":"alice","request_id":"a-hold","timeout":50,"shell":"touch /work/alice-running; while [ ! -e /work/go ]; do sleep 0.05; done; echo released"}'
PH=$!
wait_file "$S" /work/alice-running carol
is "$(jb .stdout)" seen "carol saw alice's exec running"
sx "$S" '{"agent":"alice","request_id":"a-second","shell":"echo too-soon"}'
is "$CODE" 409 "alice's second exec while her first runs: 409"
like "$(jb .error)" "agent 'alice' has an exec running: an agent's steps run one at a time \\(request a-hold\\)" \
  "the refusal names the agent and the request running"
sx "$S" '{"agent":"dave","request_id":"a-hold","shell":"echo twice"}'
is "$CODE" 409 "another agent's exec with the request id still running: 409 (never run twice)"
req POST "/v1/sessions/$S/reset"
is "$CODE" 409 "a reset while an agent's exec runs: 409"
like "$(jb .error)" "busy: 1 exec running \\(agent 'alice'\\).*needs the session alone" "it says which agent runs"
post_json "/v1/sessions/$S/snapshot" '{"name":"agents-snap-'$$'","ttl":60}'
is "$CODE" 409 "a snapshot (a fork's source) while an exec runs: 409"
req PUT "/v1/sessions/$S/files?path=/work/x.txt" --data-binary 'x'
is "$CODE" 409 "a file write while an exec runs: 409"
post_json "/v1/sessions/$S/judge" '{"problem":{"kind":"episode","command":"true"}}'
is "$CODE" 409 "a grade while an exec runs: 409"
sx "$S" '{"agent":"carol","shell":"touch /work/go; echo go"}'
is "$(jb '[.status, .stdout] | join(" ")')" "OK go" "carol releases alice"
wait "$PH"
is "$(jq -r '[.status, .stdout] | join(" ")' "$TMPD/hold.body")" "OK released" "alice's held exec ended"
sx "$S" '{"agent":"alice","request_id":"a-second","shell":"echo now"}'
is "$(jb '[.status, (.stdout | rtrimstr("\n")), .agent] | join(" ")')" "OK now alice" "alice's next exec runs once her first ended"
sx "$S" '{"agent":"bob","request_id":"a-second","shell":"echo not-run"}'
is "$(jb '[(.stdout | rtrimstr("\n")), .agent] | join(" ")')" "now alice" \
  "a retry of a recorded request id answers the record, with the agent that ran it"
req PUT "/v1/sessions/$S/files?path=/work/x.txt" --data-binary 'x'
is "$CODE" 200 "with no exec running, a file write goes through"
post_json "/v1/sessions/$S/judge" '{"problem":{"kind":"episode","command":"test -e /work/from-alice && test -e /work/from-bob"}}'
is "$(jb '[.verdict.output.status, (.steps|tostring)] | join(" ")')" "pass 7" \
  "the grade sees both agents' files and counts every agent's steps"

# --- the trajectory -------------------------------------------------------------------------------
req GET "/v1/sessions/$S/trajectory"
cp "$BODY" "$TMPD/traj"
is "$(jq -s -r '[.[] | select(.kind == "exec") | .agent // "-"] | sort | join(" ")' "$TMPD/traj")" \
  "alice alice alice bob carol carol" "every exec line names its agent (a retry is no line)"
is "$(jq -s '[.[].ended_at // empty] | . == sort' "$TMPD/traj")" true \
  "the lines are in time order (ended_at never goes back)"
is "$(jq -s '[.[].step] == [range(0; length)]' "$TMPD/traj")" true "and numbered 0, 1, 2, ... as they were written"
is "$(jq -s -r 'map(select(.request_id == "a-1" or .request_id == "b-1")) | (.[0].ended_at > .[1].started_at and .[1].ended_at > .[0].started_at)' "$TMPD/traj")" \
  true "alice's and bob's first steps overlap in time in the trajectory"
is "$(jq -s -r '.[] | select(.request_id == "b-1") | .observation.output_request_id' "$TMPD/traj")" b-1 \
  "a line's output_request_id is its own exec's"

# --- streamed, an agent named ---------------------------------------------------------------------
bg_exec s1 "$S" '{"agent":"streamer","stream":true,"timeout":50,"shell":"echo part1; touch /work/s-started; while [ ! -e /work/s-go ]; do sleep 0.05; done; echo part2"}'
PS=$!
wait_file "$S" /work/s-started watcher
sx "$S" '{"agent":"streamer","shell":"echo second"}'
is "$CODE" 409 "a streamed exec holds its agent too"
sx "$S" '{"agent":"watcher","shell":"touch /work/s-go"}'
wait "$PS"
is "$(jq -r 'select(.event == "started") | .agent' "$TMPD/s1.body")" streamer "the stream's started line names the agent"
is "$(jq -r 'select(.event == "result") | [.agent, .status] | join(" ")' "$TMPD/s1.body")" "streamer OK" \
  "its result line too"

# --- the budget counts every agent's steps ---------------------------------------------------------
post_json /v1/sessions '{"template":"bash","budget":{"steps":3}}'
B=$(jb .session_id); mine+=("$B")
# both spin once both are in: each one's cpu_ms is the sandbox's while it ran, the other's included
SPIN='i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'
bg_exec ba "$B" '{"agent":"a","timeout":50,"shell":"touch /work/a; while [ ! -e /work/b ]; do sleep 0.05; done; '"$SPIN"'"}'
PB=$!
sx "$B" '{"agent":"b","timeout":50,"shell":"touch /work/b; while [ ! -e /work/a ]; do sleep 0.05; done; '"$SPIN"'"}'
is "$CODE" 200 "budget: agent b's step, beside a's"
CPU_B=$(jb .cpu_ms)
wait "$PB"
is "$(cat "$TMPD/ba.code")" 200 "budget: agent a's step"
CPU_A=$(jq -r .cpu_ms "$TMPD/ba.body")
sx "$B" '{"agent":"c","shell":"true"}'
is "$CODE" 200 "budget: a third agent's step, the third of three"
sx "$B" '{"agent":"a","shell":"true"}'
is "$CODE" 409 "budget: a fourth step, whichever agent's, is refused"
is "$(jb '[.spent.steps, (.exceeded | join(","))] | join(" ")')" "3 steps" "the budget counted the three agents' steps together"
SPENT=$(jb '.spent.cpu_s * 1000 | floor')
ok "$([ "$((SPENT + 100))" -lt "$((CPU_A + CPU_B))" ] && echo 0 || echo 1)" \
  "the budget's CPU counts the overlap of a's and b's steps once ($SPENT ms spent; their cpu_ms $CPU_A + $CPU_B)"

# --- without agent: as before ----------------------------------------------------------------------
post_json /v1/sessions '{"template":"bash"}'
D=$(jb .session_id); mine+=("$D")
bg_exec d1 "$D" '{"timeout":50,"shell":"touch /work/d-running; while [ ! -e /work/d-go ]; do sleep 0.05; done; echo d1"}'
PD=$!
wait_file "$D" /work/d-running helper
sx "$D" '{"shell":"echo second"}'
is "$CODE" 409 "without agent: a second exec while one runs is 409, as before"
like "$(jb .error)" "the default agent has an exec running" "the refusal says the default agent runs"
sx "$D" '{"agent":"helper","shell":"touch /work/d-go"}'
wait "$PD"
is "$(jq -r '[(.stdout | rtrimstr("\n")), has("agent")] | join(" ")' "$TMPD/d1.body")" "d1 false" "an exec without agent: no agent in its answer"
req GET "/v1/sessions/$D/trajectory"
is "$(jq -s -r '[.[] | select(.kind == "exec") | has("agent")] | sort | join(" ")' "$BODY")" "false true true" \
  "its trajectory line has no agent (the helper's have theirs)"

# --- bad names ------------------------------------------------------------------------------------
sx "$D" '{"agent":"","shell":"true"}'
is "$CODE" 400 "agent \"\": 400"
sx "$D" '{"agent":7,"shell":"true"}'
is "$CODE" 400 "agent 7: 400"
sx "$D" '{"agent":"no spaces","shell":"true"}'
is "$CODE" 400 "an agent name with a space: 400"
like "$(jb .error)" '^agent: ' "the error names the field"

# --- one agent's limit kill spares the others' programs, even one started after its step began ------
post_json /v1/sessions '{"template":"bash"}'
K=$(jb .session_id); mine+=("$K")
bg_exec kb "$K" '{"agent":"bob","timeout":4,"shell":"touch /work/b-run; sleep 100"}'
PKB=$!
wait_file "$K" /work/b-run carol
bg_exec ka "$K" '{"agent":"alice","timeout":50,"shell":"touch /work/a-run; while [ ! -e /work/go ]; do sleep 0.05; done; echo alice-alive"}'
PKA=$!
wait_file "$K" /work/a-run carol
is "$(jb .stdout)" seen "alice's program runs while bob's does"
wait "$PKB"
is "$(jq -r .status "$TMPD/kb.body")" TO "bob's step hit its time limit (its sessions killed, the sandbox kept)"
sx "$K" '{"agent":"carol","shell":"touch /work/go"}'
wait "$PKA"
is "$(jq -r '[.status, (.stdout | rtrimstr("\n"))] | join(" ")' "$TMPD/ka.body")" "OK alice-alive" \
  "alice's program, started after bob's step began, outlived bob's step kill"

# --- replay: the agents' steps, each as its agent, one at a time ----------------------------------
post_json /v1/sessions '{"template":"bash"}'
R=$(jb .session_id); mine+=("$R")
sx "$R" '{"agent":"x","request_id":"rx","shell":"echo from-x > /work/x; cat /work/x"}'
sx "$R" '{"agent":"y","request_id":"ry","shell":"cat /work/x; echo y"}'
sx "$R" '{"request_id":"rz","shell":"echo z"}'
req POST "/v1/sessions/$R/replay"
is "$(jb '[.replayed, .matched] | join(" ")')" "3 3" "a replay of an agents' trajectory: every step replayed and matched"
RT=$(jb .replay_trajectory_id); mine+=("$RT")
req GET "/v1/sessions/$RT/trajectory"
is "$(jq -s -r '[.[] | select(.kind == "exec") | .agent // "-"] | join(" ")' "$BODY")" "x y -" \
  "the replay's trajectory names the same agents"

req DELETE "/v1/sessions/$S"
is "$CODE" 200 "the session closes"
