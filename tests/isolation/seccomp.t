#!/usr/bin/env bash
# The seccomp policy, call by call: every denied call answers EPERM (clone3 ENOSYS), every allowed
# call answers exactly as it does on the host without a filter, ioctl-level denials hold whatever the
# upper bits of the request, and a foreign ABI (i386 int 0x80, x32) kills the process.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/iso.sh"

DENIED="keyctl add_key request_key bpf perf_event_open userfaultfd io_uring_setup io_uring_enter
  io_uring_register kexec_load kexec_file_load init_module finit_module delete_module reboot swapon
  swapoff acct syslog settimeofday clock_settime clock_adjtime adjtimex quotactl sysfs ustat iopl
  ioperm modify_ldt mount umount2 pivot_root chroot fsopen fsconfig fsmount fspick open_tree move_mount
  mount_setattr open_by_handle_at name_to_handle_at fanotify_init unshare setns ptrace process_vm_readv
  process_vm_writev kcmp pidfd_getfd mbind migrate_pages move_pages set_mempolicy vhangup"
ALLOWED="read write open openat close getpid kill mmap socket_inet socket_unix fork uname nanosleep
  personality prctl_bad"
nd=$(wc -w <<<"$DENIED")
na=$(wc -w <<<"$ALLOWED")
plan $((nd + na + 14))

result() { sed -n "s/^$1=//p" <<<"$2"; }

# the probe without the filter: run on the host as nobody with no capabilities
host=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
  "$PROBES/trysys" $DENIED $ALLOWED 2>/dev/null)
sbp -- /probes/trysys $DENIED $ALLOWED clone3 clone_newuser ioctl_tiocsti ioctl_tiocsti_hibits \
  ioctl_tioclinux ioctl_tcgets
box=$(so)
is "$(jf status)" OK "the probe ran in the sandbox"

proof=0
for s in $DENIED; do
  is "$(result "$s" "$box")" EPERM "$s is denied with EPERM"
  h=$(result "$s" "$host")
  [ -n "$h" ] && [ "$h" != EPERM ] && proof=$((proof + 1))
done
# a denied call that would fail with EPERM anyway (no capability) proves little on its own; most of
# the probe's calls are chosen so that the unfiltered kernel answers something else
[ "$proof" -ge 30 ]
ok $? "control: unfiltered, $proof of the $nd denied calls answer other than EPERM (the EPERMs are the filter's)"

for s in $ALLOWED; do
  h=$(result "$s" "$host")
  b=$(result "$s" "$box")
  [ -n "$b" ] && [ "$b" = "$h" ]
  ok $? "$s is allowed and answers as on the host ($b)"
done

is "$(result clone3 "$box")" ENOSYS "clone3 answers ENOSYS"
is "$(result clone_newuser "$box")" EPERM "clone(CLONE_NEWUSER) answers EPERM"
is "$(result ioctl_tiocsti "$box")" EPERM "ioctl(TIOCSTI) answers EPERM (before the driver could say ENOTTY)"
is "$(result ioctl_tiocsti_hibits "$box")" EPERM "ioctl(TIOCSTI | 1<<32) answers EPERM too (upper bits ignored)"
is "$(result ioctl_tioclinux "$box")" EPERM "ioctl(TIOCLINUX) answers EPERM"
is "$(result ioctl_tcgets "$box")" ENOTTY "a harmless ioctl (TCGETS on a pipe) reaches the driver: ENOTTY"

# --- foreign ABIs ---------------------------------------------------------------------------
ctl=$("$PROBES/foreign_abi" int80 2>&1)
sbp -- /probes/foreign_abi int80
if [[ $ctl == alive* ]]; then
  is "$(jf status) $(jf signal)" "SG 31" "an i386 syscall (int \$0x80) kills the process with SIGSYS (status SG)"
  is "$(so)" "" "the process did not survive the i386 syscall"
else
  skip "no i386 emulation on this kernel ($ctl)"
  skip "no i386 emulation on this kernel"
fi
sbp -- /probes/foreign_abi x32
is "$(jf status) $(jf signal)" "SG 31" "an x32 syscall kills the process with SIGSYS (status SG)"
is "$(so)" "" "the process did not survive the x32 syscall"

# --- the same policy through ordinary tools -------------------------------------------------
sbt 30 -- python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(272, 0x10000000)  # unshare(CLONE_NEWUSER)
print("unshare=%d/%d" % (r, ctypes.get_errno()))
r = libc.syscall(250, 0x7fff, 0, 0, 0, 0)  # keyctl
print("keyctl=%d/%d" % (r, ctypes.get_errno()))'
is "$(so | tr '\n' ' ')" "unshare=-1/1 keyctl=-1/1 " "the filter applies to every program (python via ctypes)"
sbt 30 -- sh -c 'sh -c "sh -c \"cat /proc/self/status\"" | grep -E "^(Seccomp|NoNewPrivs):" | tr -d "\t"'
is "$(so | tr '\n' ' ')" "NoNewPrivs:1 Seccomp:2 " "grandchildren inherit the filter and no_new_privs"

done_testing
