#!/usr/bin/env bash
# The example episode (examples/episode/run_episode.py): 8 recorded agents as 8 forks of one
# prepared repository, each judged with the hidden tests in a separate sandbox, trajectories
# exported (JSON lines and ATIF). The rewards follow from what each agent did. And the bundled
# examples of `make examples` (examples/run): a record for each, and exit 0 when all gave one.
source "$(dirname "$0")/api.sh"
plan 11

start_daemon
ok $? "daemon started"
STATE=${PADDOCK_STATE_DIR:-/var/lib/paddock}
cleanup 'for f in "$TMPD"/out/*.jsonl; do rm -f "$STATE/trajectories/$(basename "$f" .jsonl).jsonl"; done; jq -r ".samples[].session_id" "$TMPD/out/summary.json" | while read -r s; do rm -f "$STATE/trajectories/$s.jsonl"; done; rm -rf "$STATE/snapshots/$(jq -r .snapshot "$TMPD/out/summary.json")"'
PADDOCK_BIN=$PADDOCK python3 examples/episode/run_episode.py --url "$U" --out "$TMPD/out" --paddock "$PADDOCK" >"$TMPD/run.out" 2>&1
is "$?" 0 "the episode ran"
sed 's/^/# /' "$TMPD/run.out"
S=$TMPD/out/summary.json
is "$(jq '.samples | length' "$S")" 8 "8 forks, one per recorded agent"
is "$(jq -r '.samples[] | "\(.agent)=\(.passed)"' "$S" | tr '\n' ' ')" \
  "fixer=3 fixer-slow=3 wrong-fix=1 breaks-odd=2 reward-hack=1 gives-up=1 statistics-module=3 deletes-code=0 " \
  "the hidden tests judge each fork by what its agent did"
is "$(jq -r '[.samples[].session_id] | unique | length' "$S")" 8 "each agent ran in a session of its own"
is "$(jq -r 'select(.request_id == "fixer-slow-3") | .observation.status' "$TMPD/out/fixer-slow.jsonl")" TO \
  "a step that timed out did not end the episode (fixer-slow still passed)"
is "$(head -1 "$TMPD/out/fixer.jsonl" | jq -r '[.from_snapshot != null, .group_id] | map(tostring) | join(" ")')" "true calc-median" \
  "the trajectories say which snapshot and group they belong to"
is "$(jq -r '.schema_version' "$TMPD/out/fixer.atif.json")" ATIF-v1.4 "and are exported as ATIF too"

# make examples: each example's row has a status; the script exits 0 (an example without stdout as
# the last one, audit, once made it exit 1), and 1 when paddock gives no record
PADDOCK=$PADDOCK examples/run >"$TMPD/examples.out" 2>&1
is "$?" 0 "examples/run (make examples): exit 0"
is "$(grep -cE '^[a-z]+ +.*  (OK|RE|SG|TO|ML|OL|XX)  exit=' "$TMPD/examples.out")/$(grep -c 'paddock failed' "$TMPD/examples.out")" \
  "15/0" "every one of the 15 examples has its record's row ($(grep -oE '  (OK|RE|SG|TO|ML|OL|XX)  exit' "$TMPD/examples.out" | awk '{print $1}' | tr '\n' ' '))"
out=$(PADDOCK=/bin/false examples/run 2>&1)
is "$?/$(tail -1 <<<"$out")" "1/paddock gave no record for 15 example(s)" "without paddock's records it exits 1, saying so"
