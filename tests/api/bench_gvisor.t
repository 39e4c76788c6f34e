#!/usr/bin/env bash
# paddock bench --only gvisor: the two tiers' cells print side by side with their ratios (gvisor
# against container, against runsc do alone), and the bench ends; every gvisor cell is bounded
# (--cell-timeout): a latency phase that would take minutes stops at its bound and says so. No
# timing is asserted.
source "$(dirname "$0")/api.sh"
[ -x /usr/bin/runsc ] || { echo "1..0 # SKIP runsc is not installed"; exit 0; }
plan 12

out=$("$PADDOCK" bench --only gvisor --cell-timeout 0 2>&1); rc=$?
is "$rc" 64 "--cell-timeout under 1 s: refused"
out=$("$PADDOCK" bench --help 2>&1)
like "$out" "--cell-timeout T" "--help names --cell-timeout ..."
like "$out" "gvisor +\(only with --only gvisor\)" "... and the gvisor cells"

out=$("$PADDOCK" bench --only gvisor -n 2 -d 500ms 2>&1); rc=$?
is "$rc" 0 "a short --only gvisor run ends with exit 0 (no operation failed)"
is "$(grep -cE '^(container|gvisor) (create\+destroy|pd_run /bin/true|pool warm exec) +[0-9.]+ +[0-9.]+ +[0-9.]+ ' <<<"$out")" 6 \
  "create+destroy, cold pd_run and warm pool exec: a latency row for each tier"
like "$out" $'\nrunsc do /bin/true \\(alone\\) +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+ ' "runsc do alone: latency and throughput"
is "$(grep -cE '^(container|gvisor) pool throughput +— +— +— +[0-9]+ +[0-9]+ ' <<<"$out")" 2 \
  "pool throughput at 1 and 2 workers for each tier"
is "$(grep -cE '^  gv-(create|run|pool): p50 container [0-9.]+ ms, gvisor [0-9.]+ ms: [0-9.]+x the container.s$' <<<"$out")" 3 \
  "gvisor's p50 against the container's, for create, cold run and warm exec"
like "$out" "gv-run: p50 runsc do alone [0-9.]+ ms: paddock's gvisor run [0-9.]+x runsc do's" "the cold run against runsc do alone"
like "$out" "gv-pool-tp 2w: container [0-9.]+/s, gvisor [0-9.]+/s: [0-9.]+x the container's" "throughput at 2 workers as a ratio"

# a gvisor create+destroy takes 0.3-2 s here: 50 of them would take up to minutes, the 5 s bound
# stops the latency phase after a few and the report says so
out=$("$PADDOCK" bench --only gv-create --cell-timeout 5 -n 50 --json 2>&1); rc=$?
is "$rc" 0 "a bounded cell ends the bench with exit 0 (what was measured is OK)"
is "$(jq -r '.cases[0] | "\(.key) \(.latency_cut) \(.bound_s) \(.latency_ms.n >= 1 and .latency_ms.n < 50)"' <<<"$out")" "gv-create true 5 true" \
  "the JSON says the latency phase was cut at its bound, with fewer than the 50 operations asked"

left=$(pgrep -c -f 'runsc.*paddock-' || true)
diag "runsc processes of paddock sandboxes left on the host: $left"
