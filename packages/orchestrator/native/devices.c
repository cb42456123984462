/* /dev: a small tmpfs with the harmless host character devices bind-mounted in (a user namespace
 * cannot mknod them), a private devpts instance and the usual symlinks. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"

static const char *const NODES[] = {"null", "zero", "full", "random", "urandom", "tty"};
static const char *const LINKS[][2] = {
    {"/proc/self/fd", "/dev/fd"},   {"/proc/self/fd/0", "/dev/stdin"}, {"/proc/self/fd/1", "/dev/stdout"},
    {"/proc/self/fd/2", "/dev/stderr"}, {"pts/ptmx", "/dev/ptmx"},     {"/proc/kcore", "/dev/core"},
};

int setup_dev(struct msg *m) {
  char src[64], dst[64];
  for (size_t i = 0; i < sizeof NODES / sizeof NODES[0]; i++) {
    snprintf(src, sizeof src, "/dev/.oldroot/dev/%s", NODES[i]);
    snprintf(dst, sizeof dst, "/dev/%s", NODES[i]);
    int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return msg_error(m, "dev", "create %s", dst), -1;
    close(fd);
    if (mount(src, dst, NULL, MS_BIND, NULL)) return msg_error(m, "dev", "bind %s", src), -1;
  }
  /* newinstance: the sandbox's ptys are its own, invisible to the host and to other sandboxes. */
  if (mkdir("/dev/pts", 0755) ||
      mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5"))
    return msg_error(m, "dev", "mount devpts"), -1;
  if (mkdir("/dev/shm", 01777) || mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
    return msg_error(m, "dev", "mount /dev/shm"), -1;
  if (mkdir("/dev/mqueue", 0755) || mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
    return msg_error(m, "dev", "mount /dev/mqueue"), -1;
  for (size_t i = 0; i < sizeof LINKS / sizeof LINKS[0]; i++)
    if (symlink(LINKS[i][0], LINKS[i][1])) return msg_error(m, "dev", "symlink %s", LINKS[i][1]), -1;
  return 0;
}
