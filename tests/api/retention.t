#!/usr/bin/env bash
# Trajectory retention (issue 23): paddock serve --trajectory-retention SECS deletes the
# trajectories of ended sessions older than that, never one of a session still open.
source "$(dirname "$0")/api.sh"
plan 7

# a state directory of its own: a retention of 1 s prunes every ended session's trajectory there
export PADDOCK_STATE_DIR=$TMPD/state
TRAJ_DIR=$PADDOCK_STATE_DIR/trajectories
start_daemon --trajectory-retention 1
ok $? "daemon started with --trajectory-retention 1"
req GET /healthz
like "$(jb .run_id)" '^[0-9a-f]{8}$' "/healthz names the daemon's run (its session ids carry it)"
post_json /v1/sessions '{"template":"bash"}'
O=$(jb .session_id)
post_json "/v1/sessions/$O/exec" '{"shell":"echo open"}'
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
post_json "/v1/sessions/$S/exec" '{"shell":"echo ended"}'
req DELETE "/v1/sessions/$S"
test -s "$TRAJ_DIR/$S.jsonl"; ok $? "an ended session's trajectory is there at first"
gone() { [ ! -e "$TRAJ_DIR/$S.jsonl" ]; }
wait_for 60 gone; ok $? "past the retention it is deleted"
test -s "$TRAJ_DIR/$O.jsonl"; ok $? "an open session's trajectory is kept, however old"
post_json "/v1/sessions/$O/exec" '{"shell":"echo still"}'
is "$(jb .stdout)" still "and the session goes on"
"$PADDOCK" serve --trajectory-retention soon --listen 127.0.0.1:0 >"$TMPD/bad.out" 2>&1
is "$?" 64 "a retention that is not a number of seconds is refused (usage error, 64)"
req DELETE "/v1/sessions/$O"
