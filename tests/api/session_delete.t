#!/usr/bin/env bash
# Session DELETEs never run on the HTTP event thread. A session's close hands its sandbox to the
# pool; when the reclaim backlog is full the releasing thread resets or destroys one sandbox
# itself, and for a DELETE that thread must be a session operation thread, or every other request
# waits behind the teardown.
#
# Made visible here: another process holds the store's write lock, so every teardown's residue
# write (the pools' on_reclaimed hook, under the store's mutex) waits for it, one after the other
# (sqlite's busy timeout each). The reclaimer stops on the first, the backlog fills, and the
# DELETEs past it wait inside their own teardowns, for minutes while the lock is held. /healthz
# must answer while they are in progress; once the lock goes, every DELETE answers 200 and the
# sessions are gone. (On the event thread, /healthz would wait behind the first such DELETE.)
source "$(dirname "$0")/api.sh"
plan 9

command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is missing"; exit 0; }

start_daemon
ok $? "daemon started"

# the pools' backlog (reclaim_backlog's default, 8 per CPU) and reclaimers (one per 4 CPUs, 1-16)
CPUS=$(nproc)
BACKLOG=$((8 * CPUS))
RECLAIMERS=$((CPUS / 4)); [ "$RECLAIMERS" -lt 1 ] && RECLAIMERS=1; [ "$RECLAIMERS" -gt 16 ] && RECLAIMERS=16
PAST=24 # DELETEs past the backlog: each waits its turn at the store, so they last minutes
N=$((BACKLOG + RECLAIMERS + PAST))
if [ "$N" -gt 400 ]; then
  for ((i = 2; i <= 9; i++)); do skip "a backlog of $BACKLOG ($CPUS CPUs) needs $N sessions"; done
  stop_daemon
  exit 0
fi

ids=()
for ((i = 0; i < N; i++)); do
  post_json /v1/sessions '{"template":"bash"}'
  [ "$CODE" = 201 ] || break
  ids+=("$(jb .session_id)")
done
is "${#ids[@]}" "$N" "$N sessions open (backlog $BACKLOG, $RECLAIMERS reclaimer(s))"

# the store's write lock, held by another process
hold_store_lock
ok $? "another process holds the store's write lock"

# every DELETE at once, each in its own client (without the lock holder's pipe, so that closing
# it releases the lock)
dels=()
for ((i = 0; i < N; i++)); do
  curl -s -m 600 -o /dev/null -w '%{http_code}\n' -X DELETE "$U/v1/sessions/${ids[$i]}" >"$TMPD/del.$i" 2>/dev/null 7>&- &
  dels+=($!)
done
cleanup "kill ${dels[*]} 2>/dev/null"

# the DELETEs the backlog takes answer; the ones past it wait in their teardowns (on the event
# thread, the first of those would hold up every later request, /healthz's too)
answered() { local n=0 f; for f in "$TMPD"/del.*; do [ -s "$f" ] && n=$((n + 1)); done; echo "$n"; }
filled() { [ "$(answered)" -ge "$BACKLOG" ]; }
wait_for 120 filled
ok $? "the DELETEs the reclaim backlog takes are answered ($(answered) of $N)"

req GET /healthz
is "$CODE" 200 "/healthz answers while the DELETEs past the backlog are in progress"
done_then=$(answered)
ok "$([ "$done_then" -lt "$N" ] && echo 0 || echo 1)" \
  "... and they were still in progress when it answered ($done_then of $N answered)"
req GET /v1/pools
is "$CODE" 200 "/v1/pools answers too"

release_store_lock
for p in "${dels[@]}"; do wait "$p"; done
codes=$(cat "$TMPD"/del.* | sort | uniq -c | awk '{print $2 "x" $1}' | xargs)
is "$codes" "200x$N" "once the lock is released, every DELETE answers 200"
gone=0
for id in "${ids[@]}"; do
  req GET "/v1/sessions/$id"
  [ "$CODE" = 404 ] && gone=$((gone + 1))
done
is "$gone" "$N" "and every session is gone"

stop_daemon
