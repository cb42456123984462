/* What the modes that act on a running sandbox (--attach-volumes, --swap-root) share: the options naming its init
 * and id maps, opening its user and mount namespaces and root while host paths still resolve (checking that the pid
 * is still the recorded init), and entering them as sandbox root. */
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

int parse_running_option(const char *a, const char *v, const char *mode, struct running *r, struct config *cfg) {
  unsigned long *into = NULL;
  if (strcmp(a, mode) == 0) into = &r->pid;
  else if (strcmp(a, "--start-time") == 0) into = &r->start_time;
  else if (strcmp(a, "--uid-base") == 0) into = &cfg->uid_base;
  else if (strcmp(a, "--uid-count") == 0) into = &cfg->uid_count;
  else if (strcmp(a, "--host-base") == 0) into = &cfg->host_base;
  if (!into) return 0;
  if (parse_ulong(v, into) || (into == &r->pid && r->pid < 2)) return -1;
  return 1;
}

int parse_mode_args(int argc, char **argv, const char *mode, struct running *r, struct config *cfg, mode_option_fn other) {
  char err[512];
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return report_error(1, "args", "option without a value"), 2;
    int known = parse_running_option(a, v, mode, r, cfg);
    if (known < 0) return snprintf(err, sizeof err, "bad %s %s", a, v), report_error(1, "args", err), 2;
    if (!known && other(a, v, cfg, err, sizeof err)) return report_error(1, "args", err), 2;
  }
  return 0;
}

int finish_running_options(const struct running *r, struct config *cfg) {
  if (!r->pid || !r->start_time || !cfg->uid_base || !cfg->host_base || cfg->uid_base + cfg->uid_count > 0xFFFFFFFFUL) return -1;
  /* The launcher idmaps layers and volumes exactly when the sandbox runs in a host range of its own. */
  cfg->ranges_base = cfg->host_base != cfg->uid_base;
  return 0;
}

/* Field 22 (starttime) of /proc/PID/stat; the comm field may hold spaces and parentheses, so count from the last ')'. */
/* Field 22 (starttime) of /proc/PID/stat; the comm field may hold spaces and parentheses, so count from the last ')'. */
static int start_time_of(unsigned long pid, unsigned long long *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%lu/stat", pid);
  if (read_text(path, buf, sizeof buf) <= 0) return -1;
  char *p = strrchr(buf, ')');
  if (!p) return -1;
  /* After ')' come fields 3…; starttime is the 20th of them. */
  for (int field = 2; field < 22 && p; field++) p = strchr(p + 1, ' ');
  if (!p) return -1;
  *out = strtoull(p + 1, NULL, 10);
  return 0;
}

static int open_ns(unsigned long pid, const char *which) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%lu/%s", pid, which);
  return open(path, O_RDONLY | O_CLOEXEC);
}

const char *open_running(struct running *r) {
  r->userns = open_ns(r->pid, "ns/user");
  r->mntns = open_ns(r->pid, "ns/mnt");
  r->root = open_ns(r->pid, "root");
  if (r->userns < 0 || r->mntns < 0 || r->root < 0) return "namespaces of sandbox init %s";
  /* Checked after the opens: what they opened belongs to the init that started at start_time. */
  unsigned long long now_start = 0;
  if (start_time_of(r->pid, &now_start) || now_start != r->start_time) {
    errno = ESRCH;
    return "sandbox init %s is gone (its pid is not the recorded process)";
  }
  return NULL;
}

const char *enter_running(const struct running *r) {
  if (setns(r->userns, CLONE_NEWUSER)) return "enter the user namespace of %s";
  if (setgroups(0, NULL) || setresgid(0, 0, 0) || setresuid(0, 0, 0)) return "become root of %s";
  if (setns(r->mntns, CLONE_NEWNS)) return "enter the mount namespace of %s";
  if (fchdir(r->root) || chroot(".")) return "enter the root directory of %s";
  return NULL;
}
