#!/usr/bin/env bash
# Image store benchmark: N OCI images sharing one base layer (tests/api/mkimage.py builds them:
# bash, coreutils and their libraries, ~5 MiB unpacked, plus a small layer each) are imported
# into a fresh store; reports the import time, the store's disk use against N separate copies, then
# the setup time of a sandbox of an imported image against the host image (paddock exec --json's
# setup_ms, median and p90 of R runs each, interleaved). Usage: scripts/bench-images.sh [N] [R]
set -eu
cd "$(dirname "$0")/.."
N=${1:-100}
R=${2:-30}
P=${PADDOCK:-bin/paddock}
W=$(mktemp -d /tmp/paddock-bench-images.XXXXXX)
chmod 755 "$W" # the sandboxes stage their roots under the state directory
trap 'rm -rf "$W"' EXIT
export PADDOCK_STATE_DIR=$W/state
python3 tests/api/mkimage.py many "$W/src" "$N"
"$P" exec --quiet -- true  # the host image built before the clock starts
t0=$(date +%s.%N)
for i in $(seq 1 "$N"); do "$P" image import "$W/src/img-$i" --name "img-$i" >/dev/null 2>&1; done
t1=$(date +%s.%N)
store=$(du -sk "$PADDOCK_STATE_DIR/images/store/layers" | cut -f1)
one=$(jq -r .size "$PADDOCK_STATE_DIR"/images/store/images/*.json | head -1)
ndirs=$(find "$PADDOCK_STATE_DIR/images/store/layers/sha256" -mindepth 1 -maxdepth 1 -type d | wc -l)
echo "import: $N images in $(echo "$t1 - $t0" | bc) s, $(echo "($t1 - $t0) * 1000 / $N" | bc) ms each (the first unpacks the base)"
echo "store: $ndirs layer directories, $((store / 1024)) MiB on disk; $N separate copies would take $((one * N >> 20)) MiB"
for i in $(seq 1 "$R"); do
  "$P" exec --json --quiet --image img-1 -- true | jq -r .setup_ms >>"$W/img"
  "$P" exec --json --quiet -- true | jq -r .setup_ms >>"$W/host"
done
stats() { sort -n "$1" | awk '{v[NR]=$1} END {printf "median %.2f ms, p90 %.2f ms", v[int((NR+1)/2)], v[int(NR*0.9+0.5)]}'; }
echo "sandbox setup, imported image: $(stats "$W/img")"
echo "sandbox setup, host image:     $(stats "$W/host")"
