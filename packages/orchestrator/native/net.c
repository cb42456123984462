/* A fresh network namespace has only `lo`, and it is down. Bring it up here: once the capability
 * set is reduced (no NET_ADMIN), nothing inside the sandbox could, and envd and user servers
 * expect 127.0.0.1 to work even before (or without) the host attaching a veth. */
#define _GNU_SOURCE
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox.h"

int loopback_up(struct msg *m) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return msg_error(m, "loopback", "socket"), -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  int rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags |= IFF_UP;
    rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
  }
  if (rc) msg_error(m, "loopback", "set lo up");
  close(fd);
  return rc ? -1 : 0;
}
