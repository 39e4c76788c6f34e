#!/usr/bin/env bash
# Network: an own network namespace with only lo (up by default, down with --net none). Host
# listeners on loopback (TCP and abstract unix sockets) are unreachable, and no other socket family
# leads out of the namespace. Only loopback addresses are ever used.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 19

# --- a host-side listener: TCP on 127.0.0.1, an abstract unix socket, a vsock port -------------
cat >"$TMPD/server.py" <<'EOF'
import os, select, socket, sys, time
d, tag = sys.argv[1], sys.argv[2]
tcp = socket.socket(); tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("127.0.0.1", 0)); tcp.listen(16)
uni = socket.socket(socket.AF_UNIX); uni.bind("\0" + tag); uni.listen(16)
socks = [tcp, uni]
vport = ""
try:
    vs = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    vs.bind((socket.VMADDR_CID_ANY, socket.VMADDR_PORT_ANY)); vs.listen(1)
    vport = str(vs.getsockname()[1])
except (OSError, AttributeError):
    pass
with open(d + "/ports.tmp", "w") as f:
    f.write("%d %s\n" % (tcp.getsockname()[1], vport or "-"))
os.rename(d + "/ports.tmp", d + "/ports")
end = time.time() + 90
while time.time() < end:
    r, _, _ = select.select(socks, [], [], 0.5)
    for s in r:
        c, _ = s.accept()
        with open(d + "/accepted", "a") as f:
            f.write(("tcp" if s is tcp else "unix") + "\n")
        c.close()
EOF
timeout 100 python3 "$TMPD/server.py" "$TMPD" "$TAG" </dev/null >/dev/null 2>&1 &
cleanup "kill $!"
wait_for 10 test -s "$TMPD/ports"
read -r PORT VPORT <"$TMPD/ports"
accepted() { grep -c "^$1$" "$TMPD/accepted" 2>/dev/null || true; }
accepted_is() { [ "$(accepted "$1")" = "$2" ]; }

# the sandbox side: connect or bind, print the errno (0 = it worked)
CLIENT='
import socket, sys
what, arg = sys.argv[1], sys.argv[2]
def run(f):
    try:
        f(); return 0
    except OSError as e:
        return e.errno
if what == "tcp":
    s = socket.socket(); s.settimeout(3)
    print("connect=%d" % run(lambda: s.connect(("127.0.0.1", int(arg)))))
elif what == "tcpbind":
    s = socket.socket()
    print("bind=%d" % run(lambda: s.bind(("127.0.0.1", int(arg)))))
elif what == "unix":
    s = socket.socket(socket.AF_UNIX); s.settimeout(3)
    print("connect=%d" % run(lambda: s.connect("\0" + arg)))
elif what == "vsock":
    try:
        s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    except OSError as e:
        print("socket=%d" % e.errno); sys.exit()
    print("socket=0")
    print("bind=%d" % run(lambda: s.bind((socket.VMADDR_CID_ANY, int(arg)))))
'

# --- interfaces ------------------------------------------------------------------------------
sbt 30 -- sh -c 'echo "dev=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " ")";
  echo "sys=$(ls /sys/class/net | tr "\n" " ")"; echo "flags=$(cat /sys/class/net/lo/flags)"'
is "$(so | sed -n 's/^dev=//p')" "lo " "only lo in /proc/net/dev"
if gv; then
  skip "gvisor: the Sentry's /sys has no class/net (only lo in /proc/net/dev above)"
  skip "gvisor: no /sys/class/net/lo/flags to read (the ioctl checks below see lo up)"
else
  is "$(so | sed -n 's/^sys=//p')" "lo " "only lo in /sys/class/net"
  flags=$(so | sed -n 's/^flags=//p')
  [ -n "$flags" ] && [ $((flags & 1)) = 1 ]
  ok $? "lo is up by default (flags $flags)"
fi

# --- host TCP listener on 127.0.0.1 --------------------------------------------------------------
python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3).close()' "$PORT"
wait_for 3 accepted_is tcp 1
ok $? "control: the host reaches its listener on 127.0.0.1:$PORT"
sbt 30 -- python3 -c "$CLIENT" tcp "$PORT"
is "$(so)" "connect=111" "the sandbox's connect to 127.0.0.1:$PORT is refused (its own lo)"
sleep 0.3
is "$(accepted tcp)" 1 "the host listener saw no connection from the sandbox"
sbt 30 -- python3 -c "$CLIENT" tcpbind "$PORT"
is "$(so)" "bind=0" "the sandbox can bind the host's port: separate port space"

# --- host abstract unix socket (abstract names are per network namespace) ----------------------
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect("\0"+sys.argv[1]); s.close()' "$TAG"
wait_for 3 accepted_is unix 1
ok $? "control: the host reaches its abstract socket @$TAG"
sbt 30 -- python3 -c "$CLIENT" unix "$TAG"
is "$(so)" "connect=111" "the sandbox cannot connect to the host's abstract socket"
sleep 0.3
is "$(accepted unix)" 1 "the host's abstract socket saw no connection from the sandbox"

# --- --net none --------------------------------------------------------------------------------
sbt 30 --net none -- sh -c 'echo "dev=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " ")";
  echo "flags=$(cat /sys/class/net/lo/flags)"'
is "$(so | sed -n 's/^dev=//p')" "lo " "--net none: only lo"
flags=$(so | sed -n 's/^flags=//p')
# runsc's network "none" is a sandbox with only its own lo, up: gVisor has no "lo down" mode
gvskip "--net none has its own lo up (runsc's none network; no lo-down mode)" || {
  [ -n "$flags" ] && [ $((flags & 1)) = 0 ]
  ok $? "--net none: lo is down (flags $flags)"
}
sbt 30 --net none -- python3 -c "$CLIENT" tcp "$PORT"
if gv; then
  is "$(so)" "connect=111" "gvisor: --net none: connect to 127.0.0.1 is refused by its own lo (ECONNREFUSED)"
else
  is "$(so)" "connect=101" "--net none: connect to 127.0.0.1 gives ENETUNREACH"
fi
is "$(accepted tcp)" 1 "--net none: the host listener saw nothing"
sbt 30 --net none -- python3 -c '
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
get = lambda: struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0)))[1]
try:
    fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", get() | 1)); print("set=0")
except OSError as e:
    print("set=%d" % e.errno)
print("up=%d" % (get() & 1))'
if gv; then
  # the Sentry does not implement SIOCSIFFLAGS: ENOTTY, and its lo is up anyway (runsc's none)
  is "$(so | tr '\n' ' ')" "set=25 up=1 " "gvisor: --net none: SIOCSIFFLAGS is not implemented by the Sentry (ENOTTY)"
else
  is "$(so | tr '\n' ' ')" "set=1 up=0 " "--net none cannot be undone: bringing lo up gives EPERM"
fi

# --- the namespace belongs to the host: the sandbox's root cannot reconfigure it ----------------
# (lib/netns.c reuses a namespace only if it reads exactly as a fresh one; that proof rests on
# these: no address, route, flag or sysctl a sandbox could change and a later one could see)
sbt 30 -- python3 -c '
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
get = lambda: struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0)))[1]
try:
    fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", get() & ~1)); print("set=0")
except OSError as e:
    print("set=%d" % e.errno)
print("up=%d" % (get() & 1))'
if gv; then
  is "$(so | tr '\n' ' ')" "set=25 up=1 " "gvisor: the sandbox cannot take lo down: the Sentry does not implement SIOCSIFFLAGS (ENOTTY)"
else
  is "$(so | tr '\n' ' ')" "set=1 up=1 " "the sandbox's root cannot take lo down: EPERM"
fi
sbt 30 -- sh -c 'for k in ipv4/ip_forward ipv4/ip_unprivileged_port_start core/somaxconn; do
  (echo 5 >/proc/sys/net/$k) 2>/dev/null && echo "wrote $k"; done; echo done'
is "$(so)" "done" "network sysctls cannot be written"

# --- no way around the network namespace ------------------------------------------------------
sbt 30 -- python3 -c 'import socket
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print("packet=0")
except OSError as e:
    print("packet=%d" % e.errno)'
unlike "$(so)" 'packet=0' "no raw packet socket"
# vsock is not network-namespaced: a port bound on the host collides inside when the family is
# usable, which means the sandbox shares the VM's vsock space (and can reach the hypervisor)
if [ "$VPORT" != "-" ]; then
  sbt 30 -- python3 -c "$CLIENT" vsock "$VPORT"
  unlike "$(so)" 'socket=0.*bind=98' "AF_VSOCK does not share the host's port space (socket refused or port free)"
  [[ $(so) =~ bind=98 ]] && diag "the host's vsock port $VPORT is in use inside: vsock escapes the network namespace"
else
  skip "no AF_VSOCK on this host"
fi

done_testing
