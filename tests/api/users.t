#!/usr/bin/env bash
# Non-root users through the daemon: a template's "user" (sandbox = 1000:1000, UID[:GID]) is the
# uid and gid of its programs, of session steps and of the file API (files, fetch_files, session
# file operations, tar upload); /work and what the harness places there belong to it, /tmp stays
# 1777, root-owned image files stay out of its reach, and a pooled sandbox of that user is reset
# and reused as root's are. An imported image's config User (a name from the image's own
# /etc/passwd and /etc/group, never the host's) applies to /v1/runs, /run_code and sessions that
# name the image, unless the template says "user".
source "$(dirname "$0")/api.sh"
plan 32

export PADDOCK_STATE_DIR=$TMPD/state
# the image's passwd has daemon as 4321:4322 (the host's daemon is uid 1) and group staff 777
python3 tests/api/mkimage.py users "$TMPD/u-name" daemon
python3 tests/api/mkimage.py users "$TMPD/u-group" daemon:staff
DN=$("$PADDOCK" image import "$TMPD/u-name" --name users:name 2>/dev/null)
DG=$("$PADDOCK" image import "$TMPD/u-group" --name users:group 2>/dev/null)
python3 tests/api/mkimage.py users "$TMPD/u-bad" nosuch
"$PADDOCK" image import "$TMPD/u-bad" --name users:bad >/dev/null 2>&1
[ -n "$DN" ] && [ -n "$DG" ]
ok $? "two images whose config User is daemon and daemon:staff imported"

cat >"$TMPD/tpl.json" <<'JSON'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work", "user": "sandbox",
   "pool": {"min": 1, "max": 1}},
  {"name": "num", "language": "num", "requires": ["sh"], "cwd": "/work", "user": "1234:2345",
   "files": [{"path": "/work/tpl.txt", "content": "from the template", "mode": "0600"}]},
  {"name": "asroot", "language": "asroot", "requires": ["sh"], "cwd": "/work", "user": "root"}]}
JSON
start_daemon --templates "$TMPD/tpl.json" --images "users:*"
ok $? "daemon started (bash as sandbox, num as 1234:2345, asroot as root)"

post_json /run_code '{"language":"bash","code":"id -u; id -g; stat -c \"%u:%g %a\" /work /tmp \"$0\"; cat /work/in.txt; echo made > /work/out.txt","files":{"in.txt":"'"$(printf given | base64)"'"},"fetch_files":["/work/out.txt"]}'
out=($(jq -r .run_result.stdout "$BODY"))
is "${out[0]} ${out[1]}" "1000 1000" "/run_code: the program runs as 1000:1000 (id -u, id -g)"
is "${out[2]} ${out[3]}" "1000:1000 755" "/work belongs to the user"
is "${out[4]} ${out[5]}" "0:0 1777" "/tmp stays sticky 1777 root"
is "${out[6]}" "1000:1000" "the program file the harness placed is the user's"
is "${out[8]}" "given" "a file from files is readable by the program"
is "$(jb '.files["/work/out.txt"]' | base64 -d)" "made" "fetch_files reads the program's file as the user"

post_json /v1/runs '{"template":"bash","shell":"stat -c %u:%g /work/f.txt; echo x >> /work/f.txt && echo appended","files":{"f.txt":"placed\n"}}'
is "$(echo $(jb .run.stdout))" "1000:1000 appended" "/v1/runs: a file from files is owned by the user, who can write it"
post_json /v1/runs '{"template":"bash","shell":"echo x > /etc/passwd 2>/dev/null || echo refused; touch /usr/bin/planted 2>/dev/null || echo refused2"}'
is "$(echo $(jb .run.stdout))" "refused refused2" "the user cannot write root-owned image files"
post_json /v1/runs '{"template":"bash","shell":"true","files":{"/etc/planted":"x"}}'
[ "$CODE" != 200 ] || [ "$(jb .run.status)" != OK ]
ok $? "nor can the harness place a file there on its behalf ($CODE $(jb .error // .run.status))"

post_json /v1/runs '{"template":"num","shell":"id -u; id -g; stat -c %u:%g /work; stat -c \"%u:%g %a\" /work/tpl.txt; cat /work/tpl.txt"}'
is "$(echo $(jb .run.stdout))" "1234 2345 1234:2345 1234:2345 600 from the template" \
  "user UID:GID: the program, /work, and the template's own files (mode 0600) are the user's"
post_json /v1/runs '{"template":"asroot","shell":"id -u; stat -c %u:%g /work"}'
is "$(echo $(jb .run.stdout))" "0 0:0" "user root: today's sandbox root"

# sessions: steps and every file operation act as the user
post_json /v1/sessions '{"template":"bash"}'
S=$(jb .session_id)
req PUT "/v1/sessions/$S/files?path=/work/up.txt" --data-binary hello
is "$CODE" 200 "PUT of a file: 200"
mkdir -p "$TMPD/tarsrc/d" && echo t >"$TMPD/tarsrc/d/t.txt"
tar -C "$TMPD/tarsrc" -cf "$TMPD/up.tar" d
req POST "/v1/sessions/$S/upload?dir=/work/tree" --data-binary "@$TMPD/up.tar"
is "$CODE" 200 "tar upload: 200"
post_json "/v1/sessions/$S/exec" '{"shell":"id -u; stat -c %u:%g /work/up.txt /work/tree /work/tree/d/t.txt; echo step > /work/step.txt"}'
is "$(echo $(jb .stdout))" "1000 1000:1000 1000:1000 1000:1000" \
  "a session step runs as the user; PUT and tar upload leave files the user owns"
req GET "/v1/sessions/$S/files?path=/work/step.txt"
is "$(body)" "step" "GET reads the step's file"
req GET "/v1/sessions/$S/stat?path=/work/step.txt"
is "$(jb '"\(.uid):\(.gid)"')" "1000:1000" "stat shows the user as owner"
req PUT "/v1/sessions/$S/files?path=/etc/planted" --data-binary x
ok "$([ "$CODE" != 200 ] && echo 0 || echo 1)" "PUT over a root-owned directory is refused ($CODE)"
req GET "/v1/sessions/$S/download?dir=/work/tree"
is "$(tar -tf "$BODY" 2>/dev/null | sort | tr '\n' ' ')" "./ ./d/ ./d/t.txt " "tar download as the user"

# reuse: the pool of one resets the sandbox and the next user gets a clean /work of the user's
metric() { curl -s -m 5 "$U/metrics" | sed -n "s/^paddock_pool_$1{template=\"$2\"} //p"; }
r0=$(metric resets_total bash)
req DELETE "/v1/sessions/$S"
wait_for 10 sh -c "[ \"\$(curl -s -m 5 $U/metrics | sed -n 's/^paddock_pool_resets_total{template=\"bash\"} //p')\" -gt $r0 ]"
ok $? "the session's sandbox was reset for reuse"
post_json /v1/sessions '{"template":"bash"}'
S2=$(jb .session_id)
post_json "/v1/sessions/$S2/exec" '{"shell":"ls -A /work | wc -l; stat -c \"%u:%g %a\" /work; id -u"}'
is "$(echo $(jb .stdout))" "0 1000:1000 755 1000" "the next user of the reset sandbox: an empty /work of the user's, same uid"
req DELETE "/v1/sessions/$S2"

# the image's config User, from the image's own passwd and group
post_json /v1/runs '{"template":"num","image":"users:name","shell":"id -u; id -g"}'
is "$(echo $(jb .run.stdout))" "1234 2345" "a template's user wins over the image's User"
cat >"$TMPD/tpl2.json" <<'JSON'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work"},
  {"name": "asroot", "language": "asroot", "requires": ["sh"], "cwd": "/work", "user": "root"}]}
JSON
stop_daemon
start_daemon --templates "$TMPD/tpl2.json" --images "users:*"
ok $? "daemon restarted with a bash template that names no user"
post_json /v1/runs '{"template":"bash","image":"users:name","shell":"id -u; id -g; stat -c %u:%g /work; touch /data/appdir/x && echo appdir; echo x > /data/rootfile 2>/dev/null || echo refused","files":{"f":"x"}}'
is "$(echo $(jb .run.stdout))" "4321 4322 4321:4322 appdir refused" \
  "/v1/runs on the image: User daemon is the image's 4321:4322 (not the host's daemon), owns /work, cannot write root's file"
post_json /v1/runs '{"template":"bash","image":"users:group","shell":"id -u; id -g"}'
is "$(echo $(jb .run.stdout))" "4321 777" "User daemon:staff: the group from the image's /etc/group"
post_json /run_code '{"language":"bash","image":"users:name","code":"id -u; stat -c %u:%g \"$0\""}'
is "$(echo $(jq -r .run_result.stdout "$BODY"))" "4321 4321:4322" "/run_code on the image: the User's ids, the program file is theirs"
post_json /v1/sessions '{"template":"bash","image":"users:name"}'
S3=$(jb .session_id)
req PUT "/v1/sessions/$S3/files?path=/work/w.txt" --data-binary w
post_json "/v1/sessions/$S3/exec" '{"shell":"id -u; stat -c %u:%g /work/w.txt"}'
is "$(echo $(jb .stdout))" "4321 4321:4322" "a session on the image: its step and the file API act as the User"
req DELETE "/v1/sessions/$S3"
post_json /v1/runs '{"template":"bash","image":"users:bad","shell":"id -u"}'
like "$CODE $(jb '.error // .run.error // .run.status')" "not in the image's /etc/passwd" \
  "an image whose User its passwd lacks: refused, saying so, not run as root"
post_json /v1/runs '{"template":"asroot","image":"users:name","shell":"id -u"}'
is "$(echo $(jb .run.stdout))" "0" "a template that says user root overrides the image's User"
post_json /v1/runs '{"template":"bash","cmd":["id","-u"]}'
is "$(echo $(jb .run.stdout))" "0" "without an image or a user: root as before"
req GET /healthz
is "$CODE" 200 "daemon healthy"
done_testing
