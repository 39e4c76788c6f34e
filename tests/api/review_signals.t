#!/usr/bin/env bash
# The review queue's "too good" signals (issue 22) beyond rare_pass, each with its serve option:
# short_pass (a pass whose code is far shorter than the problem's median pass in its language),
# fast_pass (a pass whose tests took far less wall time than that median's) and score_jump (a
# score far above the best of its group's earlier attempts). Honest look-alikes stay out of the
# queue: passes of ordinary length and speed, a pass in a group that already passed, a group too
# small to judge. The slow passes sleep 0.8 s per test against a threshold of half their median,
# so that the quick pass is told from them by a wide margin whatever the machine's load.
source "$(dirname "$0")/api.sh"
plan 15

start_daemon --problems examples/problems --review-min-samples 3 --review-rare-percent 0 \
  --review-fast-percent 50 --review-short-percent 10 --review-jump-percent 50 --review-group-min 3
ok $? "daemon started with the review thresholds set"

judge() {  # judge TASK PROBLEM CODE [GROUP]: POST /v1/judge, python, no cache
  post_json /v1/judge "$(jq -cn --arg t "$1" --arg p "$2" --arg c "$3" --arg g "${4:-}" \
    '{task_id: $t, problem_id: $p, language: "python", code: $c, cache: false} + (if $g == "" then {} else {group_id: $g} end)')"
}
queued() {  # queued TASK: the reason its review item has ("" if none)
  req GET '/v1/review?state=all'
  jb "[.items[] | select(.task_id == \"$1\") | .reason] | join(\",\")"
}

# short_pass: three passes of ordinary length (a 600-byte comment), then one of 39 bytes
PAD=$(printf '# %.0s-----' $(seq 1 100))
for i in 1 2 3; do
  judge "sh-$i" sum "$PAD $i
a, b = map(int, input().split())
print(a + b)"
done
is "$(jb .verdict.output.status)" pass "ordinary passes: pass"
is "$(queued sh-3)" "" "an ordinary pass is not queued"
judge sh-short sum 'a,b=map(int,input().split());print(a+b)'
is "$(jb '[.verdict.output.status, (.code_bytes|tostring)] | join(" ")')" "pass 39" "a 39-byte pass; the record has code_bytes"
is "$(queued sh-short)" short_pass "a pass under 10% of the median pass's code: short_pass"
like "$(jb '.items[] | select(.task_id == "sh-short") | .detail')" '^short_pass: 39 bytes of code where the median of 3 earlier python passes is [0-9]+$' \
  "its detail names the figures"

# fast_pass: three passes that sleep 0.8 s, then one that does not (hello: one test)
for i in 1 2 3; do
  judge "fa-$i" hello "import time  # $i
time.sleep(0.8)
print('Hello, World!')"
done
is "$(jb .verdict.output.status)" pass "slow passes: pass"
is "$(queued fa-3)" "" "a slow pass is not queued"
judge fa-quick hello "import time  # q
print('Hello, World!')"
is "$(queued fa-quick)" fast_pass "a pass under half the median pass's test time: fast_pass"

# score_jump: a group of three failing samples, then a pass; a group that passed already does not jump
for i in 1 2 3; do judge "g1-$i" sum "print($i)" g1; done
is "$(jb .verdict.output.status)" fail "three failing samples in group g1"
judge g1-pass sum "$PAD g1
a, b = map(int, input().split())
print(a + b)" g1
is "$(queued g1-pass)" score_jump "a pass after three failures in its group: score_jump"
like "$(jb '.items[] | select(.task_id == "g1-pass") | .detail')" 'score_jump: score 1.00 where the best of 3 earlier attempts of group g1 is 0.00' \
  "its detail names the group and the scores"
for i in 1 2; do judge "g2-$i" sum "print($i)" g2; done
judge g2-pass sum "$PAD g2
a, b = map(int, input().split())
print(a + b)" g2
is "$(queued g2-pass)" "" "a pass after only two samples in its group (under --review-group-min 3): not queued"
judge g2-again sum "$PAD g2 again
a, b = map(int, input().split())
print(a + b)" g2
is "$(queued g2-again)" "" "a pass in a group whose best already passed: no jump, not queued"

req GET /metrics
like "$(body)" 'paddock_review_queue_size 3' "metrics: three items pending"
