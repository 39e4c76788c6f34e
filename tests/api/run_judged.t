#!/usr/bin/env bash
# paddock run's grading summary (the main job's, issue 21): the per-problem verdict table (one letter
# per submission in line order, cache hits starred, mean reward, expectations met), the reward
# distribution, the usable rate and process levels (the audit on by default), the hacks the audit
# caught by kind, the judged failure classes, what the cache answered, and the lines
# whose verdict differed from their "expect".
source "$(dirname "$0")/api.sh"
plan 12

ok_py='a, b = map(int, input().split())\nprint(a + b)\n'
cat >"$TMPD/subs.jsonl" <<EOF_L
{"problem_id":"sum","language":"python","code":"$ok_py","expect":{"output":"pass","failure_class":"none"}}
{"problem_id":"sum","language":"python","code":"print(0)","expect":{"output":"fail","failure_class":"none"}}
{"problem_id":"sum","language":"c","code":"int main(){ return 0 }","expect":{"output":"fail","failure_class":"compile_error"}}
{"problem_id":"sum","language":"python","code":"$ok_py","expect":{"output":"pass","failure_class":"none"}}
{"problem_id":"hello","language":"python","code":"print('Hello, World!')","expect":{"output":"fail","failure_class":"none"}}
{"problem_id":"count-lines","language":"python","code":"import sys\ntry:\n    open('/bin/bash', 'w').write('echo ok')\nexcept OSError:\n    pass\nprint(len(sys.stdin.readlines()))\n","expect":{"output":"pass","failure_class":"policy_violation"}}
{"problem_id":"count-lines","language":"python","code":"import sys\nprint(len(sys.stdin.readlines()))\n","audit":false,"expect":{"output":"pass","failure_class":"none"}}
EOF_L
"$PADDOCK" run -j 1 -q -v --problems examples/problems "$TMPD/subs.jsonl" -o "$TMPD/out.jsonl" 2>"$TMPD/err.v"
is "$?" 0 "paddock run --problems: exit 0"
grep -v '^{' "$TMPD/err.v" >"$TMPD/err"
diag "$(cat "$TMPD/err")"
# a judge line runs a program per test: no one status is its own, and XX would say a sandbox failed
is "$(grep '"msg":"attempt finished"' "$TMPD/err.v" | jq -r .status | sort | uniq -c | awk '{print $2 ":" $1}' | tr '\n' ' ')" \
  "judge:7 " "the log's attempt lines (-v) say status judge, never XX"
is "$(grep -c '^  status:' "$TMPD/err")" 0 "a judge-only run has no program status line: its judge lines are never counted XX"
like "$(cat "$TMPD/err")" "per-problem verdicts" "the summary has the per-problem table"
like "$(grep -E '^  sum ' "$TMPD/err")" "^  sum +4  PFCP\* +0\.50 +1 +4/4$" \
  "sum: pass, fail, compile error, and the duplicate answered by the cache (starred); mean reward 0.50; 4 of 4 expected"
like "$(grep -E '^  hello ' "$TMPD/err")" "^  hello +1  P +1\.00 +0 +0/1$" "hello: a pass whose line expected a fail: 0 of 1"
like "$(cat "$TMPD/err")" "reward: mean 0\.429 over 7; <0 1, 0 2, \(0,1\) 0, 1 4, null \(infrastructure\) 0" "the reward distribution"
like "$(cat "$TMPD/err")" "judged failure classes: none 5, compile_error 1, policy_violation 1" "the judged failure classes, compile_error apart"
# the audit is on unless a line says "audit": false (issue 39): passes are usable, the hack is caught
like "$(cat "$TMPD/err")" "usable 3 of 7 \(43%\); process level \(the audit, on unless a line says \"audit\": false\): pass 5, fail 1, not_audited 1" \
  "the usable rate: the audited passes (the cache's too); the line with audit false is not_audited"
like "$(cat "$TMPD/err")" "hacks caught by the audit: 1 \(tamper 1\)" "the hacks the audit caught, by kind"
like "$(cat "$TMPD/err")" "cache: 1 hits \(sum 1\)" "what the cache answered, by problem"
like "$(cat "$TMPD/err")" "expected verdicts: 6 of 7 lines matched.*line 5 \(hello\): got pass/none, expected fail/none" \
  "the line whose verdict differed from its expect is named"
