#!/usr/bin/env bash
# Episode problems and the grading of a session (issue 40): a problem of "kind": "episode" (hidden
# files, a command, its report, fail_to_pass / pass_to_pass) validated at load; POST
# /v1/sessions/{id}/judge grades the session's files in a fork: the hidden files replace what the
# agent left at their paths there and never appear in the session, the fork is destroyed, the
# session goes on; the judged record is answered, stored as an attempt and appended to the
# trajectory as its verdict line, which export (JSON lines and ATIF) carries. Annotations.
source "$(dirname "$0")/api.sh"
plan 60

STATE=${PADDOCK_STATE_DIR:-/var/lib/paddock}
sx() { post_json "/v1/sessions/$1/exec" "$2"; }

# A SWE-style task: calc.py has a bug in add(); hidden tests with a runner that prints pytest's
# -rA summary lines (PASSED/FAILED id - message), as a real pytest run would.
P=$TMPD/problems/calc-add
mkdir -p "$P/files/tests"
cat >"$P/files/tests/test_hidden.py" <<'PY'
from calc import add, neg
def test_add(): assert add(2, 3) == 5
def test_add_zero(): assert add(0, 7) == 7
def test_neg(): assert neg(4) == -4
PY
cat >"$P/files/tests/runner.py" <<'PY'
import sys, traceback
sys.path.insert(0, ".")
import importlib.util
spec = importlib.util.spec_from_file_location("t", "tests/test_hidden.py")
m = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(m)
except Exception as e:
    print("ERROR tests/test_hidden.py - %s" % e)
    sys.exit(2)
bad = 0
for name in sorted(n for n in dir(m) if n.startswith("test_")):
    try:
        getattr(m, name)()
        print("PASSED tests/test_hidden.py::%s" % name)
    except Exception as e:
        bad += 1
        print("FAILED tests/test_hidden.py::%s - %s" % (name, type(e).__name__))
sys.exit(1 if bad else 0)
PY
cat >"$P/problem.json" <<'JSON'
{"id": "calc-add", "kind": "episode", "template": "python",
 "command": "python3 tests/runner.py", "report": "pytest",
 "fail_to_pass": ["tests/test_hidden.py::test_add", "tests/test_hidden.py::test_add_zero"],
 "pass_to_pass": ["tests/test_hidden.py::test_neg"],
 "limits": {"time": 30, "memory": "256M"}}
JSON
cp -r examples/problems/sum "$TMPD/problems/"

# --- validation at load -------------------------------------------------------------------------
B=$TMPD/bad/ep
mkdir -p "$B"
echo '{"id": "ep", "kind": "episode", "command": "true", "fail_to_pass": ["a"]}' >"$B/problem.json"
timeout 60 "$PADDOCK" serve --listen 127.0.0.1:0 --db "$TMPD/bad.db" --problems "$TMPD/bad" >"$TMPD/bad.log" 2>&1
[ $? -ne 0 ]; ok $? "serve refuses an episode problem whose fail_to_pass has no report naming tests"
like "$(cat "$TMPD/bad.log")" "problem.json: fail_to_pass: test ids need a report" "the error names the file and field"
echo '{"id": "ep", "kind": "episode", "command": "true", "files": {"../escape": "x"}}' >"$B/problem.json"
timeout 60 "$PADDOCK" serve --listen 127.0.0.1:0 --db "$TMPD/bad.db" --problems "$TMPD/bad" >"$TMPD/bad.log" 2>&1
like "$(cat "$TMPD/bad.log")" "files: ../escape: a path" "a hidden file's path with '..' is refused at load"
echo '{"id": "ep", "kind": "episode", "files": {}}' >"$B/problem.json"
timeout 60 "$PADDOCK" serve --listen 127.0.0.1:0 --db "$TMPD/bad.db" --problems "$TMPD/bad" >"$TMPD/bad.log" 2>&1
like "$(cat "$TMPD/bad.log")" "command: required" "an episode problem without a command is refused at load"

start_daemon --problems "$TMPD/problems"
ok $? "daemon started with an episode problem beside a judge problem"
cleanup 'for t in $(cat "$TMPD/ids" 2>/dev/null); do rm -f "$STATE/trajectories/$t.jsonl"; done'

post_json /v1/judge '{"problem_id":"calc-add","language":"python","code":"print(1)"}'
is "$CODE" 400 "POST /v1/judge with an episode problem: 400"
like "$(jb .error)" "episode problem" "and it says where episodes are graded"

# --- an agent that plants a fake test at the hidden path and leaves the bug -----------------------
post_json /v1/sessions '{"template":"python","group_id":"g1","sample_id":"s1"}'
S=$(jb .session_id); echo "$S" >>"$TMPD/ids"
sx "$S" '{"shell":"printf \"def add(a, b):\\n    return a - b\\n\\ndef neg(x):\\n    return -x\\n\" > calc.py && mkdir -p tests && echo \"def test_add(): pass\" > tests/test_hidden.py","request_id":"a1"}'
is "$(jb .status)" OK "the agent's step ran"
post_json "/v1/sessions/$S/judge" '{"problem_id":"calc-add","task_id":"ep-t1","group_id":"g1","sample_id":"s1","request_id":"grade-1"}'
is "$CODE" 200 "judge the session: 200"
is "$(jb '[.kind, .session_id, .verdict.output.status, (.verdict.output.score|tostring), .verdict.resources.status, .verdict.process.status] | join(" ")')" \
  "episode $S fail 0 pass not_audited" "the planted test was replaced: output fail, score 0 over fail_to_pass"
is "$(jb '[.tests[] | "\(.id|split("::")[1])=\(.status)/\(.group)"] | join(" ")')" \
  "test_add=fail/fail_to_pass test_add_zero=fail/fail_to_pass test_neg=pass/pass_to_pass" "per-test results, by group"
is "$(jb '[(.reward|tostring), (.usable|tostring), .unusable_level, .failure_class, (.steps|tostring)] | join(" ")')" \
  "0 false output none 1" "reward 0 (the rule's fail), not usable, one step"
is "$(jb '(.image == null) or (.image.digest | startswith("sha256:"))')" true "the record's image: its digest (null on the host image)"
FORK=$(jb .grade.fork_sandbox_id)
like "$FORK" "^sb-" "the record names the fork it was graded in"
is "$(find /sys/fs/cgroup -maxdepth 6 -name "$FORK*" 2>/dev/null | wc -l)" 0 "the graded fork is gone (no cgroup left)"
is "$(ls "$STATE/grades" 2>/dev/null | grep -c "^$S-")" 0 "and so is its copy of the session's files"
is "$(jb .grade.residue)" clean "its teardown was clean"

# the hidden files never appear in the session
req GET "/v1/sessions/$S/files?path=/work/tests/test_hidden.py"
is "$(body)" "def test_add(): pass" "the session still has the agent's own file at the hidden path"
sx "$S" '{"shell":"ls /work/tests; grep -rl spec_from_file_location /work /tmp /opt 2>/dev/null | head -1"}'
is "$(jb .stdout)" "test_hidden.py" "no hidden file (runner.py) anywhere in the session"

# the verdict line ends the trajectory; the attempt is stored
req GET "/v1/sessions/$S/trajectory"
tail -1 "$BODY" >"$TMPD/last"
is "$(jq -r '.kind' <"$TMPD/last")" exec "(the exec after the grade is the last line now)"
grep '"kind":"verdict"' "$BODY" >"$TMPD/verdict"
is "$(jq -r '[.kind, .request_id, (.reward|tostring), .observation.verdict.output.status, .action.problem_id] | join(" ")' <"$TMPD/verdict")" \
  "verdict grade-1 0 fail calc-add" "the trajectory has the verdict line: request id, reward, the record"
req GET /v1/runs/ep-t1
is "$(jb '.record | [.task_id, .kind, .session_id, (.reward|tostring), .group_id] | join(" ")')" "ep-t1 episode $S 0 g1" \
  "GET /v1/runs/{task_id}: the stored attempt"

# --- the session goes on: the agent fixes the bug; graded again ---------------------------------
sx "$S" '{"shell":"sed -i s/a\\ -\\ b/a\\ +\\ b/ calc.py && python3 -c \"import calc; print(calc.add(2,3))\"","request_id":"a2"}'
is "$(jb .stdout)" "5" "the session goes on after a grade: the agent fixes the bug"
post_json "/v1/sessions/$S/judge" '{"problem_id":"calc-add","task_id":"ep-t2"}'
is "$(jb '[.verdict.output.status, (.reward|tostring), .verdict.process.status, (.usable|tostring), .unusable_level] | join(" ")')" \
  "pass 1 not_audited false process" "the fix passes every fail_to_pass: reward 1 (unaudited: not usable)"
req GET "/v1/sessions/$S/trajectory"
is "$(tail -1 "$BODY" | jq -r '[.kind, (.reward|tostring)] | join(" ")')" "verdict 1" "the verdict line ends the trajectory"

# a fix that breaks a pass_to_pass test: fail whatever it fixed
sx "$S" '{"shell":"echo \"def neg(x):\n    return x\" >> calc.py"}'
post_json "/v1/sessions/$S/judge" '{"problem_id":"calc-add","reward":{"fail":-0.5}}'
is "$(jb '[.verdict.output.status, (.reward|tostring), .reasons[0]] | join(" ")')" \
  "fail -0.5 pass_to_pass tests/test_hidden.py::test_neg: fail" "a regression in pass_to_pass fails the output (the request's reward rule)"

# --- annotations ----------------------------------------------------------------------------------
post_json "/v1/sessions/$S/annotate" '{"request_id":"a2","reward":0.25,"note":"critic: good fix"}'
is "$CODE" 200 "annotate a recorded step: 200"
is "$(jb '[.request_id, (.annotates|tostring), (.reward|tostring)] | join(" ")')" "a2 5 0.25" \
  "the answer names the step annotated"
post_json "/v1/sessions/$S/annotate" '{"request_id":"nope","reward":1}'
is "$CODE" 404 "annotating a step never recorded: 404"
post_json "/v1/sessions/$S/annotate" '{"request_id":"a2","reward":"high"}'
is "$CODE" 400 "a reward that is not a number: 400"
req GET "/v1/sessions/$S/trajectory"
is "$(tail -1 "$BODY" | jq -r '[.kind, .request_id, (.annotates|tostring), (.reward|tostring), .note] | join("|")')" \
  "annotation|a2|5|0.25|critic: good fix" "the annotation is the trajectory's last line"

post_json "/v1/sessions/$S/replay" '{}'
is "$(jb '[.steps[].kind] | map(select(. == "verdict" or . == "annotation")) | length')" 0 \
  "a replay re-runs the agent's steps only (verdicts and annotations are not steps)"

# --- export carries the rewards ---------------------------------------------------------------------
"$PADDOCK" export "$S" --url "$U" -o "$TMPD/ex.jsonl"
is "$(jq -r 'select(.kind == "verdict") | .reward' <"$TMPD/ex.jsonl" | tr '\n' ' ')" "0 1 -0.5 " "export (JSON lines) carries each verdict's reward"
"$PADDOCK" export "$S" --url "$U" --format atif -o "$TMPD/ex.atif"
is "$(jq -r '.extra.reward' <"$TMPD/ex.atif")" "-0.5" "ATIF: the document's extra has the last verdict's reward"
is "$(jq -r '[.steps[] | select(.source == "agent" and .extra.reward != null) | "\(.extra.request_id)=\(.extra.reward)"] | join(" ")' <"$TMPD/ex.atif")" \
  "a2=0.25" "ATIF: the annotated step carries its reward"
is "$(jq -r '[.steps[] | .tool_calls[0].function_name] | map(select(. == "verdict" or . == "annotation")) | length' <"$TMPD/ex.atif")" 0 \
  "ATIF: verdicts and annotations are not tool calls"

# --- inline problems: a JUnit report, an exit code ----------------------------------------------------
post_json /v1/sessions '{"template":"python"}'
S2=$(jb .session_id); echo "$S2" >>"$TMPD/ids"
sx "$S2" '{"shell":"echo ok > /work/state"}'
post_json "/v1/sessions/$S2/judge" '{"problem":{"kind":"episode","files":{"/opt/grade/j.sh":"cat > out.xml <<EOF\n<testsuite><testcase classname=\"suite.T\" name=\"a\"/><testcase classname=\"suite.T\" name=\"b\"><failure message=\"x\"/></testcase><testcase classname=\"suite.T\" name=\"c\"><skipped/></testcase></testsuite>\nEOF\n"},"command":["sh","/opt/grade/j.sh"],"report":{"junit":"out.xml"}}}'
is "$CODE" 200 "an inline episode problem with a JUnit report: 200"
is "$(jb '[.verdict.output.status, (.verdict.output.score|tostring), ([.tests[] | "\(.id)=\(.status)"] | join(","))] | join(" ")')" \
  "partial 0.5 suite.T.a=pass,suite.T.b=fail,suite.T.c=skipped" "JUnit: every reported test counts (skipped ones neither way): partial 0.5"
# an agent that plants the report the command should write, and breaks the command: no stale pass
sx "$S2" '{"shell":"printf \"<testsuite><testcase classname=\\\"suite.T\\\" name=\\\"a\\\"/></testsuite>\" > /work/out.xml"}'
post_json "/v1/sessions/$S2/judge" '{"problem":{"kind":"episode","command":"exit 1","report":{"junit":"out.xml"},"fail_to_pass":["suite.T.a"]}}'
is "$(jb '[.verdict.output.status, .tests[0].status] | join(" ")')" "fail missing" \
  "a report file the agent planted is removed in the fork before the command runs"
# an agent that makes the hidden paths unwritable as such: a directory with files, a file for a parent
sx "$S2" '{"shell":"mkdir -p /work/h/x.sh/deep && echo z > /work/h/x.sh/deep/f && echo file > /work/p"}'
post_json "/v1/sessions/$S2/judge" '{"problem":{"kind":"episode","files":{"h/x.sh":"exit 0","p/q/y.sh":"exit 0"},"command":"sh h/x.sh && sh p/q/y.sh"}}'
is "$(jb '[.verdict.output.status, .failure_class] | join(" ")')" "pass none" \
  "what the agent left at or above a hidden path is cleared in the fork: graded, not an infrastructure failure"
req GET "/v1/sessions/$S2/files?path=/work/h/x.sh/deep/f"
is "$(body)" "z" "and stays in the session"
post_json "/v1/sessions/$S2/judge" '{"problem":{"kind":"episode","command":"grep -q ok /work/state","reward":{"mode":"binary"}}}'
is "$(jb '[.verdict.output.status, (.reward|tostring), .tests[0].id] | join(" ")')" "pass 1 command" "exit_code report: pass on exit 0"
post_json "/v1/sessions/$S2/judge" '{"problem":{"kind":"episode","command":"sleep 30","limits":{"time":1}}}'
is "$(jb '[.verdict.output.status, .verdict.resources.status, .failure_class, .command.status] | join(" ")')" \
  "fail fail exec_timeout TO" "a command past its time limit: output and resources fail"
req GET "/v1/sessions/$S2/files?path=/opt/grade/j.sh"
is "$CODE" 404 "an absolute hidden path is not in the session either"
post_json "/v1/sessions/$S2/judge" '{"problem":{"kind":"episode","command":"true","bogus":1}}'
is "$CODE" 400 "an inline episode problem with an unknown field: 400"
like "$(jb .error)" "bogus: unknown field" "naming the field"
post_json "/v1/sessions/$S2/judge" '{"problem_id":"sum"}'
is "$CODE" 400 "judging a session with a submission's problem: 400"

# --- the budget ---------------------------------------------------------------------------------------
post_json /v1/sessions '{"template":"python","budget":{"steps":2,"cpu_s":100}}'
is "$CODE" 201 "a session with a budget of 2 execs"
S3=$(jb .session_id); echo "$S3" >>"$TMPD/ids"
sx "$S3" '{"shell":"printf \"def add(a, b):\\n    return a + b\\n\\ndef neg(x):\\n    return -x\\n\" > calc.py"}'
sx "$S3" '{"shell":"echo two"}'
is "$(jb .stdout)" two "the second exec runs"
sx "$S3" '{"shell":"echo three"}'
is "$CODE" 409 "the third is refused: 409"
is "$(jb '[.error, (.exceeded | join(",")), (.budget.steps|tostring), (.spent.steps|tostring)] | join("|")')" \
  "budget: steps: the session's budget of 2 execs is spent|steps|2|2" "the JSON error names the budget, what it allows and what was spent"
req GET "/v1/sessions/$S3/files?path=/work/calc.py"
is "$CODE" 200 "the session stays readable"
post_json "/v1/sessions/$S3/judge" '{"problem_id":"calc-add","reward":{"budget_exceeded":-0.2}}'
is "$(jb '[.verdict.output.status, .verdict.resources.status, (.reward|tostring), (.budget_exceeded|join(",")), (.reasons|join(","))] | join(" ")')" \
  "pass fail -0.2 steps budget: steps exceeded" "graded: output pass, resources fail for the budget, the budget_exceeded penalty as reward"
post_json /v1/sessions '{"template":"python","budget":{"steps":0}}'
is "$CODE" 400 "a budget of 0 steps: 400"
post_json /v1/sessions '{"template":"python","budget":{"tokens":5}}'
like "$(jb .error)" "budget.tokens: unknown field" "an unknown budget field: 400 naming it"
post_json /v1/sessions '{"template":"python","budget":{"cpu_s":0.3}}'
S4=$(jb .session_id); echo "$S4" >>"$TMPD/ids"
sx "$S4" '{"shell":"python3 -c \"import time\nt=time.process_time()\nwhile time.process_time()-t<0.6: pass\"","timeout":10}'
is "$(jb .status)" OK "an exec spends 0.6 s of CPU against a budget of 0.3 s (it is not cut short)"
sx "$S4" '{"shell":"true"}'
is "$(jb '[(.exceeded|join(",")), (.spent.cpu_s > 0.3 | tostring)] | join(" ")')" "cpu_s true" "the next exec is refused for cpu_s"
post_json "/v1/sessions/$S4/judge" '{"problem":{"kind":"episode","command":"true"}}'
is "$(jb '[.verdict.resources.status, (.reward|tostring), (.budget_exceeded|join(","))] | join(" ")')" "fail 0 cpu_s" \
  "graded: resources fail for cpu_s, reward budget_exceeded's default 0"

# the steps' limits: a step a limit killed fails the resources level (usable false), not the reward
post_json /v1/sessions '{"template":"python"}'
S5=$(jb .session_id); echo "$S5" >>"$TMPD/ids"
sx "$S5" '{"shell":"sleep 5","timeout":0.5}'
is "$(jb .status)" TO "an agent's step killed at its time limit"
post_json "/v1/sessions/$S5/judge" '{"problem":{"kind":"episode","command":"true"}}'
is "$(jb '[.verdict.output.status, .verdict.resources.status, (.reward|tostring), .reasons[0]] | join(" ")')" \
  "pass fail 1 step 1: TO (a limit killed it)" "graded: output pass, resources fail for the step's limit, the reward kept"

