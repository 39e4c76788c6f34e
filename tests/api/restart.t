#!/usr/bin/env bash
# Sessions and daemon restarts (issue 23). A sandbox never outlives its daemon, so a session open
# when the daemon stopped (SIGTERM) or died (SIGKILL) is lost: after the restart a request about
# it is answered at once with 410, state LOST and the reason, and its trajectory ends with a
# closing line that says so; what survives is on disk (the trajectory, snapshots: a fork from a
# snapshot taken before the restart works). A daemon starting on the same state directory never
# declares the sessions of a live daemon lost.
source "$(dirname "$0")/api.sh"
plan 22

STATE=${PADDOCK_STATE_DIR:-/var/lib/paddock}
sx() { post_json "/v1/sessions/$1/exec" "$2"; }
keep() { echo "$1" >>"$TMPD/ids"; }
SNAP=snap-$TAG
OTHER=""
cleanup 'for t in $(cat "$TMPD/ids" 2>/dev/null); do rm -f "$STATE/trajectories/$t.jsonl"; done; rm -rf "$STATE/snapshots/$SNAP"'
cleanup '[ -n "$OTHER" ] && kill -KILL "$OTHER" && wait "$OTHER"'

start_daemon
ok $? "daemon started"
post_json /v1/sessions '{"template":"bash"}'
S1=$(jb .session_id); keep "$S1"
sx "$S1" '{"shell":"echo prepared > /work/state.txt","request_id":"prep"}'
post_json "/v1/sessions/$S1/snapshot" "{\"name\":\"$SNAP\",\"ttl\":600}"
is "$CODE" 201 "a snapshot before the restart"

# --- a daemon that stops with the session open ------------------------------------------------------
stop_daemon
is "$DAEMON_RC" 0 "the daemon stopped (SIGTERM) with a session open"
is "$(tail -1 "$STATE/trajectories/$S1.jsonl" | jq -r '[.kind, .lost, (.reason | startswith("lost: the daemon stopped"))] | join(" ")')" \
  "close true true" "its trajectory's closing line says the session was lost with the daemon"
start_daemon
ok $? "daemon restarted"
req GET "/v1/sessions/$S1"
is "$CODE" 410 "GET the lost session after the restart: 410, not 404"
is "$(jb '[.session_id, .state] | join(" ")')" "$S1 LOST" "it is reported LOST"
like "$(jb .reason)" "daemon stopped" "with the reason"
REQ_TIMEOUT=20 sx "$S1" '{"shell":"echo hello"}'
is "$CODE" 410 "an exec on it is answered at once: 410"
like "$(jb .error)" "has ended: lost" "the error says why"
post_json /v1/sessions "{\"from_snapshot\":\"$SNAP\"}"
is "$CODE" 201 "a snapshot taken before the restart still forks"
F=$(jb .session_id); keep "$F"
sx "$F" '{"shell":"cat /work/state.txt"}'
is "$(jb .stdout)" prepared "the fork has the snapshot's files"

# --- a daemon that dies with the session open --------------------------------------------------------
post_json /v1/sessions '{"template":"bash"}'
S2=$(jb .session_id); keep "$S2"
sx "$S2" '{"shell":"echo one","request_id":"one"}'
steps_before=$(wc -l <"$STATE/trajectories/$S2.jsonl")
test -d "$STATE/sessions/$S2"; ok $? "an open session has its directory (spilled output)"
kill -KILL "$DPID"; wait "$DPID" 2>/dev/null; DPID=""
test -z "$(tail -1 "$STATE/trajectories/$S2.jsonl" | jq -r 'select(.kind == "close") | .kind')"
ok $? "killed: no closing line yet"
start_daemon
ok $? "daemon restarted after SIGKILL"
is "$(tail -1 "$STATE/trajectories/$S2.jsonl" | jq -r '[.kind, .lost, .step, (.reason | test("ended without closing it"))] | join(" ")')" \
  "close true $steps_before true" "the next daemon closed its trajectory as lost, numbered after its last step"
test ! -e "$STATE/sessions/$S2"; ok $? "and removed its spilled output"
req POST "/v1/sessions/$S2/reset"
is "$(jb "[\"$CODE\", .state] | join(\" \")")" "410 LOST" "any operation on it: 410 LOST"
req GET "/v1/sessions/$S2/trajectory"
is "$(jq -s -r '[.[0].kind, .[1].request_id, .[-1].kind] | join(" ")' "$BODY")" "session one close" \
  "its trajectory is served whole, closing line last"

# --- another daemon on the same state directory leaves a live daemon's sessions alone -------------
post_json /v1/sessions '{"template":"bash"}'
S3=$(jb .session_id); keep "$S3"
MAIN_U=$U MAIN_PID=$DPID
start_daemon
OTHER=$DPID
ok $? "a second daemon started on the same state directory"
U=$MAIN_U DPID=$MAIN_PID
sx "$S3" '{"shell":"echo still-mine"}'
is "$(jb '[.status, .stdout] | join(" ")')" "OK still-mine" "the first daemon's session is untouched"
is "$(jq -r .kind "$STATE/trajectories/$S3.jsonl" | grep -c close)" 0 "and its trajectory was not closed"
kill -TERM "$OTHER"; wait "$OTHER" 2>/dev/null; OTHER=""
req DELETE "/v1/sessions/$S3"
req DELETE "/v1/sessions/$F"
