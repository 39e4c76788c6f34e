#!/usr/bin/env bash
# Red team (s33) against the audit's deny rules and its kept names (lib/internal/audit.h): each
# case reads judge material (a deny prefix) in a way the audit must still refuse. Container tier
# only (gVisor offers no audit).
#  1. openat2 with RESOLVE_IN_ROOT: the kernel resolves an absolute path from the dirfd, the
#     audit from the sandbox's root; a read of /srv/judge/flag spelled "/judge/flag" from a dirfd
#     on /srv.
#  2. a bind mount whose destination is spelled other than where it lands (through the image's
#     /lib -> usr/lib link, or with a doubled slash): the names under it are kept after all, so a
#     directory there that the host (or another sandbox binding the same directory) turns into a
#     link to judge material during the run is still resolved as the directory.
#  3. an exec whose interpreter is judge material: a script of the program's own naming a judge
#     binary on its "#!" line (the kernel opens the interpreter itself: no call the audit stops).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 10
if gv; then
  for i in $(seq 10); do skip "gvisor: no audit"; done
  exit 0
fi

SECRET=$TMPD/secret
mkdir -p "$SECRET"
echo "FLAG-$TAG" >"$SECRET/flag"
chmod -R a+rX "$SECRET"
ev() { jq -r '.audit.events[] | "\(.kind):\(.op):\(.mode):\(.path // .address):\(.denied)"' <<<"$OUT"; }

# --- 1. openat2 RESOLVE_IN_ROOT -----------------------------------------------------------------
cat >"$TMPD/inroot.py" <<'EOF'
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
fd = os.open("/srv", os.O_RDONLY | os.O_DIRECTORY)
how = struct.pack("QQQ", os.O_RDONLY, 0, 0x10)  # open_how {flags, mode, resolve = RESOLVE_IN_ROOT}
r = libc.syscall(437, fd, b"/judge/flag", how, 24)  # openat2
print(os.read(r, 100).decode().strip() if r >= 0 else "errno %d" % ctypes.get_errno())
EOF
chmod 644 "$TMPD/inroot.py"
sbt 30 --bind "$SECRET:/srv/judge" --bind "$TMPD/inroot.py:/opt/inroot.py" --audit-deny /srv/judge \
  -- python3 /opt/inroot.py
unlike "$(so)" "FLAG-" "openat2(/srv, \"/judge/flag\", RESOLVE_IN_ROOT): the judge material is not read"
like "$(ev)" "judge_material:open:r:/srv/judge/flag:true" "and the open is refused as judge_material /srv/judge/flag"

# --- 2. a bind's destination spelled otherwise ----------------------------------------------------
# The program reads through a directory of the bind (the resolution is kept), says so in a
# writable bind, waits until the host has made that directory a link to the material, reads again.
PROG='cat "$1/d/probe"; : > /sig/ready; i=0
while [ ! -L "$1/d" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
cat "$1/d/flag"'
run_bind() {  # run_bind DST READ-PATH: $OUT; the host relinks the bind's d mid-run
  local shared=$TMPD/shared-$RANDOM sig=$TMPD/sig-$RANDOM
  mkdir -p "$shared/d" "$sig"
  echo probe >"$shared/d/probe"
  chmod -R a+rwX "$shared" "$sig"
  (
    wait_for 20 test -e "$sig/ready" && rm -r "$shared/d" && ln -s /secret "$shared/d"
  ) &
  local helper=$!
  sbt 40 --bind "$SECRET:/secret" --audit-deny /secret --bind "$shared:$1" --bind "$sig:/sig:rw" \
    -- sh -c "$PROG" sh "$2"
  wait "$helper"
}
# the control: a destination spelled as it lands
run_bind /shared /shared
like "$(ev)" "judge_material:open:r:/secret/flag:true" \
  "control: a bind at /shared whose d became a link to /secret: the read through it is refused"
# through the image's link /lib -> usr/lib: mounted at /usr/lib/shared
run_bind /lib/shared /lib/shared
unlike "$(so)" "FLAG-" "a bind at /lib/shared (/usr/lib/shared): the material is not read through its d"
like "$(ev)" "judge_material:open:r:/secret/flag:true" "and the read is refused as judge_material"
# with a doubled slash: mounted at /shared
run_bind //shared /shared
unlike "$(so)" "FLAG-" "a bind at //shared: the material is not read through its d"
like "$(ev)" "judge_material:open:r:/secret/flag:true" "and the read is refused as judge_material"

# --- 3. judge material as a script's interpreter ----------------------------------------------
cp /usr/bin/echo "$SECRET/solve"
chmod 755 "$SECRET/solve"
sbt 30 --bind "$SECRET:/secret" --audit-deny /secret -- \
  sh -c 'printf "#!/secret/solve JUDGE-RAN\n" > /tmp/x; chmod +x /tmp/x; /tmp/x'
unlike "$(so)" "JUDGE-RAN" "a script whose #! names /secret/solve: the judge binary does not run"
like "$(ev)" "judge_material:exec:x:/secret/solve:true" "and its exec is refused as judge_material /secret/solve"
# the control: a script with an allowed interpreter still runs
sbt 30 --bind "$SECRET:/secret" --audit-deny /secret -- \
  sh -c 'printf "#!/bin/echo SCRIPT-RAN\n" > /tmp/y; chmod +x /tmp/y; /tmp/y'
like "$(so)" "SCRIPT-RAN" "control: a script whose #! names /bin/echo runs"
