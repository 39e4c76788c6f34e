#!/usr/bin/env bash
# What one user of a pooled sandbox does is invisible to the next, through the daemon: a pool of
# one sandbox (every request reuses it when it can), a hostile user, then the next user's view of
# the same thing equals what a user of a fresh sandbox saw. The network namespace's tables (IPv6
# flow labels, the ::1 route's reference count) and the mount table's order.
source "$(dirname "$0")/api.sh"
plan 8

cat >"$TMPD/tpl.json" <<'JSON'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work",
   "pool": {"min": 1, "max": 1}}]}
JSON
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started with a pool of one sandbox"

rc() {  # rc CODE: stdout of a /run_code bash program
  post_json /run_code "$(jq -cn --arg c "$1" '{code: $c, language: "bash"}')"
  jb .run_result.stdout
}
VIEW='cat /proc/net/ip6_flowlabel; awk "{print \$1, \$7, \$8, \$9, \$10}" /proc/net/ipv6_route; cat /proc/net/rt6_stats'
MOUNTS='awk "{\$1=\$2=\$3=\"\"; print}" /proc/self/mountinfo'
# the first request gets the pool's fresh sandbox
fresh_m=$(rc "$MOUNTS")
like "$fresh_m" "/dev/pts" "a fresh sandbox's mount table"
fresh=$(rc "$VIEW")
like "$fresh" "Label" "a user's view of the namespace's flow labels and routes"

hostile() {  # hostile DESCRIPTION CODE VIEWCODE WANT: after CODE, the next three users see WANT
  rc "$2" >/dev/null
  local seen=0 i out
  for i in 1 2 3; do
    out=$(rc "$3")
    [ "$out" = "$4" ] || { seen=1; diag "got: $(head -c 300 <<<"$out" | tr '\n' '|')"; }
  done
  is "$seen" 0 "$1: the next three users see what a fresh sandbox's would"
}
FL='python3 -c "import socket,struct;s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM);s.setsockopt(41,32,socket.inet_pton(socket.AF_INET6,\"::1\")+struct.pack(\"!I\",0x12345)+struct.pack(\"=BBHHHI\",0,255,1,0,150,0))"; grep -c 12345 /proc/net/ip6_flowlabel'
is "$(rc "$FL")" 1 "a user takes an IPv6 flow label (it shows in /proc/net/ip6_flowlabel)"
hostile "an IPv6 flow label (lingering 150 s)" "$FL" "$VIEW" "$fresh"
hostile "UDP6 sockets connect()ed to ::1, no traffic" \
  'python3 -c "import socket
for i in range(8): s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM); s.connect((\"::1\",9)); s.close()"' \
  "$VIEW" "$fresh"
hostile "a write in /etc (the root rebuilt)" 'echo x > /etc/pd-leak' "$MOUNTS" "$fresh_m"
hostile "a write in /tmp only (the root kept)" 'echo x > /tmp/pd-leak' "$MOUNTS" "$fresh_m"
done_testing
