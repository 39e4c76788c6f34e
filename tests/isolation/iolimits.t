#!/usr/bin/env bash
# I/O limits (limits.io_read_bps, io_write_bps, io_read_iops, io_write_iops): block I/O on the disks
# behind the image, the binds and the state directory is throttled by the cgroup (v1
# blkio.throttle.*, v2 io.max). Tested on loop devices this file makes, one of them partitioned
# (the throttles take whole disks: a partition's I/O is limited on its disk). Direct I/O, so that
# the page cache does not answer for the disk. Each check is a lower bound on the time (a loaded
# machine only makes it longer): 8 MiB at 2 MiB/s cannot take less than ~3 s.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 10
if gv; then
  # the Sentry's own reads would be charged to the sandbox too: the tier refuses I/O limits
  sbt 30 --io-read-bps 2M -- true
  is "$(jf status)|$(jf error)" "XX|isolation gvisor does not offer I/O limits" \
    "gvisor: --io-read-bps is refused (XX, the reason), not ignored"
  for f in "--io-write-bps 2M" "--io-read-iops 50" "--io-write-iops 50"; do
    sbt 30 $f -- true
    is "$(jf status)" XX "gvisor: $f is refused too"
  done
  for i in $(seq 6); do skip "gvisor: no I/O limits (lib/gvisor/sandbox.c refuses them)"; done
  exit 0
fi

# mkdisk NAME SIZE_MB [part]: a loop device ($DEV) with ext4 mounted at $TMPD/NAME (partitioned:
# one partition from 1 MiB on, an MBR written here), and an 8 MiB file "f" on it
mkdisk() {
  local img=$TMPD/$1.img mnt=$TMPD/$1 fsdev
  DEV=""
  truncate -s "$2M" "$img"
  if [ "${3:-}" = part ]; then
    python3 - "$img" "$2" <<'PY'
import struct, sys
img, mb = sys.argv[1], int(sys.argv[2])
start, count = 2048, mb * 2048 - 2048
entry = struct.pack('<B3sB3sII', 0, b'\xff\xff\xff', 0x83, b'\xff\xff\xff', start, count)
with open(img, 'r+b') as f:
    f.seek(446); f.write(entry + b'\0' * 48); f.write(b'\x55\xaa')
PY
    DEV=$(losetup -f --show -P "$img") || return 1
    cleanup "losetup -d $DEV"
    # a kernel without MBR support in its partition scan is told the partition (BLKPG); without
    # udev nothing makes the partition's node: made here from sysfs
    local sys=/sys/class/block/$(basename "$DEV")p1/dev
    [ -r "$sys" ] || partx -a "$DEV" 2>/dev/null
    wait_for 10 test -r "$sys" || return 1
    fsdev=$TMPD/$1.p1
    mknod "$fsdev" b "$(cut -d: -f1 "$sys")" "$(cut -d: -f2 "$sys")" || return 1
  else
    DEV=$(losetup -f --show "$img") || return 1
    cleanup "losetup -d $DEV"
    fsdev=$DEV
  fi
  mkfs.ext4 -q "$fsdev" && mkdir -p "$mnt" && mount "$fsdev" "$mnt" || return 1
  cleanup "umount $mnt"
  dd if=/dev/urandom of="$mnt/f" bs=1M count=8 status=none && chmod 777 "$mnt"
}
# the seconds dd says it took, from the last result's stdout
dd_secs() { se | sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p'; }
at_least() { python3 -c "import sys; sys.exit(not float('${1:-0}') >= $2)"; }

mkdisk plain 64
ok $? "a loop device with a file system ($DEV)"

sbt 120 --bind "$TMPD/plain:/data" --io-read-bps 2M -- dd if=/data/f of=/dev/null bs=1M iflag=direct
is "$(jq -r .status <<<"$OUT")" OK "--io-read-bps 2M: dd of 8 MiB from a bind on the disk ran ($(se | tail -1))"
at_least "$(dd_secs)" 3
ok $? "and took at least 3 s ($(dd_secs) s): reads are throttled"

sbt 120 --bind "$TMPD/plain:/data:rw" --io-write-bps 2M -- dd if=/dev/zero of=/data/w bs=1M count=8 oflag=direct
at_least "$(dd_secs)" 3
ok $? "--io-write-bps 2M: writing 8 MiB took at least 3 s ($(dd_secs) s)"

sbt 120 --bind "$TMPD/plain:/data" --io-read-iops 50 -- dd if=/data/f of=/dev/null bs=4k count=250 iflag=direct
at_least "$(dd_secs)" 3
ok $? "--io-read-iops 50: 250 reads took at least 3 s ($(dd_secs) s)"

sbt 120 --bind "$TMPD/plain:/data:rw" --io-write-iops 50 -- dd if=/dev/zero of=/data/w2 bs=4k count=250 oflag=direct
at_least "$(dd_secs)" 3
ok $? "--io-write-iops 50: 250 writes took at least 3 s ($(dd_secs) s)"

# the limit is the sandbox's, not the disk's: a second sandbox without limits is not slowed by it
sbt 60 --bind "$TMPD/plain:/data" -- dd if=/data/f of=/dev/null bs=1M iflag=direct
is "$(jq -r .status <<<"$OUT")" OK "without limits, the same read runs ($(dd_secs) s)"

mkdisk parted 64 part
ok $? "a partitioned loop device (${DEV}p1: $(cat /sys/class/block/$(basename "$DEV")p1/dev 2>/dev/null))"
sbt 120 --bind "$TMPD/parted:/data" --io-read-bps 2M -- dd if=/data/f of=/dev/null bs=1M iflag=direct
is "$(jq -r .status <<<"$OUT")" OK "a bind on a partition: the limit is put on its disk and the run starts ($(jq -r .error <<<"$OUT"))"
at_least "$(dd_secs)" 3
ok $? "and the partition's reads are throttled ($(dd_secs) s)"
