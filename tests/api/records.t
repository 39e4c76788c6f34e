#!/usr/bin/env bash
# The store keeps one row per attempt and reads back (issue 21): a judged submission whose sandboxes
# fail is retried as a new attempt, and GET /v1/runs/{task_id} answers both attempts, oldest first,
# each with its own attempt id and error (a retry does not overwrite the first); GET /v1/runs pages
# through a group's records (group_id, since, kind, last, limit/cursor; last=1 a task's latest
# record only, when it was judged again); `paddock export --runs`
# writes the judged records as JSON lines a trainer loads, from a daemon or from the store file.
source "$(dirname "$0")/api.sh"
plan 24

# a template whose sandboxes cannot be made (its warm-up fails): every attempt is a startup_failure
cat >"$TMPD/templates.json" <<'EOF_T'
{"templates": [
 {"name": "python", "language": "python", "requires": ["python3"]},
 {"name": "broken", "language": "python", "requires": ["python3"], "warmup": ["/bin/false"]}]}
EOF_T
start_daemon --templates "$TMPD/templates.json"
ok $? "daemon started with a template whose sandboxes cannot be made"

post_json /v1/judge '{"problem":{"tests":[{"input":"1\n","output":"1\n"}],"template":"broken"},
  "language":"python","code":"print(input())","task_id":"rec-broken","group_id":"g-rec","sample_id":"s0"}'
is "$(jb '[.failure_class, (.reward|tostring), (.attempt|tostring), .attempt_id] | join(" ")')" \
  "startup_failure null 2 rec-broken#2" "sandboxes that cannot be made: startup_failure, no reward, answered by attempt 2"

req GET /v1/runs/rec-broken
is "$CODE" 200 "GET /v1/runs/{task_id}: 200"
is "$(jb '[(.attempts|tostring), (.records|map(.attempt|tostring)|join(",")), (.records|map(.last|tostring)|join(","))] | join(" ")')" \
  "2 1,2 false,true" "both attempts are stored, oldest first, the last marked"
is "$(jb '[.records[0].attempt_id, .records[0].failure_class, .records[1].attempt_id, .record.attempt_id] | join(" ")')" \
  "rec-broken#1 startup_failure rec-broken#2 rec-broken#2" "the first attempt keeps its own id and failure; record is the last"
[ -n "$(jb .records[0].error)" ]
ok $? "the first attempt's error is kept: $(jb .records[0].error | head -c 120)"
is "$(sqlite3 "$DB" "SELECT COUNT(*) || ' ' || SUM(last) FROM attempts WHERE task_id = 'rec-broken'")" "2 1" \
  "the store has one row per attempt"

# a plain run on the broken template: its retry is a row of its own too
post_json /v1/runs '{"task_id":"rec-run","language":"python","template":"broken","code":"print(1)"}'
req GET /v1/runs/rec-run
run_attempts=$(jb .attempts)
[ "$run_attempts" -ge 2 ] && is "$(jb '.records|map(.attempt|tostring)|join(",")')" "$(seq -s, 1 "$run_attempts")" \
  "a run's retries are stored as attempts of their own ($run_attempts)"

t0=$(($(date +%s%N) / 1000000))
for s in 1 2 3; do
  post_json /v1/judge "{\"problem\":{\"tests\":[{\"input\":\"2\\n\",\"output\":\"4\\n\"}]},\"language\":\"python\",
    \"code\":\"print(int(input())*$s)\",\"task_id\":\"rec-$s\",\"group_id\":\"g-rec\",\"sample_id\":\"s$s\"}"
done
post_json /v1/judge '{"problem":{"tests":[{"input":"2\n","output":"4\n"}]},"language":"python","code":"print(4)",
  "task_id":"rec-other","group_id":"g-other"}'

req GET '/v1/runs?group_id=g-rec'
is "$(jb '[(.count|tostring), (.records|map(.task_id)|join(","))] | join(" ")')" \
  "5 rec-broken,rec-broken,rec-1,rec-2,rec-3" "?group_id=: the group's attempts in the order stored, no other group's"
req GET '/v1/runs?group_id=g-rec&last=1'
is "$(jb '[.records[] | "\(.task_id):\(.reward)"] | join(",")')" "rec-broken:null,rec-1:0,rec-2:1,rec-3:0" \
  "&last=1: one record per task, rewards as judged (null for the infrastructure failure)"
req GET "/v1/runs?group_id=g-rec&since=$t0"
is "$(jb '.records|map(.task_id)|join(",")')" "rec-1,rec-2,rec-3" "&since= (unix ms): only records finished since"
req GET '/v1/runs?group_id=g-rec&limit=2'
n1=$(jb .next)
is "$(jb '[(.count|tostring), (.records|map(.task_id)|join(","))] | join(" ")')" "2 rec-broken,rec-broken" "&limit=2: a page of two"
req GET "/v1/runs?group_id=g-rec&limit=2&cursor=$n1"
is "$(jb '[(.records|map(.task_id)|join(",")), (.next|type)] | join(" ")')" "rec-1,rec-2 number" "&cursor=next: the next page"
req GET '/v1/runs?kind=run'
is "$(jb '.records|map(.task_id)|unique|join(",")')" "rec-run" "&kind=run: only plain runs"
req GET '/v1/runs?limit=5000'
is "$CODE" 400 "a limit over 1000: 400 ($(jb .error))"
req GET '/v1/runs/no-such-task'
is "$CODE" 404 "an unknown task: 404"

"$PADDOCK" export --runs --url "$U" --group-id g-rec -o "$TMPD/g.jsonl" 2>"$TMPD/export.err"
is "$?" 0 "paddock export --runs --url: exit 0"
is "$(jq -sr 'map("\(.sample_id):\(.reward)") | join(",")' "$TMPD/g.jsonl")" "s0:null,s1:0,s2:1,s3:0" \
  "export: one JSON line per sample of the group, the last attempt's, with its reward"
# a task judged again later (a new request): last=1 and the export list its latest record only
post_json /v1/judge '{"problem":{"tests":[{"input":"2\n","output":"4\n"}]},"language":"python",
  "code":"print(int(input())*2)","task_id":"rec-1","group_id":"g-rec","sample_id":"s1"}'
req GET '/v1/runs?group_id=g-rec&last=1'
is "$(jb '[.records[] | "\(.task_id):\(.reward)"] | join(",")')" "rec-broken:null,rec-2:1,rec-3:0,rec-1:1" \
  "rec-1 judged again: &last=1 lists its latest record only"
before1=$(sqlite3 "$DB" "SELECT MIN(id) - 1 FROM attempts WHERE task_id = 'rec-1'")
req GET "/v1/runs?group_id=g-rec&last=1&limit=1&cursor=$before1"
is "$(jb '.records|map(.task_id)|join(",")')" "rec-2" "... a page of one from the cursor skips rec-1's earlier record"
stop_daemon
"$PADDOCK" export --runs --db "$DB" --all-attempts --kind any >"$TMPD/all.jsonl" 2>"$TMPD/export.err"
is "$(wc -l <"$TMPD/all.jsonl")" $((7 + run_attempts)) "export --db --all-attempts --kind any: every stored attempt"
"$PADDOCK" export --runs --db "$TMPD/missing.sqlite" >/dev/null 2>"$TMPD/export.err"
is "$?" 2 "export --db of a missing file: an error, not an empty export ($(head -c 100 "$TMPD/export.err"))"
# a store made before the attempt columns: opened, the columns added, its rows read as last attempts
sqlite3 "$TMPD/old.sqlite" "CREATE TABLE attempts (id INTEGER PRIMARY KEY, task_id TEXT, attempt INTEGER,
  sandbox_id TEXT, problem_id TEXT, problem_version TEXT, template TEXT, language TEXT, node TEXT,
  queued_at INTEGER, started_at INTEGER, finished_at INTEGER, queue_ms INTEGER, status TEXT, failure_class TEXT,
  exit_code INTEGER, signal INTEGER, wall_ms INTEGER, cpu_ms INTEGER, memory_peak_bytes INTEGER, record TEXT NOT NULL);
  INSERT INTO attempts (task_id, attempt, finished_at, record) VALUES ('old-1', 1, 5, '{\"task_id\":\"old-1\"}'),
  ('old-2', 1, 6, '{\"task_id\":\"old-2\",\"reward\":1}');
  UPDATE attempts SET problem_id = 'sum', record = '{\"task_id\":\"old-2\",\"reward\":1,\"code_bytes\":39,
    \"verdict\":{\"output\":{\"status\":\"pass\",\"score\":1}},\"tests\":[{\"wall_ms\":7},{\"wall_ms\":5}]}'
    WHERE task_id = 'old-2';"
"$PADDOCK" export --runs --db "$TMPD/old.sqlite" 2>/dev/null >"$TMPD/old.jsonl"
is "$(jq -r '"\(.task_id) \(.attempt) \(.last)"' "$TMPD/old.jsonl")" "old-2 1 true" \
  "an older store: migrated (its judged rows known by their reward), read back as last attempts"
is "$(sqlite3 "$TMPD/old.sqlite" "SELECT problem_key, passed, tests_ms, code_bytes, score FROM attempts WHERE task_id = 'old-2'")" \
  "sum|1|12|39|1.0" "and the review signals' facts of its judged row are read from its record once"
