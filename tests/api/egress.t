#!/usr/bin/env bash
# Egress allowlists: a template's "network": "allowlist" reaches the hosts of its "egress" list
# through the relay (an HTTP proxy the host runs at 127.0.0.1:3128 inside the sandbox), and
# nothing else. Two servers on the host's loopback: the allowed mirror answers; the forbidden
# target is refused and recorded as an egress event that fails the process level. Address
# spellings, Host headers, names resolving to loopback, TLS server names and credentials in the
# URI do not get around the list. A session switches its network between stages. Many sandboxes
# later, the daemon holds no more descriptors or threads than before.
source "$(dirname "$0")/api.sh"
plan 40

# two servers on the host's loopback, each on a port the kernel picks
cat >"$TMPD/srv.py" <<'PY'
import http.server, sys
body = sys.argv[2].encode()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PY
python3 "$TMPD/srv.py" "$TMPD/mirror.port" mirror-ok &
MPID=$!
python3 "$TMPD/srv.py" "$TMPD/target.port" secret-answer &
TPID=$!
cleanup "kill $MPID $TPID"
wait_for 10 test -s "$TMPD/mirror.port" && wait_for 10 test -s "$TMPD/target.port"
M=$(cat "$TMPD/mirror.port")
T=$(cat "$TMPD/target.port")
# a name other than localhost that the host resolves to loopback (e.g. the host's own name in
# /etc/hosts): listed, the relay still refuses it (a name must not lead into the host)
LOOPNAME=$(awk '$1 ~ /^127\./ { for (i = 2; i <= NF; i++) if ($i != "localhost" && $i !~ /^#/) { print $i; exit } }' /etc/hosts)
EXTRA=${LOOPNAME:+, \"$LOOPNAME:$M\"}

cat >"$TMPD/tpl.json" <<JSON
{"templates": [
  {"name": "mirror", "language": "python", "network": "allowlist",
   "egress": {"allow": ["127.0.0.1:$M", "localhost:$M"$EXTRA]}, "pool": {"min": 1, "max": 1}},
  {"name": "stages", "language": "python", "network": "none",
   "egress": {"allow": ["127.0.0.1:$M", "localhost:$M"]}}]}
JSON
start_daemon --templates "$TMPD/tpl.json" --run-code-networks allowlist
ok $? "daemon started with an allowlist template"

# FETCH: python's urllib, which takes the proxy from http_proxy as any HTTP client does
FETCH='import sys, urllib.request
for u in sys.argv[1:]:
    try: print(urllib.request.urlopen(u, timeout=20).read().decode())
    except Exception as e: print("ERR", getattr(e, "code", e))'
run() {  # run AUDIT URL...: /v1/runs on the mirror template
  local audit=$1
  shift
  post_json /v1/runs "$(jq -nc --arg c "$FETCH" --argjson a "$audit" '{template: "mirror", cmd: (["python3", "-c", $c] + $ARGS.positional), audit: $a}' --args "$@")"
}

run true "http://127.0.0.1:$M/" "http://127.0.0.1:$T/"
is "$(jb .run.stdout)" "mirror-ok
ERR 403" "the allowed mirror answers through the relay; the forbidden target is refused (403)"
is "$(jb '[.verdict.process.status, .verdict.process.failed[0], .failure_class] | join(" ")')" \
  "fail egress policy_violation" "the refused connection fails the process level (egress)"
is "$(jb "[.audit.events[] | select(.kind == \"egress\") | [.op, .mode, .address, .denied, .note] | join(\",\")] | join(\" \")")" \
  "http,allowed,127.0.0.1:$M,false, http,out,127.0.0.1:$T,true,not on the allowlist" \
  "both connections are egress events: target, mode, refused or not, why"
is "$(jb "[.audit.events[] | select(.mode == \"allowed\") | (.resolved == \"127.0.0.1:$M\" and .bytes_in > 0 and .bytes_out > 0 and .host == \"127.0.0.1\")] | all")" \
  true "the allowed one: the name asked for, the address reached, bytes each way"
unlike "$(jb .run.stdout)" "secret-answer" "the forbidden target's answer never reached the program"

run true "http://localhost:$M/"
is "$(jb '[.run.stdout, .verdict.process.status] | join(" ")')" "mirror-ok
 pass" "allowed egress only: the process level passes"

run false "http://127.0.0.1:$T/"
is "$(jb '[.run.stdout, .verdict.process.status] | join(" ")')" "ERR 403
 not_audited" "without an audit the relay refuses all the same (not_audited)"

# --- tricks: raw requests to the relay, each answered with its status line --------------------------
RAW='import socket, sys
def ask(head, after=b""):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(head.encode())
    r = s.recv(300).split(b"\r\n")[0].decode()
    if after and " 200 " in r:
        s.sendall(after)
        try: r += " then " + (s.recv(300).decode() or "closed")
        except OSError as e: r += " then " + str(e)
    s.close()
    return r
for head in sys.argv[1:]:
    print(ask(head.replace("|", "\r\n")).split(" ")[1])'
raw() {  # raw HEAD...: the relay's status per request head (| for CRLF)
  post_json /v1/runs "$(jq -nc --arg c "$RAW" '{template: "mirror", cmd: (["python3", "-c", $c] + $ARGS.positional), audit: true}' --args "$@")"
  jq -r '.run.stdout | split("\n") | map(select(. != "") + " ") | add' <"$BODY"
}
is "$(raw "GET http://2130706433:$T/ HTTP/1.1|Host: 2130706433:$T||" "GET http://0x7f.0.0.1:$T/ HTTP/1.1||" \
  "GET http://[::ffff:127.0.0.1]:$T/ HTTP/1.1||" "GET http://0x7f.1:$M/ HTTP/1.1||")" "403 403 403 200 " \
  "an unlisted address in any spelling is refused; a listed one in another spelling is the same address"
is "$(raw "GET http://127.0.0.1:$M/ HTTP/1.1|Host: 127.0.0.1:$T||" "GET / HTTP/1.1|Host: 127.0.0.1:$T||" \
  "GET http://u:p@127.0.0.1:$M/ HTTP/1.1||" "GET http://127.0.0.1:$M@127.0.0.1:$T/ HTTP/1.1||")" "403 403 400 400 " \
  "a Host header naming another target, or credentials in the URI: refused"
is "$(raw "CONNECT 127.0.0.1:$T HTTP/1.1||" "CONNECT localhost:$T HTTP/1.1||" "CONNECT evil.example:$M HTTP/1.1||" \
  "CONNECT localhost:$M HTTP/1.1||")" "403 403 403 200 " "CONNECT: only a listed name or address and port"
is "$(jb '[.audit.events[] | select(.kind == "egress" and .denied)] | length')" 3 "each refused tunnel is an event"

if [ -n "$LOOPNAME" ]; then
  is "$(raw "GET http://$LOOPNAME:$M/ HTTP/1.1||")" "403 " "a listed name that resolves to loopback ($LOOPNAME): refused"
  like "$(jb '.audit.events[] | select(.kind == "egress") | .note')" "^resolves to 127\." "the event says where the name led"
else
  skip "no name besides localhost resolves to loopback here"
  skip "no name besides localhost resolves to loopback here"
fi

# a TLS tunnel whose ClientHello names another server than the CONNECT (domain fronting)
HELLO='import socket, struct, sys
def hello(name):
    n = name.encode()
    sni = struct.pack("!HHHBH", 0, len(n) + 5, len(n) + 3, 0, len(n)) + n
    body = b"\x03\x03" + b"\x00" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00" + struct.pack("!H", len(sni)) + sni
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(("CONNECT localhost:%s HTTP/1.1\r\n\r\n" % sys.argv[1]).encode())
print(s.recv(300).split(b"\r\n")[0].decode())
s.sendall(hello(sys.argv[2]))
print(s.recv(300) or b"closed")'
post_json /v1/runs "$(jq -nc --arg c "$HELLO" --arg m "$M" '{template: "mirror", cmd: ["python3", "-c", $c, $m, "evil.example"], audit: true}')"
is "$(jb .run.stdout)" "HTTP/1.1 200 Connection established
b'closed'" "a TLS server name other than the tunnel's: the tunnel is closed before a byte reaches the target"
is "$(jb '.audit.events[] | select(.kind == "egress") | [.host, .mode, .note] | join(",")')" \
  "evil.example,out,TLS server name differs from CONNECT's" "recorded with the server name it asked for"

# the relay is the only way out: the host's loopback is not the sandbox's
post_json /v1/runs "$(jq -nc --arg m "$M" '{template: "mirror", cmd: ["python3", "-c", "import socket,sys\ntry: socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), timeout=5); print(\"reached\")\nexcept OSError as e: print(e.errno)", $m]}')"
is "$(jb .run.stdout)" "111" "a direct connection to the mirror's port: refused (the sandbox's loopback, not the host's)"

# a honey token sent out through the relay to an allowed host: the environment was harvested
# (env_probe), in a plain request's URI and in a tunnel's bytes; the same fetch without it passes
HONEY='import base64, os, socket, sys, urllib.request
m, tok = int(sys.argv[1]), os.environ["API_TOKEN"]
enc = {"1": lambda t: t, "0": lambda t: "none", "b64": lambda t: base64.urlsafe_b64encode(("key=" + t).encode()).decode(),
       "pct": lambda t: "".join("%%%02X" % ord(c) for c in t), "rev": lambda t: t[::-1]}
if sys.argv[2] == "http":
    print(urllib.request.urlopen("http://127.0.0.1:%d/?k=%s" % (m, enc[sys.argv[3]](tok)), timeout=20).read().decode())
else:
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % m)
    print(s.recv(100).split(b"\r\n")[0].decode())
    req = ("GET /?k=%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % tok).encode()
    s.sendall(req[:12]); s.sendall(req[12:])
    print(s.recv(1000).split(b"\r\n")[0].decode())'
hrun() { post_json /v1/runs "$(jq -nc --arg c "$HONEY" '{template: "mirror", audit: {env: ["API_TOKEN"]}, cmd: (["python3", "-c", $c] + $ARGS.positional)}' --args "$M" "$@")"; }
hrun http 1
is "$(jb '[.run.stdout, .verdict.process.status, (.verdict.process.failed | join(",")), ([.audit.events[] | select(.kind == "env_probe") | .op] | join(","))] | join(" ")')" \
  "mirror-ok
 fail env_probe http" "a honey token in an allowed request's URI: env_probe (the request still went: the mirror answered)"
hrun tunnel 1
is "$(jb '[.verdict.process.status, ([.audit.events[] | select(.kind == "env_probe") | .op] | join(","))] | join(" ")')" \
  "fail tunnel" "a honey token in a tunnel's bytes, sent in two pieces: env_probe"
# encoded on the way out (only the token's mark, "pdk-honey-", is known to the relay)
for e in b64 pct rev; do
  hrun http $e
  is "$(jb '[.run.stdout, .verdict.process.status, ([.audit.events[] | select(.kind == "env_probe") | .op] | join(","))] | join(" ")')" \
    "mirror-ok
 fail http" "a honey token sent $e-encoded in an allowed request's URI: env_probe"
done
hrun http 0
is "$(jb '[.run.stdout, .verdict.process.status] | join(" ")')" "mirror-ok
 pass" "the same fetch without the token: pass"

# a request's network: "allowlist" runs in the twin of a template whose own network is none
post_json /v1/runs "$(jq -nc --arg c "$FETCH" '{template: "stages", network: "allowlist", audit: true, cmd: (["python3", "-c", $c] + $ARGS.positional)}' --args "http://127.0.0.1:$M/" "http://127.0.0.1:$T/")"
is "$CODE $(jb '[.template, .run.stdout, .verdict.process.status] | join(" ")')" "200 stages.net-allowlist mirror-ok
ERR 403
 fail" "/v1/runs \"network\": \"allowlist\": the mirror answers, the target is refused and fails the process level"
post_json /v1/runs '{"template": "stages", "network": "host", "shell": "true"}'
like "$CODE $(jb .error)" "^400 network: 'host' is not one this daemon allows" "a mode the daemon does not allow: 400"

# --- a session's stages -----------------------------------------------------------------------------
post_json /v1/sessions '{"template": "stages", "network": "allowlist", "egress": {"allow": ["127.0.0.1:'"$M"'"]}}'
is "$CODE $(jb .network)" "201 allowlist" "a session opened with an allowlist first stage (its template: none)"
S=$(jb .session_id)
sx() { post_json "/v1/sessions/$S/exec" "$(jq -nc --arg c "$FETCH" '{cmd: (["python3", "-c", $c] + $ARGS.positional)}' --args "$@")"; }
sx "http://127.0.0.1:$M/" "http://localhost:$M/"
is "$(jb .stdout)" "mirror-ok
ERR 403" "setup stage: the mirror answers; an entry the session did not ask for is refused"
is "$(jb '[.audit.events[] | select(.kind == "egress") | .mode] | join(" ")')" "allowed out" "the step's egress events"
post_json "/v1/sessions/$S/network" '{"network": "none"}'
is "$CODE $(jb .network)" "200 none" "switched to none for the agent's steps"
post_json "/v1/sessions/$S/exec" '{"cmd": ["sh", "-c", "echo ${http_proxy:-unset}; python3 -c \"import socket\ntry: socket.create_connection((\\\"127.0.0.1\\\", 3128), timeout=3)\nexcept OSError as e: print(\\\"no relay\\\")\""]}'
is "$(jb .stdout)" "unset
no relay" "no proxy variables, no relay, no loopback"
post_json "/v1/sessions/$S/network" '{"network": "allowlist", "egress": {"allow": ["127.0.0.1:'"$T"'"]}}'
is "$CODE" 403 "a stage may not widen the template's allowlist (403)"
like "$(jb .error)" "egress.allow\[0\]: 127.0.0.1:$T is not on template 'stages''s egress allowlist" "the error names the entry"
post_json "/v1/sessions/$S/network" '{"network": "host"}'
is "$CODE" 400 "nor switch to the host's network (400)"
post_json "/v1/sessions/$S/network" '{"network": "allowlist"}'
is "$CODE $(jb '.egress.allow | length')" "200 2" "back to allowlist: the template's whole list"
sx "http://localhost:$M/"
is "$(jb .stdout)" "mirror-ok" "the new stage's relay answers"
req GET "/v1/sessions/$S/trajectory"
is "$(jq -rs '[.[] | select(.kind == "network") | .action.network] | join(" ")' <"$BODY")" "allowlist none allowlist" \
  "the switches are steps of the trajectory"
req DELETE "/v1/sessions/$S"

post_json /v1/sessions '{"template": "stages", "network": "allowlist", "egress": {"allow": ["10.0.0.1:80"]}}'
is "$CODE" 403 "a session cannot open with hosts its template does not list"
post_json /v1/sessions '{"template": "stages", "egress": {"allow": ["127.0.0.1:1"]}}'
is "$CODE" 400 "egress without network allowlist: 400"

# --- no descriptor or thread outlives its sandbox --------------------------------------------------
# a pool of one: between requests the daemon holds one READY allowlist sandbox (and its relay)
ready1() { req GET /v1/pools; [ "$(jb '.pools[] | select(.template == "mirror") | [.ready, .in_use, .creating, .reclaiming] | join(" ")')" = "1 0 0 0" ]; }
counts() { echo "$(ls /proc/$DPID/fd | wc -l) $(ls /proc/$DPID/task | wc -l)"; }
wait_for 30 ready1
read -r fd0 th0 <<<"$(counts)"
# each run: a fetch, a refusal, and a tunnel a background process keeps open past the program
KEEP="import os, socket, urllib.request, sys
print(urllib.request.urlopen('http://127.0.0.1:$M/', timeout=20).read().decode())
try: urllib.request.urlopen('http://127.0.0.1:$T/', timeout=20)
except Exception as e: print(e.code)
if os.fork() == 0:
    s = socket.create_connection(('127.0.0.1', 3128)); s.sendall(b'CONNECT localhost:$M HTTP/1.1\r\n\r\n'); s.recv(100)
    import time; time.sleep(60)"
bad=0
for i in $(seq 20); do
  post_json /v1/runs "$(jq -nc --arg c "$KEEP" '{template: "mirror", cmd: ["python3", "-c", $c]}')"
  [ "$(jb .run.stdout)" = "mirror-ok
403" ] || bad=$((bad + 1))
done
is "$bad" 0 "20 runs, each with an allowed, a refused and a lingering connection"
settled() { ready1 && read -r fd th <<<"$(counts)" && [ "$fd" -le "$fd0" ] && [ "$th" -le "$th0" ]; }
wait_for 60 settled
ok $? "the daemon's descriptors and threads are back to what they were ($fd0 fds, $th0 threads; now $(counts))"

done_testing
