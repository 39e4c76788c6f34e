#!/usr/bin/env bash
# Long session steps (issue 23): an exec with "stream": true sends its output while it runs (JSON
# lines, chunked: started, output..., result); "idle_timeout" kills a step that writes nothing for
# that long (TO, idle_timeout: true) and returns the output produced until the kill; the session
# goes on.
source "$(dirname "$0")/api.sh"
plan 24

start_daemon
ok $? "daemon started"
TRAJ_DIR=${PADDOCK_STATE_DIR:-/var/lib/paddock}/trajectories
sx() { post_json "/v1/sessions/$1/exec" "$2"; }
mine=()
cleanup 'for t in "${mine[@]}"; do rm -f "$TRAJ_DIR/$t.jsonl"; done'
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id); mine+=("$S")

# --- the no-output timeout ------------------------------------------------------------------------
sx "$S" '{"shell":"echo said-something; sleep 60; echo never","idle_timeout":1,"timeout":120,"request_id":"quiet"}'
is "$(jb '[.status, .idle_timeout, (.stdout | rtrimstr("\n"))] | join(" ")')" "TO true said-something" \
  "a step silent past its idle_timeout: TO, idle_timeout, the output until the kill"
sx "$S" '{"shell":"for i in 1 2 3 4 5 6; do echo tick; sleep 0.2; done","idle_timeout":5,"request_id":"chatty"}'
is "$(jb '[.status, .idle_timeout, (.stdout | split("\n") | length)] | join(" ")')" "OK false 7" \
  "a step that keeps writing runs to its end (the timer restarts with each write)"
sx "$S" '{"shell":"sleep 60","timeout":1}'
is "$(jb '[.status, .idle_timeout] | join(" ")')" "TO false" "a wall-time TO is not an idle one"
sx "$S" '{"shell":"echo alive"}'
is "$(jb '[.status, .stdout] | join(" ")')" "OK alive" "the session goes on after an idle timeout"
sx "$S" '{"shell":"true","idle_timeout":-1}'
is "$CODE" 400 "a negative idle_timeout is refused"

# --- streaming ------------------------------------------------------------------------------------
# The client reads the lines as they come: the first output arrives while the step still runs (the
# session is RUNNING; the step then ends by its idle timeout, 5 s after its last write).
python3 - "$U" "$S" >"$TMPD/live.out" 2>&1 <<'PY'
import json, sys, urllib.request
u, s = sys.argv[1], sys.argv[2]
body = json.dumps({"shell": "echo first; sleep 60; echo never", "stream": True, "idle_timeout": 5,
                   "timeout": 120, "request_id": "live-1"}).encode()
r = urllib.request.urlopen(urllib.request.Request(u + "/v1/sessions/%s/exec" % s, data=body,
                           headers={"Content-Type": "application/json"}), timeout=60)
print("type", r.headers.get("Content-Type"))
events = []
while True:
    line = r.readline()
    if not line:
        break
    ev = json.loads(line)
    events.append(ev)
    if ev["event"] == "output" and ev["data"] == "first\n":
        st = json.load(urllib.request.urlopen(u + "/v1/sessions/" + s, timeout=30))
        print("state-at-first", st["state"])
print("events", " ".join(e["event"] for e in events))
print("first", json.dumps(events[0]))
last = events[-1]
print("result", last["status"], last["idle_timeout"], json.dumps(last["stdout"]), last["request_id"],
      last["stream_dropped_bytes"])
PY
like "$(grep '^type' "$TMPD/live.out")" "application/x-ndjson" "a streamed exec answers JSON lines ($(head -c 300 "$TMPD/live.out"))"
is "$(grep '^state-at-first' "$TMPD/live.out")" "state-at-first RUNNING" \
  "the first output arrives while the step still runs"
is "$(grep '^events' "$TMPD/live.out")" "events started output result" "the events: started, output, result"
is "$(grep '^first' "$TMPD/live.out")" 'first {"event": "started", "request_id": "live-1"}' "started names the request id"
is "$(grep '^result' "$TMPD/live.out")" 'result TO True "first\n" live-1 0' \
  "the result line: TO by the idle timeout, with the output produced until the kill"

# a UTF-8 character cut across two writes arrives whole; stderr is streamed too
req POST "/v1/sessions/$S/exec" -H 'Content-Type: application/json' --data-binary \
  '{"shell":"printf \"\\303\"; sleep 0.3; printf \"\\251\\n\"; echo err >&2","stream":true}'
is "$CODE" 200 "stream: 200"
is "$(jq -rj 'select(.event == "output" and .stream == "stdout") | .data' "$BODY")" "é" \
  "a character cut across two writes is sent whole"
is "$(jq -rj 'select(.event == "output" and .stream == "stderr") | .data' "$BODY")" "err" "stderr is streamed"
is "$(tail -1 "$BODY" | jq -r '[.event, .status, .stdout] | join(" ")')" "result OK é" "the last line is the result, with the kept output"
is "$(jq -s 'map(select(.event == "result")) | length' "$BODY")" 1 "one result line"

# many lines: all of them arrive, in order
req POST "/v1/sessions/$S/exec" -H 'Content-Type: application/json' --data-binary \
  '{"shell":"seq 1 20000","stream":true,"request_id":"seq"}'
is "$(jq -rj 'select(.event == "output") | .data' "$BODY" | md5sum)" "$(seq 1 20000 | md5sum)" \
  "a long output streams whole and in order"
is "$(tail -1 "$BODY" | jq -r '[.status, .stdout_bytes, .stream_dropped_bytes] | join(" ")')" "OK $(seq 1 20000 | wc -c) 0" \
  "its result counts the same bytes, none dropped"

# a retried request id is answered from the record: one result line, nothing run again
req POST "/v1/sessions/$S/exec" -H 'Content-Type: application/json' --data-binary \
  '{"shell":"echo again","stream":true,"request_id":"live-1"}'
is "$(jq -s -r 'map(.event) | join(" ")' "$BODY")" "result" "a retry: only the result line"
is "$(jq -r '.stdout' "$BODY")" "first" "with the recorded output"

# refusals keep their status
sx "$S" '{"shell":"true","stream":"yes"}'
is "$CODE" 400 "stream must be a boolean"
req DELETE "/v1/sessions/$S"
sx "$S" '{"shell":"echo gone","stream":true}'
is "$CODE" 404 "a streamed exec on a closed session: 404, not a stream"

# the trajectory keeps the idle timeout asked for (a replay runs the step with it)
req GET "/v1/sessions/$S/trajectory"
is "$(jq -r 'select(.request_id == "quiet") | [.action.idle_timeout_ms, .observation.status, .observation.idle_timeout] | join(" ")' "$BODY")" \
  "1000 TO true" "the trajectory records the idle timeout and its outcome"
is "$(jq -r 'select(.request_id == "live-1") | [.observation.status, .observation.stdout] | join(" ")' "$BODY")" \
  "TO first" "a streamed step is recorded like any other"
