#!/usr/bin/env bash
# What sharing the CPUs does to a wall-clock limit (docs/api.md#scheduler): a python program that
# needs 0.5 s of CPU, sent to /run_code with run_timeout 10 alone, then beside N never-ending
# programs in flight. Prints its run status and execution_time each time.
#   scripts/wall-fidelity.sh [PADDOCK] [N...]     (default: bin/paddock, 10 40)
set -u
P=${1:-bin/paddock}; shift || true
[ $# -gt 0 ] || set -- 10 40
dir=$(mktemp -d /tmp/paddock-fidelity.XXXXXX)
"$P" serve --listen 127.0.0.1:0 --db "$dir/db.sqlite" >"$dir/log" 2>&1 &
D=$!
trap 'kill $D 2>/dev/null; wait $D 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do addr=$(sed -n 's/^paddock: serving on //p' "$dir/log"); [ -n "$addr" ] && break; sleep 0.1; done
U=http://$addr
prog='import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\nprint(1)'
one() { curl -s "$U/run_code" -d "{\"code\":\"$prog\",\"language\":\"python\",\"run_timeout\":10,\"memory_limit_MB\":128}" |
  jq -r '[.run_result.status, .run_result.execution_time] | @tsv'; }
echo "load average $(cut -d' ' -f1 /proc/loadavg), $(nproc) CPUs"
echo "alone:"; one; one; one
for n in "$@"; do
  pids=""
  for _ in $(seq "$n"); do
    curl -s -o /dev/null "$U/run_code" -d '{"code":"while True: pass","language":"python","run_timeout":10,"memory_limit_MB":64}' &
    pids="$pids $!"
  done
  sleep 3
  echo "beside $n never-ending programs:"; one
  wait $pids
done
