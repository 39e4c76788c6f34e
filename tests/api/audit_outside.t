#!/usr/bin/env bash
# A session's audited exec while processes an earlier, unaudited exec left are still running
# (issue 22: "the process level of the verdict real, evidence-based"): those processes are under no
# filter of this audit — one could read judge material and serve it over loopback, or write a
# protected file for the program — so the verdict cannot be "pass": it is not_audited, with a reason
# naming the tasks outside the audit (not a tamper "outlive" of a program that left nothing), also
# when the audited exec ends them itself. A rule broken in what was seen still fails it; once the
# leftovers are gone, the next audited exec passes again.
source "$(dirname "$0")/api.sh"
plan 7

cat >"$TMPD/tpl.json" <<'JSON'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work", "pool": {"min": 1, "max": 2}}]}
JSON
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started"

post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
# an unaudited exec leaves a server of judge material behind (here: a sleeper standing for one)
post_json "/v1/sessions/$S/exec" '{"shell":"(sleep 300 </dev/null >/dev/null 2>&1 &) ; echo left"}'
is "$(jb .stdout)" "left" "an unaudited exec leaves a process running"
POL='{"protect":["/work/tests"],"judge":["/work/.judge"]}'
post_json "/v1/sessions/$S/exec" "{\"shell\":\"echo ok\",\"audit\":$POL}"
is "$(jb '[.process.status, (.process.reasons | map(select(startswith("outside:"))) | length)] | map(tostring) | join(" ")')" \
  "not_audited 1" "an audited exec while it runs: not_audited, the reason names the tasks outside the audit"
post_json "/v1/sessions/$S/exec" "{\"shell\":\"mkdir -p /work/tests; echo x > /work/tests/t.py\",\"audit\":$POL}"
is "$(jb .process.status)" "fail" "a rule broken in what was seen still fails it"
# the audited exec uses the leftover (here: only ends it) and leaves nothing behind: still not a pass
post_json "/v1/sessions/$S/exec" "{\"shell\":\"pkill -x sleep; while pgrep -x sleep >/dev/null; do :; done; echo gone\",\"audit\":$POL}"
is "$(jb '[(.stdout | rtrimstr("\n")), .process.status] | join(" ")')" "gone not_audited" \
  "an audited exec that used the leftover and ended it: not_audited, not pass"
post_json "/v1/sessions/$S/exec" "{\"shell\":\"echo ok\",\"audit\":$POL}"
is "$(jb .process.status)" "pass" "with nothing left outside, an audited exec passes again"
req DELETE "/v1/sessions/$S"
stop_daemon
ok $? "daemon stopped"
