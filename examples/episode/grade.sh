#!/usr/bin/env bash
# make run's last part: the example episodes graded by the server (issue 40). Starts a `paddock
# serve` of its own on a loopback port the kernel picks (its database in OUT), runs
# run_episode.py against it (11 recorded agents on a SWE-style task, each graded in a fork of its
# session), prints their verdicts and rewards, and stops the daemon. Usage: grade.sh PADDOCK OUT
set -u
PADDOCK=${1:-bin/paddock}
OUT=${2:-build/episode}
mkdir -p "$OUT"
rm -f "$OUT"/db.sqlite*  # a fresh store: the group is this run's agents only
"$PADDOCK" serve --listen 127.0.0.1:0 --db "$OUT/db.sqlite" </dev/null >"$OUT/daemon.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
addr=""
for _ in $(seq 300); do
  addr=$(sed -n 's/^paddock: serving on //p' "$OUT/daemon.log" | head -1)
  [ -n "$addr" ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
[ -n "$addr" ] || { echo "episode: the daemon did not start: $(tail -c 400 "$OUT/daemon.log")" >&2; exit 2; }
for _ in $(seq 150); do curl -sf -o /dev/null "http://$addr/healthz" && break; sleep 0.1; done
echo "episodes: examples/episode (agents graded by POST /v1/sessions/{id}/judge)"
python3 "$(dirname "$0")/run_episode.py" --url "http://$addr" --out "$OUT" --paddock "$PADDOCK"
rc=$?
echo "episode trajectories and summary: $OUT/"
exit $rc
