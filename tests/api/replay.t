#!/usr/bin/env bash
# paddock replay and paddock export (issue 23): a deterministic session replays with every step
# matching (in a daemon by --url and in one started by the command, --local); a nondeterministic one
# is pinpointed at its first divergent step, with what differs (output, files changed); export
# writes the trajectory's lines and an ATIF document.
source "$(dirname "$0")/api.sh"
plan 27

start_daemon
ok $? "daemon started"
TRAJ_DIR=${PADDOCK_STATE_DIR:-/var/lib/paddock}/trajectories
sx() { post_json "/v1/sessions/$1/exec" "$2"; }
cleanup 'for t in $(cat "$TMPD/ids" 2>/dev/null); do rm -f "$TRAJ_DIR/$t.jsonl"; done'
keep() { echo "$1" >>"$TMPD/ids"; }

# --- a deterministic session ----------------------------------------------------------------------
post_json /v1/sessions '{"template":"bash"}'
D=$(jb .session_id); keep "$D"
req PUT "/v1/sessions/$D/files?path=/work/src/a%20file.txt" -H 'X-Request-Id: w1' --data-binary 'line one'
sx "$D" '{"shell":"cat \"/work/src/a file.txt\"; echo; sort -r > /work/sorted","stdin":"b\na\nc\n","request_id":"e1"}'
sx "$D" '{"cmd":["sh","-c","ls -R /work; exit 3"],"cwd":"/work/src","request_id":"e2"}'
is "$(jb .exit_code)" 3 "a recorded step that exits 3"
req GET "/v1/sessions/$D/files?path=/work/sorted" -H 'X-Request-Id: r1'
req DELETE "/v1/sessions/$D/files?path=/work/sorted" -H 'X-Request-Id: d1'
req POST "/v1/sessions/$D/reset" -H 'X-Request-Id: reset'
sx "$D" '{"shell":"echo after reset > /work/z; cat /work/z","request_id":"e3"}'
req DELETE "/v1/sessions/$D"
req GET "/v1/sessions/$D/trajectory"
cp "$BODY" "$TMPD/det.jsonl"

"$PADDOCK" replay "$TMPD/det.jsonl" --url "$U" --json >"$TMPD/rep.out" 2>"$TMPD/rep.err"
is "$?" 0 "replay of a deterministic session (--url): exit 0"
is "$(tail -1 "$TMPD/rep.out" | jq -r '[.replayed, .matched, .first_divergent_step] | map(tostring) | join(" ")')" "7 7 null" \
  "every one of its 7 steps replayed and matched, no divergent step"
is "$(head -n -1 "$TMPD/rep.out" | jq -r .kind | tr '\n' ' ')" "write exec exec read delete reset exec " "the steps in their order"
keep "$(tail -1 "$TMPD/rep.out" | jq -r .replay_trajectory_id)"

"$PADDOCK" replay "$D" --url "$U" >"$TMPD/rep2.out" 2>&1
is "$?" 0 "replay by session id from the daemon's trajectory: exit 0"
like "$(cat "$TMPD/rep2.out")" "7 of 7 replayed steps match" "the text report says so"
keep "$(sed -n 's/^replay trajectory: //p' "$TMPD/rep2.out")"

"$PADDOCK" replay "$TMPD/det.jsonl" --local --json >"$TMPD/rep3.out" 2>"$TMPD/rep3.err"
is "$?" 0 "replay in a daemon of its own (--local): exit 0"
is "$(tail -1 "$TMPD/rep3.out" | jq -r '.matched')" 7 "--local: every step matched"
keep "$(tail -1 "$TMPD/rep3.out" | jq -r .replay_trajectory_id)"

# --- a nondeterministic session -------------------------------------------------------------------
post_json /v1/sessions '{"template":"bash"}'
N=$(jb .session_id); keep "$N"
sx "$N" '{"shell":"echo stable","request_id":"n1"}'
sx "$N" '{"shell":"echo stable too > /work/s","request_id":"n2"}'
sx "$N" '{"shell":"head -c 16 /dev/urandom | od -An -tx1 > /work/random; cat /work/random","request_id":"n3"}'
sx "$N" '{"shell":"echo stable again","request_id":"n4"}'
req DELETE "/v1/sessions/$N"
req GET "/v1/sessions/$N/trajectory"
cp "$BODY" "$TMPD/nondet.jsonl"
"$PADDOCK" replay "$TMPD/nondet.jsonl" --url "$U" --json >"$TMPD/nd.out" 2>"$TMPD/nd.err"
is "$?" 1 "replay of a nondeterministic session: exit 1"
is "$(tail -1 "$TMPD/nd.out" | jq -r .first_divergent_step)" 3 "the first divergent step is pinpointed (step 3)"
is "$(jq -r 'select(.step == 3) | .diffs | map(split(":")[0]) | join(",")' "$TMPD/nd.out")" "stdout,files_changed" \
  "what differs there: the output and the file it wrote"
is "$(jq -r 'select(.step != null and .step != 3) | .match' "$TMPD/nd.out" | sort -u)" true "the other steps match"
keep "$(tail -1 "$TMPD/nd.out" | jq -r .replay_trajectory_id)"

# --- the replay endpoint --------------------------------------------------------------------------
req POST "/v1/sessions/$N/replay"
is "$CODE" 200 "POST /v1/sessions/{id}/replay of an ended session: 200"
is "$(jb '[.replayed, .matched, .first_divergent_step, (.steps | length), .trajectory_id] | map(tostring) | join(" ")')" "4 3 3 4 $N" \
  "the endpoint pinpoints the same first divergent step"
is "$(jb '.steps[] | select(.step == 3) | .diffs | map(split(":")[0]) | join(",")')" "stdout,files_changed" "and says what differs"
keep "$(jb .replay_trajectory_id)"
req GET "/v1/sessions/$(jb .replay_trajectory_id)/trajectory"
is "$(jq -r .metadata.replay_of "$BODY" | head -1)" "$N" "the replay's own trajectory names what it replayed"
req POST /v1/replay -H 'Content-Type: application/x-ndjson' --data-binary "@$TMPD/det.jsonl"
is "$(jb '[.replayed, .matched, .first_divergent_step] | map(tostring) | join(" ")')" "7 7 null" \
  "POST /v1/replay with a trajectory's lines: every step matches"
keep "$(jb .replay_trajectory_id)"
req POST "/v1/sessions/no-such-session/replay"
is "$CODE" 404 "replay of an unknown trajectory: 404"
req POST /v1/replay --data-binary 'not a trajectory'
is "$CODE" 400 "a body that is not a trajectory: 400"

# --- export ---------------------------------------------------------------------------------------
"$PADDOCK" export "$D" --url "$U" >"$TMPD/exp.jsonl"
is "$?" 0 "export (jsonl) from the daemon: exit 0"
is "$(jq -c . "$TMPD/exp.jsonl" | md5sum)" "$(jq -c . "$TMPD/det.jsonl" | md5sum)" "export jsonl: the trajectory's lines"
"$PADDOCK" export "$TMPD/det.jsonl" --format atif -o "$TMPD/atif.json"
is "$?" 0 "export --format atif from a file: exit 0"
is "$(jq -r '[.schema_version, .session_id, (.steps | length)] | map(tostring) | join(" ")' "$TMPD/atif.json")" "ATIF-v1.4 $D 7" \
  "ATIF: schema version, session, one step per action"
is "$(jq -r '[.steps[] | .tool_calls[0].function_name] | join(" ")' "$TMPD/atif.json")" "write exec exec read delete reset exec" \
  "ATIF: each step's tool call is the action"
is "$(jq -r '[.steps[] | (.tool_calls[0].tool_call_id == .observation.results[0].source_call_id)] | all' "$TMPD/atif.json")" true \
  "ATIF: each observation answers its tool call"
"$PADDOCK" export "$TMPD/no-such-file.jsonl" >/dev/null 2>&1
is "$?" 2 "export of a missing file: exit 2"
