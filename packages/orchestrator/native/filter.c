/* seccomp deny-list. Default allow, so ordinary software keeps working; denied are the calls
 * that reach kernel surface a sandbox never needs and that has a history of exploits, or that
 * would let it build new namespaces (where it would regain a full capability set). The filter is
 * native-arch only: libseccomp kills any other-ABI syscall (i386 int 0x80, x32) outright, which
 * closes the classic multi-arch bypass at the cost of 32-bit binaries. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>

#include "sandbox.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const char *const DENY_EPERM[] = {
    /* filesystem topology: the sandbox's mount table is final */
    "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr",
    /* namespaces: unshare/setns would hand out fresh full capability sets */
    "unshare", "setns",
    /* host kernel control */
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff",
    "syslog", "acct", "quotactl", "quotactl_fd", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "iopl", "ioperm",
    /* large, historically exploit-rich surfaces */
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "lookup_dcookie",
    /* cross-process memory access and inode-handle tricks (container escapes via open_by_handle_at) */
    "process_vm_readv", "process_vm_writev", "kcmp", "open_by_handle_at",
    /* obsolete */
    "uselib", "ustat", "sysfs", "_sysctl", "nfsservctl", "vm86", "vm86old", "create_module", "get_kernel_syms",
    "query_module",
};

/* ENOSYS rather than EPERM: callers probe these and fall back cleanly (glibc uses clone when
 * clone3 is "missing", whose flags we can inspect; libuv skips io_uring). */
static const char *const DENY_ENOSYS[] = {"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register"};

static const unsigned long NS_FLAGS[] = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
                                         CLONE_NEWUTS,  CLONE_NEWIPC, CLONE_NEWCGROUP, CLONE_NEWTIME};

static int add_all(scmp_filter_ctx ctx, const char *const *names, size_t n, uint32_t action) {
  for (size_t i = 0; i < n; i++) {
    int nr = seccomp_syscall_resolve_name(names[i]);
    if (nr == __NR_SCMP_ERROR) continue; /* not a syscall on this architecture */
    if (seccomp_rule_add(ctx, action, nr, 0)) return -1;
  }
  return 0;
}

int load_seccomp(struct msg *m) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return errno = ENOMEM, msg_error(m, "seccomp", "seccomp_init"), -1;
  /* libseccomp sets no_new_privs by default when loading; that is a separate, optional decision
   * (it breaks sudo), made by --no-new-privs. */
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  if (!rc) rc = add_all(ctx, DENY_EPERM, sizeof DENY_EPERM / sizeof DENY_EPERM[0], SCMP_ACT_ERRNO(EPERM));
  if (!rc) rc = add_all(ctx, DENY_ENOSYS, sizeof DENY_ENOSYS / sizeof DENY_ENOSYS[0], SCMP_ACT_ERRNO(ENOSYS));
  /* clone with any namespace flag: one rule per flag, since rules for one syscall are OR-ed. */
  for (size_t i = 0; !rc && i < sizeof NS_FLAGS / sizeof NS_FLAGS[0]; i++)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, NS_FLAGS[i], NS_FLAGS[i]));
  if (!rc) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc) return errno = -rc, msg_error(m, "seccomp", "build or load filter"), -1;
  return 0;
}
