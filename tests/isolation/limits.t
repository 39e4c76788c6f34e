#!/usr/bin/env bash
# Limits: memory (ML), processes (a fork bomb stays inside its pids budget and the host stays
# responsive), CPU and wall time (TO, and every process of the sandbox is gone afterwards),
# rlimits (open files, file size, no core dumps) and output (OL with bounded memory in paddock).
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 32

gone() {  # gone BASE MARKER: no live host process in the sandbox's uid range nor with the marker
  # gvisor: no uid range (the Sentry's ids are its own): none of runsc's processes may be left
  if gv; then wait_for 5 eval '[ -z "$(runsc_procs)" ]' && ! pgrep -f "^$2" >/dev/null; return; fi
  [ -n "$1" ] && [ -z "$(procs_in_range "$1")" ] && ! pgrep -f "^$2" >/dev/null
}
# gvisor: a state dir of this file's own, so that runsc_procs sees this file's sandboxes alone
gv && export PADDOCK_STATE_DIR=$TMPD/state

# --- memory ------------------------------------------------------------------------------------
sbt 60 -m 64M -- python3 -c 'x = b"\x01" * (200 << 20); print("survived")'
is "$(jf status)" ML "-m 64M, allocating 200 MB: status ML"
is "$(jf oom_killed)" true "the result records the OOM kill"
is "$(so)" "" "the allocation did not succeed"
peak=$(jf memory_peak_bytes)
[ -n "$peak" ] && [ "$peak" -le $((64 << 20)) ]
ok $? "peak memory is within 64 MiB ($peak)"

if gv; then
  # the Sentry shows 0 inside; what the host's OOM killer reads is the sandbox process's value
  "$PADDOCK" exec --quiet -w 5 -- sleep 30 >/dev/null 2>&1 &
  slp=$!
  adj() { local p; p=$(runsc_procs | awk '$2 ~ /^runsc-sandbox/ { print $1; exit }'); [ -n "$p" ] && cat "/proc/$p/oom_score_adj"; }
  # runsc sets it once its sandbox process has started
  wait_for 20 eval '[ "$(adj)" = 1000 ]'
  is "$(adj)" 1000 "gvisor: the host's OOM killer takes the sandbox first (runsc-sandbox's oom_score_adj 1000)"
  wait "$slp"
else
  sbt 30 -- sh -c 'cat /proc/self/oom_score_adj; sh -c "cat /proc/self/oom_score_adj"'
  is "$(so | tr '\n' ' ')" "1000 1000 " "the OOM killer takes programs first (oom_score_adj 1000, children too)"
fi

# --- fork bomb -------------------------------------------------------------------------------
M=$TAG-bomb
( timeout -k 3 60 "$PADDOCK" exec --json --quiet -p 64 -w 3 -- bash -c \
    'cat /proc/self/uid_map; (exec -a '"$M"' sleep 100) & :(){ :|:& };:; exec sleep 2' >"$TMPD/bomb.json" 2>/dev/null
  echo $? >"$TMPD/bomb.rc" ) &
bomb=$!
sleep 1
worst=0
for i in 1 2 3; do
  t0=$(date +%s%N)
  timeout 10 true
  t=$((($(date +%s%N) - t0) / 1000000))
  [ "$t" -gt "$worst" ] && worst=$t
  sleep 0.3
done
[ "$worst" -lt 5000 ]
ok $? "the host stays responsive during the bomb (slowest 'true' took ${worst} ms)"
wait "$bomb"
OUT=$(cat "$TMPD/bomb.json")
[ -n "$OUT" ] || OUT='{}'
[ "$(cat "$TMPD/bomb.rc")" != 124 ] && [ "$(jf status)" != null ]
ok $? "the fork bomb's run returns a result (status $(jf status))"
like "$(jf status)" '^(OK|RE|TO)$' "the bomb ends as OK, RE or TO (not XX)"
pp=$(jf pids_peak)
[ "$pp" -ge 8 ] && [ "$pp" -le 64 ]
ok $? "pids_peak stays within -p 64 ($pp) and shows the bomb ran"
base=$(uid_base "$(so)")
gone "$base" "$M"
ok $? "no process of the bomb's uid range ($base) or marker is left"

# --- CPU and wall time ---------------------------------------------------------------------
M=$TAG-cpu
sbt 60 -t 1 -- bash -c 'cat /proc/self/uid_map; (exec -a '"$M"' sleep 100) & while :; do :; done'
is "$(jf status)" TO "-t 1 with a busy loop: status TO"
cpu=$(jf cpu_ms)
wall=$(jf wall_ms)
[ "$cpu" -ge 900 ] && [ "$wall" -lt 10000 ]
ok $? "it was stopped after about 1 s of CPU (cpu $cpu ms, wall $wall ms)"
base=$(uid_base "$(so)")
gone "$base" "$M"
ok $? "after the CPU TO every process of the sandbox is gone (uid range $base, marker)"
M=$TAG-wall
sbt 60 -w 1 -- bash -c 'cat /proc/self/uid_map; (exec -a '"$M"' sleep 100) & sleep 10'
is "$(jf status)" TO "-w 1 with sleep 10: status TO"
wall=$(jf wall_ms)
[ "$wall" -ge 900 ] && [ "$wall" -lt 5000 ]
ok $? "it was stopped after about 1 s of wall time ($wall ms)"
base=$(uid_base "$(so)")
gone "$base" "$M"
ok $? "after the wall TO every process of the sandbox is gone (uid range $base, marker)"

# --- rlimits ------------------------------------------------------------------------------------
sbt 30 --nofile 50 -- bash -c 'echo "$(ulimit -Sn) $(ulimit -Hn)"; python3 -c "
import os
fds = []
try:
    for i in range(100): fds.append(os.open(\"/dev/null\", os.O_RDONLY))
except OSError as e:
    print(len(fds), e.errno)"'
is "$(so | head -1)" "50 50" "--nofile 50: soft and hard RLIMIT_NOFILE are 50"
like "$(so | tail -1)" '^4[5-7] 24$' "opening past 50 files fails with EMFILE"
sbt 30 --fsize 1M -- bash -c 'dd if=/dev/zero of=/tmp/f bs=1M count=2 2>/dev/null; echo "rc=$?";
  echo "size=$(wc -c </tmp/f)"; trap "" XFSZ; dd if=/dev/zero of=/tmp/g bs=1M count=2 2>&1 | grep -o "File too large"'
like "$(so)" 'rc=153
size=1048576
File too large' "--fsize 1M: a 2M write is stopped at 1 MiB (SIGXFSZ, or EFBIG when ignored)"
sbt 30 -- bash -c 'echo "$(ulimit -Sc) $(ulimit -Hc)"'
is "$(so)" "0 0" "core dumps are off: RLIMIT_CORE soft and hard are 0"
sbt 30 -C /tmp -- bash -c 'python3 -c "import os; os.abort()"; echo "rc=$?"; ls -A /tmp'
is "$(so)" "rc=134" "an abort leaves no core file"
sbt 30 --fsize 1M -- dd if=/dev/zero of=/tmp/f bs=1M count=2
is "$(jf status) $(jf signal)" "SG 25" "a program killed by SIGXFSZ is reported SG 25"

# --- without --json: a line on stderr says why the program failed, and the exit status is 1 -----
said() {  # said WANT ARGS...: paddock exec ARGS (no --json); the last line of its stderr and its status
  local want=$1; shift
  timeout -k 3 60 "$PADDOCK" exec --quiet "$@" >/dev/null 2>"$TMPD/said"; local rc=$?
  is "$rc|$(tail -1 "$TMPD/said")" "1|$want" "without --json: $want"
}
said "paddock exec: timed out after 1.0 s (wall)" -w 1 -- sleep 30
said "paddock exec: timed out after 1.0 s of CPU time (cpu)" -t 1 -- sh -c 'while :; do :; done'
said "paddock exec: killed by signal 11 (SIGSEGV)" -- sh -c 'kill -SEGV $$'
said "paddock exec: killed at the memory limit (64 MiB)" -m 64M -- python3 -c 'x = b"\x01" * (200 << 20)'
# a program that exits non-zero speaks for itself: paddock adds nothing to its stderr
timeout -k 3 60 "$PADDOCK" exec -- sh -c 'echo own >&2; exit 3' >/dev/null 2>"$TMPD/said"
is "$?|$(cat "$TMPD/said")" "1|own" "without --json: an RE's stderr is the program's alone"

# --- output --------------------------------------------------------------------------------
if [ -x /usr/bin/time ]; then
  timeout -k 3 60 /usr/bin/time -v -o "$TMPD/time" "$PADDOCK" exec --json -- yes >"$TMPD/yes.json" 2>/dev/null
  rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMPD/time")
else
  timeout -k 3 60 "$PADDOCK" exec --json -- yes >"$TMPD/yes.json" 2>/dev/null
  rss=""
fi
OUT=$(cat "$TMPD/yes.json")
[ -n "$OUT" ] || OUT='{}'
is "$(jf status)" OL "yes: status OL"
is "$(jf stdout_truncated)" true "yes: stdout_truncated is true"
tot=$(jf stdout_bytes)
[ "$tot" -gt $((8 << 20)) ]
ok $? "yes: the total written is counted ($tot bytes)"
size=$(stat -c %s "$TMPD/yes.json")
[ "$size" -lt $((4 << 20)) ]
ok $? "yes: the JSON result is small ($size bytes < 4 MiB)"
if [ -n "$rss" ]; then
  [ "$rss" -lt $((48 << 10)) ]
  ok $? "yes: paddock's own max RSS stays bounded (${rss} KiB < 48 MiB)"
else
  skip "/usr/bin/time is not installed"
fi

done_testing
