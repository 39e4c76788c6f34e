#!/usr/bin/env bash
# The gvisor isolation tier (paddock exec --isolation gvisor): the same template run under gVisor's
# runsc. Each verdict comes out as a container sandbox's does (OK, RE with the exit code, SG, TO for
# wall and CPU time, ML, OL, RE 127 for a program that cannot run), the record names its isolation,
# env, cwd, stdin, a read-only root, /tmp's disk limit and an imported image's layers hold, and a
# run leaves no cgroup, runsc container or bundle behind.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 33
if [ ! -x /usr/bin/runsc ]; then
  for i in $(seq 30); do skip "runsc is not installed"; done
  exit 0
fi
export PADDOCK_STATE_DIR=$TMPD/state
G=(--isolation gvisor)

sbt 60 "${G[@]}" -- sh -c 'echo hi; echo err >&2; exit 3'
is "$(jf status) $(jf exit_code)" "RE 3" "exit 3: RE with the exit code"
is "$(so)|$(se)" "hi|err" "stdout and stderr are captured apart"
is "$(jf isolation)" gvisor "the record names its isolation: gvisor"
is "$(jf residue)" clean "the run's residue check is clean"

sbt 60 -- true
is "$(jf isolation)" container "a container run's record says container"

sbt 60 "${G[@]}" -- true
is "$(jf status)" OK "true: OK"

sbt 60 "${G[@]}" -- sh -c 'kill -SEGV $$'
is "$(jf status) $(jf signal)" "SG 11" "a program killed by SIGSEGV: SG 11"

sbt 60 "${G[@]}" -- /nonexistent/prog
is "$(jf status) $(jf exit_code)" "RE 127" "a program that does not exist: RE 127"
like "$(jf error)" "cannot execute" "... and the error says it cannot be executed"

sbt 60 "${G[@]}" -w 1 -- sleep 30
is "$(jf status)" TO "-w 1 with sleep 30: TO"
w=$(jf wall_ms)
[ "$w" -ge 1000 ] && [ "$w" -lt 30000 ]
ok $? "the wall limit ended it (wall_ms $w)"

sbt 60 "${G[@]}" -t 1 -- sh -c 'while :; do :; done'
is "$(jf status)" TO "-t 1 with a busy loop: TO"
[ "$(jf cpu_ms)" -ge 1000 ]
ok $? "cpu_ms counts the sandbox's CPU ($(jf cpu_ms))"

sbt 60 "${G[@]}" -m 64M -- python3 -c 'x = b"\x01" * (200 << 20); print("survived")'
is "$(jf status)" ML "-m 64M, allocating 200 MB: ML"
is "$(jf oom_killed)" true "... the record has the OOM kill"
is "$(so)" "" "... and the allocation did not succeed"

sbt 60 "${G[@]}" --output-kill 1M -- yes
is "$(jf status)" OL "--output-kill 1M with yes: OL"
[ "$(jf stdout_bytes)" -ge $((1 << 20)) ]
ok $? "the output was counted past the limit ($(jf stdout_bytes))"

sbt 60 "${G[@]}" -o 64 -- sh -c 'head -c 10000 /dev/zero | tr "\0" a'
is "$(jf stdout_truncated) $(jf stdout_bytes)" "true 10000" "-o 64: output kept head and tail, all bytes counted"

echo "from stdin" >"$TMPD/in"
sbt 60 "${G[@]}" -i "$TMPD/in" -- cat
is "$(so)" "from stdin" "--stdin feeds the program"

sbt 60 "${G[@]}" -C /work -e FOO=bar -u 1000 -- sh -c 'pwd; echo $FOO; id -u'
is "$(so | tr '\n' ' ')" "/work bar 1000 " "--cwd, --env and --user apply"

sbt 60 "${G[@]}" -- sh -c 'echo x > /usr/pdk-gv-probe'
is "$(jf status)" RE "the image's /usr is read-only"
[ ! -e /usr/pdk-gv-probe ]
ok $? "... and nothing reached the host's /usr"

sbt 60 "${G[@]}" -- sh -c 'echo x > /etc/pdk-gv-probe && cat /etc/pdk-gv-probe'
is "$(so)" x "the root is writable inside (runsc's in-memory overlay)"
[ ! -e "$PADDOCK_STATE_DIR/images/host/etc/pdk-gv-probe" ]
ok $? "... and the image directory is unchanged"
# a bind to a path the image lacks, and a cwd it lacks: runsc makes mount points in the root it is
# given, as the host's root (the image itself once: every later sandbox saw the directory)
mkdir -p "$TMPD/bsrc" && echo b >"$TMPD/bsrc/f" && echo 1 >"$TMPD/bfile"
sbt 60 "${G[@]}" --bind "$TMPD/bsrc:/pdk-bp/dir" --bind "$TMPD/bfile:/pdk-bf" -C /pdk-cwd/x -- sh -c 'cat /pdk-bp/dir/f /pdk-bf; pwd'
is "$(jf status) $(echo $(so))" "OK b 1 /pdk-cwd/x" "binds to paths the image lacks (a directory, a file) and a cwd it lacks"
[ ! -e "$PADDOCK_STATE_DIR/images/host/pdk-bp" ] && [ ! -e "$PADDOCK_STATE_DIR/images/host/pdk-bf" ] &&
  [ ! -e "$PADDOCK_STATE_DIR/images/host/pdk-cwd" ]
ok $? "... and none of their mount points reached the image directory"

sbt 60 "${G[@]}" -d 1M -- sh -c 'head -c 4000000 /dev/zero > /tmp/big; echo rc=$?'
like "$(so)" "rc=1" "-d 1M: writing 4 MB to /tmp fails (the tmpfs is the disk size)"

sbt 60 "${G[@]}" --net host -- true
is "$(jf status)" XX "--net host is refused by the gvisor tier (XX with a reason)"
sbt 60 "${G[@]}" --io-read-bps 1M -- true
is "$(jf error)" "isolation gvisor does not offer I/O limits" "I/O limits are refused by the gvisor tier, not ignored"

# an imported image's layers, stacked with overlayfs for runsc's root
python3 tests/api/mkimage.py layered "$TMPD/layered" >/dev/null
"$PADDOCK" image import "$TMPD/layered" --name gvlayered >/dev/null 2>&1
# (bash's glob, not ls: runsc 20221219 refuses statx's AT_NO_AUTOMOUNT, which coreutils' ls
# passes, with EINVAL on every path: docs/isolation.md, gvisor_statx.t)
sbt 60 "${G[@]}" --image gvlayered -- bash -c 'echo $(pwd) *; cat /data/c; echo "FOO=$FOO"'
is "$(so)" "/data b base-only c h1 h2 hl_lower keep out setuid tagged
file c
FOO=from-image" "an imported image's merged layers (a whiteout hides data/a), Env and WorkingDir apply under gvisor"

# nothing left behind
left_cg=$(find /sys/fs/cgroup/*/paddock -maxdepth 1 -name "sb-*-g*" 2>/dev/null | wc -l)
left_b=$(find "$PADDOCK_STATE_DIR/gvisor" -maxdepth 1 -name "bundle-*" | wc -l)
is "$left_cg $left_b" "0 0" "no gvisor cgroup or bundle is left"
is "$(runsc --root "$PADDOCK_STATE_DIR/gvisor/runsc" list -q 2>/dev/null | wc -l)" 0 "runsc lists no container left"
