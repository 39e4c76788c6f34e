#!/usr/bin/env bash
# Kernel objects counted per user or host-wide (docs/security.md, "Host objects"): while several
# sandboxes each create every object they can and hold them, the host's root (the daemon's
# credentials) can still create each one, and each sandbox got no more than its own limit.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
KINDS="watches inotify sigpending aio mqueue"
# gvisor: every object is the Sentry's own (none is a host kernel object); the Sentry serves
# 200,000 inotify watches slowly (over 10 s), so its sandboxes hold the other kinds
HOLD=$KINDS
gv && HOLD="inotify sigpending aio mqueue"
N=3
plan $((5 + 1 + 5 + 3 * N))

result() { sed -n "s/^$1=//p" <<<"$2"; }

OUTD=$TMPD/out
mkdir "$OUTD"
chmod 777 "$OUTD"
cleanup "touch $OUTD/go"
if gv; then
  # no writable bind under gvisor (lib/gvisor/sandbox.c) to say "ready" through: each sandbox
  # creates what it can and ends (its "go" file exists already); their objects are the Sentry's
  for i in $(seq "$N"); do
    timeout -k 3 150 "$PADDOCK" exec --json --quiet -w 100 "${BINDP[@]}" -- \
      /probes/hostobj hold /tmp/ready /probes/hostobj $HOLD >"$TMPD/box$i.json" 2>"$TMPD/box$i.err" &
  done
  skip "gvisor: the sandboxes cannot signal that they hold their objects (no writable bind); the host's tries below run beside them"
else
  for i in $(seq "$N"); do
    timeout -k 3 150 "$PADDOCK" exec --json --quiet -w 100 "${BINDP[@]}" --bind "$OUTD:/out:rw" -- \
      /probes/hostobj hold "/out/ready.$i" /out/go $HOLD >"$TMPD/box$i.json" 2>"$TMPD/box$i.err" &
  done
  ready() { [ "$(find "$OUTD" -name 'ready.*' | wc -l)" -ge "$N" ]; }
  wait_for 90 ready
  ok $? "$N sandboxes hold every object they could create"
fi
host=$("$PROBES/hostobj" try $KINDS)
touch "$OUTD/go"
wait
for k in $KINDS; do
  is "$(result "$k" "$host")" OK "the host's root can still create $k while $N sandboxes hold theirs"
done

for i in $(seq "$N"); do
  OUT=$(cat "$TMPD/box$i.json")
  [ -n "$OUT" ] || OUT='{}'
  is "$(jf status)" OK "sandbox $i ran to the end ($(head -c 200 "$TMPD/box$i.err"))"
  box=$(so)
  diag "sandbox $i: $(tr '\n' ' ' <<<"$box")"
  inot=$(result inotify "$box")
  if gv; then
    # the Sentry's inotify has no per-user instance limit: its fd limit (RLIMIT_NOFILE) ends it
    like "$inot" '^[0-9]+ EMFILE$' "sandbox $i: gvisor: inotify instances are the Sentry's, ended by its fd limit ($inot)"
    like "$(result aio "$box")" '^[0-9]+ ' "sandbox $i: gvisor: io_setup is the Sentry's own (no host fs.aio-nr is taken): $(result aio "$box")"
  else
    [ "${inot% *}" -le 32 ] 2>/dev/null
    ok $? "sandbox $i: at most 32 inotify instances ($inot)"
    is "$(result aio "$box")" "0 ENOSYS" "sandbox $i: io_setup is refused (fs.aio-nr is host-wide)"
  fi
done
# the per-sandbox limits, from inside one sandbox (the first's figures)
OUT=$(cat "$TMPD/box1.json")
[ -n "$OUT" ] || OUT='{}'
box=$(so)
sp=$(result sigpending "$box")
[ "${sp% *}" -le 4096 ] 2>/dev/null
ok $? "a sandbox queues at most 4096 signals (RLIMIT_SIGPENDING; got $sp)"
w=$(result watches "$box")
if gv; then
  skip "gvisor: inotify watches are the Sentry's memory, not the host's per-user watch count (not held: too slow)"
else
  [ "${w% *}" -ge 1000 ] && [ "${w% *}" -le 8192 ] 2>/dev/null
  ok $? "a sandbox holds at most 8192 inotify watches ($w)"
fi
mq=$(result mqueue "$box")
if gv; then
  # the Sentry's queues: not bounded by RLIMIT_MSGQUEUE there, ended by the fd limit
  like "$mq" '^[0-9]+ EMFILE$' "gvisor: POSIX message queues are the Sentry's, ended by its fd limit ($mq)"
else
  [ "${mq% *}" -ge 1 ] && [ "${mq% *}" -le 16 ] 2>/dev/null
  ok $? "a sandbox opens POSIX message queues, within its byte limit ($mq)"
fi
sbp -- sh -c 'cat /proc/sys/user/max_inotify_instances /proc/sys/user/max_user_namespaces'
gvskip "the Sentry's /proc/sys has no user/ limits (no host user namespace is made for the sandbox)" ||
  is "$(so | tr '\n' ' ')" "32 0 " "the sandbox's user namespace has its own limits (max_inotify_instances, max_user_namespaces)"
sbp -- bash -c 'ulimit -i; ulimit -q; ulimit -l'
is "$(so | tr '\n' ' ')" "4096 819200 8192 " "programs' RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE (bytes) and RLIMIT_MEMLOCK (KiB)"
