#!/usr/bin/env bash
# Reuse after reset, end to end: a session leaves files (/work, /tmp, /dev/shm), a daemon process
# that ignores SIGTERM, a SysV segment and a POSIX queue behind; once it is closed the daemon's
# pool resets that sandbox and the next session gets the same sandbox, which must show none of
# it. The next /run_code user of a reset sandbox must not see the previous one's files either.
# With "reuse": false in the template, sandboxes are never reset.
source "$(dirname "$0")/api.sh"
plan 33

cat >"$TMPD/tpl.json" <<'EOF'
{"templates": [
  {"name": "bash", "language": "bash", "requires": ["bash"], "cwd": "/work",
   "pool": {"min": 1, "max": 2}},
  {"name": "once", "language": "bash", "requires": ["bash"], "pool": {"min": 1, "max": 2, "reuse": false}}]}
EOF
start_daemon --templates "$TMPD/tpl.json"
ok $? "daemon started with a reusing and a use-once template"

sx() { post_json "/v1/sessions/$1/exec" "$2"; }
metric() {  # metric NAME TEMPLATE: a pool counter from /metrics
  curl -s -m 5 "$U/metrics" | sed -n "s/^paddock_pool_$1{template=\"$2\"} //p"
}
wait_metric() {  # wait_metric NAME TEMPLATE MIN: until the counter reaches MIN (10 s)
  local i
  for ((i = 0; i < 100; i++)); do
    [ "$(metric "$1" "$2")" -ge "$3" ] 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# the pool refilled after the first acquire: wait for a quiet pool before each step
settle() { sleep 0.5; }

settle
post_json /v1/sessions '{"template":"bash"}'
is "$CODE" 201 "session A: 201"
A=$(jb .session_id)
SBA=$(jb .sandbox_id)
sx "$A" '{"shell":"echo secret-a > /work/a.txt; echo t > /tmp/t; echo s > /dev/shm/s; (setsid sh -c '"'"'trap \"\" TERM HUP; exec -a pd-reuse-daemon sleep 300'"'"' </dev/null >/dev/null 2>&1 &); ipcmk -M 4096 >/dev/null; python3 -c '"'"'import ctypes; r=ctypes.CDLL(\"librt.so.1\"); assert r.mq_open(b\"/pd-reuse\", 0o102, 0o600, None) >= 0'"'"'; sleep 0.2; echo done"}'
is "$(jb .stdout)" done "session A leaves files, a daemon, a SysV segment and a POSIX queue"
r0=$(metric resets_total bash)
req DELETE "/v1/sessions/$A"
is "$CODE" 200 "session A closed"
wait_metric resets_total bash $((r0 + 1))
ok $? "the pool reset A's sandbox (paddock_pool_resets_total $(metric resets_total bash))"

settle
post_json /v1/sessions '{"template":"bash"}'
is "$CODE" 201 "session B: 201"
B=$(jb .session_id)
is "$(jb .sandbox_id)" "$SBA" "session B got the reset sandbox ($SBA)"
sx "$B" '{"shell":"echo $$"}'
is "$(jb .stdout)" 2 "B: pids start where a fresh sandbox's do (2)"
sx "$B" '{"shell":"ls -A /work /tmp /dev/shm"}'
is "$(jb .stdout)" "$(printf '/dev/shm:\n\n/tmp:\n\n/work:')" "B: /work, /tmp and /dev/shm are empty"
sx "$B" '{"shell":"cat /proc/[0-9]*/cmdline | tr \"\\0\" \" \" | grep -c pd-reuse-[d]aemon; true"}'
is "$(jb .stdout)" 0 "B: A's daemon is gone"
sx "$B" '{"shell":"cat /proc/sysvipc/shm | wc -l; python3 -c '"'"'import ctypes; r=ctypes.CDLL(\"librt.so.1\", use_errno=True); print(r.mq_open(b\"/pd-reuse\", 0), ctypes.get_errno())'"'"'"}'
is "$(jb .stdout)" "$(printf '1\n-1 2')" "B: no SysV segment (header only), the POSIX queue does not exist (ENOENT)"
req DELETE "/v1/sessions/$B"
is "$CODE" 200 "session B closed"

# --- /run_code through reset sandboxes ------------------------------------------------------------
unseen_after_write() {  # unseen_after_write PATH: a /run_code request writes PATH, the next six miss it
  post_json /run_code "{\"code\":\"echo leak > $1; echo written\",\"language\":\"bash\"}"
  is "$(jb .run_result.stdout)" "$(printf 'written\n')" "a /run_code request writes $1"
  local seen=0 i
  for i in 1 2 3 4 5 6; do
    post_json /run_code "{\"code\":\"cat $1 2>/dev/null || echo clean\",\"language\":\"bash\"}"
    [ "$(jb .run_result.stdout)" = "$(printf 'clean\n')" ] || seen=1
  done
  is "$seen" 0 "the next six /run_code requests never see it"
}
unseen_after_write /tmp/leak.txt
ok "$([ "$(metric resets_total bash)" -ge $((r0 + 3)) ] && echo 0 || echo 1)" \
  "they ran in reset sandboxes (resets $(metric resets_total bash))"
unseen_after_write /work/leak.txt
# the root and /usr are kept by resets only while untouched: a write there is gone for the next users
unseen_after_write /usr/local/pd-leak
unseen_after_write /etc/pd-leak
ok "$([ "$(metric resets_kept_total bash)" -ge 1 ] 2>/dev/null && echo 0 || echo 1)" \
  "resets that found the root untouched kept it (paddock_pool_resets_kept_total $(metric resets_kept_total bash))"

# --- the scratch kept for users who only read it -----------------------------------------------------
# A reset keeps /tmp, /work, /dev/shm and devpts when the last user only read them (its program and
# its working directory): the next user's program file overwrites the last one's in place.
k0=$(metric resets_scratch_kept_total bash)
last=""
for i in 1 2 3 4; do
  post_json /run_code "{\"code\":\"cat main.sh > /dev/null; echo run $i; ls -A /work /tmp /dev/shm | tr '\\\\n' ' '\",\"language\":\"bash\"}"
  last="$last$(jb .run_result.stdout)"
done
is "$last" "$(printf 'run 1\n/dev/shm:  /tmp:  /work: main.sh run 2\n/dev/shm:  /tmp:  /work: main.sh run 3\n/dev/shm:  /tmp:  /work: main.sh run 4\n/dev/shm:  /tmp:  /work: main.sh ')" \
  "four read-only users: each runs its own program and sees nothing else"
wait_metric resets_scratch_kept_total bash $((k0 + 3))
ok $? "resets after them kept the scratch (paddock_pool_resets_scratch_kept_total $(metric resets_scratch_kept_total bash))"
# what a user can change there without an inotify event, or with one that does not count
hostile() {  # hostile DESCRIPTION CODE CHECK WANT: after CODE, six users run CHECK and print WANT
  post_json /run_code "{\"code\":\"$2\",\"language\":\"bash\"}"
  local seen=0 i out
  for i in 1 2 3 4 5 6; do
    post_json /run_code "{\"code\":\"$3\",\"language\":\"bash\"}"
    out=$(jb .run_result.stdout)
    [ "$out" = "$(printf '%s\n' "$4")" ] || { seen=1; echo "# got: $out"; }
  done
  is "$seen" 0 "$1: the next six users see none of it"
}
hostile "an inode flag set on /work (FS_IOC_SETFLAGS sends no inotify event)" \
  'chattr +d /work; lsattr -d /work' 'lsattr -d /work | cut -c1-22' '----------------------'
hostile "an inode flag on the program's own file" \
  'chattr +d main.sh; lsattr main.sh' 'lsattr main.sh | cut -c1-22' '----------------------'
hostile "an extended attribute on /work" \
  "python3 -c 'import os; os.setxattr(\\\"/work\\\", \\\"user.pd\\\", b\\\"x\\\")'" \
  "cd /work; python3 -c 'import os; print(os.listxattr(\\\".\\\"))'" '[]'
# the program's file rewritten through a shared mapping (no IN_MODIFY): each next user runs its own
hostile "the program file changed through a shared mapping" \
  "cd /work; python3 -c 'import mmap,os; f=os.open(\\\"main.sh\\\",os.O_RDWR); m=mmap.mmap(f,9); m[:9]=b\\\"echo HIJK\\\"'" \
  'echo mine' 'mine'

# --- reuse off ------------------------------------------------------------------------------------
settle
post_json /v1/sessions '{"template":"once"}'
is "$CODE" 201 "session on the use-once template: 201"
O=$(jb .session_id)
SBO=$(jb .sandbox_id)
d0=$(metric destroyed_total once)
req DELETE "/v1/sessions/$O"
wait_metric destroyed_total once $((d0 + 1))
ok $? "its sandbox is destroyed"
is "$(metric resets_total once)" 0 "and never reset"
settle
post_json /v1/sessions '{"template":"once"}'
SBN=$(jb .sandbox_id)
ok "$([ -n "$SBN" ] && [ "$SBN" != "$SBO" ] && echo 0 || echo 1)" "the next session gets another sandbox ($SBN)"
req DELETE "/v1/sessions/$(jb .session_id)"

req GET /healthz
is "$CODE" 200 "daemon healthy"
done_testing
