#!/usr/bin/env bash
# Landlock behind the mount namespace (lib/landlock.c, docs/isolation.md#landlock): every program
# of a container sandbox is restricted to the sandbox's own tree. No write under /proc or /sys, no
# new entry directly in /, and a host file the sandbox holds open (stdin from a host file) cannot
# be opened again by its path (/proc/self/fd/0 leads to a host path no rule grants). Each refusal
# is shown against PADDOCK_LANDLOCK=off, where the same call succeeds: it is Landlock refusing,
# not another layer. The writable places (the image's directories, /tmp, /work, /dev/shm, /dev's
# nodes, writable binds) stay writable. The record's "landlock" is the kernel's ABI version, or 0
# where the kernel has none (then the file skips, saying why); paddock pool's first line says which.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 17

ABI=$("$PROBES/landlock_abi")
if ! [[ $ABI =~ ^[0-9]+$ ]]; then
  sbt 30 -- true
  is "$(jf landlock)" 0 "no Landlock in this kernel ($ABI): the record says 0, nothing is faked"
  like "$("$PADDOCK" pool --warm 0 --wait 1 2>&1 | head -1)" 'landlock absent: the kernel has none' \
    "paddock pool says it is absent, and why"
  for ((i = 2; i < 17; i++)); do skip "the kernel has no Landlock ($ABI)"; done
  exit 0
fi
off() { PADDOCK_LANDLOCK=off "$@"; }

sbt 30 -- true
is "$(jf status)|$(jf landlock)" "OK|$ABI" "the record names the Landlock ABI the program ran under (the kernel's: $ABI)"
off sbt 30 -- true
is "$(jf status)|$(jf landlock)" "OK|0" "PADDOCK_LANDLOCK=off: the record says 0"
like "$("$PADDOCK" pool --warm 0 --wait 1 2>&1 | head -1)" "landlock ABI $ABI\)" "paddock pool names the ABI"

# --- /proc and /sys ----------------------------------------------------------------------------
PROG='echo pdk-ll > /proc/self/comm && echo comm=$(cat /proc/$$/comm)'
sbt 30 -- sh -c "$PROG"
like "$(se)" 'cannot create /proc/self/comm: Permission denied' "a write to /proc/self/comm is refused (EACCES)"
off sbt 30 -- sh -c "$PROG"
like "$(so)" 'comm=pdk-ll' "control: without Landlock the same write succeeds"
sbt 30 -- sh -c 'echo 1 > /proc/sys/kernel/ns_last_pid; echo rc=$?; echo x > /proc/self/attr/current; echo rc=$?'
like "$(so)" '^rc=[1-9][0-9]*
rc=[1-9][0-9]*' "writes under /proc/sys and /proc/self/attr fail"
sbt 30 -- sh -c 'cat /proc/self/status >/dev/null && ls /sys/class/net >/dev/null && echo read-ok'
is "$(so)" read-ok "/proc and /sys stay readable"

# --- a host file held open cannot be reached by its path -----------------------------------------
HF=$TMPD/hostfile
echo host-original >"$HF"
chmod 666 "$HF"
sbt 30 -i "$HF" -- sh -c 'cat /proc/self/fd/0; echo rc=$?; echo evil >> /proc/self/fd/0; echo rc=$?; cat <&0'
like "$(so)" '^rc=[1-9][0-9]*
rc=[1-9][0-9]*
host-original' "stdin from a host file: read through fd 0, but reopening /proc/self/fd/0 (read or append) is refused"
is "$(cat "$HF")" host-original "the host file is unchanged"
off sbt 30 -i "$HF" -- sh -c 'cat /proc/self/fd/0'
is "$(so)" host-original "control: without Landlock the host path is reopened (what Landlock closes)"

# --- the root: its directories writable, / itself not -------------------------------------------
sbt 30 -- sh -c 'touch /pdk-ll-new; echo rc=$?; mkdir /pdk-ll-dir; echo rc=$?'
like "$(so)" '^rc=[1-9]
rc=[1-9]' "no new file or directory directly in /"
off sbt 30 -- sh -c 'touch /pdk-ll-new && mkdir /pdk-ll-dir && echo made'
is "$(so)" made "control: without Landlock both are made (in the sandbox's own upper layer)"
sbt 30 -- sh -c 'echo a > /etc/pdk-ll && echo b > /usr/bin/pdk-ll && echo c > /root/pdk-ll && echo d > /tmp/x &&
  echo e > /work/x && echo f > /dev/shm/x && echo g > /dev/null && mkdir -p /var/tmp/a/b && echo h > /var/tmp/a/b/c &&
  ln -s /etc/pdk-ll /tmp/l && mv /tmp/x /tmp/y && rm /tmp/y && python3 -c "print(\"py-ok\")"'
is "$(jf status)|$(so)" "OK|py-ok" "the image's directories, /tmp, /work, /dev/shm and /dev/null stay writable; python runs"
sbt 30 -u 1000 -- sh -c 'echo u > /work/u && echo v > /tmp/v && cat /work/u /tmp/v'
is "$(so)" "u
v" "as user 1000, /work and /tmp are writable"

# --- binds -----------------------------------------------------------------------------------------
mkdir -p "$TMPD/ro" "$TMPD/rw"
echo ro-file >"$TMPD/ro/f"
chmod 1777 "$TMPD/rw"
sbt 30 --bind "$TMPD/ro:/data" --bind "$TMPD/rw:/out:rw" --bind "$TMPD/rw:/work/deep/out:rw" -- sh -c '
  cat /data/f; echo x > /data/g; echo rc=$?; echo top > /out/t && echo nested > /work/deep/out/n && echo rw-ok'
like "$(so)" '^ro-file
rc=[1-9][0-9]*
rw-ok$' "a read-only bind reads and refuses writes; writable binds (in / and nested) take them"
is "$(cat "$TMPD/rw/t" "$TMPD/rw/n" 2>/dev/null | tr '\n' ' ')" "top nested " "what went through the writable binds is on the host"
[ ! -e "$TMPD/ro/g" ]
ok $? "nothing reached the read-only bind's host directory"
