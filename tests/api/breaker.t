#!/usr/bin/env bash
# The circuit breaker is per template (issue 26): a template whose sandboxes cannot start trips its
# own breaker (infrastructure failures past --breaker-fail-percent of at least --breaker-min-jobs
# jobs) and its new jobs are refused with 503 and Retry-After, while another template's jobs are
# admitted and run; the metrics name the open one. --memory-watermark takes a size or a percent.
source "$(dirname "$0")/api.sh"
plan 11

cat >"$TMPD/templates.json" <<'EOF_T'
{"templates": [
 {"name": "bash", "language": "bash", "requires": ["bash"]},
 {"name": "broken", "language": "python", "requires": ["python3"], "warmup": ["/bin/false"]}]}
EOF_T
start_daemon --templates "$TMPD/templates.json" --workers 1 --retries 0 --breaker-min-jobs 2 \
  --breaker-cooldown 600 --memory-watermark 1%
ok $? "daemon started (one worker, breakers after 2 jobs, a 1% memory watermark)"
for i in 1 2; do
  post_json /v1/runs '{"template":"broken","cmd":["true"]}'
done
is "$(jb .failure_class)" startup_failure "two jobs on a template whose sandboxes cannot start"
metric() { curl -s -m 5 "$U/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
is "$(metric 'paddock_template_breaker_open{template="broken"}')" 1 "its breaker is open"

# keep the worker busy (an idle daemon lets a probe through at once), then ask again
curl -s -m 60 -X POST "$U/v1/runs" -H 'Content-Type: application/json' \
  -d '{"template":"bash","cmd":["sleep","4"]}' >"$TMPD/busy.json" &
BUSY=$!
cleanup "kill $BUSY"
wait_for 30 bash -c "[ \"\$(curl -s -m 5 '$U/metrics' | awk '\$1 == \"paddock_workers_busy\" {print \$2}')\" = 1 ]"
ok $? "the worker is busy with another template's job"
post_json /v1/runs '{"template":"broken","cmd":["true"]}'
is "$CODE" 503 "the broken template's next job is refused: 503 ($(jb .error))"
[ -n "$(hdr Retry-After)" ]
ok $? "with Retry-After ($(hdr Retry-After))"
post_json /v1/runs '{"template":"bash","cmd":["echo","admitted"]}'
is "$CODE" 200 "another template's job is admitted while it is open"
is "$(jb .run.stdout)" "admitted" "and runs"
wait $BUSY
is "$(jq -r .status "$TMPD/busy.json")" OK "the busy job finished"
is "$(metric 'paddock_template_breaker_open{template="bash"}')" 0 "bash's breaker stayed closed"
is "$(metric paddock_breaker_open)" 1 "paddock_breaker_open says one is open"
