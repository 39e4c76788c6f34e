#!/usr/bin/env bash
# What a connection through the egress relay costs: N HTTP GETs of a small file from a server on
# the host's loopback, by python's http.client, (a) on the host, directly, and (b) in an allowlist
# sandbox through the relay (paddock exec --net allowlist), alternating ROUNDS times so both see
# the same machine. Each GET is a new connection (the relay serves one request per connection).
# Prints the median per-GET time of each and the difference. Run it under the test lock:
#   flock /tmp/paddock-test.lock scripts/bench-egress.sh [N] [ROUNDS]
set -eu
N=${1:-200}
ROUNDS=${2:-5}
PADDOCK=${PADDOCK:-$(dirname "$0")/../bin/paddock}
TMP=$(mktemp -d /tmp/pdk-egress-bench.XXXXXX)
trap 'kill $SRV 2>/dev/null; rm -rf "$TMP"' EXIT
cat >"$TMP/srv.py" <<'PY'
import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".t", "w").write(str(s.server_address[1])); os.rename(sys.argv[1] + ".t", sys.argv[1])
s.serve_forever()
PY
python3 "$TMP/srv.py" "$TMP/port" & SRV=$!
for _ in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.1; done
PORT=$(cat "$TMP/port")
# per-GET microseconds, median of N; through the proxy when http_proxy is set
cat >"$TMP/get.py" <<'PY'
import http.client, os, statistics, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
proxy = os.environ.get("http_proxy")
ts = []
for _ in range(n):
    t = time.perf_counter()
    if proxy:
        c = http.client.HTTPConnection("127.0.0.1", 3128)
        c.request("GET", "http://127.0.0.1:%d/" % port, headers={"Host": "127.0.0.1:%d" % port})
    else:
        c = http.client.HTTPConnection("127.0.0.1", port); c.request("GET", "/")
    assert c.getresponse().read() == b"ok"
    c.close()
    ts.append(time.perf_counter() - t)
print(int(statistics.median(ts) * 1e6))
PY
host=() relay=()
for r in $(seq "$ROUNDS"); do
  host+=("$(env -u http_proxy python3 "$TMP/get.py" "$PORT" "$N")")
  # not -q: that option drops the program's output, which is the figure (the empty figure once)
  relay+=("$("$PADDOCK" exec --net allowlist --egress-allow "127.0.0.1:$PORT" --bind "$TMP:/b" -- python3 /b/get.py "$PORT" "$N")")
done
for v in "${host[@]}" "${relay[@]}"; do
  case $v in ''|*[!0-9]*) echo "bench-egress: a round printed no figure ('$v')" >&2; exit 1;; esac
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
h=$(med "${host[@]}") y=$(med "${relay[@]}")
echo "per GET (new connection each), median of $ROUNDS rounds x $N: host direct ${h} us, through the relay ${y} us: +$((y - h)) us"
echo "rounds: host ${host[*]}; relay ${relay[*]}"
