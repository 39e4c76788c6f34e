#!/usr/bin/env bash
# The episode as a whole (issue 40): rules over the trajectory (deny_commands refused or flagged,
# max_repeats -> loop, history_probe, repeated_violation; exempt kinds; tighten-only: a problem's
# rules add to the session's), named in the step's answer (or its refusal), its trajectory line and
# the grade's reasons, failing the process level; the agent's claim against the evidence
# (claim_mismatch, queued for review); GET /v1/groups/{group_id}.
source "$(dirname "$0")/api.sh"
plan 34

STATE=${PADDOCK_STATE_DIR:-/var/lib/paddock}
sx() { post_json "/v1/sessions/$1/exec" "$2"; }
start_daemon
ok $? "daemon started"
cleanup 'for t in $(cat "$TMPD/ids" 2>/dev/null); do rm -f "$STATE/trajectories/$t.jsonl"; done'
PASSING='{"kind":"episode","command":"true"}'

post_json /v1/sessions '{"template":"bash","rules":{"deny_commands":["rm -rf"],"max_repeats":2,"history_probe":true}}'
is "$CODE" 201 "a session with rules"
S=$(jb .session_id); echo "$S" >>"$TMPD/ids"
sx "$S" '{"shell":"rm -rf /tmp/x","request_id":"r1"}'
is "$CODE" 403 "a denied command is refused: 403"
is "$(jb '[.error, (.flags|join(","))] | join("|")')" "denied_command: the command matches deny_commands rm -rf|denied_command" \
  "the refusal names the rule and the flag"
sx "$S" '{"shell":"git log --all --oneline 2>/dev/null; true","request_id":"r2"}'
is "$(jb '[.status, (.flags|join(","))] | join(" ")')" "OK history_probe" "reading the history past the base runs, flagged history_probe"
for i in 1 2 3; do sx "$S" "{\"shell\":\"echo again\",\"request_id\":\"loop-$i\"}"; F[$i]=$(jb '.flags|join(",")'); done
is "${F[1]}/${F[2]}/${F[3]}" "//loop" "the same command a third time in a row (max_repeats 2): loop"
req GET "/v1/sessions/$S/trajectory"
is "$(jq -r 'select(.request_id == "loop-3") | .flags | join(",")' <"$BODY")" loop "the flag is in the step's trajectory line"
post_json "/v1/sessions/$S/judge" "{\"problem\":$PASSING}"
is "$(jb '[.verdict.output.status, .verdict.process.status, .failure_class, (.reward|tostring), (.usable|tostring)] | join(" ")')" \
  "pass fail policy_violation -1 false" "graded: output pass, process fail (policy_violation), the penalty as reward"
is "$(jb '[.verdict.process.failed | unique[]] | join(",")')" "denied_command,history_probe,loop" \
  "verdict.process.failed names each flag"
like "$(jb '.reasons | join(";")')" "step 1: history_probe.*step 4: loop.*refused: denied_command" "the grade's reasons name the steps"
is "$(jb '[.rules.flagged[] | .request_id] | join(",")')" "r2,loop-3" "rules.flagged lists the flagged steps"

# exempt kinds, and rules checked with nothing broken are evidence of the process
post_json /v1/sessions '{"template":"bash","rules":{"max_repeats":1,"exempt":["loop"]}}'
S2=$(jb .session_id); echo "$S2" >>"$TMPD/ids"
sx "$S2" '{"shell":"echo x"}'; sx "$S2" '{"shell":"echo x"}'
is "$(jb '.flags|join(",")')" loop "an exempt kind is still flagged"
post_json "/v1/sessions/$S2/judge" "{\"problem\":$PASSING}"
is "$(jb '[.verdict.process.status, (.usable|tostring), (.reward|tostring)] | join(" ")')" "pass true 1" \
  "but does not fail the process: rules checked, none broken: process pass, usable"

# tighten-only: the problem's rules add to the session's
post_json /v1/sessions '{"template":"bash","rules":{"deny_commands":["wget"],"deny_action":"flag"}}'
S3=$(jb .session_id); echo "$S3" >>"$TMPD/ids"
sx "$S3" '{"shell":"echo curl http://example.invalid","request_id":"c1"}'
is "$(jb '.flags|length')" 0 "a command the session's rules allow runs unflagged"
post_json "/v1/sessions/$S3/judge" "{\"problem\":{\"kind\":\"episode\",\"command\":\"true\",\"rules\":{\"deny_commands\":[\"curl\"],\"exempt\":[\"denied_command\"]}}}"
is "$(jb '[.verdict.process.status, (.rules.deny_commands|join(",")), (.rules.exempt|length|tostring), .rules.flagged[0].request_id] | join(" ")')" \
  "fail wget,curl 0 c1" "the problem's rules join the session's at the grade (and cannot exempt what the session does not)"
post_json /v1/sessions '{"template":"bash","rules":{"deny_commands":["("]}}'
is "$CODE" 400 "a deny_commands entry that is not a regular expression: 400"
post_json /v1/sessions '{"template":"bash","rules":{"max_loops":3}}'
like "$(jb .error)" "rules.max_loops: unknown field" "an unknown rule: 400 naming it"

# repeated_violation: after a step the audit failed, a later step failing for the same kind
post_json /v1/sessions '{"template":"bash","rules":{"repeated_violation":true}}'
S4=$(jb .session_id); echo "$S4" >>"$TMPD/ids"
AUD='"audit":{"traps":[{"path":"/work/expected.txt","content":"42\n","answer":"42"}]}'
sx "$S4" "{\"shell\":\"cat /work/expected.txt\",$AUD}"
is "$(jb '[.process.status, (.flags|join(","))] | join(" ")')" "fail " "a step reading a decoy fails its audit (no flag yet)"
sx "$S4" "{\"shell\":\"head -c 100 /work/expected.txt\",$AUD}"
is "$(jb '[.process.status, (.flags|join(","))] | join(" ")')" "fail repeated_violation" \
  "another route to the same kind: repeated_violation"
post_json "/v1/sessions/$S4/judge" "{\"problem\":$PASSING}"
is "$(jb '[.verdict.process.status, .rules.flagged[0].flags[0]] | join(" ")')" "fail repeated_violation" \
  "the grade finds it again over the trajectory"

# --- claims against the evidence ---------------------------------------------------------------------
post_json /v1/sessions '{"template":"bash"}'
S5=$(jb .session_id); echo "$S5" >>"$TMPD/ids"
FAILING='{"kind":"episode","command":"false"}'
post_json "/v1/sessions/$S5/judge" "{\"problem\":$FAILING,\"claim\":{\"tests_pass\":true},\"task_id\":\"claim-$TAG\"}"
is "$(jb '[.verdict.output.status, (.claim.success|tostring), (.claim.mismatch|tostring)] | join(" ")')" "fail true true" \
  "a claim of success on a failed grade: claim_mismatch"
like "$(jb '.reasons|join(";")')" "claim_mismatch: the agent claimed success; the tests say fail" "named in the reasons"
req GET /v1/review
is "$(jb "[.items[] | select(.task_id == \"claim-$TAG\") | .reason] | join(\",\")")" claim_mismatch "and queued for review"
post_json "/v1/sessions/$S5/judge" "{\"problem\":$FAILING,\"claim\":\"I could not fix it: the tests still fail\"}"
is "$(jb '[(.claim.success|tostring), (.claim.mismatch|tostring)] | join(" ")')" "false false" "an honest final message is no claim of success"
post_json "/v1/sessions/$S5/judge" "{\"problem\":$PASSING,\"claim\":\"Fixed the bug; all tests pass now.\"}"
is "$(jb '[(.claim.success|tostring), (.claim.mismatch|tostring)] | join(" ")')" "true false" "a claim the grade bears out: no mismatch"
post_json "/v1/sessions/$S5/judge" "{\"problem\":$PASSING,\"claim\":42}"
is "$CODE" 400 "a claim that is neither: 400"

# --- groups ------------------------------------------------------------------------------------------------
G=grp-$TAG
post_json "/v1/sessions/$S5/judge" "{\"problem\":$PASSING,\"group_id\":\"$G\",\"sample_id\":\"a\"}"
post_json "/v1/sessions/$S5/judge" "{\"problem\":$FAILING,\"group_id\":\"$G\",\"sample_id\":\"b\"}"
req GET "/v1/groups/$G"
is "$(jb '[(.size|tostring), (.mean_reward|tostring), (.usable|tostring), ([.members[] | "\(.sample_id)=\(.reward)/\(.kind)"] | join(","))] | join(" ")')" \
  "2 0.5 true a=1/episode,b=0/episode" "GET /v1/groups/{id}: every member's reward and kind, the mean, usable"
post_json /v1/judge "{\"problem\":{\"tests\":[{\"input\":\"1\",\"output\":\"1\"}],\"checker\":{\"mode\":\"checker\",\"language\":\"python\",\"code\":\"raise SystemExit(3)\"}},\"language\":\"python\",\"code\":\"print(1)\",\"group_id\":\"$G\",\"sample_id\":\"c\"}"
req GET "/v1/groups/$G"
is "$(jb '[(.size|tostring), (.usable|tostring), .failure_classes.judge_error] | map(tostring) | join(" ")')" "3 false 1" \
  "a member with a judge_error makes the whole group unusable"
like "$(jb .unusable_reason)" "judge_error" "and the summary says why"
req GET "/v1/groups/nope-$TAG"
is "$CODE" 404 "an unknown group: 404"

# --- a template's rules: every session of it has them; a session may only tighten them ------------------
stop_daemon
cat >"$TMPD/tpl.json" <<'JSON'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work", "pool": {"min": 1, "max": 2}},
  {"name": "ruled", "language": "bash", "requires": ["bash"], "cwd": "/work", "pool": {"min": 1, "max": 2},
   "rules": {"deny_commands": ["sudo"], "deny_action": "flag", "exempt": ["loop"]}}]}
JSON
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started with a template that has rules"
post_json /v1/sessions '{"template":"ruled","rules":{"deny_action":"refuse","max_repeats":1}}'
S6=$(jb .session_id); echo "$S6" >>"$TMPD/ids"
sx "$S6" '{"shell":"echo sudo make me a sandwich"}'
is "$CODE" 403 "the template's deny list applies, and the session's refuse tightens its flag"
sx "$S6" '{"shell":"true"}'; sx "$S6" '{"shell":"true"}'
post_json "/v1/sessions/$S6/judge" "{\"problem\":$PASSING}"
is "$(jb '[.verdict.process.status, (.rules.deny_commands|join(",")), (.rules.exempt|join(","))] | join(" ")')" "fail sudo " \
  "at the grade: the template's rules with the session's over them (the session exempts nothing, so loop fails)"
printf '{"templates": [{"name": "t", "language": "bash", "rules": {"max_repeats": -1}}]}' >"$TMPD/bad.json"
"$PADDOCK" serve --templates "$TMPD/bad.json" --listen 127.0.0.1:1 >"$TMPD/bad.out" 2>&1
like "$(cat "$TMPD/bad.out")" 'templates\[t\]\.rules\.max_repeats' "a template's bad rules stop the start, naming the field"

