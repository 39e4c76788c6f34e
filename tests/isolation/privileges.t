#!/usr/bin/env bash
# Privileges: the program is root of its user namespace but holds no capability (and cannot regain
# one by exec, setuid or file capabilities), runs with no_new_privs and seccomp, and its uids map
# to a private unprivileged host range. /proc/self/exe cannot reach a host binary.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"
plan 28

# --- capabilities, no_new_privs, seccomp -----------------------------------------------------
sbp -- /probes/status
st=$(so)
for k in CapInh CapPrm CapEff CapBnd CapAmb; do
  if gv && [ $k = CapAmb ]; then
    skip "gvisor: the Sentry's /proc/self/status has no CapAmb line (the other four are zero)"
    continue
  fi
  like "$st" "(^|
)$k=0000000000000000(
|\$)" "$k is zero"
done
if gv; then
  # noNewPrivileges is in runsc's spec (lib/gvisor/spec.c); the setuid checks below show it holds
  skip "gvisor: the Sentry's /proc/self/status has no NoNewPrivs line"
  # paddock's filter is not in the Sentry: the Sentry serves the calls (tests/isolation/seccomp.t)
  like "$st" '(^|
)Seccomp=0(
|$)' "gvisor: Seccomp is 0 inside (the Sentry serves every call; runsc's own filter confines the Sentry)"
else
  like "$st" '(^|
)NoNewPrivs=1(
|$)' "NoNewPrivs is 1"
  like "$st" '(^|
)Seccomp=2(
|$)' "Seccomp is 2 (filter)"
fi
sbt 30 -- sh -c 'grep -E "^Cap(Prm|Eff)" /proc/self/status | cut -f2 | sort -u'
is "$(so)" 0000000000000000 "a program exec'd by the root shell inside regains no capability"

# --- setuid, setgid and file capabilities gain nothing ---------------------------------------
S=$TMPD/suid
mkdir -p "$S"
chmod 755 "$S"
for n in suid_root suid_user sgid_user fcaps; do cp "$PROBES/status" "$S/$n"; done
chown 1000:1000 "$S/suid_user" "$S/sgid_user"
chmod 4755 "$S/suid_root" "$S/suid_user"
chmod 2755 "$S/sgid_user"
have_fcaps=0
setcap cap_sys_admin,cap_setuid,cap_dac_override+ep "$S/fcaps" 2>/dev/null && have_fcaps=1
# the same binaries grant something on the host, run by nobody
ctl=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$S/suid_user" 2>&1 | grep '^uid=')
ctl2=$([ $have_fcaps = 1 ] && setpriv --reuid=65534 --regid=65534 --clear-groups "$S/fcaps" 2>&1 | grep '^CapEff=')
[ "$ctl" = "uid=65534,1000,1000" ] && { [ $have_fcaps = 0 ] || [ "$ctl2" != "CapEff=0000000000000000" ]; }
ok $? "control: on the host the setuid binary switches uid ($ctl) and the file caps grant ($ctl2)"
sbt 30 --bind "$S:/suid" -- sh -c 'for f in suid_root suid_user sgid_user fcaps; do echo "== $f"; /suid/$f | grep -E "^(uid|gid|CapPrm|CapEff)="; done'
out=$(so)
for f in suid_root suid_user sgid_user fcaps; do
  blk=$(awk -v f="== $f" '$0 == f { on = 1; next } /^==/ { on = 0 } on' <<<"$out" | tr '\n' ' ')
  is "$blk" "uid=0,0,0 gid=0,0,0 CapPrm=0000000000000000 CapEff=0000000000000000 " \
    "executing a $f binary from the host changes no id and grants no capability"
done
sbt 30 "${BINDP[@]}" -- sh -c 'cp /probes/status /tmp/s && chmod 4755 /tmp/s && /tmp/s | grep -E "^Cap(Prm|Eff)=" | cut -d= -f2 | sort -u'
is "$(so)" 0000000000000000 "a binary made setuid inside grants nothing"
if gv; then
  # the Sentry's mountinfo shows no nosuid; no_new_privs is what keeps a setuid binary inert:
  # a non-root user running a setuid-root binary stays itself
  sbt 30 --user 1000:1000 --bind "$S:/suid" -- sh -c '/suid/suid_root | grep -E "^uid="'
  is "$(so)" "uid=1000,1000,1000" "gvisor: uid 1000 running a setuid-root binary stays uid 1000 (no_new_privs; no nosuid shown)"
else
  sbt 30 -- cat /proc/self/mountinfo
  nosuid=$(awk '$5 == "/" || $5 == "/usr" || $5 == "/dev/shm" || $5 == "/dev" || $5 == "/proc" { print $5 ":" ($6 ~ /(^|,)nosuid(,|$)/ ? "nosuid" : "SUID") }' <<<"$(so)" | sort | tr '\n' ' ')
  is "$nosuid" "/:nosuid /dev/shm:nosuid /dev:nosuid /proc:nosuid /usr:nosuid " "/, /usr, /dev, /dev/shm and /proc are mounted nosuid"
fi
sbt 30 -- python3 -c '
import os
for name, f in [("setuid", lambda: os.setuid(1000)), ("setgid", lambda: os.setgid(1000)),
                ("setgroups", lambda: os.setgroups([1000])), ("chown", lambda: os.chown("/tmp", 1000, 1000))]:
    try:
        f(); print(name + "=OK")
    except OSError as e:
        print(name + "=" + str(e.errno))'
is "$(so | tr '\n' ' ')" "setuid=1 setgid=1 setgroups=1 chown=1 " "setuid, setgid, setgroups and chown give EPERM"
mkdir -p "$TMPD/priv"
echo private >"$TMPD/priv/f"
chown 1000:1000 "$TMPD/priv/f"
chmod 600 "$TMPD/priv/f"
# (python's stat: runsc 20221219 answers coreutils' statx on a host bind with EINVAL)
sbt 30 --bind "$TMPD/priv:/priv" -- sh -c 'python3 -c "import os; s = os.stat(\"/priv/f\"); print(s.st_uid, \"%o\" % (s.st_mode & 0o777))";
  cat /priv/f 2>/dev/null || echo denied'
is "$(so | tr '\n' ' ')" "1000 600 denied " "root inside cannot read another uid's 0600 file (no DAC override)"

# --- uid and gid maps ------------------------------------------------------------------------
sbt 30 -- sh -c 'cat /proc/self/uid_map /proc/self/gid_map'
maps=$(so)
base=$(uid_base "$maps")
if gv; then
  # the Sentry's ids are its own (its root user namespace): no host uid slot is taken
  like "$maps" '^ *0 +0 +4294967295
 *0 +0 +4294967295$' "gvisor: uid_map and gid_map are the Sentry's identity maps (its ids are never host ids)"
  skip "gvisor: no host uid base to compare (the Sentry's ids are its own)"
  skip "gvisor: no host uid slot is taken"
  skip "gvisor: no host uid slot is taken, so none to tell apart"
else
  like "$maps" '^ *0 +[0-9]+ +65536
 *0 +[0-9]+ +65536$' "uid_map and gid_map are each one line \"0 BASE 65536\""
  is "$(awk '{ print $2 }' <<<"$maps" | sort -u | wc -l)" 1 "uid and gid maps use the same base"
  [ -n "$base" ] && [ "$base" -ge 1073741824 ] && [ $(((base - 1073741824) % 65536)) = 0 ]
  ok $? "the base ($base) is >= 0x40000000 and a slot boundary (multiple of 65536 above it)"
  ( "$PADDOCK" exec -- sh -c 'cat /proc/self/uid_map; sleep 1.5' >"$TMPD/a" 2>&1 & "$PADDOCK" exec -- sh -c 'cat /proc/self/uid_map; sleep 1.5' >"$TMPD/b" 2>&1; wait )
  ba=$(uid_base "$(cat "$TMPD/a")")
  bb=$(uid_base "$(cat "$TMPD/b")")
  [ -n "$ba" ] && [ -n "$bb" ] && [ "$ba" != "$bb" ]
  ok $? "two concurrent sandboxes get different bases ($ba, $bb)"
fi
sbt 30 -- sh -c 'touch /tmp/new; python3 -c "import grp, os, pwd, sys
for p in sys.argv[1:]:
    s = os.stat(p); print(pwd.getpwuid(s.st_uid).pw_name + \":\" + grp.getgrgid(s.st_gid).gr_name)" /usr/bin/bash /etc/passwd /tmp/new'
is "$(so | tr '\n' ' ')" "root:root root:root root:root " "image files and a new file show owner root inside"

# --- /proc/self/exe and init's exe (CVE-2019-5736) -------------------------------------------
h_pd=$(sha256sum "$PADDOCK_REAL" | cut -d' ' -f1)
h_pr=$(sha256sum "$PROBES/selfexe" | cut -d' ' -f1)
sbp -- /probes/selfexe
out=$(so)
like "$out" 'self_exe_wronly=E[A-Z]+' "open(/proc/self/exe, O_WRONLY) fails"
like "$out" 'self_exe_rdwr=E[A-Z]+' "open(/proc/self/exe, O_RDWR) fails"
if gv; then
  # runsc runs no init: pid 1 is the program, its exe the probe (on a read-only bind)
  like "$out" 'init_exe_wronly=EROFS' "gvisor: pid 1's exe is the program's own (the probe), not writable (EROFS)"
  like "$out" 'init_exe_rdonly=OK' "gvisor: pid 1's exe is the program's own: readable, no host binary"
else
  like "$out" 'init_exe_wronly=E(ACCES|NOENT)' "init's exe (the host's paddock) cannot be opened for writing"
  like "$out" 'init_exe_rdonly=E(ACCES|NOENT)' "init's exe cannot even be opened for reading"
fi
sbt 30 -- sh -c 'cat /bin/sh > /proc/self/exe; echo rc=$?; cp /bin/true /proc/1/exe; echo rc=$?'
like "$(so)" '^rc=[1-9]
rc=[1-9]$' "the shell cannot overwrite /proc/self/exe nor /proc/1/exe"
is "$(sha256sum "$PADDOCK_REAL" | cut -d' ' -f1)|$(sha256sum "$PROBES/selfexe" | cut -d' ' -f1)" "$h_pd|$h_pr" \
  "the host's paddock binary and the probe are unchanged"

done_testing
