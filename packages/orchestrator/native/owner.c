/* The owner of a sandbox's user namespace. The kernel charges per-user budgets (inotify instances
 * and watches, fanotify groups and marks, namespaces, POSIX message queue bytes, pending signals)
 * at every level of the user namespace tree, and at the host's level a charge made inside a
 * sandbox lands on the host uid that created its user namespace. Created by host root, every
 * sandbox would share one budget with host root itself; so each sandbox's namespace is created by
 * its own host uid from a reserved range (--owner-base/--owner-count) that no sandbox maps and no
 * host account uses. Filling a budget then only hurts the sandbox that filled it.
 *
 * Leases are host-wide: every Burrow instance and state directory on the machine draws from one
 * registry, REGISTRY/<uid> -> <pid of the sandbox init> (symlinks: nothing but an inode on tmpfs).
 * A lease is live while that pid runs (is not a zombie) in a user namespace owned by <uid>, which
 * the kernel answers (NS_GET_OWNER_UID); so a lease needs no release and survives restarts of the
 * orchestrator, and a dead sandbox's uid is simply taken again. The registry stays flock-ed from
 * the pick until the lease names the new init, which serialises concurrent launchers on the host. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"

#define RUN_DIR "/run/burrow"
#define REGISTRY RUN_DIR "/userns-owners"

/* A zombie keeps its credentials, so its user namespace, until it is reaped: it holds nothing. */
static int zombie(long pid) {
  char path[32], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 1;
  buf[n] = 0;
  const char *state = strrchr(buf, ')'); /* comm may hold anything; the state follows the last ')' */
  return !state || state[1] != ' ' || state[2] == 'Z' || state[2] == 'X';
}

static int live(int dir, unsigned long uid) {
  char name[16], target[24], path[48];
  snprintf(name, sizeof name, "%lu", uid);
  ssize_t n = readlinkat(dir, name, target, sizeof target - 1);
  if (n < 0) return errno == ENOENT ? 0 : 1; /* something unexpected there: leave that uid alone */
  target[n] = 0;
  char *end;
  long pid = strtol(target, &end, 10);
  if (*end || pid <= 0 || zombie(pid)) return 0;
  snprintf(path, sizeof path, "/proc/%ld/ns/user", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uid_t owner;
  int rc = ioctl(fd, NS_GET_OWNER_UID, &owner);
  close(fd);
  return rc == 0 && owner == (uid_t)uid;
}

int owner_lease(struct config *cfg, const char **what) {
  cfg->owner = 0;
  cfg->owner_lock_fd = -1;
  if (cfg->owner_count == 0) return 0;
  *what = "create " REGISTRY;
  if ((mkdir(RUN_DIR, 0755) && errno != EEXIST) || (mkdir(REGISTRY, 0700) && errno != EEXIST)) return -1;
  int dir = open(REGISTRY, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return -1;
  *what = "lock " REGISTRY;
  if (flock(dir, LOCK_EX)) {
    int e = errno;
    close(dir);
    return errno = e, -1;
  }
  /* Lowest free uid first: the registry never holds more entries than sandboxes ever ran at once. */
  for (unsigned long i = 0; i < cfg->owner_count; i++) {
    if (live(dir, cfg->owner_base + i)) continue;
    cfg->owner = (uid_t)(cfg->owner_base + i);
    cfg->owner_lock_fd = dir;
    return 0;
  }
  close(dir);
  *what = "every uid of the --owner range owns a live sandbox";
  return errno = EUSERS, -1;
}

int owner_record(const struct config *cfg, pid_t pid) {
  if (cfg->owner_lock_fd < 0) return 0;
  char name[16], target[16];
  snprintf(name, sizeof name, "%u", (unsigned)cfg->owner);
  snprintf(target, sizeof target, "%d", (int)pid);
  if (unlinkat(cfg->owner_lock_fd, name, 0) && errno != ENOENT) return -1;
  return symlinkat(target, cfg->owner_lock_fd, name);
}
