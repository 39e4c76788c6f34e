#!/usr/bin/env bash
# verl's own SandboxFusion tests (tests/verl, vendored unchanged with verl's licence) against a
# daemon started with default settings, twice back to back: the second run starts the moment the
# first ends, its 100 concurrent never-ending programs included, so a daemon that an all-time-out
# burst leaves refusing work (issue 37) fails it. Every run must pass 15 of 15; then an idle daemon
# answers the default /run_code request.
source "$(dirname "$0")/api.sh"
PY=/usr/bin/python3
if ! $PY -c 'import pytest, requests' 2>/dev/null; then
  echo "1..0 # SKIP $PY lacks pytest or requests (Debian: python3-pytest python3-requests; make deps)"
  exit 0
fi
plan 6
start_daemon
ok $? "daemon started with default settings"

run_verl() {
  (cd tests/verl && PYTHONPATH=$PWD SANDBOX_FUSION_URL=$U/run_code timeout 600 $PY -m pytest -q \
    -p no:cacheprovider tests/test_sandbox_fusion_on_cpu.py) >"$TMPD/verl.$1.log" 2>&1
}
for round in 1 2; do
  run_verl $round
  rc=$?
  summary=$(grep -E '^[0-9]+ (passed|failed)|passed|failed' "$TMPD/verl.$round.log" | tail -1)
  [ $rc = 0 ] || tail -40 "$TMPD/verl.$round.log" | sed 's/^/# /'
  is "$rc" 0 "verl's SandboxFusion tests, run $round: $summary"
  like "$summary" '^15 passed' "run $round: 15 of 15"
done
req POST /run_code -H 'Content-Type: application/json' -d '{"code":"print(1)","language":"python"}'
is "$CODE $(jb .run_result.stdout)" "200 1" "after both runs, an idle daemon answers the default request"
