#!/usr/bin/env bash
# make run's last part: the example episodes graded by the server (issue 40). Builds the task's
# image from the host (mkimage.py: an OCI layout of python3, git and /repo, a git repository with a
# bug and its future on another branch), imports it with `paddock image import` into a state
# directory of its own (OUT/state: the user's images and sessions are not touched), starts a
# `paddock serve` there on a loopback port the kernel picks, allowed that image alone (--images),
# runs run_episode.py against it (11 recorded agents, each in a session of its own on the image,
# each graded in a fork of its session), prints their verdicts and rewards, and stops the daemon.
# Usage: grade.sh PADDOCK OUT
set -u
PADDOCK=${1:-bin/paddock}
OUT=${2:-build/episode}
HERE=$(dirname "$0")
IMAGE=calc-median:task
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PADDOCK_STATE_DIR=$OUT/state
rm -rf "$OUT"/db.sqlite*  # a fresh store: the group is this run's agents only
python3 "$HERE/mkimage.py" "$OUT/image" || { echo "episode: could not build the task's image" >&2; exit 2; }
# the last run's image goes, by digest (its repository's .git differs from run to run: a new one)
old=$("$PADDOCK" image inspect "$IMAGE" 2>/dev/null | sed -n 's/^  "digest": "\(sha256:[0-9a-f]*\)".*/\1/p')
[ -z "$old" ] || "$PADDOCK" image rm "$old" >/dev/null
digest=$("$PADDOCK" image import "$OUT/image" --name "$IMAGE" 2>"$OUT/import.log") ||
  { echo "episode: paddock image import failed: $(cat "$OUT/import.log")" >&2; exit 2; }
"$PADDOCK" image gc >/dev/null 2>&1
"$PADDOCK" serve --listen 127.0.0.1:0 --db "$OUT/db.sqlite" --images "$IMAGE" </dev/null >"$OUT/daemon.log" 2>&1 &
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
echo "episodes: examples/episode on image $IMAGE $digest (agents graded by POST /v1/sessions/{id}/judge)"
python3 "$HERE/run_episode.py" --url "http://$addr" --out "$OUT" --paddock "$PADDOCK" --image "$IMAGE" "${@:3}"
rc=$?
echo "episode trajectories and summary: $OUT/"
exit $rc
