#!/usr/bin/env bash
# The gvisor tier on an imported image whose config's WorkingDir is a directory the sandbox mounts
# a tmpfs on (/work, /tmp) or one the image lacks: runsc starts in it, the program runs there and
# writes to it, and the image's User applies with it. runsc refuses to start (exit 128) when the
# cwd is missing from a root of several layers (a read-only overlay on the host): the bundle's
# top layer makes the mount points and the cwd (lib/gvisor/spec.c). users.t@gvisor runs an image
# of several layers without /tmp or /work in its own WorkingDir.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 5
if [ ! -x /usr/bin/runsc ]; then
  for i in $(seq 5); do skip "runsc is not installed"; done
  exit 0
fi
export PADDOCK_STATE_DIR=$TMPD/state
for d in /work /tmp /nowhere; do
  python3 tests/api/mkimage.py workdir "$TMPD/img${d//\//-}" "$d" >/dev/null
  "$PADDOCK" image import "$TMPD/img${d//\//-}" --name "wd${d//\//-}:1" >/dev/null 2>&1
done
python3 tests/api/mkimage.py users "$TMPD/u" daemon:staff >/dev/null
"$PADDOCK" image import "$TMPD/u" --name wdusers:1 >/dev/null 2>&1

for d in /work /tmp /nowhere; do
  sbt 60 --isolation gvisor --image "wd${d//\//-}:1" -- bash -c 'pwd; echo x > f && echo wrote'
  is "$(jf status) $(echo $(so))" "OK $d wrote" "gvisor, WorkingDir $d: starts there and writes to it"
done
sbt 60 --isolation gvisor --image wdusers:1 -- bash -c 'pwd; id -u; id -g; echo x > f && echo wrote'
is "$(jf status) $(echo $(so))" "OK /work 4321 777 wrote" "gvisor, WorkingDir /work with the image's User: its /work"
left_b=$(find "$PADDOCK_STATE_DIR/gvisor" -maxdepth 1 -name "bundle-*" 2>/dev/null | wc -l)
is "$left_b" 0 "no gvisor bundle is left"
