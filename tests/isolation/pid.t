#!/usr/bin/env bash
# Processes: the sandbox sees only its own pids, cannot signal, trace or inspect anything outside,
# and cannot look into its own init (a copy of the host's paddock, holding host memory).
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 24
# gvisor: a state dir of this file's own, so that runsc_procs sees this file's sandboxes alone
gv && export PADDOCK_STATE_DIR=$TMPD/state

MARK=$TAG-canary
host_canary "$MARK"
CP=$CANARY_PID
kill -0 "$CP" 2>/dev/null
ok $? "control: host canary $CP is running"

# --- visibility -----------------------------------------------------------------------------
sbt 30 -- bash -c '
  echo "self=$$"
  for d in /proc/[0-9]*; do echo "pid=${d#/proc/}"; done
  for f in /proc/[0-9]*/cmdline; do
    a=$(tr "\0" "\n" <"$f" 2>/dev/null | head -n 1)
    [ "$a" = "'"$MARK"'" ] && echo "sees=$f"
  done
  [ -e /proc/'"$CP"' ] && echo "canary_proc=present"
  kill -0 '"$CP"' 2>/dev/null && echo "signal0=delivered"
  kill -KILL '"$CP"' 2>/dev/null && echo "sigkill=delivered"
  true'
is "$(jf status)" OK "visibility script ran"
pids=$(so | sed -n 's/^pid=//p' | sort -n | tr '\n' ' ')
self=$(so | sed -n 's/^self=//p')
like "$pids" '^([0-9]+ ){1,6}$' "only a handful of sandbox pids in /proc ($pids)"
if gv; then
  is "$self" 1 "gvisor: pid 1 is the program itself (runsc runs no init of the host's)"
else
  unlike " $pids" ' 1 ' "init (pid 1) is not even listed (procfs hidepid=invisible)"
fi
[ -n "$self" ] && [ "$self" -lt 20 ]
ok $? "the program's own pid is small ($self)"
max=$(so | sed -n 's/^pid=//p' | sort -n | tail -1)
[ -n "$max" ] && [ "$max" -lt 100 ]
ok $? "no host-sized pid number in /proc (largest $max)"
unlike "$(so)" 'sees=|canary_proc=present' "the host canary is not visible in /proc"
unlike "$(so)" 'signal0=delivered|sigkill=delivered' "kill of the host canary's pid reaches nothing"
kill -0 "$CP" 2>/dev/null
ok $? "host canary is still alive after the sandbox tried to kill it"

# --- another sandbox is as invisible as the host ------------------------------------------
M2=$TAG-other
"$PADDOCK" exec -- bash -c 'echo other > /tmp/'"$M2"'; exec -a '"$M2"' sleep 5' >/dev/null 2>&1 &
other=$!
cleanup "kill -9 $other"
if gv; then
  # the Sentry's tasks are no host processes (pgrep cannot see the marker): its runsc is what runs
  wait_for 20 eval '[ -n "$(runsc_procs | grep runsc-sandbox)" ]'
  ok $? "control: a first sandbox is running (gvisor: its runsc-sandbox process on the host)"
else
  wait_for 10 pgrep -f "^$M2" >/dev/null
  ok $? "control: a first sandbox is running its marker process"
fi
op=$(pgrep -f "^$M2" | head -1)
sbt 30 -- sh -c 'for f in /proc/[0-9]*/cmdline; do tr "\0" "\n" <"$f" | head -n 1; done | grep -c "^'"$TAG"'-oth""er$";
  ls /tmp; kill -0 '"$op"' 2>/dev/null && echo signalled; true'
is "$(so)" "0" "a second sandbox sees neither the first one's processes nor its /tmp, and cannot signal it"
kill -9 "$other" 2>/dev/null
wait "$other" 2>/dev/null

# --- the sandbox's init: non-dumpable, holds host memory (environment, argv) -------------------
SECRET_CANARY=$TAG-secret
export SECRET_CANARY
sbp -- /probes/selfexe
out=$(so)
if gv; then
  # runsc runs no init: pid 1 is the program, whose environ, mem and root are its own
  sbt 30 -- sh -c 'echo $$; tr "\0" "\n" </proc/1/environ'
  is "$(so | head -1)" 1 "gvisor: pid 1 is the program itself, so /proc/1 is its own (no init holding host memory)"
  unlike "$(so)" "SECRET_CANARY" "gvisor: /proc/1/environ is the program's environment, no host variable"
  like "$out" 'init_root=OK' "gvisor: /proc/1/root is the program's own root"
else
  like "$out" 'init_environ=E(ACCES|NOENT)' "/proc/1/environ (the host's environment) is unreadable"
  like "$out" 'init_mem=E(ACCES|NOENT)' "/proc/1/mem is unreadable"
  like "$out" 'init_root=E(ACCES|NOENT)' "/proc/1/root is not traversable"
fi
sbt 30 -- sh -c 'cat /proc/*/environ 2>/dev/null | tr "\0" "\n"; ls /proc/1/fd 2>&1; true'
unlike "$(so)" "$TAG-secret" "no process in the sandbox exposes the host environment"
gvskip "pid 1 is the program itself: /proc/1/fd lists its own fds" ||
  like "$(so)" 'Permission denied|No such file' "init's open fds (/proc/1/fd) are not listable"

# init is a copy of the host process: its argv (here paddock's own command line, with a host path
# the program is never given) must not be readable either
sbt 30 --result "$TMPD/$TAG-hostpath.json" -- sh -c 'for f in /proc/[0-9]*/cmdline; do tr "\0" "\n" <"$f"; done >/tmp/all;
  grep -c "'"$TAG"'-host""path" /tmp/all'
[ -s "$TMPD/$TAG-hostpath.json" ]
ok $? "control: paddock ran with --result $TMPD/$TAG-hostpath.json"
is "$(so)" 0 "the host process's command line (init's /proc/1/cmdline) does not reveal host arguments"

# --- tracing ---------------------------------------------------------------------------------
sbp -- /probes/ptrace_probe
out=$(so)
if gv; then
  # the Sentry implements ptrace among its own tasks: the host's ptrace is never called
  like "$out" 'traceme=OK' "gvisor: PTRACE_TRACEME succeeds (the Sentry's own ptrace, among its tasks)"
  like "$out" 'attach_child=OK' "gvisor: PTRACE_ATTACH on its own child succeeds (the Sentry's ptrace)"
  like "$out" 'seize_child=EPERM.*attach_init=EPERM' "PTRACE_SEIZE (child traced already) and attaching to init give EPERM"
  like "$out" 'vm_readv_child=ENOSYS' "gvisor: process_vm_readv is not implemented by the Sentry (ENOSYS)"
else
  like "$out" 'traceme=EPERM' "ptrace(PTRACE_TRACEME) gives EPERM"
  like "$out" 'attach_child=EPERM' "ptrace(PTRACE_ATTACH) on its own child gives EPERM"
  like "$out" 'seize_child=EPERM.*attach_init=EPERM' "PTRACE_SEIZE and attaching to init give EPERM"
  like "$out" 'vm_readv_child=EPERM' "process_vm_readv of its own child gives EPERM"
fi
if [ -x /usr/bin/strace ] && gv; then
  sbt 30 -- sh -c 'strace -f -o /dev/null /bin/true; echo "strace_rc=$?"'
  is "$(so)" strace_rc=0 "gvisor: strace works inside (the Sentry's ptrace; no host ptrace)"
elif [ -x /usr/bin/strace ]; then
  sbt 30 -- sh -c 'strace -f -o /dev/null /bin/true; echo "strace_rc=$?"'
  like "$(so)$(se)" 'strace_rc=[1-9].*Operation not permitted|Operation not permitted.*strace_rc=[1-9]' \
    "strace cannot trace inside the sandbox (EPERM)"
else
  skip "strace is not installed"
fi
if [ -x /usr/bin/gdb ] && gv; then
  skip "gvisor: gdb runs under the Sentry's own ptrace (no host ptrace), as strace above"
elif [ -x /usr/bin/gdb ]; then
  sbt 30 -- sh -c 'gdb -nx -batch -ex run /bin/true 2>&1; echo "gdb_rc=$?"'
  like "$(so)" 'ptrace: Operation not permitted' "gdb cannot run a program under ptrace inside the sandbox"
else
  skip "gdb is not installed"
fi

done_testing
