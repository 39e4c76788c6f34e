#!/usr/bin/env bash
# paddock doctor (issue 39): the host's prerequisites, each named with the feature that needs it,
# and an exit status that says whether the core features can run. On this host every core check
# passes and one sandbox runs. A state directory under a 0700 directory is the failure it was made
# for: every sandbox fails with "mount skeleton tmpfs: Permission denied" (reproduced here with
# paddock exec), and doctor names the directory and the fix, exits 1, and its own sandbox says the
# same; after chmod o+x both work. A state directory on a 64 MiB tmpfs fails the free-disk check.
source "$(dirname "$0")/api.sh"
plan 17

"$PADDOCK" doctor --json >"$TMPD/doctor.json" 2>"$TMPD/doctor.err"
is "$?" 0 "paddock doctor on this host: exit 0 ($(head -c 200 "$TMPD/doctor.err"))"
is "$(jq -r '[.checks[].name] | join(", ")' "$TMPD/doctor.json")" \
  "user namespaces, namespace limits, cgroup controllers, overlayfs in a user namespace, seccomp, seccomp notify, pidfd, state directory permissions, free disk in the state directory, /dev/kvm, runsc, libnats, nats-server, a sandbox" \
  "--json: every check, by name"
is "$(jq -r '[.checks[] | select(.core and .status != "ok") | .name] | join(", ")' "$TMPD/doctor.json")|$(jq .core_ok "$TMPD/doctor.json")" "|true" \
  "every core check passes here, core_ok true"
is "$(jq -r '[.checks[] | select((.needed_by | length) == 0 or (.detail | length) == 0 or (.status | IN("ok","warn","missing","fail") | not))] | length' "$TMPD/doctor.json")" 0 \
  "each says what needs it, what it found, and a status of ok, warn, missing or fail"
like "$(jq -r '.checks[] | select(.name == "a sandbox") | .detail' "$TMPD/doctor.json")" '^/bin/true ran: setup [0-9.]+ ms, teardown [0-9.]+ ms \(cgroup v[12]\), residue clean$' \
  "its sandbox ran /bin/true"
out=$("$PADDOCK" doctor)
like "$out" "core features \\(sandboxes: exec, run, serve, pools, sessions\\): can run" "the text form ends with the verdict"
like "$out" "needed by: the audit" "... and names the feature each check is for"

# --- a state directory under a 0700 directory ---------------------------------------------------
mkdir -p "$TMPD/priv"
chmod 0700 "$TMPD/priv"
export PADDOCK_STATE_DIR=$TMPD/priv/state
out=$(timeout 120 "$PADDOCK" exec -- /bin/true 2>&1)
is "$?:$out" "2:paddock: sandbox fault: sandbox setup: mount skeleton tmpfs: Permission denied" \
  "paddock exec with the state directory under a 0700 directory: every sandbox fails so (reproduced)"
"$PADDOCK" doctor --json >"$TMPD/priv.json"
is "$?|$(jq .core_ok "$TMPD/priv.json")" "1|false" "doctor: exit 1, core_ok false"
is "$(jq -r '.checks[] | select(.status == "fail") | .name' "$TMPD/priv.json" | tr '\n' ',')" "state directory permissions,a sandbox," \
  "... the state directory's check fails, and its sandbox"
like "$(jq -r '.checks[] | select(.name == "state directory permissions") | .detail' "$TMPD/priv.json")" \
  "^$TMPD/priv is 0700: others cannot search it, so no sandbox can reach $TMPD/priv/state \\(each fails with 'mount skeleton tmpfs: Permission denied'\\); chmod o\\+x $TMPD/priv" \
  "... naming the directory, what fails and the fix"
like "$(jq -r '.checks[] | select(.name == "a sandbox") | .detail' "$TMPD/priv.json")" "mount skeleton tmpfs: Permission denied" \
  "... its own sandbox ends as paddock exec did"
chmod 0711 "$TMPD/priv"
"$PADDOCK" doctor >/dev/null && timeout 120 "$PADDOCK" exec -- /bin/true
ok $? "after chmod o+x: doctor exits 0 and paddock exec runs"

# --- a small disk ------------------------------------------------------------------------------------
mkdir -p "$TMPD/small"
mount -t tmpfs -o size=64M,mode=0755 tmpfs "$TMPD/small"
cleanup 'umount "$TMPD/small" 2>/dev/null'
export PADDOCK_STATE_DIR=$TMPD/small/state
"$PADDOCK" doctor --json >"$TMPD/small.json"
is "$?" 1 "a state directory on a 64 MiB tmpfs: exit 1"
like "$(jq -r '.checks[] | select(.status != "ok") | "\(.name): \(.detail)"' "$TMPD/small.json")" \
  "^free disk in the state directory: [0-9]+ MiB free on $TMPD/small \\(under 256 MiB" "... the free-disk check says how much is free"

# --- usage ---------------------------------------------------------------------------------------------
"$PADDOCK" doctor --frobnicate >/dev/null 2>&1
r1=$?
"$PADDOCK" doctor extra >/dev/null 2>&1
is "$r1 $?" "64 64" "an unknown option or an operand: exit 64"
like "$("$PADDOCK" doctor --help)" "^usage: paddock doctor \\[--json\\]" "--help"
