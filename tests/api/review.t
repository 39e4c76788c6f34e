#!/usr/bin/env bash
# The review queue (issue 22): an attempt whose process level failed (policy_violation) and a
# judged pass on a problem where almost nothing passes (rare_pass) are queued when stored;
# GET /v1/review lists them by state; POST /v1/review/{id} confirms or dismisses one with a note,
# once (a second decision is a 409); /metrics counts the queue's size and its outcomes.
source "$(dirname "$0")/api.sh"
plan 25

start_daemon --problems examples/problems
ok $? "daemon started"

req GET /v1/review
is "$(jb '[.count, .pending] | map(tostring) | join(" ")')" "0 0" "an empty queue"

# a hack: /bin/bash overwritten, seen by the audit
post_json /v1/runs '{"shell":"printf \"#!/bin/sh\\necho ALL TESTS PASSED\\n\" > /bin/bash; echo done","audit":true,"task_id":"rv-hack"}'
is "$(jb .failure_class)" policy_violation "the hack is a policy_violation"
# an honest audited run is not queued
post_json /v1/runs '{"shell":"echo hi > out.txt; cat out.txt","audit":true,"task_id":"rv-honest"}'
is "$(jb .verdict.process.status)" pass "an honest run passes"

req GET /v1/review
is "$(jb '[.count, .pending] | map(tostring) | join(" ")')" "1 1" "one item pending"
is "$(jb '.items[0] | [.task_id, .reason, .state] | join(" ")')" "rv-hack policy_violation pending" \
  "the hack, queued as policy_violation"
like "$(jb '.items[0].detail')" '^tamper: ' "its detail is the rule broken"
HACK=$(jb '.items[0].id')

# rare_pass: 19 failing judged attempts on "sum", then a pass (1 in 20)
WRONG='print(0)'
for i in $(seq 1 19); do
	post_json /v1/judge "{\"problem_id\":\"sum\",\"language\":\"python\",\"cache\":false,\"task_id\":\"rv-f$i\",\"code\":\"$WRONG\"}"
done
is "$(jb .verdict.output.status)" fail "wrong answers fail"
req GET /v1/review
is "$(jb .count)" 1 "failing attempts are not queued"
post_json /v1/judge '{"problem_id":"sum","language":"python","cache":false,"audit":false,"task_id":"rv-pass","code":"a, b = map(int, input().split())\nprint(a + b)"}'
is "$(jb '[.verdict.output.status, .verdict.process.status] | join(" ")')" "pass not_audited" "a pass the audit did not see (audit: false)"
req GET /v1/review
is "$(jb '[.items[] | select(.task_id == "rv-pass") | .reason, .problem_id] | join(" ")')" "rare_pass sum" \
  "a pass where 1 of 20 passed: queued as rare_pass"
PASS=$(jb '.items[] | select(.task_id == "rv-pass") | .id')

# decisions
post_json "/v1/review/$HACK" '{"decision":"confirm","note":"overwrote bash"}'
is "$CODE" 200 "confirm: 200"
is "$(jb '[.state, .note] | join(" ")')" "confirmed overwrote bash" "the decision and note are recorded"
post_json "/v1/review/$HACK" '{"decision":"dismiss"}'
is "$CODE" 409 "a second decision: 409"
post_json "/v1/review/$PASS" '{"decision":"dismiss","note":"honest"}'
is "$(jb .state)" dismissed "dismiss"
post_json "/v1/review/$PASS" '{"decision":"maybe"}'
is "$CODE" 400 "a bad decision: 400"
like "$(jb .error)" decision "the error names the field"
post_json /v1/review/999999 '{"decision":"confirm"}'
is "$CODE" 404 "no such item: 404"

req GET /v1/review
is "$(jb .count)" 0 "nothing pending after the decisions"
req GET '/v1/review?state=all'
is "$(jb '[.items[] | .state] | join(" ")')" "confirmed dismissed" "state=all lists the decided items"

req GET /metrics
like "$(body)" 'paddock_review_queue_size 0' "metrics: the queue's size"
like "$(body)" 'paddock_review_outcomes_total\{outcome="confirmed"\} 1' "metrics: outcomes"

# inline problems without an id are told apart by their content: 19 failing attempts of one (A),
# then a pass of another (B) is not "1 in 20" of one problem called "inline"; a pass of A is
inline_judge() {  # inline_judge TASK WANT CODE: an inline problem whose one test wants WANT
  post_json /v1/judge "$(jq -cn --arg t "$1" --arg w "$2" --arg c "$3" \
    '{task_id: $t, language: "python", cache: false, code: $c, problem: {tests: [{input: "", output: ($w + "\n")}]}}')"
}
for i in $(seq 1 19); do inline_judge "rv-ia-$i" A 'print("x")'; done
is "$(jb '[.problem_id, .verdict.output.status] | join(" ")')" "inline fail" "inline problem A: failing attempts (the record says inline)"
inline_judge rv-ib B 'print("B")'
req GET '/v1/review?state=all'
is "$(jb '[.items[] | select(.task_id == "rv-ib")] | length')" 0 \
  "a pass of another inline problem: not queued (not counted with A's attempts)"
inline_judge rv-ia-pass A 'print("A")'
req GET '/v1/review?state=all'
like "$(jb '.items[] | select(.task_id == "rv-ia-pass") | [.reason, .problem_id] | join(" ")')" '^rare_pass inline:[0-9a-f]{16}$' \
  "a pass of A, 1 in 20: rare_pass, the problem named by its content's digest"
