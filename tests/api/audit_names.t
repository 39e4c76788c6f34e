#!/usr/bin/env bash
# The audit keeps what its path resolutions found (a name there and not a link, a link's target,
# nothing there) across the runs of a sandbox, to its reset (lib/internal/audit.h). A kept name
# that becomes a link leading to judge material must never hide that material: these are the
# ways a program (in an audited step, or an unaudited one) can turn a kept name into a link, each
# followed by a read through it that the audit must still see as judge_material and refuse. The
# names are under /opt (made writable by the policy): names under the scratch directories are
# not kept. Every step runs in one session's sandbox, with no reset between them.
source "$(dirname "$0")/api.sh"
plan 12

start_daemon
ok $? "daemon started"
POL='{"judge":["/tmp/secret"],"writable":["/opt"],"allow":["/opt"]}'
audited() {  # audited SESSION SHELL: a step under the policy; its answer in $BODY
  post_json "/v1/sessions/$1/exec" "$(jq -cn --arg s "$2" --argjson p "$POL" '{shell: $s, audit: $p}')"
}
plain() { post_json "/v1/sessions/$1/exec" "$(jq -cn --arg s "$2" '{shell: $s}')"; }
judged() {  # judged: "<stdout> <process status> <kinds> <a refused judge_material target>"
  jb '[(.stdout | rtrimstr("\n")), .process.status, (.audit.events | map(.kind) | unique | join(",")),
       ([.audit.events[] | select(.kind == "judge_material" and .denied) | .path] | first // "-")] | join(" ")'
}
session() {
  post_json /v1/sessions '{"template":"bash"}'
  S=$(jb .session_id)
  # the material, put there by the host (a write of the host's leaves kept names true)
  req PUT "/v1/sessions/$S/files?path=/tmp/secret/flag" --data-binary 'SECRET'
}

# 1. the program's own steps: a directory read through (kept, with "secret" missing under it),
# then made a link to /tmp (not material itself: a link to the material is refused when made)
session
is "$CODE" 200 "the host put the material"
audited "$S" 'mkdir -p /opt/t && cat /opt/t/secret/flag 2>/dev/null; echo x > /opt/t/x && cat /opt/t/x'
is "$(judged)" "x pass  -" "a step reads through /opt/t, a directory: the audit keeps that"
audited "$S" 'rm -r /opt/t && ln -s /tmp /opt/t'
is "$(jb .process.status)" pass "the next step makes /opt/t a link to /tmp"
audited "$S" 'cat /opt/t/secret/flag'
is "$(judged)" " fail judge_material /tmp/secret/flag" \
  "a read through the link: judge_material, refused (what was kept was forgotten at the rm)"
req DELETE "/v1/sessions/$S"

# 2. the same change made by a step the audit does not watch
session
audited "$S" 'mkdir -p /opt/d && cat /opt/d/secret/flag 2>/dev/null; echo y > /opt/d/y; cat /opt/d/y'
is "$(judged)" "y pass  -" "an audited step reads under /opt/d"
plain "$S" 'rm -r /opt/d && ln -s /tmp /opt/d && echo linked'
is "$(jb .stdout)" "linked" "an unaudited step makes it a link"
audited "$S" 'cat /opt/d/secret/flag'
is "$(judged)" " fail judge_material /tmp/secret/flag" \
  "the next audited read through it: judge_material, refused (an unaudited step forgets what was kept)"
req DELETE "/v1/sessions/$S"

# 3. within one step: a name found missing, then made a link to /tmp, then read through
session
audited "$S" 'cat /opt/e/secret/flag 2>/dev/null; ln -s /tmp /opt/e; cat /opt/e/secret/flag'
is "$(judged)" " fail judge_material /tmp/secret/flag" \
  "missing, then a link, in one step: the read through it is judge_material, refused"
# and a link's kept target: the link replaced by another one
audited "$S" 'mkdir -p /opt/ok/secret && echo fine > /opt/ok/secret/flag; ln -s /opt/ok /opt/l; cat /opt/l/secret/flag'
is "$(judged)" "fine pass  -" "a link to an honest directory, read through: its target kept"
audited "$S" 'rm /opt/l && ln -s /tmp /opt/l; cat /opt/l/secret/flag'
is "$(judged)" " fail judge_material /tmp/secret/flag" \
  "the link replaced by one to /tmp: judge_material, refused (the kept target was forgotten)"
req DELETE "/v1/sessions/$S"
is "$CODE" 200 "sessions closed"
