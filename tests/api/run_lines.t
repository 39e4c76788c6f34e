#!/usr/bin/env bash
# paddock run, the README's main job: the example request set runs to its expected outcomes and the
# command exits 0 (problem_id labels a run line unless --problems is given); every line gets a
# record — a refused line says so without a program status or failure class, a line whose deadline
# cannot be met is a queue_timeout; Ctrl-C cancels what is unfinished, each line still gets its
# record, the summary is printed, and the file holds only whole lines.
source "$(dirname "$0")/api.sh"
plan 19

# --- the example set, as `make run` runs it ---------------------------------------------------
"$PADDOCK" run -j 4 -q examples/requests.jsonl -o "$TMPD/results.jsonl" 2>"$TMPD/err"
is "$?" 0 "make run's first command exits 0"
diag "$(tail -4 "$TMPD/err")"
python3 examples/make-requests.py --check "$TMPD/results.jsonl" >"$TMPD/check" 2>&1
check=$(tail -1 "$TMPD/check")
grep UNEXPECTED "$TMPD/check" | sed 's/^/# /'
is "$check" "252 passed, 0 failed" "every example line has its expected outcome (make-requests.py --check)"
is "$(jq -r 'select(.task_id == "python-ok-01") | .problem_id' "$TMPD/results.jsonl")" "sum" \
  "without --problems, problem_id is the run's id, carried to its record"
"$PADDOCK" run -j 2 -q --problems examples/problems examples/submissions.jsonl -o "$TMPD/verdicts.jsonl" 2>"$TMPD/err"
is "$?" 0 "make run's second command (the judged submissions) exits 0"
like "$(cat "$TMPD/err")" "expected verdicts: ([0-9]+) of \1 lines matched" "every submission has its expected verdict"
unlike "$(cat "$TMPD/err")" "status: OK 0 RE 0" "a judge-only run prints no run status line (its tests have theirs)"

# --- refusals and admission ---------------------------------------------------------------------
cat >"$TMPD/mixed.jsonl" <<'EOF_L'
{"task_id":"good","language":"bash","code":"echo hi"}
{"task_id":"broken", "language":
[1,2,3]
{"task_id":"badfield","language":"bash","code":"echo x","stdn":"typo"}
{"task_id":"late","language":"bash","code":"echo never","priority":"low","deadline_ms":1}
{"task_id":"notpl","template":"nosuch","cmd":["true"]}
EOF_L
"$PADDOCK" run -j 1 -q "$TMPD/mixed.jsonl" -o "$TMPD/mixed.out" 2>"$TMPD/err"
is "$?" 2 "a run with refused lines exits 2"
is "$(jq -r 'select(.line == 1) | .status' "$TMPD/mixed.out")" "OK" "the good line ran"
like "$(jq -c 'select(.line == 2)' "$TMPD/mixed.out")" '^\{"line":2,"refused":"bad_request","error":"malformed JSON at column [0-9]+: [^"]+"\}$' \
  "malformed JSON: refused as a bad request with its column, no status or failure class"
like "$(jq -c 'select(.line == 3)' "$TMPD/mixed.out")" '"refused":"bad_request","error":"not a JSON object' "a non-object line is refused"
like "$(jq -c 'select(.line == 4)' "$TMPD/mixed.out")" '"refused":"bad_request","error":"stdn: unknown field".*"task_id":"badfield"' \
  "a bad field is refused, naming the field and the line's task_id"
is "$(jq -r 'select(.line == 5) | [.task_id, .status, .failure_class] | join(" ")' "$TMPD/mixed.out")" "late XX queue_timeout" \
  "a deadline that cannot be met is its own outcome: queue_timeout, never ran"
like "$(jq -c 'select(.line == 6)' "$TMPD/mixed.out")" '"refused":"bad_request","error":"template: .nosuch. is not a template of this run \(bash, ' \
  "a template the run does not have is the line's mistake: refused, naming it and the known ones"
like "$(cat "$TMPD/err")" "refused as requests \(malformed, a bad field\): 4; not admitted by the infrastructure: 0" \
  "the summary counts the refused lines apart from the infrastructure's"

# a judge line that never ran is counted with the judged lines, under its problem: behind a run
# that holds the only worker, its deadline cannot be met (alone, an idle runner admits anything)
echo '{"task_id":"hold","language":"bash","code":"sleep 2"}' >"$TMPD/jlate.jsonl"
head -1 examples/submissions.jsonl | jq -c '. + {task_id: "jlate", priority: "low", deadline_ms: 300}' >>"$TMPD/jlate.jsonl"
"$PADDOCK" run -j 1 -q --problems examples/problems "$TMPD/jlate.jsonl" -o "$TMPD/jlate.out" 2>"$TMPD/err"
is "$(jq -r 'select(.task_id == "jlate") | [.task_id, .problem_id, .status, .failure_class] | join(" ")' "$TMPD/jlate.out")" "jlate sum XX queue_timeout" \
  "a judge line refused at admission: queue_timeout, with its problem"
like "$(cat "$TMPD/err")" "sum +1 +X .*judged failure classes: queue_timeout 1" \
  "it is in the judged summary under its problem"

# --- Ctrl-C ------------------------------------------------------------------------------------------
: >"$TMPD/slow.jsonl"
for i in 1 2 3 4 5 6; do
  echo "{\"task_id\":\"slow-$i\",\"language\":\"bash\",\"code\":\"sleep 9$$\",\"limits\":{\"wall_time\":600}}" >>"$TMPD/slow.jsonl"
done
"$PADDOCK" run -j 2 -q "$TMPD/slow.jsonl" -o "$TMPD/slow.out" 2>"$TMPD/err" &
rpid=$!
cleanup "kill -9 $rpid 2>/dev/null"
# the signal handler is in place once the first program runs (its argv is this test's own)
wait_for 120 pgrep -x -f "sleep 9$$" >/dev/null
kill -INT "$rpid"
wait "$rpid"
is "$?" 130 "Ctrl-C: paddock run exits 130"
is "$(jq -r '.failure_class' "$TMPD/slow.out" | sort | uniq -c | awk '{print $1, $2}')" "6 cancelled" \
  "every line has its record, each cancelled (no reward: never the model's fault)"
like "$(cat "$TMPD/err")" "interrupted: cancelling 6 unfinished.*paddock run: 6 requests" "it says so and prints the summary"
