#!/usr/bin/env bash
# An agent episode on a per-task image: a small Python repository at a commit (the host's python3
# and standard library, bash, and /repo whose visible test fails: add() subtracts), built as an OCI
# layout by mkimage.py and imported. The agent's session runs the visible test (fails), writes the
# fix, runs it again (passes); the judge runs the agent's file against a hidden test in a sandbox
# of its own, from the same image; the hidden test never was in the agent's image. Every record
# names the image by its manifest digest.
source "$(dirname "$0")/api.sh"
plan 18

export PADDOCK_STATE_DIR=$TMPD/state
python3 tests/api/mkimage.py pyrepo "$TMPD/pyrepo"
D=$("$PADDOCK" image import "$TMPD/pyrepo" 2>"$TMPD/err")
is "$?" 0 "import the repository's image ($(cat "$TMPD/err"))"
cat >"$TMPD/tpl.json" <<EOF_T
{"templates": [{"name": "swe-calc", "image": "pyrepo:commit-1", "requires": ["python3"]}]}
EOF_T
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started with a template on the image"

sx() { post_json "/v1/sessions/$1/exec" "$2"; }
post_json /v1/sessions '{"template":"swe-calc"}'
S=$(jb .session_id)
is "$CODE" 201 "the agent's session on the task's image: 201"
sx "$S" '{"cmd":["python3","-m","unittest","-q"]}'
is "$(jb .status)" RE "step 1: the visible test fails on the commit"
like "$(jb .stderr)" "AssertionError: -1 != 5" "... with add(2, 3) == -1"
is "$(jb .image.digest)" "$D" "... and the step's record names the image by digest"
sx "$S" '{"cmd":["bash","-c","echo /repo/*; pwd"]}'
is "$(jb .stdout)" "/repo/README /repo/calc.py /repo/test_calc.py
/repo" "the hidden test is not in the agent's image; WorkingDir /repo applies"
req PUT "/v1/sessions/$S/files?path=/repo/calc.py" --data-binary @"$TMPD/pyrepo.fix.py"
is "$CODE" 200 "step 2: the agent writes its fix"
sx "$S" '{"cmd":["python3","-m","unittest","-q"]}'
is "$(jb .status)" OK "step 3: the visible test passes"
req GET "/v1/sessions/$S/files?path=/repo/calc.py"
cp "$BODY" "$TMPD/answer.py"
# issue 40: the server grades the session itself, in a fork of the same image
post_json "/v1/sessions/$S/judge" "$(jq -n --rawfile hidden "$TMPD/pyrepo.hidden_test.py" \
  '{problem: {kind: "episode", image: "pyrepo:commit-1", files: {"test_hidden.py": $hidden},
             command: ["python3", "-m", "unittest", "-q", "test_hidden"]}}')"
is "$(jb '[.verdict.output.status, .image.digest] | join(" ")')" "pass $D" \
  "graded in a fork of the session: the hidden test (relative to WorkingDir /repo) passes; the record names the image"
sx "$S" '{"cmd":["bash","-c","echo /repo/*"]}'
is "$(jb .stdout)" "/repo/README /repo/calc.py /repo/test_calc.py" "the hidden test never entered the agent's session"
post_json "/v1/sessions/$S/judge" '{"problem":{"kind":"episode","image":"other:1","command":"true"}}'
is "$CODE" 400 "an episode problem for another image than the session's: 400"
# a file of the image the agent deleted stays deleted in the grade's fork and in a snapshot's
# forks (the copied tree is opaque over the image: it came back from the image before)
req DELETE "/v1/sessions/$S/files?path=/repo/README"
post_json "/v1/sessions/$S/judge" '{"problem":{"kind":"episode","command":["bash","-c","echo /repo/*; test ! -e README"]}}'
is "$(jb '[.verdict.output.status, .command.stdout_tail] | join(" ")')" "pass /repo/calc.py /repo/test_calc.py" "the image's file the agent deleted is not in the grade's fork"
post_json "/v1/sessions/$S/snapshot" '{}'
post_json /v1/sessions "$(jq -n --arg s "$(jb .snapshot)" '{from_snapshot: $s}')"
F=$(jb .session_id)
sx "$F" '{"cmd":["bash","-c","echo /repo/*"]}'
is "$(jb .stdout)" "/repo/calc.py /repo/test_calc.py" "nor in a fork of the session's snapshot"
req DELETE "/v1/sessions/$F"
req DELETE "/v1/sessions/$S"

# the judge: a fresh sandbox of the same image, the agent's file and the hidden test
body=$(jq -n --rawfile calc "$TMPD/answer.py" --rawfile hidden "$TMPD/pyrepo.hidden_test.py" \
  '{template: "swe-calc", files: {"/repo/calc.py": $calc, "/repo/test_hidden.py": $hidden},
    cmd: ["python3", "-m", "unittest", "-q", "test_hidden"]}')
post_json /v1/runs "$body"
is "$CODE" 200 "the judge's run: 200 $(head -c 300 "$BODY")"
is "$(jb .status)" OK "the judge: the hidden test passes on the agent's answer"
is "$(jb '.run.image.digest + " " + .run.image.config_digest')" "$D $("$PADDOCK" image inspect "$D" | jq -r .config_digest)" \
  "the judge's record names the image and its config by digest"
post_json /v1/runs "$(jq -n --rawfile hidden "$TMPD/pyrepo.hidden_test.py" \
  '{template: "swe-calc", files: {"/repo/test_hidden.py": $hidden}, cmd: ["python3", "-m", "unittest", "-q", "test_hidden"]}')"
is "$(jb .status)" RE "control: the hidden test fails on the commit as shipped"
stop_daemon
