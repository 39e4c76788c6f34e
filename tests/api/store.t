#!/usr/bin/env bash
# The results store's size cap (--store-max): a record keeps up to a MiB of each output stream, so
# output floods would fill the disk at the request rate. Past the cap the oldest records are
# deleted, the newest are all there, the file stays near the cap, the deletions are counted in
# paddock_store_pruned_records_total; a store kept from a run with a larger cap is brought under
# the new one at start; bad values are refused with a message; a graceful stop leaves the records
# in the database file itself, not in its -wal.
source "$(dirname "$0")/api.sh"
plan 18

# sqlite figures of a store: records, oldest and newest task ids, MiB in use, file MiB
cat >"$TMPD/figures.py" <<'EOF_PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n, = c.execute("SELECT COUNT(*) FROM attempts").fetchone()
ids = [r[0] for r in c.execute("SELECT task_id FROM attempts ORDER BY id")]
pages, = c.execute("PRAGMA page_count").fetchone()
free, = c.execute("PRAGMA freelist_count").fetchone()
size, = c.execute("PRAGMA page_size").fetchone()
print(n, ids[0] if ids else "-", ids[-1] if ids else "-", (pages - free) * size >> 20, pages * size >> 20)
EOF_PY

"$PADDOCK" serve --listen 127.0.0.1:0 --store-max 1M </dev/null >"$TMPD/bad1" 2>&1
rc=$?
is "$rc" 64 "--store-max 1M: refused (exit 64)"
grep -q "at least 16M" "$TMPD/bad1"
ok $? "... saying the least it takes: $(head -c 200 "$TMPD/bad1")"
"$PADDOCK" serve --listen 127.0.0.1:0 --store-max lots </dev/null >"$TMPD/bad2" 2>&1
is "$?" 64 "--store-max lots: refused (exit 64)"

start_daemon --store-max 16M
ok $? "a daemon whose store may take 16 MiB"

# 40 runs of 2 MiB of output each: a record keeps 1 MiB of it, 40 MiB in all
fails=0
for i in $(seq 1 40); do
  post_json /v1/runs "{\"task_id\":\"flood-$i\",\"language\":\"python\",\"code\":\"import sys\\nsys.stdout.write('flood-$i ' + 'x' * (2 << 20))\"}"
  [ "$CODE" = 200 ] && [ "$(jb '"\(.status) \(.output_kept)"')" = "OK true" ] || fails=$((fails + 1))
done
is "$fails" 0 "40 runs of 2 MiB of output each: all answered 200 (1 MiB kept in the record, all of it beside the store: OK)"
read -r n oldest newest used file < <(python3 "$TMPD/figures.py" "$DB")
diag "store: $n records ($oldest .. $newest), $used MiB in use, file $file MiB"
[ "$n" -ge 8 ] && [ "$n" -lt 40 ]
ok $? "the oldest records were deleted, the rest kept ($n of 40)"
is "$newest" flood-40 "the newest record is there"
[ "$oldest" = "flood-$((41 - n))" ]
ok $? "the records kept are the newest, in a row (from $oldest)"
[ "$used" -le 16 ] && [ "$file" -le 18 ]
ok $? "the store uses at most its cap ($used MiB), its file stays near it ($file MiB)"
req GET /metrics
pruned=$(awk '$1 == "paddock_store_pruned_records_total" { print $2 }' "$BODY")
is "$pruned" "$((40 - n))" "paddock_store_pruned_records_total counts the deleted records"
sb=$(awk '$1 == "paddock_store_bytes" { print $2 }' "$BODY")
cb=$(awk '$1 == "paddock_store_cap_bytes" { print $2 }' "$BODY")
[ "$cb" = 16777216 ] && [ -n "$sb" ] && [ "$sb" -gt $((8 << 20)) ] && [ "$sb" -le "$cb" ]
ok $? "paddock_store_bytes ($sb) is under paddock_store_cap_bytes ($cb)"
grep -q '"msg":"results store over its cap' "$DLOG"
ok $? "a log line says the store deleted records for its cap"
stop_daemon
is "$DAEMON_RC" 0 "SIGTERM: the daemon stops gracefully (exit 0)"

# after a graceful stop the records are in the database file itself: a copy of that file alone
# (what a backup or an scp of paddock.db takes) has them all, and the -wal is gone or empty
mkdir "$TMPD/alone"
cp "$DB" "$TMPD/alone/db.sqlite"
read -r na _ newesta _ _ < <(python3 "$TMPD/figures.py" "$TMPD/alone/db.sqlite" 2>&1)
is "$na $newesta" "$n $newest" "the database file alone, copied after the stop, has every record ($na, newest $newesta)"
[ ! -s "$DB-wal" ]
ok $? "the -wal file is gone or empty ($(stat -c %s "$DB-wal" 2>/dev/null || echo none))"

# with no cap (0) the store is left whole and grows; a daemon started on it again with a cap
# brings it under the cap before it serves
DB0=$DB
start_daemon --store-max 0 --db "$DB0"
read -r n0 _ _ _ _ < <(python3 "$TMPD/figures.py" "$DB0")
is "$n0" "$n" "--store-max 0: no cap, the store is left whole ($n0 records)"
for i in $(seq 41 60); do
  post_json /v1/runs "{\"task_id\":\"flood-$i\",\"language\":\"python\",\"code\":\"import sys\\nsys.stdout.write('flood-$i ' + 'x' * (2 << 20))\"}"
done
stop_daemon
read -r n1 _ newest1 used1 _ < <(python3 "$TMPD/figures.py" "$DB0")
[ "$n1" -eq $((n + 20)) ] && [ "$used1" -gt 16 ] && [ "$newest1" = flood-60 ]
ok $? "and grows past 16 MiB ($n1 records, $used1 MiB)"
start_daemon --store-max 16M --db "$DB0"
read -r n2 _ newest2 used2 _ < <(python3 "$TMPD/figures.py" "$DB0")
[ "$used2" -le 16 ] && [ "$newest2" = flood-60 ] && [ "$n2" -lt "$n1" ]
ok $? "started again with 16M, the daemon brings it under the cap first ($n2 records, $used2 MiB, newest $newest2)"
stop_daemon
