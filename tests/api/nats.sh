# Helpers of the cluster tests (tests/api/cluster*.t), which start nats-server themselves. Source
# after api.sh.
#   nats_or_skip    exits the file as skipped (with the reason) where nats-server or libnats 3.4
#                   is missing
#   free_port       a loopback TCP port free now (for nats-server's client and monitor ports)
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
