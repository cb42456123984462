/*
 * burrow-netattach: plumbs the network of a namespace that already exists, exactly as the launcher does for the
 * sandboxes it starts (netlink.c, the same code): a veth pair whose inside end is eth0 with the given MAC, address
 * and default route, and whose host end joins the bridge. For network namespaces the launcher did not make.
 *
 * Usage: burrow-netattach --pid PID --net-veth NAME --net-bridge NAME --net-mac MAC --net-addr A.B.C.D/LEN
 *                         --net-gateway A.B.C.D --net-mtu N
 * Exits 0 when done, or prints what failed on stderr and exits 1 (2 for bad arguments).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sandbox.h"

static void report(const char *step, const char *text) { fprintf(stderr, "burrow-netattach: %s: %s\n", step, text); }

int main(int argc, char **argv) {
  close_range(3, ~0U, 0);
  struct net_config nc;
  memset(&nc, 0, sizeof nc);
  char err[400];
  long pid = 0;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) {
      snprintf(err, sizeof err, "%s needs a value", argv[i]);
      report("args", err);
      return 2;
    }
    if (strcmp(argv[i], "--pid") == 0) {
      char *end;
      pid = strtol(argv[i + 1], &end, 10);
      if (*end || pid <= 0) {
        report("args", "bad --pid");
        return 2;
      }
      continue;
    }
    int r = parse_net_option(argv[i], argv[i + 1], &nc, err, sizeof err);
    if (r == 0) snprintf(err, sizeof err, "unknown option %s", argv[i]);
    if (r <= 0) {
      report("args", err);
      return 2;
    }
  }
  if (!pid || !nc.veth || check_net_config(&nc, err, sizeof err)) {
    report("args", pid && nc.veth ? err : "--pid and the --net-* options are required");
    return 2;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/ns/net", pid);
  int ns = open(path, O_RDONLY | O_CLOEXEC);
  if (ns < 0) {
    snprintf(err, sizeof err, "open %s: %s", path, strerror(errno));
    report("network", err);
    return 1;
  }
  if (net_plumb(&nc, ns, err, sizeof err)) {
    report("network", err);
    return 1;
  }
  return 0;
}
