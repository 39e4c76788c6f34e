#!/usr/bin/env bash
# A session's download streams from tar in the sandbox to the client: the daemon spools nothing
# on the host (a spool of up to 1 GiB per download in the host's /tmp, 256 at once, was a host
# disk exhaustion from one client), and one session runs one transfer at a time.
source "$(dirname "$0")/api.sh"
plan 7

start_daemon
ok $? "daemon started"
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
post_json "/v1/sessions/$S/exec" '{"cmd":["sh","-c","mkdir -p /work/big && head -c 104857600 /dev/urandom > /work/big/r.bin && echo made"]}'
is "$(jb .stdout)" made "100 MB of random bytes made in the session"

# a slow client: the transfer lasts while the daemon's descriptors are looked at
curl -s -m 300 --limit-rate 8M -o "$TMPD/big.tar" "$U/v1/sessions/$S/download?dir=/work/big" &
CPID=$!
cleanup "kill $CPID"
wait_for 60 bash -c "[ \$(stat -c %s '$TMPD/big.tar' 2>/dev/null || echo 0) -gt 1048576 ]"
ok $? "the archive's first MiB arrived"
# every regular file the daemon holds open, its size (a spool is one: unlinked, in the host's /tmp)
held=0 names=""
for f in /proc/"$DPID"/fd/*; do
  t=$(readlink "$f" 2>/dev/null) || continue
  case "$t" in /*) ;; *) continue ;; esac
  [ -f "$f" ] || continue
  sz=$(stat -L -c %s "$f" 2>/dev/null || echo 0)
  if [ "$sz" -gt 1048576 ]; then held=$((held + sz)); names="$names $t"; fi
done
is "$held" 0 "while it streams, the daemon holds no spooled archive on the host ($names)"
req GET "/v1/sessions/$S/download?dir=/work/big"
is "$CODE" 409 "a second transfer of the same session meanwhile: 409"
wait "$CPID"
is "$?" 0 "the slow download completes"
mkdir -p "$TMPD/x"
tar -C "$TMPD/x" -xf "$TMPD/big.tar" && [ "$(stat -c %s "$TMPD/x/r.bin")" = 104857600 ]
ok $? "and the archive is whole"
req DELETE "/v1/sessions/$S"
done_testing
