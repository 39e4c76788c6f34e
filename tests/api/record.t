#!/usr/bin/env bash
# One result record on every surface: the same program (stdout a line, stderr 3 MB ending in a
# marked line, so the stream is cut to head + tail) through `paddock exec --json`, POST /v1/runs,
# a session exec, `paddock run` and the daemon's store must give a record with the same keys and the
# same stdout, stderr (its tail included) and counts. lib/result.c renders it for all of them.
source "$(dirname "$0")/api.sh"
plan 16

PROG='echo out; yes e | head -c 3000000 >&2; echo ERR-TAIL >&2'
CMD=$(jq -cn --arg p "$PROG" '["sh", "-c", $p]')

start_daemon
ok $? "daemon started"

# 1. paddock exec --json
# (its status is OL, the API's OK: exec's own rule for a cut stream, not the rendering's)
"$PADDOCK" exec --json --quiet -- sh -c "$PROG" >"$TMPD/exec.full.json" 2>"$TMPD/exec.err"
jq -e . <"$TMPD/exec.full.json" >/dev/null
ok $? "paddock exec --json: a record"
# exec adds the failure class and verdict that /v1/runs states at the top, beside "run": the
# same rules (OL: output_limit, resources fail; no judge, no audit)
is "$(jq -c '[.failure_class, .verdict.output, .verdict.process.status, .verdict.resources]' <"$TMPD/exec.full.json")" \
  '["output_limit","not_judged","not_audited","fail"]' "paddock exec --json: failure_class and verdict, as /v1/runs states them"
jq 'del(.failure_class, .verdict)' <"$TMPD/exec.full.json" >"$TMPD/exec.json"

# 2. POST /v1/runs (the run step's record)
post_json /v1/runs "{\"template\":\"bash\",\"cmd\":$CMD,\"task_id\":\"record-surfaces\"}"
is "$CODE" 200 "/v1/runs: 200"
jq .run <"$BODY" >"$TMPD/runs.json"
cp "$BODY" "$TMPD/runs.top.json"

# 3. a session exec (its record, less the session's own three fields)
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
post_json "/v1/sessions/$S/exec" "{\"cmd\":$CMD}"
is "$CODE" 200 "session exec: 200"
is "$(jb '[has("session_id"), has("request_id"), has("template_version")] | all')" true \
  "session exec: session_id, request_id and template_version added"
jq 'del(.session_id, .request_id, .template_version)' <"$BODY" >"$TMPD/session.json"
req DELETE "/v1/sessions/$S"
req GET "/v1/sessions/$S/trajectory"
head -1 "$BODY" >"$TMPD/traj.head.json"

# 4. paddock run (a request line through the in-process scheduler)
echo "{\"template\":\"bash\",\"cmd\":$CMD}" >"$TMPD/req.jsonl"
"$PADDOCK" run -q -o "$TMPD/run.jsonl" "$TMPD/req.jsonl" >/dev/null 2>"$TMPD/run.err"
jq .run <"$TMPD/run.jsonl" >"$TMPD/run.json" 2>/dev/null
ok $? "paddock run: a result line ($(head -c 200 "$TMPD/run.err"))"

# 5. the daemon's store: the record /v1/runs answered
python3 - "$DB" >"$TMPD/store.json" <<'PY'
import json, sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute(
    "SELECT record FROM attempts WHERE task_id = 'record-surfaces'").fetchone()
print(json.dumps(json.loads(row[0])['run']) if row else '{}')
PY

surfaces="exec runs session run store"
keys() { jq -c 'keys' <"$TMPD/$1.json" 2>/dev/null; }
want=$(keys exec)
diff=""
for s in $surfaces; do [ "$(keys "$s")" = "$want" ] || diff="$diff $s:$(keys "$s")"; done
is "$diff" "" "every surface's record has the same keys"
like "$want" '"audit".*"residue".*"setup_ms".*"stderr_truncated".*"teardown_ms"' \
  "the keys include residue, timings and audit ($(jq length <"$TMPD/exec.json") keys)"

same() {  # same FILTER: the filter's value on every surface, or the first that differs
  local w s
  w=$(jq -c "$1" <"$TMPD/exec.json")
  for s in $surfaces; do [ "$(jq -c "$1" <"$TMPD/$s.json")" = "$w" ] || { echo "$s: $(jq -c "$1" <"$TMPD/$s.json" | head -c 200)"; return; }; done
  echo "$w"
}
is "$(same '[.exit_code, .signal, .stdout, .stdout_bytes, .stderr_bytes, .stderr_truncated]')" \
  '[0,0,"out\n",4,3000009,true]' "exit code, stdout and the counts agree"
tails=""
for s in $surfaces; do
  jq -e '.stderr | endswith("\nERR-TAIL\n") and test("bytes omitted")' <"$TMPD/$s.json" >/dev/null || tails="$tails $s"
done
is "$tails" "" "every surface keeps stderr's tail (ERR-TAIL after the omission marker)"
is "$(same '.stderr | length')" "$(jq '.stderr | length' <"$TMPD/exec.json")" "stderr's kept text is the same length everywhere"
is "$(same '.stderr')" "$(jq -c .stderr <"$TMPD/exec.json")" "stderr's kept text is identical everywhere"

# the image, {name, digest} at the top of every record, the host image by the default image's id
post_json /v1/judge '{"problem":{"tests":[{"input":"","output":"1"}]},"language":"bash","code":"echo 1"}'
cp "$BODY" "$TMPD/judged.json"
HOSTIMG=$(jq -c '.image | {name, digest}' <"$TMPD/exec.json")
like "$HOSTIMG" '^\{"name":"host","digest":"sha256:[0-9a-f]{64}"\}$' "the host image: name host, digest the default image's id"
imgs=""
for f in runs.top session traj.head judged; do imgs="$imgs $f:$(jq -c '.image | {name, digest}' <"$TMPD/$f.json")"; done
is "$imgs" " runs.top:$HOSTIMG session:$HOSTIMG traj.head:$HOSTIMG judged:$HOSTIMG" \
  "the same image at the top of a run's record, a session exec, a trajectory's first line and a judged record"
is "$(jq -r '[.template, .run.image.digest] | join(" ")' <"$TMPD/runs.top.json")" "bash $(jq -r .image.digest <"$TMPD/exec.json")" \
  "/v1/runs keeps template and run.image as before"
