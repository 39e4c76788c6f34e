#!/usr/bin/env bash
# residue in API records: a run's answer says "pending" (the pooled sandbox is reset or destroyed
# after the answer), and the stored record is completed with what the reclaimer found, for a
# sandbox reset for the next user and for one destroyed (a run past its time limit).
source "$(dirname "$0")/api.sh"
plan 11

start_daemon --workers 1 --warm 1
ok $? "daemon started"
post_json /v1/runs '{"template":"bash","cmd":["true"],"task_id":"res-ok"}'
is "$(jb .residue)" pending "the answer says residue: pending"
is "$(jb .run.residue)" pending "so does its run stage"
post_json /v1/runs '{"template":"bash","cmd":["sleep","30"],"limits":{"wall_time":0.3},"task_id":"res-to"}'
is "$(jb .failure_class)" exec_timeout "a run past its wall time (its sandbox is destroyed)"

# stored TASK JQ: the stored record's field, through GET /v1/runs/{task_id}
stored() { curl -s -m 10 "$U/v1/runs/$1" | jq -r ".record$2"; }
wait_for 60 bash -c "[ \"\$(curl -s -m 10 '$U/v1/runs/res-ok' | jq -r .record.residue)\" = clean ]"
is "$(stored res-ok .residue)" clean "the stored record is completed once the sandbox was reset: clean"
is "$(stored res-ok .run.residue)" clean "its run stage too"
wait_for 60 bash -c "[ \"\$(curl -s -m 10 '$U/v1/runs/res-to' | jq -r .record.residue)\" != pending ]"
is "$(stored res-to .residue)" clean "a destroyed sandbox's teardown check completes its record: clean"

# the four cost segments of a pooled run (create, preparation, execution, teardown), as paddock exec
# has them for its own sandbox: the answer carries the sandbox's own create (or the reset that began
# the use) and the pool's preparation; the teardown is completed in the stored record, as residue is
post_json /v1/runs '{"template":"bash","cmd":["true"],"task_id":"cost-1"}'
jb .costs >"$TMPD/c1.json"
jq -e '(.create_ms > 0) and (.prepare_ms >= 0) and (.acquire_ms >= 0) and (.exec_ms > 0) and (.teardown_ms == null)
  and (.ready_by == "create" or .ready_by == "reset")' "$TMPD/c1.json" >/dev/null
ok $? "the answer's costs: create_ms, prepare_ms, acquire_ms, exec_ms; teardown_ms null (pending): $(jq -c . "$TMPD/c1.json")"
wait_for 60 bash -c "[ \"\$(curl -s -m 10 '$U/v1/runs/cost-1' | jq -r .record.residue)\" = clean ]"
td=$(stored cost-1 .costs.teardown_ms)
jq -en --argjson t "$td" '$t > 0' >/dev/null 2>&1
ok $? "the stored record's teardown_ms is completed by the reclaimer ($td ms)"
# a pooled sandbox's next use is readied by the reset that ended the one before: that reset is the
# earlier record's teardown and the later one's create (ready_by reset)
for i in 2 3 4 5; do post_json /v1/runs "{\"template\":\"bash\",\"cmd\":[\"true\"],\"task_id\":\"cost-$i\"}"; done
wait_for 60 bash -c "[ \"\$(curl -s -m 10 '$U/v1/runs?kind=run' | jq '[.records[] | select(.residue == \"pending\")] | length')\" = 0 ]"
req GET '/v1/runs?kind=run'
jq '[.records[] | select(.use_id != null) | {u: .use_id, by: .costs.ready_by, c: .costs.create_ms, t: .costs.teardown_ms}]' "$BODY" >"$TMPD/uses.json"
pairs=$(jq -r '(map({key: .u, value: .}) | from_entries) as $m | [.[] | . as $b
  | ($b.u | capture("^(?<sb>.*)\\.(?<n>[0-9]+)$")) as $p | $m["\($p.sb).\(($p.n | tonumber) - 1)"] as $a
  | select($a != null) | "\($b.by):\($b.c == $a.t)"] | unique | join(" ")' "$TMPD/uses.json")
is "$pairs" "reset:true" "each next use of a sandbox: ready_by reset, its create_ms the earlier use's teardown_ms"
wait_for 60 bash -c "[ \"\$(curl -s -m 10 '$U/v1/runs/res-to' | jq -r .record.costs.teardown_ms)\" != null ]"
jq -en --argjson t "$(stored res-to .costs.teardown_ms)" '$t > 0' >/dev/null 2>&1
ok $? "a destroyed sandbox's teardown time completes its record ($(stored res-to .costs.teardown_ms) ms)"
