#!/usr/bin/env bash
# residue in API records: a run's answer says "pending" (the pooled sandbox is reset or destroyed
# after the answer), and the stored record is completed with what the reclaimer found, for a
# sandbox reset for the next user and for one destroyed (a run past its time limit).
source "$(dirname "$0")/api.sh"
plan 7

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
