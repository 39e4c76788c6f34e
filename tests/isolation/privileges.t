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
  like "$st" "(^|
)$k=0000000000000000(
|\$)" "$k is zero"
done
like "$st" '(^|
)NoNewPrivs=1(
|$)' "NoNewPrivs is 1"
like "$st" '(^|
)Seccomp=2(
|$)' "Seccomp is 2 (filter)"
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
sbt 30 -- cat /proc/self/mountinfo
nosuid=$(awk '$5 == "/" || $5 == "/usr" || $5 == "/dev/shm" || $5 == "/dev" || $5 == "/proc" { print $5 ":" ($6 ~ /(^|,)nosuid(,|$)/ ? "nosuid" : "SUID") }' <<<"$(so)" | sort | tr '\n' ' ')
is "$nosuid" "/:nosuid /dev/shm:nosuid /dev:nosuid /proc:nosuid /usr:nosuid " "/, /usr, /dev, /dev/shm and /proc are mounted nosuid"
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
sbt 30 --bind "$TMPD/priv:/priv" -- sh -c 'stat -c "%u %a" /priv/f; cat /priv/f 2>/dev/null || echo denied'
is "$(so | tr '\n' ' ')" "1000 600 denied " "root inside cannot read another uid's 0600 file (no DAC override)"

# --- uid and gid maps ------------------------------------------------------------------------
sbt 30 -- sh -c 'cat /proc/self/uid_map /proc/self/gid_map'
maps=$(so)
base=$(uid_base "$maps")
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
sbt 30 -- sh -c 'stat -c %U:%G /usr/bin/bash /etc/passwd; touch /tmp/new; stat -c %U:%G /tmp/new'
is "$(so | tr '\n' ' ')" "root:root root:root root:root " "image files and a new file show owner root inside"

# --- /proc/self/exe and init's exe (CVE-2019-5736) -------------------------------------------
h_pd=$(sha256sum "$PADDOCK_REAL" | cut -d' ' -f1)
h_pr=$(sha256sum "$PROBES/selfexe" | cut -d' ' -f1)
sbp -- /probes/selfexe
out=$(so)
like "$out" 'self_exe_wronly=E[A-Z]+' "open(/proc/self/exe, O_WRONLY) fails"
like "$out" 'self_exe_rdwr=E[A-Z]+' "open(/proc/self/exe, O_RDWR) fails"
like "$out" 'init_exe_wronly=E(ACCES|NOENT)' "init's exe (the host's paddock) cannot be opened for writing"
like "$out" 'init_exe_rdonly=E(ACCES|NOENT)' "init's exe cannot even be opened for reading"
sbt 30 -- sh -c 'cat /bin/sh > /proc/self/exe; echo rc=$?; cp /bin/true /proc/1/exe; echo rc=$?'
like "$(so)" '^rc=[1-9]
rc=[1-9]$' "the shell cannot overwrite /proc/self/exe nor /proc/1/exe"
is "$(sha256sum "$PADDOCK_REAL" | cut -d' ' -f1)|$(sha256sum "$PROBES/selfexe" | cut -d' ' -f1)" "$h_pd|$h_pr" \
  "the host's paddock binary and the probe are unchanged"

done_testing
