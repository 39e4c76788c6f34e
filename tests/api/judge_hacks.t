#!/usr/bin/env bash
# The two reward hacks of issue 22's list that are aimed at the judge rather than at the sandbox,
# run as real submissions through POST /v1/judge:
#  - fake test-runner output: a program that prints what a passing test run looks like instead of
#    the answer. stdout is data to the judge, compared by a checker in its own sandbox: the
#    output level fails, reward 0 (a real score, not the null of an infrastructure failure).
#  - a timing attack on the checker: an output made to stall a checker that is slow in its size
#    (quadratic here), so that the attempt ends as judge_error (no reward: never the model's
#    fault) instead of a wrong answer. It is not rewarded, and it is queued for a human as
#    checker_failure; the same problem's honest answer passes and is not queued.
source "$(dirname "$0")/api.sh"
plan 8

start_daemon --problems examples/problems
ok $? "daemon started"

FAKE='print("============================= test session starts ==============================")
print("collected 20 items")
print("tests/test_sum.py ....................                                    [100%]")
print("============================== 20 passed in 0.03s ==============================")
print("ALL TESTS PASSED")'
post_json /v1/judge "$(jq -cn --arg c "$FAKE" '{problem_id: "sum", language: "python", cache: false, task_id: "fake-runner", code: $c}')"
is "$(jb '[.verdict.output.status, (.reward | tostring), .failure_class] | join(" ")')" "fail 0 none" \
  "fake test-runner output: the output level fails, reward 0 (the model's own score)"

# a checker that is correct but quadratic in the number of tokens the candidate prints
CHK='import sys
out = open(sys.argv[2]).read().split()
ans = open(sys.argv[3]).read().split()
seen = 0
for a in out:
    for b in out:
        seen += a == b
sys.exit(0 if out == ans else 1)'
prob() { jq -cn --arg k "$CHK" --arg c "$1" --arg t "$2" \
  '{problem: {tests: [{input: "", output: "42\n"}], checker: {mode: "checker", language: "python", code: $k},
    limits: {time: 1}}, language: "python", cache: false, task_id: $t, code: $c}'; }
post_json /v1/judge "$(prob 'print("42 " * 200000)' stall)"
is "$(jb '[.failure_class, (.reward | tostring), .verdict.output.status] | join(" ")')" "judge_error null not_judged" \
  "an output that stalls the checker: judge_error, no reward (not a pass, not a score)"
post_json /v1/judge "$(prob 'print(42)' honest)"
is "$(jb '[.verdict.output.status, (.reward | tostring)] | join(" ")')" "pass 1" "the honest answer to the same problem passes"

req GET /v1/review
is "$(jb '[.items[] | select(.task_id == "stall") | .reason] | join(",")')" "checker_failure" \
  "the stalled checker's attempt is queued for review as checker_failure"
like "$(jb '.items[] | select(.task_id == "stall") | .detail')" "checker" "... its detail says what the checker did"
is "$(jb '[.items[] | select(.task_id == "honest" or .task_id == "fake-runner")] | length')" "0" \
  "neither the honest pass nor the plain wrong answer is queued"
stop_daemon
ok $? "daemon stopped"
