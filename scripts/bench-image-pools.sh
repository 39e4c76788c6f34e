#!/usr/bin/env bash
# Per-task images through the daemon: N images (tests/api/mkimage.py many: a shared base and a
# layer of its own each) imported, `paddock serve --images '*'` started, and for each image a
# first request (cold: its (bash, image) pool is made and the sandbox created on the spot), then,
# once the pool holds a READY sandbox, a second (warm: taken from the pool). Reports the record's
# setup_ms (the attempt's time outside the exec: acquire, files) median and p90 of each, the host
# image's warm figure for reference, and what the pools hold at the end.
# Usage: [IDLE=1] scripts/bench-image-pools.sh [N]
set -eu
cd "$(dirname "$0")/.."
N=${1:-30}
P=${PADDOCK:-bin/paddock}
W=$(mktemp -d /tmp/paddock-bench-ipools.XXXXXX)
chmod 755 "$W"
DPID=""
trap '[ -n "$DPID" ] && kill "$DPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
export PADDOCK_STATE_DIR=$W/state
python3 tests/api/mkimage.py many "$W/src" "$N"
for i in $(seq 1 "$N"); do "$P" image import "$W/src/img-$i" --name "task-$i" >/dev/null 2>&1; done
"$P" serve --listen 127.0.0.1:0 --db "$W/db" --images '*' --image-pools "$((N + 8))" --image-ready "$((2 * N))" \
  </dev/null >"$W/log" 2>&1 &
DPID=$!
for _ in $(seq 300); do U=$(sed -n 's/^paddock: serving on //p' "$W/log" | head -1); [ -n "$U" ] && break; sleep 0.1; done
U=http://$U
run() { curl -s -X POST "$U/v1/runs" -H 'Content-Type: application/json' --data-binary "$1"; }
pool_ready() { curl -s "$U/v1/pools" | jq -e --arg p "$1" '.pools[] | select(.template == $p) | .ready >= 1' >/dev/null; }
for _ in $(seq 5); do run '{"cmd": ["true"]}' >/dev/null; done # the host template warm
for i in $(seq 1 "$N"); do
  run '{"cmd": ["true"]}' | jq -r .setup_ms >>"$W/host"
  out=$(run "{\"image\": \"task-$i\", \"cmd\": [\"cat\", \"/data/task\"]}")
  [ "$(jq -r .run.stdout <<<"$out")" = "$i" ] || { echo "task-$i: $out" >&2; exit 1; }
  jq -r .setup_ms <<<"$out" >>"$W/cold"
  d=$(jq -r .run.image.digest <<<"$out")
  for _ in $(seq 100); do pool_ready "bash@${d:7:24}" && break; sleep 0.05; done
  run "{\"image\": \"task-$i\", \"cmd\": [\"cat\", \"/data/task\"]}" | jq -r .setup_ms >>"$W/warm"
done
stats() { sort -n "$1" | awk '{v[NR]=$1} END {printf "median %.2f ms, p90 %.2f ms (%d)", v[int((NR+1)/2)], v[int(NR*0.9+0.5)], NR}'; }
echo "per-task image, cold (first request: pool made, sandbox created): $(stats "$W/cold")"
echo "per-task image, warm (a READY sandbox of its pool):               $(stats "$W/warm")"
echo "host image, warm (the bash template's pool):                      $(stats "$W/host")"
curl -s "$U/v1/pools" | jq -r '[.pools[] | select(.template | test("@"))] | "image pools: \(length), READY sandboxes in them: \(map(.ready) | add)"'
# IDLE=1: then waits (up to 3 minutes) until no image pool holds a sandbox: an idle image costs
# nothing once its demand windows (2 x 10 s) and the template's idle TTL (60 s) have passed
if [ "${IDLE:-0}" = 1 ]; then
  t0=$(date +%s)
  for _ in $(seq 1800); do
    n=$(curl -s "$U/v1/pools" | jq '[.pools[] | select(.template | test("@")) | .ready + .in_use + .creating + .reclaiming] | add // 0')
    [ "$n" = 0 ] && break
    sleep 0.1
  done
  echo "idle: image pools hold $n sandboxes $(($(date +%s) - t0)) s after the last request"
fi
