#!/usr/bin/env bash
# Filesystem: writes land in the sandbox's own tmpfs upper layer and vanish with it; they never
# reach the host, the image, or the next sandbox. Binds are read-only unless asked; a writable
# bind writes as the sandbox's unprivileged host uid. Nothing can be mounted. The disk is capped.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 28

STATE=${PADDOCK_STATE_DIR:-/var/lib/paddock}
IMG_PASSWD=$STATE/images/host/etc/passwd
h_passwd=$(sha256sum /etc/passwd | cut -d' ' -f1)
h_bash=$(sha256sum /usr/bin/bash | cut -d' ' -f1)
h_img=$(sha256sum "$IMG_PASSWD" 2>/dev/null | cut -d' ' -f1)
cleanup "rm -f /usr/bin/$TAG /tmp/$TAG /root/$TAG"

# --- writes stay in the sandbox ----------------------------------------------------------------
sbt 30 -- sh -c "
  echo new > /usr/bin/$TAG && echo w_usr=ok
  echo 'evil-$TAG:x:0:0::/:/bin/sh' >> /etc/passwd && echo w_passwd=ok
  echo x > /tmp/$TAG && echo w_tmp=ok
  echo x > /root/$TAG && echo w_root=ok
  cat /usr/bin/$TAG /tmp/$TAG /root/$TAG; grep -c evil-$TAG /etc/passwd"
if gv; then
  # runsc's root is an in-memory overlay over the image, whose /usr it mounts read-only
  like "$(so)" "^w_passwd=ok
w_tmp=ok
w_root=ok
x
x
1" "control: the writes succeed inside and read back (gvisor: /usr is read-only, the rest writable)"
else
  like "$(so)" "w_usr=ok
w_passwd=ok
w_tmp=ok
w_root=ok
new
x
x
1" "control: the writes succeed inside and read back"
fi
[ ! -e "/usr/bin/$TAG" ]
ok $? "host /usr/bin/$TAG does not exist"
is "$(sha256sum /etc/passwd | cut -d' ' -f1)" "$h_passwd" "host /etc/passwd is unchanged"
! grep -q "evil-$TAG" /etc/passwd "$IMG_PASSWD"
ok $? "neither the host's nor the image's passwd has the added line"
[ ! -e "/tmp/$TAG" ] && [ ! -e "/root/$TAG" ]
ok $? "host /tmp/$TAG and /root/$TAG do not exist"
is "$(sha256sum "$IMG_PASSWD" 2>/dev/null | cut -d' ' -f1)" "$h_img" "the image's /etc/passwd is unchanged"
[ -z "$(find "$STATE/images" -name "$TAG" 2>/dev/null)" ]
ok $? "nothing named $TAG appeared in the image directory"
sbt 30 -- sh -c "ls /usr/bin/$TAG /tmp/$TAG /root/$TAG 2>/dev/null; grep -c evil-$TAG /etc/passwd"
is "$(so)" 0 "a second sandbox sees none of the first one's writes"

# --- overwriting a system binary ------------------------------------------------------------
sbt 30 -- sh -c 'printf "#!/bin/false\n" > /usr/bin/bash && echo overwritten; bash -c "echo bash-works"; true'
if gv; then
  is "$(so)" bash-works "gvisor: /usr/bin/bash cannot be overwritten (the image's /usr is read-only there)"
else
  like "$(so)" '^overwritten$' "control: /usr/bin/bash can be overwritten inside (and is broken there)"
fi
is "$(sha256sum /usr/bin/bash | cut -d' ' -f1)" "$h_bash" "host /usr/bin/bash is unchanged"
sbt 30 -- bash -c 'echo bash-works'
is "$(so)" bash-works "the next sandbox runs bash normally"

# --- binds ---------------------------------------------------------------------------------------
mkdir -p "$TMPD/ro" "$TMPD/rw"
echo original >"$TMPD/ro/file"
chmod 1777 "$TMPD/rw"
sbt 30 --bind "$TMPD/ro:/data" -- sh -c 'echo changed > /data/file; echo rc=$?; echo new > /data/new; echo rc=$?;
  mount -o remount,rw /data; echo rc=$?; cat /data/file'
like "$(so)" 'rc=[1-9][0-9]*
rc=[1-9][0-9]*
rc=[1-9][0-9]*
original' "a bind is read-only by default and cannot be remounted writable"
is "$(cat "$TMPD/ro/file")|$(ls "$TMPD/ro")" "original|file" "the read-only bind's host files are unchanged"
sbt 30 --bind "$TMPD/rw:/out:rw" -- sh -c 'cat /proc/self/uid_map; echo hi > /out/f && echo wrote; stat -c "%u" /out/f'
if gv; then
  # runsc's gofer writes as the host's root: the sandbox's root would own the host root's files
  # in the bind (write, chmod), which a container sandbox's unprivileged uid cannot
  is "$(jf status)|$(jf error)" "XX|isolation gvisor does not offer a writable bind (its gofer writes as the host's root)" \
    "gvisor: a writable bind is refused (XX, the reason)"
  [ ! -e "$TMPD/rw/f" ]
  ok $? "gvisor: and nothing was written through it"
else
  base=$(uid_base "$(so)")
  like "$(so)" 'wrote
0$' "control: a writable bind takes writes (file is root's inside)"
  owner=$(stat -c %u "$TMPD/rw/f" 2>/dev/null)
  [ -n "$base" ] && [ "$owner" = "$base" ] && [ "$owner" != 0 ]
  ok $? "on the host the file belongs to the sandbox's unprivileged uid ($owner = base $base), not root"
fi

# bind targets must be resolved inside the image: an absolute symlink in an image (common in
# container images: /var/run -> /run) must not lead the setup to create paths on the host. The
# image holds the link's target too, so a bind resolved inside it has a place to go.
mkdir -p "$TMPD/img$TMPD/target" "$TMPD/target" "$TMPD/src"
chmod 1777 "$TMPD/target"
echo marker >"$TMPD/src/m"
cp "$PROBES/chroot_escape" "$TMPD/img/stat"  # prints PATH=OK|ERRNO for each argument
ln -s "$TMPD/target" "$TMPD/img/evil"
sbt 30 --image "$TMPD/img" --bind "$TMPD/src:/evil/sub" --bind /etc/hostname:/evil/file -- /stat /evil/sub/m /evil/file
like "$(so)" '/evil/sub/m=OK
/evil/file=OK' "binds under an image symlink appear at their destination inside"
is "$(ls -A "$TMPD/target" | tr '\n' ' ')" "" "bind setup created nothing through the image's absolute symlink on the host"

# --- no mounts -----------------------------------------------------------------------------
for m in "-t tmpfs none /mnt" "-t proc proc /mnt" "-t sysfs sys /mnt" "--bind /tmp /mnt" \
  "-t cgroup -o memory cg /mnt" "-t overlay -o lowerdir=/usr,upperdir=/tmp/u,workdir=/tmp/w ov /mnt"; do
  sbt 30 -- sh -c "mkdir -p /tmp/u /tmp/w; mount $m; echo rc=\$?; grep -c ' /mnt ' /proc/self/mountinfo"
  like "$(so)" 'rc=[1-9][0-9]*
0' "mount ${m%% /mnt} fails and nothing is mounted"
done

# --- disk cap --------------------------------------------------------------------------------
before=$(find "$STATE/stage" -mindepth 1 2>/dev/null | wc -l)
sbt 60 --disk 8M -- sh -c 'df -B1 --output=size / | tail -1; dd if=/dev/zero of=/tmp/big bs=1M count=20 2>&1; echo rc=$?;
  echo "size=$(wc -c </tmp/big)"; rm -f /tmp/big; dd if=/dev/zero of=/dev/shm/big bs=1M count=20 2>&1; echo rc=$?'
gvskip "the root is runsc's in-memory overlay (bounded by -m, not --disk; df shows no size); /tmp and /dev/shm below are" ||
  like "$(so)" '^ *8388608
' "--disk 8M: the root reports 8 MiB"
size=$(so | sed -n 's/^size=//p')
[[ $(so) =~ No\ space\ left\ on\ device.*rc=1 ]] && [ -n "$size" ] && [ "$size" -le 8388608 ]
ok $? "--disk 8M: writing 20M to /tmp fails with ENOSPC at <= 8 MiB (file $size bytes)"
like "$(so)" 'size=[0-9]+
.*No space left on device.*rc=1$' "/dev/shm shares the same 8 MiB budget (ENOSPC)"
after=$(find "$STATE/stage" -mindepth 1 2>/dev/null | wc -l)
[ "$before" = 0 ] && [ "$after" = 0 ]
ok $? "the host's staging directory holds no file (writes went to the sandbox's tmpfs)"

# the most bind mounts a sandbox takes (32): all their fds reach init in one message
binds=()
for i in $(seq 1 32); do
  mkdir -p "$TMPD/many/d$i" && echo "$i" >"$TMPD/many/d$i/f"
  binds+=(--bind "$TMPD/many/d$i:/many/d$i")
done
# (a glob, not ls: runsc 20221219 answers ls's statx on a host bind with EINVAL, docs/isolation.md)
sbt 30 "${binds[@]}" -- sh -c 'cat /many/d1/f /many/d32/f; set -- /many/*; echo $#'
is "$(so | tr '\n' ' ')" "1 32 32 " "32 bind mounts, each in place"

done_testing
