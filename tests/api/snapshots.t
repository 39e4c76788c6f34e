#!/usr/bin/env bash
# Snapshot and fork (issue 23): POST /v1/sessions/{id}/snapshot captures the session's files (not
# its processes), immutable, with a TTL and a size cap; POST /v1/sessions {from_snapshot, count}
# opens N forks that see the snapshot and not each other's writes nor the source's later ones;
# a snapshot of a fork; a fork's reset returns to the snapshot; forks share one copy on disk.
source "$(dirname "$0")/api.sh"
plan 30

start_daemon
ok $? "daemon started"
STATE=${PADDOCK_STATE_DIR:-/var/lib/paddock}
sx() { post_json "/v1/sessions/$1/exec" "$2"; }
cleanup 'for t in $(cat "$TMPD/ids" 2>/dev/null); do rm -f "$STATE/trajectories/$t.jsonl"; done; for n in $(cat "$TMPD/snaps" 2>/dev/null); do rm -rf "$STATE/snapshots/$n"; done'
keep() { echo "$1" >>"$TMPD/ids"; }
SNAP=snap-$TAG
echo "$SNAP $SNAP-2 $SNAP-small" | tr ' ' '\n' >"$TMPD/snaps"

post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id); keep "$S"
sx "$S" '{"shell":"mkdir -p /work/repo/src && echo v1 > /work/repo/src/a.txt && ln -s src/a.txt /work/repo/link && chmod 640 /work/repo/src/a.txt && echo tmpfile > /tmp/t && { sleep 1000 >/dev/null 2>&1 & }"}'
post_json "/v1/sessions/$S/snapshot" "{\"name\":\"$SNAP\",\"ttl\":600}"
is "$CODE" 201 "snapshot: 201"
is "$(jb '[.snapshot, .files, (.captured | join(","))] | map(tostring) | join(" ")')" "$SNAP 2 /work,/tmp" \
  "snapshot: its name, the files and the directories captured"
like "$(jb .processes)" "not captured" "snapshot: says processes are not captured"
post_json "/v1/sessions/$S/snapshot" "{\"name\":\"$SNAP\"}"
is "$CODE" 409 "a snapshot's name is taken once (immutable)"
post_json "/v1/sessions/$S/snapshot" '{"name":"../../etc"}'
is "$CODE" 400 "a snapshot name that walks: 400"
post_json "/v1/sessions/$S/snapshot" "{\"name\":\"$SNAP-small\",\"max_bytes\":2}"
is "$CODE" 413 "a snapshot over its size cap: 413"
test ! -e "$STATE/snapshots/$SNAP-small"; ok $? "and nothing is left of it"
sx "$S" '{"shell":"echo v2-source-only > /work/repo/src/a.txt"}'

# --- forks ----------------------------------------------------------------------------------------
post_json /v1/sessions "{\"from_snapshot\":\"$SNAP\",\"count\":3,\"group_id\":\"g\"}"
is "$CODE" 201 "3 forks from the snapshot: 201"
is "$(jb '.sessions | length')" 3 "three sessions"
F1=$(jb '.sessions[0].session_id'); F2=$(jb '.sessions[1].session_id'); F3=$(jb '.sessions[2].session_id')
keep "$F1"; keep "$F2"; keep "$F3"
is "$(jb '[.sessions[].template] | unique | join(",")')" bash "the forks are of the snapshot's template"
sx "$F1" '{"shell":"cat /work/repo/src/a.txt /tmp/t; readlink /work/repo/link; stat -c %a /work/repo/src/a.txt"}'
is "$(jb .stdout)" "$(printf 'v1\ntmpfile\nsrc/a.txt\n640')" "a fork sees the snapshot: content, /tmp, links, modes"
sx "$F1" '{"shell":"ps -e -o args | grep -c \"^sleep 1000\" || true"}'
is "$(jb .stdout)" 0 "a fork has none of the source's processes"
sx "$F1" '{"shell":"echo fork-1 > /work/repo/src/a.txt; echo new > /work/repo/new1"}'
sx "$F2" '{"shell":"cat /work/repo/src/a.txt; ls /work/repo"}'
is "$(jb .stdout)" "$(printf 'v1\nlink\nsrc')" "another fork does not see the first fork's writes"
sx "$F3" '{"shell":"rm -rf /work/repo; ls /work"}'
sx "$F2" '{"shell":"cat /work/repo/src/a.txt"}'
is "$(jb .stdout)" v1 "nor a third fork's deletion"
is "$(cat "$STATE/snapshots/$SNAP/tree/work/repo/src/a.txt")" v1 "the snapshot itself is unchanged"
sx "$S" '{"shell":"cat /work/repo/src/a.txt"}'
is "$(jb .stdout)" v2-source-only "the source session goes on with its own files"

# reset of a fork: back to the snapshot
req POST "/v1/sessions/$F1/reset"
is "$CODE" 200 "reset of a fork: 200"
sx "$F1" '{"shell":"cat /work/repo/src/a.txt; ls /work/repo"}'
is "$(jb .stdout)" "$(printf 'v1\nlink\nsrc')" "the fork's reset returns it to the snapshot"

# a snapshot of a fork, and a fork of that
sx "$F2" '{"shell":"echo second > /work/repo/second"}'
post_json "/v1/sessions/$F2/snapshot" "{\"name\":\"$SNAP-2\"}"
is "$CODE" 201 "a snapshot of a fork: 201"
post_json /v1/sessions "{\"from_snapshot\":\"$SNAP-2\"}"
is "$CODE" 201 "a fork of that snapshot (no count: one session)"
G=$(jb .session_id); keep "$G"
is "$(jb .from_snapshot)" "$SNAP-2" "the answer names its snapshot"
sx "$G" '{"shell":"cat /work/repo/src/a.txt /work/repo/second"}'
is "$(jb .stdout)" "$(printf 'v1\nsecond')" "it sees the first snapshot's files and the fork's own"

# the trajectory records the snapshot step and the fork's origin
req GET "/v1/sessions/$S/trajectory"
is "$(jq -r "select(.kind == \"snapshot\" and .observation.snapshot == \"$SNAP\") | .action.name" "$BODY")" "$SNAP" \
  "the snapshot is a step of the source's trajectory"
req GET "/v1/sessions/$G/trajectory"
is "$(head -1 "$BODY" | jq -r .from_snapshot)" "$SNAP-2" "a fork's trajectory says which snapshot it came from"

# refusals
post_json /v1/sessions '{"from_snapshot":"no-such-snapshot"}'
is "$CODE" 400 "a fork of an unknown snapshot: 400"
post_json /v1/sessions "{\"from_snapshot\":\"$SNAP\",\"count\":65}"
is "$CODE" 400 "count over 64: 400"
post_json /v1/sessions "{\"from_snapshot\":\"$SNAP\",\"template\":\"python\"}"
is "$CODE" 400 "a fork asking for another template than the snapshot's: 400"

# forks are destroyed after, never handed to the template's next user
for x in "$F1" "$F2" "$F3" "$G"; do req DELETE "/v1/sessions/$x"; done
post_json /v1/sessions '{"template":"bash"}'
P=$(jb .session_id); keep "$P"
sx "$P" '{"shell":"ls /work"}'
is "$(jb .stdout)" "" "a plain session after the forks ended has an empty /work"
req GET /healthz
is "$CODE" 200 "daemon healthy"
