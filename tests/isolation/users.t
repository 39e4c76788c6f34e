#!/usr/bin/env bash
# Non-root users through the library and the CLI (paddock exec --user, --image): the program's
# uid and gid, /work owned by the user, /tmp sticky 1777, root-owned image files out of reach,
# and an imported image's User resolved from the image's own /etc/passwd and /etc/group; the
# gvisor tier runs its program as the same user, with /work its own.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 11
# "%u:%g" (with " %a": and the mode) of each path: python's stat, as runsc 20221219 answers
# coreutils' statx on its tmpfs mounts with EINVAL (docs/isolation.md)
OWN='import os, sys
m = sys.argv[1] == "-m"
for p in sys.argv[1 + m:]:
    s = os.stat(p); print("%d:%d" % (s.st_uid, s.st_gid) + (" %o" % (s.st_mode & 0o7777) if m else ""))'

sbt 30 --user sandbox -- sh -c 'id -u; id -g; python3 -c "$1" -m /work /tmp; echo x > /work/f && python3 -c "$1" /work/f; echo x > /etc/passwd 2>/dev/null || echo refused' sh "$OWN"
is "$(echo $(so))" "1000 1000 1000:1000 755 0:0 1777 1000:1000 refused" \
  "--user sandbox: 1000:1000, /work is the user's, /tmp 1777 root, what it writes is its own, /etc/passwd refused"
sbt 30 --user 1234:2345 -- sh -c 'id -u; id -g; python3 -c "$1" /work' sh "$OWN"
is "$(echo $(so))" "1234 2345 1234:2345" "--user UID:GID"
sbt 30 -- sh -c 'id -u; python3 -c "$1" /work' sh "$OWN"
is "$(echo $(so))" "0 0:0" "no --user: the sandbox's root, as before"
if gv; then
  # the uid of the container tier's init; runsc runs no init, so it is a uid like any other
  sbt 30 --user 65533 -- id -u
  is "$(jf status) $(so)" "OK 65533" "gvisor: uid 65533 is a uid like any other (runsc runs no init of paddock's as it)"
else
  timeout 30 "$PADDOCK" exec --quiet --user 65533 -- true 2>"$TMPD/err"
  ok "$([ $? -ne 0 ] && echo 0 || echo 1)" "init's uid 65533 is refused ($(head -c 120 "$TMPD/err"))"
fi

export PADDOCK_STATE_DIR=$TMPD/state
python3 "$(dirname "$0")/../api/mkimage.py" users "$TMPD/u" daemon:staff
"$PADDOCK" image import "$TMPD/u" --name users:t >/dev/null 2>&1
ok $? "an image whose User is daemon:staff imported"
if gv; then
  # this image has no python, and runsc 20221219 answers coreutils' statx with EINVAL: the ids
  # alone (/work's owner under gvisor: the --user sandbox check above)
  sbt 30 --image users:t -- sh -c 'id -u; id -g'
  is "$(echo $(so))" "4321 777" \
    "gvisor: its User resolves from the image's passwd and group (daemon 4321, staff 777; the host's daemon is 1)"
else
  sbt 30 --image users:t -- sh -c 'id -u; id -g; stat -c %u:%g /work'
  is "$(echo $(so))" "4321 777 4321:777" \
    "its User resolves from the image's passwd and group (daemon 4321, staff 777; the host's daemon is 1)"
fi
sbt 30 --image users:t --user daemon:daemon -- sh -c 'id -u; id -g'
is "$(echo $(so))" "4321 4322" "--user names resolve from the image too"
timeout 30 "$PADDOCK" exec --quiet --image users:t --user nosuch -- true 2>"$TMPD/err"
rc=$?
ok "$([ $rc -ne 0 ] && grep -q "not in the image's /etc/passwd" "$TMPD/err" && echo 0 || echo 1)" \
  "a name the image lacks is refused, saying so (exit $rc)"
sbt 30 --image users:t -- sh -c 'echo x > /data/rootfile 2>/dev/null || echo refused; touch /data/appdir/ok && echo appdir'
is "$(echo $(so))" "refused appdir" "the image's root-owned file is out of reach, its user's directory is not"

# the gvisor tier (lib/gvisor/spec.c): the process's user and /work's owner in the OCI spec.
# python's stat: runsc's ptrace platform answers coreutils' statx with EINVAL here.
if [ -x /usr/bin/runsc ]; then
  sbt 60 --isolation gvisor --user sandbox -- python3 -c 'import os
s = os.stat("/work"); t = os.stat("/tmp")
print(os.getuid(), os.getgid(), "%d:%d" % (s.st_uid, s.st_gid), "%d:%d" % (t.st_uid, t.st_gid))'
  is "$(echo $(so))" "1000 1000 1000:1000 0:0" "gvisor --user sandbox: the program is 1000:1000, /work its own, /tmp root's"
  # --cwd /: runsc fails to start with a cwd the image lacks (/work, its WorkingDir here)
  sbt 60 --isolation gvisor --image users:t --cwd / -- sh -c 'id -u; id -g'
  is "$(echo $(so))" "4321 777" "gvisor on the image: its User from the image's own passwd and group"
else
  skip "runsc is not installed"
  skip "runsc is not installed"
fi
