#!/usr/bin/env bash
# A request names an imported image ("image" on /v1/runs, /run_code, /api/v2/execute and
# /v1/sessions): only from the operator's allowlist (serve --images), never a host path; the
# image's WorkingDir and Env apply unless the request gives cwd or env; each (template, image)
# pair has its own pool, made on first use (cold: created on the spot) and kept warm by demand.
source "$(dirname "$0")/api.sh"
plan 60

export PADDOCK_STATE_DIR=$TMPD/state
python3 tests/api/mkimage.py layered "$TMPD/layered"
python3 tests/api/mkimage.py other "$TMPD/other"
python3 tests/api/mkimage.py pyrepo "$TMPD/pyrepo"
D1=$("$PADDOCK" image import "$TMPD/layered" --name layered:1)
D2=$("$PADDOCK" image import "$TMPD/other" --name other:1)
D3=$("$PADDOCK" image import "$TMPD/pyrepo")
# an image no other request of this file uses (so its first session's sandbox is made for it), and
# like the others without /proc, /dev or /sys
python3 tests/api/mkimage.py workdir "$TMPD/nosys" /work
D4=$("$PADDOCK" image import "$TMPD/nosys" --name layered:nosys)
[ -n "$D1" ] && [ -n "$D2" ] && [ -n "$D3" ]
ok $? "three images imported"

start_daemon --images "layered:*, other:1 ,pyrepo:commit-1"
ok $? "daemon started with an allowlist"

post_json /v1/runs '{"image": "layered:1", "cmd": ["bash", "-c", "pwd; echo $FOO"]}'
is "$CODE" 200 "a run on an allowed image by name: 200"
is "$(jb .run.stdout)" "/data
from-image" "the image's WorkingDir and Env apply"
is "$(jb .run.image.digest)" "$D1" "the record names the image by digest"
is "$(jb .run.image.name)" "layered:1" "... and by the name the request used"
is "$(jb '.image | "\(.name) \(.digest)"')" "layered:1 $D1" "... at the top of the record too, as {name, digest}"
is "$(jb .template)" "bash" "the record's template is the request's"
V1=$(jb .template_version)
like "$V1" '^sha256:[0-9a-f]{16}$' "the record carries the template's version"
post_json /v1/runs '{"cmd": ["true"]}'
V0=$(jb .template_version)
[ -n "$V0" ] && [ "$V0" != "$V1" ]
ok $? "bash on the host image and bash on the image are two versions ($V0, $V1)"

post_json /v1/runs '{"image": "layered:1", "cwd": "/tmp", "env": {"FOO": "from-request"}, "cmd": ["bash", "-c", "pwd; echo $FOO"]}'
is "$(jb .run.stdout)" "/tmp
from-request" "the request's cwd and env win over the image's"

post_json /v1/runs "{\"image\": \"$D2\", \"cmd\": [\"cat\", \"/data/other\"]}"
is "$CODE" 200 "by digest, an image whose name is on the list: 200"
is "$(jb .run.stdout)" "other" "... runs on that image"
is "$(jb '.run.image.digest + " " + (.run.image.name // "none")')" "$D2 none" "... the record has its digest, no name"

post_json /v1/runs '{"image": "layered:2", "cmd": ["true"]}'
is "$CODE" 404 "an allowed name the store does not have: 404 ($(jb .error))"
post_json /v1/runs '{"image": "secret:1", "cmd": ["true"]}'
is "$CODE" 403 "a name not on the list: 403"
like "$(jb .error)" "not among the images this server allows" "... saying so"
post_json /v1/runs '{"image": "sha256:0000000000000000000000000000000000000000000000000000000000000000", "cmd": ["true"]}'
is "$CODE" 404 "an unknown digest: 404"
for p in / /etc ./rootfs ../x; do
  post_json /v1/runs "{\"image\": \"$p\", \"cmd\": [\"true\"]}"
  [ "$CODE" = 400 ] || break
done
is "$CODE" 400 "a host path as the image (/, /etc, ./rootfs, ../x): 400"
like "$(jb .error)" "is a path" "... saying a request names imported images only"
post_json /v1/runs '{"image": 7, "cmd": ["true"]}'
is "$CODE" 400 "an image that is not a string: 400"

post_json /v1/runs '{"image": "layered:1", "language": "python", "code": "print(1)"}'
is "$(jb .failure_class)" "dependency_missing" "python on an image without python3: dependency_missing"
like "$(jb .error)" "python3" "... naming what is missing"
# perl has no template of its own (it runs in bash's): the image, not the host, must have it
post_json /v1/runs '{"image": "layered:1", "language": "perl", "code": "print 1"}'
is "$(jb .status)/$(jb .failure_class)" "XX/dependency_missing" "perl on an image without perl: dependency_missing, not the program's RE 127"
like "$(jb .error)" "language perl needs perl, which the image lacks \\(Debian package perl" "... naming the program and its package"

post_json /run_code '{"language": "python", "code": "import os; print(os.getcwd(), os.path.exists(\"/repo/calc.py\"))", "image": "pyrepo:commit-1"}'
is "$(jb .status)/$(jb .run_result.stdout)" "Success//work True" "SandboxFusion /run_code on an image: the language runs in /work, the image's files are there"
post_json /api/v2/execute '{"language": "python", "version": "*", "files": [{"content": "import os; print(os.environ[\"PATH\"], os.environ[\"LANG\"])"}], "image": "pyrepo:commit-1"}'
is "$(jb .run.stdout)" "/usr/bin:/bin C.UTF-8" "Piston /api/v2/execute on an image: the image's PATH over the template's, the template's LANG"

# the judge: the request's image (or an inline problem's) is the candidate's; allowed ones only
JCODE='import sys; sys.path.insert(0, \"/repo\"); import calc; print(calc.add(2, 3))'
post_json /v1/judge "{\"problem\": {\"tests\": [{\"input\": \"\", \"output\": \"5\"}]}, \"language\": \"python\", \"image\": \"pyrepo:commit-1\", \"code\": \"$JCODE\"}"
is "$CODE/$(jb .verdict.output.status)" "200/fail" "/v1/judge with an image: the candidate runs on the image's buggy calc (add(2, 3) = -1)"
is "$(jb '.image.digest + " " + .image.name')" "$D3 pyrepo:commit-1" "... and the judged record names the image"
post_json /v1/judge "{\"problem\": {\"image\": \"pyrepo:commit-1\", \"tests\": [{\"input\": \"\", \"output\": \"-1\"}]}, \"language\": \"python\", \"code\": \"$JCODE\"}"
is "$(jb .verdict.output.status)/$(jb .image.digest)" "pass/$D3" "an inline problem's image: the same (control: -1 passes)"
post_json /v1/judge "{\"problem\": {\"image\": \"secret:1\", \"tests\": [{\"input\": \"\", \"output\": \"-1\"}]}, \"language\": \"python\", \"code\": \"$JCODE\"}"
is "$CODE" 403 "an inline problem's image not on the list: 403"
post_json /v1/judge "{\"problem\": {\"tests\": [{\"input\": \"\", \"output\": \"5\"}]}, \"language\": \"python\", \"image\": \"/\", \"code\": \"$JCODE\"}"
is "$CODE" 400 "/v1/judge with a path as the image: 400"

# pools: one per (template, image), created by the first request (cold), then warm
req GET /v1/pools
P=$(jq -r --arg h "${D2:7:24}" '.pools[] | select(.template == ("bash@" + $h)) | .template' "$BODY")
is "$P" "bash@${D2:7:24}" "a pool of its own for (bash, other:1), named by the image's digest"
is "$(jq -r '[.pools[] | select(.template | test("@"))] | length' "$BODY")" 3 "only the images requested have pools (bash x 2, python x 1)"
ready() { curl -s "$U/v1/pools" | jq -e --arg p "$P" '.pools[] | select(.template == $p) | .ready >= 1' >/dev/null; }
wait_for 30 ready
ok $? "the image in demand is kept warm: a READY sandbox"
post_json /v1/runs "{\"image\": \"other:1\", \"cmd\": [\"true\"]}"
req GET /v1/pools
is "$(jq -r --arg p "$P" '.pools[] | select(.template == $p) | "\(.acquires) \(.hits)"' "$BODY")" "2 1" \
  "its first sandbox was created on demand (a miss), the next came warm (a hit)"

# sessions
post_json /v1/sessions '{"template": "bash", "image": "layered:1"}'
is "$CODE" 201 "a session on an allowed image: 201"
is "$(jb .image.digest)" "$D1" "... its answer names the image"
S=$(jb .session_id)
post_json "/v1/sessions/$S/exec" '{"cmd": ["bash", "-c", "pwd; echo $FOO"]}'
is "$(jb .stdout)" "/data
from-image" "the session's exec: the image's WorkingDir and Env"
is "$(jb '.image.digest + " " + .image.name')" "$D1 layered:1" "... its record names the image"
is "$(jb .template_version)" "$V1" "... and the template's version, as the run's on that image"
# a step that names no command: the image's Entrypoint then Cmd (layered's Cmd is bash, which
# reads its script from stdin)
post_json "/v1/sessions/$S/exec" '{"stdin": "echo via-the-image-cmd"}'
is "$CODE $(jb .stdout)" "200 via-the-image-cmd" "a step with no cmd or shell runs the image's Cmd"
req GET "/v1/sessions/$S/trajectory"
is "$(jq -c 'select(.kind == "exec") | .action.cmd' "$BODY" | tail -1)" '["bash"]' "... and its trajectory names what ran"
req DELETE "/v1/sessions/$S"
post_json /v1/sessions '{"template": "bash"}'
S2=$(jb .session_id)
post_json "/v1/sessions/$S2/exec" '{"stdin": "echo x"}'
is "$CODE $(jb .error)" "400 cmd: give cmd (a list of strings) or shell (a string); the session's image has no Entrypoint or Cmd to run instead" \
  "no command and no image's command to run: 400 saying so"
req DELETE "/v1/sessions/$S2"
# an image without /proc, /dev or /sys: the mount points the build makes are no step's change, and a
# replay compares only what the steps could change (no false divergence)
post_json /v1/sessions '{"template": "bash", "image": "layered:nosys"}'
S3=$(jb .session_id)
post_json "/v1/sessions/$S3/exec" '{"shell": "ls -d /sys /proc /dev; echo a > /work/a", "request_id": "i1"}'
req POST "/v1/sessions/$S3/reset" -H 'X-Request-Id: i2'
post_json "/v1/sessions/$S3/exec" '{"shell": "echo b > /work/b", "request_id": "i3"}'
req DELETE "/v1/sessions/$S3"
req GET "/v1/sessions/$S3/trajectory"
cp "$BODY" "$TMPD/other.jsonl"
is "$(jq -r 'select(.kind != "session") | "\(.kind):\([.files_changed[] | .path + " " + .change] | join(","))"' "$TMPD/other.jsonl" | tr '\n' ' ')" \
  "exec:/work/a added reset:/work/a deleted exec:/work/b added " \
  "an image without /sys: each step's files_changed holds only what it changed (no /proc, /dev, /sys)"
is "$(head -1 "$TMPD/other.jsonl" | jq -r '.image | "\(.name) \(.digest)"')" "layered:nosys $D4" \
  "the trajectory's first line names the image as {name, digest}"
for i in 1 2; do
  "$PADDOCK" replay "$TMPD/other.jsonl" --url "$U" --json >"$TMPD/rep.$i" 2>&1
  rc=$?
  is "$rc $(tail -1 "$TMPD/rep.$i" | jq -r '[.replayed, .matched, .first_divergent_step] | map(tostring) | join(" ")')" \
    "0 3 3 null" "replay $i of that session (a fresh or a reused sandbox): every step matches"
done
post_json /v1/sessions '{"template": "bash", "image": "secret:1"}'
is "$CODE" 403 "a session on an image not on the list: 403"
stop_daemon

start_daemon
post_json /v1/runs '{"image": "layered:1", "cmd": ["true"]}'
is "$CODE" 403 "without serve --images, a request may name no image: 403"
like "$(jb .error)" "serve --images" "... saying how the operator allows some"
stop_daemon

# one image pool at a time: a new image takes the slot of the least recently used one once
# nothing uses it (its READY sandboxes given up, its lease on the layers dropped)
start_daemon --images '*' --image-pools 1
post_json /v1/runs '{"image": "layered:1", "cmd": ["cat", "/data/c"]}'
is "$(jb .run.stdout)" "file c" "one image pool: the first image runs"
other_runs() { post_json /v1/runs '{"image": "other:1", "cmd": ["cat", "/data/other"]}'; [ "$(jb .run.stdout)" = other ]; }
wait_for 30 other_runs
ok $? "a second image takes the first one's slot once it is idle"
req GET /v1/pools
is "$(jq -r '[.pools[] | select(.template | test("@")) | .template] | join(" ")' "$BODY")" "bash@${D2:7:24}" \
  "only the second image has a pool now"
layered_runs() { post_json /v1/runs '{"image": "layered:1", "cmd": ["cat", "/data/c"]}'; [ "$(jb .run.stdout)" = "file c" ]; }
wait_for 30 layered_runs
ok $? "the first image comes back in its turn"
is "$(jb .run.image.digest)" "$D1" "... on its own layers"
stop_daemon

# one READY sandbox for all image pools: the image in most demand keeps it
start_daemon --images '*' --image-ready 1
for i in 1 2 3; do post_json /v1/runs '{"image": "layered:1", "cmd": ["true"]}'; done
post_json /v1/runs '{"image": "other:1", "cmd": ["true"]}'
hot_ready() { curl -s "$U/v1/pools" | jq -e --arg p "bash@${D1:7:24}" '.pools[] | select(.template == $p) | .ready == 1' >/dev/null; }
wait_for 30 hot_ready
ok $? "--image-ready 1: the image asked for three times holds the READY sandbox"
req GET /v1/pools
is "$(jq -r --arg p "bash@${D2:7:24}" '.pools[] | select(.template == $p) | "\(.ready) \(.target)"' "$BODY")" "0 0" \
  "the image asked for once holds none (its sandbox was not kept)"
stop_daemon

# paddock run (the operator's own process: no list)
out=$(echo '{"image": "layered:1", "cmd": ["cat", "/data/c"]}' | "$PADDOCK" run - 2>/dev/null | head -1)
is "$(jq -r '(.run.stdout | rtrimstr("\n")) + " " + .run.image.digest' <<<"$out")" "file c $D1" "paddock run: a line's image"

cat >"$TMPD/tpl.json" <<EOF_T
{"templates": [{"name": "bash", "version": "2026-12-04.1", "requires": ["bash"]}]}
EOF_T
start_daemon --templates "$TMPD/tpl.json"
post_json /v1/runs '{"cmd": ["true"]}'
is "$(jb .template_version)" "2026-12-04.1" "a templates file's \"version\" is the record's"
stop_daemon
