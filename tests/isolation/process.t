#!/usr/bin/env bash
# The program's process: its exit status and signals are reported faithfully, it starts with only
# fds 0, 1 and 2 and a clean environment, nothing it leaves behind (daemons) outlives the sandbox,
# and the sandbox dies with the paddock process that runs it.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 31
# gvisor: a state dir of this file's own, so that runsc_procs sees this file's sandboxes alone
gv && export PADDOCK_STATE_DIR=$TMPD/state

# --- exit codes and signals -----------------------------------------------------------------
for c in 0 1 42 255; do
  sbt 30 -- sh -c "exit $c"
  want=RE
  [ "$c" = 0 ] && want=OK
  is "$(jf status) $(jf exit_code) $(jf signal)" "$want $c 0" "exit $c is reported as $want with exit_code $c"
done
sbt 30 -- bash -c 'kill -SEGV $$'
is "$(jf status) $(jf signal)" "SG 11" "kill -SEGV \$\$ is reported as SG, signal 11"
sbt 30 -- python3 -c 'import os; os.abort()'
is "$(jf status) $(jf signal)" "SG 6" "abort() is reported as SG, signal 6"
sbt 30 -- /nonexistent/program
is "$(jf status) $(jf exit_code)" "RE 127" "a program that cannot be executed is RE with exit_code 127"
if gv; then
  like "$(jf error)" 'cannot execute /nonexistent/program' "gvisor: and the error names it (runsc reports no errno)"
else
  like "$(jf error)" 'No such file or directory' "and the error says why"
fi

# --- file descriptors --------------------------------------------------------------------------
# the host side holds pipes, sockets, the uid-slot lock and more: none may cross into the program
exec 7<"$TMPD" 8>"$TMPD/held"
sbp -- /probes/fdlist
is "$(so | sed -n 's/^count //p')" 3 "only fds 0, 1 and 2 are open in the program"
if gv; then
  # runsc donates the host's fds 0-2 to the Sentry, which shows them as host files
  like "$(so)" '^fd 0 -> host:\[[0-9]+\]
fd 1 -> host:\[[0-9]+\]
fd 2 -> host:\[[0-9]+\]
count 3$' "gvisor: fds 0, 1 and 2 are the Sentry's host-file wrappers of paddock's /dev/null and pipes"
  skip "gvisor: no audit (the Sentry's calls never reach the host's seccomp notifications)"
else
  like "$(so)" '^fd 0 -> /dev/null
fd 1 -> pipe:\[[0-9]+\]
fd 2 -> pipe:\[[0-9]+\]
count 3$' "stdin is /dev/null, stdout and stderr are pipes"
  sbt 30 --audit "${BINDP[@]}" -- /probes/fdlist
  is "$(so | sed -n 's/^count //p')" 3 "with --audit too (the notification listener stays out)"
fi
exec 7<&- 8>&-

# --- daemons do not outlive the sandbox --------------------------------------------------------
M=$TAG-daemon
sbt 30 -- bash -c 'cat /proc/self/uid_map; (setsid bash -c "exec -a '"$M"' sleep 300" </dev/null >/dev/null 2>&1 &);
  for i in $(seq 50); do pgrep -f "^'"$M"'" >/dev/null && break; sleep 0.1; done; pgrep -f "^'"$M"'" >/dev/null && echo daemon-running'
like "$(so)" 'daemon-running' "control: the double-forked, setsid daemon was running inside"
base=$(uid_base "$(so)")
! pgrep -f "^$M" >/dev/null
ok $? "after the run no process with the daemon's marker exists on the host"
if gv; then
  # the Sentry's tasks are no host processes: what could outlive it is runsc's own
  is "$(runsc_procs)" "" "gvisor: no runsc process (sandbox, gofer) of the run remains"
else
  is "$(procs_in_range "$base")" "" "no process of the sandbox's uid range ($base) remains"
fi
M2=$TAG-holder
t0=$(date +%s)
sbt 30 -- bash -c '(setsid bash -c "exec -a '"$M2"' sleep 300" &); echo started'
is "$(jf status) $(so)" "OK started" "a daemon that keeps stdout open does not hold the result back"
[ $(($(date +%s) - t0)) -lt 15 ]
ok $? "the run returned promptly"
! pgrep -f "^$M2" >/dev/null
ok $? "and that daemon is gone too"

# --- killing paddock kills the sandbox ---------------------------------------------------------
M3=$TAG-orphan
if gv; then
  # runsc dies with paddock (lib/gvisor/supervise.c), its sandbox and gofer with it; the next
  # paddock sweeps the cgroups, also those runsc made in the hierarchies paddock leaves alone
  "$PADDOCK" exec -- sleep 1000 >/dev/null 2>&1 &
  pd=$!
  cleanup "kill -9 $pd"
  sandbox() { runsc_procs | grep -q runsc-sandbox; }
  wait_for 20 sandbox
  ok $? "control: gvisor: the sandbox's runsc-sandbox process is running"
  sp=$(runsc_procs | awk '$2 ~ /^runsc-sandbox/ { print $1; exit }')
  cg=$(grep -o 'sb-[0-9a-f]\{8\}-g[0-9]*' "/proc/$sp/cgroup" 2>/dev/null | head -1)
  owner=$(cut -d- -f2 <<<"$cg")
  kill -9 "$pd"
  wait "$pd" 2>/dev/null
  wait_for 2 eval '[ -z "$(runsc_procs)" ]'
  ok $? "gvisor: within 2 s of kill -9 on paddock its runsc sandbox and gofer are gone"
  [ -n "$cg" ] && [ -e "${PADDOCK_RUN_DIR:-/run/paddock}/owners/$owner" ]
  ok $? "control: the killed paddock left its owner entry ($owner) behind"
  gvstate() { ls "$PADDOCK_STATE_DIR/gvisor" "$PADDOCK_STATE_DIR/gvisor/runsc" 2>/dev/null | grep -c -e "$cg" -e "paddock-$owner-"; }
  [ -n "$(find /sys/fs/cgroup -maxdepth 4 -name "$cg" 2>/dev/null)" ] && [ "$(gvstate)" -gt 0 ]
  ok $? "control: and its cgroup ($cg) in the hierarchies, its bundle and runsc's state ($(gvstate) entries)"
  "$PADDOCK" exec -- true
  [ -n "$cg" ] && [ -z "$(find /sys/fs/cgroup -maxdepth 4 -name "$cg" 2>/dev/null)" ] &&
    [ ! -e "${PADDOCK_RUN_DIR:-/run/paddock}/owners/$owner" ] && [ "$(gvstate)" = 0 ]
  ok $? "gvisor: the next paddock swept its cgroup ($cg) from every hierarchy, runsc's too, its bundle and runsc's state ($(gvstate) left), and forgot the owner"
else
  "$PADDOCK" exec -- bash -c 'cat /proc/self/uid_map; exec -a '"$M3"' sleep 1000' >"$TMPD/orphan.out" 2>&1 &
  pd=$!
  cleanup "kill -9 $pd"
  wait_for 10 pgrep -f "^$M3" >/dev/null
  ok $? "control: the sandboxed marker process is running"

  base=$(uid_base "$(cat "$TMPD/orphan.out")")
  cg=$(grep -o 'sb-[0-9a-f]\{8\}-[0-9]*' "/proc/$(pgrep -f "^$M3" | head -1)/cgroup" | head -1)
  owner=$(cut -d- -f2 <<<"$cg")
  kill -9 "$pd"
  wait "$pd" 2>/dev/null
  wait_for 2 eval '! pgrep -f "^$M3" >/dev/null'
  ok $? "within 2 s of kill -9 on paddock the marker process is gone"
  wait_for 2 eval '[ -z "$(procs_in_range "$base")" ]'
  ok $? "and no process of its uid range ($base) remains"
  [ -n "$cg" ] && [ -e "${PADDOCK_RUN_DIR:-/run/paddock}/owners/$owner" ]
  ok $? "control: the killed paddock left its owner entry ($owner) behind"
  "$PADDOCK" exec -- true
  [ -z "$(find /sys/fs/cgroup -maxdepth 4 -name "$cg" 2>/dev/null)" ] &&
    [ ! -e "${PADDOCK_RUN_DIR:-/run/paddock}/owners/$owner" ]
  ok $? "the next paddock swept its cgroup ($cg) and forgot the dead owner"
fi

# --- paddock processes with different state directories share the host ------------------------
# cgroups and host uids are host-wide: a paddock with another state dir must neither take a live
# sandbox's uid range nor sweep its cgroup as an orphan (the owner registry is /run/paddock)
M4=$TAG-other-state
PADDOCK_STATE_DIR=$TMPD/state-a "$PADDOCK" exec --json --quiet -- bash -c \
  'cat /proc/self/uid_map >&2; exec -a '"$M4"' sleep 3' >"$TMPD/a.json" 2>"$TMPD/a.err" &
pa=$!
cleanup "kill -9 $pa"
# gvisor: the marker is a Sentry task, no host process: A's runsc-sandbox is what runs
running_a() { if gv; then PADDOCK_STATE_DIR=$TMPD/state-a runsc_procs | grep -q runsc-sandbox; else pgrep -f "^$M4" >/dev/null; fi; }
wait_for 20 running_a
ok $? "control: a sandbox of a paddock with state dir A is running"
PADDOCK_STATE_DIR=$TMPD/state-b "$PADDOCK" exec --json --quiet -- cat /proc/self/uid_map >"$TMPD/b.json" 2>/dev/null
still=$(running_a && echo yes)
wait "$pa"
a_base=$(uid_base "$(jq -r .stderr "$TMPD/a.json")")
b_base=$(uid_base "$(jq -r .stdout "$TMPD/b.json")")
if gv; then
  is "$still" yes "gvisor: A's sandbox still ran after B's paddock (no host uid range to compare: the Sentry's ids are its own)"
else
  [ "$still" = yes ] && [ -n "$a_base" ] && [ -n "$b_base" ] && [ "$a_base" != "$b_base" ]
  ok $? "a paddock with state dir B, run meanwhile, got another uid range ($a_base, $b_base)"
fi
is "$(jq -r '.status + " " + (.exit_code|tostring)' "$TMPD/a.json")" "OK 0" \
  "A's sandbox was not swept by B: it ran to its end"

# --- environment, cwd, stdin -------------------------------------------------------------------
export SECRET_CANARY="secret-$TAG"
sbt 30 -- env
unlike "$(so)" "SECRET_CANARY|secret-$TAG" "a host variable (SECRET_CANARY) does not leak in"
is "$(so | cut -d= -f1 | sort | tr '\n' ' ')" "HOME LANG PATH TERM " "the default environment is PATH, HOME, LANG and TERM only"
sbt 30 -e K=V -e "X=a b" -- env
# both lines, in any order: gVisor's runsc does not keep the spec's order of variables
is "$(so | grep -cxE 'K=V|X=a b')" 2 "-e K=V sets variables"
unlike "$(so)" "SECRET_CANARY" "-e adds nothing from the host"
sbt 30 -C /tmp -- pwd
is "$(so)" "/tmp" "-C /tmp sets the working directory"
printf 'line one\nline two\n' >"$TMPD/stdin"
sbt 30 --stdin "$TMPD/stdin" -- sh -c 'wc -l; echo done'
is "$(so)" "2
done" "--stdin FILE feeds the file"
unset SECRET_CANARY

done_testing
