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

static int volume_option(const char *a, const char *v, struct config *cfg, char *err, size_t errlen) {
  if (strcmp(a, "--volume") == 0) return parse_volume(v, cfg, err, errlen);
  snprintf(err, errlen, "unknown option %s", a);
  return -1;
}

int attach_main(int argc, char **argv) {
  struct config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.uid_count = 65536;
  struct running r = {0};
  int usage = parse_mode_args(argc, argv, "--attach-volumes", &r, &cfg, volume_option);
  if (usage) return usage;
  if (finish_running_options(&r, &cfg) || !cfg.n_volumes)
    return report_error(1, "args", "need --attach-volumes PID, --start-time, --uid-base, --host-base and at least one --volume"), 2;

  const char *step = open_running(&r);
  if (step) return fail("attach", step, argv[2]);
  char what[600];
  if (volume_trees(&cfg, what, sizeof what)) return fail("volume", "%s", what);
  /* Sandbox root, as the child is when it makes mount points (0755, owned by sandbox root). */
  if ((step = enter_running(&r))) return fail("attach", step, argv[2]);
  struct msg m = {0};
  if (attach_volumes(&cfg, &m)) {
    report_error(1, m.step, m.text);
    return 1;
  }
  printf("{\"attached\":%d}\n", cfg.n_volumes);
  return 0;
}
