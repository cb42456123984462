/* Hide or freeze the parts of /proc and /sys that describe the host rather than the sandbox
 * (kernel memory, timers and scheduler internals of every host process, firmware tables), the same
 * list container runtimes mask. The user namespace already refuses most writes there; this is
 * defense in depth against information leaks and future sysctls that are namespaced but unsafe. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

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

#define BOOT_ID "/proc/sys/kernel/random/boot_id"
#define BOOT_ID_SOURCE "/dev/.boot_id"

/* The sandbox's own boot id, new at each of its boots (the host's stays the same across a sandbox's
 * reboot, which is what programs read to tell a reboot). The file is made on the sandbox's /dev tmpfs,
 * bound read-only over the kernel's and unlinked: from then on only the mount reaches it. */
int bind_boot_id(const char *boot_id, struct msg *m) {
  char text[40];
  int len = snprintf(text, sizeof text, "%s\n", boot_id);
  int fd = open(BOOT_ID_SOURCE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (fd < 0) return msg_error(m, "boot-id", "create " BOOT_ID_SOURCE), -1;
  ssize_t n = write(fd, text, (size_t)len);
  close(fd);
  if (n != len) return msg_error(m, "boot-id", "write " BOOT_ID_SOURCE), -1;
  if (mount(BOOT_ID_SOURCE, BOOT_ID, NULL, MS_BIND, NULL) ||
      mount(NULL, BOOT_ID, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | PROC_FLAGS, NULL))
    return msg_error(m, "boot-id", "bind over " BOOT_ID), -1;
  if (unlink(BOOT_ID_SOURCE)) return msg_error(m, "boot-id", "unlink " BOOT_ID_SOURCE), -1;
  return 0;
}
