#!/usr/bin/env bash
# paddock exec --audit against the red team's findings: a path rule judges the object opened, not
# the spelling of its path (/proc/self/root, /proc/self/cwd, /proc/thread-self/root,
# /dev/fd/../root, a symlink of the program's own); a write is told from a read, and every call
# that changes a file (unlink, rename, link, symlink, chmod, chown, truncate, xattrs) is seen
# under a protected path; the writable layer shows the same change after the run.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 41
if gv; then
  # the audit rests on the host kernel's seccomp notifications, which the Sentry's calls never
  # reach: the tier refuses it (XX with the reason) rather than run unaudited
  sbt 30 --audit -- true
  is "$(jf status)|$(jf error)" "XX|isolation gvisor does not offer an audit: Operation not supported" \
    "gvisor: --audit is refused (XX, the reason), not ignored"
  for i in $(seq 40); do skip "gvisor: no audit (the Sentry's calls never reach the host's seccomp notifications)"; done
  exit 0
fi

SECRET=$TMPD/secret
mkdir -p "$SECRET"
echo "FLAG-$TAG" >"$SECRET/flag"
chmod -R a+rX "$SECRET"
deny=(--bind "$SECRET:/secret" --audit-deny /secret)
# kinds of the last result's events, "kind:op:mode:target" one per line
ev() { jq -r '.audit.events[] | "\(.kind):\(.op):\(.mode):\(.path // .address)"' <<<"$OUT"; }

# --- a deny rule judges the object, not the spelling ------------------------------------------
for how in 'cat /secret/flag' 'cat /proc/self/root/secret/flag' 'cd /secret && cat /proc/self/cwd/flag' \
  'cat /proc/thread-self/root/secret/flag' 'cat /dev/fd/../root/secret/flag' \
  'ln -s /secret /tmp/s && cat /tmp/s/flag' 'cd /tmp && cat ../proc/1/root/secret/./flag'; do
  sbt 30 "${deny[@]}" -- sh -c "$how"
  unlike "$(so)" "FLAG-" "$how: the secret is not printed"
  # a link to judge material is reaching for it: refused at the ln already
  like "$(ev)" "judge_material:(open:r:/secret/flag|symlink:meta:/secret)" "$how: refused and recorded as /secret"
done

# --- writes under protected paths -------------------------------------------------------------
sbt 30 --audit -- sh -c 'printf "#!/bin/sh\necho ALL TESTS PASSED\n" > /bin/bash'
like "$(ev)" "tamper:open:w:/usr/bin/bash" "overwriting /bin/bash is a tamper (the write, as resolved)"
like "$(ev)" "tamper:upper:w:/usr/bin/bash" "and the writable layer shows it after the run"
sbt 30 --audit -- sh -c 'rm /usr/bin/bash && ln -s /bin/true /usr/bin/bash'
like "$(ev)" "tamper:unlink:delete:/usr/bin/bash" "rm over /usr/bin/bash is a tamper"
like "$(ev)" "tamper:symlink:create:/usr/bin/bash" "and so is the ln -s that replaces it"
like "$(ev)" "tamper:upper:w:/usr/bin/bash" "the writable layer has the new link"
sbt 30 --audit -- sh -c 'cat /etc/hostname >/dev/null; cat /usr/bin/env >/dev/null'
unlike "$(ev)" "tamper" "reading the image's files is no tamper"
sbt 30 --audit -- sh -c 'echo x >> /etc/hostname'
like "$(ev)" "tamper:open:w:/etc/hostname" "appending to /etc/hostname is"
# the record says why the exit status is 1 when the program's is OK: the failure class and the
# verdict, as /v1/runs' record states them; it is the record of a run without --audit, plus the
# audit's verdict ("process", first, as it always was)
is "$RC|$(jf status)|$(jf failure_class)|$(jq -r '.verdict | "\(.output) \(.process.status) \(.resources)"' <<<"$OUT")" \
  "1|OK|policy_violation|not_judged fail pass" "a tamper: exit 1, and the record says why (failure_class, verdict.process)"
audited=$(jq -c 'keys' <<<"$OUT")
sbt 30 -- sh -c 'echo x >> /etc/hostname'
is "$(jq -c 'keys + ["process"] | sort' <<<"$OUT")|$(jq -r '"\(.failure_class) \(.verdict.process.status)"' <<<"$OUT")" \
  "$audited|none not_audited" "without --audit: the same record less \"process\", verdict.process not_audited"
sbt 30 --audit -- sh -c 'mv /usr/bin/env /tmp/env'
like "$(ev)" "tamper:rename:delete:/usr/bin/env" "rename away from a protected path"
sbt 30 --audit -- sh -c 'echo x > /tmp/py; mv /tmp/py /usr/bin/python3'
like "$(ev)" "tamper:rename:w:/usr/bin/python3" "rename onto a protected path"
like "$(ev)" "tamper:upper:w:/usr/bin/python3" "and the writable layer has it"
sbt 30 --audit -- sh -c 'chmod 777 /etc/passwd'
like "$(ev)" "tamper:chmod:meta:/etc/passwd" "chmod"
sbt 30 --audit -- sh -c 'chown 1:1 /etc/passwd'
like "$(ev)" "tamper:chown:meta:/etc/passwd" "chown"
sbt 30 --audit -- python3 -c 'import os; os.truncate("/usr/bin/env", 0)'
like "$(ev)" "tamper:truncate:w:/usr/bin/env" "truncate"
sbt 30 --audit -- python3 -c 'import os; os.setxattr("/etc/hostname", "user.x", b"1")'
like "$(ev)" "tamper:xattr:meta:/etc/hostname" "setxattr"
sbt 30 --audit -- sh -c 'ln /usr/bin/env /usr/bin/env2'
like "$(ev)" "tamper:link:create:/usr/bin/env2" "a hard link made under a protected path"
sbt 30 --audit -- sh -c 'ln -s /work /usr/local/w && echo x > /usr/local/w/../../../tmp/x'
like "$(ev)" "tamper:symlink:create:/usr/local/w" "a symlink made under a protected path"
sbt 30 --audit -- sh -c 'cd /usr/lib && echo x > ../../etc/motd2'
like "$(ev)" "tamper:open:create:/etc/motd2" "a relative path from the cwd is resolved"
sbt 30 --audit -- sh -c 'ln -s /usr/bin /tmp/b && echo x > /tmp/b/evil'
like "$(ev)" "tamper:open:create:/usr/bin/evil" "a write through the program's own symlink lands where it leads"
sbt 30 --audit -- sh -c 'rm -rf /etc/ssl'
like "$(ev)" "tamper:upper:delete:/etc/ssl" "the writable layer shows a removed directory (a whiteout)"

# a change by a call the syscall audit does not decode (utimensat: metadata only) is still in the
# writable layer, which holds every change: found there after the run
sbt 30 --audit -- python3 -c 'import os; os.utime("/etc/hostname", (0, 0))'
is "$(ev)" "tamper:upper:w:/etc/hostname" "a change the syscall audit misses is found in the writable layer"

# --- the attempt's own places -----------------------------------------------------------------
sbt 30 --audit -- sh -c 'echo a > /work/a; mkdir -p /tmp/d/e; echo b > /tmp/d/e/f; mv /tmp/d /tmp/g; rm -r /tmp/g; ln -s /work/a /tmp/l; chmod 600 /work/a; echo c > /dev/shm/c; echo ok'
is "$(so) $(jq '.audit.events | length' <<<"$OUT")" "ok 0" "writes in /work, /tmp and /dev/shm are no event"
sbt 30 --audit -- sh -c 'mkdir -p /work/x/y; echo ok'
is "$(jq '.audit.events | length' <<<"$OUT")" "0" "mkdir -p in /work: no event for the directories that exist"

# --- what the audit costs: one stop per call it must see --------------------------------------
# a program found through PATH is one execve for the audit, not one per directory tried before it
# (python3 in /usr/bin was four round trips to the host); the stops are counted in audit_notified
sbt 30 --audit -- /usr/bin/true
by_path=$(jq '.audit_notified' <<<"$OUT")
sbt 30 --audit --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -- true
is "$(jq '.audit_notified' <<<"$OUT")" "$by_path" "found through PATH: as many stops as named by its path ($by_path)"
sbt 30 --audit --env PATH=/nonexistent:/usr/bin -- no-such-program-s29
is "$(jq '.audit_notified' <<<"$OUT")" "0" "a program on no PATH directory: no execve stopped"
like "$(jq -r '.error' <<<"$OUT")" "No such file or directory" "and it is reported not found, as before"
