/* burrow-sandbox --attach-volumes PID: binds volumes into a sandbox that is already running (a
 * pooled one claimed by a create with volumeMounts), with the mounts the launcher makes at launch.
 * The trees are opened and idmapped here as host root (volume_trees, as the launcher does); then
 * this process enters the sandbox's user namespace as its root and its mount namespace and root
 * directory, and attach_volumes creates each mount point as sandbox root without following
 * symlinks and moves the tree there, exactly as the sandbox child does after pivot_root. Prints
 * {"attached":N} or the launcher's {"error","step"} line. Usage:
 *   --attach-volumes PID --start-time T --uid-base B --uid-count C --host-base H --volume HOST=PATH...
 * T is field 22 of /proc/PID/stat as recorded at launch: a pid reused by another process is refused. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"

static int fail(const char *step, const char *fmt, const char *arg) {
  int saved = errno;
  char what[600], text[800];
  snprintf(what, sizeof what, fmt, arg);
  snprintf(text, sizeof text, "%s: %s", what, strerror(saved));
  report_error(1, step, text);
  return 1;
}

static int parse_num(const char *s, unsigned long *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *s == 0 || *end != 0 || s[0] == '-') return -1;
  *out = v;
  return 0;
}

/* Field 22 (starttime) of /proc/PID/stat; the comm field may hold spaces and parentheses, so count from the last ')'. */
int start_time_of(unsigned long pid, unsigned long long *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%lu/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  if (!p) return -1;
  /* After ')' come fields 3…; starttime is the 20th of them. */
  for (int field = 2; field < 22 && p; field++) p = strchr(p + 1, ' ');
  if (!p) return -1;
  *out = strtoull(p + 1, NULL, 10);
  return 0;
}

int open_ns(unsigned long pid, const char *which) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%lu/%s", pid, which);
  return open(path, O_RDONLY | O_CLOEXEC);
}

int attach_main(int argc, char **argv) {
  struct config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.uid_count = 65536;
  unsigned long pid = 0, start_time = 0;
  char err[512];
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return report_error(1, "args", "option without a value"), 2;
    int bad = 0;
    if (strcmp(a, "--attach-volumes") == 0) bad = parse_num(v, &pid) || pid < 2;
    else if (strcmp(a, "--start-time") == 0) bad = parse_num(v, &start_time);
    else if (strcmp(a, "--uid-base") == 0) bad = parse_num(v, &cfg.uid_base);
    else if (strcmp(a, "--uid-count") == 0) bad = parse_num(v, &cfg.uid_count);
    else if (strcmp(a, "--host-base") == 0) bad = parse_num(v, &cfg.host_base);
    else if (strcmp(a, "--volume") == 0) {
      if (parse_volume(v, &cfg, err, sizeof err)) return report_error(1, "args", err), 2;
    } else {
      snprintf(err, sizeof err, "unknown option %s", a);
      return report_error(1, "args", err), 2;
    }
    if (bad) return snprintf(err, sizeof err, "bad %s %s", a, v), report_error(1, "args", err), 2;
  }
  if (!pid || !start_time || !cfg.uid_base || !cfg.host_base || !cfg.n_volumes || cfg.uid_base + cfg.uid_count > 0xFFFFFFFFUL)
    return report_error(1, "args", "need --attach-volumes PID, --start-time, --uid-base, --host-base and at least one --volume"), 2;
  /* The launcher idmaps volumes exactly when the sandbox runs in a host range of its own. */
  cfg.ranges_base = cfg.host_base != cfg.uid_base;

  /* Everything of the sandbox is opened before any of it is entered, while host paths still resolve. */
  int userns = open_ns(pid, "ns/user"), mntns = open_ns(pid, "ns/mnt"), root = open_ns(pid, "root");
  if (userns < 0 || mntns < 0 || root < 0) return fail("attach", "namespaces of sandbox init %s", argv[2]);
  /* Checked after the opens: what they opened belongs to the init that started at start_time. */
  unsigned long long now_start = 0;
  if (start_time_of(pid, &now_start) || now_start != start_time) {
    errno = ESRCH;
    return fail("attach", "sandbox init %s is gone (its pid is not the recorded process)", argv[2]);
  }
  char what[600];
  if (volume_trees(&cfg, what, sizeof what)) return fail("volume", "%s", what);
  if (setns(userns, CLONE_NEWUSER)) return fail("attach", "enter the user namespace of %s", argv[2]);
  /* Sandbox root, as the child is when it makes mount points (0755, owned by sandbox root). */
  if (setgroups(0, NULL) || setresgid(0, 0, 0) || setresuid(0, 0, 0)) return fail("attach", "become root of %s", argv[2]);
  if (setns(mntns, CLONE_NEWNS)) return fail("attach", "enter the mount namespace of %s", argv[2]);
  if (fchdir(root) || chroot(".")) return fail("attach", "enter the root directory of %s", argv[2]);
  struct msg m = {0};
  if (attach_volumes(&cfg, &m)) {
    report_error(1, m.step, m.text);
    return 1;
  }
  printf("{\"attached\":%d}\n", cfg.n_volumes);
  return 0;
}
