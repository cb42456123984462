/* Hide or freeze the parts of /proc and /sys that describe the host rather than the sandbox
 * (kernel memory, timers and scheduler internals of every host process, firmware tables), the same
 * list container runtimes mask. The user namespace already refuses most writes there; this is
 * defense in depth against information leaks and future sysctls that are namespaced but unsafe. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "sandbox.h"

static const char *const MASKED[] = {
    "/proc/asound", "/proc/acpi",  "/proc/kcore",   "/proc/keys",    "/proc/latency_stats", "/proc/timer_list",
    "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
};
static const char *const READ_ONLY[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};

#define PROC_FLAGS (MS_NOSUID | MS_NODEV | MS_NOEXEC)

int mask_kernel_files(struct msg *m) {
  struct stat st;
  for (size_t i = 0; i < sizeof MASKED / sizeof MASKED[0]; i++) {
    const char *p = MASKED[i];
    if (stat(p, &st)) {
      if (errno == ENOENT) continue;
      return msg_error(m, "mask", "stat %s", p), -1;
    }
    int rc = S_ISDIR(st.st_mode) ? mount("masked", p, "tmpfs", MS_RDONLY | PROC_FLAGS, "size=0,nr_inodes=1")
                                 : mount("/dev/null", p, NULL, MS_BIND, NULL);
    if (rc) return msg_error(m, "mask", "mask %s", p), -1;
  }
  for (size_t i = 0; i < sizeof READ_ONLY / sizeof READ_ONLY[0]; i++) {
    const char *p = READ_ONLY[i];
    if (stat(p, &st)) {
      if (errno == ENOENT) continue;
      return msg_error(m, "mask", "stat %s", p), -1;
    }
    if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) || mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | PROC_FLAGS, NULL))
      return msg_error(m, "mask", "read-only %s", p), -1;
  }
  return 0;
}
