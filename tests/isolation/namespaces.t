#!/usr/bin/env bash
# Namespaces: every one differs from the host's; none can be created or entered from inside; the
# UTS and IPC namespaces are private in both directions.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 29

NS="user pid mnt net ipc uts cgroup"

# --- every namespace differs from the host's -------------------------------------------------
sbt 30 -- sh -c 'for n in '"$NS"'; do echo "$n=$(readlink /proc/self/ns/$n)"; done'
for n in $NS; do
  inside=$(so | sed -n "s/^$n=//p")
  # the host's: this shell's, and pid 1's where the host lets us read it
  hosts="$(readlink "/proc/$$/ns/$n") $(readlink "/proc/1/ns/$n" 2>/dev/null)"
  same=0
  for h in $hosts; do [ "$h" = "$inside" ] && same=1; done
  if gv && [ -z "$inside" ]; then
    skip "gvisor: the Sentry's /proc/self/ns has no $n link (its namespaces are Sentry objects, never the host's)"
    continue
  fi
  [ -n "$inside" ] && [ "$same" = 0 ]
  ok $? "$n namespace differs from the host's ($inside vs $hosts)"
done

# --- no namespace can be created or joined ---------------------------------------------------
for flag in -U -m -n "-p -f" -i -u -C; do
  sbt 30 -- sh -c "unshare $flag true; echo rc=\$?"
  if gv && { [ "$flag" = -U ] || [ "$flag" = -C ]; }; then
    # the Sentry makes user and cgroup namespaces itself: no host namespace, no host kernel call
    is "$(so)" rc=0 "gvisor: unshare $flag succeeds inside the Sentry (a Sentry object; the host kernel is never asked)"
  else
    like "$(so)" 'rc=[1-9]' "unshare $flag fails"
  fi
done
sbp -- /probes/trysys unshare_newuser unshare_newns setns_net clone_newuser clone_newns clone_newpid \
  clone_newnet clone_newipc clone_newuts clone_newcgroup clone3
out=$(so)
if gv; then
  # paddock's seccomp filter is not in the Sentry: its own namespaces answer, inside it
  why="the Sentry's own namespaces, no host namespace is made"
  like "$out" 'unshare_newuser=OK' "gvisor: unshare(CLONE_NEWUSER) succeeds ($why)"
  like "$out" 'unshare_newns=OK' "gvisor: unshare(CLONE_NEWNS) succeeds ($why)"
  like "$out" 'setns_net=EOPNOTSUPP' "gvisor: setns() is not implemented by the Sentry (EOPNOTSUPP)"
  like "$out" 'clone_newuser=EPERM' "gvisor: clone(CLONE_NEWUSER) gives EPERM (the Sentry's answer, not paddock's filter)"
  n=$(grep -cE '^clone_new(ns|pid|net|ipc|uts|cgroup)=OK$' <<<"$out")
  is "$n" 6 "gvisor: clone() with another namespace flag succeeds ($why)"
else
  like "$out" 'unshare_newuser=EPERM' "unshare(CLONE_NEWUSER) gives EPERM"
  like "$out" 'unshare_newns=EPERM' "unshare(CLONE_NEWNS) gives EPERM"
  like "$out" 'setns_net=EPERM' "setns() into a namespace gives EPERM"
  like "$out" 'clone_newuser=EPERM' "clone(CLONE_NEWUSER) gives EPERM"
  n=$(grep -cE '^clone_new(ns|pid|net|ipc|uts|cgroup)=EPERM$' <<<"$out")
  is "$n" 6 "clone() with any other namespace flag gives EPERM"
fi
like "$out" 'clone3=ENOSYS' "clone3() gives ENOSYS (libc falls back to clone)"

# --- UTS ---------------------------------------------------------------------------------------
host_name=$(hostname)
sbt 30 -- hostname
is "$(so)" sandbox "default hostname is 'sandbox'"
sbt 30 --hostname "box-$$" -- hostname
is "$(so)" "box-$$" "--hostname sets the hostname"
sbt 30 -- sh -c "hostname evil-$$; echo rc=\$?; echo evil2 > /proc/sys/kernel/hostname; echo rc=\$?; hostname"
like "$(so)" 'rc=[1-9].*rc=[1-9].*sandbox' "changing the hostname inside fails (hostname and /proc/sys)"
is "$(hostname)" "$host_name" "the host's hostname is unchanged"

# --- SysV IPC ------------------------------------------------------------------------------------
shm=$(ipcmk -M 4096 | awk '{print $NF}')
msq=$(ipcmk -Q | awk '{print $NF}')
sem=$(ipcmk -S 1 | awk '{print $NF}')
cleanup "ipcrm -m $shm"
cleanup "ipcrm -q $msq"
cleanup "ipcrm -s $sem"
shm_key=$(awk -v id="$shm" '$2 == id { print $1 }' /proc/sysvipc/shm)
msq_key=$(awk -v id="$msq" '$2 == id { print $1 }' /proc/sysvipc/msg)
[ -n "$shm_key" ] && [ -n "$msq_key" ]
ok $? "control: host shm $shm (key $shm_key) and queue $msq (key $msq_key) exist on the host"
sbt 30 -- sh -c 'echo "== shm"; tail -n +2 /proc/sysvipc/shm; echo "== msg"; tail -n +2 /proc/sysvipc/msg;
  echo "== sem"; tail -n +2 /proc/sysvipc/sem; echo "== ipcs"; ipcs -m -q -s | grep -E "^0x" ; true'
inside=$(so)
like "$inside" '^== shm
== msg
== sem
== ipcs$' "no SysV object at all inside (/proc/sysvipc and ipcs are empty)"
unlike "$inside" "(^|[^0-9])($shm_key|$msq_key)([^0-9]|\$)" "the host's segment and queue keys are not visible inside"
if gv; then
  # the Sentry has no /proc/sysvipc and its ipcs lists nothing (no MSG_STAT): the queue is made
  # with a key of ours and found again by it
  k=$((RANDOM * 32768 + RANDOM + 1))
  sbt 30 -- python3 -c 'import ctypes, sys
l = ctypes.CDLL(None, use_errno=True)
k = int(sys.argv[1])
q = l.msgget(k, 0o1600)  # IPC_CREAT | 0600
if q >= 0 and l.msgget(k, 0) == q:
    print("key=%d" % k)' "$k"
  key=$(so | sed -n 's/^key=//p' | head -1)
else
  sbt 30 -- sh -c 'ipcmk -Q >/dev/null && awk "NR > 1 { print \"key=\" \$1 }" /proc/sysvipc/msg'
  key=$(so | sed -n 's/^key=//p' | head -1)
fi
[ -n "$key" ]
ok $? "a queue created inside exists inside (key $key)"
[ -n "$key" ] && ! awk 'NR > 1 { print $1 }' /proc/sysvipc/msg | grep -qx -- "$key"
ok $? "the queue made inside is not visible on the host"
# if it leaked, do not leave it behind
for id in $(awk -v k="$key" 'NR > 1 && $1 == k { print $2 }' /proc/sysvipc/msg); do ipcrm -q "$id"; done

done_testing
