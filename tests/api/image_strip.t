#!/usr/bin/env bash
# Clean task environments: `paddock image import --strip-history PATH[@COMMIT]` keeps, of the git
# repository at PATH, only the history its HEAD (or COMMIT) reaches. The image (mkimage.py
# gitrepo) is a repository whose main branch was reset to the task's commit after the fix was
# committed: imported as it is, an agent finds the fix with `git log --all`, in the reflog, a
# branch, a tag, a stray object; stripped, none of them, while the task's commit, its files and a
# clean `git status` stay.
source "$(dirname "$0")/api.sh"
plan 19

export PADDOCK_STATE_DIR=$TMPD/state
python3 tests/api/mkimage.py gitrepo "$TMPD/g"
TASK=$(cat "$TMPD/g.task")
FUT=$(cat "$TMPD/g.future")
gx() { "$PADDOCK" exec --image "$1" --env HOME=/tmp -- bash -c "git config --global safe.directory '*'; $2" 2>&1; }

PLAIN=$("$PADDOCK" image import "$TMPD/g" --name task:plain 2>/dev/null)
is "$?" 0 "the repository's image imported as it is"
like "$(gx task:plain 'git log --all --format=%s')" "the future: fix add" "control: as imported, git log --all shows the fix"
is "$(gx task:plain "git cat-file -t $FUT")" commit "control: ... and the future commit is there"

CLEAN=$("$PADDOCK" image import "$TMPD/g" --name task:clean --strip-history /repo 2>"$TMPD/err")
is "$?" 0 "imported with --strip-history /repo ($(cat "$TMPD/err"))"
[ -n "$CLEAN" ] && [ "$CLEAN" != "$PLAIN" ]
ok $? "the stripped image is another image, with a digest of its own"
is "$(gx task:clean 'git log --all --format=%H')" "$TASK" "git log --all: the task's commit alone"
like "$(gx task:clean "git cat-file -t $FUT")" "could not get object info" "the future commit's object is gone"
is "$(gx task:clean 'git branch -a --format=%\(refname\); git tag; git reflog; ls .git/ORIG_HEAD .git/logs 2>/dev/null')" \
  "refs/heads/main" "no other branch, no tag, no reflog, no ORIG_HEAD"
is "$(gx task:clean 'git fsck --unreachable --dangling 2>&1')" "" "no stray object (git fsck finds nothing)"
is "$(gx task:clean 'git rev-parse HEAD; git status --porcelain; sha256sum <calc.py | tr -d " -"')" "$TASK
$(python3 -c 'import hashlib,sys; sys.path.insert(0,"tests/api"); import mkimage; print(hashlib.sha256(mkimage.CALC_BUG).hexdigest())')" "HEAD at the task's commit, a clean work tree, the task's files (the bug still there)"
is "$(gx task:clean 'stat -c %u:%g .git .git/HEAD .git/objects')" "1000:1000
1000:1000
1000:1000" "the new .git keeps the repository's owner"
is "$("$PADDOCK" image inspect task:clean | jq -r '.strip_history.path + " " + .strip_history.commit')" "/repo $TASK" \
  "inspect names the repository and the commit it was cut at"
is "$("$PADDOCK" image inspect task:clean | jq -r '.layers | length')" 4 "one layer more than the source"
AGAIN=$("$PADDOCK" image import "$TMPD/g" --name task:clean2 --strip-history /repo 2>/dev/null)
is "$AGAIN" "$CLEAN" "the same source stripped again: the same digest"

AT=$("$PADDOCK" image import "$TMPD/g" --name task:older --strip-history "/repo@$FUT" 2>/dev/null)
is "$(gx task:older 'git log --all --format=%H | tr "\n" " "')" "$FUT $TASK " "@COMMIT: cut at the commit given (here the future)"

"$PADDOCK" image import "$TMPD/g" --name bad --strip-history /nope 2>"$TMPD/err"
is "$?" 2 "a path that is no repository: refused (exit 2)"
"$PADDOCK" image import "$TMPD/g" --name bad --strip-history "/repo@0000000000000000000000000000000000000000" 2>"$TMPD/err"
like "$(cat "$TMPD/err")" "is not in /repo" "a commit the repository lacks: refused"

echo canary >"$TMPD/canary"
python3 tests/api/mkimage.py gitrepo-symlink "$TMPD/gs" "$TMPD/canary"
"$PADDOCK" image import "$TMPD/gs" --name bad --strip-history /repo 2>"$TMPD/err"
like "$(cat "$TMPD/err")" "holds a symlink: refused" "a .git holding a symlink: refused (the host's git would follow it)"
is "$(ls "$PADDOCK_STATE_DIR/images/store/tmp")" "" "nothing left behind in the store's tmp/"
