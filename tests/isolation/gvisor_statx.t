#!/usr/bin/env bash
# Why `ls` fails under the gvisor tier (docs/isolation.md): runsc 20221219's statx refuses the flag
# AT_NO_AUTOMOUNT (0x800) with EINVAL on every path, whatever filesystem is below (the image root,
# the one-shot tmpfs /work, /tmp, /etc), and coreutils 9.1 passes it on every statx. The same call
# without the flag answers. No runsc setting reaches it (it is the Sentry's syscall argument check,
# before any gofer or overlay), so paddock documents it; this file says when a runsc upgrade fixes it.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 3
if [ ! -x /usr/bin/runsc ]; then
  for i in $(seq 3); do skip "runsc is not installed"; done
  exit 0
fi
export PADDOCK_STATE_DIR=$TMPD/state
# statx(AT_FDCWD, path, flags, STATX_BASIC_STATS): "path flags ok|errno-name" per line
probe='import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(256)
for path in ("/", "/work", "/tmp", "/etc"):
    for flags in (0x100, 0x900):
        r = libc.syscall(332, -100, path.encode(), flags, 0x7ff, buf)
        print(path, hex(flags), "ok" if r == 0 else errno.errorcode[ctypes.get_errno()])'

sbt 60 --isolation gvisor -- python3 -c "$probe"
is "$(echo $(so))" "/ 0x100 ok / 0x900 EINVAL /work 0x100 ok /work 0x900 EINVAL /tmp 0x100 ok /tmp 0x900 EINVAL /etc 0x100 ok /etc 0x900 EINVAL" \
  "gvisor: statx with AT_NO_AUTOMOUNT is EINVAL on every path, without it it answers"
sbt 60 -- python3 -c "$probe"
is "$(echo $(so))" "/ 0x100 ok / 0x900 ok /work 0x100 ok /work 0x900 ok /tmp 0x100 ok /tmp 0x900 ok /etc 0x100 ok /etc 0x900 ok" \
  "container: the host kernel answers both"
sbt 60 --isolation gvisor -- sh -c 'ls / >/dev/null 2>&1; echo ls=$?; set -- /*; [ -d "$1" ] && echo globbed'
is "$(echo $(so))" "ls=2 globbed" "hence ls (coreutils $(ls --version | sed -n '1s/.* //p')) fails under gvisor while a glob lists"
