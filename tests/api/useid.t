#!/usr/bin/env bash
# use_id: every record, log line and trajectory step names the use of the sandbox it came from; a
# pooled sandbox reset for the next user keeps its sandbox_id and gets a new use_id, so that two
# users' records never share one (docs/api.md).
source "$(dirname "$0")/api.sh"
plan 17

# the library: a fresh sandbox's first use
rec=$("$PADDOCK" exec --json -- true 2>/dev/null)
sid=$(jq -r .sandbox_id <<<"$rec")
is "$(jq -r .use_id <<<"$rec")" "$sid.1" "paddock exec --json: use_id is <sandbox_id>.1 ($sid.1)"

# one worker and one warm sandbox: runs take turns on the pool's sandboxes, reset between users
start_daemon --workers 1 --warm 1
ok $? "daemon started"
for i in 1 2 3 4 5 6 7 8; do
  post_json /v1/runs "{\"template\":\"bash\",\"cmd\":[\"true\"],\"task_id\":\"u-$i\"}"
  cp "$BODY" "$TMPD/run-$i.json"
done
n_sb=$(jq -s '[.[].sandbox_id] | unique | length' "$TMPD"/run-*.json)
[ "$n_sb" -lt 8 ]
ok $? "eight runs on $n_sb pooled sandboxes: some served more than one user"
is "$(jq -s '[.[].use_id] | unique | length' "$TMPD"/run-*.json)" 8 "eight uses: eight use_ids"
is "$(jq -rs 'map(.use_id | test("^sb-[0-9a-f]+-[0-9]+\\.[0-9]+$")) | all' "$TMPD"/run-*.json)" true \
  "each is <sandbox_id>.<n>"
is "$(jq -rs 'map((.use_id | sub("\\.[0-9]+$"; "")) == .sandbox_id) | all' "$TMPD"/run-*.json)" true \
  "and names its sandbox"
# the log's line of each attempt names the same use as its record
wait_for 50 bash -c "[ \$(grep -c '\"msg\":\"attempt finished\"' '$DLOG') -ge 8 ]"
for i in 1 2 3 4 5 6 7 8; do
  want=$(jq -r .use_id "$TMPD/run-$i.json")
  got=$(grep '"msg":"attempt finished"' "$DLOG" | jq -r "select(.task_id == \"u-$i\") | .use_id")
  [ "$got" = "$want" ] || { diag "u-$i: log $got, record $want"; break; }
done
is "$got" "$want" "the log's 'attempt finished' lines carry each record's use_id"

post_json /run_code '{"code":"print(1)","language":"python"}'
jq -e '.use_id | test("^sb-.*\\.[0-9]+$")' "$BODY" >/dev/null
ok $? "a /run_code answer carries use_id ($(jb .use_id))"

# a session: one use until its reset; the reset keeps the sandbox, starts a new use
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
u1=$(jb .use_id)
s1=$(jb .sandbox_id)
is "$u1" "$s1.$(sed 's/.*\.//' <<<"$u1")" "a new session names its use ($u1)"
post_json "/v1/sessions/$S/exec" '{"cmd":["true"]}'
is "$(jb .use_id)" "$u1" "its exec's record carries the session's use"
post_json "/v1/sessions/$S/reset" '{}'
u2=$(jb .use_id)
is "$(jb .sandbox_id)" "$s1" "a reset keeps the sandbox ($s1)"
isnt() { [ "$1" != "$2" ]; ok $? "$3"; }
isnt "$u2" "$u1" "and gives a new use_id ($u2)"
post_json "/v1/sessions/$S/exec" '{"cmd":["true"]}'
is "$(jb .use_id)" "$u2" "the next exec carries the new use"
req GET "/v1/sessions/$S"
is "$(jb .use_id)" "$u2" "GET /v1/sessions/{id} names the current use"
req GET "/v1/sessions/$S/trajectory"
is "$(jq -rs '[.[] | select(.kind == "exec") | .use_id] | join(" ")' "$BODY")" "$u1 $u2" \
  "the trajectory's exec steps carry their uses"
is "$(jq -rs '.[0].use_id' "$BODY")" "$u1" "and its header the first"

# the judge: each test names the use its run had
post_json /v1/judge '{"problem":{"tests":[{"input":"2\n","output":"2\n"},{"input":"3\n","output":"3\n"}]},
  "language":"python","code":"print(input())","cache":false}'
is "$(jq -r '[.tests[].use_id | test("^sb-.*\\.[0-9]+$")] | all' "$BODY")" true \
  "a judged record's tests carry use_ids ($(jq -c '[.tests[].use_id]' "$BODY"))"
