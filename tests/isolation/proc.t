#!/usr/bin/env bash
# Kernel interfaces: the /proc files that leak host state or poke the kernel read as empty (or do
# not exist), /proc/sys and /sys are read-only, no fresh procfs can be mounted to get around the
# masks, and /dev holds only the harmless nodes.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 18

# --- masked files ----------------------------------------------------------------------------
[ "$(head -c 1 /proc/keys | wc -c)$(head -c 1 /proc/timer_list | wc -c)$(head -c 1 /proc/kallsyms | wc -c)" = 111 ]
ok $? "control: on the host /proc/keys, /proc/timer_list and /proc/kallsyms are not empty"
# each masked file must read as empty and be the null device (so the answer is not just the
# kernel's own per-namespace filtering)
sbt 30 -- sh -c 'for f in kcore keys timer_list kallsyms kmsg sched_debug sysrq-trigger latency_stats \
    kpagecount kpageflags kpagecgroup; do
  if [ -e /proc/$f ]; then echo "$f=$(timeout 2 head -c 65536 /proc/$f 2>/dev/null | wc -c):$(stat -c %t,%T /proc/$f)"
  else echo "$f=absent"; fi; done'
out=$(so)
for f in kcore sysrq-trigger; do
  like "$out" "(^|
)$f=(absent|0:1,3)(
|\$)" "/proc/$f is absent or masked (empty)"
done
for f in keys timer_list kallsyms kmsg; do
  if gv; then
    # the Sentry's procfs is its own: it has no such file to mask
    like "$out" "(^|
)$f=absent(
|\$)" "gvisor: /proc/$f does not exist in the Sentry's procfs"
  else
    like "$out" "(^|
)$f=0:1,3(
|\$)" "/proc/$f reads as empty (masked by /dev/null)"
  fi
done
n=$(grep -cvE '=(0:1,3|absent)$' <<<"$out")
is "$n" 0 "every masked /proc file is masked or absent"
sbt 30 -- sh -c 'umount /proc/keys; umount -l /proc/timer_list; echo "keys=$(wc -c </proc/keys) timer_list=$(wc -c </proc/timer_list)"'
gvskip "nothing is masked (the Sentry's procfs has neither file), so no mask to unmount" ||
  is "$(so)" "keys=0 timer_list=0" "the masks cannot be unmounted"
sbt 30 -- sh -c 'mkdir -p /tmp/p; mount -t proc proc /tmp/p; echo rc=$?; ls /tmp/p | wc -l; [ -e /tmp/p/sysrq-trigger ] && echo reached'
like "$(so)" '^rc=[1-9][0-9]*
0$' "no fresh procfs can be mounted (so no unmasked sysrq-trigger or keys)"

# --- read-only /proc/sys and /sys -------------------------------------------------------------
h_core=$(cat /proc/sys/kernel/core_pattern)
h_name=$(cat /proc/sys/kernel/hostname)
sbt 30 -- sh -c 'for f in kernel/core_pattern kernel/hostname kernel/domainname vm/drop_caches kernel/panic net/ipv4/ip_forward; do
  if err=$(echo 1 2>&1 > /proc/sys/$f); then echo "$f=written"; else echo "$f=${err##*: }"; fi; done'
if gv; then
  # the Sentry's /proc/sys is its own (it never writes the host's): it answers EACCES
  is "$(grep -c '=Permission denied$' <<<"$(so)")" 6 "gvisor: writes to /proc/sys fail with EACCES (the Sentry's own /proc/sys)"
else
  is "$(grep -c '=Read-only file system$' <<<"$(so)")" 6 "writes to /proc/sys fail with EROFS (core_pattern, hostname, drop_caches, panic, ip_forward...)"
fi
is "$(cat /proc/sys/kernel/core_pattern)|$(cat /proc/sys/kernel/hostname)" "$h_core|$h_name" \
  "the host's core_pattern and hostname are unchanged"
sbt 30 -- cat /proc/self/mountinfo
ro=$(awk '$5 ~ "^/proc/(sys|irq|bus|fs)$" || $5 == "/sys" { print $5 ":" ($6 ~ /(^|,)ro(,|$)/ ? "ro" : "RW") }' <<<"$(so)" | sort | tr '\n' ' ')
gvskip "the Sentry's /proc and /sys are its own file systems, not host mounts to make read-only (writes fail: above and below)" ||
  is "$ro" "/proc/bus:ro /proc/fs:ro /proc/irq:ro /proc/sys:ro /sys:ro " "/proc/sys, /proc/irq, /proc/bus, /proc/fs and /sys are read-only mounts"
sbt 30 -- sh -c 'echo x > /proc/sysrq-trigger; echo "rc=$?"'
like "$(so)" 'rc=[1-9]' "writing /proc/sysrq-trigger fails"
sbt 30 -- sh -c 'echo 1 > /sys/kernel/profiling; echo "rc=$?"; touch /sys/x; echo "rc=$?"; echo 0 > /sys/class/net/lo/mtu; echo "rc=$?"'
like "$(so)" '^rc=[1-9]
rc=[1-9]
rc=[1-9]$' "writes to /sys fail"
sbt 30 -- sh -c 'ls -A /proc/acpi /proc/driver /proc/scsi 2>/dev/null | grep -v -e "^/proc" -e "^$"; true'
is "$(so)" "" "/proc/acpi, /proc/driver and /proc/scsi are empty"

# --- /dev -------------------------------------------------------------------------------------------
if gv; then
  # (a glob: runsc 20221219 answers ls's statx there with EINVAL) runsc adds its own fuse and
  # net/tun: the Sentry's devices, no host device behind them
  sbt 30 -- sh -c 'cd /dev && echo *'
  is "$(so)" "fd full fuse net null ptmx pts random shm stderr stdin stdout tty urandom zero" \
    "gvisor: /dev holds the same nodes, and runsc's fuse and net (the Sentry's own devices)"
  # /dev is the Sentry's tmpfs: a node can be made, but it opens no host device
  sbt 30 -- sh -c 'mknod /tmp/disk b 254 0; echo "rc=$?"; head -c1 /tmp/disk; echo "rc=$?"'
  like "$(so)$(se)" 'rc=0
rc=1.*No such device or address' "gvisor: a device node made inside opens nothing (ENXIO: the Sentry has no host device)"
else
  sbt 30 -- sh -c 'ls -A /dev | tr "\n" " "'
  is "$(so)" "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero " \
    "/dev holds only null, zero, full, random, urandom, tty, pts, shm and the fd links"
  sbt 30 -- sh -c 'mknod /tmp/disk b 254 0; echo "rc=$?"; touch /dev/x; echo "rc=$?"'
  like "$(so)" '^rc=[1-9]
rc=[1-9]$' "no device node can be made and /dev is read-only"
fi

done_testing
