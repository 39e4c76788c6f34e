#!/usr/bin/env bash
# /run_code's and /v1/runs' network per request (paddock's "network" field), from the set the operator allows
# with --run-code-networks: "none" runs in a network namespace whose loopback is down, "host" in
# the host's network (SandboxFusion's sandboxes reach the network), no field the language
# template's own (loopback: no egress). A mode not allowed, or none allowed, is a 400 naming it.
source "$(dirname "$0")/api.sh"
plan 11

# what the program sees: the errno of a connect to a closed loopback port (111 refused: lo is up;
# 101 unreachable: no network at all) and whether an interface besides lo exists
PROG='import os, socket
s = socket.socket()
try:
    s.connect(("127.0.0.1", 9))
except OSError as e:
    print(e.errno, end=" ")
ifs = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
print("more" if [i for i in ifs if i != "lo"] else "lo-only")'
run() {  # [NETWORK]: the program's answer on /run_code
  local body
  body=$(jq -nc --arg c "$PROG" --arg n "${1:-}" '{language: "python", code: $c} + (if $n == "" then {} else {network: $n} end)')
  post_json /run_code "$body"
}
start_daemon --run-code-networks none,host
ok $? "daemon with --run-code-networks none,host"
run; is "$(jb .run_result.stdout)" "111 lo-only" "no field: the template's own network (loopback only, no egress)"
run none; is "$(jb .run_result.stdout)" "101 lo-only" "network none: not even loopback"
[ "$(jb .run_result.stdout)" = "101 lo-only" ] || diag "$(head -c 3000 "$BODY")"
run host; like "$(jb .run_result.stdout)" "more" "network host: the host's interfaces"
run loopback; is "$CODE $(jb .error)" "400 network: 'loopback' is not one this daemon allows (--run-code-networks: none,host)" \
  "a mode not in the set: 400 naming it"
post_json /run_code '{"language":"python","code":"print(1)","network":"wifi"}'
is "$CODE" 400 "an unknown mode: 400"
post_json /v1/runs "$(jq -nc --arg c "$PROG" '{language: "python", code: $c, network: "none"}')"
is "$CODE $(jb .run.stdout)" "200 101 lo-only" "/v1/runs takes the same field: network none"
[ "$(jb .run.stdout)" = "101 lo-only" ] || diag "$(head -c 3000 "$BODY")"
post_json /v1/runs '{"language":"python","code":"print(1)","network":"wifi"}'
is "$CODE $(jb .error)" "400 network: must be none, loopback, allowlist or host" "/v1/runs: an unknown mode: 400 naming it"
printf '%s\n' '{"language":"python","code":"print(1)","network":"none","task_id":"n"}' >"$TMPD/net.jsonl"
"$PADDOCK" run -q -j 1 -o "$TMPD/net.out" "$TMPD/net.jsonl" 2>/dev/null
like "$(jq -r '[.refused, .error] | join(" ")' "$TMPD/net.out")" '^bad_request network: paddock run has no per-request networks' \
  "paddock run: a line asking for a network is refused, not run in its template's network unsaid"
stop_daemon
start_daemon
ok $? "daemon without --run-code-networks"
run host; is "$CODE" 400 "no mode allowed: a request that asks for one is refused (400)"

done_testing
