#!/usr/bin/env bash
# The template's audit policy on every surface (issue 22: "the request may only tighten", "problems
# and templates may make it mandatory"): a request that would widen the template's policy is refused
# when it arrives, naming the field — 400 from /v1/runs and a session's exec, a refused line from
# paddock run — never the XX record of a run that never was; a session's exec on a template whose
# policy is mandatory is audited under it without asking; a session's audited exec gets the policy's
# decoys planted and honey variables set, and its written files are evidence, as a run's are.
source "$(dirname "$0")/api.sh"
plan 20

cat >"$TMPD/tpl.json" <<'JSON'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work", "pool": {"min": 1, "max": 2}},
  {"name": "guarded", "language": "bash", "requires": ["bash"], "cwd": "/work", "pool": {"min": 1, "max": 2},
   "audit": {"mandatory": true, "protect": ["/work/tests"], "egress": {"allowlist": ["10.0.0.1:443"]}}}]}
JSON
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started with a template whose audit is mandatory"

# --- /v1/runs: widening is a 400 naming the field ----------------------------------------------------
post_json /v1/runs '{"template":"guarded","shell":"echo ok","audit":{"egress":"log"}}'
is "$CODE $(jb .error)" "400 audit.egress: laxer than the template's or problem's" \
  "/v1/runs: egress log over the template's allowlist: 400 naming audit.egress"
post_json /v1/runs '{"template":"guarded","shell":"echo ok","audit":{"writable":["/work/tests"]}}'
like "$CODE $(jb .error)" '^400 audit\.writable\[0\]: /work/tests is protected' \
  "/v1/runs: a writable path the template protects: 400 naming audit.writable[0]"
post_json /v1/runs '{"template":"guarded","shell":"echo ok","audit":{"allow":["/"]}}'
like "$CODE $(jb .error)" '^400 audit\.allow\[0\]' "/v1/runs: allow / over the template's: 400 naming audit.allow[0]"
post_json /v1/runs '{"template":"guarded","shell":"echo ok","audit":{"protect":["/srv"],"fail":["read_outside"]}}'
is "$CODE $(jb .verdict.process.status)" "200 pass" "/v1/runs: a request that tightens runs"

# --- sessions: the template's policy applies to every exec ----------------------------------------------
post_json /v1/sessions '{"template":"guarded"}'
S=$(jb .session_id)
is "$CODE" 201 "a session of the guarded template"
post_json "/v1/sessions/$S/exec" '{"shell":"echo ok"}'
is "$(jb '[.process.status, (.audit_notified > 0)] | map(tostring) | join(" ")')" "pass true" \
  "a session's exec without \"audit\": audited all the same (mandatory)"
post_json "/v1/sessions/$S/exec" '{"shell":"mkdir -p /work/tests && echo x > /work/tests/t.py","audit":false}'
is "$(jb '[.process.status, ([.audit.events[] | select(.kind == "tamper") | .path | startswith("/work/tests")] | any)] | map(tostring) | join(" ")')" \
  "fail true" "a session's exec with \"audit\": false: the template's protect still fails it"
post_json "/v1/sessions/$S/exec" '{"shell":"echo ok","audit":{"egress":"log"}}'
is "$CODE $(jb .error)" "400 audit.egress: laxer than the template's or problem's" \
  "a session's exec widening the template's egress: 400 naming audit.egress"
post_json "/v1/sessions/$S/exec" '{"shell":"echo ok","audit":{"writable":["/work/tests"]},"stream":true}'
like "$CODE $(body)" '^400 .*audit\.writable\[0\]' "a streamed exec widening it: 400 naming audit.writable[0]"
req DELETE "/v1/sessions/$S"

# --- a session's audited exec: decoys, honey variables, written files -----------------------------------
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
post_json "/v1/sessions/$S/exec" '{"shell":"cat /work/expected.txt","audit":{"traps":[{"path":"/work/expected.txt","content":"41\n"}]}}'
is "$(jb '[.stdout, .process.status, (.process.failed | join(","))] | join(" ")')" "41
 fail trap_read" "a session's exec: the decoy is planted, and reading it is trap_read"
post_json "/v1/sessions/$S/exec" '{"shell":"echo 41 > /work/answer.txt","audit":{"traps":[{"path":"/srv/pdk-decoy.txt","content":"41\n"}]}}'
is "$(jb '[.process.status, ([.audit.events[] | select(.kind == "trap_read") | .op] | join(","))] | join(" ")')" "fail file" \
  "a session's exec writing the decoy's wrong answer to a file, the decoy unread: trap_read (op file)"
post_json "/v1/sessions/$S/exec" '{"shell":"test -n \"$API_TOKEN\" && echo $API_TOKEN > /work/loot","audit":{"env":["API_TOKEN"]}}'
is "$(jb '[.exit_code, .process.status, ([.audit.events[] | select(.kind == "env_probe") | .op] | join(","))] | map(tostring) | join(" ")')" \
  "0 fail file" "a session's exec: the honey variable is set, and its token in a written file is env_probe"
# a file's mtime is the program's to set: back-dating the loot must not hide it from the search
post_json "/v1/sessions/$S/exec" '{"shell":"echo $API_TOKEN > /work/old-loot; touch -d @1000 /work/old-loot","audit":{"env":["API_TOKEN"]}}'
is "$(jb '[.process.status, ([.audit.events[] | select(.kind == "env_probe") | .path | test("old-loot")] | any)] | map(tostring) | join(" ")')" \
  "fail true" "a session's exec back-dating the file it saved the token to: env_probe all the same"
post_json "/v1/sessions/$S/exec" '{"shell":"echo 41 > /work/old-answer; touch -d @1000 /work/old-answer","audit":{"traps":[{"path":"/srv/pdk-decoy.txt","content":"41\n"}]}}'
is "$(jb .process.status)" "fail" "a session's exec back-dating a file holding the decoy's answer: trap_read all the same"
post_json "/v1/sessions/$S/exec" '{"shell":"echo ok > /work/o","audit":{"env":["API_TOKEN"],"traps":[{"path":"/work/expected.txt","content":"41\n"}]}}'
is "$(jb .process.status)" pass "a session's honest exec under the same policy passes"
req DELETE "/v1/sessions/$S"

# --- paddock run: a widening line is refused as a bad field is -------------------------------------------
printf '%s\n' '{"template":"guarded","shell":"echo ok","audit":{"egress":"log"},"task_id":"wide"}' \
  '{"template":"guarded","shell":"echo ok","task_id":"plain"}' >"$TMPD/run.jsonl"
"$PADDOCK" run -q -j 1 --templates "$TMPD/tpl.json" -o "$TMPD/run.out" "$TMPD/run.jsonl" 2>"$TMPD/run.err"
is "$?" 2 "paddock run: exit 2 (a line was refused)"
is "$(jq -r 'select(.task_id == "wide") | [.refused, .error] | join(" ")' "$TMPD/run.out")" \
  "bad_request audit.egress: laxer than the template's or problem's" \
  "paddock run: the widening line is refused, naming audit.egress"
is "$(jq -r 'select(.task_id == "plain") | [.status, .verdict.process.status] | join(" ")' "$TMPD/run.out")" "OK pass" \
  "paddock run: the other line runs, audited (mandatory)"
stop_daemon
ok $? "daemon stopped"
