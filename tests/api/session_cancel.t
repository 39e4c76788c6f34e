#!/usr/bin/env bash
# A session step whose client leaves is cancelled: its program (and what it started) is killed,
# the session goes on with its state, the step's trajectory line says cancelled, and the metric
# counts it. Without the cancel, the step would run for nobody to its own time limit (here
# 120 s) and hold the session busy (409) all that time.
source "$(dirname "$0")/api.sh"
plan 9

start_daemon
ok $? "daemon started"

post_json /v1/sessions '{"template": "bash"}'
is "$CODE" 201 "a session"
S=$(jb .session_id)

post_json "/v1/sessions/$S/exec" '{"shell": "echo kept > /work/state"}'
is "$CODE $(jb .status)" "200 OK" "a first step leaves a file"

# a client that gives up after 1 s on a step that would run 100 s (limit 120 s)
curl -s -m 1 -o /dev/null -H 'Content-Type: application/json' -H 'X-Request-Id: left' \
  -d '{"shell": "sleep 100 & sleep 100; echo never", "timeout": 120}' "$U/v1/sessions/$S/exec"
is "$?" 28 "the client gave up (curl's time-out)"

# the session takes steps again once the abandoned one is gone (409 while it runs)
free() { post_json "/v1/sessions/$S/exec" '{"shell": "cat /work/state; ps -e -o comm= | grep -c sleep || true"}'; [ "$CODE" = 200 ]; }
wait_for 60 free
ok $? "the session takes the next step (it was busy: $CODE)"
is "$(jb .stdout)" "$(printf 'kept\n0\n')" "... its state kept, no sleep of the abandoned step left"

req GET "/v1/sessions/$S/trajectory"
is "$(jq -r 'select(.request_id == "left") | .observation.cancelled' "$BODY")" true \
  "the abandoned step's trajectory line says cancelled"

req GET /metrics
m=$(awk '/^paddock_session_steps_cancelled_total / {print $2}' "$BODY")
is "$m" 1 "paddock_session_steps_cancelled_total counts it"

req DELETE "/v1/sessions/$S"
is "$CODE" 200 "the session closes as usual"

stop_daemon
