#!/usr/bin/env bash
# Prometheus' own checks (issue 39): `promtool check metrics` on a live daemon's /metrics, its
# naming lints included (base units: `_seconds`, never `_ms`), after a run and a judged submission
# so that every family the judge and the jobs add is there; and `promtool check rules` on every
# rule file of contrib/prometheus/. promtool is Debian's prometheus package (make deps); where it
# is absent the file skips with the reason.
source "$(dirname "$0")/api.sh"
plan 5

if ! command -v promtool >/dev/null; then
  for i in 1 2 3 4 5; do skip "promtool is not installed (apt-get install prometheus; make deps)"; done
  exit 0
fi

start_daemon --problems examples/problems
ok $? "daemon started with --problems examples/problems"
post_json /v1/runs '{"language":"python","code":"print(1)"}'
post_json /v1/judge '{"problem_id":"sum","language":"python","code":"a, b = map(int, input().split())\nprint(a + b)\n"}'
is "$CODE" 200 "a run and a judged submission (the families they feed have samples)"

curl -s -m 10 "$U/metrics" >"$TMPD/metrics.txt"
out=$(promtool check metrics <"$TMPD/metrics.txt" 2>&1)
rc=$?
is "$rc|$out" "0|" "promtool check metrics: no problem, its unit lints included"
bad=$(grep -Eo '^paddock_[a-z0-9_]*_(ms|us|millis|kb|mb)(_total)?\b' "$TMPD/metrics.txt" | sort -u | tr '\n' ' ')
is "$bad" "" "no metric named in ms, us, kb or mb"

out=""
rc=0
for f in contrib/prometheus/*.yml; do
  o=$(promtool check rules "$f" 2>&1) || rc=1
  out="$out $f: $(tail -1 <<<"$o" | sed 's/^ *//')"
done
is "$rc" 0 "promtool check rules contrib/prometheus/*.yml ($out)"
