#!/usr/bin/env bash
# The operator's view (docs/operations.md): the cost metrics per template and by usable (they add
# up to what the records say), sandbox lifetimes and pool utilisation per template; the systemd
# units' stop and restart settings; the alert rules pass `promtool check rules` and their unit
# tests (tests/api/alerts_test.yml); the dashboard's expressions parse, filter by its per-node
# variable and cover the judge, the audit and the cluster; every series the alerts and the
# dashboard name exists in a running daemon's /metrics (a cluster node's for paddock_cluster_*).
source "$(dirname "$0")/api.sh"
plan 30

start_daemon --problems examples/problems
ok $? "daemon started"

# metric NAME{LABELS}: its value on a fresh scrape ("" if absent)
metric() { curl -s -m 5 "$U/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }

# two jobs that use CPU, one that times out (its sandbox is destroyed: a lifetime to observe)
BUSY='i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done'
for t in ops-1 ops-2; do
  post_json /v1/runs "$(jq -cn --arg p "$BUSY" --arg t "$t" '{template: "bash", cmd: ["sh", "-c", $p], task_id: $t}')"
  cp "$BODY" "$TMPD/$t.json"
done
is "$CODE" 200 "two busy runs: 200"
post_json /v1/runs '{"template":"bash","cmd":["sleep","30"],"limits":{"wall_time":0.3},"task_id":"ops-3"}'
cp "$BODY" "$TMPD/ops-3.json"
is "$(jb .failure_class)" exec_timeout "a run past its wall time: exec_timeout"
is "$(jq -s '[.[].usable] | unique | @json' "$TMPD"/ops-*.json)" '"[false]"' \
  "records say usable: false (no judge decides the output level)"

# the counters equal the sums over the records (cpu_ms and peak x wall of each run step)
want=$(jq -s '[.[].run.cpu_ms] | add / 1000' "$TMPD"/ops-*.json)
got=$(metric 'paddock_cpu_seconds_total{template="bash",usable="false"}')
python3 -c "import sys; sys.exit(abs($got - $want) > 1e-6 or $want <= 0)" 2>/dev/null
ok $? "paddock_cpu_seconds_total{bash,usable=false} = the records' CPU ($got s; records $want s)"
is "$(metric 'paddock_cpu_seconds_total{template="bash",usable="true"}')" 0.000000 "and nothing under usable=true"
want=$(jq -s '[.[].run | .memory_peak_bytes * .wall_ms / 1000] | add' "$TMPD"/ops-*.json)
got=$(metric 'paddock_memory_byte_seconds_total{template="bash",usable="false"}')
python3 -c "import sys; sys.exit(abs($got - $want) > 1e-3 * $want or $want <= 0)" 2>/dev/null
ok $? "paddock_memory_byte_seconds_total = the records' peak x wall ($got; records $want)"
is "$(metric 'paddock_samples_total{template="bash"}')" 3 "paddock_samples_total{bash}: 3"
is "$(metric 'paddock_usable_samples_total{template="bash"}')" 0 "paddock_usable_samples_total{bash}: 0"
is "$(metric 'paddock_samples_total{template="python"}')" 0 "a template with no job yet has its series at 0"

# judged submissions (issue 39): usable is the judged record's (a judge job's own verdict is never
# judged), their CPU is all the judging's (compile, tests, checkers), a compile error is its class
SUM='a, b = map(int, input().split())\nprint(a + b)\n'
for t in opj-1 opj-2; do
  post_json /v1/judge "$(jq -cn --arg c "$(printf "$SUM")" --arg t "$t" '{problem_id: "sum", language: "python", code: $c, task_id: $t, audit: true, cache: false}')"
  cp "$BODY" "$TMPD/$t.json"
done
is "$(jq -s -r '[.[] | .usable] | map(tostring) | join(" ")' "$TMPD"/opj-*.json)" "true true" "two audited judged passes: usable"
is "$(metric 'paddock_usable_samples_total{template="python"}')/$(metric 'paddock_samples_total{template="python"}')" "2/2" \
  "paddock_usable_samples_total{python} counts them: 2 of 2 samples"
want=$(jq -s '[.[].cpu_ms] | add / 1000' "$TMPD"/opj-*.json)
got=$(metric 'paddock_cpu_seconds_total{template="python",usable="true"}')
python3 -c "import sys; sys.exit(abs($got - $want) > 1e-6 or $want <= 0)" 2>/dev/null
ok $? "paddock_cpu_seconds_total{python,usable=true} = the judged records' CPU, tests and checkers included ($got s; records $want s)"
none0=$(metric 'paddock_failures_total{class="none"}')
post_json /v1/judge '{"problem_id":"sum","language":"c","code":"int main(){ return 0 }"}'
is "$(jb .failure_class)" compile_error "a judged compile error"
is "$(metric 'paddock_failures_total{class="compile_error"}')/$(metric 'paddock_failures_total{class="none"}')" "1/$none0" \
  "paddock_failures_total counts it as compile_error, not none"

# the timed-out sandbox is destroyed by the reclaimer: its lifetime is observed
lifetimes() { metric 'paddock_sandbox_lifetime_seconds_count{template="bash"}'; }
wait_for 30 bash -c "[ \"\$(curl -s -m 5 '$U/metrics' | awk '\$1 == \"paddock_sandbox_lifetime_seconds_count{template=\\\"bash\\\"}\" {print \$2}')\" -ge 1 ]"
ok $? "paddock_sandbox_lifetime_seconds_count{bash} >= 1 once the timed-out sandbox is destroyed ($(lifetimes))"
is "$(metric 'paddock_sandbox_lifetime_seconds_bucket{template="bash",le="+Inf"}')" "$(lifetimes)" \
  "its +Inf bucket equals its count"
u=$(metric 'paddock_pool_utilisation{template="bash"}')
python3 -c "import sys; sys.exit(not 0 <= $u <= 1)" 2>/dev/null
ok $? "paddock_pool_utilisation{bash} is a share ($u)"

# the systemd units: SIGTERM to the main process only (cgroup v1), no restart loop on a bad setting
bad=""
for u in contrib/paddock.service 'contrib/cluster/paddock-node@.service'; do
  grep -qx 'KillMode=mixed' "$u" && grep -qx 'RestartPreventExitStatus=64' "$u" || bad="$bad $u"
done
is "$bad" "" "both units: KillMode=mixed and RestartPreventExitStatus=64"

# the alert rules: promtool's check (Debian's prometheus package; scripts/install-deps.sh)
if command -v promtool >/dev/null; then
  out=$(promtool check rules contrib/prometheus/alerts.yml 2>&1)
  ok $? "promtool check rules contrib/prometheus/alerts.yml ($(tail -1 <<<"$out" | sed 's/^ *//'))"
else
  skip "promtool is not installed (apt-get install prometheus)"
fi
# the alerts' own unit tests (tests/api/alerts_test.yml): a node down or gone pages, one policy
# violation in ten minutes is no alert and a share of them is
if command -v promtool >/dev/null; then
  out=$(promtool test rules tests/api/alerts_test.yml 2>&1)
  ok $? "promtool test rules tests/api/alerts_test.yml: down, stopped reporting, violations as a share ($(grep -c 'alertname:' <<<"$out") failures)"
else
  skip "promtool is not installed (apt-get install prometheus)"
fi
jq -e '.panels | length > 0' contrib/grafana/paddock.json >/dev/null
ok $? "contrib/grafana/paddock.json is a dashboard with panels"
# its expressions are PromQL (the variables as Grafana fills them for "All")
if command -v promtool >/dev/null; then
  jq '{groups: [{name: "dashboard", rules: [.panels[].targets[].expr | gsub("\\$(instance|node)"; ".*") | {record: "dashboard:expr", expr: .}]}]}' \
    contrib/grafana/paddock.json >"$TMPD/dash-rules.json"
  out=$(promtool check rules "$TMPD/dash-rules.json" 2>&1)
  ok $? "every dashboard expression parses ($(grep -o "SUCCESS.*" <<<"$out"))"
else
  skip "promtool is not installed (apt-get install prometheus)"
fi
is "$(jq -c '[.templating.list[].name]' contrib/grafana/paddock.json)" '["datasource","instance","node"]' \
  "the dashboard has a daemon/node variable (instance) and a cluster node variable (node)"
is "$(jq -r '.panels[].targets[].expr' contrib/grafana/paddock.json | grep -oE 'paddock_[a-z_]+(\{[^}]*\})?' | grep -vc 'instance=~"\$instance"')" 0 \
  "every series on the dashboard is filtered by \$instance"
is "$(jq -r '[.panels[].title | ascii_downcase | select(test("^judge:|^audit:|^cluster:"))] | map(split(":")[0]) | unique | join(" ")' contrib/grafana/paddock.json)" \
  "audit cluster judge" "the dashboard has judge, audit and cluster panels"

# every series named (with its = label matchers) has a sample in /metrics: a daemon's, and a
# cluster node's for the paddock_cluster_* series (a node on a nats-server of its own)
curl -s -m 5 "$U/metrics" >"$TMPD/metrics.txt"
if command -v nats-server >/dev/null && ldconfig -p | grep -q 'libnats.so.3.4'; then
  NPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  nats-server -js -sd "$TMPD/js" -a 127.0.0.1 -p "$NPORT" >"$TMPD/nats.log" 2>&1 &
  NATS_PID=$!
  cleanup 'kill -TERM "$NATS_PID" 2>/dev/null; wait "$NATS_PID" 2>/dev/null'
  wait_for 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$NPORT" 2>/dev/null
  "$PADDOCK" serve --listen 127.0.0.1:0 --db "$TMPD/node.sqlite" --cluster "nats://127.0.0.1:$NPORT" \
    --node-id ops.example.com-1 --warm 0 </dev/null >"$TMPD/node.log" 2>&1 &
  NODE_PID=$!
  cleanup 'kill -TERM "$NODE_PID" 2>/dev/null; wait "$NODE_PID" 2>/dev/null'
  wait_for 30 grep -q '^paddock: serving on ' "$TMPD/node.log"
  curl -s -m 5 "http://$(sed -n 's/^paddock: serving on //p' "$TMPD/node.log" | head -1)/metrics" >"$TMPD/node-metrics.txt"
  grep -q '^paddock_cluster_slots{node="ops.example.com-1"}' "$TMPD/node-metrics.txt"
  ok $? "a cluster node's /metrics has the paddock_cluster_* series, by node"
  grep '^paddock_cluster_' "$TMPD/node-metrics.txt" >>"$TMPD/metrics.txt"
else
  skip "nats-server or libnats3.4 is missing: the cluster series are not checked"
fi
named_missing() {  # named_missing EXPRESSIONS-FILE: the selectors without a sample, one per line
  python3 - "$1" "$TMPD/metrics.txt" <<'PY'
import re, sys
exprs = open(sys.argv[1]).read()
samples = [l for l in open(sys.argv[2]).read().splitlines() if l and not l.startswith('#')]
seen = set()
for m in re.finditer(r'\b(paddock_[a-zA-Z0-9_]+)(\{([^}]*)\})?', exprs):
    name, matchers = m.group(1), m.group(3) or ''
    want = re.findall(r'([a-zA-Z_]+)="([^"]*)"', re.sub(r'[a-zA-Z_]+!="[^"]*"', '', matchers))
    key = (name, tuple(want))
    if key in seen:
        continue
    seen.add(key)
    if not any((l.startswith(name + '{') or l.startswith(name + ' ')) and
               all('%s="%s"' % kv in l.split(' ')[0] for kv in want) for l in samples):
        print(m.group(0))
PY
}
grep 'expr:' -A3 contrib/prometheus/alerts.yml >"$TMPD/alert-exprs"
n=$(grep -o 'paddock_[a-z_]*' "$TMPD/alert-exprs" | sort -u | wc -l)
is "$(named_missing "$TMPD/alert-exprs")" "" "every series the alerts name is in /metrics ($n names)"
jq -r '.panels[].targets[].expr' contrib/grafana/paddock.json >"$TMPD/dash-exprs"
n=$(grep -o 'paddock_[a-z_]*' "$TMPD/dash-exprs" | sort -u | wc -l)
is "$(named_missing "$TMPD/dash-exprs")" "" "every series the dashboard names is in /metrics ($n names)"
echo 'paddock_no_such_series{class="x"}' >"$TMPD/bogus"
is "$(named_missing "$TMPD/bogus")" 'paddock_no_such_series{class="x"}' "(the check finds a series that is not there)"
