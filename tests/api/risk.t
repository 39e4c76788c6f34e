#!/usr/bin/env bash
# Per-problem controls (issue 22): the risk list and the submission caps. A reviewer's confirmed
# hack puts its problem on the risk list (GET /v1/review/risk), kept in the store across restarts:
# from then on every judged submission of it is audited in full with egress denied, whatever the
# request asked ("risk_list": true in the record), until an operator takes it off (DELETE
# /v1/review/risk/{problem_id}). --problem-submit-max caps one problem's judged submissions per
# window: past it a 429 with Retry-After and a JSON error naming problem_id, counted in /metrics;
# a refused batch gives back what it took; the other problems are not touched.
source "$(dirname "$0")/api.sh"
plan 28

start_daemon --problems examples/problems --problem-submit-max 3 --problem-submit-window 3600
ok $? "daemon started with a cap of 3 submissions per problem per hour"
FIRST_DB=$DB

req GET /v1/review/risk
is "$(jb '.count')" 0 "the risk list starts empty"

# "audit": false: the audit is on by default (issue 39); the risk list audits whatever the request says
judge() { post_json /v1/judge "$(jq -cn --arg p "$1" --arg c "$2" --arg t "$3" '{problem_id: $p, language: "python", code: $c, task_id: $t, cache: false, audit: false}')"; }
HELLO="print('Hello, World!')"

# a hack on hello, caught by an audit the request asked for; a reviewer confirms it
post_json /v1/judge "$(jq -cn --arg c "open('/usr/bin/.x','w').write('x')
$HELLO" '{problem_id: "hello", language: "python", code: $c, task_id: "rk-hack", audit: true, cache: false}')"
is "$(jb .failure_class)" policy_violation "the hack: policy_violation"
req GET /v1/review
ID=$(jb '.items[] | select(.task_id == "rk-hack") | .id')
post_json "/v1/review/$ID" '{"decision":"confirm","note":"wrote under /usr/bin"}'
is "$CODE" 200 "the reviewer confirms it"
req GET /v1/review/risk
is "$(jb '[.count, .problems[0].problem_id, .problems[0].confirmed] | map(tostring) | join(" ")')" "1 hello 1" \
  "hello is on the risk list, with one confirmed hack"

# the next submission asks for no audit: it is audited in full anyway
judge hello "$HELLO" rk-2
is "$(jb '[.verdict.output.status, .verdict.process.status, .audit.status, (.risk_list|tostring)] | join(" ")')" \
  "pass pass pass true" "a submission without \"audit\": audited (risk_list true), an honest one passes"
judge hello "import socket
s = socket.socket(); s.settimeout(2)
try: s.connect(('192.0.2.1', 80))
except OSError: pass
$HELLO" rk-3
is "$(jb '[.verdict.output.status, .verdict.process.status, (.verdict.process.failed | join(","))] | join(" ")')" \
  "pass fail egress" "egress is denied and fails the process level, though the request asked nothing"

# runs naming the problem (/v1/runs, /run_code) are audited in full too, egress denied
post_json /v1/runs "$(jq -cn --arg c "$HELLO" '{language: "python", code: $c, problem_id: "hello", task_id: "rk-run"}')"
is "$(jb '[.run.status, .verdict.process.status, (.risk_list|tostring)] | join(" ")')" "OK pass true" \
  "a run of hello without \"audit\": audited (risk_list true), an honest one passes"
post_json /v1/runs "$(jq -cn --arg c "import socket
s = socket.socket(); s.settimeout(2)
try: s.connect(('192.0.2.1', 80))
except OSError: pass" '{language: "python", code: $c, problem_id: "hello", task_id: "rk-run2"}')"
is "$(jb '[.verdict.process.status, (.verdict.process.failed | join(","))] | join(" ")')" "fail egress" \
  "a run of hello reaching out: egress denied, the process level fails"
post_json /run_code "$(jq -cn --arg c "$HELLO" '{language: "python", code: $c, problem_id: "hello"}')"
is "$(jb '[.process.status, (.risk_list|tostring)] | join(" ")')" "pass true" "/run_code naming hello: audited too"
post_json /run_code "$(jq -cn --arg c "$HELLO" '{language: "python", code: $c, problem_id: "hello", network: "host"}')"
is "$CODE" 403 "/run_code of hello asking for the host network: 403"
like "$(jb .error)" "^network: problem_id hello is on the risk list" "the error names the risk list"

# the cap: that was hello's third submission this hour
judge hello "$HELLO" rk-4
is "$CODE" 429 "a fourth submission of hello: 429"
like "$(jb .error)" '^problem_id: hello has had its 3 submissions in 3600 s' "the error names problem_id and the cap"
ra=$(hdr Retry-After)
[ -n "$ra" ] && [ "$ra" -ge 1 ] && [ "$ra" -le 3600 ]
ok $? "Retry-After: the seconds left in the window ($ra)"
judge sum 'a,b=map(int,input().split());print(a+b)' rk-sum
is "$(jb '[.verdict.output.status, .verdict.process.status, (.risk_list|tostring)] | join(" ")')" "pass not_audited false" \
  "another problem: not capped, not on the risk list (not audited)"
post_json /v1/judge "$(jq -cn '{language: "python", cache: false, submissions: [range(3) | {problem_id: "sum", code: "print(\(.))"}]}')"
is "$CODE" 429 "a batch of 3 more sum submissions (4 in all): 429"
like "$(jb .error)" '^submissions\[2\]: problem_id: sum' "the error names the submission that went over"
judge sum 'print(1)' rk-sum2
is "$CODE" 200 "the refused batch gave back what it took: a single sum submission still passes the cap"
req GET /metrics
like "$(body)" 'paddock_submission_cap_refusals_total 2' "metrics: the refusals counted (one single, one batch)"
like "$(body)" 'paddock_risk_problems 1' "metrics: one problem on the risk list"

# a restart keeps the risk list (the store); the caps' windows start again
stop_daemon
start_daemon --problems examples/problems --db "$FIRST_DB"
ok $? "the daemon restarted on the same store"
req GET /v1/review/risk
is "$(jb '[.count, .problems[0].problem_id] | map(tostring) | join(" ")')" "1 hello" "the risk list survived the restart"
judge hello "$HELLO" rk-after
is "$(jb '[.verdict.process.status, (.risk_list|tostring)] | join(" ")')" "pass true" \
  "hello's submissions are still audited in full"

# an operator takes it off
req DELETE /v1/review/risk/hello
is "$CODE" 200 "DELETE /v1/review/risk/hello: 200"
req DELETE /v1/review/risk/hello
is "$CODE" 404 "again: 404, not on the list"
judge hello "$HELLO" rk-off
is "$(jb '[.verdict.process.status, (.risk_list|tostring)] | join(" ")')" "not_audited false" \
  "off the list: audited only when asked again"
req GET /v1/review/risk
is "$(jb .count)" 0 "the risk list is empty"
