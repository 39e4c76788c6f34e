#!/usr/bin/env bash
# Sessions over HTTP: create, idempotent exec (request_id), files (binary PUT/GET, list, stat,
# DELETE), escapes through the file API (symlinks planted by an exec, ../ paths, /proc/1/root,
# tar archives) that must never reach the host's files, tar upload/download, the full output of a
# large exec, DELETE, and the idle TTL.
source "$(dirname "$0")/api.sh"
plan 85

start_daemon
ok $? "daemon started"

# a host canary: a file in the host's /tmp with content and a size nothing else has
CANDIR=$TMPD/canary-dir
mkdir -p "$CANDIR"
CANARY=$CANDIR/canary.txt
CANARY_TEXT="host-canary-$TAG-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s' "$CANARY_TEXT" >"$CANARY"
CANARY_SIZE=$(stat -c %s "$CANARY")
chmod 644 "$CANARY"
canary_intact() { [ "$(cat "$CANARY")" = "$CANARY_TEXT" ] && [ "$(ls "$CANDIR")" = canary.txt ]; }
SHADOW_SUM=$(sha256sum </etc/shadow | cut -d' ' -f1)

sx() {  # sx SESSION JSON: POST /v1/sessions/SESSION/exec
  post_json "/v1/sessions/$1/exec" "$2"
}

# --- create, get, list -----------------------------------------------------------------------------
post_json /v1/sessions '{"template":"bash","metadata":{"episode":7}}'
is "$CODE" 201 "create: 201"
S=$(jb .session_id)
like "$S" '^ss-' "create: a session id ($S)"
is "$(jb .template)" bash "create: template bash"
req GET "/v1/sessions/$S"
is "$CODE" 200 "GET the session: 200"
is "$(jb '[.session_id, .state] | join(" ")')" "$S READY" "GET the session: its id, READY"
req GET /v1/sessions
is "$(jb "[.sessions[].session_id] | index(\"$S\") != null")" true "the session is listed"
post_json /v1/sessions '{"template":"no-such-template"}'
is "$CODE/$(jb .error)" "400/template: 'no-such-template' is not a template of this daemon (bash, python, c, cpp, node)" \
  "create with an unknown template: 400 naming the field and the templates, as /v1/runs"

# --- idempotent exec ------------------------------------------------------------------------------
sx "$S" '{"shell":"echo run >> /work/count; wc -l < /work/count","request_id":"req-1"}'
is "$CODE" 200 "exec with request_id: 200"
first=$(jb .stdout)
is "$first" 1 "exec: ran once (count 1)"
is "$(jb .request_id)" req-1 "exec: request_id echoed"
sx "$S" '{"shell":"echo run >> /work/count; wc -l < /work/count","request_id":"req-1"}'
is "$CODE" 200 "the same request_id again: 200"
is "$(jb .stdout)" "$first" "the same request_id again: the recorded answer"
sx "$S" '{"cmd":["sh","-c","wc -l < /work/count"]}'
is "$(jb .stdout)" 1 "the command ran exactly once (count still 1)"
sx "$S" '{"shell":"echo run >> /work/count; wc -l < /work/count","request_id":"req-2"}'
is "$(jb .stdout)" 2 "a new request_id runs again (count 2)"
sx "$S" '{"cmd":"not a list"}'
is "$CODE" 400 "exec with a malformed cmd: 400"
sx "$S" '{"shell":"echo before; sleep 30","timeout":0.5}'
is "$(jb '[.status, (.exit_code|tostring), (.signal|tostring)] | join(" ")')" "TO null 9" \
  "a step past its time limit: TO, exit_code null (it did not exit), signal 9"
sx "$S" '{"shell":"exit 3"}'
is "$(jb '[.status, (.exit_code|tostring), (.signal|tostring)] | join(" ")')" "RE 3 0" "a step that exits 3: RE, exit_code 3, signal 0"
sx "$S" '{"shell":"pwd; cat","stdin":"in put","cwd":"/tmp"}'
is "$(jb .stdout)" "$(printf '/tmp\nin put')" "exec: cwd and stdin honoured"

# --- files: binary round trip, list, stat, delete ----------------------------------------------
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 40 + b"\0\0end\0")' >"$TMPD/bin.dat"
BIN_SIZE=$(stat -c %s "$TMPD/bin.dat")
BIN_SUM=$(sha256sum <"$TMPD/bin.dat" | cut -d' ' -f1)
req PUT "/v1/sessions/$S/files?path=/work/data/bin.dat" --data-binary @"$TMPD/bin.dat"
is "$CODE" 200 "PUT a binary file with NUL bytes: 200"
is "$(jb .bytes)" "$BIN_SIZE" "PUT: all $BIN_SIZE bytes taken"
req GET "/v1/sessions/$S/files?path=/work/data/bin.dat"
is "$CODE" 200 "GET the file back: 200"
is "$(sha256sum <"$BODY" | cut -d' ' -f1)" "$BIN_SUM" "GET: byte-for-byte the same"
sx "$S" '{"cmd":["sh","-c","sha256sum < /work/data/bin.dat | cut -d\" \" -f1"]}'
is "$(jb .stdout)" "$BIN_SUM" "inside the sandbox the file is the same bytes"
req PUT "/v1/sessions/$S/files?path=/work/data/b.txt" --data-binary 'bee'
req GET "/v1/sessions/$S/files?path=/work/data"
is "$CODE" 200 "list a directory: 200"
is "$(jb '[.entries[] | "\(.name):\(.type)"] | sort | join(" ")')" "b.txt:file bin.dat:file" "list: names and types"
is "$(jb '.entries[] | select(.name == "bin.dat") | .size')" "$BIN_SIZE" "list: sizes"
req GET "/v1/sessions/$S/stat?path=/work/data/bin.dat"
is "$CODE" 200 "stat: 200"
is "$(jb '[.type, (.size | tostring)] | join(" ")')" "file $BIN_SIZE" "stat: type file, size"
req GET "/v1/sessions/$S/stat?path=/work/data"
is "$(jb .type)" dir "stat of a directory: dir"
req DELETE "/v1/sessions/$S/files?path=/work/data/bin.dat"
is "$CODE" 200 "DELETE a file: 200"
req GET "/v1/sessions/$S/files?path=/work/data/bin.dat"
is "$CODE" 404 "GET a deleted file: 404"
req GET "/v1/sessions/$S/stat?path=/work/data/bin.dat"
is "$CODE" 404 "stat a deleted file: 404"
req GET "/v1/sessions/$S/files"
is "$CODE" 400 "files without ?path: 400"

# --- escapes through the file API ------------------------------------------------------------
sx "$S" "$(jq -cn --arg c "$CANARY" --arg d "$CANDIR" '{cmd: ["sh", "-c",
  "mkdir -p /work/esc && cd /work/esc && ln -s \($c) abs && ln -s ../../../../../../../../..\($c) rel &&
   ln -s /etc/shadow shadow && ln -s / root && ln -s \($d) dir && ln -s /proc/1/root/\($c) proc && echo planted"]}')"
is "$(jb .stdout)" planted "an exec plants symlinks to the canary, /etc/shadow, / and the canary dir"
leak=""
for p in /work/esc/abs /work/esc/rel /work/esc/shadow "/work/esc/root$CANARY" /work/esc/dir/canary.txt /work/esc/proc \
  "/work/../../../../../..$CANARY" "../../../../..$CANARY" "/proc/1/root$CANARY" "/proc/self/root$CANARY" \
  "/proc/1/cwd/../../../..$CANARY" "$CANARY" /etc/shadow; do
  req GET "/v1/sessions/$S/files?path=$p"
  if [ "$CODE" = 200 ] && { grep -qF "$CANARY_TEXT" "$BODY" || [ "$(sha256sum <"$BODY" | cut -d' ' -f1)" = "$SHADOW_SUM" ]; }; then
    leak="$leak $p"
  fi
  [[ $CODE =~ ^(200|400|403|404)$ ]] || leak="$leak $p(HTTP $CODE)"
done
is "$leak" "" "GET through planted symlinks, ../ and /proc/*/root never returns the host's files"
sizes=""
for p in /work/esc/abs /work/esc/rel "$CANARY" "/proc/1/root$CANARY" /work/esc/dir/canary.txt; do
  req GET "/v1/sessions/$S/stat?path=$p"
  [ "$CODE" = 200 ] && [ "$(jb .size)" = "$CANARY_SIZE" ] && sizes="$sizes $p"
done
is "$sizes" "" "stat through the same paths never describes the host's canary"
for p in /work/esc/abs /work/esc/rel /work/esc/dir/new.txt "/proc/1/root$CANARY" "/proc/self/root$CANDIR/new.txt" \
  "/work/../../../..$CANARY" "$CANARY"; do
  req PUT "/v1/sessions/$S/files?path=$p" --data-binary "PWNED by $p"
done
canary_intact
ok $? "PUT through the same paths leaves the host canary and its directory untouched"
for p in /work/esc/abs /work/esc/rel "/proc/1/root$CANARY" "$CANARY"; do
  req DELETE "/v1/sessions/$S/files?path=$p"
done
canary_intact
ok $? "DELETE through the same paths leaves the host canary in place"
req GET "/v1/sessions/$S/download?dir=/proc/1/root$CANDIR"
! grep -qaF "$CANARY_TEXT" "$BODY"
ok $? "download of /proc/1/root<canary dir> does not carry the canary"
req GET "/v1/sessions/$S/files?path=/work/esc/dir"
! grep -qF canary.txt "$BODY"
ok $? "listing a symlink to the host's canary dir does not show the host's entries"

# a tar whose symlink points at the host dir, then a file through it
mkdir -p "$TMPD/evil"
ln -s "$CANDIR" "$TMPD/evil/link"
tar -C "$TMPD/evil" -cf "$TMPD/evil.tar" link
mkdir -p "$TMPD/evil2/link" && echo "PWNED by tar" >"$TMPD/evil2/link/injected.txt"
tar -C "$TMPD/evil2" -rf "$TMPD/evil.tar" link/injected.txt 2>/dev/null || tar -C "$TMPD/evil2" -cf "$TMPD/evil.tar" link/injected.txt
req POST "/v1/sessions/$S/upload?dir=/work/evil" --data-binary @"$TMPD/evil.tar" -H 'Content-Type: application/x-tar'
[[ $CODE =~ ^(200|400)$ ]] && canary_intact && [ ! -e "$CANDIR/injected.txt" ]
ok $? "a tar with a symlink to the host dir and a file through it: host untouched (HTTP $CODE)"
python3 - "$TMPD/dotdot.tar" "$CANDIR" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for name in ("../../../../../../../.." + sys.argv[2] + "/dotdot.txt", sys.argv[2] + "/absolute.txt"):
        data = b"PWNED by tar member " + name.encode()
        info = tarfile.TarInfo(name); info.size = len(data)
        t.addfile(info, io.BytesIO(data))
PY
req POST "/v1/sessions/$S/upload?dir=/work/evil3" --data-binary @"$TMPD/dotdot.tar"
canary_intact
ok $? "a tar with ../ and absolute member names aimed at the host dir: nothing lands there (HTTP $CODE)"
[ -e "/etc/shadow" ] && [ "$(sha256sum </etc/shadow | cut -d' ' -f1)" = "$SHADOW_SUM" ]
ok $? "the host's /etc/shadow is unchanged"

# --- tar upload then download ----------------------------------------------------------------------
mkdir -p "$TMPD/src/a/b" "$TMPD/src/empty"
printf 'one\n' >"$TMPD/src/one.txt"
head -c 200000 /dev/urandom >"$TMPD/src/a/b/random.bin"
: >"$TMPD/src/a/zero-length"
ln -s one.txt "$TMPD/src/link-to-one"
tar -C "$TMPD/src" -cf "$TMPD/up.tar" .
req POST "/v1/sessions/$S/upload?dir=/work/up" --data-binary @"$TMPD/up.tar" -H 'Content-Type: application/x-tar'
is "$CODE" 200 "upload a tar: 200"
sx "$S" '{"cmd":["sh","-c","cat /work/up/link-to-one; wc -c < /work/up/a/b/random.bin"]}'
is "$(jb .stdout)" "$(printf 'one\n200000')" "upload: the files are there inside"
req GET "/v1/sessions/$S/download?dir=/work/up"
is "$CODE" 200 "download the directory: 200"
like "$(hdr Content-Type)" 'tar' "download: Content-Type is a tar"
mkdir -p "$TMPD/back"
tar -C "$TMPD/back" -xf "$BODY" 2>"$TMPD/tar.err"
diff -r --no-dereference "$TMPD/src" "$TMPD/back" >"$TMPD/diff" 2>&1
ok $? "tar round trip: the same tree, bytes, empty file and symlink$( [ -s "$TMPD/diff" ] && echo " ($(head -c 200 "$TMPD/diff"))")"

hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$DPID/status"; }
# files and downloads are sent from their files, not read into the daemon's memory: a 60 MB GET
# costs it nothing; over 64 MiB, 413
sx "$S" '{"cmd":["sh","-c","head -c 62914560 /dev/urandom > /work/f60 && head -c 70000000 /dev/zero > /work/f70 && mkfifo /work/ff && echo ok"]}'
before=$(hwm)
size=$(curl -s -m 60 -o "$TMPD/f60" -w '%{size_download}' "$U/v1/sessions/$S/files?path=/work/f60")
after=$(hwm)
[ "$size" = 62914560 ] && [ $((after - before)) -lt 10240 ]
ok $? "GET of a 60 MB file: all of it ($size bytes), the daemon's peak memory grew by $(((after - before) / 1024)) MiB"
req GET "/v1/sessions/$S/files?path=/work/f70"
like "$CODE $(jb .error)" '^413 .*more than' "GET of a 70 MB file: 413, saying it is over the limit"
REQ_TIMEOUT=10 req GET "/v1/sessions/$S/files?path=/work/ff"
is "$CODE" 400 "GET of a fifo: 400, without hanging"
sx "$S" '{"cmd":["rm","-f","/work/f60","/work/f70","/work/ff"]}'

# a 150 MB download is sent from its file, not read into the daemon's memory
sx "$S" '{"cmd":["sh","-c","mkdir -p /work/bulk && head -c 157286400 /dev/urandom > /work/bulk/r.bin && echo made"]}'
is "$(jb .stdout)" made "150 MB of random bytes made in the session"
before=$(hwm)
curl -s -m 120 -o "$TMPD/bulk.tar" "$U/v1/sessions/$S/download?dir=/work/bulk"
after=$(hwm)
size=$(stat -c %s "$TMPD/bulk.tar" 2>/dev/null || echo 0)
[ "$size" -gt 157286400 ] && [ $((after - before)) -lt 51200 ]
ok $? "download of 150 MB: the archive arrives whole ($size bytes), the daemon's peak memory grew by $(((after - before) / 1024)) MiB"
sx "$S" '{"cmd":["rm","-rf","/work/bulk"]}'
# /usr (gigabytes): the archive streams (nothing spooled on the host), and is cut past 1 GiB,
# quickly enough that no time limit ends the session: the client sees a broken transfer, never a
# short archive passed off as whole
curl -s -m 120 -o /dev/null -w '%{http_code} %{size_download}' "$U/v1/sessions/$S/download?dir=/usr" >"$TMPD/usr.out"
crc=$?
read -r ucode usize <"$TMPD/usr.out"
[ "$crc" != 0 ] && [ "$ucode" = 200 ] && [ "$usize" -le $((1024 * 1024 * 1024 + 1)) ]
ok $? "download of /usr, over 1 GiB: cut at the cap, the transfer fails (curl $crc, $ucode, $usize bytes)"
req GET "/v1/sessions/$S/trajectory"
grep -q 'over 1024 MiB' "$BODY"
ok $? "... and the session's trajectory says the archive is over 1024 MiB"
sx "$S" '{"cmd":["echo","still here"]}'
is "$(jb .stdout)" "still here" "and the session goes on"
req GET "/v1/sessions/$S/download?dir=/no/such/dir"
like "$CODE $(jb .error)" '^400 .*No such file' "download of a missing directory: 400 with tar's message"

# --- the full output of a large exec ------------------------------------------------------------
python3 -c 'import sys; [print("line %07d %s" % (i, "x" * 40)) for i in range(60000)]' >"$TMPD/want.out"
WANT_SIZE=$(stat -c %s "$TMPD/want.out")
sx "$S" '{"cmd":["python3","-c","import sys; [print(\"line %07d %s\" % (i, \"x\" * 40)) for i in range(60000)]; print(\"the end\", file=sys.stderr)"],"request_id":"big-1"}'
is "$CODE" 200 "a $WANT_SIZE-byte exec: 200"
is "$(jb .stdout_bytes)" "$WANT_SIZE" "large exec: stdout_bytes counts every byte"
req GET "/v1/sessions/$S/output?request_id=big-1&stream=stdout"
is "$CODE" 200 "GET output: 200"
cmp -s "$BODY" "$TMPD/want.out"
ok $? "GET output: the full $WANT_SIZE bytes, identical ($(stat -c %s "$BODY") received)"
req GET "/v1/sessions/$S/output?request_id=big-1&stream=stderr"
is "$(body)" "the end" "GET output stream=stderr"
req GET "/v1/sessions/$S/output?request_id=never-sent"
is "$CODE" 404 "GET output of an unknown request id: 404"
sx "$S" '{"cmd":["echo","still usable"]}'
is "$(jb .stdout)" "still usable" "the session still runs commands after a large output"

# --- DELETE ------------------------------------------------------------------------------------------
req DELETE "/v1/sessions/$S"
is "$CODE" 200 "DELETE the session: 200"
sx "$S" '{"cmd":["true"]}'
is "$CODE" 404 "exec after DELETE: 404"
req GET "/v1/sessions/$S"
is "$CODE" 404 "GET after DELETE: 404"
req GET "/v1/sessions/$S/files?path=/work"
is "$CODE" 404 "files after DELETE: 404"
req DELETE "/v1/sessions/$S"
is "$CODE" 404 "DELETE again: 404"
req GET /v1/sessions
is "$(jb "[.sessions[].session_id] | index(\"$S\")")" null "no longer listed"

# DELETE while an exec runs: the exec is answered, the session is gone after, the daemon lives
post_json /v1/sessions '{}'
D=$(jb .session_id)
curl -s -m 30 -o "$TMPD/busy.body" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"shell":"sleep 2; echo finished"}' "$U/v1/sessions/$D/exec" >"$TMPD/busy.code" &
busy=$!
sleep 0.7
req DELETE "/v1/sessions/$D"
is "$CODE" 200 "DELETE while an exec runs: 200"
wait "$busy"
like "$(cat "$TMPD/busy.code")" '^(200|409|410)$' "the running exec is still answered ($(cat "$TMPD/busy.code"): $(head -c 120 "$TMPD/busy.body"))"
sx "$D" '{"cmd":["true"]}'
is "$CODE" 404 "exec after that DELETE: 404"

# --- idle TTL --------------------------------------------------------------------------------------
post_json /v1/sessions '{"ttl":1}'
is "$CODE" 201 "create with ttl 1: 201"
T=$(jb .session_id)
sx "$T" '{"cmd":["echo","young"]}'
is "$(jb .stdout)" young "ttl session: exec at once works"
sleep 2.5
sx "$T" '{"cmd":["echo","old"]}'
is "$CODE" 410 "ttl session, 2.5 s idle: exec 410 Gone"
like "$(jb .error)" 'TTL|expired|EXPIRED' "410: the error says why"
req GET "/v1/sessions/$T/files?path=/work"
is "$CODE" 410 "ttl session expired: files GET 410 (its sandbox is gone)"
req PUT "/v1/sessions/$T/files?path=/work/late.txt" --data-binary late
is "$CODE" 410 "ttl session expired: files PUT 410"
req GET "/v1/sessions/$T/stat?path=/work"
is "$CODE" 410 "ttl session expired: stat 410"
req GET "/v1/sessions/$T/download?dir=/work"
is "$CODE" 410 "ttl session expired: download 410"
req GET "/v1/sessions/$T"
like "$CODE" '^(200|404|410)$' "GET an expired session: 200, 404 or 410 ($CODE)"
req DELETE "/v1/sessions/$T"
like "$CODE" '^(200|404|410)$' "DELETE of an expired session: 200, 404 or 410 ($CODE)"
req GET /healthz
is "$CODE" 200 "daemon healthy after all of it"

done_testing
