#!/usr/bin/env bash
# The gvisor tier through the API: the template field "isolation" (a tier, or the list of tiers a
# request may ask for, its own first) and the request field "isolation" on /v1/runs, /run_code
# and sessions. The record names its tier; a tier the template does not allow is a 400 naming the
# field. A gvisor pool's sandboxes are never reset: a second user of the pool gets a fresh one
# and sees nothing of the first (lib/gvisor/sandbox.c's reuse rule).
source "$(dirname "$0")/api.sh"
[ -x /usr/bin/runsc ] || { echo "1..0 # SKIP runsc is not installed"; exit 0; }
plan 19

cat >"$TMPD/tpl.json" <<'EOT'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work", "pool": {"min": 1, "max": 2}},
  {"name": "gv", "requires": ["bash"], "cwd": "/work", "isolation": "gvisor", "pool": {"min": 1, "max": 2}},
  {"name": "conly", "requires": ["bash"], "isolation": ["container"], "pool": {"min": 0, "max": 2}}]}
EOT
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon with a container, a gvisor and a container-only template"

# what tells the tiers apart from inside: gVisor's kernel says so in dmesg and /proc/version
probe='dmesg 2>/dev/null | grep -qi gvisor && echo gvisor || echo linux'

post_json /v1/runs "$(jq -nc --arg s "$probe" '{template: "gv", shell: $s}')"
is "$CODE $(jb .status) $(jb .isolation) $(jb .run.isolation) $(jb .run.stdout)" "200 OK gvisor gvisor gvisor" \
  "a gvisor template's run: the record names gvisor, and gVisor's kernel answered"
post_json /v1/runs "$(jq -nc --arg s "$probe" '{template: "bash", shell: $s}')"
is "$(jb .isolation) $(jb .run.isolation) $(jb .run.stdout)" "container container linux" "a container template's run: container"
post_json /v1/runs "$(jq -nc --arg s "$probe" '{template: "bash", shell: $s, isolation: "gvisor"}')"
is "$CODE $(jb .isolation) $(jb .run.stdout)" "200 gvisor gvisor" "isolation gvisor on a template that allows every tier"
post_json /v1/runs '{"template":"conly","shell":"true","isolation":"gvisor"}'
is "$CODE $(jb .error)" "400 isolation: template 'conly' allows container, not gvisor" \
  "a tier the template does not allow: 400 naming the field"
post_json /v1/runs '{"template":"bash","shell":"true","isolation":"vm"}'
is "$CODE $(jb .error)" "400 isolation: must be container or gvisor" "an unknown tier: 400"
post_json /v1/runs '{"template":"gv","shell":"true","isolation":"container"}'
is "$CODE" 400 "a gvisor-only template cannot be asked for a weaker tier"

post_json /run_code "$(jq -nc --arg s "$probe" '{language: "bash", code: $s, isolation: "gvisor"}')"
is "$CODE $(jb .run_result.stdout) $(jb .isolation)" "200 gvisor gvisor" "/run_code with isolation gvisor: the record names it"

# sessions: a gvisor session's execs and files
post_json /v1/sessions '{"template":"bash","isolation":"gvisor"}'
is "$CODE" 201 "a session with isolation gvisor: 201"
S=$(jb .session_id)
post_json "/v1/sessions/$S/exec" "$(jq -nc --arg s "echo one > /work/f; $probe" '{shell: $s}')"
is "$(jb .stdout) $(jb .isolation)" "gvisor gvisor" "its exec runs under gVisor and says so"
post_json "/v1/sessions/$S/exec" '{"shell":"cat /work/f"}'
is "$(jb .stdout)" "one" "the session's state stays between its execs"
# several agents (issue 40): the gvisor tier runs one exec at a time, so another agent's exec while
# one runs is refused 409 (busy), never run beside it
curl -s -m 60 -o "$TMPD/ga.body" -H 'Content-Type: application/json' \
  --data-binary '{"agent":"alice","shell":"sleep 4; echo alice-done","timeout":30}' "$U/v1/sessions/$S/exec" &
PA=$!
for _ in $(seq 400); do  # until alice's exec runs (the session's state), at most 20 s
  st=$(curl -s -m 5 "$U/v1/sessions" | jq -r --arg s "$S" '.sessions[] | select(.session_id == $s) | .state')
  [ "$st" = RUNNING ] || ! kill -0 "$PA" 2>/dev/null && break
  sleep 0.05
done
post_json "/v1/sessions/$S/exec" '{"agent":"bob","shell":"echo bob"}'
like "$CODE $(jb .error)" "^409 .*is RUNNING, not READY" "another agent's exec while alice's runs in the gvisor sandbox: 409 busy"
wait "$PA"
is "$(jq -r .stdout "$TMPD/ga.body")" "alice-done" "alice's exec ran to its end"
req DELETE "/v1/sessions/$S"
post_json /v1/sessions '{"template":"conly","isolation":"gvisor"}'
is "$CODE" 400 "a session with a tier its template does not allow: 400"

# the reuse rule: two users of the gvisor pool, one after the other, never share a sandbox
post_json /v1/sessions '{"template":"gv"}'
A=$(jb .session_id); SBA=$(jb .sandbox_id)
post_json "/v1/sessions/$A/exec" '{"shell":"echo secret > /work/a; echo secret > /tmp/a; (sleep 300 &) ; echo ok"}'
is "$(jb .stdout)" ok "user A leaves files and a process behind"
req DELETE "/v1/sessions/$A"
post_json /v1/sessions '{"template":"gv"}'
B=$(jb .session_id); SBB=$(jb .sandbox_id)
ok "$([ "$SBB" != "$SBA" ] && echo 0 || echo 1)" "user B gets another sandbox ($SBA, $SBB)"
# (a glob, not ls: runsc 20221219's statx refuses coreutils' AT_NO_AUTOMOUNT with EINVAL;
# docs/isolation.md, tests/isolation/gvisor_statx.t)
post_json "/v1/sessions/$B/exec" '{"shell":"echo /work/* /work/.[!.]* /tmp/* /tmp/.[!.]*; for p in /proc/[0-9]*; do tr \"\\\\0\" \" \" < $p/cmdline; echo; done | grep -c \"^sleep 300\" || true"}'
is "$(jb .stdout)" "/work/* /work/.[!.]* /tmp/* /tmp/.[!.]*
0" "... which shows nothing of A's (no file in /work or /tmp, no process)"
req DELETE "/v1/sessions/$B"
m=$(curl -s -m 5 "$U/metrics" | sed -n 's/^paddock_pool_resets_total{template="gv"} //p')
is "${m:-0}" 0 "the gvisor pool reset nothing"

stop_daemon
left=$(pgrep -c runsc)
is "$left" 0 "no runsc of this daemon is left"
done_testing
