#!/usr/bin/env bash
# POST /v1/judge: a submission judged against a problem loaded with --problems and against inline
# problems (tests, in_outs); the judged record's fields (three levels, usable, reward, failure_class,
# cache, tests); a compile error; the fingerprint cache and its opt-out; refusals naming the field;
# a problem directory with a checker that does not build stops the start.
source "$(dirname "$0")/api.sh"
plan 37

start_daemon --problems examples/problems
ok $? "daemon started with --problems examples/problems"

post_json /v1/judge '{"problem_id":"sum","language":"cpp","task_id":"jt-1","group_id":"g1","sample_id":"s1",
  "code":"#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<\"\\n\";}\n"}'
is "$CODE" 200 "a loaded problem: 200"
REC=$(body)
is "$(jq -r '[.verdict.output.status, (.verdict.output.score|tostring), .verdict.process.status, .verdict.resources.status] | join(" ")' <<<"$REC")" \
  "pass 1 pass pass" "verdict: output pass (score 1), process pass (the audit is on by default), resources pass"
is "$(jq -r '[(.usable|tostring), (.unusable_level|tostring), (.reward|tostring), .failure_class, .cache] | join(" ")' <<<"$REC")" \
  "true null 1 none miss" "usable true (every level passed), reward 1, failure_class none, cache miss"
is "$(jq -r '[.task_id, .group_id, .sample_id, .attempt_id, .problem_id] | join(" ")' <<<"$REC")" "jt-1 g1 s1 jt-1#1 sum" \
  "ids: task_id, group_id, sample_id, attempt_id, problem_id"
is "$(jq -r '.tests | length' <<<"$REC")" 4 "one entry per test"
jq -e '.tests | all(has("status") and has("time_ms") and has("memory_kb") and has("checker"))' <<<"$REC" >/dev/null
ok $? "each test has status, time_ms, memory_kb and the checker's message"

post_json /v1/judge '{"problem_id":"sum","language":"cpp","group_id":"g1","sample_id":"s2",
  "code":"#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<\"\\n\";}\n"}'
is "$(jb '[.cache, .verdict.output.status, .sample_id] | join(" ")')" "hit pass s2" "the same submission again: a cache hit, with its own ids"
post_json /v1/judge '{"problem_id":"sum","language":"cpp","audit":false,
  "code":"#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<\"\\n\";}\n"}'
is "$(jb '[.verdict.process.status, (.usable|tostring), .unusable_level, .cache] | join(" ")')" "not_audited false process miss" \
  "audit: false opts out: process not_audited (never pass without an audit), not usable, another cache key"
post_json /v1/judge '{"problem_id":"sum","language":"cpp","cache":false,
  "code":"#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<\"\\n\";}\n"}'
is "$(jb .cache)" off "cache:false opts out"

post_json /v1/judge '{"problem_id":"sum","language":"c","code":"int main(){ return 0 }"}'
is "$(jb '[.verdict.output.status, .failure_class, (.reward|tostring), (.tests|length|tostring)] | join(" ")')" \
  "fail compile_error 0 0" "a compile error: output fail, compile_error, reward 0, no test run"
like "$(jb .compile.message)" "error" "the compiler's message is in the record"

post_json /v1/judge '{"problem_id":"sum","language":"python","code":"print(0)","reward":{"mode":"binary","fail":-0.5}}'
is "$(jb '[.verdict.output.status, (.reward|tostring)] | join(" ")')" "fail -0.5" "the request's reward rule: fail gives -0.5"

post_json /v1/judge '{"problem":{"tests":[{"input":"2\n","output":"4\n"},{"input":"3\n","output":"9\n"}],
  "checker":{"mode":"numeric"},"limits":{"time":1}},"language":"python","code":"x=int(input())\nprint(x*x if x==2 else 10)"}'
is "$(jb '[.verdict.output.status, (.verdict.output.score|tostring), .tests[1].status] | join(" ")')" "partial 0.5 WA" \
  "an inline problem: partial, score 0.5, the second test WA"

post_json /v1/judge '{"problem":{"in_outs":{"inputs":[[1,2],[5,5]],"outputs":[3,10],"fn_name":"add"}},
  "language":"python","code":"class Solution:\n    def add(self, a, b):\n        return a + b\n"}'
is "$(jb .verdict.output.status)" pass "an inline call-based problem (in_outs with fn_name): pass"

post_json /v1/judge '{"problem":{"tests":[{"input":"1","output":"1"}],"checker":{"mode":"checker","language":"python",
  "code":"raise SystemExit(3)"}},"language":"python","code":"print(1)"}'
is "$(jb '[.failure_class, (.reward|tostring), .verdict.output.status] | join(" ")')" "judge_error null not_judged" \
  "a checker that says fail: judge_error, reward null (never 0)"

post_json /v1/judge '{"problem_id":"guess-number","language":"python","code":"import sys\nlo,hi=1,1000\nwhile True:\n    m=(lo+hi)//2\n    print(m,flush=True)\n    r=sys.stdin.readline().strip()\n    if r==\"=\": break\n    if r==\"<\": hi=m-1\n    else: lo=m+1\n"}'
is "$(jb .verdict.output.status)" pass "an interactive problem through the API"

# one_sandbox: the tests share a sandbox (what one leaves, the next sees); by default each is clean
counter='import os\np = \"/work/state\"\nn = int(open(p).read()) if os.path.exists(p) else 0\nopen(p, \"w\").write(str(n + 1))\nprint(n)'
post_json /v1/judge '{"problem":{"tests":[{"input":"","output":"0"},{"input":"","output":"1"}],"one_sandbox":true},
  "language":"python","code":"'"$counter"'"}'
is "$CODE $(jb '[.verdict.output.status, .tests[1].status] | join(" ")')" "200 pass AC" \
  "one_sandbox: the second test sees the file the first left"
post_json /v1/judge '{"problem":{"tests":[{"input":"","output":"0"},{"input":"","output":"1"}]},
  "language":"python","code":"'"$counter"'"}'
is "$(jb '[.verdict.output.status, .tests[1].status] | join(" ")')" "partial WA" \
  "by default a clean sandbox per test: the second test does not see it"

# limits.total_time: the tests not started by then are TO, not run
post_json /v1/judge '{"problem":{"tests":[{"input":"","output":"1"},{"input":"","output":"1"},{"input":"","output":"1"}],
  "limits":{"time":5,"total_time":1}},"language":"bash","code":"sleep 1.5; echo 1"}'
is "$(jb '[.tests[].status] | join(" ")')/$(jb .tests[2].message)" "AC TO TO/not run: the total time limit (1000 ms) passed" \
  "total_time: the first test ran past the total; the others are TO without running"

# the batch form: shared fields, one record per submission, in order
post_json /v1/judge '{"problem_id":"sum","language":"python","group_id":"batch-1","submissions":[
  {"sample_id":"a","code":"a,b=map(int,input().split())\nprint(a+b)"},
  {"sample_id":"b","code":"print(0)"},
  {"sample_id":"c","language":"bash","code":"read a b\necho $((a+b))"}]}'
is "$CODE/$(jb '[.results[] | "\(.sample_id):\(.verdict.output.status):\(.group_id)"] | join(" ")')" \
  "200/a:pass:batch-1 b:fail:batch-1 c:pass:batch-1" "batch: one record per submission, in order, shared fields applied"
post_json /v1/judge '{"problem_id":"sum","submissions":[{"language":"python","code":"print(1)"},{"code":"x"}]}'
like "$CODE/$(jb .error)" "^400/submissions\\[1\\]: language" "batch: a bad submission refuses the batch, naming it"

# refusals
post_json /v1/judge '{"problem_id":"nope","language":"python","code":"print(1)"}'
is "$CODE" 404 "an unknown problem: 404"
post_json /v1/judge '{"problem_id":"sum","language":"cobol","code":"x"}'
like "$CODE/$(jb .error)" "^400/language: 'cobol' is not a language paddock knows \\(python, python3, bash, " \
  "an unknown language: 400 naming the field, listing the languages"
post_json /v1/judge '{"problem_id":"sum","language":"python"}'
like "$CODE/$(jb .error)" "^400/code" "no code: 400 naming code"
post_json /v1/judge '{"problem":{"tests":[]},"language":"python","code":"x"}'
like "$CODE/$(jb .error)" "^400/problem: tests" "an inline problem without tests: 400"
post_json /v1/judge '{"problem_id":"sum","language":"python","code":"x","colour":1}'
like "$CODE/$(jb .error)" "^400/colour" "an unknown field: 400"
post_json /v1/judge '{"problem_id":"two-sum","language":"c","code":"x"}'
like "$CODE/$(jb .error)" "^400/language: problem two-sum is call-based .*python, node or cpp" \
  "call-based in C (no harness): 400, naming the languages that have one"

req GET /metrics
is "$(grep -E '^paddock_judge_cache_total\{result="hit"\} ' "$BODY" | awk '{print $2}')/$(grep -E '^paddock_judged_total\{output="pass"\} ' "$BODY" | awk '{print $2}')" \
  "2/9" "metrics: judged attempts by output, cache hits (the batch's print(0) was judged before)"
is "$(awk '$1 == "paddock_judge_errors_total" {print $2}' "$BODY")" 2 \
  "metrics: judge_errors counts the failing checker's two runs (the first and its retry)"
is "$(awk '$1 == "paddock_judge_checker_cpu_seconds_total" {print ($2 > 0)}' "$BODY")/$(awk '$1 == "paddock_judged_total{output=\"not_judged\"}" {print $2}' "$BODY")" \
  "1/1" "metrics: the checker programs' CPU time; the judge error's attempt counted as not_judged"
# a judge job runs a program per test: it has no one status, and XX would say a sandbox failed it
judged=$(awk '$1 ~ /^paddock_judged_total\{/ {n += $2} END {print n + 0}' "$BODY")
is "$(awk '$1 == "paddock_jobs_total{status=\"judge\"}" {j = $2} $1 == "paddock_jobs_total{status=\"XX\"}" {x = $2}
  END {print j "/" x}' "$BODY")" "$judged/0" \
  "metrics: the judge jobs under paddock_jobs_total{status=\"judge\"} (one per judged attempt), none under XX"
is "$(grep '"msg":"attempt finished"' "$DLOG" | jq -r .status | sort | uniq -c | awk '{print $2 ":" $1}' | tr '\n' ' ')" \
  "judge:$judged " "the log's attempt lines say status judge, never XX"
is "$(python3 -c 'import sqlite3, sys
print(" ".join("%s:%d" % r for r in sqlite3.connect(sys.argv[1]).execute(
  "SELECT status, COUNT(*) FROM attempts GROUP BY status")))' "$DB")" "judge:$judged" \
  "the store's status column says judge for the judged records"
out=$("$PADDOCK" top --once --interval 0 --url "$U" 2>&1)
is "$(awk '$1 == "RESULTS" {$1 = $1; print}' <<<"$out")" "RESULTS judge $judged" "paddock top's RESULTS line counts them under judge"
stop_daemon

mkdir -p "$TMPD/bad/p/tests"
echo '{"id":"p","checker":{"mode":"checker","language":"cpp","code":"int main( {"}}' >"$TMPD/bad/p/problem.json"
echo 1 >"$TMPD/bad/p/tests/1.in"
echo 1 >"$TMPD/bad/p/tests/1.ans"
"$PADDOCK" serve --listen 127.0.0.1:0 --db "$TMPD/bad.db" --problems "$TMPD/bad" >"$TMPD/bad.log" 2>&1 &
BPID=$!
wait_for 60 bash -c "! kill -0 $BPID 2>/dev/null"
ok $? "a problem whose checker does not build stops the start"
grep -q "does not compile" "$TMPD/bad.log"
ok $? "... and the error says which ($(grep -o 'problem.json[^"]*' "$TMPD/bad.log" | head -c 120))"
