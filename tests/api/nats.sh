# Helpers of the cluster tests (tests/api/cluster*.t), which start nats-server themselves. Source
# after api.sh.
#   nats_or_skip    exits the file as skipped (with the reason) where nats-server or libnats 3.4
#                   is missing
#   free_port       a loopback TCP port free now (for nats-server's client and monitor ports)
#   nats_start [ARGS]  nats-server with JetStream on fresh loopback ports (NPORT, MPORT; NATS_PID),
#                   stopped at exit; ARGS go to nats-server (e.g. -c FILE)
#   cluster_node NAME [SERVE ARGS]  a node of that broker, its store at $TMPD/db.NAME.sqlite;
#                   sets NPID[NAME] and NURL[NAME] (the caller declares them: declare -A NPID NURL)
nats_or_skip() {
  if ! command -v nats-server >/dev/null; then
    echo "1..0 # SKIP nats-server is missing (scripts/install-deps.sh installs it)"
    exit 0
  fi
  if ! [ -e /usr/lib/x86_64-linux-gnu/libnats.so.3.4 ] && ! ldconfig -p | grep -q 'libnats.so.3.4'; then
    echo "1..0 # SKIP libnats3.4 is missing (scripts/install-deps.sh installs it)"
    exit 0
  fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

nats_start() {
  NPORT=$(free_port)
  MPORT=$(free_port)
  nats-server "$@" -js -sd "$TMPD/js" -a 127.0.0.1 -p "$NPORT" -m "$MPORT" >>"$TMPD/nats.log" 2>&1 &
  NATS_PID=$!
  cleanup 'kill -TERM "$NATS_PID" 2>/dev/null; wait "$NATS_PID" 2>/dev/null'
  wait_for 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$NPORT" 2>/dev/null
}

cluster_node() {
  local n=$1 log=$TMPD/daemon.$1.$RANDOM.log addr="" i
  shift
  "$PADDOCK" serve "$@" --listen 127.0.0.1:0 --db "$TMPD/db.$n.sqlite" --cluster "nats://127.0.0.1:$NPORT" \
    --node-id "$n" --warm 1 </dev/null >"$log" 2>&1 &
  NPID[$n]=$!
  for ((i = 0; i < 300; i++)); do
    addr=$(sed -n 's/^paddock: serving on //p' "$log" 2>/dev/null | head -1)
    [ -n "$addr" ] && break
    kill -0 "${NPID[$n]}" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$addr" ] || { diag "node $n did not start: $(tail -c 400 "$log")"; return 1; }
  NURL[$n]=http://$addr
  wait_for 20 bash -c "[ \"\$(curl -s -m 2 -o /dev/null -w '%{http_code}' ${NURL[$n]}/healthz)\" = 200 ]" &&
    note_run "${NURL[$n]}"
}
