/* Per-namespace budgets in the sandbox's user namespace (/proc/sys/user/ as seen from inside it).
 * A charge made by uid U inside the sandbox counts against (sandbox namespace, U) with these
 * limits, and against (host, owner of the namespace) with the host's limits (owner.c), so the whole
 * sandbox may hold what one host user may. A fresh namespace's own limits are unbounded; here each
 * uid inside gets at most half of the sandbox's share of inotify and fanotify, so one runaway
 * process cannot starve envd (sandbox root) of the instances and watches files.watchDir needs.
 * Namespaces cannot be created inside at all (seccomp); their small budgets are a second wall
 * should that ever be relaxed. The sandbox cannot raise any of this: /proc/sys is read-only
 * inside and CAP_SYS_RESOURCE is dropped. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"

#define NAMESPACES 64 /* of each kind, per uid inside */

static const struct {
  const char *name;
  long fixed; /* 0: half of the host's value */
} LIMITS[] = {
    {"max_inotify_instances", 0}, {"max_inotify_watches", 0},       {"max_fanotify_groups", 0},
    {"max_fanotify_marks", 0},    {"max_user_namespaces", NAMESPACES}, {"max_mnt_namespaces", NAMESPACES},
    {"max_pid_namespaces", NAMESPACES}, {"max_net_namespaces", NAMESPACES}, {"max_ipc_namespaces", NAMESPACES},
    {"max_uts_namespaces", NAMESPACES}, {"max_cgroup_namespaces", NAMESPACES}, {"max_time_namespaces", NAMESPACES},
};
#define N_LIMITS (sizeof LIMITS / sizeof LIMITS[0])
_Static_assert(N_LIMITS <= MAX_USERNS_LIMITS, "raise MAX_USERNS_LIMITS");

ssize_t read_text(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n >= 0) buf[n] = 0;
  return n;
}

static long read_long(const char *path) {
  char buf[32];
  if (read_text(path, buf, sizeof buf) <= 0) return -1;
  char *end;
  long v = strtol(buf, &end, 10);
  return end == buf || v < 0 ? -1 : v;
}

void read_host_limits(struct config *cfg) {
  char path[80];
  for (size_t i = 0; i < N_LIMITS; i++) {
    snprintf(path, sizeof path, "/proc/sys/user/%s", LIMITS[i].name);
    long host = read_long(path); /* -1: this kernel has no such limit */
    long want = LIMITS[i].fixed ? LIMITS[i].fixed : host / 2;
    if (want < 1) want = 1;
    cfg->userns_limits[i] = host < 0 ? -1 : want < host ? want : host;
  }
}

int write_userns_limits(const struct config *cfg, struct msg *m) {
  char path[80], value[24];
  for (size_t i = 0; i < N_LIMITS; i++) {
    if (cfg->userns_limits[i] < 0) continue;
    snprintf(path, sizeof path, "/proc/sys/user/%s", LIMITS[i].name);
    int n = snprintf(value, sizeof value, "%ld\n", cfg->userns_limits[i]);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return msg_error(m, "limits", "open %s", path), -1;
    ssize_t w = write(fd, value, (size_t)n);
    int e = errno;
    close(fd);
    if (w != n) return errno = e, msg_error(m, "limits", "write %s", path), -1;
  }
  return 0;
}
