#!/usr/bin/env bash
# The seccomp policy, call by call: every denied call answers EPERM (clone3 ENOSYS), every allowed
# call answers exactly as it does on the host without a filter, ioctl-level denials hold whatever the
# upper bits of the request, and a foreign ABI (i386 int 0x80, x32) kills the process.
# tiers: container gvisor (tests/isolation/iso.sh; where gVisor answers otherwise, the check says why)
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

# gvisor: paddock's filter is not in the Sentry, which serves every call from its own table; the
# host kernel sees only the Sentry's own calls (confined by runsc's filter). What the Sentry
# answers for a call the container tier denies, and why (anything absent here: EPERM there too):
#   ENOSYS       the Sentry does not implement it (userfaultfd, io_uring_register, syslog, sysfs,
#                ustat, the new mount API, fanotify, process_vm_*, pidfd_getfd)
#   EACCES       keyctl, add_key, request_key: the Sentry's minimal keyrings refuse them
#   ENODEV       perf_event_open: the Sentry offers no perf events
#   EFAULT       io_uring_setup: the Sentry's io_uring reads the probe's null params first
#   EOPNOTSUPP   file handles and setns are not offered by the Sentry
#   ESRCH        ptrace of a pid the Sentry does not know (its own ptrace: tests/isolation/pid.t)
#   OK           Sentry-internal objects: unshare (its own namespaces), mbind, set_mempolicy (no-ops)
declare -A GVA=([keyctl]=EACCES [add_key]=EACCES [request_key]=EACCES [perf_event_open]=ENODEV
  [userfaultfd]=ENOSYS [io_uring_setup]=EFAULT [io_uring_register]=ENOSYS [syslog]=ENOSYS
  [sysfs]=ENOSYS [ustat]=ENOSYS [fsopen]=ENOSYS [fsconfig]=ENOSYS [fsmount]=ENOSYS [fspick]=ENOSYS
  [open_tree]=ENOSYS [move_mount]=ENOSYS [mount_setattr]=ENOSYS [open_by_handle_at]=EOPNOTSUPP
  [name_to_handle_at]=EOPNOTSUPP [fanotify_init]=ENOSYS [unshare]=OK [setns]=EOPNOTSUPP [ptrace]=ESRCH
  [process_vm_readv]=ENOSYS [process_vm_writev]=ENOSYS [pidfd_getfd]=ENOSYS [mbind]=OK
  [set_mempolicy]=OK)

# the probe without the filter: run on the host as nobody with no capabilities
host=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
  "$PROBES/trysys" $DENIED $ALLOWED 2>/dev/null)
sbp -- /probes/trysys $DENIED $ALLOWED clone3 clone_newuser ioctl_tiocsti ioctl_tiocsti_hibits \
  ioctl_tioclinux ioctl_tcgets
box=$(so)
is "$(jf status)" OK "the probe ran in the sandbox"

proof=0
for s in $DENIED; do
  if gv; then
    want=${GVA[$s]:-EPERM}
    is "$(result "$s" "$box")" "$want" "gvisor: the Sentry answers $s with $want (the host kernel is never asked)"
  else
    is "$(result "$s" "$box")" EPERM "$s is denied with EPERM"
  fi
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
  if gv && [ "$s" = personality ]; then
    # the host kernel answers the query 0xffffffff; the Sentry refuses the unknown persona
    is "$b" EINVAL "gvisor: the Sentry refuses personality(0xffffffff) with EINVAL (the host says $h)"
    continue
  fi
  [ -n "$b" ] && [ "$b" = "$h" ]
  ok $? "$s is allowed and answers as on the host ($b)"
done

is "$(result clone3 "$box")" ENOSYS "clone3 answers ENOSYS"
if gv; then
  is "$(result clone_newuser "$box")" OK "gvisor: clone(CLONE_NEWUSER) makes a Sentry namespace (no host namespace)"
  # no host tty reaches the Sentry: its pipes answer these ioctls ENOTTY
  is "$(result ioctl_tiocsti "$box")" ENOTTY "gvisor: ioctl(TIOCSTI) reaches the Sentry's pipe: ENOTTY (no host tty)"
  is "$(result ioctl_tiocsti_hibits "$box")" ENOTTY "gvisor: ioctl(TIOCSTI | 1<<32): ENOTTY too"
  is "$(result ioctl_tioclinux "$box")" ENOTTY "gvisor: ioctl(TIOCLINUX): ENOTTY (the Sentry has no virtual console)"
else
  is "$(result clone_newuser "$box")" EPERM "clone(CLONE_NEWUSER) answers EPERM"
  is "$(result ioctl_tiocsti "$box")" EPERM "ioctl(TIOCSTI) answers EPERM (before the driver could say ENOTTY)"
  is "$(result ioctl_tiocsti_hibits "$box")" EPERM "ioctl(TIOCSTI | 1<<32) answers EPERM too (upper bits ignored)"
  is "$(result ioctl_tioclinux "$box")" EPERM "ioctl(TIOCLINUX) answers EPERM"
fi
is "$(result ioctl_tcgets "$box")" ENOTTY "a harmless ioctl (TCGETS on a pipe) reaches the driver: ENOTTY"

# --- foreign ABIs ---------------------------------------------------------------------------
ctl=$("$PROBES/foreign_abi" int80 2>&1)
sbp -- /probes/foreign_abi int80
if gv; then
  # the Sentry serves the 64-bit ABI alone: a foreign call fails there and the process lives
  # (no host kernel entry point is reached)
  is "$(jf status) $(so)" "OK alive -9" "gvisor: an i386 syscall (int \$0x80) fails in the Sentry (-EBADF), the host never sees it"
  sbp -- /probes/foreign_abi x32
  is "$(jf status) $(so)" "OK alive -38" "gvisor: an x32 syscall fails in the Sentry with ENOSYS"
  skip "gvisor: no SIGSYS (no seccomp filter in the Sentry)"
  skip "gvisor: no SIGSYS (no seccomp filter in the Sentry)"
elif [[ $ctl == alive* ]]; then
  is "$(jf status) $(jf signal)" "SG 31" "an i386 syscall (int \$0x80) kills the process with SIGSYS (status SG)"
  is "$(so)" "" "the process did not survive the i386 syscall"
else
  skip "no i386 emulation on this kernel ($ctl)"
  skip "no i386 emulation on this kernel"
fi
if ! gv; then
  sbp -- /probes/foreign_abi x32
  is "$(jf status) $(jf signal)" "SG 31" "an x32 syscall kills the process with SIGSYS (status SG)"
  is "$(so)" "" "the process did not survive the x32 syscall"
fi

# --- the same policy through ordinary tools -------------------------------------------------
sbt 30 -- python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(272, 0x10000000)  # unshare(CLONE_NEWUSER)
print("unshare=%d/%d" % (r, ctypes.get_errno()))
r = libc.syscall(250, 0x7fff, 0, 0, 0, 0)  # keyctl
print("keyctl=%d/%d" % (r, ctypes.get_errno()))'
if gv; then
  is "$(so | tr '\n' ' ')" "unshare=0/0 keyctl=-1/13 " "gvisor: every program gets the Sentry's answers (python via ctypes: unshare OK, keyctl EACCES)"
else
  is "$(so | tr '\n' ' ')" "unshare=-1/1 keyctl=-1/1 " "the filter applies to every program (python via ctypes)"
fi
sbt 30 -- sh -c 'sh -c "sh -c \"cat /proc/self/status\"" | grep -E "^(Seccomp|NoNewPrivs):" | tr -d "\t"'
if gv; then
  is "$(so | tr '\n' ' ')" "Seccomp:0 " "gvisor: grandchildren run under the Sentry as well (no filter inside, no NoNewPrivs line)"
else
  is "$(so | tr '\n' ' ')" "NoNewPrivs:1 Seccomp:2 " "grandchildren inherit the filter and no_new_privs"
fi

done_testing
