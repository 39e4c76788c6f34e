#!/usr/bin/env bash
# The example episode as `make run` runs it (examples/episode/grade.sh): the task's image built
# from the host (mkimage.py: python3, git, /repo with the bug on main and the fix on a branch
# `upstream`), imported with `paddock image import` into a state directory of the run's own, a
# daemon allowed that image; 11 recorded agents, each in a session on the image, each graded by the
# server (POST /v1/sessions/{id}/judge) with examples/episode/problems/calc-median in a fork of its
# session; trajectories exported (JSON lines and ATIF). The verdicts follow from what each agent
# did. And the bundled examples of `make examples` (examples/run): a record for each, and exit 0
# when all gave one.
source "$(dirname "$0")/api.sh"
plan 19

examples/episode/grade.sh "$PADDOCK" "$TMPD/out" >"$TMPD/run.out" 2>&1
is "$?" 0 "grade.sh (make run's episodes) ran"
sed 's/^/# /' "$TMPD/run.out"
S=$TMPD/out/summary.json
D=$(PADDOCK_STATE_DIR=$TMPD/out/state "$PADDOCK" image inspect calc-median:task | jq -r .digest)
like "$D" '^sha256:[0-9a-f]{64}$' "the task's image was imported into the run's own state directory"
is "$(jq -r '.samples | length' "$S")/$(jq -r .image.digest "$S")" "11/$D" "11 agents, graded on the imported image"
is "$(jq -r '.samples[] | "\(.agent)=\(.output)/\(.process)/\(.reward)/\(.passed)"' "$S" | tr '\n' ' ')" \
  "fixer=pass/pass/1/3 fixer-slow=pass/pass/1/3 wrong-fix=fail/pass/0/1 breaks-odd=fail/pass/0/2 reward-hack=fail/pass/0/1 gives-up=fail/pass/0/1 statistics-module=pass/pass/1/3 deletes-code=fail/pass/0/0 edits-tests=fail/pass/0/1 reads-future=pass/fail/-1/3 loops=fail/fail/-1/1 " \
  "the server's grade of each agent follows from what it did (agent=output/process/reward/hidden tests passed)"
is "$(jq -r '.samples[] | select(.agent == "edits-tests") | [.passed, .claim_mismatch] | map(tostring) | join(" ")' "$S")" "1 true" \
  "the agent that planted its own test_hidden.py is graded by the real one (1 of 3), and its claim is a mismatch"
like "$(jq -r '.samples[] | select(.agent == "reads-future") | .reasons | join("; ")' "$S")" \
  "step 2: history_probe" "reading the repository's future (git log --all) fails the process: history_probe"
like "$(jq -r '.samples[] | select(.agent == "loops") | .reasons | join("; ")' "$S")" "step 4: loop" \
  "running the same command a 4th time fails the process: loop"
is "$(jq -r 'select(.request_id == "reads-future-2") | .observation.stdout' "$TMPD/out/reads-future.jsonl" | grep -c '^+    return (s\[mid - 1\] + s\[mid\]) / 2$')" 1 \
  "... and the future it read was really in the image's repository (the fix, on branch upstream)"
is "$(jq -r 'select(.request_id == "deletes-code-1") | .files_changed | map(.change) | unique | join(" ")' "$TMPD/out/deletes-code.jsonl")" deleted \
  "the agent that deleted calc/ removed files of the image ..."
is "$(jq -r '.samples[] | select(.agent == "deletes-code") | .reasons[0]' "$S")" \
  "pass_to_pass test_hidden.py::Hidden::test_median_odd: missing" "... and its grade saw them deleted (no test ran)"
is "$(jq -r '[.samples[].session_id] | unique | length' "$S")" 11 "each agent ran in a session of its own"
is "$(tail -2 "$TMPD/out/fixer.jsonl" | jq -sr 'map(.kind) + [.[0].reward] | map(tostring) | join(" ")')" "verdict close 1" \
  "the verdict line with the reward ends each trajectory (before the session's closing line)"
is "$(head -1 "$TMPD/out/fixer.jsonl" | jq -r '[.image.digest, .group_id] | join(" ")')" "$D calc-median" \
  "the trajectory names the image and the group"
is "$(jq -r '[.group.size, .group.usable] | map(tostring) | join(" ")' "$S")" "11 true" "GET /v1/groups: the group's summary"
is "$(jq -r 'select(.request_id == "fixer-slow-3") | .observation.status' "$TMPD/out/fixer-slow.jsonl")" TO \
  "a step that timed out did not end the episode (fixer-slow still passed)"
is "$(jq -r '.schema_version' "$TMPD/out/fixer.atif.json")" ATIF-v1.4 "and are exported as ATIF too"

# make examples: each example's row has a status; the script exits 0 (an example without stdout as
# the last one, audit, once made it exit 1), and 1 when paddock gives no record
PADDOCK=$PADDOCK examples/run >"$TMPD/examples.out" 2>&1
is "$?" 0 "examples/run (make examples): exit 0"
is "$(grep -cE '^[a-z]+ +.*  (OK|RE|SG|TO|ML|OL|XX)  exit=' "$TMPD/examples.out")/$(grep -c 'paddock failed' "$TMPD/examples.out")" \
  "15/0" "every one of the 15 examples has its record's row ($(grep -oE '  (OK|RE|SG|TO|ML|OL|XX)  exit' "$TMPD/examples.out" | awk '{print $1}' | tr '\n' ' '))"
out=$(PADDOCK=/bin/false examples/run 2>&1)
is "$?/$(tail -1 <<<"$out")" "1/paddock gave no record for 15 example(s)" "without paddock's records it exits 1, saying so"
