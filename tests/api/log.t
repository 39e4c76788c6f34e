#!/usr/bin/env bash
# The daemon's log lines with a client's hostile ids: a task_id that closes its string and writes
# its own "level" and "msg", backslashes, a trailing backslash, control characters. Every JSON line
# of the log must parse (duplicate keys refused), and the "attempt finished" line must have exactly
# the keys the daemon writes, with the ids as given (server/log.c escapes every value).
source "$(dirname "$0")/api.sh"
plan 8

start_daemon
ok $? "daemon started"

TASK='x","level":"error","msg":"forged'
# in the request (JSON-escaped): a, backslash, quote, b, two backslashes, c, U+0001, ESC [31m, LF, end;
# and v plus a trailing backslash
post_json /v1/runs '{"shell":"echo hi","task_id":"x\",\"level\":\"error\",\"msg\":\"forged",
  "problem_id":"a\\\"b\\\\c\u0001\u001b[31m\nend","problem_version":"v\\"}'
is "$CODE" 200 "run with hostile ids: 200"
is "$(jb .task_id)" "$TASK" "the record echoes the task_id as given"

attempt_logged() { grep -q '"attempt finished"' "$DLOG"; }
wait_for 30 attempt_logged
ok $? "the daemon logged the attempt"

# every line that starts with { is one JSON object without a repeated key
CHECK=$(python3 - "$DLOG" <<'PY'
import json, sys
def pairs(kv):
    keys = [k for k, _ in kv]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate keys %r" % keys)
    return dict(kv)
bad, attempt = [], None
for raw in open(sys.argv[1], 'rb'):
    if not raw.startswith(b'{'):
        continue
    try:
        d = json.loads(raw.decode('utf-8'), object_pairs_hook=pairs)
    except Exception as e:
        bad.append('%s: %r' % (e, raw[:200]))
        continue
    if d.get('msg') == 'attempt finished':
        attempt = d
print('bad=%d %s' % (len(bad), ' | '.join(bad)[:600]))
if attempt is None:
    print('keys=none')
else:
    print('keys=' + ' '.join(sorted(attempt)))
    print('level=' + attempt['level'])
    print('task=' + json.dumps(attempt['task_id']))
    print('problem=' + json.dumps(attempt['problem']))
PY
)
is "$(sed -n 's/^bad=//p' <<<"$CHECK")" "0 " "every log line parses as JSON, no key repeated"
is "$(sed -n 's/^keys=//p' <<<"$CHECK")" "attempt failure_class level msg problem sandbox_id status task_id template ts use_id" \
  "the attempt line has exactly the keys written"
is "$(sed -n 's/^level=//p' <<<"$CHECK")" info "its level is the daemon's (info), not the forged one"
is "$(sed -n 's/^task=//p' <<<"$CHECK") $(sed -n 's/^problem=//p' <<<"$CHECK")" \
  '"x\",\"level\":\"error\",\"msg\":\"forged" "a\\\"b\\\\c\u0001\u001b[31m\nend@v\\"' \
  "task_id and problem logged as given, escaped"
