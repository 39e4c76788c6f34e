#!/usr/bin/env bash
# The host's files: secrets and private directories are absent, the old root is gone (no host path,
# no host mount), and the classic chroot escape leads nowhere.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 20

STATE=${PADDOCK_STATE_DIR:-/var/lib/paddock}
echo "secret-$TAG" >"/tmp/$TAG-secret"
cleanup "rm -f /tmp/$TAG-secret"
# a directory only the host has, at the top of its tree (/work is the sandbox's own)
HOSTDIR=/$TAG-host-only
mkdir -p "$HOSTDIR/main"
cleanup "rm -rf $HOSTDIR"

# --- host secrets and private directories ---------------------------------------------------
n=0
for d in /root /home /run /var; do [ -n "$(find "$d" -mindepth 1 ! -type d -print -quit 2>/dev/null)" ] && n=$((n + 1)); done
[ -e /etc/shadow ] && [ "$n" = 4 ]
ok $? "control: the host has /etc/shadow and files under /root, /home, /run and /var"
sbt 30 -- sh -c 'for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/ssh /etc/ssl/private /etc/machine-id.host; do
  [ -e "$f" ] && echo "present=$f"; done; cat /etc/shadow 2>/dev/null; true'
is "$(so)" "" "no /etc/shadow, gshadow, sudoers, ssh or ssl/private inside"
sbt 30 -- sh -c 'find /root /home /run /var -mindepth 1 ! -type d 2>&1; true'
is "$(so)" "" "/root, /home, /run and /var hold no file inside"
sbt 30 -- sh -c "ls -A /tmp; cat /tmp/$TAG-secret 2>/dev/null; grep -rls 'secret-$TAG' /tmp /var /run 2>/dev/null; true"
is "$(so)" "" "the host's /tmp (canary $TAG-secret) is not visible: /tmp is empty"
sbt 30 -- sh -c 'grep -rlsE "PRIVATE KEY|^root:[^x*!]" /etc; ls /etc/ssh* /etc/ssl/private 2>/dev/null; true'
is "$(so)" "" "the default image's /etc holds no private key nor password hash"
sbt 30 -- cut -d: -f1 /etc/passwd
inside_users=$(so | tr '\n' ' ')
leaked=""
for u in $(cut -d: -f1 /etc/passwd); do
  case " root sandbox nobody " in *" $u "*) continue ;; esac
  [[ " $inside_users " == *" $u "* ]] && leaked="$leaked $u"
done
is "$leaked" "" "no host account in the sandbox's /etc/passwd (inside: $inside_users)"

# --- the old root --------------------------------------------------------------------------
sbt 30 -- sh -c "for p in '$HOSTDIR' '$HOSTDIR/main' '$STATE' '$STATE/stage' '$PWD' '$TMPD' /var/lib/dpkg /etc/paddock; do
  [ -e \"\$p\" ] && echo \"visible=\$p\"; done; true"
is "$(so)" "" "no host-only path is visible ($STATE, $HOSTDIR, $PWD, /var/lib/dpkg...)"
sbt 30 -- sh -c 'ls -A /sys/fs/cgroup; true'
is "$(so)" "" "/sys/fs/cgroup is empty (no host cgroup tree)"
sbt 30 -- cat /proc/self/mountinfo
mi=$(so)
[ -n "$mi" ]
ok $? "mountinfo is readable"
bad=$(awk '{ print $5 }' <<<"$mi" | grep -vxE '/|/usr|/bin|/sbin|/lib|/lib32|/lib64|/libx32|/sys|/proc(/[a-z_.-]+)?|/dev(/[a-z]+)?|/tmp|/work')
is "$bad" "" "every mount point is one the sandbox made (/, image layers, /proc, /dev, /sys, /tmp, /work)"
root_type=$(awk '$5 == "/" { for (i = 7; i <= NF; i++) if ($i == "-") { print $(i + 1); exit } }' <<<"$mi")
is "$root_type" overlay "/ is the sandbox's overlay"
host_devs=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 2) ~ "^/dev/") print $(i + 2); break } }' /proc/self/mountinfo | sort -u)
found=""
for dev in $host_devs; do
  awk -v d="$dev" '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 2) == d) f = 1; break } } END { exit !f }' <<<"$mi" &&
    found="$found $dev"
done
is "$found" "" "no host block device ($(echo $host_devs)) is mounted inside"
# (python's stat: runsc 20221219 answers coreutils' statx on its root with EINVAL)
sbt 30 -- python3 -c 'import os; print(len({(os.stat(p).st_dev, os.stat(p).st_ino) for p in ("/", "/..", "/../..")}))'
is "$(so)" 1 "/.. is / (no way up from the root)"

# --- chroot escape ---------------------------------------------------------------------------
sbp -- /probes/chroot_escape "$HOSTDIR" "$STATE" "$PWD" /etc/shadow /usr/bin
out=$(so)
like "$out" 'chroot1=EPERM' "chroot() gives EPERM"
like "$out" 'chroot2=EPERM' "the second chroot(\".\") of the escape gives EPERM"
like "$out" 'cwd_is_root=1' "walking up with chdir(\"..\") stops at the sandbox's root"
like "$out" "$HOSTDIR=ENOENT" "after the escape attempt $HOSTDIR is still absent"
like "$out" "$STATE=ENOENT" "after the escape attempt $STATE is still absent"
like "$out" '/etc/shadow=ENOENT' "after the escape attempt /etc/shadow is still absent"
like "$out" '/usr/bin=OK' "control: the probe sees the sandbox's own /usr/bin"

done_testing
