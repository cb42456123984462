/* burrow-sandbox --swap-root PID: gives a running sandbox a new root filesystem. A prepared sandbox ("shell") is
 * launched on any template's layers with a writable layer of its own, and its init and envd start while nothing
 * is known of the create that will take it; the create then names the template, and this mounts that template's
 * overlay (its layers, the sandbox's real upper and work) and makes it the sandbox's "/":
 *  - as host root, in a private mount namespace, the overlay is mounted as the launcher mounts it (idmapped layers
 *    with per-sandbox ranges) and cloned into a detached tree;
 *  - then this process enters the sandbox's user namespace as its root, its mount namespace and root directory
 *    (as --attach-volumes does), attaches the tree at /.burrow-swap, moves /proc, /sys, /dev and /.burrow (with
 *    everything mounted beneath them: masks, the boot id, devpts) into it, and pivots: pivot_root changes the root
 *    and working directory of every process of the namespace that had the old root, so the running init and envd
 *    are in the new root at once. The old root is detached.
 * The shell must run nothing that holds the old root otherwise (an open file, a cwd below "/"): envd's cwd is "/".
 * Prints {"swapped":true} or the launcher's {"error","step"} line. Usage:
 *   --swap-root PID --start-time T --uid-base B --uid-count C --host-base H --lower DIR… --upper DIR --work DIR --merged DIR */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"

#define SWAP_POINT "/.burrow-swap"

/* Moves the mount at /NAME (with its submounts) to SWAP_POINT/NAME, making the mount point as sandbox root. */
static void move_into(const char *name, mode_t mode) {
  char from[64], to[96];
  snprintf(from, sizeof from, "/%s", name);
  snprintf(to, sizeof to, SWAP_POINT "/%s", name);
  if (mkdir(to, mode) && errno != EEXIST) die("swap", "mkdir %s in the new root", from);
  if (mount(from, to, NULL, MS_MOVE, NULL)) die("swap", "move %s into the new root", from);
}

static int root_option(const char *a, const char *v, struct config *cfg, char *err, size_t errlen) {
  if (strcmp(a, "--lower") == 0) {
    if (cfg->n_lower == MAX_LOWER) return snprintf(err, errlen, "too many --lower"), -1;
    cfg->lower[cfg->n_lower++] = v;
  } else if (strcmp(a, "--upper") == 0) cfg->upper = v;
  else if (strcmp(a, "--work") == 0) cfg->work = v;
  else if (strcmp(a, "--merged") == 0) cfg->merged = v;
  else return snprintf(err, errlen, "unknown option %s", a), -1;
  if (bad_path(v)) return snprintf(err, errlen, "bad %s %s (absolute, no , : \\)", a, v), -1;
  return 0;
}

int swap_main(int argc, char **argv) {
  struct config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.uid_count = 65536;
  struct running r = {0};
  int usage = parse_mode_args(argc, argv, "--swap-root", &r, &cfg, root_option);
  if (usage) return usage;
  if (finish_running_options(&r, &cfg) || !cfg.n_lower || !cfg.upper || !cfg.work || !cfg.merged)
    return report_error(1, "args", "need --swap-root PID, --start-time, --uid-base, --host-base, --lower, --upper, --work and --merged"), 2;

  const char *step = open_running(&r);
  if (step) die("swap", step, argv[2]);

  /* The new root, as the launcher makes it, in a mount namespace of this process only. */
  if (unshare(CLONE_NEWNS)) die("unshare", "private mount namespace");
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) die("unshare", "make / private");
  own_upper(&cfg);
  mount_overlay(&cfg);
  int tree = (int)syscall(SYS_open_tree, AT_FDCWD, cfg.merged, OPEN_TREE_CLONE | O_CLOEXEC);
  if (tree < 0) die("overlay", "open_tree %s", cfg.merged);

  if ((step = enter_running(&r))) die("swap", step, argv[2]);
  umask(022);

  if (mkdir(SWAP_POINT, 0700) && errno != EEXIST) die("swap", "mkdir " SWAP_POINT);
  if (syscall(SYS_move_mount, tree, "", AT_FDCWD, SWAP_POINT, MOVE_MOUNT_F_EMPTY_PATH)) die("swap", "attach the new root");
  close(tree);
  /* What the sandbox child mounted after its pivot_root, moved with everything beneath it. */
  move_into("proc", 0555);
  move_into("sys", 0555);
  move_into("dev", 0755);
  move_into(".burrow", 0755);
  if (chdir(SWAP_POINT)) die("pivot_root", "chdir " SWAP_POINT);
  /* The old root ends up stacked on "." and is detached from there. */
  if (syscall(SYS_pivot_root, ".", ".")) die("pivot_root", "pivot_root");
  if (umount2(".", MNT_DETACH)) die("pivot_root", "detach the old root");
  if (chdir("/")) die("pivot_root", "chdir /");
  printf("{\"swapped\":true}\n");
  return 0;
}
