# Helpers shared by the API test files (tests/api/*.t): each file starts its own `paddock serve`
# on a loopback port the kernel picks (--listen 127.0.0.1:0, the bound address is read back from
# the daemon's "serving on" line) with its own --db, and stops it when the file exits.
# Source after ../lib.sh.
#   start_daemon ARGS...   starts the daemon (extra serve flags), waits for /healthz; sets U, DPID, DB
#   stop_daemon [SECS]     SIGTERM, waits up to SECS (default 30) then SIGKILL; sets DAEMON_RC
#   req METHOD PATH [CURL ARGS...]   one request to $U; sets CODE, BODY (file $TMPD/body), HDRS
#   jb FILTER              jq -r FILTER on the last body
#   hdr NAME               a header of the last response (case-insensitive), without CR
#   cleanup CMD            run CMD when the file exits, last registered first
#   plan N                 as lib.sh's; the file fails at exit if it ran another number of tests
#   wait_for SECS CMD...   polls CMD every 0.1 s until it succeeds (0) or SECS pass (1)
#   skip REASON            a passing "ok N # skip REASON" line
#   note_run URL           a daemon started otherwise: its sessions' trajectories go at exit too
set -u
export LC_ALL=C
# loopback only: never through a proxy
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
cd "$(dirname "$0")/../.." || exit 1
source tests/lib.sh
case $PADDOCK in /*) ;; *) PADDOCK=$PWD/$PADDOCK ;; esac
if [ ! -x "$PADDOCK" ]; then
  echo "1..0 # SKIP no paddock binary at $PADDOCK (run make)"
  exit 1
fi
for tool in curl jq python3; do
  command -v "$tool" >/dev/null || { echo "1..0 # SKIP $tool is missing"; exit 1; }
done

TAG=pdk-api-$$-$RANDOM
TMPD=$(mktemp -d "/tmp/$TAG.XXXXXX")
chmod 755 "$TMPD"
U=""
DPID=""
DB=""
DAEMON_RC=""

_cleanups=()
_planned=""
plan() { _planned=$1; echo "1..$1"; }
cleanup() { _cleanups+=("$1"); }
skip() { _n=$((_n + 1)); echo "ok $_n # skip $*"; }
wait_for() {
  local secs=$1 i
  shift
  for ((i = 0; i < secs * 10; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

_daemon_alive() { [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; }

# start_daemon [serve flags...]: the daemon's log is $TMPD/daemon.N.log
_ndaemons=0
start_daemon() {
  _ndaemons=$((_ndaemons + 1))
  DLOG=$TMPD/daemon.$_ndaemons.log
  DB=$TMPD/db.$_ndaemons.sqlite
  "$PADDOCK" serve --listen 127.0.0.1:0 --db "$DB" "$@" </dev/null >"$DLOG" 2>&1 &
  DPID=$!
  local addr="" i
  for ((i = 0; i < 300; i++)); do
    addr=$(sed -n 's/^paddock: serving on //p' "$DLOG" 2>/dev/null | head -1)
    [ -n "$addr" ] && break
    _daemon_alive || break
    sleep 0.1
  done
  if [ -z "$addr" ]; then
    diag "the daemon did not start: $(tail -c 600 "$DLOG")"
    U="http://127.0.0.1:1"
    return 1
  fi
  U="http://$addr"
  for ((i = 0; i < 150; i++)); do
    if [ "$(curl -s -m 2 -o "$TMPD/healthz" -w '%{http_code}' "$U/healthz")" = 200 ]; then
      # its sessions' trajectories (ss-<run id>-<n>) are removed when the file exits
      jq -r '.run_id // empty' "$TMPD/healthz" >>"$TMPD/runs" 2>/dev/null
      return 0
    fi
    sleep 0.1
  done
  diag "the daemon at $U never answered /healthz: $(tail -c 600 "$DLOG")"
  return 1
}

stop_daemon() {
  local secs=${1:-30} i
  DAEMON_RC=""
  [ -n "$DPID" ] || return 0
  kill -TERM "$DPID" 2>/dev/null
  for ((i = 0; i < secs * 10; i++)); do
    _daemon_alive || break
    sleep 0.1
  done
  if _daemon_alive; then
    diag "the daemon (pid $DPID) outlived SIGTERM by ${secs}s: SIGKILL"
    kill -KILL "$DPID" 2>/dev/null
  fi
  wait "$DPID" 2>/dev/null
  DAEMON_RC=$?
  DPID=""
}

note_run() { curl -s -m 5 "$1/healthz" | jq -r '.run_id // empty' >>"$TMPD/runs" 2>/dev/null; }

# The trajectories of the sessions the daemons of this file opened: the state directory is the
# host's, shared by every test and daemon, so each file removes its own.
_forget_trajectories() {
  local run dir=${PADDOCK_STATE_DIR:-/var/lib/paddock}/trajectories
  [ -s "$TMPD/runs" ] || return 0
  while read -r run; do
    [[ $run =~ ^[0-9a-f]{8}$ ]] && rm -f "$dir/ss-$run-"*.jsonl
  done <"$TMPD/runs"
}

_run_cleanups() {
  local rc=$? i
  for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[$i]}" >/dev/null 2>&1; done
  stop_daemon 20 >/dev/null 2>&1
  _forget_trajectories
  # a sanitizer build of the daemon (PADDOCK=build-asan/bin/paddock, build-tsan/bin/paddock)
  # reports here; a report fails the file (ThreadSanitizer's data races do not stop the daemon)
  # (anchored to the sanitizers' own line starts: the daemon's lines are JSON objects)
  local san='^==[0-9]+==ERROR: [A-Za-z]+Sanitizer|^WARNING: ThreadSanitizer|^[^ ]+:[0-9]+:[0-9]+: runtime error:'
  if grep -q -E "$san" "$TMPD"/daemon.*.log 2>/dev/null; then
    grep -h -B2 -A40 -E "$san" "$TMPD"/daemon.*.log |
      head -200 | sed 's/^/# daemon: /'
    [ -n "${PADDOCK_SANITIZER_LOG:-}" ] && cat "$TMPD"/daemon.*.log >>"$PADDOCK_SANITIZER_LOG"
    [ "$rc" = 0 ] && rc=1
  fi
  [ -n "${PADDOCK_API_KEEP:-}" ] && cp "$TMPD"/daemon.*.log "$PADDOCK_API_KEEP"/ 2>/dev/null
  rm -rf "$TMPD"
  if [ -n "$_planned" ] && [ "$_n" != "$_planned" ]; then
    diag "planned $_planned tests but ran $_n"
    exit 1
  fi
  exit "$rc"
}
trap _run_cleanups EXIT
trap 'exit 130' INT TERM

# req METHOD PATH [curl args...]
req() {
  local method=$1 path=$2
  shift 2
  BODY=$TMPD/body
  : >"$BODY"
  : >"$TMPD/hdrs"
  CODE=$(curl -s -m "${REQ_TIMEOUT:-60}" -X "$method" -o "$BODY" -D "$TMPD/hdrs" -w '%{http_code}' "$@" "$U$path")
  [ -n "$CODE" ] || CODE=000
  HDRS=$(tr -d '\r' <"$TMPD/hdrs")
}
# post_json PATH JSON
post_json() { req POST "$1" -H 'Content-Type: application/json' --data-binary "$2"; }
jb() { jq -r "$1" <"$BODY" 2>/dev/null; }
hdr() { awk -v n="$(tr 'A-Z' 'a-z' <<<"$1")" -F': ' 'tolower($1) == n { sub(/\r$/, "", $2); print $2 }' <<<"$HDRS" | tail -1; }
body() { cat "$BODY"; }
# hold_store_lock: another process takes the store's ($DB) SQLite write lock and holds it until
# release_store_lock (also at exit); needs python3. Clients started meanwhile must close fd 7
# (`7>&-`), or they keep the lock's pipe open.
hold_store_lock() {
  mkfifo "$TMPD/hold"
  python3 -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").write("locked")
sys.stdin.read()
c.execute("ROLLBACK")
' "$DB" "$TMPD/locked" <"$TMPD/hold" &
  HOLDER=$!
  exec 7>"$TMPD/hold"
  cleanup "release_store_lock; kill $HOLDER 2>/dev/null"
  wait_for 30 test -s "$TMPD/locked"
}
release_store_lock() { exec 7>&- 2>/dev/null; }
# is_json: the last body parses as JSON
is_json() { jq -e . <"$BODY" >/dev/null 2>&1; }
