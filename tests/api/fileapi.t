#!/usr/bin/env bash
# The file APIs reach the sandbox's files only: /run_code's "files" and "fetch_files", a session's
# files?path= (PUT, GET) never reach init's /proc entries (the daemon's memory layout, init's timer
# slack that every later program inherits), sysfs or devices, not even through a link the program
# planted. Pools of one sandbox: every request reuses the same one.
source "$(dirname "$0")/api.sh"
plan 12

cat >"$TMPD/tpl.json" <<'JSON'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work",
   "pool": {"min": 1, "max": 1}}]}
JSON
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started with a pool of one sandbox"

slack() {  # the timer slack the next /run_code program has
  post_json /run_code '{"code":"cat /proc/self/timerslack_ns","language":"bash"}'
  jb .run_result.stdout | tr -d '\n'
}
is "$(slack)" 50000 "a program's timer slack is the default"

b64=$(printf 300000000 | base64)
post_json /run_code "{\"code\":\"cat /proc/self/timerslack_ns\",\"language\":\"bash\",\"files\":{\"/proc/self/timerslack_ns\":\"$b64\"}}"
unlike "$(jb .run_result.stdout)" 300000000 "files: a write to /proc/self/timerslack_ns does not reach init ($(jb .status) $(jb .message | head -c 80))"
seen=0
for i in 1 2 3; do [ "$(slack)" = 50000 ] || seen=1; done
is "$seen" 0 "the next three users' timer slack is the default"

post_json /run_code '{"code":"echo hi > out.txt","language":"bash","fetch_files":["/proc/self/maps","/proc/self/environ","/sys/class/net/lo/address","out.txt"]}'
is "$(jb '.files["/proc/self/maps"]' | head -c 40)" null "fetch_files: /proc/self/maps (init's, the daemon's layout) is not returned"
is "$(jb '.files["/proc/self/environ"]') $(jb '.files["/sys/class/net/lo/address"]')" "null null" \
  "fetch_files: nor /proc/self/environ, nor sysfs"
is "$(jb '.files["out.txt"]' | base64 -d)" hi "fetch_files: the program's own file is returned"

post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
post_json "/v1/sessions/$S/exec" '{"shell":"ln -s /proc/self/timerslack_ns /work/ts; ln -s /proc/self/maps /work/maps; echo planted"}'
is "$(jb .stdout)" planted "a session's program plants links to /proc/self files"
req PUT "/v1/sessions/$S/files?path=/work/ts" --data-binary 300000000
ok "$([ "$CODE" != 200 ] && echo 0 || echo 1)" "PUT files?path= through the link is refused ($CODE $(body | head -c 100))"
req GET "/v1/sessions/$S/files?path=/work/maps"
ok "$([ "$CODE" != 200 ] && ! grep -q 'r-xp' "$BODY" && echo 0 || echo 1)" "GET files?path= through a link to /proc/self/maps is refused ($CODE)"
post_json "/v1/sessions/$S/exec" '{"shell":"cat /proc/self/timerslack_ns"}'
is "$(jb .stdout)" 50000 "the session's next program has the default timer slack"
req DELETE "/v1/sessions/$S"

req GET /healthz
is "$CODE" 200 "daemon healthy"
done_testing
