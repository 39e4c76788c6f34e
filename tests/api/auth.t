#!/usr/bin/env bash
# Authentication: with --token every endpoint but /healthz and /readyz needs
# "Authorization: Bearer <token>"; a wrong or missing token is 401. Listening beyond loopback
# without a token is refused at start. A unix socket listener works without one.
source "$(dirname "$0")/api.sh"
plan 34

start_daemon --token secret
ok $? "daemon started with --token secret"

req GET /v1/ping
is "$CODE" 401 "no Authorization: 401"
like "$(jb .error)" 'Bearer' "401: the error says what is needed"
req GET /v1/ping -H 'Authorization: Bearer wrong'
is "$CODE" 401 "wrong token: 401"
req GET /v1/ping -H 'Authorization: Bearer secre'
is "$CODE" 401 "a prefix of the token: 401"
req GET /v1/ping -H 'Authorization: Bearer secretX'
is "$CODE" 401 "the token plus a character: 401"
req GET /v1/ping -H 'Authorization: Basic c2VjcmV0'
is "$CODE" 401 "Basic instead of Bearer: 401"
req GET /v1/ping -H 'Authorization: secret'
is "$CODE" 401 "the bare token without 'Bearer ': 401"
req GET /v1/ping -H 'Authorization: Bearer '
is "$CODE" 401 "an empty Bearer token: 401"
req GET /v1/ping -H 'Authorization: Bearer secret'
is "$CODE" 200 "Bearer secret: 200"
is "$(jb .)" pong "Bearer secret: the answer"

# every kind of endpoint is guarded
for ep in "POST /run_code" "POST /v1/runs" "POST /api/v2/execute" "GET /api/v2/runtimes" "GET /metrics" \
  "GET /v1/pools" "POST /v1/sessions" "GET /v1/sessions" "GET /v1/sessions/ss-x/files?path=/work"; do
  set -- $ep
  req "$1" "$2" -H 'Content-Type: application/json' --data-binary '{"code":"print(1)","language":"python","cmd":["true"]}'
  [ "$1" = GET ] && req GET "$2"
  codes="${codes:-}$2=$CODE "
done
is "$(tr ' ' '\n' <<<"$codes" | grep -v '=401$' | grep -v '^$' | tr '\n' ' ')" "" "every API endpoint without the token: 401"
post_json /v1/runs '{"cmd":["echo","nothing ran"]}'
rows=$(sqlite3 "$DB" "SELECT COUNT(*) FROM attempts" 2>&1)
is "$rows" 0 "nothing ran for the unauthenticated requests (store empty)"
req POST /v1/runs -H 'Authorization: Bearer secret' -H 'Content-Type: application/json' --data-binary '{"cmd":["echo","authorized"]}'
is "$(jb .run.stdout)" authorized "POST /v1/runs with the token runs"
req POST /run_code -H 'Authorization: Bearer secret' -H 'Content-Type: application/json' \
  --data-binary '{"code":"print(7)","language":"python","run_timeout":10}'
is "$(jb '[.status, .run_result.stdout] | join(" ")')" "$(printf 'Success 7\n')" "POST /run_code with the token runs"

req GET /healthz
is "$CODE" 200 "/healthz without a token: 200 (liveness probes carry none)"
req GET /readyz
is "$CODE" 200 "/readyz without a token: 200"
req GET '/healthz/../v1/ping' --path-as-is
is "$CODE" 401 "a path that only starts like /healthz is still guarded (or normalised): 401"

# paddock export --runs --url sends the daemon's token: --token, --token-file, else $PADDOCK_TOKEN
env -u PADDOCK_TOKEN "$PADDOCK" export --runs --url "$U" --kind any >"$TMPD/x.jsonl" 2>"$TMPD/x.err"
rc=$?
[ "$rc" = 2 ] && grep -q -- '--token' "$TMPD/x.err"
ok $? "export --runs --url without a token: exit 2, the error names --token (exit $rc: $(head -c 200 "$TMPD/x.err"))"
env -u PADDOCK_TOKEN "$PADDOCK" export --runs --url "$U" --kind any --token secret >"$TMPD/x.jsonl" 2>"$TMPD/x.err"
is "$?/$(jq -sr 'map(.run.stdout) | index("authorized\n") != null' "$TMPD/x.jsonl")/$(wc -l <"$TMPD/x.jsonl")" "0/true/2" \
  "export --runs --token: the records (the /v1/runs and the /run_code that ran)"
printf 'secret\n' >"$TMPD/export.token"
env -u PADDOCK_TOKEN "$PADDOCK" export --runs --url "$U" --kind any --token-file "$TMPD/export.token" >"$TMPD/x.jsonl" 2>"$TMPD/x.err"
is "$?/$(wc -l <"$TMPD/x.jsonl")" "0/2" "export --runs --token-file: the records"
PADDOCK_TOKEN=secret "$PADDOCK" export --runs --url "$U" --kind any >"$TMPD/x.jsonl" 2>"$TMPD/x.err"
is "$?/$(wc -l <"$TMPD/x.jsonl")" "0/2" "export --runs with \$PADDOCK_TOKEN: the records"
"$PADDOCK" export --runs --help | grep -q -- '--token-file'
ok $? "export --runs --help names --token-file"
stop_daemon

# --- the token from the environment and from a file --------------------------------------------------
PADDOCK_TOKEN=from-env start_daemon
ok $? "daemon started with PADDOCK_TOKEN"
req GET /v1/ping
is "$CODE" 401 "PADDOCK_TOKEN: no token 401"
req GET /v1/ping -H 'Authorization: Bearer from-env'
is "$CODE" 200 "PADDOCK_TOKEN: its token 200"
stop_daemon
printf 'from-file\n' >"$TMPD/token"
chmod 600 "$TMPD/token"
start_daemon --token-file "$TMPD/token"
req GET /v1/ping -H 'Authorization: Bearer from-file'
is "$CODE" 200 "--token-file: its token (newline stripped) 200"
req GET /v1/ping -H 'Authorization: Bearer wrong'
is "$CODE" 401 "--token-file: a wrong token 401"
stop_daemon

# --- beyond loopback without a token: refused at start ------------------------------------------
# (the check happens before any socket is bound: nothing listens on 0.0.0.0 even for a moment)
timeout 20 env -u PADDOCK_TOKEN "$PADDOCK" serve --listen 0.0.0.0:0 --db "$TMPD/never.sqlite" >"$TMPD/refused.out" 2>&1
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ]
ok $? "--listen 0.0.0.0 without a token: exits non-zero at once (exit $rc)"
like "$(cat "$TMPD/refused.out")" 'token' "--listen 0.0.0.0 without a token: the message names the token ($(head -c 160 "$TMPD/refused.out"))"
is "$(grep -c 'serving on' "$TMPD/refused.out")" 0 "--listen 0.0.0.0 without a token: never served"

# --- a unix socket needs no token -----------------------------------------------------------------
SOCK=$TMPD/paddock.sock
"$PADDOCK" serve --listen "unix:$SOCK" --db "$TMPD/unix.sqlite" </dev/null >"$TMPD/unix.log" 2>&1 &
DPID=$!
wait_for 15 test -S "$SOCK"
code=$(curl -s -m 10 --unix-socket "$SOCK" -o "$TMPD/unix.body" -w '%{http_code}' http://localhost/v1/ping)
is "$code:$(cat "$TMPD/unix.body")" '200:"pong"' "unix socket listener without a token: /v1/ping 200"
is "$(stat -c %a "$SOCK" 2>/dev/null)" 660 "the unix socket is mode 660 (not world-writable)"
stop_daemon
[ ! -e "$SOCK" ]
ok $? "the socket file is removed at shutdown"

done_testing
