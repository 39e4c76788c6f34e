#!/usr/bin/env bash
# Every event kind through every API (issue 22, "test every event kind through every API"): one
# program that commits all seven — a tamper, a read of judge material, a decoy read, an environ
# harvest, an egress attempt, a loopback scan, a read outside the allowed paths — run under one
# policy by paddock exec, POST /v1/runs, /run_code, a session's exec and a judged submission; each
# must report the seven kinds, and fail the process level; and paddock run, a run line and a judge
# line, the same; every one spells its events alike.
source "$(dirname "$0")/api.sh"
plan 14

POL='{"judge":["/etc/hostname"],"traps":[{"path":"/work/expected_output.txt","content":"41\n"}]}'
SH='echo x > /usr/bin/.pdk-kinds; cat /etc/hostname; cat /work/expected_output.txt; cat /proc/self/environ >/dev/null; python3 -c "import socket
for a in (\"192.0.2.1\", 80), (\"127.0.0.1\", 1):
  try: socket.create_connection(a, 2)
  except OSError: pass"; cat /srv/pdk-none 2>/dev/null; echo done'
ALL="egress,env_probe,harness_probe,judge_material,read_outside,tamper,trap_read"
# the kinds of an answer's events, counting only an event spelled as every record spells it
# (audit.events[], each with kind, time, pid, path or address, mode)
kinds() {
  jq -r '[.audit.events[] | select(has("kind") and has("time") and has("pid") and has("mode")
    and (has("path") or has("address"))) | .kind] | unique | join(",")'
}

OUT=$("$PADDOCK" exec --json --quiet --audit-policy "$POL" -- bash -c "$SH")
is "$(kinds <<<"$OUT")" "$ALL" "paddock exec: all seven kinds"
is "$(jq -r .process.status <<<"$OUT")" fail "paddock exec: the process level fails"

start_daemon --problems examples/problems
ok $? "daemon started"
body=$(jq -cn --arg s "$SH" --argjson p "$POL" '{shell: $s, audit: $p}')
post_json /v1/runs "$body"
is "$(body | kinds)" "$ALL" "/v1/runs: all seven kinds"
is "$(jb .verdict.process.status)" fail "/v1/runs: the process level fails"
post_json /run_code "$(jq -cn --arg s "$SH" --argjson p "$POL" '{language: "bash", code: $s, audit: $p}')"
is "$(body | kinds)" "$ALL" "/run_code: all seven kinds"
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
post_json "/v1/sessions/$S/exec" "$body"
is "$(body | kinds)" "$ALL" "a session's exec: all seven kinds"
is "$(jb .process.status)" fail "a session's exec: the process level fails"
req DELETE "/v1/sessions/$S"
post_json /v1/judge "$(jq -cn --arg s "$SH" --argjson p "$POL" '{problem_id: "hello", language: "python", cache: false, audit: $p,
  code: ("import subprocess\nsubprocess.run([\"bash\", \"-c\", " + ($s | tojson) + "], stdout=subprocess.DEVNULL)\nprint(\"Hello, World!\")\n")}')"
is "$(body | kinds)" "$ALL" "/v1/judge: all seven kinds"
is "$(jb .verdict.process.status)" fail "/v1/judge: the process level fails"
stop_daemon
ok $? "daemon stopped"

# paddock run: the same request lines in process, a run line and a judge line
JCODE=$(jq -cn --arg s "$SH" '"import subprocess\nsubprocess.run([\"bash\", \"-c\", " + ($s | tojson) + "], stdout=subprocess.DEVNULL)\nprint(\"Hello, World!\")\n"')
{ jq -cn --arg s "$SH" --argjson p "$POL" '{task_id: "run", shell: $s, audit: $p}'
  jq -cn --argjson c "$JCODE" --argjson p "$POL" '{task_id: "judge", problem_id: "hello", language: "python", cache: false, audit: $p, code: $c}'
} >"$TMPD/kinds.jsonl"
"$PADDOCK" run -q -j 1 --problems examples/problems -o "$TMPD/kinds.out" "$TMPD/kinds.jsonl" 2>"$TMPD/kinds.err"
is "$(jq -c 'select(.task_id == "run")' "$TMPD/kinds.out" | kinds)" "$ALL" "paddock run, a run line: all seven kinds"
is "$(jq -c 'select(.task_id == "judge")' "$TMPD/kinds.out" | kinds)" "$ALL" "paddock run, a judge line: all seven kinds"
is "$(jq -r '[.task_id, .verdict.process.status, .failure_class] | join(" ")' "$TMPD/kinds.out" | sort | tr '\n' ';')" \
  "judge fail policy_violation;run fail policy_violation;" "paddock run: both fail the process level (policy_violation)"
