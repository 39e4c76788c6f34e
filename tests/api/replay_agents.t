#!/usr/bin/env bash
# A replay of several agents' overlapping steps (issue 40, server/http/replay_agents.c): two
# agents' execs that each wait for the other's file (so they only finish beside each other) were
# recorded running at once; the replay runs them at once again, so both end OK and match (one at a
# time, the first would wait alone until its time limit). Steps that did not overlap stay in order
# (an agent reading what the other wrote before it started), and an agent's own steps are never
# run beside each other.
source "$(dirname "$0")/api.sh"
plan 9

start_daemon
ok $? "daemon started"
TRAJ_DIR=${PADDOCK_STATE_DIR:-/var/lib/paddock}/trajectories
mine=()
cleanup 'for t in "${mine[@]}"; do rm -f "$TRAJ_DIR/$t.jsonl"; done'
sx() { post_json "/v1/sessions/$1/exec" "$2"; }

post_json /v1/sessions '{"template":"bash"}'
R=$(jb .session_id); mine+=("$R")
sx "$R" '{"agent":"setup","request_id":"r0","shell":"echo base > /work/base"}'
# alice and bob at once, each waiting for the other's file (8 s each at most)
curl -s -m 30 -o "$TMPD/alice.body" -H 'Content-Type: application/json' --data-binary \
  '{"agent":"alice","request_id":"ra","timeout":8,"shell":"touch /work/from-alice; while [ ! -e /work/from-bob ]; do sleep 0.05; done; echo alice-saw-bob"}' \
  "$U/v1/sessions/$R/exec" &
PA=$!
sx "$R" '{"agent":"bob","request_id":"rb","timeout":8,"shell":"touch /work/from-bob; while [ ! -e /work/from-alice ]; do sleep 0.05; done; echo bob-saw-alice"}'
wait "$PA"
is "$(jq -r .status "$TMPD/alice.body") $(jb .status)" "OK OK" "recorded: alice and bob ran at once, each saw the other's file"
sx "$R" '{"agent":"alice","request_id":"rc","shell":"cat /work/base; ls /work"}'
req POST "/v1/sessions/$R/replay"
is "$CODE" 200 "the replay: 200"
is "$(jb '[.replayed, .matched, .not_replayed] | map(tostring) | join(" ")')" "4 4 0" \
  "every step replayed and matched: the overlapping pair ran at once again"
is "$(jb '[.steps[] | .request_id] | join(" ")')" "r0 $(jb '[.steps[1,2] | .request_id] | join(" ")') rc" \
  "the report keeps the trajectory's order"
is "$(jb '[.steps[1,2] | .request_id] | sort | join(" ")')" "ra rb" "... with the pair in the middle"
jq -c ".steps[] | select(.match != true)" "$BODY" | sed "s/^/# /"
RT=$(jb .replay_trajectory_id); mine+=("$RT")
req GET "/v1/sessions/$RT/trajectory"
is "$(jq -s -r '[.[] | select(.kind == "exec") | select(.request_id == "ra" or .request_id == "rb") | .observation.status] | join(" ")' "$BODY")" "OK OK" \
  "in the replay's trajectory both ended OK (neither at its time limit)"
is "$(jq -s -r '[.[] | select(.kind == "exec") | .agent] | join(" ")' "$BODY" | tr ' ' '\n' | sort | tr '\n' ' ')" "alice alice bob setup " \
  "each as its agent"
# overlapping in time is not enough: an agent's own steps run one at a time
jq -c '.' "$TRAJ_DIR/$R.jsonl" >"$TMPD/t.jsonl"
python3 - "$TMPD/t.jsonl" >"$TMPD/t2.jsonl" <<'EOF_PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
# the last step (alice's rc) recorded as if it had started inside the pair's span
pair = [l for l in lines if l.get("request_id") in ("ra", "rb")]
rc = next(l for l in lines if l.get("request_id") == "rc")
rc["started_at"] = min(p["started_at"] for p in pair)
for l in lines:
    print(json.dumps(l))
EOF_PY
req POST /v1/replay --data-binary @"$TMPD/t2.jsonl"
is "$(jb '[.replayed, .matched] | map(tostring) | join(" ")')" "4 4" \
  "alice's later step, said to overlap the pair, still waits for her first (run in order, matched)"
mine+=("$(jb .replay_trajectory_id)")
req DELETE "/v1/sessions/$R"
