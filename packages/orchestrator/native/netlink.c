/* A sandbox's network plumbing over rtnetlink: a veth pair whose inside end is the sandbox's eth0 (its MAC,
 * address and default route set) and whose host end joins the instance bridge. Done in C by the launcher, as
 * host root, before the sandbox's command starts: no `ip`/`nsenter` processes, and envd finds its network up.
 * The firewall (nftables set elements binding the host end to this MAC and address) is the orchestrator's. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include "sandbox.h"

struct request {
  struct nlmsghdr h;
  char body[1024];
};

static struct rtattr *put(struct request *r, unsigned short type, const void *data, size_t len) {
  struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->h.nlmsg_len));
  size_t size = RTA_LENGTH(len);
  if (NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(size) > sizeof *r) abort(); /* fixed messages: cannot happen */
  a->rta_type = type;
  a->rta_len = (unsigned short)size;
  if (len) memcpy(RTA_DATA(a), data, len);
  r->h.nlmsg_len = (unsigned)(NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(size));
  return a;
}

static struct rtattr *nest(struct request *r, unsigned short type) { return put(r, type, NULL, 0); }

static void end_nest(struct request *r, struct rtattr *a) {
  a->rta_len = (unsigned short)((char *)r + r->h.nlmsg_len - (char *)a);
}

static void start(struct request *r, unsigned short type, unsigned short flags, const void *hdr, size_t len) {
  memset(r, 0, sizeof *r);
  r->h.nlmsg_len = (unsigned)NLMSG_LENGTH(len);
  r->h.nlmsg_type = type;
  r->h.nlmsg_flags = (unsigned short)(NLM_F_REQUEST | NLM_F_ACK | flags);
  memcpy(NLMSG_DATA(&r->h), hdr, len);
}

/* Send one request and wait for its acknowledgement; -1 with errno set to the kernel's answer. */
static int talk(int nl, struct request *r) {
  static unsigned seq;
  r->h.nlmsg_seq = ++seq;
  if (send(nl, r, r->h.nlmsg_len, 0) < 0) return -1;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(nl, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_seq != r->h.nlmsg_seq || h->nlmsg_type != NLMSG_ERROR) continue;
      int error = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
      if (error == 0) return 0;
      errno = -error;
      return -1;
    }
  }
}

/* Bring a link up and optionally give it a master, one request. */
static int set_link(int nl, int ifindex, int master) {
  struct request r;
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex, .ifi_flags = IFF_UP, .ifi_change = IFF_UP};
  start(&r, RTM_NEWLINK, 0, &ifi, sizeof ifi);
  if (master > 0) put(&r, IFLA_MASTER, &master, sizeof master);
  return talk(nl, &r);
}

/* No IPv6 link-local address on the host end: the host needs none on a bridge port. */
static int no_addrgen(int nl, int ifindex) {
  struct request r;
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
  start(&r, RTM_NEWLINK, 0, &ifi, sizeof ifi);
  struct rtattr *spec = nest(&r, IFLA_AF_SPEC);
  struct rtattr *inet6 = nest(&r, AF_INET6);
  unsigned char mode = IN6_ADDR_GEN_MODE_NONE;
  put(&r, IFLA_INET6_ADDR_GEN_MODE, &mode, sizeof mode);
  end_nest(&r, inet6);
  end_nest(&r, spec);
  return talk(nl, &r);
}

/* eth0 here, its peer (the host end) created in the namespace `peer_ns`. */
static int add_veth(int nl, const struct net_config *nc, int peer_ns) {
  struct request r;
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
  start(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof ifi);
  put(&r, IFLA_IFNAME, "eth0", 5);
  put(&r, IFLA_ADDRESS, nc->mac, sizeof nc->mac);
  put(&r, IFLA_MTU, &nc->mtu, sizeof nc->mtu);
  struct rtattr *info = nest(&r, IFLA_LINKINFO);
  put(&r, IFLA_INFO_KIND, "veth", 4);
  struct rtattr *data = nest(&r, IFLA_INFO_DATA);
  struct rtattr *peer = nest(&r, VETH_INFO_PEER);
  struct ifinfomsg peer_ifi = {.ifi_family = AF_UNSPEC};
  /* The peer's ifinfomsg sits in the attribute's payload, before the peer's own attributes. */
  memcpy((char *)&r + r.h.nlmsg_len, &peer_ifi, sizeof peer_ifi);
  r.h.nlmsg_len += (unsigned)NLMSG_ALIGN(sizeof peer_ifi);
  put(&r, IFLA_IFNAME, nc->veth, strlen(nc->veth) + 1);
  put(&r, IFLA_MTU, &nc->mtu, sizeof nc->mtu);
  put(&r, IFLA_NET_NS_FD, &peer_ns, sizeof peer_ns);
  end_nest(&r, peer);
  end_nest(&r, data);
  end_nest(&r, info);
  return talk(nl, &r);
}

static int add_address(int nl, int ifindex, const struct net_config *nc) {
  struct request r;
  struct ifaddrmsg ifa = {.ifa_family = AF_INET, .ifa_prefixlen = (unsigned char)nc->prefix, .ifa_index = (unsigned)ifindex};
  start(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
  put(&r, IFA_LOCAL, &nc->addr, sizeof nc->addr);
  put(&r, IFA_ADDRESS, &nc->addr, sizeof nc->addr);
  return talk(nl, &r);
}

static int add_default_route(int nl, const struct net_config *nc) {
  struct request r;
  struct rtmsg rtm = {.rtm_family = AF_INET,
                      .rtm_table = RT_TABLE_MAIN,
                      .rtm_protocol = RTPROT_BOOT,
                      .rtm_scope = RT_SCOPE_UNIVERSE,
                      .rtm_type = RTN_UNICAST};
  start(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &rtm, sizeof rtm);
  put(&r, RTA_GATEWAY, &nc->gateway, sizeof nc->gateway);
  return talk(nl, &r);
}

/* A permanent ARP entry: `addr` is at `mac` on `ifindex`. Both ends of a sandbox's link know each other's MAC
 * from the start (the orchestrator derives them from the addresses), so neither ever has to ask. Resolved
 * entries would also do, but the kernel's ARP table is one for all namespaces: past gc_thresh3 (1,024 by
 * default) entries, i.e. about 500 sandboxes, new resolutions fail and connections to idle sandboxes end in
 * EHOSTUNREACH. Permanent entries are outside that count and are never collected. The bridge must have a
 * fixed MAC (the network manager gives it one); a bridge without takes its ports' and changes it. */
static int add_neighbour(int nl, int ifindex, struct in_addr addr, const unsigned char mac[6]) {
  struct request r;
  struct ndmsg nd = {.ndm_family = AF_INET, .ndm_ifindex = ifindex, .ndm_state = NUD_PERMANENT};
  start(&r, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, &nd, sizeof nd);
  put(&r, NDA_DST, &addr, sizeof addr);
  put(&r, NDA_LLADDR, mac, 6);
  return talk(nl, &r);
}

/* The MAC of a link in the current namespace. */
static int link_mac(const char *ifname, unsigned char mac[6]) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
  int rc = ioctl(fd, SIOCGIFHWADDR, &ifr);
  int saved = errno;
  close(fd);
  errno = saved;
  if (rc == 0) memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
  return rc;
}

/* 1 into a sysctl of the current network namespace; a kernel without IPv6 has none of these files. */
static int disable_ipv6(const char *ifname) {
  char path[96];
  snprintf(path, sizeof path, "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  ssize_t n = write(fd, "1\n", 2);
  int saved = errno;
  close(fd);
  errno = saved;
  return n == 2 ? 0 : -1;
}

static int route_socket(void) { return socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE); }

#define FAIL(...)                                         \
  do {                                                    \
    int saved_ = errno;                                   \
    char what_[160];                                      \
    snprintf(what_, sizeof what_, __VA_ARGS__);           \
    snprintf(err, errlen, "%s: %s", what_, strerror(saved_)); \
    goto out;                                             \
  } while (0)

/* Inside the sandbox's namespace (we are in it): IPv6 off (lo keeps ::1), eth0 with its peer in host_ns,
 * address, up, default route. */
static int plumb_inside(const struct net_config *nc, int host_ns, const unsigned char gateway_mac[6], char *err, size_t errlen) {
  int rc = -1, nl = -1;
  /* Before eth0 exists: a new interface takes the namespace's defaults, so eth0 never gets IPv6 at all. */
  if (disable_ipv6("default")) FAIL("disable IPv6 in the sandbox");
  nl = route_socket();
  if (nl < 0) FAIL("netlink socket");
  if (add_veth(nl, nc, host_ns)) FAIL("create veth %s", nc->veth);
  int eth0 = (int)if_nametoindex("eth0");
  if (!eth0) FAIL("find eth0");
  if (disable_ipv6("eth0")) FAIL("disable IPv6 on eth0");
  if (add_address(nl, eth0, nc)) FAIL("address eth0");
  if (set_link(nl, eth0, 0)) FAIL("bring eth0 up");
  if (add_default_route(nl, nc)) FAIL("default route");
  if (add_neighbour(nl, eth0, nc->gateway, gateway_mac)) FAIL("neighbour entry for the gateway");
  /* The launcher's sandbox child brings lo up itself; a namespace made elsewhere may not have. */
  int lo = (int)if_nametoindex("lo");
  if (!lo || set_link(nl, lo, 0)) FAIL("bring lo up");
  rc = 0;
out:
  if (nl >= 0) close(nl);
  return rc;
}

/* On the host: the veth's host end without IPv6 address generation, on the bridge, up. */
static int plumb_host(const struct net_config *nc, char *err, size_t errlen) {
  int rc = -1;
  int nl = route_socket();
  if (nl < 0) FAIL("netlink socket");
  int veth = (int)if_nametoindex(nc->veth), bridge = (int)if_nametoindex(nc->bridge);
  if (!veth) FAIL("find %s", nc->veth);
  if (!bridge) FAIL("find bridge %s", nc->bridge);
  if (no_addrgen(nl, veth)) FAIL("addrgenmode none on %s", nc->veth);
  if (set_link(nl, veth, bridge)) FAIL("put %s on %s", nc->veth, nc->bridge);
  if (add_neighbour(nl, bridge, nc->addr, nc->mac)) FAIL("neighbour entry on %s", nc->bridge);
  rc = 0;
out:
  if (nl >= 0) close(nl);
  return rc;
}

int net_plumb(const struct net_config *nc, int sandbox_ns, char *err, size_t errlen) {
  int rc = -1;
  unsigned char gateway_mac[6];
  if (link_mac(nc->bridge, gateway_mac)) {
    snprintf(err, errlen, "read the MAC of bridge %s: %s", nc->bridge, strerror(errno));
    return -1;
  }
  int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (host_ns < 0) {
    snprintf(err, errlen, "open own network namespace: %s", strerror(errno));
    return -1;
  }
  if (setns(sandbox_ns, CLONE_NEWNET)) {
    snprintf(err, errlen, "enter the sandbox's network namespace: %s", strerror(errno));
    close(host_ns);
    return -1;
  }
  int inside = plumb_inside(nc, host_ns, gateway_mac, err, errlen);
  if (setns(host_ns, CLONE_NEWNET)) {
    /* Nothing sensible can run in the wrong namespace: the caller must give up. */
    snprintf(err, errlen, "return to the host's network namespace: %s", strerror(errno));
  } else if (inside == 0) {
    rc = plumb_host(nc, err, errlen);
  }
  close(host_ns);
  return rc;
}

/* --net-* options; see README.md. Returns 1 if `opt` was one (consumed with its value), 0 if not, -1 on error. */
int parse_net_option(const char *opt, const char *val, struct net_config *nc, char *err, size_t errlen) {
  if (strcmp(opt, "--net-veth") == 0 || strcmp(opt, "--net-bridge") == 0) {
    size_t len = strlen(val);
    if (len == 0 || len >= IFNAMSIZ || strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != len)
      return snprintf(err, errlen, "bad %s %s (1-15 of [A-Za-z0-9_.-])", opt, val), -1;
    if (opt[6] == 'v') nc->veth = val;
    else nc->bridge = val;
    return 1;
  }
  if (strcmp(opt, "--net-mac") == 0) {
    unsigned char *m = nc->mac;
    char tail;
    if (sscanf(val, "%2hhx:%2hhx:%2hhx:%2hhx:%2hhx:%2hhx%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &tail) != 6 || strlen(val) != 17)
      return snprintf(err, errlen, "bad --net-mac %s", val), -1;
    nc->has_mac = 1;
    return 1;
  }
  if (strcmp(opt, "--net-addr") == 0) {
    char ip[16];
    const char *slash = strchr(val, '/');
    char *end;
    if (!slash || (size_t)(slash - val) >= sizeof ip) return snprintf(err, errlen, "bad --net-addr %s (A.B.C.D/LEN)", val), -1;
    memcpy(ip, val, (size_t)(slash - val));
    ip[slash - val] = 0;
    long len = strtol(slash + 1, &end, 10);
    if (inet_pton(AF_INET, ip, &nc->addr) != 1 || *end || end == slash + 1 || len < 1 || len > 30)
      return snprintf(err, errlen, "bad --net-addr %s (A.B.C.D/LEN)", val), -1;
    nc->prefix = (int)len;
    return 1;
  }
  if (strcmp(opt, "--net-gateway") == 0) {
    if (inet_pton(AF_INET, val, &nc->gateway) != 1) return snprintf(err, errlen, "bad --net-gateway %s", val), -1;
    nc->has_gateway = 1;
    return 1;
  }
  if (strcmp(opt, "--net-mtu") == 0) {
    char *end;
    long mtu = strtol(val, &end, 10);
    if (*end || end == val || mtu < 576 || mtu > 65535) return snprintf(err, errlen, "bad --net-mtu %s", val), -1;
    nc->mtu = (unsigned)mtu;
    return 1;
  }
  return 0;
}

/* All of the --net-* options, or none. */
int check_net_config(const struct net_config *nc, char *err, size_t errlen) {
  int given = !!nc->veth + !!nc->bridge + nc->has_mac + !!nc->prefix + nc->has_gateway + !!nc->mtu;
  if (given == 0 || given == 6) return 0;
  snprintf(err, errlen, "--net-veth, --net-bridge, --net-mac, --net-addr, --net-gateway and --net-mtu go together");
  return -1;
}
