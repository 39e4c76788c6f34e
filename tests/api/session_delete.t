#!/usr/bin/env bash
# Session DELETEs never run on the HTTP event thread. A session's close hands its sandbox to the
# pool; when the reclaim backlog is full the releasing thread tears one sandbox down itself, and
# for a DELETE that thread must be a session operation thread, or every other request waits.
#
# Made visible here: another process holds the store's write lock, so every teardown's residue
# write (the pools' on_reclaimed hook) waits for it. The reclaimer stops on the first one, the
# backlog fills, and the DELETEs past it wait inside their own teardowns. /healthz and /v1/pools
# must answer while those DELETEs are in progress; once the lock goes, every DELETE answers 200
# and the sessions are gone.
source "$(dirname "$0")/api.sh"
plan 9

command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is missing"; exit 0; }

start_daemon
ok $? "daemon started"

# the pools' backlog (reclaim_backlog's default, 8 per CPU) and reclaimers (one per 4 CPUs, 1-16)
CPUS=$(nproc)
BACKLOG=$((8 * CPUS))
RECLAIMERS=$((CPUS / 4)); [ "$RECLAIMERS" -lt 1 ] && RECLAIMERS=1; [ "$RECLAIMERS" -gt 16 ] && RECLAIMERS=16
N=$((BACKLOG + RECLAIMERS + 4)) # four DELETEs past the backlog tear down on their own threads

ids=()
for ((i = 0; i < N; i++)); do
  post_json /v1/sessions '{"template":"bash"}'
  [ "$CODE" = 201 ] || break
  ids+=("$(jb .session_id)")
done
is "${#ids[@]}" "$N" "$N sessions open (backlog $BACKLOG, $RECLAIMERS reclaimer(s))"

# the store's write lock, held by another process until its stdin closes
mkfifo "$TMPD/hold"
python3 -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").write("locked")
sys.stdin.read()
c.execute("ROLLBACK")
' "$DB" "$TMPD/locked" <"$TMPD/hold" &
HOLDER=$!
exec 7>"$TMPD/hold"
release() { exec 7>&- 2>/dev/null; }
cleanup "release; kill $HOLDER 2>/dev/null"
wait_for 30 test -s "$TMPD/locked"
ok $? "another process holds the store's write lock"

# every DELETE at once, each in its own client
dels=()
for ((i = 0; i < N; i++)); do
  curl -s -m 300 -o /dev/null -w '%{http_code}' -X DELETE "$U/v1/sessions/${ids[$i]}" >"$TMPD/del.$i" 2>/dev/null &
  dels+=($!)
done
cleanup "kill ${dels[*]} 2>/dev/null"

# the backlog is full and more teardowns wait beyond it: the pools count every sandbox released
# and not yet reset or destroyed (on an event thread that tore one down itself, this very request
# would wait with it)
reclaiming() {
  curl -s -m 5 "$U/v1/pools" | jq -e --argjson n "$((BACKLOG + RECLAIMERS + 1))" \
    '[.pools[].reclaiming] | add >= $n' >/dev/null 2>&1
}
wait_for 120 reclaiming
ok $? "the reclaim backlog is full and DELETEs tear sandboxes down past it"

answered() { local n=0 f; for f in "$TMPD"/del.*; do [ -s "$f" ] && n=$((n + 1)); done; echo "$n"; }
req GET /healthz
is "$CODE" 200 "/healthz answers while the DELETEs are in progress"
done_then=$(answered)
ok "$([ "$done_then" -lt "$N" ] && echo 0 || echo 1)" \
  "... and they were still in progress when it answered ($done_then of $N answered)"
req GET /v1/sessions
is "$CODE" 200 "the session list answers too"

release
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
