# Helpers shared by the isolation test files (tests/isolation/*.t). Source after ../lib.sh.
#   sbt SECS ARGS...     like sb, bounded: the paddock process is killed after SECS seconds
#   sbp ARGS...          sb with the probes bound read-only at /probes
#   so                   stdout of the last result;  se  stderr of it
#   plan N               as lib.sh's, and the file fails at exit if it ran another number of tests
#   skip REASON          a passing "ok N # skip REASON" line
#   cleanup CMD          run CMD (a string) when the file exits, last registered first
#   uid_base TEXT        the host uid of sandbox root from a "0 BASE 65536" uid_map line in TEXT
#   procs_in_range BASE  host processes (not zombies) whose uid lies in [BASE, BASE+65536): "uid pid args"
#   wait_for SECS CMD... polls CMD every 0.1 s until it succeeds (0) or SECS pass (1)
#   runsc_procs          gvisor: runsc's host processes under this file's state dir ("pid args")
#   host_canary MARKER   starts `sleep 300` on the host whose argv[0] is MARKER; sets CANARY_PID
# The tier: PADDOCK_ISO_TIER=container (the default) or gvisor. Under gvisor every `paddock exec`
# of the file (sbt, and the direct "$PADDOCK" exec calls) gets `--isolation gvisor`: $PADDOCK is
# then a wrapper that adds it and execs the real binary (same pid, so kill and wait still reach
# paddock itself). tests/run-all runs a file marked "# tiers: container gvisor" once per tier.
#   TIER                 container or gvisor
#   gv                   true under the gvisor tier
#   gvskip REASON        under gvisor: a skip saying why gVisor answers otherwise (returns 0),
#                        else returns 1 so that the container check runs: gvskip "..." || is ...
set -u
export LC_ALL=C
case $PROBES in /*) PROBES_ABS=$PROBES ;; *) PROBES_ABS=$PWD/$PROBES ;; esac
BINDP=(--bind "$PROBES_ABS:/probes")
# a tag unique to this run of this file, for markers and host paths
TAG=pdk-iso-$$-$RANDOM
TMPD=$(mktemp -d "/tmp/$TAG.XXXXXX")
chmod 755 "$TMPD"

TIER=${PADDOCK_ISO_TIER:-container}
gv() { [ "$TIER" = gvisor ]; }
case $TIER in
  container) PADDOCK_REAL=$PADDOCK ;;
  gvisor)
    if [ ! -x /usr/bin/runsc ]; then
      rm -rf "$TMPD"
      echo "1..0 # SKIP runsc is not installed"
      exit 0
    fi
    case $PADDOCK in /*) PADDOCK_REAL=$PADDOCK ;; *) PADDOCK_REAL=$PWD/$PADDOCK ;; esac
    printf '#!/bin/sh\nif [ "$1" = exec ]; then shift; exec "%s" exec --isolation gvisor "$@"; fi\nexec "%s" "$@"\n' \
      "$PADDOCK_REAL" "$PADDOCK_REAL" >"$TMPD/paddock"
    chmod 755 "$TMPD/paddock"
    PADDOCK=$TMPD/paddock
    ;;
  *)
    echo "Bail out! PADDOCK_ISO_TIER=$TIER: container or gvisor"
    exit 1
    ;;
esac

_cleanups=()
_planned=""
plan() { _planned=$1; echo "1..$1"; }
cleanup() { _cleanups+=("$1"); }
_run_cleanups() {
  local rc=$? i
  for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[$i]}" >/dev/null 2>&1; done
  rm -rf "$TMPD"
  san_verdict || rc=1
  if [ -n "$_planned" ] && [ "$_n" != "$_planned" ]; then
    diag "planned $_planned tests but ran $_n"
    exit 1
  fi
  exit "$rc"
}
trap _run_cleanups EXIT
trap 'exit 130' INT TERM

skip() { _n=$((_n + 1)); echo "ok $_n # skip $*"; }
gvskip() { gv || return 1; skip "gvisor: $*"; }

sbt() {
  local secs=$1
  shift
  OUT=$(timeout -k 3 "$secs" "$PADDOCK" exec --json --quiet "$@" 2>"$TMPD/stderr")
  RC=$?
  san_check "$TMPD/stderr"
  if [ -z "$OUT" ]; then
    OUT='{}'
    diag "paddock printed no result (exit $RC): $(head -c 300 "$TMPD/stderr")"
  fi
}
sbp() { sbt 60 "${BINDP[@]}" "$@"; }
so() { jq -j '.stdout // empty' <<<"$OUT"; }
se() { jq -j '.stderr // empty' <<<"$OUT"; }

uid_base() { awk '$1 == 0 && $3 == 65536 { print $2; exit }' <<<"$1"; }

procs_in_range() {
  local base=$1
  ps -eo uid=,stat=,pid=,args= | awk -v lo="$base" -v hi=$((base + 65536)) \
    '$1 >= lo && $1 < hi && $2 !~ /^Z/ { print }'
}

wait_for() {
  local secs=$1 i
  shift
  for ((i = 0; i < secs * 10; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  "$@"
}

# gvisor: the host processes of runsc (runsc, its gofer and sandbox) under this file's state dir
runsc_procs() { pgrep -af -- "--root=${PADDOCK_STATE_DIR:-/var/lib/paddock}/gvisor/runsc( |$)"; }

host_canary() {
  bash -c "exec -a '$1' sleep 300" </dev/null >/dev/null 2>&1 &
  CANARY_PID=$!
  disown "$CANARY_PID"
  cleanup "kill -9 $CANARY_PID"
  wait_for 5 pgrep -f "^$1" >/dev/null
}

# every probe this catalogue uses must have been built (make ... build/probes/NAME)
for _p in trysys fdlist chroot_escape foreign_abi ptrace_probe selfexe status; do
  [ -x "$PROBES/$_p" ] || diag "missing probe $PROBES/$_p: build it with make $PROBES/$_p"
done
