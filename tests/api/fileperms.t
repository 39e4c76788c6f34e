#!/usr/bin/env bash
# The file APIs act with a program's credentials, not init's: a file or directory a program of
# the sandbox cannot read (or write) is not readable (or writable) through /run_code's
# fetch_files or a session's files?path= either, and what they create is owned by the program's
# uid and gid. Init holds every capability of the sandbox's user namespace; a program holds none.
source "$(dirname "$0")/api.sh"
plan 11

cat >"$TMPD/tpl.json" <<'JSON'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work",
   "pool": {"min": 1, "max": 1}}]}
JSON
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started"

post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
post_json "/v1/sessions/$S/exec" '{"shell":"echo s3cret > /work/secret; chmod 000 /work/secret; mkdir /work/hid; echo inner > /work/hid/f; chmod 000 /work/hid; mkdir /work/ro; chmod 555 /work/ro; cat /work/secret 2>/dev/null || echo unreadable; touch /work/ro/x 2>/dev/null || echo unwritable"}'
is "$(echo $(jb .stdout))" "unreadable unwritable" "the program itself can neither read /work/secret (mode 000) nor write in /work/ro (555)"

req GET "/v1/sessions/$S/files?path=/work/secret"
ok "$([ "$CODE" != 200 ] && ! grep -q s3cret "$BODY" && echo 0 || echo 1)" "GET files?path= of the mode-000 file is refused ($CODE $(head -c 80 "$BODY"))"
req GET "/v1/sessions/$S/files?path=/work/hid/f"
ok "$([ "$CODE" != 200 ] && ! grep -q inner "$BODY" && echo 0 || echo 1)" "GET of a file in a mode-000 directory is refused ($CODE)"
req GET "/v1/sessions/$S/files?path=/work/hid&list=1"
ok "$([ "$CODE" != 200 ] && echo 0 || echo 1)" "listing the mode-000 directory is refused ($CODE)"
req PUT "/v1/sessions/$S/files?path=/work/ro/new" --data-binary planted
ok "$([ "$CODE" != 200 ] && echo 0 || echo 1)" "PUT into the read-only directory is refused ($CODE)"
req GET "/v1/sessions/$S/download?dir=/work/hid"
ok "$([ "$CODE" != 200 ] && echo 0 || echo 1)" "download of the mode-000 directory is refused ($CODE)"

req PUT "/v1/sessions/$S/files?path=/work/up.txt" --data-binary hello
is "$CODE" 200 "PUT of a new file: 200"
post_json "/v1/sessions/$S/exec" '{"shell":"stat -c \"%u:%g\" /work/up.txt; id -u; id -g"}'
is "$(echo $(jb .stdout))" "0:0 0 0" "the uploaded file is owned by the program's uid and gid"

# /run_code: a file the program made unreadable is not fetched
post_json /run_code '{"code":"echo hidden > o.txt; chmod 000 o.txt; echo open > p.txt","language":"bash","fetch_files":["o.txt","p.txt"]}'
is "$(jb '.files["o.txt"]') $(jb '.files["p.txt"]' | base64 -d)" "null open" \
  "fetch_files: the mode-000 file is not returned, the readable one is"
req DELETE "/v1/sessions/$S"
req GET /healthz
is "$CODE" 200 "daemon healthy"
done_testing
