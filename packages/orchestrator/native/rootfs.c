/* The sandbox's mount table: the overlay as "/", fresh proc/sys/dev, the runtime read-only at
 * /.burrow, and nothing of the host. Order matters:
 *  - pivot_root refuses a locked mount as new root, so merged is first bind-mounted onto itself;
 *  - proc and sysfs may only be mounted while a full host proc/sys is still visible
 *    (mnt_too_revealing), so the old root is detached last. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"

#define OLDROOT "/dev/.oldroot"

static int mkdir_p1(const char *path, mode_t mode) { return mkdir(path, mode) == 0 || errno == EEXIST ? 0 : -1; }

/* A fresh (unlocked) recursive copy of the mount tree at `fd`, as a detached mount fd. Works
 * from an fd, so no host path has to be walked with the sandbox's credentials. */
static int clone_tree(int fd) {
  return (int)syscall(SYS_open_tree, fd, "", OPEN_TREE_CLONE | AT_RECURSIVE | AT_EMPTY_PATH | O_CLOEXEC);
}

static int attach(int tree, int dir_fd, const char *path) {
  unsigned flags = MOVE_MOUNT_F_EMPTY_PATH | (path[0] ? 0 : MOVE_MOUNT_T_EMPTY_PATH);
  return (int)syscall(SYS_move_mount, tree, "", dir_fd, path, flags);
}

/* The runtime: the launcher's detached read-only, nosuid, nodev copy of the host directory,
 * attached at /.burrow. */
static int mount_runtime(int tree, struct msg *m) {
  if (mkdir_p1("/.burrow", 0755)) return msg_error(m, "runtime", "mkdir /.burrow"), -1;
  if (attach(tree, AT_FDCWD, "/.burrow")) return msg_error(m, "runtime", "attach at /.burrow"), -1;
  return 0;
}

int setup_rootfs(const struct config *cfg, struct msg *m) {
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) return msg_error(m, "rootfs", "make / private"), -1;
  /* pivot_root refuses the (locked) inherited overlay mount: stack an unlocked copy on top of it
   * and step into that copy through its fd. */
  int root = clone_tree(cfg->merged_fd);
  if (root < 0) return msg_error(m, "rootfs", "open_tree %s", cfg->merged), -1;
  if (attach(root, cfg->merged_fd, "")) return msg_error(m, "rootfs", "attach root copy"), -1;
  if (fchdir(root)) return msg_error(m, "rootfs", "fchdir"), -1;
  close(root);
  close(cfg->merged_fd);

  /* The old root is parked inside the new /dev tmpfs, so launching writes nothing to the upper. */
  if (mkdir_p1("dev", 0755)) return msg_error(m, "dev", "mkdir /dev"), -1;
  if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=1m,nr_inodes=4k"))
    return msg_error(m, "dev", "mount tmpfs on /dev"), -1;
  if (mkdir("dev/.oldroot", 0700)) return msg_error(m, "pivot_root", "mkdir .oldroot"), -1;
  if (syscall(SYS_pivot_root, ".", "dev/.oldroot")) return msg_error(m, "pivot_root", "pivot_root"), -1;
  if (chdir("/")) return msg_error(m, "pivot_root", "chdir /"), -1;

  if (mkdir_p1("/proc", 0555) || mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
    return msg_error(m, "proc", "mount /proc"), -1;
  if (mkdir_p1("/sys", 0555) || mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
    return msg_error(m, "sys", "mount /sys"), -1;
  if (setup_dev(m)) return -1;
  if (mask_kernel_files(m)) return -1;
  if (cfg->boot_id && bind_boot_id(cfg->boot_id, m)) return -1;

  if (mount_runtime(cfg->runtime_tree, m)) return -1;
  close(cfg->runtime_tree);
  if (attach_volumes(cfg, m)) return -1;

  if (umount2(OLDROOT, MNT_DETACH)) return msg_error(m, "pivot_root", "detach old root"), -1;
  if (rmdir(OLDROOT)) return msg_error(m, "pivot_root", "rmdir old root"), -1;
  return 0;
}
