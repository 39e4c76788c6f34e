#!/usr/bin/env bash
# A results store that cannot be written (another process holds SQLite's write lock) stalls only
# the writes. Each write waits out SQLite's busy timeout (10 s) while it holds the store's writer
# lock; the event thread's readers (/metrics, /readyz, GET /v1/runs) read through their own
# connection, which on the WAL never waits for a writer. On a shared connection and lock, each of
# them waited behind the stuck write, and with it every other request of the daemon.
#
# Shown without timing: when a stuck write's run has left its sandbox, /metrics, /readyz and
# GET /v1/runs answer while no write has given up yet (the daemon logs each failed write).
source "$(dirname "$0")/api.sh"
plan 10

command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is missing"; exit 0; }

start_daemon --workers 2
ok $? "daemon started"

post_json /v1/runs '{"task_id": "stall-warm", "code": "echo warm", "language": "bash"}'
is "$CODE" 200 "a first run is answered and recorded"
TASK=stall-warm
# its residue report written (the reclaimer's, after the answer): else that write could be the
# first to wait for the lock below, from before the stuck runs start, and give up before the reads
residue_done() { req GET "/v1/runs/$TASK"; [ "$CODE" = 200 ] && [ "$(jb '.residue // "none" | tostring')" != pending ]; }
wait_for 60 residue_done

acquires() { req GET /v1/pools; jb '[.pools[].acquires] | add'; }
in_use() { req GET /v1/pools; jb '[.pools[].in_use] | add'; }
A0=$(acquires)

# the store's write lock, held by another process
hold_store_lock
ok $? "another process holds the store's write lock"

# two runs whose records cannot be written until the lock goes
pids=()
for i in 1 2; do
  curl -s -m 300 -o "$TMPD/run.$i" -w '%{http_code}\n' -H 'Content-Type: application/json' \
    --data-binary '{"code": "echo stuck", "language": "bash"}' "$U/run_code" >"$TMPD/code.$i" 2>/dev/null 7>&- &
  pids+=($!)
done
cleanup "kill ${pids[*]} 2>/dev/null"

# both have run and left their sandboxes: their writes are waiting for the lock now
ran() { [ "$(acquires)" -ge $((A0 + 2)) ] && [ "$(in_use)" = 0 ]; }
wait_for 120 ran
ok $? "both runs have left their sandboxes (their records wait for the lock)"

failed_writes() { grep -c '"msg":"store"' "$DLOG"; }
req GET /metrics
m=$CODE
req GET /readyz
r=$CODE
req GET "/v1/runs/$TASK"
g=$CODE
fails=$(failed_writes)
answered=$(cat "$TMPD"/code.* 2>/dev/null | grep -c .)
is "$m $r $g" "200 200 200" "/metrics, /readyz and GET /v1/runs/{id} answer while the writes wait"
is "$fails" 0 "... before any write gave up (SQLite's busy timeout is 10 s)"
is "$answered" 0 "... and before either stuck run was answered"

release_store_lock
wait "$HOLDER" 2>/dev/null
done_both() { [ "$(cat "$TMPD"/code.* 2>/dev/null | grep -c .)" = 2 ]; }
wait_for 120 done_both
ok $? "once the lock is gone both runs are answered ($(cat "$TMPD"/code.* | tr '\n' ' '))"
req GET /healthz
is "$CODE" 200 "the daemon is alive"
post_json /run_code '{"code": "echo after", "language": "bash"}'
is "$CODE" 200 "and records again"

stop_daemon
