#!/usr/bin/env bash
# The speed guard of issue 42: `paddock bench --guard` measures, in alternating rounds, the CPU of
# `paddock exec -- /bin/true` against bwrap's and the daemon's own CPU per POST /run_code against
# a spawn of /bin/true, and fails when the lowest of 5 rounds is past 25% over the baselines below
# (the figures of docs/benchmarks.md, "The guard"). CPU-time ratios, each side alternating with
# its reference op by op; load only ever adds to a round, so the lowest round is the one judged.
# A regression is measured again once before it fails the file, so that one unlucky stretch of a
# shared machine cannot; a real one reproduces.
source "$(dirname "$0")/../lib.sh"
plan 6

BASE_CLI=1.42    # paddock exec CPU / bwrap CPU
BASE_DAEMON=1.40 # daemon CPU per /run_code / CPU of spawning /bin/true

guard() { "$PADDOCK" bench --guard --rounds 5 --iterations 20 "$@" 2>&1; }

out=$(guard --baseline "$BASE_CLI,$BASE_DAEMON"); rc=$?
if [ $rc = 1 ]; then
  diag "a regression on the first measure; measured again:"
  while IFS= read -r l; do diag "$l"; done <<<"$out"
  out=$(guard --baseline "$BASE_CLI,$BASE_DAEMON"); rc=$?
fi
while IFS= read -r l; do diag "$l"; done <<<"$out"
is "$rc" 0 "within 25% of the baselines ($BASE_CLI, $BASE_DAEMON)"
if ! command -v bwrap >/dev/null; then
  ok 0 "the CLI against bwrap was measured and judged # SKIP bwrap not installed"
elif [[ $out == *"not judged: no task clock"* ]]; then
  ok 0 "the CLI against bwrap was measured and judged # SKIP perf events refused here (no task clock)"
else
  like "$out" "paddock exec CPU / bwrap CPU .*lowest [0-9.]+, median [0-9.]+.*: ok" "the CLI against bwrap was measured and judged"
fi
like "$out" "daemon CPU per /run_code / floor CPU +lowest [0-9.]+, median [0-9.]+.*: ok" "the daemon's CPU per request was measured and judged"

# a `paddock exec` is one process start: libseccomp and jansson are linked in where their archives
# are installed (Makefile STATIC_LIBS), so the loader maps and relocates no shared object for them
if [ -e "$(cc -print-file-name=libseccomp.a)" ] && [ -e "$(cc -print-file-name=libjansson.a)" ]; then
  unlike "$(ldd "$PADDOCK" 2>&1)" "libseccomp|libjansson" "the paddock binary loads neither libseccomp nor jansson at start"
else
  ok 0 "the paddock binary loads neither libseccomp nor jansson at start # SKIP their archives are not installed"
fi

# cgroup v1: init moves itself into its cgroups (their `tasks` files, handed over by the host); a
# move by the host (cgroup.procs) waits for an RCU grace period, 6-17 ms of a loaded machine
if [ -d /sys/fs/cgroup/memory/paddock ] && command -v strace >/dev/null; then
  st=$(mktemp); strace -f -e trace=openat -o "$st" "$PADDOCK" exec -q -- /bin/true
  moved=$(grep -c '/sb-[^/"]*/cgroup.procs", O_WRONLY' "$st"); joined=$(grep -c '/sb-[^/"]*/tasks", O_WRONLY' "$st")
  rm -f "$st"
  ok "$([ "$moved" = 0 ] && [ "$joined" -ge 1 ]; echo $?)" "v1: no task moved into a sandbox's cgroups by the host ($moved), init joins them ($joined files)"
else
  ok 0 "v1: init joins its cgroups itself # SKIP not a cgroup v1 host, or no strace"
fi

# control: the guard can fail (a baseline far below what this build does)
out=$(guard --rounds 1 --iterations 5 --baseline 0.05,0.05); rc=$?
is "$rc" 1 "a build 20x past its baseline fails the guard (exit 1)"
done_testing
