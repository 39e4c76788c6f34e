#!/usr/bin/env bash
# The memory verdict under load: a program that allocates 300 MB under a 256 MB limit is a memory
# failure (failure_class oom; on /v1/runs status ML), never a time-out, even when 8 of them share
# the machine's cores and a 2 s run limit. Two ways to it:
#  - the memory fast path (python and cpp templates, "memory_fast_path"): the data segment is
#    held at the limit plus headroom, the allocation is refused at once and the runtime dies
#    saying so (MemoryError: exit 1; std::bad_alloc: SIGABRT, -6 on /run_code);
#  - the cgroup's own evidence (an OOM kill, or usage pressed against the limit), decided before
#    the time verdict: C (no fast path: a C program's reaction to a NULL malloc leaves no mark),
#    and python in a template with the fast path off (SIGKILL, -9 on /run_code).
source "$(dirname "$0")/api.sh"
plan 12

cat >"$TMPD/templates.json" <<'EOF2'
{"templates": [{"name": "python", "requires": ["python3"], "cwd": "/work", "memory_fast_path": false},
               {"name": "c", "requires": ["gcc", "as", "ld"], "cwd": "/work"},
               {"name": "cpp", "requires": ["g++", "as", "ld"], "cwd": "/work", "memory_fast_path": "32M"}]}
EOF2
start_daemon
ok $? "daemon started"

cat >"$TMPD/ml.py" <<'EOF2'
# ml.py URL LANG N: N concurrent /run_code requests of a 300 MB allocation at 256 MB, 2 s to run;
# prints the outcomes counted, as failure_class/status/return_code
import collections, json, sys, threading, urllib.request
U, lang, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
codes = {
    "python": "x = bytearray(300 * 1024 * 1024)\nprint(len(x))",
    "c": "#include <stdio.h>\n#include <stdlib.h>\nint main(void) {\n  size_t n = 300u << 20; long s = 0;\n"
         "  volatile char *p = malloc(n);\n  if (!p) return 3;\n"
         "  for (size_t i = 0; i < n; i += 4096) { p[i] = 1; s += p[i]; }\n  printf(\"%ld\\n\", s);\n}\n",
    "cpp": "#include <iostream>\n#include <vector>\nint main() {\n  std::vector<char> v(300u << 20, 1);\n"
           "  std::cout << (int)v.back() << std::endl;\n}\n",
}
res = [None] * n
def go(i):
    body = json.dumps({"language": lang, "code": codes[lang], "run_timeout": 2, "memory_limit_MB": 256}).encode()
    r = urllib.request.Request(U + "/run_code", body, {"Content-Type": "application/json"})
    try:
        res[i] = json.load(urllib.request.urlopen(r, timeout=120))
    except Exception as e:
        res[i] = {"error": repr(e)}
ts = [threading.Thread(target=go, args=(i,)) for i in range(n)]
for t in ts:
    t.start()
for t in ts:
    t.join()
c = collections.Counter("%s/%s/%s" % (r.get("failure_class"), (r.get("run_result") or {}).get("status"),
                                      (r.get("run_result") or {}).get("return_code")) for r in res)
print(json.dumps(c, sort_keys=True))
EOF2
# the pools' sandboxes are made on demand: nothing is being made or reclaimed when the burst starts
pools_quiet() { curl -s -m 5 "$U/v1/pools" | jq -e '[.pools[] | .creating + .reclaiming + .in_use] | add == 0' >/dev/null; }
burst() {  # LANG EXPECTED WHAT
  python3 "$TMPD/ml.py" "$U" "$1" 1 >/dev/null
  wait_for 30 pools_quiet
  is "$(python3 "$TMPD/ml.py" "$U" "$1" 8)" "$2" "$1: 8 concurrent 300 MB at 256 MB, 2 s: all memory failures ($3), none a time-out"
}
burst python '{"oom/Finished/1": 8}' "the fast path: MemoryError"
burst c '{"oom/Finished/-9": 8}' "the cgroup's OOM kill"
burst cpp '{"oom/Finished/-6": 8}' "the fast path: std::bad_alloc, abort"
post_json /run_code '{"language":"python","code":"x = bytearray(300 * 1024 * 1024)","memory_limit_MB":256}'
like "$(jb .run_result.stderr)" "MemoryError" "  the python program saw its allocation refused (MemoryError)"
post_json /v1/runs '{"language":"python","code":"x = bytearray(200 * 1024 * 1024)\nprint(len(x))","limits":{"memory":"256M"}}'
is "$(jb '[.status, (.run.stdout | rtrimstr("\n"))] | @tsv')" "$(printf 'OK\t209715200')" "  the fast path leaves a program under its limit alone (200 MB at 256 MB)"
stop_daemon
start_daemon --templates "$TMPD/templates.json"
ok $? "daemon with python's fast path off"
burst python '{"oom/Finished/-9": 8}' "the cgroup's OOM kill"
post_json /v1/runs '{"language":"python","code":"x = bytearray(300 * 1024 * 1024)","limits":{"memory":"256M","wall_time":1}}'
is "$(jb '[.status, .failure_class, .verdict.resources] | @tsv')" "$(printf 'ML\toom\tfail')" "/v1/runs: status ML, failure_class oom"
# what is not a memory failure stays what it is
post_json /v1/runs '{"language":"python","code":"x = bytearray(100 * 1024 * 1024)\nwhile True: pass","limits":{"memory":"256M","wall_time":1}}'
is "$(jb '[.status, .failure_class] | @tsv')" "$(printf 'TO\texec_timeout')" "a loop well under its memory limit is still a time-out"
post_json /v1/runs '{"language":"python","code":"x = bytearray(100 * 1024 * 1024)\nraise SystemExit(4)","limits":{"memory":"256M"}}'
is "$(jb '[.status, .run.exit_code] | @tsv')" "$(printf 'RE\t4')" "an exit under the limit is RE"
post_json /api/v2/execute '{"language":"python","version":"*","run_memory_limit":268435456,"files":[{"content":"x = bytearray(300 * 1024 * 1024)"}]}'
is "$(jb '[.run.status, .run.message] | @tsv')" "$(printf 'SG\tmemory limit exceeded')" "Piston: the memory failure as before (SG, memory limit exceeded)"

done_testing
