#!/usr/bin/env bash
# The audit through the APIs: "audit": true (the default policy) or a policy object in /v1/runs,
# /run_code and a session's exec; the record's audit.events (kind, time, pid, path or address,
# mode) and audit.dropped; verdict.process computed (pass, fail with reasons, not_audited without
# an audit, never pass for an unwatched run); a failed process level is failure_class
# policy_violation; a bad policy is a 400 naming the field; /metrics counts the events by kind.
source "$(dirname "$0")/api.sh"
plan 38

start_daemon
ok $? "daemon started"

# --- /v1/runs --------------------------------------------------------------------------------------
post_json /v1/runs '{"shell":"printf \"#!/bin/sh\\necho ALL TESTS PASSED\\n\" > /bin/bash; echo done","audit":true}'
is "$CODE" 200 "runs, a hack (/bin/bash overwritten): 200"
is "$(jb '[.verdict.process.status, .failure_class] | join(" ")')" "fail policy_violation" \
  "the process level fails: policy_violation"
like "$(jb '.verdict.process.reasons[0]')" '^tamper: open w /usr/bin/bash' "the reason names the rule and the event"
is "$(jb '[.audit.events[] | select(.kind == "tamper") | .path] | unique | join(" ")')" "/usr/bin/bash" \
  "audit.events: the tamper, by the path the kernel resolved"
is "$(jb '.audit.events[0] | [has("kind"), has("time"), has("pid"), has("path"), has("mode")] | all')" true \
  "an event has kind, time, pid, path and mode"
is "$(jb '.audit.dropped')" 0 "audit.dropped: none"

post_json /v1/runs '{"language":"python","code":"import os\nopen(\"out.txt\", \"w\").write(\"42\")\nprint(open(\"out.txt\").read())","audit":true}'
is "$(jb '[.run.stdout, .verdict.process.status, .failure_class] | join(" ")')" "42
 pass none" "runs, an honest program: pass"

post_json /v1/runs '{"shell":"echo hi"}'
is "$(jb '[.verdict.process.status, (.audit | type)] | join(" ")')" "not_audited null" \
  "runs without an audit: not_audited, never pass"

post_json /v1/runs '{"shell":"cat /work/expected.txt","audit":{"traps":[{"path":"/work/expected.txt","content":"41\n"}]}}'
is "$(jb '[.verdict.process.failed[]] | join(" ")')" "trap_read" "a decoy the policy planted, read: trap_read"

post_json /v1/runs '{"shell":"echo $API_TOKEN","audit":{"env":["API_TOKEN"]}}'
is "$(jb '[.verdict.process.failed[]] | join(" ")')" "env_probe" "a honey variable's token in the output: env_probe"
unlike "$(jb .run.stdout)" '^$' "the program saw the token"

post_json /v1/runs '{"shell":"python3 -c \"import socket; s=socket.socket(); s.settimeout(0.5)\ntry: s.connect((\\\"127.0.0.1\\\", 8080))\nexcept OSError: pass\"","audit":true}'
is "$(jb '[.verdict.process.failed[]] | join(" ")')" "harness_probe" "a connect to a port nobody listens on: harness_probe"
is "$(jb '[.audit.events[] | .address] | first')" "127.0.0.1:8080" "a network event has its address"

post_json /v1/runs '{"shell":"python3 -c \"import socket; s=socket.socket(); s.settimeout(0.5)\ntry: s.connect((\\\"10.1.2.3\\\", 443))\nexcept OSError: pass\"","audit":true}'
is "$(jb '[.verdict.process.failed[], (.audit.events[0].denied | tostring)] | join(" ")')" "egress true" \
  "egress under the default policy: refused and failing"

post_json /v1/runs '{"shell":"cat /proc/1/environ; true","audit":true}'
is "$(jb '[.verdict.process.failed[]] | join(" ")')" "env_probe" "another process's environ: env_probe"

post_json /v1/runs '{"shell":"for i in $(seq 30); do echo x > /etc/f$i; done","audit":{"max_events":5}}'
is "$(jb '[(.audit.events | length), (.audit.dropped > 0), .audit.counts.tamper >= 30] | map(tostring) | join(" ")')" \
  "5 true true" "events past max_events are dropped and counted"

# --- bad policies --------------------------------------------------------------------------------------
post_json /v1/runs '{"shell":"true","audit":{"protect":["usr"]}}'
is "$CODE" 400 "a policy with a relative path: 400"
like "$(jb .error)" 'audit\.protect\[0\]' "the error names the field"
post_json /v1/runs '{"shell":"true","audit":"yes"}'
is "$CODE" 400 "audit must be true, false or an object: 400"
post_json /v1/runs '{"shell":"true","audit":{"egress":"sometimes"}}'
like "$(jb .error)" 'audit\.egress' "a bad egress names audit.egress"

# --- /run_code -----------------------------------------------------------------------------------------
post_json /run_code '{"code":"open(\"/usr/lib/python3/dist-packages/sitecustomize.py\",\"w\").write(\"\")","language":"python","audit":true}'
is "$(jb '[.status, .process.status, .failure_class] | join(" ")')" "Success fail policy_violation" \
  "/run_code with audit: the SandboxFusion status stays, the process level fails"
post_json /run_code '{"code":"print(1)","language":"python"}'
is "$(jb '[has("process"), has("audit")] | map(tostring) | join(" ")')" "false false" \
  "/run_code without audit: the answer as before"

# --- sessions ------------------------------------------------------------------------------------------
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
is "$CODE" 201 "a session"
post_json "/v1/sessions/$S/exec" '{"shell":"echo ok > /work/a; cat /work/a","audit":true}'
is "$(jb '[.stdout, .process.status] | join(" ")')" "ok
 pass" "session exec with audit, honest: pass"
post_json "/v1/sessions/$S/exec" '{"shell":"rm /usr/bin/bash; ln -s /bin/true /usr/bin/bash","audit":true}'
is "$(jb '[.process.status, (.audit.events | map(.kind) | unique | join(","))] | join(" ")')" "fail tamper" \
  "session exec with audit, rm + ln -s over bash: fail, tamper"
post_json "/v1/sessions/$S/exec" '{"shell":"echo again","audit":true}'
is "$(jb '[.process.status, (.audit.events | length)] | map(tostring) | join(" ")')" "pass 0" \
  "the next exec does not inherit the last one's changes"
req DELETE "/v1/sessions/$S"

# --- metrics -------------------------------------------------------------------------------------------
req GET /metrics
m=$(body)
like "$m" 'paddock_audit_events_total\{kind="tamper"\} [1-9]' "/metrics: paddock_audit_events_total by kind"
like "$m" 'paddock_process_verdicts_total\{process="fail"\} [1-9]' "/metrics: jobs by process verdict"

# --- paddock run (the same request lines, in process) -----------------------------------------------
printf '%s\n' '{"shell":"echo x > /usr/bin/env","audit":true,"task_id":"hack"}' \
  '{"shell":"echo ok","audit":true,"task_id":"honest"}' '{"shell":"echo ok","task_id":"unaudited"}' >"$TMPD/run.jsonl"
"$PADDOCK" run -q -j 1 -o "$TMPD/run.out" "$TMPD/run.jsonl" 2>/dev/null
got=$(jq -r '[.task_id, .verdict.process.status, .failure_class] | join(" ")' "$TMPD/run.out" | sort | tr '\n' ';')
is "$got" "hack fail policy_violation;honest pass none;unaudited not_audited none;" \
  "paddock run: fail (policy_violation), pass, not_audited"

# --- a template's policy: mandatory, and a request may only tighten it -------------------------------
stop_daemon
cat >"$TMPD/tpl.json" <<'JSON'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work", "pool": {"min": 1, "max": 2}},
  {"name": "guarded", "language": "bash", "requires": ["bash"], "cwd": "/work", "pool": {"min": 1, "max": 2},
   "audit": {"mandatory": true, "protect": ["/work/tests"], "egress": {"allowlist": ["10.0.0.1:443"]}}}]}
JSON
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started with a template whose audit is mandatory"
post_json /v1/runs '{"template":"guarded","shell":"mkdir -p /work/tests && echo x > /work/tests/t.py"}'
is "$(jb '[.verdict.process.status, .failure_class, ([.audit.events[].path] | index("/work/tests/t.py") != null)] | map(tostring) | join(" ")')" \
  "fail policy_violation true" "mandatory: audited without asking, the template's protect applies"
post_json /v1/runs '{"template":"guarded","shell":"echo ok"}'
is "$(jb .verdict.process.status)" pass "mandatory: an honest run passes"
post_json /v1/runs '{"template":"guarded","shell":"echo ok","audit":{"egress":"log"}}'
is "$CODE" 400 "a request may not loosen the template's egress: 400 (tests/api/audit_surfaces.t: every surface)"
like "$(jb .error)" 'audit\.egress' "and the error names the field"
post_json /v1/runs '{"template":"bash","shell":"echo x > /work/tests_x","audit":{"protect":["/work/tests_x"]}}'
is "$(jb .verdict.process.status)" fail "a template without a policy: the request's applies"
# an audited run that changed nothing in the image leaves its sandbox's root to be kept by the
# reset (the audit looks at the writable layer only when its watches saw something)
kept() { curl -s -m 5 "$U/metrics" | sed -n 's/^paddock_pool_resets_kept_total{template="bash"} //p'; }
some_kept() { [ "$(kept)" -ge 1 ] 2>/dev/null; }
for i in 1 2 3 4 5 6 7 8; do
  post_json /v1/runs '{"template":"bash","shell":"echo ok > /work/o; cat /work/o","audit":true}'
  [ "$(jb .verdict.process.status)" = pass ] || diag "run $i: $(jb .verdict.process)"
  some_kept && break
done
wait_for 10 some_kept
ok $? "audited honest runs leave roots the pool's reset keeps ($(kept))"
printf '{"templates": [{"name": "t", "language": "bash", "audit": {"protect": ["rel"]}}]}' >"$TMPD/bad.json"
"$PADDOCK" serve --templates "$TMPD/bad.json" --listen 127.0.0.1:1 >"$TMPD/bad.out" 2>&1
like "$(cat "$TMPD/bad.out")" 'templates\[0\]\.audit\.protect\[0\]' "a bad template policy is refused at load, naming the field"
