#!/usr/bin/env bash
# paddock bench --http, --judge, --goodput and --memory-verdict: their options (bad ones refused with exit 64, --help), and a short real run of
# several rounds (an in-process daemon, python on the host and in sandboxes): every round reports
# its two ratios, the table gives the medians, and no operation failed. No timing is asserted.
source "$(dirname "$0")/api.sh"
plan 28

out=$("$PADDOCK" bench --http --bogus 2>&1); rc=$?
is "$rc" 64 "an unknown option: exit 64"
like "$out" "takes --iterations, --duration and --rounds" "... naming the options it takes"
out=$("$PADDOCK" bench --http --rounds 0 2>&1); rc=$?
is "$rc $out" "64 paddock: bench --http: --rounds: '0' is not a count from 1 to 100" "--rounds 0: refused"
out=$("$PADDOCK" bench --http -d 100ms 2>&1); rc=$?
is "$rc" 64 "--duration under 500ms: refused"
out=$("$PADDOCK" bench --http -n 5 2>&1); rc=$?
is "$rc" 64 "--iterations under 10: refused"
out=$("$PADDOCK" bench --http stray 2>&1); rc=$?
is "$rc $out" "64 paddock: bench --http: unexpected argument 'stray'" "a stray argument: refused"
out=$("$PADDOCK" bench --http --help 2>&1); rc=$?
is "$rc" 0 "--http --help: exit 0"
like "$out" "--rounds N" "... and the usage names --rounds"

out=$("$PADDOCK" bench --http -n 10 -d 500ms --rounds 2 2>&1); rc=$?
is "$rc" 0 "a 2-round run: exit 0 (every operation succeeded)"
is "$(grep -cE '^round [12]/2: /run_code p50 [0-9.]+x the floor.s, throughput at 2 clients [0-9.]+x' <<<"$out")" 2 \
  "one line per round with its two ratios"
like "$out" "medians of the 2 rounds" "the table is of the rounds' medians"
fails=$(awk '/^POST \/run_code/ {print $NF}' <<<"$out")
is "$fails" 0 "the /run_code row counts no failed request"
like "$out" "over 2 rounds: /run_code p50 = [0-9.]+x the floor's \([0-9.]+x-[0-9.]+x; .*throughput at 2 clients = [0-9.]+x the floor's \([0-9.]+x-[0-9.]+x" \
  "the summary gives medians and ranges"
like "$out" "paddock's own CPU per /run_code: [0-9]+\.[0-9]{3} ms" "paddock's own CPU per request is reported"
cpu=$(grep -oE "own CPU per /run_code: [0-9.]+" <<<"$out" | grep -oE '[0-9.]+$')
ok "$(awk -v c="$cpu" 'BEGIN { exit !(c > 0) }' && echo 0 || echo 1)" "... and it is not zero ($cpu ms)"

# paddock bench --judge: options refused, and one short round of every cell (no timing asserted)
out=$("$PADDOCK" bench --judge --rounds 0 2>&1); rc=$?
is "$rc $out" "64 paddock: bench --judge: --rounds: '0' is not a count from 1 to 100" "--judge --rounds 0: refused"
out=$("$PADDOCK" bench --judge -d 1 --rounds 1 2>&1); rc=$?
is "$rc" 0 "--judge, one round: exit 0 (every judged submission passed, every output matched)"
is "$(grep -cE '^  (cpp20|py20|2 clients|grpo mix).* [0-9.]+x  \(rounds' <<<"$out")" 7 \
  "the ratios: cpp20 vs verl's way, py20 vs the floor and bwrap, 2 clients, the GRPO mix's cache, the two audit cells"
like "$out" "grpo cache on [0-9.]+/s \([1-9][0-9]* hits\)" "the GRPO mix's duplicates hit the cache"

# paddock bench --goodput and --memory-verdict: options refused, and a tiny run of each (a daemon of
# their own; the figures are printed, not asserted)
out=$("$PADDOCK" bench --goodput --loads 0 2>&1); rc=$?
is "$rc" 64 "--goodput --loads 0: refused"
out=$("$PADDOCK" bench --goodput --against /nonexistent 2>&1); rc=$?
is "$rc $out" "64 paddock: bench --goodput: --against: '/nonexistent' is not an executable" "--against a missing build: refused"
out=$("$PADDOCK" bench --goodput --bogus 2>&1); rc=$?
is "$rc" 64 "--goodput with an unknown option: exit 64"
out=$("$PADDOCK" bench --goodput --help 2>&1); rc=$?
like "$rc $out" "^0 .*--memory-verdict" "--goodput --help: exit 0, the usage names --memory-verdict"
out=$("$PADDOCK" bench --goodput -d 1 --loads 1,3 --job-cpu 50ms --deadline 2 2>&1); rc=$?
is "$rc" 0 "a tiny --goodput run: exit 0"
like "$out" "capacity [0-9.]+ jobs/s \([0-9]+ closed-loop clients\)" "... it measured the capacity"
is "$(grep -cE '^  (1x|3x) +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[01]\.[0-9]{3} +[01]\.[0-9]{3} +([0-9.]+|never) +([0-9.]+|never) +[0-9]+ +[0-9]+$' <<<"$out")" 2 \
  "... and printed a row per load (offered, refused, accepted, in time, shares, recovery, lost, unavoidable)"
out=$("$PADDOCK" bench --memory-verdict 2>&1); rc=$?
is "$rc" 0 "--memory-verdict: exit 0"
is "$(grep -cE '^  (memory verdict, [18] at once: [0-9]+ of (3|24) ML|time verdict, infinite loop at 1 s: [0-9]+ of 5 TO)' <<<"$out")" 3 \
  "... a line for 1 and 8 at once and one for the infinite loop"
