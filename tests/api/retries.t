#!/usr/bin/env bash
# `paddock serve --retries N` is the number of retries of an infrastructure failure, 0 included
# (the scheduler once took 0 as "unset" and retried twice): a run on a template whose sandboxes
# cannot be made is attempted N + 1 times, each attempt stored; without the flag, N is 2.
source "$(dirname "$0")/api.sh"
plan 6

cat >"$TMPD/templates.json" <<'EOF_T'
{"templates": [
 {"name": "python", "language": "python", "requires": ["python3"]},
 {"name": "broken", "language": "python", "requires": ["python3"], "warmup": ["/bin/false"]}]}
EOF_T
start_daemon --templates "$TMPD/templates.json" --retries 0
ok $? "daemon started with --retries 0"
post_json /v1/runs '{"task_id":"rt-0","language":"python","template":"broken","code":"print(1)"}'
req GET /v1/runs/rt-0
is "$(jb .attempts)" 1 "--retries 0: one attempt, no retry"
stop_daemon

start_daemon --templates "$TMPD/templates.json" --retries 1
ok $? "daemon started with --retries 1"
post_json /v1/runs '{"task_id":"rt-1","language":"python","template":"broken","code":"print(1)"}'
req GET /v1/runs/rt-1
is "$(jb .attempts)" 2 "--retries 1: two attempts"
stop_daemon

start_daemon --templates "$TMPD/templates.json"
ok $? "daemon started without --retries"
post_json /v1/runs '{"task_id":"rt-d","language":"python","template":"broken","code":"print(1)"}'
req GET /v1/runs/rt-d
is "$(jb .attempts)" 3 "the default: two retries, three attempts"
