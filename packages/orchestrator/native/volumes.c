/* Volumes: host directories (btrfs subvolumes kept by the orchestrator) bound read-write into the
 * sandbox. The launcher opens each as a detached mount as host root, since the child's credentials
 * may not walk the state directory; with per-sandbox ranges the copy is idmapped like the layers,
 * so a volume's files keep the canonical --uid-base ids on disk and several sandboxes, each with
 * its own host range, share them. The child attaches them after pivot_root, creating the mount
 * point as sandbox root one component at a time without following symlinks: the path is resolved
 * in the sandbox's own tree and a symlink planted there (by the template, or by the sandbox before
 * a cold boot) cannot move the mount anywhere else. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"

/* PATH inside: absolute, not "/", no empty, "." or ".." components, no trailing slash. */
static int bad_mount_path(const char *p) {
  if (p[0] != '/' || p[1] == 0 || strlen(p) >= 4096) return 1;
  for (const char *c = p; *c;) {
    const char *next = strchr(c + 1, '/');
    size_t len = next ? (size_t)(next - c - 1) : strlen(c + 1);
    if (len == 0 || (len == 1 && c[1] == '.') || (len == 2 && c[1] == '.' && c[2] == '.')) return 1;
    if (!next) break;
    c = next;
  }
  return 0;
}

int parse_volume(const char *v, struct config *cfg, char *err, size_t errlen) {
  if (cfg->n_volumes == MAX_VOLUMES) return snprintf(err, errlen, "too many --volume (at most %d)", MAX_VOLUMES), -1;
  const char *eq = strchr(v, '=');
  if (!eq || v[0] != '/' || eq == v + 1) return snprintf(err, errlen, "--volume wants /HOST/DIR=/PATH, got %s", v), -1;
  if (bad_mount_path(eq + 1)) return snprintf(err, errlen, "bad --volume path %s (absolute, not /, no . or .. parts)", eq + 1), -1;
  char *src = strndup(v, (size_t)(eq - v));
  if (!src) return snprintf(err, errlen, "out of memory"), -1;
  cfg->volume_src[cfg->n_volumes] = src;
  cfg->volume_dst[cfg->n_volumes] = eq + 1;
  cfg->n_volumes++;
  return 0;
}

int volume_trees(struct config *cfg, char *what, size_t whatlen) {
  int userns = -1;
  for (int i = 0; i < MAX_VOLUMES; i++) cfg->volume_tree[i] = -1;
  if (cfg->n_volumes == 0) return 0;
  if (cfg->ranges_base) {
    userns = idmap_userns(cfg);
    if (userns < 0) return snprintf(what, whatlen, "user namespace for the idmapped volumes"), -1;
  }
  for (int i = 0; i < cfg->n_volumes; i++) {
    int tree = (int)syscall(SYS_open_tree, AT_FDCWD, cfg->volume_src[i], OPEN_TREE_CLONE | O_CLOEXEC);
    if (tree < 0) {
      int e = errno;
      snprintf(what, whatlen, "open_tree %s", cfg->volume_src[i]);
      if (userns >= 0) close(userns);
      return errno = e, -1;
    }
    cfg->volume_tree[i] = tree;
    /* Read-write, but never a way in for setuid programs or device nodes. */
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    if (userns >= 0) {
      attr.attr_set |= MOUNT_ATTR_IDMAP;
      attr.userns_fd = (unsigned long long)userns;
    }
    if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr)) {
      int e = errno;
      snprintf(what, whatlen, "mount attributes of %s", cfg->volume_src[i]);
      if (userns >= 0) close(userns);
      return errno = e, -1;
    }
  }
  if (userns >= 0) close(userns);
  return 0;
}

void close_volume_trees(const struct config *cfg) {
  for (int i = 0; i < cfg->n_volumes; i++)
    if (cfg->volume_tree[i] >= 0) close(cfg->volume_tree[i]);
}

/* The directory at `path` below the sandbox's "/", made where missing (0755, sandbox root's), as an
 * O_PATH fd; -1 when a component is a symlink or not a directory. */
static int mount_point(const char *path, struct msg *m) {
  int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return msg_error(m, "volume", "open /"), -1;
  char part[256];
  for (const char *c = path; *c == '/';) {
    const char *next = strchr(c + 1, '/');
    size_t len = next ? (size_t)(next - c - 1) : strlen(c + 1);
    if (len >= sizeof part) {
      close(dir);
      errno = ENAMETOOLONG;
      return msg_error(m, "volume", "%s", path), -1;
    }
    memcpy(part, c + 1, len);
    part[len] = 0;
    if (mkdirat(dir, part, 0755) && errno != EEXIST) {
      int e = errno;
      close(dir);
      errno = e;
      return msg_error(m, "volume", "mkdir %s in %s", part, path), -1;
    }
    int sub = openat(dir, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(dir);
    if (sub < 0) {
      errno = e;
      return msg_error(m, "volume", "%s: %s is a symlink or not a directory", path, part), -1;
    }
    dir = sub;
    if (!next) break;
    c = next;
  }
  return dir;
}

int attach_volumes(const struct config *cfg, struct msg *m) {
  for (int i = 0; i < cfg->n_volumes; i++) {
    int at = mount_point(cfg->volume_dst[i], m);
    if (at < 0) return -1;
    int r = (int)syscall(SYS_move_mount, cfg->volume_tree[i], "", at, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
    int e = errno;
    close(at);
    if (r) {
      errno = e;
      return msg_error(m, "volume", "attach at %s", cfg->volume_dst[i]), -1;
    }
    close(cfg->volume_tree[i]);
  }
  return 0;
}
