#!/usr/bin/env bash
# Cluster mode's objects in an S3-compatible store (issue 41, docs/cluster.md "Objects"): two
# nodes on one broker with --cluster-objects s3://BUCKET/PREFIX against s3rver (npm's fake S3,
# which `make deps` installs under /usr/local/lib/paddock/s3rver). A 10 MB output run by one node
# is read through the other after the runner is killed (SIGKILL): the whole output
# (GET /v1/runs/{id}/output), the record too large for a message, and the first answer of the
# same request id, all from the bucket, none from the broker's object stream (not even made).
# A start with wrong credentials, a credentials file others may read, a missing bucket or no
# endpoint stops the node saying why: no silent fallback to the broker. Then an https:// endpoint
# (s3rver with a self-signed certificate): refused without --cluster-s3-ca, used with it.
# s3rver checks the access key id but not Signature V4's signature: tests/unit/cluster_s3sign.c
# checks the signature against AWS's published examples.
source "$(dirname "$0")/api.sh"
source "$(dirname "$0")/nats.sh"

nats_or_skip
S3RVER=${PADDOCK_S3RVER:-/usr/local/lib/paddock/s3rver/node_modules/.bin/s3rver}
if ! [ -x "$S3RVER" ] || ! command -v node >/dev/null; then
  echo "1..0 # SKIP s3rver is missing at $S3RVER (make deps installs it from npm; was npm unreachable?)"
  exit 0
fi
plan 25

S3PORT=$(free_port)
mkdir -p "$TMPD/s3"
"$S3RVER" -d "$TMPD/s3" -a 127.0.0.1 -p "$S3PORT" --silent --configure-bucket paddock >"$TMPD/s3rver.log" 2>&1 &
S3_PID=$!
cleanup 'kill -TERM "$S3_PID" 2>/dev/null; wait "$S3_PID" 2>/dev/null'
wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$S3PORT" 2>/dev/null
ok $? "s3rver $("$S3RVER" --version) on 127.0.0.1:$S3PORT with the bucket paddock"
nats_start
ok $? "nats-server with JetStream on 127.0.0.1:$NPORT"

printf '[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' >"$TMPD/creds"
chmod 600 "$TMPD/creds"
S3=(--cluster-objects s3://paddock/fleet --cluster-s3-endpoint "http://127.0.0.1:$S3PORT" --cluster-s3-region us-east-1)
declare -A NPID NURL
kill_node() { kill -KILL "${NPID[$1]}" 2>/dev/null; wait "${NPID[$1]}" 2>/dev/null; unset "NPID[$1]"; }
cleanup 'for n in "${!NPID[@]}"; do kill -KILL "${NPID[$n]}" 2>/dev/null; wait "${NPID[$n]}" 2>/dev/null; done'

# --- wrong settings: the node does not start, and says why --------------------------------------
start_refused() {  # start_refused [SERVE ARGS]: "rc|last line"
  local log=$TMPD/refused.$RANDOM.log rc
  "$PADDOCK" serve --listen 127.0.0.1:0 --db "$TMPD/db.refused.sqlite" --cluster "nats://127.0.0.1:$NPORT" \
    --node-id refused --warm 1 "$@" </dev/null >"$log" 2>&1
  rc=$?
  echo "$rc|$(tail -1 "$log")"
}
printf 'aws_access_key_id = NOT-S3RVER\naws_secret_access_key = secret-7f3a91\n' >"$TMPD/wrong"
chmod 600 "$TMPD/wrong"
like "$(start_refused --cluster-s3-credentials "$TMPD/wrong" "${S3[@]}")" '^[1-9][0-9]*\|.*s3://paddock/fleet.*refused.*access key NOT-S3RVER.*403 InvalidAccessKeyId' \
  "wrong credentials: the node does not start, the store's refusal said (InvalidAccessKeyId)"
cp "$TMPD/creds" "$TMPD/open" && chmod 644 "$TMPD/open"
like "$(start_refused --cluster-s3-credentials "$TMPD/open" "${S3[@]}")" '^[1-9][0-9]*\|.*--cluster-s3-credentials .*open: mode 0644 lets others read the secret' \
  "a credentials file others may read (0644): refused"
like "$(start_refused --cluster-s3-credentials "$TMPD/creds" --cluster-objects s3://no-such-bucket --cluster-s3-endpoint "http://127.0.0.1:$S3PORT")" \
  '^[1-9][0-9]*\|.*s3://no-such-bucket.*404 NoSuchBucket' "a bucket the store does not have: refused (NoSuchBucket)"
like "$(start_refused --cluster-s3-credentials "$TMPD/creds" --cluster-objects s3://paddock)" '^[1-9][0-9]*\|.*needs --cluster-s3-endpoint' \
  "s3:// without an endpoint: refused"
out=$(start_refused --cluster-s3-credentials "$TMPD/creds" "${S3[@]}" --cluster-objects s3://paddock --cluster-s3-endpoint "http://127.0.0.1:$(free_port)")
like "$out" '^[1-9][0-9]*\|.*s3 endpoint 127.0.0.1:[0-9]+: connect' "an endpoint nothing listens on: refused"
like "$(AWS_ACCESS_KEY_ID=NOT-FROM-ENV AWS_SECRET_ACCESS_KEY=secret-7f3a91 start_refused "${S3[@]}")" \
  '^[1-9][0-9]*\|.*access key NOT-FROM-ENV.*InvalidAccessKeyId' "no credentials file: the keys of the environment (\$AWS_ACCESS_KEY_ID), here refused"
like "$(unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY; start_refused "${S3[@]}")" \
  '^[1-9][0-9]*\|.*no credentials \(--cluster-s3-credentials FILE, or \$AWS_ACCESS_KEY_ID' "no credentials at all: refused, saying where they may come from"
out=$("$PADDOCK" serve --check --cluster "nats://127.0.0.1:$NPORT" --cluster-objects s4://paddock 2>&1)
is "$?|$out" "64|paddock: --cluster-objects s4://paddock: nats or s3://BUCKET[/PREFIX]" \
  "serve --check: a --cluster-objects that is neither nats nor s3:// refused (64) before anything starts"
grep -q 'secret-7f3a91' "$TMPD"/refused.*.log
ok $([ $? = 1 ] && echo 0 || echo 1) "no message says the secret"

# --- two nodes, objects in the bucket ------------------------------------------------------------
cluster_node a "${S3[@]}" --cluster-s3-credentials "$TMPD/creds" && cluster_node b "${S3[@]}" --cluster-s3-credentials "$TMPD/creds"
ok $? "nodes a and b joined, their objects in s3://paddock/fleet"
BIG='{"language":"bash","code":"head -c 10000000 /dev/zero | tr \"\\\\0\" a"}'
U=${NURL[b]} req POST /run_code -H 'X-Request-Id: big-s3' -H 'Content-Type: application/json' --data-binary "$BIG"
ran=$(jb .node)
is "$CODE|$(jb '.run_result.stdout | length')" "200|10000000" "a /run_code answer with 10 MB of output through node b (run by $ran)"
other=$([ "$ran" = a ] && echo b || echo a)
wait_for 20 bash -c "ls '$TMPD/s3/paddock/fleet/' 2>/dev/null | grep -q '^out-big-s3-stdout'"
ok $? "the whole output is an object in the bucket (fleet/out-big-s3-stdout)"
kill_node "$ran"
ok 0 "node $ran, which ran it, killed (SIGKILL)"
U=${NURL[$other]} req GET /v1/runs/big-s3/output
is "$CODE|$(jb .whole)|$(jb .stdout_bytes)|$(jb .node)" "200|true|10000000|$ran" \
  "GET /v1/runs/big-s3/output through node $other: the whole 10 MB, from the bucket"
is "$(jq -r .stdout "$BODY" | tr -d a | wc -c)|$(jq -r .stdout "$BODY" | wc -c)" "1|10000001" "... every byte of it"
U=${NURL[$other]} req GET /v1/runs/big-s3
is "$CODE|$(jb .record.node)|$(jb '.record.run.stdout | length > 0')|$(ls "$TMPD/s3/paddock/fleet/" | grep -c '^rec-.*._S3rver_object$')" \
  "200|$ran|true|1" "GET /v1/runs/big-s3 through node $other: the record (larger than a message) read whole from its rec- object"
U=${NURL[$other]} req POST /run_code -H 'X-Request-Id: big-s3' -H 'Content-Type: application/json' --data-binary "$BIG"
is "$CODE|$(jb '.run_result.stdout | length')|$(jb .node)" "200|10000000|$ran" \
  "the same request id through node $other: the first answer"
is "$(ls "$TMPD/s3/paddock/fleet/" | grep -c '^res-.*._S3rver_object$')" 1 "... kept as a res- object in the bucket (larger than the broker carries)"
is "$(curl -s "http://127.0.0.1:$MPORT/jsz?streams=true" | jq '[.account_details[].stream_detail[] | select(.name == "PADDOCK_OBJECTS")] | length')" 0 \
  "the broker's object stream was never made: every object went to the bucket"

# --- an https:// endpoint (libcurl): its certificate checked ------------------------------------
for n in "${!NPID[@]}"; do kill_node "$n"; done # one backend per cluster: the http bucket's nodes go
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMPD/tls.key" -out "$TMPD/tls.crt" -days 2 \
  -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1
TLSPORT=$(free_port)
mkdir -p "$TMPD/s3tls"
"$S3RVER" -d "$TMPD/s3tls" -a 127.0.0.1 -p "$TLSPORT" --key "$TMPD/tls.key" --cert "$TMPD/tls.crt" --silent \
  --configure-bucket paddock >"$TMPD/s3rver-tls.log" 2>&1 &
TLS_PID=$!
cleanup 'kill -TERM "$TLS_PID" 2>/dev/null; wait "$TLS_PID" 2>/dev/null'
wait_for 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$TLSPORT" 2>/dev/null
TLS=(--cluster-objects s3://paddock/tls --cluster-s3-endpoint "https://127.0.0.1:$TLSPORT")
like "$(start_refused --cluster-s3-credentials "$TMPD/creds" "${TLS[@]}")" '^[1-9][0-9]*\|.*s3 endpoint 127.0.0.1:[0-9]+: https .*certificate' \
  "an https:// endpoint whose certificate no trusted CA signed: refused"
cluster_node c "${TLS[@]}" --cluster-s3-credentials "$TMPD/creds" --cluster-s3-ca "$TMPD/tls.crt"
ok $? "node c joined with its objects at https://127.0.0.1:$TLSPORT (--cluster-s3-ca: the store's certificate)"
U=${NURL[c]} req POST /run_code -H 'X-Request-Id: tls-out' -H 'Content-Type: application/json' \
  --data-binary '{"language":"bash","code":"head -c 3000000 /dev/zero | tr \"\\\\0\" b"}'
U=${NURL[c]} req GET /v1/runs/tls-out/output
is "$CODE|$(jb .whole)|$(jb .stdout_bytes)|$(jq -r .stdout "$BODY" | tr -d b | wc -c)" "200|true|3000000|1" \
  "a 3 MB output put and read back over TLS"
is "$(ls "$TMPD/s3tls/paddock/tls/" | grep -c '^out-tls-out-stdout\._S3rver_object$')" 1 "... an object in the TLS store's bucket"
