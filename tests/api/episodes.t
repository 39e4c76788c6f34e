#!/usr/bin/env bash
# Agent episodes over HTTP (issue 23): a step's time, output and memory limits end the step and not
# the session (unless end_on_limit); POST /v1/sessions/{id}/reset; the trajectory of every step
# (request ids from the body and X-Request-Id, group/sample ids, files changed with digests), read
# back byte-exact after the session ended and after a daemon restart; fast-forward from a recorded
# trajectory never re-runs a recorded step.
source "$(dirname "$0")/api.sh"
plan 69

cat >"$TMPD/templates.json" <<'EOF2'
{"templates": [
  {"name": "bash", "requires": ["bash"], "cwd": "/work",
   "limits": {"memory": "128M", "output_kill": "1M", "wall_time": 20}}
]}
EOF2
start_daemon --templates "$TMPD/templates.json"
ok $? "daemon started"
TRAJ_DIR=${PADDOCK_STATE_DIR:-/var/lib/paddock}/trajectories
sx() { post_json "/v1/sessions/$1/exec" "$2"; }
mine=()
cleanup 'for t in "${mine[@]}"; do rm -f "$TRAJ_DIR/$t.jsonl"; done'

# --- sessions that survive ------------------------------------------------------------------------
post_json /v1/sessions '{"template":"bash","group_id":"grp-7","sample_id":"s-3","metadata":{"task":"t1"}}'
is "$CODE" 201 "create with group_id and sample_id: 201"
S=$(jb .session_id); mine+=("$S")
sx "$S" '{"shell":"sleep 1000 >/dev/null 2>&1 & echo $! > /work/bg.pid","request_id":"bg"}'
is "$(jb .status)" OK "a background process started by one step"
sx "$S" '{"shell":"echo before-the-kill; sleep 60; echo never","timeout":1,"request_id":"slow"}'
is "$(jb .status)" TO "a step past its timeout: TO"
is "$(jb .stdout)" before-the-kill "the timed-out step returns the output produced until the kill"
sx "$S" '{"shell":"echo still-here","request_id":"after-to"}'
is "$CODE" 200 "the session goes on after a TO"
is "$(jb .stdout)" still-here "the next step runs"
sx "$S" '{"shell":"kill -0 $(cat /work/bg.pid) && echo bg-alive"}'
is "$(jb .stdout)" bg-alive "the TO killed the step's processes, not what an earlier step left running"
sx "$S" '{"shell":"sh -c \"sleep 77 & sleep 78\"; ","timeout":1}'
is "$(jb .status)" TO "a step whose children outlive its shell: TO"
sx "$S" '{"shell":"ps -e -o args | grep -c \"^sleep 7[78]\" || true"}'
is "$(jb .stdout)" 0 "every process of the timed-out step's tree is gone"
sx "$S" '{"shell":"head -c 3000000 /dev/zero | tr \"\\\\0\" x"}'
is "$(jb .status)" OL "a step past the output kill: OL"
sx "$S" '{"shell":"echo after-ol"}'
is "$(jb .stdout)" after-ol "the session goes on after an OL"
sx "$S" '{"cmd":["python3","-c","b = bytearray(400 * 1024 * 1024); print(len(b))"]}'
is "$(jb .status)" ML "a step past the memory limit: ML"
sx "$S" '{"shell":"echo after-ml"}'
is "$(jb .stdout)" after-ml "the session goes on after an ML"
req GET "/v1/sessions/$S"
is "$(jb .state)" READY "the session is READY after TO, OL and ML"

# end_on_limit keeps the old behaviour, and the session says why it ended
post_json /v1/sessions '{"template":"bash","end_on_limit":true}'
E=$(jb .session_id); mine+=("$E")
sx "$E" '{"shell":"sleep 60","timeout":1}'
is "$(jb .status)" TO "end_on_limit: TO"
sx "$E" '{"shell":"echo no"}'
is "$CODE" 410 "end_on_limit: the session ended with the limit kill (410)"
like "$(jb .error)" 'TIMED_OUT' "and says its sandbox was killed for the time limit"
post_json /v1/sessions '{"end_on_limit":"yes"}'
is "$CODE" 400 "end_on_limit must be a boolean"

# --- reset ----------------------------------------------------------------------------------------
req PUT "/v1/sessions/$S/files?path=/work/dirty.txt" -H 'X-Request-Id: put-dirty' --data-binary 'dirt'
is "$CODE" 200 "a file written before the reset"
req POST "/v1/sessions/$S/reset" -H 'X-Request-Id: reset-1'
is "$CODE" 200 "POST /reset: 200"
is "$(jb '[.session_id, .state] | join(" ")')" "$S READY" "reset: same session id, READY"
sx "$S" '{"shell":"ls -A /work; ps -e -o args | grep -c \"^sleep 1000\" || true"}'
is "$(jb .stdout)" 0 "after the reset: /work empty, no process left from before"
req GET "/v1/sessions/$S"
is "$(jb .session_id)" "$S" "the session keeps its id across the reset"
sx "$S" '{"shell":"echo hi > /work/new.txt; echo more >> /work/new.txt","request_id":"write-new"}'

# --- the trajectory -------------------------------------------------------------------------------
req GET "/v1/sessions/$S/trajectory"
is "$CODE" 200 "GET trajectory: 200"
cp "$BODY" "$TMPD/traj.live"
is "$(jq -s 'map(.trajectory_id == "'"$S"'") | all' "$BODY")" true "every line names its trajectory (the session id)"
is "$(jq -s '[.[].step] == [range(0; length)]' "$BODY")" true "steps are numbered 0, 1, 2, ... in order"
is "$(jq -r 'select(.step == 0) | [.kind, .template, .group_id, .sample_id, .metadata.task] | join(" ")' "$BODY")" \
  "session bash grp-7 s-3 t1" "the first line: the session, its template, group, sample, metadata"
is "$(jq -r 'select(.kind == "exec" and .request_id == "slow") | [.observation.status, (.observation.stdout | rtrimstr("\n")), .action.timeout_ms] | join(" ")' "$BODY")" \
  "TO before-the-kill 1000" "the TO step: status, the output until the kill, its timeout"
is "$(jq -r 'select(.kind != "session" and .kind != "close") | [.group_id, .sample_id] | join(",")' "$BODY" | sort -u)" \
  "grp-7,s-3" "every step carries group_id and sample_id"
is "$(jq -r 'select(.request_id == "put-dirty") | [.kind, .action.path, .action.bytes, .action.sha256] | join(" ")' "$BODY")" \
  "write /work/dirty.txt 4 $(printf dirt | sha256sum | cut -d' ' -f1)" "a file write: kind, path, size, digest; request id from X-Request-Id"
is "$(jq -r 'select(.request_id == "reset-1") | [.kind, (.files_changed | map(.path + ":" + .change) | sort | join(","))] | join(" ")' "$BODY")" \
  "reset /work/bg.pid:deleted,/work/dirty.txt:deleted" "the reset step and the files it removed"
is "$(jq -c 'select(.request_id == "write-new") | .files_changed' "$BODY")" \
  "[{\"path\":\"/work/new.txt\",\"change\":\"added\",\"type\":\"file\",\"size\":8,\"sha256\":\"$(printf 'hi\nmore\n' | sha256sum | cut -d' ' -f1)\"}]" \
  "an exec's files changed: path, size and digest of the content"
is "$(jq -r 'select(.kind == "exec") | .started_at + .ended_at' "$BODY" | grep -cv '^20..-..-..T..:..:..\....Z20..-..-..T..:..:..\....Z$')" 0 \
  "every step has its start and end times (RFC 3339)"
is "$(jq -r 'select(.kind == "exec") | .action.env_sha256 | length' "$BODY" | sort -u)" 64 "exec actions carry the environment's digest"

req DELETE "/v1/sessions/$S"
req GET "/v1/sessions/$S/trajectory"
is "$CODE" 200 "the trajectory after the session ended: 200"
is "$(head -c "$(stat -c %s "$TMPD/traj.live")" "$BODY" | cmp - "$TMPD/traj.live" && echo same)" same \
  "after the end: the lines read before, byte for byte"
is "$(tail -1 "$BODY" | jq -r .kind)" close "and a closing line"
cp "$BODY" "$TMPD/traj.ended"
req GET "/v1/sessions/no-such-session/trajectory"
is "$CODE" 404 "no such trajectory: 404"
req GET "/v1/sessions/..%2f..%2fetc%2fpasswd/trajectory"
is "$CODE" 404 "a trajectory id that walks out: 404"

# --- fast-forward ---------------------------------------------------------------------------------
post_json /v1/sessions '{"template":"bash"}'
F=$(jb .session_id); mine+=("$F")
sx "$F" '{"shell":"echo x >> /work/count; wc -l < /work/count","request_id":"append-1"}'
is "$(jb .stdout)" 1 "a recorded step that appends to a file"
sx "$F" '{"shell":"echo y >> /work/count; wc -l < /work/count","request_id":"append-2"}'
req DELETE "/v1/sessions/$F"
post_json /v1/sessions "{\"template\":\"bash\",\"resume_from\":\"$F\"}"
is "$CODE" 201 "a session resumed from that trajectory"
R=$(jb .session_id); mine+=("$R")
sx "$R" '{"shell":"echo x >> /work/count; wc -l < /work/count","request_id":"append-1"}'
is "$(jb '[(.stdout | rtrimstr("\n")), .fast_forward] | join(" ")')" "1 true" "a recorded request id is answered from the record"
sx "$R" '{"shell":"test -e /work/count && echo ran || echo never-ran","request_id":"live-1"}'
is "$(jb .stdout)" never-ran "the recorded step did not run again (nothing appended to /work/count)"
sx "$R" '{"shell":"echo z >> /work/count; wc -l < /work/count","request_id":"append-3"}'
is "$(jb '[(.stdout | rtrimstr("\n")), (.fast_forward // false)] | join(" ")')" "1 false" "a new request id runs live"
req GET "/v1/sessions/$R/trajectory"
is "$(jq -r 'select(.request_id == "append-1") | [.fast_forward.trajectory_id, .fast_forward.step] | join(" ")' "$BODY")" \
  "$F 1" "the fast-forwarded step names the trajectory and step it came from"
post_json /v1/sessions '{"template":"bash","resume_from":"no-such-trajectory"}'
is "$CODE" 400 "resume_from an unknown trajectory: 400"

# --- noise ----------------------------------------------------------------------------------------
noisy() {  # noisy SEED: a session with noise, 8 execs; prints each exec's noise list, one a line
  post_json /v1/sessions "{\"template\":\"bash\",\"noise\":{\"seed\":$1,\"latency_ms\":5,\"fail_rate\":0.4,\"truncate_rate\":0.4}}"
  local n=$(jb .session_id) i
  mine+=("$n"); NOISY=$n
  for i in 1 2 3 4 5 6 7 8; do
    sx "$n" "{\"shell\":\"echo output-of-step-$i\",\"request_id\":\"n$i\"}"
    jq -c '[.noise[] | del(.ms)]' "$BODY" >>"$TMPD/noise.$n"
  done
  NOISE=$(cat "$TMPD/noise.$n")
}
noisy 42; A=$NOISE A_ID=$NOISY
noisy 42; B=$NOISE
noisy 7; C=$NOISE
is "$A" "$B" "noise: the same seed gives the same faults at the same steps"
isnt_same() { [ "$1" != "$2" ]; }
isnt_same "$A" "$C"; ok $? "noise: another seed, other faults"
like "$A" '"kind":"fail"' "noise: some execs answered with an injected failure"
like "$A" '"kind":"truncate"' "noise: some outputs cut short"
req GET "/v1/sessions/$A_ID/trajectory"
is "$(jq -c 'select(.kind == "exec") | [.noise[] | del(.ms)]' "$BODY")" "$A" "noise: every fault is in the trajectory"
is "$(jq -r 'select(.kind == "exec") | select(any(.noise[]; .kind == "fail")) | [.observation.status, .observation.exit_code, (.observation.stderr | test("denied|space|timed out|Input/output"))] | join(" ")' "$BODY" | sort -u)" \
  "RE 1 true" "an injected failure looks like one: RE, exit 1, the error's text on stderr"
post_json /v1/sessions '{"template":"bash"}'
Q=$(jb .session_id); mine+=("$Q")
sx "$Q" '{"shell":"echo quiet"}'
is "$(jb '.noise // "none"')" none "noise is off by default"
post_json /v1/sessions '{"noise":{"fail_rate":2,"seed":1}}'
is "$CODE" 400 "noise: a rate over 1 is refused"
# faults inside the program: on a chosen path, on a chosen call
post_json /v1/sessions '{"template":"bash","noise":{"seed":3,"faults":[{"op":"open","path":"/work/data.txt","errno":"EIO","rate":1},{"op":"connect","errno":"ENETUNREACH","rate":1}]}}'
is "$CODE" 201 "a session with fault rules: 201"
P=$(jb .session_id); mine+=("$P")
sx "$P" '{"shell":"echo secret-data > /work/other.txt; (echo x > /work/data.txt) && echo wrote || echo refused; cat /work/other.txt"}'
is "$(jb '[.status, (.stdout | rtrimstr("\n") | gsub("\n"; " "))] | join(" ")')" "OK refused secret-data" \
  "a path fault: writing the chosen file fails, another file works"
like "$(jb .stderr)" "Input/output error" "the program sees the chosen errno (EIO)"
is "$(jq -c '[.noise[] | select(.kind == "fault") | [.op, .path // "-", .errno, (.hits > 0)]]' "$BODY")" \
  '[["open","/work/data.txt","EIO",true],["connect","-","ENETUNREACH",false]]' \
  "the step's noise lists each armed fault with its hits"
is "$(jb '[(.audit | tostring), .audit_file_events, .audit_denied] | join(" ")')" "null 0 0" "a fault listener is not an audit: no events, nothing counted as denied"
sx "$P" '{"shell":"bash -c \"exec 3<>/dev/tcp/127.0.0.1/9\" && echo connected"}'
like "$(jb .stderr)" "Network is unreachable" "a call fault: connect fails with the chosen errno (a dropped connection)"
is "$(jb '[.noise[] | select(.kind == "fault" and .op == "connect") | .hits > 0] | join("")')" true "and it is counted (bash tries each address it resolved)"
post_json /v1/sessions '{"template":"bash","noise":{"seed":11,"faults":[{"path":"/work/f","errno":"EACCES","rate":0.5}]}}'
H=$(jb .session_id); mine+=("$H")
req PUT "/v1/sessions/$H/files?path=/work/f" --data-binary 'eff'
: >"$TMPD/half"
for i in 1 2 3 4 5 6 7 8 9 10; do
  sx "$H" '{"shell":"cat /work/f >/dev/null 2>&1; echo rc=$?"}'
  echo "$(jb '.stdout | rtrimstr("\n")') $(jb '[.noise[]? | select(.kind == "fault")] | length')" >>"$TMPD/half"
done
is "$(awk '($1 == "rc=1") != ($2 == 1)' "$TMPD/half" | wc -l)" 0 "rate 0.5: an exec fails exactly when its fault was armed"
like "$(cut -d' ' -f2 "$TMPD/half" | sort -u | tr '\n' ' ')" "0 1" "rate 0.5: armed for some execs, not for others"
post_json /v1/sessions '{"template":"bash","noise":{"seed":1,"faults":[{"op":"open","errno":"EFOO","rate":1}]}}'
is "$(echo "$CODE $(jb .error)" | cut -c1-30)" "400 noise.faults[0].errno: one" "an unknown errno: 400 naming the field"
post_json /v1/sessions '{"template":"bash","noise":{"seed":1,"faults":[{"op":"read","errno":"EIO","rate":1}]}}'
is "$CODE" 400 "a call a fault cannot reach: 400"

# --- after a daemon restart -----------------------------------------------------------------------
stop_daemon
start_daemon --templates "$TMPD/templates.json"
ok $? "daemon restarted"
req GET "/v1/sessions/$S/trajectory"
is "$CODE" 200 "the trajectory after a restart: 200"
cmp -s "$BODY" "$TMPD/traj.ended"
ok $? "after a restart: byte for byte the same"
