/* Capabilities: sandbox root keeps roughly Docker's default set. Capabilities in a user namespace
 * only act on objects that namespace owns, but several are still reachable attack surface
 * (e.g. SYS_ADMIN unlocks mount/namespace/bpf code paths, NET_ADMIN the whole netlink
 * configuration surface of the sandbox's netns), so everything not needed by ordinary Unix
 * software is removed from the bounding set and can never come back, even through setuid
 * binaries or file capabilities. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"

/* Kept: what package managers, sudo, servers and build tools use as root.
 *   CHOWN DAC_OVERRIDE FOWNER FSETID   file ownership and permission overrides (apt, tar, cp -a)
 *   KILL SETUID SETGID SETPCAP         process management, sudo/su, dropping privileges
 *   NET_BIND_SERVICE                   ports < 1024 inside the sandbox's own netns
 *   NET_RAW                            ping/traceroute on the sandbox's own interfaces
 *   SYS_CHROOT                         chroot-based build tools
 *   AUDIT_WRITE                        sudo/login write audit records (harmless without auditd)
 *   SETFCAP                            installing packages that ship file capabilities
 * Dropped (notably): SYS_ADMIN, NET_ADMIN, SYS_PTRACE (root may not trace other users' processes;
 * same-uid tracing for gdb/strace still works), SYS_MODULE, SYS_RAWIO, SYS_BOOT, SYS_TIME,
 * SYS_NICE, SYS_RESOURCE, MKNOD, DAC_READ_SEARCH (open_by_handle_at), IPC_LOCK, LEASE,
 * LINUX_IMMUTABLE, MAC_*, SYSLOG, WAKE_ALARM, BLOCK_SUSPEND, AUDIT_CONTROL/READ, BPF, PERFMON,
 * CHECKPOINT_RESTORE. */
static const int KEEP[] = {
    CAP_CHOWN,  CAP_DAC_OVERRIDE,     CAP_FOWNER,  CAP_FSETID,     CAP_KILL,        CAP_SETGID, CAP_SETUID,
    CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_NET_RAW, CAP_SYS_CHROOT, CAP_AUDIT_WRITE, CAP_SETFCAP,
};

static int kept(int cap) {
  for (size_t i = 0; i < sizeof KEEP / sizeof KEEP[0]; i++)
    if (KEEP[i] == cap) return 1;
  return 0;
}

int drop_capabilities(struct msg *m) {
  /* Probe upwards until the kernel says the capability does not exist, so capabilities newer
   * than our headers are dropped too. */
  for (int cap = 0; cap < 64; cap++) {
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0) break;
    if (!kept(cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)) return msg_error(m, "capabilities", "drop cap %d", cap), -1;
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)) return msg_error(m, "capabilities", "clear ambient"), -1;
  return 0;
}

/* The init itself only needs to signal and reap; give it the kept set and no inheritable caps.
 * Commands it execs as root get the bounding set back through the normal root exec rules. */
int restrict_own_caps(struct msg *m) {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  for (size_t i = 0; i < sizeof KEEP / sizeof KEEP[0]; i++) {
    data[KEEP[i] / 32].effective |= 1u << (KEEP[i] % 32);
    data[KEEP[i] / 32].permitted |= 1u << (KEEP[i] % 32);
  }
  if (syscall(SYS_capset, &hdr, data)) return msg_error(m, "capabilities", "capset"), -1;
  return 0;
}
