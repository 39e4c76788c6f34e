#!/usr/bin/env bash
# The daemon's plain endpoints: /healthz, /readyz, /v1/ping, /metrics (Prometheus text with every
# failure class, the queues and the pools, every family with its HELP and TYPE), /v1/pools, and 404s
# for what does not exist.
source "$(dirname "$0")/api.sh"
plan 32

start_daemon
ok $? "the daemon starts on a kernel-picked loopback port ($U)"

req GET /healthz
is "$CODE" 200 "/healthz: 200"
is "$(jb .status)" ok "/healthz: {\"status\":\"ok\"}"
like "$(hdr Content-Type)" '^application/json' "/healthz: Content-Type application/json"

req GET /readyz
is "$CODE" 200 "/readyz: 200 when idle"
is "$(jb '[.status, .breaker_open] | @tsv')" "$(printf 'ready\tfalse')" "/readyz: ready, breaker closed"

req GET /v1/ping
is "$CODE" 200 "/v1/ping: 200"
is "$(jb .)" pong "/v1/ping: the JSON string \"pong\" (SandboxFusion's liveness answer)"

# one run first, so the job counters have something in them
post_json /v1/runs '{"cmd":["true"]}'
is "$CODE" 200 "a native run before scraping /metrics"

req GET /metrics
M=$(body)
is "$CODE" 200 "/metrics: 200"
like "$(hdr Content-Type)" '^text/plain' "/metrics: Content-Type text/plain"
# every sample line: name{labels} value, or name value
bad=$(grep -v '^#' <<<"$M" | grep -v '^$' |
  grep -Ev '^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*,?)?\})? [-+]?([0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+|NaN|[-+]?Inf)$')
is "$bad" "" "/metrics: every sample line is 'name{labels} value'"
bad=$(grep '^#' <<<"$M" | grep -Ev '^# (HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|summary|untyped))$')
is "$bad" "" "/metrics: every comment line is a well-formed HELP or TYPE"
# every family has one HELP and one TYPE, before its samples (a histogram's _bucket, _sum and
# _count are its family's), and its samples together: what Prometheus's parser and promtool want
bad=$(awk '
  /^# HELP / { if (help[$3]++) print "HELP twice: " $3; next }
  /^# TYPE / { if (type[$3]++) print "TYPE twice: " $3; kind[$3] = $4; next }
  /^#/ || NF == 0 { next }
  { name = $1; sub(/\{.*/, "", name); fam = name
    if (match(name, /_(bucket|sum|count)$/) && kind[substr(name, 1, RSTART - 1)] ~ /histogram|summary/)
      fam = substr(name, 1, RSTART - 1)
    if (!help[fam]) print "no HELP: " fam
    if (!type[fam]) print "no TYPE: " fam
    if (fam != last && seen[fam]++) print "samples apart: " fam
    last = fam }' <<<"$M" | sort -u | tr '\n' ' ')
is "$bad" "" "/metrics: every family has its HELP and TYPE before its samples, and its samples together"
if command -v promtool >/dev/null; then
  bad=$(promtool check metrics <<<"$M" 2>&1 | tr '\n' ' ')
  is "$bad" "" "/metrics: promtool check metrics finds nothing, its unit-naming lint included"
else
  skip "promtool is not installed (apt-get install prometheus)"
fi
nsamples=$(grep -cv '^#' <<<"$M")
[ "$nsamples" -gt 50 ]
ok $? "/metrics: has samples ($nsamples)"
missing=""
for c in none startup_failure dependency_missing exec_timeout judge_error oom output_limit policy_violation \
  queue_timeout cancelled internal_error compile_error; do
  grep -Eq "^paddock_failures_total\{class=\"$c\"\} [0-9]+$" <<<"$M" || missing="$missing $c"
done
is "$missing" "" "/metrics: paddock_failures_total has all 12 failure classes"
is "$(grep -c '^paddock_failures_total{' <<<"$M")" 12 "/metrics: and no other class"
is "$(grep -E '^paddock_failures_total\{class="none"\} ' <<<"$M" | awk '{print $2}')" 1 \
  "/metrics: the run counted in class none"
missing=""
for p in high normal low; do
  grep -Eq "^paddock_queue_length\{priority=\"$p\"\} 0$" <<<"$M" || missing="$missing $p"
done
is "$missing" "" "/metrics: paddock_queue_length for high, normal and low (all 0 when idle)"
missing=""
for t in bash python c cpp node; do
  for g in ready in_use creating reclaiming target; do
    grep -Eq "^paddock_pool_${g}\{template=\"$t\"\} [0-9]+$" <<<"$M" || missing="$missing $g/$t"
  done
done
is "$missing" "" "/metrics: pool gauges (ready, in_use, creating, reclaiming, target) for every template"
created=$(sed -n 's/^paddock_netns_total{outcome="created"} //p' <<<"$M")
[ -n "$created" ] && [ "$created" -ge 1 ] && grep -Eq '^paddock_netns_total\{outcome="reused"\} [0-9]+$' <<<"$M" &&
  grep -Eq '^paddock_netns_total\{outcome="discarded"\} [0-9]+$' <<<"$M" && grep -Eq '^paddock_netns_idle [0-9]+$' <<<"$M"
ok $? "/metrics: network namespaces created ($created), reused, discarded and idle"
dups=$(grep -v '^#' <<<"$M" | awk '{print $1}' | sort | uniq -d)
is "$dups" "" "/metrics: no series appears twice"

req GET /v1/pools
is "$CODE" 200 "/v1/pools: 200"
is "$(jb '[.pools[].template] | sort | join(",")')" "bash,c,cpp,node,python" "/v1/pools: the five built-in templates"

req GET /no/such/endpoint
is "$CODE" 404 "unknown endpoint: 404"
like "$(jb .error)" 'no such endpoint' "unknown endpoint: JSON with \"error\""
req DELETE /healthz
like "$CODE" '^40[45]$' "a known path with the wrong method: 404 or 405"
is_json && [ -n "$(jb '.error // empty')" ]
ok $? "wrong method: JSON with \"error\""

stop_daemon
is "$DAEMON_RC" 0 "SIGTERM stops the daemon with exit 0"

# a process's signal goes to whichever thread does not block it: one of the workers, not main,
# must stop the daemon too (main slept in pause() through a handler run on another thread)
start_daemon
python3 - "$DPID" <<'PY'
import ctypes, os, signal, sys, time
pid = int(sys.argv[1])
tids = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(libc.syscall(234, pid, tids[-1], signal.SIGTERM))  # tgkill(2), x86-64
PY
ok $? "SIGTERM sent to one of the daemon's threads other than main"
for ((i = 0; i < 300; i++)); do _daemon_alive || break; sleep 0.1; done
! _daemon_alive
ok $? "... stops it as one sent to the process does"
stop_daemon

done_testing
