#!/usr/bin/env bash
# Processes: the sandbox sees only its own pids, cannot signal, trace or inspect anything outside,
# and cannot look into its own init (a copy of the host's paddock, holding host memory).
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 24

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
unlike " $pids" ' 1 ' "init (pid 1) is not even listed (procfs hidepid=invisible)"
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
wait_for 10 pgrep -f "^$M2" >/dev/null
ok $? "control: a first sandbox is running its marker process"
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
like "$out" 'init_environ=E(ACCES|NOENT)' "/proc/1/environ (the host's environment) is unreadable"
like "$out" 'init_mem=E(ACCES|NOENT)' "/proc/1/mem is unreadable"
like "$out" 'init_root=E(ACCES|NOENT)' "/proc/1/root is not traversable"
sbt 30 -- sh -c 'cat /proc/*/environ 2>/dev/null | tr "\0" "\n"; ls /proc/1/fd 2>&1; true'
unlike "$(so)" "$TAG-secret" "no process in the sandbox exposes the host environment"
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
like "$out" 'traceme=EPERM' "ptrace(PTRACE_TRACEME) gives EPERM"
like "$out" 'attach_child=EPERM' "ptrace(PTRACE_ATTACH) on its own child gives EPERM"
like "$out" 'seize_child=EPERM.*attach_init=EPERM' "PTRACE_SEIZE and attaching to init give EPERM"
like "$out" 'vm_readv_child=EPERM' "process_vm_readv of its own child gives EPERM"
if [ -x /usr/bin/strace ]; then
  sbt 30 -- sh -c 'strace -f -o /dev/null /bin/true; echo "strace_rc=$?"'
  like "$(so)$(se)" 'strace_rc=[1-9].*Operation not permitted|Operation not permitted.*strace_rc=[1-9]' \
    "strace cannot trace inside the sandbox (EPERM)"
else
  skip "strace is not installed"
fi
if [ -x /usr/bin/gdb ]; then
  sbt 30 -- sh -c 'gdb -nx -batch -ex run /bin/true 2>&1; echo "gdb_rc=$?"'
  like "$(so)" 'ptrace: Operation not permitted' "gdb cannot run a program under ptrace inside the sandbox"
else
  skip "gdb is not installed"
fi

done_testing
